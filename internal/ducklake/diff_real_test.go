package ducklake

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// realHistories are histories the real extension (DuckDB 1.5.5, DuckLake
// 1.0) writes, one snapshot per statement after the ATTACH: inlined
// inserts, updates and deletes (the default inlining limit), Parquet files
// with delete files merged over several snapshots, merge_adjacent_files,
// rewrite_data_files, flush_inlined_data, schema changes, renames, drops.
var realHistories = map[string]struct {
	attach string
	stmts  []string
}{
	"inlined": {"", []string{
		"CREATE TABLE t(id INTEGER, v VARCHAR)",
		"INSERT INTO t SELECT i, 'v' || i FROM range(100) r(i)",
		"INSERT INTO t SELECT i, 'w' || i FROM range(100, 103) r(i)",
		"UPDATE t SET v = 'u' WHERE id < 5",
		"DELETE FROM t WHERE id >= 90 AND id < 95",
		"ALTER TABLE t ADD COLUMN q INTEGER",
		"ALTER TABLE t RENAME COLUMN v TO vv",
		"INSERT INTO t SELECT i, 'z', i FROM range(200, 250) r(i)",
		"CREATE TABLE d(x INTEGER)",
		"INSERT INTO d VALUES (1), (2)",
		"DROP TABLE d",
		"ALTER TABLE t RENAME TO t2",
		"DELETE FROM t2 WHERE id = 1",
		"CALL ducklake_flush_inlined_data('lake')",
		"DELETE FROM t2 WHERE id = 101",
		"UPDATE t2 SET q = 7 WHERE id >= 200 AND id < 220",
	}},
	"parquet": {", DATA_INLINING_ROW_LIMIT 0", []string{
		"CREATE TABLE t(id INTEGER, v VARCHAR)",
		"INSERT INTO t SELECT i, 'v' || i FROM range(10) r(i)",
		"INSERT INTO t SELECT i, 'v' || i FROM range(10, 20) r(i)",
		"INSERT INTO t SELECT i, 'v' || i FROM range(20, 30) r(i)",
		"DELETE FROM t WHERE id = 25",
		"DELETE FROM t WHERE id = 26",
		"CALL ducklake_merge_adjacent_files('lake')",
		"UPDATE t SET v = 'x' WHERE id % 3 = 0",
		"CREATE SCHEMA s",
		"CREATE TABLE s.u AS SELECT i AS k FROM range(1000) r(i)",
		"DELETE FROM s.u WHERE k < 500",
		"CALL ducklake_rewrite_data_files('lake', 'u', schema => 's', delete_threshold => 0)",
		"INSERT INTO s.u SELECT i FROM range(5) r(i)",
		"INSERT INTO s.u SELECT i FROM range(5) r(i)",
		"CALL ducklake_merge_adjacent_files('lake')",
		"ALTER TABLE t ALTER COLUMN id TYPE BIGINT",
		"CREATE VIEW big AS SELECT * FROM t WHERE id > 20",
		"DELETE FROM t",
		"DROP TABLE s.u",
	}},
}

