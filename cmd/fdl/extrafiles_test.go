package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// validWAL returns the bytes of a DuckDB write-ahead log that belongs to
// the catalog at catalog: a new snapshot committed and not checkpointed,
// as a DuckDB session that attached a copy of it read-write leaves it.
func validWAL(t *testing.T, catalog []byte) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ducklake.duckdb")
	if err := os.WriteFile(p, catalog, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"PRAGMA disable_checkpoint_on_shutdown",
		"SET checkpoint_threshold = '1TB'",
		"INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, now(), schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	b, err := os.ReadFile(p + ".wal")
	if err != nil || len(b) == 0 {
		t.Fatalf("no WAL: %v", err)
	}
	return b
}

// TestVersionFolderExtraFiles: a file beside a stored version's three
// files — a valid ducklake.duckdb.wal, which a reader's DuckDB would replay
// over the frozen catalog, or anything else — is a verify problem
// (version-extra-file), and fdl show does not hand the version to readers
// (no ATTACH line; kind extra_files), on every kind of store. Once it is
// removed both are clean again.
func TestVersionFolderExtraFiles(t *testing.T) {
	for _, c := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"folder", func(t *testing.T) string { return "" }},
		{"s3", func(t *testing.T) string { return cloudtest.S3(t) }},
		{"gcs", func(t *testing.T) string { return cloudtest.WithPrefix(cloudtest.FakeGCS(t), t.Name()) }},
		{"azure", func(t *testing.T) string { return cloudtest.Azure(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			url, id := newRepoWithBaseAt(t, c.url(t))
			st, err := store.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			cat, _, err := store.ReadAll(ctx, st, repo.VersionKey(id, version.CatalogFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, extra := range []struct {
				name string
				b    []byte
			}{{"ducklake.duckdb.wal", validWAL(t, cat)}, {"notes.txt", []byte("hello")}} {
				key := repo.VersionKey(id, extra.name)
				if err := st.Create(ctx, key, bytes.NewReader(extra.b)); err != nil {
					t.Fatal(err)
				}
				code, out := fdlProc(t, nil, "--repo", url, "verify")
				if code != exitError || !strings.Contains(out, "version-extra-file") || !strings.Contains(out, extra.name) {
					t.Errorf("verify with %s in a version folder: exit %d\n%s", extra.name, code, out)
				}
				code, out = fdlProc(t, nil, "--json", "--repo", url, "show", "main")
				if code != exitError || !strings.Contains(out, `"kind":"extra_files"`) || strings.Contains(out, "ATTACH") {
					t.Errorf("show with %s in the version folder: exit %d\n%s", extra.name, code, out)
				}
				if err := st.Delete(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			verifyClean(t, url)
			if out := mustFdl(t, "--repo", url, "show", "main"); !strings.Contains(out, "ATTACH") {
				t.Errorf("show of a clean version:\n%s", out)
			}
		})
	}
}
