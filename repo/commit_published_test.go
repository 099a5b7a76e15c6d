package repo_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/workdir"
)

// publishedSQL is history.ChurnSQL with two inlined rows in main.small in every
// version, so a version publishes rows from data files and inlined rows.
func publishedSQL(i int) string {
	return history.ChurnSQL(i) + fmt.Sprintf(`;
SET ducklake_default_data_inlining_row_limit = 10;
INSERT INTO small SELECT (%d * 10 + i)::INTEGER AS k FROM range(2) t(i);
SET ducklake_default_data_inlining_row_limit = 0`, i)
}

// queryInt runs one query returning one integer on a DuckDB catalog.
func queryInt(t *testing.T, path, q string) int64 {
	t.Helper()
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// inlinedTable names the inlined-data table of main.small.
func inlinedTable(t *testing.T, cat string) string {
	t.Helper()
	db, err := sql.Open("duckdb", cat)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name string
	if err := db.QueryRow(`SELECT i.table_name FROM ducklake_inlined_data_tables i JOIN ducklake_table t USING (table_id)
		WHERE t.table_name = 'small' ORDER BY schema_version DESC LIMIT 1`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestCommitRefusesRewrittenHistory: every rewrite of what the base
// published at its last snapshot S (docs/spec.md §10, invariant 6) is
// refused by commit, naming the table; DuckLake's own maintenance (files
// merged, snapshots before S expired) is accepted. Each case adds a new
// snapshot after S so that only the rewrite stands in the way. The cases
// share one history (History.Keep), restored before each.
func TestCommitRefusesRewrittenHistory(t *testing.T) {
	ctx := context.Background()
	kept := history.BuildReal(t, 3, publishedSQL).Keep(t)
	const visibleOrder = "(SELECT min(data_file_id) FROM ducklake_data_file f JOIN ducklake_table t USING (table_id) WHERE t.table_name = 'orders' AND f.end_snapshot IS NULL)"
	for _, c := range []struct {
		name    string
		rewrite func(t *testing.T, h *history.History, cat string, s int64)
		table   string // "" when commit must accept
	}{
		{"data-file-row-deleted", func(t *testing.T, h *history.History, cat string, s int64) {
			history.ExecCatalog(t, cat, "DELETE FROM ducklake_data_file WHERE data_file_id = "+visibleOrder)
		}, "main.orders"},
		{"record-count-changed", func(t *testing.T, h *history.History, cat string, s int64) {
			history.ExecCatalog(t, cat, "UPDATE ducklake_data_file SET record_count = record_count - 1 WHERE data_file_id = "+visibleOrder)
		}, "main.orders"},
		{"data-file-ended-before-base", func(t *testing.T, h *history.History, cat string, s int64) {
			history.ExecCatalog(t, cat, fmt.Sprintf("UPDATE ducklake_data_file SET end_snapshot = %d WHERE data_file_id = %s", s, visibleOrder))
		}, "main.orders"},
		{"delete-file-back-dated", func(t *testing.T, h *history.History, cat string, s int64) {
			h.Write(t, "DELETE FROM orders WHERE id % 10 = 3")
			history.ExecCatalog(t, cat, fmt.Sprintf("UPDATE ducklake_delete_file SET begin_snapshot = %d WHERE begin_snapshot > %d", s, s))
		}, "main.orders"},
		{"inlined-rows-removed", func(t *testing.T, h *history.History, cat string, s int64) {
			history.ExecCatalog(t, cat, fmt.Sprintf("DELETE FROM %s WHERE begin_snapshot <= %d AND k %% 2 = 0", inlinedTable(t, cat), s))
		}, "main.small"},
		{"column-renamed-back-in-time", func(t *testing.T, h *history.History, cat string, s int64) {
			history.ExecCatalog(t, cat, "UPDATE ducklake_column SET column_name = 'amount2' WHERE column_name = 'amount'")
		}, "main.orders"},
		{"table-dropped-back-in-time", func(t *testing.T, h *history.History, cat string, s int64) {
			history.ExecCatalog(t, cat, fmt.Sprintf("UPDATE ducklake_table SET end_snapshot = %d WHERE table_name = 'tmp'", s))
		}, "schema \"main\""},
		{"snapshots-before-base-expired", func(t *testing.T, h *history.History, cat string, s int64) {
			history.ExecCatalog(t, cat,
				"DELETE FROM ducklake_snapshot WHERE snapshot_id = 1",
				"DELETE FROM ducklake_snapshot_changes WHERE snapshot_id = 1")
		}, ""},
		{"files-merged", func(t *testing.T, h *history.History, cat string, s int64) {
			const orders = "SELECT count(*) FROM ducklake_data_file f JOIN ducklake_table t USING (table_id) WHERE t.table_name = 'orders' AND f.end_snapshot IS NULL"
			before := queryInt(t, cat, orders)
			h.Write(t, "CALL ducklake_merge_adjacent_files('lake', 'orders')")
			if after := queryInt(t, cat, orders); after >= before {
				t.Fatalf("compaction left %d data files of %d", after, before)
			}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := kept.Restore(t)
			cat := h.WD + "/" + workdir.CatalogName
			s := h.Recs[len(h.Recs)-1].DuckLake.Snapshot
			c.rewrite(t, h, cat, s)
			h.Write(t, "INSERT INTO events VALUES (99)")
			wd, err := workdir.Open(h.WD)
			if err != nil {
				t.Fatal(err)
			}
			_, err = wd.Commit(ctx, workdir.CommitOptions{Message: c.name, Author: "t"})
			if c.table == "" {
				if err != nil {
					t.Fatalf("commit after %s: %v", c.name, err)
				}
				return
			}
			if !errors.Is(err, workdir.ErrNotDescendant) || !strings.Contains(err.Error(), c.table) || !strings.Contains(err.Error(), fmt.Sprintf("at snapshot %d", s)) {
				t.Fatalf("commit after %s: %v; want ErrNotDescendant naming %s and snapshot %d", c.name, err, c.table, s)
			}
		})
	}
}

// TestCommitAcceptsRealMaintenance: DuckLake's own maintenance, run by the
// real DuckDB 1.5 and its ducklake extension on a working catalog
// (ducklake_merge_adjacent_files, ducklake_expire_snapshots of the first
// snapshots, then an insert), is accepted by commit's check of what the
// base published.
func TestCommitAcceptsRealMaintenance(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake")
	ctx := context.Background()
	h := history.BuildReal(t, 3, publishedSQL)
	cat := h.WD + "/" + workdir.CatalogName
	const orders = "SELECT count(*) FROM ducklake_data_file f JOIN ducklake_table t USING (table_id) WHERE t.table_name = 'orders' AND f.end_snapshot IS NULL"
	before := queryInt(t, cat, orders)
	d.MustQuery(t, fmt.Sprintf(`ATTACH 'ducklake:%s' AS l;
CALL ducklake_merge_adjacent_files('l');
SELECT count(*) FROM ducklake_expire_snapshots('l', versions => [1, 2]);
INSERT INTO l.main.events VALUES (99);`, cat))
	if after, gone := queryInt(t, cat, orders), queryInt(t, cat, "SELECT count(*) FROM ducklake_snapshot WHERE snapshot_id IN (1, 2)"); after >= before || gone != 0 {
		t.Fatalf("maintenance did nothing: %d visible files of orders (were %d), %d of snapshots 1 and 2 left", after, before, gone)
	}
	wd, err := workdir.Open(h.WD)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "maintenance", Author: "t"}); err != nil {
		t.Fatalf("commit after DuckLake's maintenance: %v", err)
	}
}
