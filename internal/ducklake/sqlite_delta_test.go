package ducklake

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// deltaSteps are the writes of TestFreezeOntoEqualsFreeze, one commit
// each, run by the real DuckDB 1.5 on the SQLite working catalog; $BASE is
// the snapshot the last commit ended at.
var deltaSteps = []struct{ name, sql string }{
	{"inserts, deletes, updates", `CREATE TABLE fdl_t(i INTEGER, s VARCHAR);
		INSERT INTO fdl_t VALUES (1, 'a'), (2, 'b');
		INSERT INTO fdl_t VALUES (3, 'c');
		INSERT INTO fdl_t VALUES (4, 'd');
		DELETE FROM fdl_t WHERE i = 2;
		UPDATE fdl_t SET s = 'x' WHERE i = 3;`},
	{"merges, drops, columns, inlined rows", `INSERT INTO fdl_t VALUES (5, 'e');
		DELETE FROM fdl_t WHERE i = 4;
		INSERT INTO fdl_t VALUES (6, 'f');
		CALL ducklake_merge_adjacent_files('lake', 'fdl_t');
		CREATE TABLE fdl_u AS SELECT range AS j FROM range(3);
		ALTER TABLE fdl_t ADD COLUMN k INTEGER;
		INSERT INTO fdl_t VALUES (7, 'g', 70);
		DROP TABLE fdl_u;
		SET ducklake_default_data_inlining_row_limit = 10;
		INSERT INTO fdl_t VALUES (8, 'h', 80);
		SET ducklake_default_data_inlining_row_limit = 0;`},
	{"expire, cleanup, flush, merge", `SET VARIABLE old = (SELECT list(snapshot_id) FROM lake.snapshots() WHERE snapshot_id < $BASE);
		CALL ducklake_expire_snapshots('lake', versions => getvariable('old'));
		CALL ducklake_cleanup_old_files('lake', cleanup_all => true);
		INSERT INTO fdl_t VALUES (9, 'i', 90);
		CALL ducklake_flush_inlined_data('lake', table_name => 'fdl_t');
		CALL ducklake_merge_adjacent_files('lake', 'fdl_t');
		DELETE FROM fdl_t WHERE i = 1;`},
}

