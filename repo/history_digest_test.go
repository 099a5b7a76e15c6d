package repo_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// execOn runs plain SQL on a working catalog of either form (the rewrite
// a tool other than DuckLake would make) and returns the first column of
// the last statement's first row when it is a query ("" otherwise).
func execOn(t *testing.T, backend ducklake.Backend, path string, qs ...string) string {
	t.Helper()
	driver := "duckdb"
	if backend == ducklake.BackendSQLite {
		driver = "sqlite3"
	}
	db, err := sql.Open(driver, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := ""
	for _, q := range qs {
		if strings.HasPrefix(q, "SELECT") {
			if err := db.QueryRow(q).Scan(&out); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			continue
		}
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return out
}

// checkoutAs checks the head of main out into a new working directory
// with a catalog of the given form; it returns the working directory and
// its ATTACH line.
func checkoutAs(t *testing.T, h *history.History, backend ducklake.Backend) (string, string, string) {
	t.Helper()
	res, err := workdir.Checkout(context.Background(), h.Repo, workdir.CheckoutOptions{Dir: filepath.Join(t.TempDir(), "w"), CatalogFormat: backend})
	if err != nil {
		t.Fatal(err)
	}
	return res.Dir, res.Catalog, res.Attach
}

// Two visible data files of main.orders with the same record count (the
// rewrite repoints the first at the second's file).
const (
	ordersFiles = "FROM ducklake_data_file WHERE end_snapshot IS NULL AND record_count = 100 AND table_id = (SELECT table_id FROM ducklake_table WHERE table_name = 'orders' AND end_snapshot IS NULL)"
	firstOrder  = "(SELECT min(data_file_id) " + ordersFiles + ")"
	lastOrder   = "(SELECT max(data_file_id) " + ordersFiles + ")"
)

// TestCommitRefusesRewriteWithCountsKept: rows of snapshots up to the
// base's S changed in place with plain SQL, keeping every row count (a
// data-file row pointed at another file of the same count, an inlined
// value edited, a file's recorded size changed), are refused by commit
// naming the table and the snapshot, on DuckDB and SQLite working
// catalogs; DuckLake's own maintenance after S run by the real DuckDB
// (merge_adjacent_files, flush_inlined_data, expire_snapshots of the
// snapshots before S) is accepted.
func TestCommitRefusesRewriteWithCountsKept(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, publishedSQL)
	s := h.Recs[len(h.Recs)-1].DuckLake.Snapshot
	inlined := func(t *testing.T, b ducklake.Backend, cat string) string {
		return execOn(t, b, cat, `SELECT i.table_name FROM ducklake_inlined_data_tables i JOIN ducklake_table t USING (table_id)
			WHERE t.table_name = 'small' ORDER BY schema_version DESC LIMIT 1`)
	}
	for _, b := range []ducklake.Backend{ducklake.BackendDuckDB, ducklake.BackendSQLite} {
		for _, c := range []struct {
			name    string
			rewrite func(t *testing.T, cat, attach string)
			table   string // "" when commit must accept
		}{
			{"data-file-repointed", func(t *testing.T, cat, _ string) {
				execOn(t, b, cat, "UPDATE ducklake_data_file SET path = (SELECT path FROM ducklake_data_file WHERE data_file_id = "+lastOrder+") WHERE data_file_id = "+firstOrder)
			}, "main.orders"},
			{"file-size-changed", func(t *testing.T, cat, _ string) {
				execOn(t, b, cat, "UPDATE ducklake_data_file SET file_size_bytes = file_size_bytes + 100 WHERE data_file_id = "+firstOrder)
			}, "main.orders"},
			{"inlined-value-edited", func(t *testing.T, cat, _ string) {
				execOn(t, b, cat, fmt.Sprintf("UPDATE %s SET k = k + 1000 WHERE begin_snapshot <= %d", inlined(t, b, cat), s))
			}, "main.small"},
			{"maintenance-after-base", func(t *testing.T, _, attach string) {
				h.Duck.MustQuery(t, realduck.OnLake(attach, fmt.Sprintf(`CALL ducklake_merge_adjacent_files('lake');
CALL ducklake_flush_inlined_data('lake');
SET VARIABLE old = (SELECT list(snapshot_id) FROM lake.snapshots() WHERE snapshot_id < %d);
SELECT count(*) FROM ducklake_expire_snapshots('lake', versions => getvariable('old'));`, s), false))
			}, ""},
		} {
			t.Run(string(b)+"/"+c.name, func(t *testing.T) {
				dir, cat, attach := checkoutAs(t, h, b)
				c.rewrite(t, cat, attach)
				h.Duck.MustQuery(t, realduck.OnLake(attach, "INSERT INTO events VALUES (99)", false))
				wd, err := workdir.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: c.name, Author: "t"})
				if c.table == "" {
					if err != nil {
						t.Fatalf("commit after %s: %v", c.name, err)
					}
					// The maintenance rewrote files of snapshots up to S
					// (what the digest must tell from a rewrite).
					b, err := os.ReadFile(filepath.Join(dir, workdir.StateDir, workdir.LocalVersions, string(rec.ID), version.DatasetFile))
					if err != nil {
						t.Fatal(err)
					}
					ds, err := version.ParseDataset(b, rec.ID)
					if err != nil || ds.BaseHistory == nil || len(ds.BaseHistory.Respread) < 2 || ds.History == nil {
						t.Fatalf("dataset after %s: %v, base_history %+v; want the merged and flushed tables respread", c.name, err, ds.BaseHistory)
					}
					return
				}
				var he *repo.HistoryRewrittenError
				if !errors.As(err, &he) || !errors.Is(err, workdir.ErrNotDescendant) || he.Table != c.table || !strings.Contains(err.Error(), fmt.Sprintf("at snapshot %d", s)) {
					t.Fatalf("commit after %s: %v; want HistoryRewrittenError naming %s and snapshot %d", c.name, err, c.table, s)
				}
			})
		}
	}
}

