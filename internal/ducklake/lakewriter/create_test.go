package lakewriter

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// layoutOf returns, for every ducklake_* table except inlined-data tables,
// DuckDB's CREATE statement, its columns (name, type, nullability, default)
// in order, and its constraints.
func layoutOf(t *testing.T, catalog string) map[string][]string {
	t.Helper()
	db := roCatalog(t, catalog)
	out := map[string][]string{}
	for _, r := range queryStrings(t, db, `SELECT table_name, sql FROM duckdb_tables() WHERE database_name = 'cat'
		AND table_name LIKE 'ducklake\_%' ESCAPE '\' AND table_name NOT LIKE 'ducklake\_inlined\_data\_%\_%' ESCAPE '\'`) {
		out[r[0]] = append(out[r[0]], "sql: "+r[1])
	}
	for _, r := range queryStrings(t, db, `SELECT table_name, column_index, column_name, data_type, is_nullable, column_default FROM duckdb_columns()
		WHERE database_name = 'cat' ORDER BY table_name, column_index`) {
		if _, ok := out[r[0]]; ok {
			out[r[0]] = append(out[r[0]], "column: "+strings.Join(r[1:], " "))
		}
	}
	for _, r := range queryStrings(t, db, `SELECT table_name, constraint_type, constraint_column_names::VARCHAR, constraint_text FROM duckdb_constraints()
		WHERE database_name = 'cat' ORDER BY ALL`) {
		if _, ok := out[r[0]]; ok {
			out[r[0]] = append(out[r[0]], "constraint: "+strings.Join(r[1:], " "))
		}
	}
	if n := queryInt(t, db, "SELECT count(*) FROM duckdb_indexes() WHERE database_name = 'cat'"); n != 0 {
		out["(indexes)"] = []string{"count"}
	}
	return out
}

// TestCreateLayoutMatchesV04 compares the tables, columns, types and
// constraints of a new catalog with the real dltest-v04.ducklake.
func TestCreateLayoutMatchesV04(t *testing.T) {
	want := layoutOf(t, realCatalog(t, "dltest-v04.ducklake"))
	if len(want) != 28 {
		t.Fatalf("dltest-v04 has %d ducklake tables, MANIFEST says 28", len(want))
	}
	for _, format := range []string{"", Format10, Format04} {
		path := filepath.Join(t.TempDir(), "new.ducklake")
		if err := Create(bg, path, CreateOptions{Format: format, DataPath: "/data/lake"}); err != nil {
			t.Fatal(err)
		}
		got := layoutOf(t, path)
		if !reflect.DeepEqual(got, want) {
			for name := range want {
				if !reflect.DeepEqual(got[name], want[name]) {
					t.Errorf("format %q: %s:\n got  %q\n want %q", format, name, got[name], want[name])
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("format %q: extra table %s", format, name)
				}
			}
		}
	}
}

// TestCreate11MatchesExtensionSource compares the tables, columns, types and
// constraints of a new 1.1 catalog with those of the CREATE statements in
// duckdb/ducklake's source (testdata/layout-1.1.json, made by
// testdata/derive_layout.py from commit 2ed0a0be of main, 2026-08-20:
// ducklake_metadata_manager.cpp GetCreateTableStatements as
// ducklake_metadata_manager_v1_1.cpp overrides it). No real 1.1 catalog
// can be made here: PyPI serves no ducklake extension for DuckDB 2.0.
func TestCreate11MatchesExtensionSource(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "layout-1.1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var src struct {
		Source string              `json:"source"`
		Tables map[string][]string `json:"tables"`
	}
	if err := json.Unmarshal(b, &src); err != nil {
		t.Fatal(err)
	}
	if len(src.Tables) != 29 {
		t.Fatalf("%s has %d tables, want 29 (28 of 1.0 + ducklake_view_column_tag)", src.Source, len(src.Tables))
	}
	path := filepath.Join(t.TempDir(), "new.ducklake")
	if err := Create(bg, path, CreateOptions{Format: Format11, DataPath: "/data/lake"}); err != nil {
		t.Fatal(err)
	}
	got := layoutOf(t, path)
	for name, want := range src.Tables {
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("%s:\n got  %q\n want %q (%s)", name, got[name], want, src.Source)
		}
	}
	for name := range got {
		if _, ok := src.Tables[name]; !ok {
			t.Errorf("extra table %s", name)
		}
	}
	db := roCatalog(t, path)
	if v := queryStrings(t, db, "SELECT value FROM ducklake_metadata WHERE key = 'version'")[0][0]; v != Format11 {
		t.Errorf("version %q", v)
	}
	// Only DuckDB 2.0 reads 1.1, so the file is in DuckDB 2.0's storage.
	if s := storageVersion(t, path); s != "v2.0.0+" {
		t.Errorf("storage %s, want v2.0.0+", s)
	}
}

