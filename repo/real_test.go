package repo_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

func countColumns(cols []meta.Column) int {
	n := 0
	for _, c := range cols {
		n += 1 + countColumns(c.Children)
	}
	return n
}

// TestRealCatalogs takes every DuckDB-format catalog of MANIFEST.md through
// checkout --from, commit, push, show and a fresh checkout: the fresh
// working catalog's sha256 equals the record's and dataset.json lists
// exactly the live tables and columns MANIFEST.md gives.
//
// It is one piece: one loop that takes each catalog through the commands in
// order, each step reading the result of the one before it.
func TestRealCatalogs(t *testing.T) {
	ctx := context.Background()
	for _, e := range testutil.Manifest(t) {
		if e.DB != "duckdb" {
			continue
		}
		t.Run(e.File, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src", e.File)
			testutil.Gunzip(t, e.File, src)
			url := filepath.Join(dir, "repo")
			r, err := repo.Init(ctx, url, repo.InitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "w"), From: src})
			if err != nil {
				t.Fatal(err)
			}
			wantPath := e.DataPath
			if !strings.Contains(wantPath, ":") && !filepath.IsAbs(wantPath) {
				// A relative data_path is resolved at import against the
				// folder fdl runs in, as DuckDB run there reads it.
				abs, err := filepath.Abs(wantPath)
				if err != nil {
					t.Fatal(err)
				}
				wantPath = filepath.ToSlash(abs) + "/"
				if res.ResolvedDataPath != e.DataPath {
					t.Errorf("resolved data_path %q, manifest %q", res.ResolvedDataPath, e.DataPath)
				}
			}
			if res.DataPath != wantPath {
				t.Errorf("data_path %q, want %q (manifest %q)", res.DataPath, wantPath, e.DataPath)
			}
			w, err := workdir.Open(res.Dir)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := w.Commit(ctx, workdir.CommitOptions{Message: "import " + e.File, Author: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if rec.DuckLake.Format != e.Format || rec.DuckLake.Snapshot != e.MaxSnapshot || rec.DuckLake.Adds.First != 0 {
				t.Errorf("record ducklake %+v; manifest format %s max snapshot %d", rec.DuckLake, e.Format, e.MaxSnapshot)
			}
			if _, err := w.Push(ctx, workdir.PushOptions{}); err != nil {
				t.Fatal(err)
			}
			got, err := r.Resolve(ctx, "main")
			if err != nil || got.ID != rec.ID {
				t.Fatalf("main = %v %v, want %s", got, err, rec.ID)
			}
			ds, err := r.Dataset(ctx, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			var tables []string
			cols := 0
			for _, s := range ds.Schemas {
				for _, tb := range s.Tables {
					tables = append(tables, tb.Name)
					cols += countColumns(tb.Columns)
				}
			}
			want := append([]string(nil), e.Tables...)
			sort.Strings(tables)
			sort.Strings(want)
			if len(tables) != len(want) {
				t.Fatalf("tables %v, manifest %v", tables, want)
			}
			for i := range want {
				if tables[i] != want[i] {
					t.Fatalf("tables %v, manifest %v", tables, want)
				}
			}
			if cols != e.LiveColumns {
				t.Errorf("%d live columns, manifest %d", cols, e.LiveColumns)
			}
			if ds.Totals.DataFiles != int64(e.DataFiles) {
				t.Errorf("%d data files, manifest %d", ds.Totals.DataFiles, e.DataFiles)
			}
			fresh, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "fresh")})
			if err != nil {
				t.Fatal(err)
			}
			size, sum, err := repo.FileDigest(fresh.Catalog)
			if err != nil {
				t.Fatal(err)
			}
			if size != rec.Catalog.Size || sum != rec.Catalog.SHA256 {
				t.Fatalf("fresh checkout %d bytes %s; record %d bytes %s", size, sum, rec.Catalog.Size, rec.Catalog.SHA256)
			}
			// The source file was only read.
			if _, srcSum, _ := repo.FileDigest(src); srcSum != e.SHA256 {
				t.Fatalf("source catalog changed: sha256 %s, manifest %s", srcSum, e.SHA256)
			}
			rep, err := r.Verify(ctx, repo.VerifyOptions{})
			if err != nil || !rep.OK() {
				t.Fatalf("verify: %+v %v", rep, err)
			}
		})
	}
}