// TestPushRefusesRewriteWithCountsKept: a version committed where the
// working directory did not know what its base published (no
// .fdl/base.dataset.json, as in a directory made before fdl kept it) from
// a catalog whose history before the base was rewritten with the counts
// kept is refused by push, naming the table and the snapshot; nothing
// moves.
func TestPushRefusesRewriteWithCountsKept(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, publishedSQL)
	s := h.Recs[len(h.Recs)-1].DuckLake.Snapshot
	cat := filepath.Join(h.WD, workdir.CatalogName)
	execOn(t, ducklake.BackendDuckDB, cat, "UPDATE ducklake_data_file SET path = (SELECT path FROM ducklake_data_file WHERE data_file_id = "+lastOrder+") WHERE data_file_id = "+firstOrder)
	h.Write(t, "INSERT INTO events VALUES (99)")
	if err := os.Remove(filepath.Join(h.WD, workdir.StateDir, workdir.BaseDatasetFile)); err != nil {
		t.Fatal(err)
	}
	wd, err := workdir.Open(h.WD)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "rewritten", Author: "t"}); err != nil {
		t.Fatalf("commit without the base's dataset: %v", err)
	}
	_, err = wd.Push(ctx, workdir.PushOptions{})
	var he *repo.HistoryRewrittenError
	if !errors.As(err, &he) || he.Table != "main.orders" || he.Snapshot != s || !he.Push {
		t.Fatalf("push of a rewritten history: %v; want HistoryRewrittenError naming main.orders and snapshot %d", err, s)
	}
	head, err := h.Repo.Resolve(ctx, "main")
	if err != nil || head.ID != h.Recs[len(h.Recs)-1].ID {
		t.Fatalf("main after the refused push: %s, %v; want %s", head.ID, err, h.Recs[len(h.Recs)-1].ID)
	}
}
