package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/pins"
	"github.com/fdl-dev/fdl/repo"
)

func newAttachCmd(ios *term.IO, g *globals) *cobra.Command {
	o := pins.AttachOptions{}
	ro := &readerOptions{}
	cmd := &cobra.Command{
		Use:   "attach [REV]",
		Short: "Print only the DuckDB ATTACH statement of a version, after checking its catalog",
		Long: `Print the one line a DuckDB reader runs to attach REV's version read-only
(default: as fdl show), and nothing else, after checking its catalog's size
and sha256 against its record (the catalog is read once; from an object
store, a download that is not kept). A catalog that does not match, a
version out of retention, or an unknown revision prints nothing on stdout
and exits 1, so a script never runs a statement for a damaged catalog:

  duckdb -c "$(fdl attach 2025-final --repo s3://bucket/sales) SELECT count(*) FROM sales_2025_final.orders"

The database's name stays the same from one version to the next where REV
names a ref, so saved SQL keeps working: the repository's name for its
default branch (sales), the repository's and the ref's for another branch
or a tag (sales_2025_final); a revision that names one version (an id,
main~2, main@12) gives v<seq>. With --locked NAME the name is the
pin's. --as chooses another name.

With --require-signed --signers FILE, a version whose record has no good
signature (fdl sign) by a key the allowed signers file allows for namespace
fdl is refused before its catalog is read: nothing on stdout, exit 1. With
--locked, a repository that cannot be reached is then an error even when
the catalog is cached (the signature cannot be checked).

--locked NAME attaches the version pinned as NAME in the lockfile (fdl.lock
in this folder or the nearest parent, or --lockfile FILE), after checking
that the repository's record of it is the one pinned, that it is in
retention and that its catalog matches (docs/cli.md, fdl lock).

--cache (on by default when FDL_CACHE is set) keeps the catalog, checked
against its record as it arrives, in the reader's catalog cache (fdl cache)
and prints a line that attaches that local copy, with the repository's data
path (DATA_PATH and OVERRIDE_DATA_PATH): the next attach of the version
downloads nothing, and DuckDB reads the catalog from the local disk. With
--locked NAME --cache, a repository that cannot be reached is no error
when the pinned catalog is cached: the line attaches it (a warning says
so; credentials the store refuses are still exit 5); DuckDB then reads the catalog's metadata (tables, snapshots, the
ducklake_* functions), and needs the store to read table data.`,
		Example: `  fdl attach main --repo /srv/repos/sales
  fdl attach 2025-final --as final
  fdl attach --locked sales --cache`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.RequireSigned != (o.Signers != "") {
				return usageError{errors.New("--require-signed and --signers FILE go together: the file says whose signatures count")}
			}
			o.Signers = g.path(o.Signers)
			o.Rev = optionalArg(a, 0)
			return runAttach(cmd, ios, g, ro, o)
		},
	}
	cmd.Flags().StringVar(&o.Alias, "as", "", "database `NAME` in the statement (default: named after the repository and ref, the pin, or v<seq>)")
	cmd.Flags().StringVar(&o.Locked, "locked", "", "attach the version pinned as `NAME` in the lockfile")
	cmd.Flags().BoolVar(&o.RequireSigned, "require-signed", false, "refuse a version without a good signature by an allowed signer (with --signers)")
	cmd.Flags().StringVar(&o.Signers, "signers", "", "allowed signers `FILE` (ssh-keygen's format) for --require-signed")
	addReaderFlags(cmd, ro)
	g.addRepoFlag(cmd)
	return cmd
}

func runAttach(cmd *cobra.Command, ios *term.IO, g *globals, ro *readerOptions, o pins.AttachOptions) error {
	ctx := cmd.Context()
	env, err := g.readerEnv(cmd, ro)
	if err != nil {
		return err
	}
	if o.Locked != "" && (o.Rev != "" || g.Repo != "") {
		return usageError{fmt.Errorf("--locked %s names the repository and version: give no REV and no --repo with it", o.Locked)}
	}
	attach := func(r *repo.Repo, l *repo.Local) error {
		o.Local = l
		a, err := pins.Attach(ctx, env, r, o)
		g.progressDone()
		if err != nil {
			return err
		}
		if a.Warning != "" {
			ios.Warnf("%s", a.Warning)
		}
		if g.JSON {
			return printJSON(ios, a)
		}
		ios.Printf("%s\n", a.Attach)
		return nil
	}
	if o.Locked != "" {
		return attach(nil, nil)
	}
	return g.withRepo(ctx, attach)
}
