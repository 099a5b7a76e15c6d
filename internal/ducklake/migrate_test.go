package ducklake

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil"
)

// TestMigrateCorpus migrates every real catalog (no extension needed; the
// comparison with the extension's own migration is TestMigrateMatches*):
// the copy is DuckLake 1.0 with the source's snapshots and storage version,
// one file, and the source is untouched.
func TestMigrateCorpus(t *testing.T) {
	ctx := context.Background()
	for _, e := range testutil.Manifest(t) {
		t.Run(e.File, func(t *testing.T) {
			dir := t.TempDir()
			src := gunzipCatalog(t, e.File, dir, "")
			before := fileState(t, src)
			out := filepath.Join(dir, "out", "migrated.duckdb")
			if err := os.Mkdir(filepath.Dir(out), 0o755); err != nil {
				t.Fatal(err)
			}
			info, err := Migrate(ctx, src, out)
			if err != nil {
				t.Fatal(err)
			}
			if fileState(t, src) != before {
				t.Fatal("the source changed")
			}
			if info.From != e.Format || info.To != "1.0" || info.Snapshot.ID != e.MaxSnapshot {
				t.Fatalf("info %+v; manifest says format %s, last snapshot %d", info, e.Format, e.MaxSnapshot)
			}
			want := storageForFormat(e.Format) // what Freeze gives a SQLite catalog
			if e.DB == "duckdb" {
				if want, err = ReadStorage(src); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadStorage(out)
			if err != nil {
				t.Fatal(err)
			}
			if got != want || info.Storage != want {
				t.Fatalf("storage %+v (info %+v), want the source's %+v", got, info.Storage, want)
			}
			if names := listDir(t, filepath.Dir(out)); len(names) != 1 {
				t.Fatalf("left beside the result: %v", names)
			}
			c, err := Open(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Format() != "1.0" {
				t.Fatalf("format %s", c.Format())
			}
			for table, cols := range currentLayout {
				if got := strings.Join(c.Tables()[table], ", "); got != layoutNames(cols) {
					t.Errorf("%s: columns %s, want %s", table, got, layoutNames(cols))
				}
			}

			// Once more: the copy needs no migration, and dst is never replaced.
			if _, err := Migrate(ctx, out, filepath.Join(dir, "again.duckdb")); !errors.Is(err, ErrCurrentFormat) {
				t.Fatalf("migrating a 1.0 catalog: %v, want ErrCurrentFormat", err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "again.duckdb")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatal("a refused migration left its destination")
			}
			if _, err := Migrate(ctx, src, out); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("migrating onto an existing file: %v, want fs.ErrExist", err)
			}
		})
	}
}

// layoutNames turns "a T, b U" into "a, b".
func layoutNames(layout string) string {
	var names []string
	for _, c := range strings.Split(layout, ", ") {
		name, _, _ := strings.Cut(c, " ")
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// TestMigrateV01PartitionKeys: DuckLake 0.1 stored a partition key's column
// as its position among the table's live top-level columns; MigrateV01
// turns it into the column id. The catalog is the real 0.1 one with a
// second column and a partition on it added as DuckDB 1.3.0 recorded them.
func TestMigrateV01PartitionKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := partitioned01(t, dir)
	out := filepath.Join(dir, "migrated.duckdb")
	if _, err := Migrate(ctx, src, out); err != nil {
		t.Fatal(err)
	}
	r := newRawDB(t, "")
	r.exec("ATTACH " + sqlquote.String(out) + " AS m (READ_ONLY)")
	// Column ids 1 (i, order 1) and 7 (j, order 2): position 1 is j.
	if got := r.strings("SELECT partition_key_index || ':' || column_id FROM m.ducklake_partition_column ORDER BY 1"); strings.Join(got, ",") != "0:7" {
		t.Fatalf("partition columns %v, want 0:7 (position 1 -> column j, id 7)", got)
	}
}

// partitioned01 writes a copy of the real 0.1 catalog whose table "test"
// got a second column j (id 7) and a partition on it (position 1), at a
// new snapshot 2.
func partitioned01(t *testing.T, dir string) string {
	t.Helper()
	src := gunzipCatalog(t, "dltest-v01.ducklake", dir, "v01-partitioned.ducklake")
	withWritable(t, src,
		"INSERT INTO ducklake_snapshot SELECT 2, snapshot_time + INTERVAL 1 SECOND, schema_version + 1, 8, next_file_id FROM ducklake_snapshot WHERE snapshot_id = 1",
		"INSERT INTO ducklake_snapshot_changes VALUES (2, 'altered_table:1')",
		"INSERT INTO ducklake_column SELECT 7, 2, NULL, table_id, 2, 'j', 'int32', NULL, NULL, true, NULL FROM ducklake_column WHERE column_name = 'i'",
		"INSERT INTO ducklake_partition_info SELECT 6, table_id, 2, NULL FROM ducklake_table WHERE table_name = 'test'",
		"INSERT INTO ducklake_partition_column SELECT 6, table_id, 0, 1, 'identity' FROM ducklake_table WHERE table_name = 'test'",
		"CHECKPOINT")
	return src
}

// TestMigrateRefusals: a file that is not a catalog, and a source that does
// not exist, leave nothing behind.
func TestMigrateRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.duckdb")
	if err := os.WriteFile(junk, []byte("not a database at all, just some bytes of text"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ctx, junk, filepath.Join(dir, "a.duckdb")); !errors.Is(err, ErrNotCatalog) {
		t.Fatalf("junk: %v, want ErrNotCatalog", err)
	}
	if _, err := Migrate(ctx, filepath.Join(dir, "missing.duckdb"), filepath.Join(dir, "b.duckdb")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v, want fs.ErrNotExist", err)
	}
	if names := listDir(t, dir); len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
	if !NeedsMigration("0.3-dev1") || NeedsMigration("1.0") || NeedsMigration("1.1") || NeedsMigration("") {
		t.Fatal("NeedsMigration")
	}
	if FormatReaders("0.3") != "DuckDB 1.4.x" || FormatReaders("1.0") != "DuckDB >= 1.5.2" || FormatReaders("9.9") != "current DuckDB releases" {
		t.Fatal("FormatReaders")
	}
}