// TestFreezeOntoEqualsFreeze: for every real catalog of the corpus
// (migrated to DuckLake 1.0, converted to SQLite), after each commit of a
// chain of writes by the real DuckDB (inserts, deletes, updates, merges,
// drops, a new column, inlined rows, expired snapshots, cleanup, a flush),
// the catalog FreezeOnto makes from the last commit's equals, table by
// table and row by row, the one a full conversion (Freeze) makes, and the
// real DuckDB reads the last one. Another working catalog, which pulls
// each commit's version (PullSQLite, from the version before it), then
// equals a checkout of that version (ConvertToSQLite).
//
// The chain writes the same table whatever the catalog; a catalog changes
// only what the base holds besides it. make test (about 8 s of CPU a
// catalog) runs the catalogs whose bases differ most: the fullest (a
// SQLite catalog with files, a delete file and statistics), one with
// inlined-data tables and files scheduled for deletion, one with dropped
// columns and per-table schema versions, and an empty one; make soak
// (FDL_SOAK=1) every catalog of the corpus.
func TestFreezeOntoEqualsFreeze(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	short := map[string]bool{"ahri-tre-v0.2.sqlite": true, "dltest-compacted-files.ducklake": true,
		"dltest-per-table-schema.ducklake": true, "orbital-api-v0.2-empty.ducklake": true}
	all := testutil.Soak(t, "the other catalogs of the corpus are")
	ran := 0
	defer func() {
		if !all && ran != len(short) {
			t.Errorf("the short form ran %d catalogs, want the %d it names (renamed in the corpus?)", ran, len(short))
		}
	}()
	for _, e := range testutil.Manifest(t) {
		if !all && !short[e.File] {
			continue
		}
		ran++
		t.Run(e.File, func(t *testing.T) {
			t.Parallel()
			lake := d.Start(t)
			dir := t.TempDir()
			src := gunzipCatalog(t, e.File, dir, "")
			lite := deltaLake(t, src, dir)
			base := fullBase(t, lite, filepath.Join(dir, "base0.duckdb"))
			pulled := filepath.Join(dir, "pulled.sqlite") // another working directory, which pulls each version
			if err := ConvertToSQLite(context.Background(), base.Path, pulled); err != nil {
				t.Fatal(err)
			}
			attach := fmt.Sprintf("ATTACH 'ducklake:sqlite:%s' AS lake (DATA_PATH '%s/', OVERRIDE_DATA_PATH true)", lite, filepath.Join(dir, "data"))
			for k, step := range deltaSteps {
				sql := strings.ReplaceAll(step.sql, "$BASE", fmt.Sprint(base.Snapshot))
				if _, err := lake.Query(realduck.OnLake(attach, sql, false)); err != nil {
					t.Fatalf("step %s: %v", step.name, err)
				}
				inc := filepath.Join(dir, fmt.Sprintf("inc%d.duckdb", k))
				info, delta, err := FreezeOnto(context.Background(), lite, inc, base)
				if err != nil {
					t.Fatalf("step %s: %v", step.name, err)
				}
				if delta.Full != "" || !slices.Contains(delta.Delta, "ducklake_data_file") || !slices.Contains(delta.Delta, "ducklake_file_column_stats") || !slices.Contains(delta.Delta, "ducklake_snapshot") {
					t.Errorf("step %s: a full conversion (%s), delta %v, whole %v", step.name, delta.Full, delta.Delta, delta.Whole)
				}
				t.Logf("step %s: delta %v, whole %v", step.name, delta.Delta, delta.Whole)
				prev := base
				base = equalsFull(t, lite, inc, filepath.Join(dir, fmt.Sprintf("full%d.duckdb", k)), info)
				pd := pullEqualsCheckout(t, pulled, base.Path, prev)
				t.Logf("step %s: pulled: delta %v, whole %v", step.name, pd.Delta, pd.Whole)
			}
			out := lake.MustQuery(t, fmt.Sprintf("ATTACH 'ducklake:%s' AS l (READ_ONLY, DATA_PATH '%s/', OVERRIDE_DATA_PATH true); SELECT count(*), sum(i), sum(k) FROM l.fdl_t;", base.Path, filepath.Join(dir, "data")))
			if got := fmt.Sprint(out[len(out)-1].Rows); got != "[[6 38 240]]" {
				t.Errorf("DuckDB 1.5 reads %s from the last catalog; want [[6 38 240]]", got)
			}
		})
	}
}

// deltaLake makes the SQLite working catalog of the real catalog src: its
// DuckLake 1.0 form (migrated when older), converted.
func deltaLake(t *testing.T, src, dir string) string {
	t.Helper()
	ctx := context.Background()
	cur := filepath.Join(dir, "current.duckdb")
	if _, err := Migrate(ctx, src, cur); errors.Is(err, ErrCurrentFormat) {
		if _, err := Freeze(ctx, src, cur); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	lite := filepath.Join(dir, "work.sqlite")
	if err := ConvertToSQLite(ctx, cur, lite); err != nil {
		t.Fatal(err)
	}
	return lite
}

// fullBase is the base a first commit of lite leaves: its full conversion
// at path.
func fullBase(t *testing.T, lite, path string) FreezeBase {
	t.Helper()
	info, err := Freeze(context.Background(), lite, path)
	if err != nil {
		t.Fatal(err)
	}
	return FreezeBase{Path: path, Size: info.Size, SHA256: info.SHA256, Format: info.Format, Snapshot: info.Snapshot.ID}
}

// TestFreezeOntoFallsBack: a kept base that is not its record's file, of
// another format, or a working catalog that no longer holds the base's
// snapshot as the base has it, give a full conversion, which says why;
// the result is Freeze's.
func TestFreezeOntoFallsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	src := gunzipCatalog(t, "dltest-v04.ducklake", dir, "")
	lite := deltaLake(t, src, dir)
	base := fullBase(t, lite, filepath.Join(dir, "base.duckdb"))
	lakeWrite(t, lite, "UPDATE ducklake_metadata SET value = value WHERE key = 'version'")
	for i, c := range []struct {
		change func(*FreezeBase)
		want   string
	}{
		{func(b *FreezeBase) { b.SHA256 = strings.Repeat("0", 64) }, "does not match its record's sha256"},
		{func(b *FreezeBase) { b.Path = filepath.Join(dir, "missing") }, "not kept"},
		{func(b *FreezeBase) { b.Format = "0.4" }, "format is 1.0, the base's 0.4"},
		{func(b *FreezeBase) { b.Snapshot = 99 }, "no longer holds snapshot 99"},
	} {
		b := base
		c.change(&b)
		out := filepath.Join(dir, fmt.Sprintf("out%d.duckdb", i))
		_, delta, err := FreezeOnto(ctx, lite, out, b)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(delta.Full, c.want) {
			t.Errorf("case %d: Full = %q, want %q", i, delta.Full, c.want)
		}
		compareValues(t, base.Path, out)
	}
	// Another snapshot_time at S: another timeline.
	lakeWrite(t, lite, fmt.Sprintf("UPDATE ducklake_snapshot SET snapshot_time = '2001-01-01 00:00:00+00' WHERE snapshot_id = %d", base.Snapshot))
	_, delta, err := FreezeOnto(ctx, lite, filepath.Join(dir, "other.duckdb"), base)
	if err != nil || !strings.Contains(delta.Full, "is not the base's") {
		t.Errorf("FreezeOnto after a new snapshot_time: %v, %q", err, delta.Full)
	}
}

