package ducklake_test

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// TestReadRecentSQLiteEqualsDuckDB: what status reads of a SQLite catalog
// in place (ReadRecent: the snapshots from a base on, the table names at
// the base and the last snapshot) equals what it reads of the same
// catalog in DuckDB form, and what the full readers give (Snapshots and
// State), for every real catalog of the corpus (each converted to the
// other form) and a history the real DuckDB writes with renames, drops,
// schema changes, views, inlined rows and deletes, for every base; tables,
// views and a schema created and dropped after a base are named too (by
// their names, not DuckLake's ids).
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
		states := map[int64]*meta.State{}
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
			if want := fullRead(t, c, all, from, states); !reflect.DeepEqual(duck, want) {
				t.Errorf("%s from %d:\nReadRecent %+v\nfull read  %+v", p.name, from, duck, want)
			}
		}
		c.Close()
	}
}

// fullRead is what ReadRecent must give, from the full readers (the
// states read kept in states, by snapshot). It is one piece: it is the
// reference ReadRecent is checked against, kept as plain as the rule.
func fullRead(t *testing.T, c *ducklake.Catalog, all []ducklake.Snapshot, from int64, states map[int64]*meta.State) *ducklake.Recent {
	t.Helper()
	state := func(at int64) *meta.State {
		if st, ok := states[at]; ok {
			return st
		}
		st, err := c.State(context.Background(), at)
		if err != nil {
			t.Fatal(err)
		}
		states[at] = st
		return st
	}
	names := func(st *meta.State) map[int64]ducklake.TableName {
		out := map[int64]ducklake.TableName{}
		for _, sc := range st.Schemas {
			for _, tb := range sc.Tables {
				out[tb.ID] = ducklake.TableName{ID: tb.ID, Schema: sc.Name, Name: tb.Name}
			}
			for _, v := range sc.Views {
				out[v.ID] = ducklake.TableName{ID: v.ID, Schema: sc.Name, Name: v.Name}
			}
		}
		return out
	}
	want := &ducklake.Recent{Tables: map[int64]ducklake.TableName{}, Schemas: map[int64]string{}}
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
	// Tables and views that lived after from, named as at each later
	// snapshot (one created and dropped there is named too), then those
	// of from and of the last snapshot, whose names win.
	var ats []int64
	for _, s := range want.Snapshots {
		if s.ID > from {
			ats = append(ats, s.ID)
		}
	}
	if hasFrom {
		ats = append(ats, from)
	}
	ats = append(ats, want.Snapshots[len(want.Snapshots)-1].ID)
	// A rename: an id whose name (or schema) at a snapshot after from
	// differs from the one at the snapshot before.
	for i := 1; i < len(all); i++ {
		if all[i].ID <= from {
			continue
		}
		before, after := names(state(all[i-1].ID)), names(state(all[i].ID))
		var ids []int64
		for id, n := range after {
			if b, ok := before[id]; ok && (b.Schema != n.Schema || b.Name != n.Name) {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			want.Renames = append(want.Renames, ducklake.Rename{Snapshot: all[i].ID, From: before[id], To: after[id]})
		}
	}
	for _, at := range ats {
		st := state(at)
		for _, sc := range st.Schemas {
			want.Schemas[sc.ID] = sc.Name
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
// different kinds with the real DuckDB (1.5.5 and its ducklake extension;
// each statement is its own snapshot) and returns its path.
func writtenHistory(t *testing.T) string {
	t.Helper()
	d := realduck.Find(t, realduck.V15, "ducklake")
	dir := t.TempDir()
	path := filepath.Join(dir, "hist.duckdb")
	attach := "ATTACH " + sqlquote.String("ducklake:"+path) + " AS lake (DATA_PATH " + sqlquote.String(filepath.ToSlash(dir)+"/data/") + ");"
	d.MustQuery(t, realduck.OnLake(attach, `CREATE TABLE a(k INTEGER);
		CREATE TABLE b(s VARCHAR);
		INSERT INTO a SELECT i::INTEGER AS k FROM range(5) t(i);
		SET ducklake_default_data_inlining_row_limit = 10;
		INSERT INTO b VALUES ('x');
		SET ducklake_default_data_inlining_row_limit = 0;
		ALTER TABLE a RENAME TO a2;
		ALTER TABLE a2 ADD COLUMN v DOUBLE;
		CREATE SCHEMA "Other Schema";
		CREATE TABLE "Other Schema"."My T"(k BIGINT);
		CREATE VIEW v AS SELECT 1 AS one;
		DELETE FROM a2 WHERE k = 3;
		DROP TABLE b;
		CREATE TABLE c(x INTEGER);
		ALTER TABLE c RENAME TO c2;
		ALTER VIEW v RENAME TO v2;
		DROP TABLE c2;
		CREATE VIEW w AS SELECT 2 AS two;
		DROP VIEW w;
		CREATE SCHEMA s2;
		CREATE TABLE s2.t(x INTEGER);
		DROP TABLE s2.t;
		DROP SCHEMA s2;
		INSERT INTO a2 VALUES (9, 1.5)`, false))
	return path
}
