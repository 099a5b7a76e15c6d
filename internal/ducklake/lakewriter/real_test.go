package lakewriter

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// TestOpenV04AddSnapshots adds snapshots of every kind to a copy of the real
// 0.4 catalog dltest-v04 (table test(i INTEGER) and its empty inlined-data
// table ducklake_inlined_data_1_1).
func TestOpenV04AddSnapshots(t *testing.T) {
	catalog := realCatalog(t, "dltest-v04.ducklake")
	// its data_path /tmp/v04_data3/ is not ours: point it at the test folder
	// the way a user would with a catalog copy (the extension's
	// OVERRIDE_DATA_PATH is per session, so rewrite the stored value here).
	dataDir := filepath.ToSlash(filepath.Join(filepath.Dir(catalog), "data")) + "/"
	setDataPath(t, catalog, dataDir)
	w, err := Open(bg, catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Format() != Format04 {
		t.Fatalf("format %q", w.Format())
	}
	first, _ := w.Snapshot(bg)
	if first != 1 {
		t.Fatalf("dltest-v04 ends at snapshot %d, want 1", first)
	}
	m := newModel(t)
	m.exec("CREATE TABLE test(i INTEGER)")
	test := lakeTable{"main", "test", "test"}
	tracked := []lakeTable{test}
	steps := []step{
		{name: "inline into the existing inlined table", run: func(w *Writer) error { return w.InsertInlined(bg, "main", "test", "SELECT 1 AS i UNION ALL SELECT 2") },
			model: "INSERT INTO test VALUES (1), (2)", changes: "inlined_insert:1"},
		{name: "insert", run: func(w *Writer) error { return w.Insert(bg, "main", "test", "SELECT range AS i FROM range(100, 200)") },
			model: "INSERT INTO test SELECT range FROM range(100, 200)", changes: "inserted_into_table:1"},
		{name: "delete", run: func(w *Writer) error { return w.DeleteWhere(bg, "main", "test", "i % 2 = 0") },
			model: "DELETE FROM test WHERE i % 2 = 0", changes: "deleted_from_table:1,inlined_delete:1"},
		{name: "add column", run: func(w *Writer) error {
			return w.AddColumn(bg, "main", "test", ColumnDef{Name: "j", Type: "varchar", Nullable: true})
		},
			model: "ALTER TABLE test ADD COLUMN j VARCHAR", changes: "altered_table:1"},
		{name: "insert j", run: func(w *Writer) error { return w.Insert(bg, "main", "test", "SELECT 7 AS i, 'seven' AS j") },
			model: "INSERT INTO test VALUES (7, 'seven')", changes: "inserted_into_table:1"},
		{name: "compact", run: func(w *Writer) error { return w.Compact(bg, "main", "test") }, changes: "compacted_table:1"},
		{name: "delete again", run: func(w *Writer) error { return w.DeleteWhere(bg, "main", "test", "i > 150") },
			model: "DELETE FROM test WHERE i > 150", changes: "deleted_from_table:1"},
		{name: "rename", run: func(w *Writer) error {
			err := w.RenameTable(bg, "main", "test", "test2")
			if err == nil {
				tracked = []lakeTable{{"main", "test2", "test"}}
			}
			return err
		}, changes: `created_table:"main"."test2"`},
		{name: "create table", run: func(w *Writer) error {
			_, err := w.CreateTable(bg, "main", "other", []ColumnDef{{Name: "x", Type: "float64", Nullable: true}})
			return err
		}, changes: `created_table:"main"."other"`},
	}
	history := map[int64]map[lakeTable][]string{}
	runSteps(t, w, m, steps, func() []lakeTable { return tracked }, history)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mustNoWAL(t, catalog)
	checkInvariants(t, catalog, first+1)
	checkHistory(t, catalog, history)

	db := roCatalog(t, catalog)
	if ids := queryStrings(t, db, "SELECT min(snapshot_id), max(snapshot_id) FROM ducklake_snapshot WHERE snapshot_id > 1"); ids[0][0] != "2" || ids[0][1] != fmt.Sprint(1+len(steps)) {
		t.Errorf("new snapshot ids %v", ids)
	}
	// the table created in snapshot 1 by the extension got id 1; ours continue
	if v := queryStrings(t, db, "SELECT table_id FROM ducklake_table WHERE table_name = 'other'"); v[0][0] != "2" {
		t.Errorf("new table id %v, want 2", v)
	}
	// the existing inlined table was reused: rows 0 and 1 of table 1
	if v := queryStrings(t, db, "SELECT row_id, begin_snapshot, i FROM ducklake_inlined_data_1_1 ORDER BY row_id"); !reflect.DeepEqual(v, [][]string{{"0", "2", "1"}, {"1", "2", "2"}}) {
		t.Errorf("inlined rows %v", v)
	}
	if v := queryStrings(t, db, "SELECT row_id_start FROM ducklake_data_file ORDER BY data_file_id LIMIT 1"); v[0][0] != "2" {
		t.Errorf("first data file row_id_start %v, want 2 (after two inlined rows)", v)
	}
	if v := queryStrings(t, db, "SELECT value FROM ducklake_metadata WHERE key = 'version'"); v[0][0] != "0.4" {
		t.Errorf("version changed to %v", v)
	}
}

func setDataPath(t *testing.T, catalog, dataPath string) {
	t.Helper()
	db, conn, err := openDuckDB(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer conn.Close()
	if _, err := conn.ExecContext(bg, "ATTACH "+sqlquote.String(catalog)+" AS c; UPDATE c.ducklake_metadata SET value = "+sqlquote.String(dataPath)+" WHERE key = 'data_path'; CHECKPOINT c; DETACH c"); err != nil {
		t.Fatal(err)
	}
}

// TestOpenV03AddSnapshots writes to a copy of the real 0.3 catalog
// dltest-per-table-schema (tables T, T_1 with a dropped column, T_2) and
// checks the 0.3 conventions: a global ducklake_schema_versions row per
// schema version, NULL default_value, partial_file_info, delete files that
// are ended rather than replaced.
func TestOpenV03AddSnapshots(t *testing.T) {
	catalog := realCatalog(t, "dltest-per-table-schema.ducklake")
	w, err := Open(bg, catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Format() != Format03 || w.DataPath() != "a.db.files/" {
		t.Fatalf("format %q data path %q", w.Format(), w.DataPath())
	}
	first, _ := w.Snapshot(bg)
	m := newModel(t)
	m.exec(`CREATE TABLE "T"(a INTEGER); CREATE TABLE "T_1"(b INTEGER); CREATE TABLE "T_2"(a INTEGER, b INTEGER)`)
	tracked := []lakeTable{{"main", "T", "T"}, {"main", "T_1", "T_1"}, {"main", "T_2", "T_2"}}
	steps := []step{
		{name: "insert T_2", run: func(w *Writer) error {
			return w.Insert(bg, "main", "T_2", "SELECT range AS a, range * 10 AS b FROM range(20)")
		},
			model: `INSERT INTO "T_2" SELECT range, range * 10 FROM range(20)`, changes: "inserted_into_table:3"},
		{name: "insert T_1", run: func(w *Writer) error { return w.Insert(bg, "main", "T_1", "SELECT 5 AS b") },
			model: `INSERT INTO "T_1" VALUES (5)`, changes: "inserted_into_table:2"},
		{name: "delete T_2", run: func(w *Writer) error { return w.DeleteWhere(bg, "main", "T_2", "a < 3") },
			model: `DELETE FROM "T_2" WHERE a < 3`, changes: "deleted_from_table:3"},
		{name: "delete T_2 again", run: func(w *Writer) error { return w.DeleteWhere(bg, "main", "T_2", "b = 100") },
			model: `DELETE FROM "T_2" WHERE b = 100`, changes: "deleted_from_table:3"},
		{name: "inline into T", run: func(w *Writer) error { return w.InsertInlined(bg, "main", "T", "SELECT 1 AS a") },
			model: `INSERT INTO "T" VALUES (1)`, changes: "inlined_insert:1"},
		{name: "add column to T", run: func(w *Writer) error {
			return w.AddColumn(bg, "main", "T", ColumnDef{Name: "c", Type: "date", Nullable: true})
		},
			model: `ALTER TABLE "T" ADD COLUMN c DATE`, changes: "altered_table:1"},
		{name: "compact T_2 (rewrite)", run: func(w *Writer) error { return w.Compact(bg, "main", "T_2") }, changes: "compacted_table:3"},
		{name: "insert T_2 again", run: func(w *Writer) error { return w.Insert(bg, "main", "T_2", "SELECT 99 AS a") },
			model: `INSERT INTO "T_2" (a) VALUES (99)`, changes: "inserted_into_table:3"},
		{name: "compact T_2 (merge)", run: func(w *Writer) error { return w.Compact(bg, "main", "T_2") }, changes: "compacted_table:3"},
		{name: "create schema", run: func(w *Writer) error { return w.CreateSchema(bg, "s2") }, changes: `created_schema:"s2"`},
		{name: "create table", run: func(w *Writer) error {
			_, err := w.CreateTable(bg, "s2", "T", []ColumnDef{{Name: "v", Type: "varchar", Nullable: true}})
			return err
		}, changes: `created_table:"s2"."T"`},
	}
	history := map[int64]map[lakeTable][]string{}
	runSteps(t, w, m, steps, func() []lakeTable { return tracked }, history)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mustNoWAL(t, catalog)
	checkInvariants(t, catalog, first+1)
	checkHistory(t, catalog, history)

	db := roCatalog(t, catalog)
	if _, err := os.Stat(filepath.Join(filepath.Dir(catalog), "a.db.files", "main", "T_2")); err != nil {
		t.Errorf("relative data path not resolved next to the catalog: %v", err)
	}
	// one schema_versions row per schema version, as the extension wrote before
	if v := queryStrings(t, db, "SELECT count(*), count(DISTINCT schema_version), max(schema_version) FROM ducklake_schema_versions"); v[0][0] != v[0][1] || v[0][2] != queryStrings(t, db, "SELECT max(schema_version)::VARCHAR FROM ducklake_snapshot")[0][0] {
		t.Errorf("schema_versions %v", v)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_column WHERE default_value IS NOT NULL"); n != 0 {
		t.Errorf("%d columns with a default_value in a 0.3 catalog", n)
	}
	if v := queryStrings(t, db, "SELECT partial_file_info FROM ducklake_data_file WHERE partial_file_info IS NOT NULL"); len(v) != 1 || !strings.HasPrefix(v[0][0], "partial_max:") {
		t.Errorf("partial_file_info %v", v)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_delete_file WHERE end_snapshot IS NOT NULL"); n != 2 {
		t.Errorf("%d ended delete files, want 2 (replaced, then rewritten)", n)
	}
	if v := queryStrings(t, db, "SELECT value FROM ducklake_metadata WHERE key = 'version'"); v[0][0] != "0.3" {
		t.Errorf("version changed to %v", v)
	}
}

func TestOpenRefusesOtherFormats(t *testing.T) {
	for name, want := range map[string]string{
		"dltest-v01.ducklake":     `"0.1"`,
		"airduck-v0.2.ducklake":   `"0.2"`,
		"ahri-tre-v0.2.sqlite":    "",
		"wikigrams-v0.3.ducklake": "",
	} {
		path := realCatalog(t, name)
		var storage string
		if strings.HasSuffix(name, ".ducklake") {
			storage = storageVersion(t, path)
		}
		w, err := Open(bg, path)
		if name == "wikigrams-v0.3.ducklake" {
			// a real 0.3 catalog: opens, and a table can be created next to the partitioned one
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if _, err := w.CreateTable(bg, "main", "extra", []ColumnDef{{Name: "a", Type: "int32", Nullable: true}}); err != nil {
				t.Errorf("%s: create table: %v", name, err)
			}
			if err := w.Close(); err != nil {
				t.Error(err)
			}
			checkInvariants(t, path, 3)
			if after := storageVersion(t, path); after != storage {
				t.Errorf("%s: storage version changed from %s to %s", name, storage, after)
			}
			continue
		}
		if err == nil {
			w.Close()
			t.Errorf("%s: opened", name)
			continue
		}
		if want != "" && (!errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want ErrUnsupportedFormat naming %s", name, err, want)
		}
	}
}

// TestOpenHoldsLock checks that a second process cannot open a catalog while
// a Writer has it open, and can after Close.
func TestOpenHoldsLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock.ducklake")
	if err := Create(bg, path, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := Open(bg, path)
	if err != nil {
		t.Fatal(err)
	}
	probe := func() error {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockProbe$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LAKEWRITER_LOCK_PROBE="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := probe(); err == nil {
		t.Errorf("second process opened a locked catalog")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := probe(); err != nil {
		t.Errorf("second process could not open after Close: %v", err)
	}
	mustNoWAL(t, path)
}

func TestLockProbe(t *testing.T) {
	path := os.Getenv("LAKEWRITER_LOCK_PROBE")
	if path == "" {
		t.Skip("helper for TestOpenHoldsLock")
	}
	w, err := Open(bg, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// storageVersion returns the DuckDB storage version tag of a database file,
// opening and closing it right away.
func storageVersion(t *testing.T, path string) string {
	t.Helper()
	db, conn, err := openDuckDB(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer conn.Close()
	var v string
	if _, err := conn.ExecContext(bg, "ATTACH "+sqlquote.String(path)+" AS s (READ_ONLY)"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(bg, "SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = 's'").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(bg, "DETACH s"); err != nil {
		t.Fatal(err)
	}
	return v
}
