package repo_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// TestRevertRealClient takes a lake the real extension writes through the
// whole loop — checkout into a SQLite working catalog, commits, pushes, a
// revert and a restore, pushes — and has DuckDB 1.5.5 attach each pushed
// version's catalog READ_ONLY the way fdl prints it: the revert's version
// reads as the version before the reverted one, the restore's as the
// restored one, and time travel inside the newest catalog to the older
// versions' snapshots returns what those versions held.
//
// It is one piece: one history written step by step with the real client, a
// revert and a restore on it, and the reads of each version through the
// lines fdl prints.
func TestRevertRealClient(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "data") + "/"
	src := filepath.Join(dir, "src.duckdb")
	d.MustQuery(t, fmt.Sprintf(`ATTACH 'ducklake:%s' AS lake (DATA_PATH '%s'); USE lake;
		CREATE TABLE t(id INTEGER, v VARCHAR); INSERT INTO t SELECT i, 'a' FROM range(50) r(i);`, src, data))
	r, err := repo.Init(ctx, filepath.Join(dir, "repo"), repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "w"), From: src, CatalogFormat: "sqlite"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workdir.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lake := fmt.Sprintf("ATTACH 'ducklake:sqlite:%s' AS lake (DATA_PATH '%s'); USE lake;\n", res.Catalog, data)
	step := func(msg, sql string) {
		t.Helper()
		if sql != "" {
			d.MustQuery(t, lake+sql)
		}
		if _, err := w.Commit(ctx, workdir.CommitOptions{Message: msg, Author: "t"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Push(ctx, workdir.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	step("v1: 50 rows", "")
	step("v2: delete and update", "DELETE FROM t WHERE id < 10; UPDATE t SET v = 'b' WHERE id >= 40;")
	step("v3: another table", "CREATE TABLE u AS SELECT i AS k FROM range(30) r(i); INSERT INTO t VALUES (999, 'z');")
	defer w.Close()
	if _, err := w.Revert(ctx, workdir.RevertOptions{Rev: "main~1", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Restore(ctx, workdir.RestoreOptions{Source: "main~3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, workdir.CommitOptions{Author: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := r.History(ctx, nil, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Entries) != 5 || h.Entries[1].Reverts != h.Entries[3].ID || h.Entries[0].Restores != h.Entries[4].ID {
		t.Fatalf("history %+v", h.Entries)
	}
	// Each version's own catalog, and the newest catalog at each older
	// version's snapshot, read with the real extension.
	digest := func(alias string) string {
		return fmt.Sprintf("SELECT (SELECT string_agg(table_name, ',' ORDER BY table_name) FROM duckdb_tables() WHERE database_name = '%[1]s'), (SELECT count(*)::VARCHAR || ' ' || md5(string_agg(x::VARCHAR, '|' ORDER BY x::VARCHAR)) FROM (SELECT tb AS x FROM %[1]s.t tb));\n", alias)
	}
	var q strings.Builder
	newest := h.Entries[0]
	for i, e := range h.Entries {
		cat := r.CatalogLocation(e.ID)
		fmt.Fprintf(&q, "ATTACH %s AS v%d (READ_ONLY, DATA_PATH %s);\n", sqlquote.String("ducklake:"+cat), i, sqlquote.String(data))
		q.WriteString(digest(fmt.Sprintf("v%d", i)))
		fmt.Fprintf(&q, "ATTACH %s AS n%d (READ_ONLY, DATA_PATH %s, SNAPSHOT_VERSION %d);\n", sqlquote.String("ducklake:"+r.CatalogLocation(newest.ID)), i, sqlquote.String(data), e.DuckLake.Snapshot)
		q.WriteString(digest(fmt.Sprintf("n%d", i)))
	}
	got := d.MustQuery(t, q.String())
	state := func(k int) string { return fmt.Sprint(got[k].Rows[0]) }
	for i := range h.Entries {
		if own, travel := state(2*i), state(2*i+1); own != travel {
			t.Errorf("seq %d: its catalog reads %s, the newest catalog at its snapshot %s", h.Entries[i].Seq, own, travel)
		}
	}
	// seq 4 reverts seq 2: as seq 1 for t, with seq 3's table u; seq 5
	// restores seq 1.
	if !strings.Contains(state(2), "t,u 51 ") || !strings.Contains(state(4), "t,u 41 ") || !strings.Contains(state(6), "t 40 ") {
		t.Errorf("seq 4 (reverts seq 2: 50 rows and 999) reads %s; seq 3: %s; seq 2: %s", state(2), state(4), state(6))
	}
	if state(0) != state(8) {
		t.Errorf("seq 5 (restores seq 1) reads %s, seq 1 %s", state(0), state(8))
	}
	t.Logf("seq 5..1: %s | %s | %s | %s | %s", state(0), state(2), state(4), state(6), state(8))
}
