package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
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

	db, conn, err := newDuckDB(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defaults := allSettings(t, conn)
	spill := t.TempDir()
	for _, q := range []string{"SET memory_limit = '77MB'", "SET TimeZone = 'Asia/Tokyo'", "SET preserve_insertion_order = false",
		"SET threads = 1", "SET temp_directory = " + sqlquote.String(spill)} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if set := allSettings(t, conn); len(settingsDiff(defaults, set)) < 5 {
		t.Fatalf("settings not changed: %v", settingsDiff(defaults, set))
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
	if err := conn2.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM duckdb_databases() WHERE NOT internal AND database_name <> 'memory'), (SELECT count(*) FROM duckdb_tables() WHERE temporary)").Scan(&attached, &temps); err != nil {
		t.Fatal(err)
	}
	if diff := settingsDiff(defaults, allSettings(t, conn2)); attached != 0 || temps != 0 || len(diff) > 0 {
		t.Errorf("reused instance: %d attached, %d temporary tables, settings not as a new one's: %v", attached, temps, diff)
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

// allSettings returns every setting of conn's instance (duckdb_settings()).
func allSettings(t *testing.T, conn *sql.Conn) map[string]string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "SELECT name, coalesce(value, 'NULL') FROM duckdb_settings()")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// settingsDiff lists the settings whose values differ between a and b.
func settingsDiff(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	sort.Strings(out)
	return out
}
