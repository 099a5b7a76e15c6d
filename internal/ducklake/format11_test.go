package ducklake_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
)

// lake11 is a DuckLake 1.1 catalog written by the spec-following writer
// (PyPI serves no ducklake extension for DuckDB 2.0, so no real one can be
// made here) with what 1.1 changes: row_group_count on data and delete
// files, ducklake_view_column_tag, and inlined-data tables whose metadata
// columns are _ducklake_row_id, _ducklake_begin_snapshot and
// _ducklake_end_snapshot, beside user columns that take the old names.
type lake11 struct {
	path string
	// rows is the expected row count of table "t" at each snapshot.
	rows map[int64]int64
	last int64
}

func makeLake11(t *testing.T, dir string) lake11 {
	t.Helper()
	ctx := context.Background()
	l := lake11{path: filepath.Join(dir, "lake.ducklake"), rows: map[int64]int64{}}
	// lakewriter: DuckLake 1.1, which no installed real extension writes (PyPI serves none for DuckDB 2.0).
	if err := lakewriter.Create(ctx, l.path, lakewriter.CreateOptions{Format: lakewriter.Format11, DataPath: filepath.Join(dir, "data")}); err != nil {
		t.Fatal(err)
	}
	w, err := lakewriter.Open(ctx, l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var n int64
	step := func(delta int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		s, err := w.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += delta
		l.rows[s], l.last = n, s
	}
	_, err = w.CreateTable(ctx, "main", "t", []lakewriter.ColumnDef{
		{Name: "id", Type: "int64"}, {Name: "begin_snapshot", Type: "int32", Nullable: true}, {Name: "end_snapshot", Type: "varchar", Nullable: true}})
	step(0, err)
	step(100, w.Insert(ctx, "main", "t", "SELECT i AS id, 7 AS begin_snapshot, 'x' AS end_snapshot FROM range(100) r(i)"))
	step(3, w.InsertInlined(ctx, "main", "t", "SELECT i AS id, NULL::INTEGER AS begin_snapshot, NULL AS end_snapshot FROM range(100, 103) r(i)"))
	// ids 0, 10, …, 90 in the file and 100 inlined
	step(-11, w.DeleteWhere(ctx, "main", "t", "id % 10 = 0"))
	step(50, w.Insert(ctx, "main", "t", "SELECT i AS id FROM range(200, 250) r(i)"))
	step(0, w.CreateView(ctx, "main", "v", "SELECT id FROM t"))
	return l
}

// checkLake11 checks what fdl reads from a 1.1 catalog at path.
func checkLake11(t *testing.T, path string, l lake11) {
	t.Helper()
	ctx := context.Background()
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Format() != "1.1" {
		t.Errorf("format %q", c.Format())
	}
	for _, table := range []string{"ducklake_view_column_tag"} {
		if _, ok := c.Tables()[table]; !ok {
			t.Errorf("no %s", table)
		}
	}
	if cols := c.Tables()["ducklake_data_file"]; !slices.Contains(cols, "row_group_count") {
		t.Errorf("ducklake_data_file columns %v", cols)
	}
	for snap, want := range l.rows {
		st, err := c.State(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Schemas) != 1 || len(st.Schemas[0].Tables) != 1 {
			t.Fatalf("snapshot %d: %+v", snap, st)
		}
		tb := st.Schemas[0].Tables[0]
		if tb.RowCount != want {
			t.Errorf("snapshot %d: %d rows, want %d", snap, tb.RowCount, want)
		}
		var names []string
		for _, col := range tb.Columns {
			names = append(names, col.Name)
		}
		if !slices.Equal(names, []string{"id", "begin_snapshot", "end_snapshot"}) {
			t.Errorf("snapshot %d: columns %v", snap, names)
		}
	}
	st, err := c.State(ctx, l.last)
	if err != nil {
		t.Fatal(err)
	}
	if tb := st.Schemas[0].Tables[0]; tb.DataFiles != 2 || tb.DeleteFiles != 1 {
		t.Errorf("data files %d, delete files %d, want 2 and 1", tb.DataFiles, tb.DeleteFiles)
	}
	if v := st.Schemas[0].Views; len(v) != 1 || v[0].Name != "v" {
		t.Errorf("views %+v", v)
	}
	v, err := c.CheckInvariants(ctx)
	if err != nil || len(v) != 0 {
		t.Errorf("invariants: %v %v", v, err)
	}
	files, err := c.DataFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Errorf("%d files, want 2 data files and 1 delete file", len(files))
	}
	for _, f := range files {
		if _, err := os.Stat(f.ResolvedPath); err != nil {
			t.Errorf("file %d: %v", f.ID, err)
		}
	}
}