// lakeWrite runs q on the SQLite catalog at path.
func lakeWrite(t *testing.T, path, q string) {
	t.Helper()
	db := sqliteDB(t, path, false)
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestFreezeOntoCompacts: along a chain of commits, a copy written again
// because of its free space (forced here at every commit) is still the
// full conversion's catalog, in the storage version of its format, and
// the DuckDB 1.5 extension reads it.
func TestFreezeOntoCompacts(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	old := compactShare
	compactShare = -1
	t.Cleanup(func() { compactShare = old })
	dir := t.TempDir()
	lite := deltaLake(t, gunzipCatalog(t, "dltest-v04.ducklake", dir, ""), dir)
	base := fullBase(t, lite, filepath.Join(dir, "base0.duckdb"))
	attach := fmt.Sprintf("ATTACH 'ducklake:sqlite:%s' AS lake (DATA_PATH '%s/', OVERRIDE_DATA_PATH true)", lite, filepath.Join(dir, "data"))
	lake := d.Start(t)
	for k, step := range deltaSteps[:2] {
		if _, err := lake.Query(realduck.OnLake(attach, step.sql, false)); err != nil {
			t.Fatalf("step %s: %v", step.name, err)
		}
		inc := filepath.Join(dir, fmt.Sprintf("inc%d.duckdb", k))
		info, delta, err := FreezeOnto(context.Background(), lite, inc, base)
		if err != nil {
			t.Fatal(err)
		}
		if !delta.Compacted || delta.Full != "" || info.Storage.Number != storageForFormat(info.Format).Number {
			t.Errorf("step %s: %+v, storage %+v", step.name, delta, info.Storage)
		}
		base = equalsFull(t, lite, inc, filepath.Join(dir, fmt.Sprintf("full%d.duckdb", k)), info)
	}
	out := lake.MustQuery(t, fmt.Sprintf("ATTACH 'ducklake:%s' AS l (READ_ONLY, DATA_PATH '%s/', OVERRIDE_DATA_PATH true); SELECT count(*) FROM l.fdl_t;", base.Path, filepath.Join(dir, "data")))
	if got := fmt.Sprint(out[len(out)-1].Rows); got != "[[6]]" {
		t.Errorf("DuckDB 1.5 reads %s rows; want [[6]]", got)
	}
}

// equalsFull checks that inc, the catalog FreezeOnto wrote from lite (info
// is what it reported), equals lite's full conversion (written to full),
// table by table and value by value, and returns inc as the next base.
func equalsFull(t *testing.T, lite, inc, full string, info FreezeInfo) FreezeBase {
	t.Helper()
	if _, err := Freeze(context.Background(), lite, full); err != nil {
		t.Fatal(err)
	}
	compareDatabases(t, full, inc)
	compareValues(t, full, inc)
	return FreezeBase{Path: inc, Size: info.Size, SHA256: info.SHA256, Format: info.Format, Snapshot: info.Snapshot.ID}
}
