package repo_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

type step struct {
	name string
	sql  string // run by the real DuckDB on the working catalog
	// want: table name -> row count after this step (nil: unchanged check skipped)
	want map[string]int64
	// cols: table -> column names after this step
	cols  map[string][]string
	views []string
}

// TestWriterHistory writes a catalog with the real DuckDB (1.5.5 and its
// ducklake extension, through the ATTACH line checkout prints) over many
// versions — renamed and dropped tables and columns, views, data files,
// deletes, inlined rows, compaction — commits and pushes each, and checks
// every version's dataset.json, the snapshot ranges, and that each
// ancestor's state read from the newest catalog equals its own dataset
// (docs/spec.md §5.1).
//
// It is one piece: one history built version by version, each version's
// checks reading the versions before it.
func TestWriterHistory(t *testing.T) {
	duck := realduck.Find(t, realduck.V15, "ducklake").Start(t)
	ctx := context.Background()
	steps := []step{
		{name: "create and load", sql: `CREATE TABLE orders(id BIGINT, amount DOUBLE);
			INSERT INTO orders SELECT i AS id, i * 2.0 AS amount FROM range(1000) t(i);
			CREATE TABLE tmp(x INTEGER)`,
			want: map[string]int64{"orders": 1000, "tmp": 0}, cols: map[string][]string{"orders": {"id", "amount"}, "tmp": {"x"}}},
		{name: "append, delete, view", sql: `INSERT INTO orders SELECT 1000 + i AS id, 1.0 AS amount FROM range(500) t(i);
			DELETE FROM orders WHERE id < 100;
			CREATE VIEW big AS SELECT * FROM orders WHERE amount > 100`,
			want: map[string]int64{"orders": 1400, "tmp": 0}, views: []string{"big"}},
		{name: "rename table and column, add column", sql: `ALTER TABLE orders RENAME TO sales;
			ALTER TABLE sales RENAME COLUMN amount TO total;
			ALTER TABLE sales ADD COLUMN region VARCHAR`,
			want: map[string]int64{"sales": 1400, "tmp": 0}, cols: map[string][]string{"sales": {"id", "total", "region"}}, views: []string{"big"}},
		{name: "drop table, drop column, drop view, inline", sql: `DROP TABLE tmp;
			ALTER TABLE sales DROP COLUMN region;
			DROP VIEW big;
			CREATE TABLE small(k INTEGER);
			SET ducklake_default_data_inlining_row_limit = 10;
			INSERT INTO small SELECT i::INTEGER AS k FROM range(7) t(i)`,
			want: map[string]int64{"sales": 1400, "small": 7}, cols: map[string][]string{"sales": {"id", "total"}, "small": {"k"}}},
		{name: "compact", sql: `CALL ducklake_rewrite_data_files('lake', 'sales', delete_threshold => 0);
			CALL ducklake_merge_adjacent_files('lake', 'sales')`,
			want: map[string]int64{"sales": 1400, "small": 7}},
	}

	dir := t.TempDir()
	r, err := repo.Init(ctx, filepath.Join(dir, "repo"), repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "w")})
	if err != nil {
		t.Fatal(err)
	}
	if res.DataPath != r.DataLocation() {
		t.Fatalf("new catalog's data_path %q, want the repository's %q", res.DataPath, r.DataLocation())
	}
	var recs []*version.Record
	for i, s := range steps {
		if _, err := duck.Query(realduck.OnLake(res.Attach, s.sql, false)); err != nil {
			t.Fatalf("step %q: %v", s.name, err)
		}
		wd, err := workdir.Open(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: s.name, Author: "t"})
		if err != nil {
			t.Fatalf("commit %q: %v", s.name, err)
		}
		if rec.Seq != int64(i+1) {
			t.Fatalf("seq %d, want %d", rec.Seq, i+1)
		}
		if i > 0 {
			prev := recs[i-1]
			if rec.Parent() != prev.ID || rec.DuckLake.Adds.First != prev.DuckLake.Snapshot+1 || rec.ID <= prev.ID {
				t.Fatalf("version %d: parent %s adds %+v; previous %s ends at %d", i+1, rec.Parent(), rec.DuckLake.Adds, prev.ID, prev.DuckLake.Snapshot)
			}
		}
		recs = append(recs, rec)
		// Push every other version: pushes of several local versions work.
		if i%2 == 1 || i == len(steps)-1 {
			if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Check every version's dataset against the steps.
	for i, rec := range recs {
		ds, err := r.Dataset(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		gotCols := map[string][]string{}
		var views []string
		for _, s := range ds.Schemas {
			for _, tb := range s.Tables {
				got[tb.Name] = tb.RowCount
				for _, c := range tb.Columns {
					gotCols[tb.Name] = append(gotCols[tb.Name], c.Name)
				}
			}
			for _, v := range s.Views {
				views = append(views, v.Name)
			}
		}
		if !reflect.DeepEqual(got, steps[i].want) {
			t.Errorf("version %d (%s): row counts %v, want %v", i+1, steps[i].name, got, steps[i].want)
		}
		for tb, want := range steps[i].cols {
			if !reflect.DeepEqual(gotCols[tb], want) {
				t.Errorf("version %d: %s columns %v, want %v", i+1, tb, gotCols[tb], want)
			}
		}
		if !reflect.DeepEqual(views, steps[i].views) {
			t.Errorf("version %d: views %v, want %v", i+1, views, steps[i].views)
		}
	}
	// Ancestors' states read from the newest catalog equal their datasets.
	last := recs[len(recs)-1]
	fresh, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "fresh")})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := ducklake.Open(ctx, fresh.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	for _, rec := range recs {
		st, err := cat.State(ctx, rec.DuckLake.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		ds, _ := r.Dataset(ctx, rec.ID)
		a, _ := json.Marshal(st.Schemas)
		b, _ := json.Marshal(ds.Schemas)
		if string(a) != string(b) {
			t.Errorf("state of seq %d read from seq %d's catalog differs from its dataset.json:\n%s\n%s", rec.Seq, last.Seq, a, b)
		}
	}
	log, err := r.Log(ctx, last.ID, 0)
	if err != nil || len(log) != len(steps) {
		t.Fatalf("log: %d %v", len(log), err)
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify %+v %v", rep, err)
	}
	// Nothing new: refused.
	wd, _ := workdir.Open(res.Dir)
	if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "again", Author: "t"}); !errors.Is(err, workdir.ErrNothingToCommit) {
		t.Fatalf("commit with nothing new: %v", err)
	}
}