// TestDiffAgainstExtension writes each history with the real extension and
// checks Catalog.Diff between pairs of its snapshots against what the
// extension reads: rows inserted and deleted per table by row identity
// (SELECT rowid, * … AT VERSION, EXCEPT ALL both ways; a table whose
// columns changed in between has no such comparison, and only its rows at
// each side are checked) and rows at each side (SELECT count(*) … AT
// VERSION). It is one piece: the comparisons of one pair share the
// session and the catalog read at both sides, and read as one list of claims.
func TestDiffAgainstExtension(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake")
	ctx := context.Background()
	for name, h := range realHistories {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "lake.duckdb")
			attach := fmt.Sprintf("ATTACH 'ducklake:%s' AS lake (DATA_PATH '%s/'%s);\nUSE lake;\n", path, filepath.Join(dir, "data"), h.attach)
			d.MustQuery(t, attach+strings.Join(h.stmts, ";\n")+";")
			c, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			last := int64(len(h.stmts))
			var q strings.Builder
			q.WriteString(strings.Replace(attach, "AS lake (", "AS lake (READ_ONLY, ", 1))
			type probe struct {
				from, to int64
				table    string // "schema"."name" at to
				id       int64
			}
			var probes []probe
			diffs := map[[2]int64]*meta.Diff{}
			for from := int64(0); from <= last; from++ {
				for to := from + 1; to <= last; to++ {
					// Every pair is cheap for fdl but slow for the
					// extension: check neighbours, short ranges and the
					// whole history.
					if to-from > 3 && from != 0 && to != last {
						continue
					}
					df, err := c.Diff(ctx, from, to)
					if err != nil {
						t.Fatalf("diff %d..%d: %v", from, to, err)
					}
					diffs[[2]int64{from, to}] = df
					for _, tc := range df.Tables {
						if tc.Change == meta.Dropped {
							continue
						}
						p := probe{from, to, sqlquote.Ident(tc.Schema) + "." + sqlquote.Ident(tc.Name), tc.ID}
						probes = append(probes, p)
						old := tc.Schema
						if tc.OldSchema != "" {
							old = tc.OldSchema
						}
						oldName := tc.Name
						if tc.OldName != "" {
							oldName = tc.OldName
						}
						before := fmt.Sprintf("%s.%s AT (VERSION => %d)", sqlquote.Ident(old), sqlquote.Ident(oldName), from)
						after := fmt.Sprintf("%s AT (VERSION => %d)", p.table, to)
						switch {
						case tc.Change == meta.Created:
							fmt.Fprintf(&q, "SELECT count(*), 0 FROM %s;\n", after)
						case len(tc.Columns) > 0:
							// EXCEPT ALL needs the same columns on both
							// sides: only the counts are compared.
							q.WriteString("SELECT -1, -1;\n")
						default:
							fmt.Fprintf(&q, "SELECT (SELECT count(*) FROM (SELECT rowid, * FROM %[2]s EXCEPT ALL SELECT rowid, * FROM %[1]s)), (SELECT count(*) FROM (SELECT rowid, * FROM %[1]s EXCEPT ALL SELECT rowid, * FROM %[2]s));\n", before, after)
						}
						fmt.Fprintf(&q, "SELECT count(*) FROM %s;\n", after)
						if tc.Change != meta.Created {
							fmt.Fprintf(&q, "SELECT count(*) FROM %s;\n", before)
						} else {
							q.WriteString("SELECT 0;\n")
						}
					}
				}
			}
			c.Close()
			t.Logf("fdl diffs done %v", time.Since(start))
			res := d.MustQuery(t, q.String())
			t.Logf("extension done %v", time.Since(start))
			if len(res) != 3*len(probes) {
				t.Fatalf("%d results for %d probes", len(res), len(probes))
			}
			checked, uncompared := 0, 0
			for i, p := range probes {
				df := diffs[[2]int64{p.from, p.to}]
				var tc *meta.TableChange
				for j := range df.Tables {
					if df.Tables[j].ID == p.id && df.Tables[j].Change != meta.Dropped {
						tc = &df.Tables[j]
					}
				}
				ins, del := num(res[3*i].Rows[0][0]), num(res[3*i].Rows[0][1])
				after, before := num(res[3*i+1].Rows[0][0]), num(res[3*i+2].Rows[0][0])
				got := [4]int64{*tc.Rows.Inserted, *tc.Rows.Deleted, tc.Rows.Before, tc.Rows.After}
				want := [4]int64{ins, del, before, after}
				if ins < 0 {
					got[0], got[1] = -1, -1
					uncompared++
				}
				if got != want || (ins >= 0 && !tc.Rows.Exact) {
					t.Errorf("%s %d..%d: fdl inserted/deleted/before/after %v (exact %v), extension %v", p.table, p.from, p.to, got, tc.Rows.Exact, want)
				}
				checked++
				if testing.Verbose() && p.to == p.from+1 {
					t.Logf("%s %d..%d: %v", p.table, p.from, p.to, got)
				}
			}
			t.Logf("%d snapshots, %d table diffs agree with the extension (%d whose columns changed: rows at each side only)", last+1, checked, uncompared)
		})
	}
}

func num(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string:
		var n int64
		fmt.Sscan(x, &n)
		return n
	}
	return -1
}