// TestCreateInitialRows compares the rows of a new catalog with those the
// extension wrote into two freshly created real catalogs: which tables have
// rows (orbital-api-v0.2-empty was never written to), snapshot 0, the
// metadata keys and the "main" schema.
func TestCreateInitialRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.ducklake")
	if err := Create(bg, path, CreateOptions{DataPath: `C:/x\`}); err != nil {
		t.Fatal(err)
	}
	mustNoWAL(t, path)
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("Create left %d files, want only the catalog", len(entries))
	}
	got := roCatalog(t, path)
	nonEmpty := func(path string) map[string]bool {
		c := roCatalog(t, path)
		m := map[string]bool{}
		for _, r := range queryStrings(t, c, "SELECT table_name FROM duckdb_tables() WHERE database_name = 'cat'") {
			m[r[0]] = queryInt(t, c, "SELECT count(*) FROM "+sqlquote.Ident(r[0])) > 0
		}
		return m
	}
	mine := nonEmpty(path)
	orbital := realCatalog(t, "orbital-api-v0.2-empty.ducklake")
	theirs := nonEmpty(orbital)
	for table, has := range theirs {
		if mineHas, ok := mine[table]; ok && mineHas != has {
			t.Errorf("%s: rows %v, orbital-api-v0.2-empty %v", table, mineHas, has)
		}
	}
	for table, has := range mine {
		if _, ok := theirs[table]; !ok && has {
			t.Errorf("%s has rows; it is not in the 0.2 catalog, so it must be empty", table)
		}
	}
	// snapshot 0 as in orbital (0.2) and dltest-v04 (0.4)
	for _, real := range []string{orbital, realCatalog(t, "dltest-v04.ducklake")} {
		r := roCatalog(t, real)
		q := "SELECT snapshot_id, schema_version, next_catalog_id, next_file_id, changes_made FROM ducklake_snapshot JOIN ducklake_snapshot_changes USING (snapshot_id) WHERE snapshot_id = 0"
		if a, b := queryStrings(t, got, q), queryStrings(t, r, q); !reflect.DeepEqual(a, b) {
			t.Errorf("snapshot 0: %v, %s has %v", a, filepath.Base(real), b)
		}
		q = "SELECT schema_id, begin_snapshot, end_snapshot, schema_name, path, path_is_relative FROM ducklake_schema"
		if a, b := queryStrings(t, got, q), queryStrings(t, r, q); !reflect.DeepEqual(a, b) {
			t.Errorf("schema rows: %v, %s has %v", a, filepath.Base(real), b)
		}
		q = "SELECT key FROM ducklake_metadata ORDER BY key"
		if a, b := queryStrings(t, got, q), queryStrings(t, r, q); !reflect.DeepEqual(a, b) {
			t.Errorf("metadata keys: %v, %s has %v", a, filepath.Base(real), b)
		}
	}
	meta := map[string]string{}
	for _, r := range queryStrings(t, got, "SELECT key, value, scope, scope_id FROM ducklake_metadata") {
		if r[2] != "NULL" || r[3] != "NULL" {
			t.Errorf("metadata %v has a scope", r)
		}
		meta[r[0]] = r[1]
	}
	if meta["version"] != "1.0" || meta["encrypted"] != "false" || meta["data_path"] != "C:/x/" || !regexp.MustCompile(`^DuckDB [0-9a-f]{10}$`).MatchString(meta["created_by"]) {
		t.Errorf("metadata %v", meta)
	}
	if u := queryStrings(t, got, "SELECT schema_uuid::VARCHAR FROM ducklake_schema")[0][0]; !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7`).MatchString(u) {
		t.Errorf("schema uuid %s is not a UUIDv7", u)
	}
	if n := queryInt(t, got, "SELECT count(*) FROM ducklake_snapshot_changes WHERE author IS NULL AND commit_message IS NULL AND commit_extra_info IS NULL"); n != 1 {
		t.Errorf("snapshot 0 has commit info")
	}
	if a, b := storageVersion(t, path), storageVersion(t, realCatalog(t, "dltest-v04.ducklake")); a != b {
		t.Errorf("storage version %v, dltest-v04 (DuckDB 1.5) %v", a, b)
	}
	if n := queryInt(t, got, "SELECT count(*) FROM ducklake_snapshot WHERE snapshot_time > now() - INTERVAL 1 HOUR"); n != 1 {
		t.Errorf("snapshot_time not set to now")
	}
}

func TestCreateOptionsAndErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.ducklake")
	if err := Create(bg, path, CreateOptions{Format: Format04, Author: "me", Message: "init"}); err != nil {
		t.Fatal(err)
	}
	db := roCatalog(t, path)
	if v := queryStrings(t, db, "SELECT value FROM ducklake_metadata WHERE key IN ('version', 'data_path') ORDER BY key"); v[0][0] != path+".files/" || v[1][0] != "0.4" {
		t.Errorf("metadata %v", v)
	}
	if v := queryStrings(t, db, "SELECT author, commit_message FROM ducklake_snapshot_changes"); v[0][0] != "me" || v[0][1] != "init" {
		t.Errorf("commit info %v", v)
	}
	if err := Create(bg, path, CreateOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("create over existing file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.ducklake.wal"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Create(bg, filepath.Join(dir, "b.ducklake"), CreateOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("create next to a .wal: %v", err)
	}
	if err := Create(bg, filepath.Join(dir, "c.ducklake"), CreateOptions{Format: "0.3"}); !errors.Is(err, ErrUnsupportedFormat) {
		t.Errorf("create 0.3: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.ducklake")); err == nil {
		t.Errorf("refused create left a file")
	}
}
