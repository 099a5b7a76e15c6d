package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// TestStatusReportsWAL: fdl status says that a .wal is pending beside a
// DuckDB working catalog (writes DuckDB committed but did not checkpoint),
// lists its snapshots, and commit then takes them.
func TestStatusReportsWAL(t *testing.T) {
	ctx := context.Background()
	url, _ := newRepoWithBase(t)
	r, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := filepath.Join(t.TempDir(), "w")
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, workdir.CatalogName)
	db, err := sql.Open("duckdb", cat)
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
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	out := mustFdl(t, "-C", dir, "status")
	if !strings.Contains(out, "Pending: "+cat+".wal") || !strings.Contains(out, "from_wal: schema created") {
		t.Fatalf("status beside a pending .wal:\n%s", out)
	}
	if out := mustFdl(t, "--json", "-C", dir, "status"); !strings.Contains(out, `"pending_wal": "`+cat+`.wal"`) {
		t.Fatalf("status --json beside a pending .wal:\n%s", out)
	}
	mustFdl(t, "-C", dir, "commit", "-m", "from wal")
}
