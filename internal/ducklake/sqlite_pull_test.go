package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// pullEqualsCheckout pulls head into the SQLite working catalog work (at
// base, with nothing uncommitted) and checks that the pull went by what
// changed and that work then equals, table by table, row by row and value
// by value with SQLite's storage classes, the working catalog a checkout of
// head makes (ConvertToSQLite). It returns the pull's DeltaInfo.
func pullEqualsCheckout(t *testing.T, work, head string, base FreezeBase) DeltaInfo {
	t.Helper()
	d, err := PullSQLite(context.Background(), work, head, base, func([]SnapshotMark) error { return nil })
	if err != nil {
		t.Fatalf("PullSQLite: %v", err)
	}
	if d.Full != "" || !slices.Contains(d.Delta, "ducklake_data_file") || (!slices.Contains(d.Delta, "ducklake_snapshot") && d.Whole["ducklake_snapshot"] == "") {
		t.Errorf("pull of %s: a full conversion (%s), delta %v, whole %v", filepath.Base(head), d.Full, d.Delta, d.Whole)
	}
	checkout := filepath.Join(t.TempDir(), "checkout.sqlite")
	if err := ConvertToSQLite(context.Background(), head, checkout); err != nil {
		t.Fatal(err)
	}
	compareSQLite(t, work, checkout)
	return d
}

// compareSQLite checks that the SQLite files a and b hold the same tables
// with the same columns, and each the same rows (sorted by every column,
// each value with its storage class).
func compareSQLite(t *testing.T, a, b string) {
	t.Helper()
	da, db := sqliteDB(t, a, true), sqliteDB(t, b, true)
	tables := func(d *sql.DB) []string {
		return sqliteRows(t, d, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	}
	ta, tb := tables(da), tables(db)
	if !slices.Equal(ta, tb) {
		t.Fatalf("tables differ:\n%v\n%v", ta, tb)
	}
	for _, row := range ta {
		name := strings.TrimPrefix(row, "string:")
		info := "SELECT name, type FROM pragma_table_info(" + sqlquote.String(name) + ") ORDER BY cid"
		ca, cb := sqliteRows(t, da, info), sqliteRows(t, db, info)
		if !slices.Equal(ca, cb) {
			t.Errorf("table %s: columns %v vs %v", name, ca, cb)
			continue
		}
		q := "SELECT * FROM " + sqlquote.Ident(name) + " ORDER BY " + strings.Join(seq(len(ca)), ", ")
		ra, rb := sqliteRows(t, da, q), sqliteRows(t, db, q)
		if !slices.Equal(ra, rb) {
			t.Errorf("table %s: %d rows vs %d, first differing: %s", name, len(ra), len(rb), firstDiff(ra, rb))
		}
	}
}

// seq is "1", …, "n": ORDER BY every column.
func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i + 1)
	}
	return out
}

// firstDiff describes the first row where a and b differ.
func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("row %d: %s vs %s", i, a[i], b[i])
		}
	}
	return "one is longer"
}

// TestPullSQLiteFallsBack: a kept base that is not its record's file, or
// a working catalog with a snapshot after the base's (uncommitted work the
// caller lets be discarded) are not pulled by what changed: PullSQLite
// says why and leaves the working catalog as it was; a table whose rows at
// the base's snapshot are not the base's (changed in place, without a
// snapshot) is written whole; check's error stops the pull with nothing
// changed (the refused pull's working catalog is then pulled).
func TestPullSQLiteFallsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	lite := deltaLake(t, gunzipCatalog(t, "dltest-v04.ducklake", dir, ""), dir)
	base := fullBase(t, lite, filepath.Join(dir, "base.duckdb"))
	work := filepath.Join(dir, "work2.sqlite")
	if err := ConvertToSQLite(ctx, base.Path, work); err != nil {
		t.Fatal(err)
	}
	lakeWrite(t, lite, "INSERT INTO ducklake_snapshot (snapshot_id, snapshot_time, schema_version, next_catalog_id, next_file_id) SELECT snapshot_id + 1, snapshot_time, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1")
	head := fullBase(t, lite, filepath.Join(dir, "head.duckdb"))
	none := func([]SnapshotMark) error { return nil }
	for _, c := range []struct {
		name   string
		change func(b *FreezeBase, work string)
		want   string
	}{
		{"another base file", func(b *FreezeBase, _ string) { b.SHA256 = strings.Repeat("0", 64) }, "does not match its record's sha256"},
		{"no base file", func(b *FreezeBase, _ string) { b.Path = "" }, "not kept"},
		{"uncommitted", func(_ *FreezeBase, work string) {
			lakeWrite(t, work, "INSERT INTO ducklake_snapshot (snapshot_id, snapshot_time, schema_version, next_catalog_id, next_file_id) SELECT snapshot_id + 1, snapshot_time, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1")
		}, "does not end at the base's snapshot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := filepath.Join(t.TempDir(), "work.sqlite")
			if err := ConvertToSQLite(ctx, base.Path, w); err != nil {
				t.Fatal(err)
			}
			b := base
			c.change(&b, w)
			before := sqliteRows(t, sqliteDB(t, w, true), "SELECT count(*), sum(record_count) FROM ducklake_data_file UNION ALL SELECT count(*), max(snapshot_id) FROM ducklake_snapshot")
			d, err := PullSQLite(ctx, w, head.Path, b, none)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(d.Full, c.want) {
				t.Errorf("Full = %q, want %q", d.Full, c.want)
			}
			after := sqliteRows(t, sqliteDB(t, w, true), "SELECT count(*), sum(record_count) FROM ducklake_data_file UNION ALL SELECT count(*), max(snapshot_id) FROM ducklake_snapshot")
			if !slices.Equal(before, after) {
				t.Errorf("the working catalog changed: %v, then %v", before, after)
			}
		})
	}
	refused := errors.New("uncommitted work")
	if _, err := PullSQLite(ctx, work, head.Path, base, func([]SnapshotMark) error { return refused }); !errors.Is(err, refused) {
		t.Errorf("PullSQLite with a refusing check = %v", err)
	}
	// A table changed in place in the working catalog, without a snapshot
	// (here ducklake_snapshot, a delta table): written whole, the rest by
	// what changed, and the result is a checkout's.
	// So is one with a row after S but no snapshot of its own.
	lakeWrite(t, work, "UPDATE ducklake_snapshot SET schema_version = schema_version + 100 WHERE snapshot_id = (SELECT min(snapshot_id) FROM ducklake_snapshot)")
	lakeWrite(t, work, `CREATE TEMP TABLE stray AS SELECT * FROM ducklake_schema LIMIT 1;
		UPDATE stray SET schema_id = schema_id + 1000, begin_snapshot = begin_snapshot + 1000;
		INSERT INTO ducklake_schema SELECT * FROM stray`)
	d := pullEqualsCheckout(t, work, head.Path, base)
	if !strings.Contains(d.Whole["ducklake_snapshot"], "its rows at the base's snapshot are not the new version's") {
		t.Errorf("a table changed in place: whole %v", d.Whole)
	}
	if !strings.Contains(d.Whole["ducklake_schema"], "rows, the new version") {
		t.Errorf("a table with a row after S of no snapshot: whole %v", d.Whole)
	}
}
