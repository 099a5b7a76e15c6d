package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

func newShowCmd(ios *term.IO, g *globals) *cobra.Command {
	o := repo.ShowOptions{}
	cmd := &cobra.Command{
		Use:   "show [REV]",
		Short: "Show a version's record and what it holds",
		Long: `Show REV's record (version.json) and dataset (dataset.json: schemas, tables,
columns with types, row counts, data files, views), and the DuckDB ATTACH
statement a reader uses to query it.

The ATTACH statement is printed only for a catalog whose size and sha256
match its record: show reads the catalog once to check it (from an object
store, a download that is not kept). When it does not match, show prints the
record and dataset, no ATTACH statement, and exits 1 naming both digests.
--no-verify checks the size only (one request) and marks the statement
"not verified" (--json: "verified": false).

Show says whether the record is signed and by which key (fdl sign); with
--signers FILE (an allowed signers file, Git's gpg.ssh.allowedSignersFile
format), who signed it, or why the signature is not good.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runShow(cmd.Context(), ios, g, optionalArg(a, 0), o)
		},
	}
	cmd.Flags().BoolVar(&o.NoVerify, "no-verify", false, "check the catalog's size only, not its sha256 (the ATTACH line is marked not verified)")
	cmd.Flags().StringVar(&o.Signers, "signers", "", "judge the record's signature by this allowed signers `FILE`")
	g.addRepoFlag(cmd)
	return cmd
}

func runShow(ctx context.Context, ios *term.IO, g *globals, rev string, o repo.ShowOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		o.Local = l
		o.Signers = g.path(o.Signers)
		v, err := r.Show(ctx, rev, o)
		if v == nil {
			return err
		}
		if g.JSON {
			if perr := printJSON(ios, v); perr != nil {
				return perr
			}
			return err
		}
		if v.Retirement != nil {
			printRetired(ios, v)
			return nil
		}
		if v.Dataset == nil {
			return err // nothing to print beside the error
		}
		rec, ds := v.Record, v.Dataset
		ios.Printf("%s %s\n", ios.Heading("version"), ios.ID(string(rec.ID)))
		printSeqParents(ios, v)
		ios.Printf("Author:   %s\n", oneLine(rec.Author))
		ios.Printf("Date:     %s\n", rec.CreatedAt.UTC().Format(time.RFC3339))
		ios.Printf("Catalog:  %s, sha256 %s, DuckDB storage %d (DuckDB %s or newer)\n", term.Bytes(rec.Catalog.Size), rec.Catalog.SHA256, rec.Catalog.Storage.Number, rec.Catalog.Storage.MinDuckDB)
		ios.Printf("DuckLake: %s\n", duckLakeLine(rec))
		printDataLine(ios, v)
		printReaders(ios, v)
		printSignature(ios, "", v.Signature)
		ios.Printf("\n    %s\n\n", strings.ReplaceAll(printable(rec.Message), "\n", "\n    "))
		t := ds.Totals
		ios.Printf("%s %d schema(s), %d table(s), %d view(s), %d rows, %d data file(s), %s\n", ios.Heading("Dataset:"), t.Schemas, t.Tables, t.Views, t.Rows, t.DataFiles, term.Bytes(t.DataBytes))
		for _, s := range ds.Schemas {
			for _, tb := range s.Tables {
				ios.Printf("  table %s.%s  %d rows, %d file(s), %s\n", sqlquote.IdentIfNeeded(s.Name), sqlquote.IdentIfNeeded(tb.Name), tb.RowCount, tb.DataFiles, term.Bytes(tb.DataBytes))
				for _, c := range tb.Columns {
					null := ""
					if !c.Nullable {
						null = " not null"
					}
					ios.Printf("    %-24s %s%s\n", c.Name, c.Type, null)
				}
			}
			for _, vw := range s.Views {
				ios.Printf("  view %s.%s  %s\n", sqlquote.IdentIfNeeded(s.Name), sqlquote.IdentIfNeeded(vw.Name), oneLine(vw.SQL))
			}
		}
		readers := "DuckDB " + v.Readers.Attach
		if v.Readers.Attach == "none" {
			readers = "no DuckDB release attaches it READ_ONLY as it is (see Readers)"
		}
		switch {
		case errors.Is(err, repo.ErrChecksum):
			ios.Printf("\n%s the catalog does not match its record: no ATTACH statement (see the error below)\n", ios.Bad("CHECKSUM MISMATCH:"))
			return err
		case errors.Is(err, repo.ErrExtraFiles):
			ios.Printf("\n%s the version's folder holds files that are not the version's: no ATTACH statement (see the error below)\n", ios.Bad("EXTRA FILES:"))
			return err
		case err != nil:
			// The store did not give the catalog (refused, missing, a
			// failing or short answer): nothing says it does not match.
			ios.Printf("\n%s the catalog could not be read to check it against its record: no ATTACH statement (see the error below)\n", ios.Bad("CATALOG NOT CHECKED:"))
			return err
		case !v.Verified:
			ios.Printf("\nQuery it with %s (ducklake extension; sha256 %s: fdl attach %s checks it):\n  %s\n", readers, ios.Bad("not verified"), v.Short, v.Attach)
		default:
			ios.Printf("\nQuery it with %s (ducklake extension; catalog checked against its record):\n  %s\n", readers, v.Attach)
		}
		if v.NeedsMigration {
			printMigrationNote(ios, v)
		}
		if n := len(v.HTTPUnreachable); n > 0 {
			ios.Warnf("readers over http(s) cannot read %d data file(s) of this version: DuckDB requests %s, which the server answers with no file (it decodes the %%XX escapes of the name); serve the repository with a server that serves names as written, or give readers its own location (folder or object-store URL)",
				n, strings.Join(v.HTTPUnreachable[:min(n, 3)], ", "))
		}
		return nil
	})
}

// duckLakeLine is the DuckLake line of 'fdl show': format, snapshot and
// what the version adds (a migration adds no snapshot).
func duckLakeLine(rec *version.Record) string {
	d := rec.DuckLake
	if d.MigratedFrom != "" && rec.AddsNothing() {
		return fmt.Sprintf("format %s (migrated from %s), snapshot %d, adds no snapshot", d.Format, d.MigratedFrom, d.Snapshot)
	}
	format := d.Format
	if d.MigratedFrom != "" {
		format += " (migrated from " + d.MigratedFrom + ")"
	}
	return fmt.Sprintf("format %s, snapshot %d, adds snapshots %d..%d", format, d.Snapshot, d.Adds.First, d.Adds.Last)
}

// printReaders prints the Readers: line of 'fdl show': the DuckDB releases
// that attach the version, and why (its file's storage version, its
// DuckLake format).
func printReaders(ios *term.IO, v *repo.Shown) {
	derived := ""
	if v.ReadersDerived {
		derived = " (derived: the record predates readers)"
	}
	ios.Printf("Readers:  DuckDB %s attaches it (the file: DuckDB %s; DuckLake %s: the ducklake extension of DuckDB %s)%s\n",
		v.Readers.Attach, v.Readers.DuckDB, v.Record.DuckLake.Format, v.Readers.DuckLakeExtension, derived)
}

// printMigrationNote says, under the ATTACH line of a version older than
// DuckLake 1.0, that DuckDB 1.5.2 and newer refuse it and how to publish a
// version they read.
func printMigrationNote(ios *term.IO, v *repo.Shown) {
	branch := v.Branch
	if branch == "" {
		branch = "BRANCH"
	}
	old := "for its readers"
	if v.Readers.Attach != "none" {
		old = "for DuckDB " + v.Readers.Attach
	}
	ios.Printf("DuckDB 1.5.2 and newer refuse this DuckLake %s version (they read DuckLake 1.0 only): 'fdl migrate %s' publishes its migration to 1.0 as a new version (this one stays %s).\n",
		v.Record.DuckLake.Format, branch, old)
}

// printRetired prints the record of a version out of retention and when it
// left; no ATTACH line (docs/spec.md §10.7: the record stays, the catalog goes).
func printRetired(ios *term.IO, v *repo.Shown) {
	rec, ret := v.Record, v.Retirement
	ios.Printf("%s %s %s\n", ios.Heading("version"), ios.ID(string(rec.ID)), ios.Bad("(retired)"))
	printSeqParents(ios, v)
	ios.Printf("Author:   %s\n", rec.Author)
	ios.Printf("Date:     %s\n", rec.CreatedAt.UTC().Format(time.RFC3339))
	ios.Printf("Catalog:  %s, sha256 %s (deleted)\n", term.Bytes(rec.Catalog.Size), rec.Catalog.SHA256)
	ios.Printf("DuckLake: %s\n", duckLakeLine(rec))
	ios.Printf("Retired:  left retention on %s (floor %d): %s\n", ret.At.UTC().Format(time.RFC3339), ret.Floor, ret.Reason)
	printSignature(ios, "", v.Signature)
	ios.Printf("\n    %s\n\n", strings.ReplaceAll(rec.Message, "\n", "\n    "))
	ios.Printf("Its catalog and dataset.json are deleted or about to be: it cannot be attached or checked out.\n")
}

// printSeqParents prints the Seq: and Parents: lines of 'fdl show' (ids
// shortened as the result says).
func printSeqParents(ios *term.IO, v *repo.Shown) {
	ios.Printf("Seq:      %d\n", v.Record.Seq)
	if len(v.Record.Parents) > 0 {
		ps := make([]string, len(v.Record.Parents))
		for i, p := range v.Record.Parents {
			ps[i] = v.Abbrev.Short(p)
		}
		ios.Printf("Parents:  %s\n", strings.Join(ps, " "))
	}
}

// printDataLine says where the version's data is read: the data path its
// catalog records, or, read through a mirror or another URL, where its
// readers read it there.
func printDataLine(ios *term.IO, v *repo.Shown) {
	if v.DataRead != "" {
		ios.Printf("Data:     %s (the catalog was written for %s)\n", v.DataRead, v.Record.DuckLake.DataPath)
		return
	}
	ios.Printf("Data:     %s\n", v.Record.DuckLake.DataPath)
}
