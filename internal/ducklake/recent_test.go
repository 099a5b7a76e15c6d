package ducklake_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/testutil"
)

// TestReadRecentSQLiteEqualsDuckDB: what status reads of a SQLite catalog
// in place (ReadRecent: the snapshots from a base on, the table names at
// the base and the last snapshot) equals what it reads of the same
// catalog in DuckDB form, and what the full readers give (Snapshots and
// State), for every real catalog of the corpus (each converted to the
// other form) and a history made by the writer with renames, drops,
// schema changes, views, inlined rows and deletes, for every base.
func TestReadRecentSQLiteEqualsDuckDB(t *testing.T) {
	ctx := context.Background()
	type pair struct{ name, duck, lite string }
	var pairs []pair
	for _, c := range testutil.Manifest(t) {
		dir := t.TempDir()
		src := filepath.Join(dir, c.File)
		testutil.Gunzip(t, c.File, src)
		p := pair{name: c.File}
		if c.DB == "sqlite" {
			p.lite, p.duck = src, filepath.Join(dir, "frozen.duckdb")
			if _, err := ducklake.Freeze(ctx, src, p.duck); err != nil {
				t.Fatalf("%s: %v", c.File, err)
			}
		} else {
			p.duck, p.lite = src, filepath.Join(dir, "lite.sqlite")
			if err := ducklake.ConvertToSQLite(ctx, src, p.lite); err != nil {
				t.Fatalf("%s: %v", c.File, err)
			}
		}
		pairs = append(pairs, p)
	}
	hist := writtenHistory(t)
	pairs = append(pairs, pair{"written history", hist, filepath.Join(filepath.Dir(hist), "lite.sqlite")})
	if err := ducklake.ConvertToSQLite(ctx, hist, pairs[len(pairs)-1].lite); err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		c, err := ducklake.Open(ctx, p.duck)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		all, err := c.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		froms := []int64{-1, all[len(all)-1].ID + 1}
		for _, s := range all {
			froms = append(froms, s.ID)
		}
		for _, from := range froms {
			lite, err := ducklake.ReadRecent(ctx, p.lite, from)
			if err != nil {
				t.Fatalf("%s from %d: SQLite: %v", p.name, from, err)
			}
			duck, err := ducklake.ReadRecent(ctx, p.duck, from)
			if err != nil {
				t.Fatalf("%s from %d: DuckDB: %v", p.name, from, err)
			}
			if !reflect.DeepEqual(lite, duck) {
				t.Errorf("%s from %d:\nSQLite %+v\nDuckDB %+v", p.name, from, lite, duck)
			}
			if want := fullRead(t, c, all, from); !reflect.DeepEqual(duck, want) {
				t.Errorf("%s from %d:\nReadRecent %+v\nfull read  %+v", p.name, from, duck, want)
			}
		}
		c.Close()
	}
}

// fullRead is what ReadRecent must give, from the full readers.
func fullRead(t *testing.T, c *ducklake.Catalog, all []ducklake.Snapshot, from int64) *ducklake.Recent {
	t.Helper()
	want := &ducklake.Recent{Tables: map[int64]ducklake.TableName{}}
	hasFrom := false
	for _, s := range all {
		if s.ID >= from {
			want.Snapshots = append(want.Snapshots, s)
		}
		hasFrom = hasFrom || s.ID == from
	}
	if len(want.Snapshots) == 0 {
		want.Snapshots = all[len(all)-1:]
	}
	ats := []int64{want.Snapshots[len(want.Snapshots)-1].ID}
	if hasFrom {
		ats = []int64{from, ats[0]}
	}
	for _, at := range ats {
		st, err := c.State(context.Background(), at)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range st.Schemas {
			for _, tb := range sc.Tables {
				want.Tables[tb.ID] = ducklake.TableName{ID: tb.ID, Schema: sc.Name, Name: tb.Name}
			}
			for _, v := range sc.Views { // views too: status names them as touched
				want.Tables[v.ID] = ducklake.TableName{ID: v.ID, Schema: sc.Name, Name: v.Name}
			}
		}
	}
	return want
}

// writtenHistory writes a DuckDB catalog through many snapshots of
// different kinds and returns its path.
func writtenHistory(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "hist.duckdb")
	if err := lakewriter.Create(ctx, path, lakewriter.CreateOptions{DataPath: filepath.ToSlash(dir) + "/data/"}); err != nil {
		t.Fatal(err)
	}
	w, err := lakewriter.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	col := func(n, typ string) lakewriter.ColumnDef {
		return lakewriter.ColumnDef{Name: n, Type: typ, Nullable: true}
	}
	steps := []func() error{
		func() error {
			_, err := w.CreateTable(ctx, "main", "a", []lakewriter.ColumnDef{col("k", "int32")})
			return err
		},
		func() error {
			_, err := w.CreateTable(ctx, "main", "b", []lakewriter.ColumnDef{col("s", "varchar")})
			return err
		},
		func() error { return w.Insert(ctx, "main", "a", "SELECT i::INTEGER AS k FROM range(5) t(i)") },
		func() error { return w.InsertInlined(ctx, "main", "b", "SELECT 'x' AS s") },
		func() error { return w.RenameTable(ctx, "main", "a", "a2") },
		func() error { return w.AddColumn(ctx, "main", "a2", col("v", "float64")) },
		func() error { return w.CreateSchema(ctx, "Other Schema") },
		func() error {
			_, err := w.CreateTable(ctx, "Other Schema", "My T", []lakewriter.ColumnDef{col("k", "int64")})
			return err
		},
		func() error { return w.CreateView(ctx, "main", "v", "SELECT 1 AS one") },
		func() error { return w.DeleteWhere(ctx, "main", "a2", "k = 3") },
		func() error { return w.DropTable(ctx, "main", "b") },
		func() error { return w.Insert(ctx, "main", "a2", "SELECT 9::INTEGER AS k, 1.5::DOUBLE AS v") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return path
}
