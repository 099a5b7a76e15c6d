package repo_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// maintenanceCases are histories of DuckLake's own maintenance that commit
// must accept (each step is one version, pushed but the last; $S is the
// last pushed version's snapshot): the expiry fdl's hint prescribes after a
// table was dropped (its schema versions and inlined rows keep no
// end_snapshot, so they were counted as published, and the expiry removes
// them), and a flush of inlined rows after an update and a rewrite (the
// flush writes a delete file, visible at S, for a data file the rewrite
// had ended, which was subtracted from the count at S).
var maintenanceCases = []struct {
	name   string
	inline bool
	steps  []string
}{
	{"expire after drop", false, []string{
		"CREATE TABLE t(i INT); CREATE TABLE u(i INT);",
		"DROP TABLE t;",
		"SET VARIABLE old = (SELECT list(snapshot_id) FROM lake.snapshots() WHERE snapshot_id < $S); CALL ducklake_expire_snapshots('lake', versions => getvariable('old')); INSERT INTO u VALUES (5);",
	}},
	{"expire after drop of inlined rows", true, []string{
		"CREATE TABLE t(i INT); INSERT INTO t VALUES (1), (2); CREATE TABLE u(i INT);",
		"DROP TABLE t;",
		"SET VARIABLE old = (SELECT list(snapshot_id) FROM lake.snapshots() WHERE snapshot_id < $S); CALL ducklake_expire_snapshots('lake', versions => getvariable('old')); INSERT INTO u VALUES (5);",
	}},
	{"flush after update and rewrite", true, []string{
		"CREATE TABLE t1(i BIGINT, s VARCHAR); INSERT INTO t1 SELECT i, 'x' || i FROM range(400, 405) r(i); CALL ducklake_flush_inlined_data('lake');",
		"UPDATE t1 SET s = s || 'u' WHERE i % 3 = 1; CALL ducklake_rewrite_data_files('lake', delete_threshold => 0.0);",
		"CALL ducklake_flush_inlined_data('lake');",
	}},
}

// TestCommitAcceptsMaintenance: each of maintenanceCases, written by the
// real DuckDB 1.5 on a SQLite and on a DuckDB working catalog, commits
// and pushes at every step (commit and push check what the version
// before published: docs/spec.md §24, and the row counts at its
// snapshot).
func TestCommitAcceptsMaintenance(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	for _, c := range maintenanceCases {
		for _, backend := range []ducklake.Backend{ducklake.BackendSQLite, ducklake.BackendDuckDB} {
			t.Run(c.name+"/"+string(backend), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				dir := t.TempDir()
				r, err := repo.Init(ctx, filepath.Join(dir, "repo"), repo.InitOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "w"), CatalogFormat: backend})
				if err != nil {
					t.Fatal(err)
				}
				w, err := workdir.Open(res.Dir)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				s := d.Start(t)
				var last int64
				for k, step := range c.steps {
					s.MustQuery(t, realduck.OnLake(res.Attach, strings.ReplaceAll(step, "$S", fmt.Sprint(last)), c.inline))
					com, err := w.Commit(ctx, workdir.CommitOptions{Message: fmt.Sprint("step ", k+1), Author: "t"})
					if err != nil {
						t.Fatalf("step %d (%s): %v", k+1, step, err)
					}
					if _, err := w.Push(ctx, workdir.PushOptions{}); err != nil {
						t.Fatalf("push of step %d: %v", k+1, err)
					}
					last = com.DuckLake.Snapshot
				}
			})
		}
	}
}
