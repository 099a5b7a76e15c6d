package ducklake_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// digestLake writes a DuckLake 1.0 catalog with the real DuckDB 1.5.5:
// files, a partitioned table, deletes, inlined rows of several types, a
// view, comments; it returns the catalog and its last snapshot.
func digestLake(t *testing.T, d *realduck.DuckDB, dir string) (string, int64) {
	t.Helper()
	path := filepath.Join(dir, "lake.ducklake")
	out := text(t, d, fmt.Sprintf(`ATTACH %s AS l (DATA_PATH %s);
CALL l.set_option('data_inlining_row_limit', 0);
CREATE TABLE l.orders AS SELECT range AS id, range %% 5 AS region FROM range(100);
INSERT INTO l.orders SELECT range + 100, 1 FROM range(50);
INSERT INTO l.orders SELECT range + 200, 2 FROM range(50);
DELETE FROM l.orders WHERE id %% 10 = 3;
CREATE TABLE l.parts (k INTEGER, p VARCHAR);
ALTER TABLE l.parts SET PARTITIONED BY (p);
INSERT INTO l.parts VALUES (1, 'a'), (2, 'b');
CALL l.set_option('data_inlining_row_limit', 10);
CREATE TABLE l.small (k INTEGER, ts TIMESTAMPTZ, ok BOOLEAN, x DOUBLE, u UUID, s VARCHAR);
INSERT INTO l.small VALUES (1, '2024-01-02 03:04:05.123456+00', true, 1.5, '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'é'), (2, NULL, false, -0.1, NULL, '');
INSERT INTO l.small VALUES (3, '1999-12-31 23:59:59+00', NULL, 3e300, gen_random_uuid(), 'x;y=z');
DELETE FROM l.small WHERE k = 2;
CREATE VIEW l.v AS SELECT k FROM l.small;
COMMENT ON TABLE l.orders IS 'the orders';
COMMENT ON COLUMN l.orders.id IS 'key';
SELECT max(snapshot_id) FROM l.snapshots();`, sqlString("ducklake:"+path), sqlString(filepath.Join(dir, "data")+"/")))
	s, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("last snapshot %q: %v", out, err)
	}
	return path, s
}

// digestsOf opens path and returns its digests at the snapshots.
func digestsOf(t *testing.T, path string, at ...int64) []*meta.RowDigests {
	t.Helper()
	c, err := ducklake.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ds, err := c.RowDigests(context.Background(), at...)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestRowDigestsSameForSQLite: the digests of a catalog the real DuckDB
// wrote and of its SQLite form (UUIDs, booleans and timestamps stored as
// text and integers there) are the same, at the last snapshot and at an
// older one; every metadata table with rows is covered; RowDigestsOf
// gives the same parts for the tables it is asked for.
func TestRowDigestsSameForSQLite(t *testing.T) {
	t.Parallel()
	d := realduck.Find(t, realduck.V15, "ducklake")
	dir := t.TempDir()
	path, last := digestLake(t, d, dir)
	lite := filepath.Join(dir, "lake.sqlite")
	if err := ducklake.ConvertToSQLite(context.Background(), path, lite); err != nil {
		t.Fatal(err)
	}
	a, b := digestsOf(t, path, last, last-3), digestsOf(t, lite, last, last-3)
	for i := range a {
		if x, y := fmt.Sprint(a[i]), fmt.Sprint(b[i]); x != y {
			t.Errorf("snapshot %d: DuckDB form %s\nSQLite form %s", a[i].Snapshot, x, y)
		}
		if ch := meta.CompareDigests(a[i], b[i]); ch != nil {
			t.Errorf("snapshot %d: %s", a[i].Snapshot, ch)
		}
	}
	for _, want := range []string{"ducklake_data_file", "ducklake_delete_file", "ducklake_column", "ducklake_table", "ducklake_schema",
		"ducklake_view", "ducklake_tag", "ducklake_column_tag", "ducklake_file_column_stats", "ducklake_file_partition_value",
		"ducklake_partition_info", "ducklake_partition_column", "ducklake_inlined_data", "ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_schema_versions"} {
		if a[0].Tables[want].Rows == 0 {
			t.Errorf("digest at %d has no rows of %s: %v", last, want, a[0].Tables)
		}
	}
	// The big tables alone, from the SQLite catalog (an incremental
	// commit's pass): the same parts.
	c, err := ducklake.Open(context.Background(), lite)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	only, err := c.RowDigestsOf(context.Background(), []string{"ducklake_data_file", "ducklake_file_column_stats"}, last)
	if err != nil {
		t.Fatal(err)
	}
	if len(only[0].Tables) != 2 || fmt.Sprint(only[0].Tables["ducklake_data_file"]) != fmt.Sprint(a[0].Tables["ducklake_data_file"]) ||
		fmt.Sprint(only[0].Tables["ducklake_file_column_stats"]) != fmt.Sprint(a[0].Tables["ducklake_file_column_stats"]) {
		t.Errorf("RowDigestsOf the file tables: %v; want those of %v", only[0].Tables, a[0].Tables)
	}
	if a[0].Tables["ducklake_snapshot"].Rows != 1 || len(a[0].Respread) != 0 {
		t.Errorf("digest at %d: %d snapshot row(s), respread %v; want 1 and none", last, a[0].Tables["ducklake_snapshot"].Rows, a[0].Respread)
	}
}

// TestRowDigestEncoding: the digest of ducklake_data_file at S is what the
// encoding of docs/spec.md §24 gives when another DuckDB computes it (the
// real DuckDB 1.5.5 reading the catalog file as a database): the sum mod
// 2^64 of hash('ducklake_data_file', the columns in name order without
// end_snapshot) over the rows visible at S; and its hash check is fdl's.
func TestRowDigestEncoding(t *testing.T) {
	t.Parallel()
	d := realduck.Find(t, realduck.V15, "ducklake")
	path, last := digestLake(t, d, t.TempDir())
	ds := digestsOf(t, path, last)
	c, err := ducklake.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	cols := slices.DeleteFunc(slices.Clone(c.Tables()["ducklake_data_file"]), func(s string) bool { return s == "end_snapshot" })
	c.Close()
	slices.Sort(cols)
	out := text(t, d, fmt.Sprintf(`ATTACH %s AS c (READ_ONLY);
SELECT count(*) || ' ' || printf('%%016x', CAST(sum(hash('ducklake_data_file', %s)) %% 18446744073709551616 AS UBIGINT))
	FROM c.ducklake_data_file WHERE begin_snapshot <= %d AND (end_snapshot IS NULL OR end_snapshot > %d);
SELECT CAST(hash('abc', 1::BIGINT, NULL::VARCHAR, true, '6F9619FF-8B86-D011-B42D-00C04FC964FF'::UUID, TIMESTAMPTZ '2024-01-02 03:04:05+00') AS VARCHAR);`,
		sqlString(path), strings.Join(cols, ", "), last, last))
	got := ds[0].Tables["ducklake_data_file"]
	if want := fmt.Sprintf("%d %s\n%s", got.Rows, got.Sum, ds[0].HashCheck); out != want {
		t.Fatalf("DuckDB 1.5.5 gives %q for the data files at %d and the hash check; fdl %q", out, last, want)
	}
}
