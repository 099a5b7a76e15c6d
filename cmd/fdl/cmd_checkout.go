package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

type checkoutOptions struct {
	URL, Dir      string
	CatalogFormat string // --catalog-format, checked by the library
	workdir.CheckoutOptions
}

func newCheckoutCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &checkoutOptions{}
	cmd := &cobra.Command{
		Use:   "checkout [URL] DIR",
		Short: "Make a working directory with a writable catalog",
		Long: `Make DIR with a working catalog and remember where it came from. The
catalog is a copy of REV (default: the head of HEAD's branch), checked against
its record's sha256 before anything is written; or, with --from, a copy of an
existing DuckLake catalog file, DuckDB or SQLite (this is how a repository
gets its first version); or, for a branch with no version yet, a new empty
catalog whose DATA_PATH is the repository's data/ folder.

--branch names the branch push moves. A branch that does not exist yet
starts at REV, else at the head of HEAD's branch (like git checkout -b); a
new, empty history (a lake with no parent) only with --orphan.

When the version checked out is not the head of the branch (an older
version, or one that is not on its history), it says so: a version
committed here would not be a fast-forward, and push would refuse it.

--catalog-format chooses the working catalog's database: sqlite (the default,
DIR/ducklake.sqlite in WAL mode: several DuckDB processes can attach and
write at once, and fdl status/commit read it meanwhile) or duckdb
(DIR/ducklake.duckdb: one process at a time, no sqlite extension needed).
Without the flag, $FDL_CATALOG_FORMAT is used when set. Versions always hold
a DuckDB file.

DuckDB 1.5.2 and newer read only DuckLake 1.0. An imported lake in an older
format (0.1 to 0.4) is copied as it is, and checkout says which DuckDB release
reads it; with --migrate it is migrated to 1.0 on the way in (the ducklake
extension's own migration steps, run by fdl on the copy; FILE is only read),
so the first version is readable by current DuckDB, and its record says what
it was migrated from. For a branch already published in an older format, see
'fdl migrate'.

It prints the DuckDB ATTACH statement for the working catalog. With one
argument, DIR, the repository is $FDL_REPO.`,
		Example: `  fdl checkout ./lake-repo work
  fdl checkout ./lake-repo work --from old/metadata.ducklake
  fdl checkout ./lake-repo work --from old/metadata.ducklake --migrate
  fdl checkout ./lake-repo work --rev 2025-final
  fdl checkout ./lake-repo work --branch feature
  fdl checkout ./lake-repo work --branch other-lake --orphan --from other.ducklake
  fdl checkout ./lake-repo work --catalog-format duckdb`,
		Args: args(1, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				if o.URL = os.Getenv("FDL_REPO"); o.URL == "" {
					return usageError{fmt.Errorf("checkout takes the repository URL and a directory (fdl checkout URL DIR), or a directory alone with FDL_REPO set")}
				}
				o.Dir = a[0]
			} else {
				o.URL, o.Dir = a[0], a[1]
			}
			return runCheckout(cmd.Context(), ios, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Rev, "rev", "", "revision to check out (branch, tag, id, NAME~N, BRANCH@SEQ)")
	f.StringVar(&o.From, "from", "", "start from this existing DuckLake catalog `FILE` instead")
	f.StringVar(&o.Branch, "branch", "", "branch that push moves (default: the branch REV names, else HEAD's); a new branch starts at REV, else at the head of HEAD's branch")
	f.BoolVar(&o.Orphan, "orphan", false, "start a new history with no parent (an empty catalog, or --from's) for a branch that does not exist yet")
	f.StringVar(&o.Format, "format", "", "DuckLake format of a new empty catalog (a branch with no version, or --orphan): 1.0 (the default; DuckDB 1.5.2 and later), 0.4 (DuckDB 1.5.0-1.5.1) or 1.1 (DuckDB 2.0)")
	f.StringVar(&o.CatalogFormat, "catalog-format", "", "working catalog database: sqlite or duckdb (default: $FDL_CATALOG_FORMAT, else sqlite)")
	f.BoolVar(&o.Migrate, "migrate", false, "with --from: migrate an older lake to DuckLake 1.0, the format current DuckDB reads")
	return cmd
}

// defaultCatalogFormat is $FDL_CATALOG_FORMAT, else "sqlite" (docs/cli.md
// explains the choice).
func defaultCatalogFormat() string {
	if f := os.Getenv("FDL_CATALOG_FORMAT"); f != "" {
		return f
	}
	return "sqlite"
}

