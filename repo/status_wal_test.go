package repo_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/workdir"
)

// leaveWAL commits a new snapshot to the DuckDB working catalog at path
// and leaves it in the catalog's .wal (no checkpoint), as a DuckDB process
// that was killed, or still has the catalog attached, leaves it.
func leaveWAL(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"PRAGMA disable_checkpoint_on_shutdown",
		"SET checkpoint_threshold = '1TB'",
		"INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, now(), schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1",
		`INSERT INTO ducklake_snapshot_changes (snapshot_id, changes_made) SELECT max(snapshot_id), 'created_schema:"from_wal"' FROM ducklake_snapshot`,
	} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	if fi, err := os.Stat(path + ".wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no .wal left beside %s: %v", path, err)
	}
}

// TestStatusSeesWAL: status reads the working catalog as commit does —
// including the snapshots still only in a .wal beside a DuckDB working
// catalog — and says that a .wal is pending; commit then takes exactly
// the snapshots status listed.
func TestStatusSeesWAL(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 1, history.ChurnSQL)
	cat := filepath.Join(h.WD, workdir.CatalogName)
	leaveWAL(t, cat)
	wd, err := workdir.Open(h.WD)
	if err != nil {
		t.Fatal(err)
	}
	st, err := wd.Status(ctx, workdir.StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Snapshots) != 1 || st.Snapshots[0].Changes != `created_schema:"from_wal"` {
		t.Fatalf("status lists snapshots %+v, want the one in the .wal", st.Snapshots)
	}
	if st.PendingWAL != cat+".wal" || st.PendingWALBytes == 0 {
		t.Fatalf("status does not say a .wal is pending: %+v", st)
	}
	rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "from wal", Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.DuckLake.Snapshot != st.Snapshots[0].ID {
		t.Fatalf("commit froze at snapshot %d, status listed %d", rec.DuckLake.Snapshot, st.Snapshots[0].ID)
	}
}