// TestFormat11: fdl reads a DuckLake 1.1 catalog (State at every snapshot,
// invariants, data files), freezes it keeping DuckDB 2.0's storage (byte
// copy, and COPY FROM DATABASE when it has a WAL), and converts it to a
// SQLite catalog and back, where the frozen file gets storage 999 as the
// DuckDB 2.0 extension would write it.
func TestFormat11(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := makeLake11(t, dir)
	if st, err := ducklake.ReadStorage(l.path); err != nil || st.Number != 999 || st.MinDuckDB != "v2.0.0" {
		t.Fatalf("storage of a new 1.1 lake: %+v %v", st, err)
	}
	checkLake11(t, l.path, l)

	frozen := filepath.Join(dir, "frozen.duckdb")
	info, err := ducklake.Freeze(ctx, l.path, frozen)
	if err != nil {
		t.Fatal(err)
	}
	if info.Format != "1.1" || info.Storage.Number != 999 || info.Snapshot.ID != l.last {
		t.Errorf("freeze info %+v", info)
	}
	checkLake11(t, frozen, l)

	// A WAL: one more snapshot committed but not checkpointed.
	walLake := filepath.Join(dir, "wal.ducklake")
	copyFile(t, l.path, walLake)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		fmt.Sprintf("ATTACH '%s' AS w", walLake), "USE w", "PRAGMA disable_checkpoint_on_shutdown", "SET checkpoint_threshold = '1TB'",
		fmt.Sprintf("INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, now(), schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = %d", l.last),
		fmt.Sprintf("INSERT INTO ducklake_snapshot_changes (snapshot_id, changes_made) VALUES (%d, 'created_schema:\"s\"')", l.last+1),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	if _, err := os.Stat(walLake + ".wal"); err != nil {
		t.Fatalf("no WAL: %v", err)
	}
	l.rows[l.last+1], l.last = l.rows[l.last], l.last+1
	frozenWAL := filepath.Join(dir, "frozen-wal.duckdb")
	if info, err := ducklake.Freeze(ctx, walLake, frozenWAL); err != nil || info.Storage.Number != 999 || info.Snapshot.ID != l.last {
		t.Fatalf("freeze with a WAL: %+v %v", info, err)
	}
	checkLake11(t, frozenWAL, l)

	// SQLite form and back.
	lite := filepath.Join(dir, "lake.sqlite")
	if err := ducklake.ConvertToSQLite(ctx, frozenWAL, lite); err != nil {
		t.Fatal(err)
	}
	checkLake11(t, lite, l)
	back := filepath.Join(dir, "back.duckdb")
	info, err = ducklake.Freeze(ctx, lite, back)
	if err != nil {
		t.Fatal(err)
	}
	if info.Storage.Number != 999 || info.Storage.MinDuckDB != "v2.0.0" {
		t.Errorf("a 1.1 catalog frozen from SQLite has storage %+v, want 999 (DuckDB 2.0, the only one that reads 1.1)", info.Storage)
	}
	checkLake11(t, back, l)
}

// TestFormat11DevString: the string duckdb/ducklake's source writes before
// the release, 1.1-dev1, reads as 1.1 (same tables).
func TestFormat11DevString(t *testing.T) {
	dir := t.TempDir()
	l := makeLake11(t, dir)
	db, err := sql.Open("duckdb", l.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE ducklake_metadata SET value = '1.1-dev1' WHERE key = 'version'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	c, err := ducklake.Open(context.Background(), l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.State(context.Background(), l.last)
	if err != nil || c.Format() != "1.1-dev1" || st.Schemas[0].Tables[0].RowCount != l.rows[l.last] {
		t.Errorf("1.1-dev1: format %q, state %+v, %v", c.Format(), st, err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