func runCheckout(ctx context.Context, ios *term.IO, g *globals, o *checkoutOptions) error {
	g.noteOpened(g.path(o.URL))
	r, err := repo.Open(ctx, g.path(o.URL), g.options())
	if err != nil {
		return err
	}
	defer r.Close()
	o.CheckoutOptions.Dir = g.path(o.Dir)
	from := o.From
	o.CheckoutOptions.From = g.path(o.From)
	if o.CatalogFormat == "" {
		o.CatalogFormat = defaultCatalogFormat()
	}
	o.CheckoutOptions.CatalogFormat = ducklake.Backend(o.CatalogFormat)
	res, err := workdir.Checkout(ctx, r, o.CheckoutOptions)
	g.progressDone()
	if err != nil {
		return err
	}
	if r.ReadOnly() {
		warnReadOnlyCheckout(ios, r)
	}
	if g.JSON {
		warnNotFastForward(ios, res)
		return printJSON(ios, res)
	}
	switch res.Origin {
	case workdir.OriginVersion:
		if res.Tracking != nil && res.Tracking.State == repo.TrackNoBranch {
			ios.Printf("Checked out version %s (seq %d) into %s to start branch %s, which does not exist yet: the first push creates it\n", ios.ID(string(res.Base)), res.Seq, res.Dir, ios.Ref(res.Branch))
			break
		}
		ios.Printf("Checked out version %s (seq %d) of branch %s into %s\n", ios.ID(string(res.Base)), res.Seq, ios.Ref(res.Branch), res.Dir)
	case workdir.OriginFile:
		ios.Printf("Copied %s into %s (branch %s)\n", from, res.Dir, ios.Ref(res.Branch))
		if res.ResolvedDataPath != "" {
			ios.Printf("Its data_path %q is relative, which DuckDB resolves against each reader's working directory: the working catalog's data_path is %s, resolved against this one\n", res.ResolvedDataPath, res.DataPath)
		}
		if m := res.Migration; m != nil {
			ios.Printf("Migrated it from DuckLake %s to %s with the ducklake extension's own steps (no snapshot added; %s attaches it)\n", m.From, m.To, readersText(res.Readers))
		}
	default:
		ios.Printf("Made a new empty DuckLake catalog in %s (branch %s has no version yet)\n", res.Dir, ios.Ref(res.Branch))
	}
	ios.Printf("Attach it in DuckDB with:\n  %s\n", res.Attach)
	if res.NeedsMigration {
		ios.Printf("Note: this lake is DuckLake %s, which %s attaches as it is; DuckDB 1.5.2 and newer refuse it until it is migrated.\n", res.Format, readersText(res.Readers))
		switch res.Origin {
		case workdir.OriginFile:
			ios.Printf("To publish it for current DuckDB, check out again with --migrate; or commit and push it as it is (for %s), then run '%s' for a version current DuckDB reads.\n", readersText(res.Readers), g.next("migrate "+shellQuote(res.Branch)))
		case workdir.OriginNew:
			ios.Printf("For current DuckDB, check out without --format (DuckLake 1.0).\n")
		default:
			ios.Printf("Run '%s' for a version current DuckDB reads, then check it out again.\n", g.next("migrate "+shellQuote(res.Branch)))
		}
	}
	warnNotFastForward(ios, res)
	return nil
}

// warnNotFastForward warns (stderr) when a checkout's base is not the head
// of its branch: a version committed there will not be a fast-forward.
// warnReadOnlyCheckout warns that a checkout from a read-only (http(s))
// repository is for reading only: DuckDB cannot write data files to its
// data path there, and push cannot publish over http(s).
func warnReadOnlyCheckout(ios *term.IO, r *repo.Repo) {
	ios.Warnf("READ-ONLY CHECKOUT: the repository is read over http(s), where nothing can be written: DuckDB reads this working catalog, but an INSERT or UPDATE cannot write its data files to %s, and fdl push cannot publish a commit there. To change the lake, check out from the repository's own location instead (its folder, s3://, gs:// or azblob:// URL)", r.DataLocation())
}

func warnNotFastForward(ios *term.IO, res *workdir.CheckoutResult) {
	tr := res.Tracking
	if tr == nil {
		return
	}
	b := res.Branch
	switch tr.State {
	case repo.TrackBehind:
		ios.Warnf("branch %s holds %d version(s) after this one (it is at seq %d): a version committed here is not a fast-forward of %s, and fdl push will refuse it. "+
			"To undo what came after, run fdl revert REV in a checkout of %s (a new version on top of it); to build on this version instead, check it out for a new branch (--branch NEW)", b, tr.Behind, tr.HeadSeq, b, b)
	case repo.TrackDiverged:
		ios.Warnf("this version is not on the history of branch %s (at seq %d): a version committed here is not a fast-forward of %s, and fdl push will refuse it; check it out for a new branch instead (--branch NEW)", b, tr.HeadSeq, b)
	}
}
