package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

func newShowCmd(ios *term.IO, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show [REV]",
		Short: "Show a version's record and what it holds",
		Long: `Show REV's record (version.json) and dataset (dataset.json: schemas, tables,
columns with types, row counts, data files, views), and the DuckDB ATTACH
statement a reader uses to query it.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runShow(cmd.Context(), ios, g, optionalArg(a, 0))
		},
	}
	g.addRepoFlag(cmd)
	return cmd
}

type showOutput struct {
	Record  *version.Record  `json:"record"`
	Dataset *version.Dataset `json:"dataset"`
	Short   string           `json:"short_id"`
	Attach  string           `json:"attach"`
}

func runShow(ctx context.Context, ios *term.IO, g *globals, rev string) error {
	return g.withRepo(ctx, func(r *repo.Repo) error {
		var rec *version.Record
		var ds *version.Dataset
		catalog := ""
		local := g.localVersions(rev)
		if len(local) > 0 {
			// In a working directory with unpushed versions, show its newest.
			rec = local[0]
			w, err := g.workdir()
			if err != nil {
				return err
			}
			if ds, err = w.LocalDataset(rec.ID); err != nil {
				return err
			}
			catalog = w.LocalCatalog(rec.ID)
		} else {
			if rev == "" {
				rev = g.defaultRev()
			}
			res, err := r.Resolve(ctx, rev)
			if err != nil {
				return err
			}
			if rec, err = r.Record(ctx, res.ID); err != nil {
				return err
			}
			if ret, err := r.Retirement(ctx, rec.ID); err != nil || ret != nil {
				if err != nil {
					return err
				}
				return showRetired(ctx, ios, g, r, rec, ret)
			}
			if ds, err = r.Dataset(ctx, res.ID); err != nil {
				return err
			}
			catalog = r.CatalogLocation(rec.ID)
			if err := r.CheckCatalogSize(ctx, rec); err != nil {
				return err
			}
		}
		n, err := shortLen(ctx, r, local)
		if err != nil {
			return err
		}
		out := showOutput{Record: rec, Dataset: ds, Short: repo.Short(rec.ID, n),
			Attach: r.AttachStatement(catalog, rec.DuckLake.DataPath, "v"+fmt.Sprint(rec.Seq), true)}
		if note := ducklake.ReaderNote(rec.DuckLake.Format); note != "" {
			out.Attach += " " + note
		}
		if g.JSON {
			return printJSON(ios, out)
		}
		ios.Printf("%s %s\n", ios.Heading("version"), ios.ID(string(rec.ID)))
		printSeqParents(ios, rec, n)
		ios.Printf("Author:   %s\n", oneLine(rec.Author))
		ios.Printf("Date:     %s\n", rec.CreatedAt.UTC().Format(time.RFC3339))
		ios.Printf("Catalog:  %s, sha256 %s, DuckDB storage %d (DuckDB %s or newer)\n", term.Bytes(rec.Catalog.Size), rec.Catalog.SHA256, rec.Catalog.Storage.Number, rec.Catalog.Storage.MinDuckDB)
		ios.Printf("DuckLake: format %s, snapshot %d, adds snapshots %d..%d\n", rec.DuckLake.Format, rec.DuckLake.Snapshot, rec.DuckLake.Adds.First, rec.DuckLake.Adds.Last)
		ios.Printf("Data:     %s\n", rec.DuckLake.DataPath)
		ios.Printf("\n    %s\n\n", strings.ReplaceAll(printable(rec.Message), "\n", "\n    "))
		t := ds.Totals
		ios.Printf("%s %d schema(s), %d table(s), %d view(s), %d rows, %d data file(s), %s\n", ios.Heading("Dataset:"), t.Schemas, t.Tables, t.Views, t.Rows, t.DataFiles, term.Bytes(t.DataBytes))
		for _, s := range ds.Schemas {
			for _, tb := range s.Tables {
				ios.Printf("  table %s.%s  %d rows, %d file(s), %s\n", repo.SQLIdent(s.Name), repo.SQLIdent(tb.Name), tb.RowCount, tb.DataFiles, term.Bytes(tb.DataBytes))
				for _, c := range tb.Columns {
					null := ""
					if !c.Nullable {
						null = " not null"
					}
					ios.Printf("    %-24s %s%s\n", c.Name, c.Type, null)
				}
			}
			for _, v := range s.Views {
				ios.Printf("  view %s.%s  %s\n", repo.SQLIdent(s.Name), repo.SQLIdent(v.Name), oneLine(v.SQL))
			}
		}
		ios.Printf("\nQuery it with DuckDB (ducklake extension):\n  %s\n", out.Attach)
		return nil
	})
}

// printSeqParents prints the Seq: and Parents: lines of 'fdl show' (ids
// shortened to n characters).
func printSeqParents(ios *term.IO, rec *version.Record, n int) {
	ios.Printf("Seq:      %d\n", rec.Seq)
	if len(rec.Parents) > 0 {
		ps := make([]string, len(rec.Parents))
		for i, p := range rec.Parents {
			ps[i] = repo.Short(p, n)
		}
		ios.Printf("Parents:  %s\n", strings.Join(ps, " "))
	}
}
