package ducklake

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// TestIdleInstances: a released instance is handed out again with nothing
// of its last user left — no database attached (the file's lock let go),
// no temporary table, the settings this package changes at their defaults,
// its registered functions known — and one whose own database holds a
// table is closed instead.
func TestIdleInstances(t *testing.T) {
	ctx := context.Background()
	takeIdleForTest()
	dir := t.TempDir()
	path := filepath.Join(dir, "x.duckdb")
	withWritable(t, path, "CREATE TABLE t(i INTEGER); INSERT INTO t VALUES (1)")

	const settingsSQL = "SELECT current_setting('memory_limit'), current_setting('TimeZone'), current_setting('preserve_insertion_order')::VARCHAR"
	db, conn, err := newDuckDB(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var defaults, set [3]string
	if err := conn.QueryRowContext(ctx, settingsSQL).Scan(&defaults[0], &defaults[1], &defaults[2]); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET memory_limit = '77MB'", "SET TimeZone = 'Asia/Tokyo'", "SET preserve_insertion_order = false"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.QueryRowContext(ctx, settingsSQL).Scan(&set[0], &set[1], &set[2]); err != nil || set == defaults {
		t.Fatalf("settings %v not changed from %v (%v)", set, defaults, err)
	}
	for _, q := range []string{"ATTACH " + sqlquote.String(path) + " AS f (READ_ONLY)", "USE f", "CREATE TEMP TABLE scratch AS SELECT 1 AS x"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := registerUDF(db, fnvFunc, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := releaseDuckDB(db, conn); err != nil {
		t.Fatal(err)
	}
	// The file is no longer attached: a writer can open it.
	withWritable(t, path, "INSERT INTO t VALUES (2)")

	db2, conn2, err := newDuckDB(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if db2 != db {
		t.Fatal("the released instance was not handed out again")
	}
	var attached, temps int
	var got [3]string
	if err := conn2.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM duckdb_databases() WHERE NOT internal AND database_name <> 'memory'), (SELECT count(*) FROM duckdb_tables() WHERE temporary)").Scan(&attached, &temps); err != nil {
		t.Fatal(err)
	}
	if err := conn2.QueryRowContext(ctx, settingsSQL).Scan(&got[0], &got[1], &got[2]); err != nil {
		t.Fatal(err)
	}
	if attached != 0 || temps != 0 || got != defaults {
		t.Errorf("reused instance: %d attached, %d temporary tables, settings %v; want none, none, %v", attached, temps, got, defaults)
	}
	registered := false
	if err := registerUDF(db2, fnvFunc, func() error { registered = true; return nil }); err != nil || registered {
		t.Errorf("a function the instance holds was registered again (%v)", err)
	}

	// A table in the instance's own database: not reusable, closed.
	if _, err := conn2.ExecContext(ctx, "CREATE TABLE memory.main.kept(i INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if err := releaseDuckDB(db2, conn2); err != nil {
		t.Fatal(err)
	}
	if n := len(takeIdleForTest()); n != 0 {
		t.Errorf("%d idle instances after releasing one with a table of its own; want 0", n)
	}
}

// takeIdleForTest empties the idle list and returns what it held (closed).
func takeIdleForTest() []any {
	var out []any
	for db := takeIdle(); db != nil; db = takeIdle() {
		closeInstance(db)
		out = append(out, db)
	}
	return out
}
