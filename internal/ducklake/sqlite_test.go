package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil"
)

// sqliteDB opens a SQLite file with the test's own connection (read-write
// unless ro) and closes it at the end of the test.
func sqliteDB(t testing.TB, path string, ro bool) *sql.DB {
	t.Helper()
	params := "mode=rw&_busy_timeout=5000"
	if ro {
		params = "mode=ro&_busy_timeout=5000"
	}
	db, err := sql.Open("sqlite3", sqliteDSN(path, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sqliteRows returns the rows of q, each as typeof(value):value joined with
// " | ", so storage classes are compared as well as values.
func sqliteRows(t testing.TB, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				parts[i] = "NULL"
			case []byte:
				parts[i] = fmt.Sprintf("%T:%x", x, x)
			default:
				parts[i] = fmt.Sprintf("%T:%v", x, x)
			}
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// compareValues checks, value by value, that every table of the DuckDB
// files a and b holds the same rows: both sorted by every column, each value
// compared as DuckDB's text of it and its type.
func compareValues(t *testing.T, a, b string) {
	t.Helper()
	r := newRawDB(t, "")
	r.exec(fmt.Sprintf("ATTACH %s AS a (READ_ONLY)", sqlquote.String(a)), fmt.Sprintf("ATTACH %s AS b (READ_ONLY)", sqlquote.String(b)))
	defer r.close()
	for _, tb := range r.strings("SELECT table_name FROM duckdb_tables() WHERE database_name = 'a' ORDER BY 1") {
		cols := r.strings(fmt.Sprintf("SELECT column_name FROM duckdb_columns() WHERE database_name = 'a' AND table_name = %s ORDER BY column_index", sqlquote.String(tb)))
		var sel []string
		for _, c := range cols {
			sel = append(sel, fmt.Sprintf("typeof(%[1]s) || ':' || coalesce(%[1]s::VARCHAR, 'NULL')", sqlquote.Ident(c)))
		}
		q := func(db string) string {
			return fmt.Sprintf("SELECT %s FROM %s.main.%s ORDER BY ALL", strings.Join(sel, ", "), db, sqlquote.Ident(tb))
		}
		ra, rb := r.strings(q("a")), r.strings(q("b"))
		if len(ra) != len(rb) {
			t.Errorf("table %s: %d rows vs %d", tb, len(ra), len(rb))
			continue
		}
		for i := range ra {
			va, vb := strings.Split(ra[i], " | "), strings.Split(rb[i], " | ")
			for j := range va {
				if va[j] != vb[j] {
					t.Errorf("table %s row %d column %s: %s vs %s", tb, i, cols[j], va[j], vb[j])
				}
			}
		}
	}
}

// TestFilesKnownAtFileEqualsCatalog: on every real catalog of the corpus,
// at each of its snapshots, FilesKnownAtFile counts the same files in the
// catalog's DuckDB form and in its SQLite form (read in place) as
// Catalog.FilesKnownAt, and a snapshot the catalog lacks is
// ErrSnapshotNotFound.
func TestFilesKnownAtFileEqualsCatalog(t *testing.T) {
	ctx := context.Background()
	for _, rc := range duckdbCatalogs(t) {
		t.Run(rc.File, func(t *testing.T) {
			dir := t.TempDir()
			src := gunzipCatalog(t, rc.File, dir, "")
			lite := filepath.Join(dir, "work.sqlite")
			if err := ConvertToSQLite(ctx, src, lite); err != nil {
				t.Fatal(err)
			}
			c, err := Open(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			snaps, err := c.Snapshots(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]int64{}
			for _, s := range snaps {
				if want[s.ID], err = c.FilesKnownAt(ctx, s.ID); err != nil {
					t.Fatal(err)
				}
			}
			c.Close()
			last := snaps[len(snaps)-1].ID
			if want[last] == 0 && rc.DataFiles > 0 {
				t.Errorf("no files known at the last snapshot of a catalog with %d data files", rc.DataFiles)
			}
			for _, path := range []string{src, lite} {
				for id, n := range want {
					if got, err := FilesKnownAtFile(ctx, path, id); err != nil || got != n {
						t.Errorf("%s at snapshot %d: %d, %v; want %d", filepath.Base(path), id, got, err, n)
					}
				}
				if _, err := FilesKnownAtFile(ctx, path, last+1); !errors.Is(err, ErrSnapshotNotFound) {
					t.Errorf("%s at a snapshot it lacks: %v", filepath.Base(path), err)
				}
			}
		})
	}
}

// Every real DuckDB-format catalog -> SQLite -> DuckDB gives back the same
// tables, column names and types, constraints and rows, in the same storage
// version.
func TestSQLiteRoundTripRealCatalogs(t *testing.T) {
	ctx := context.Background()
	for _, rc := range duckdbCatalogs(t) {
		t.Run(rc.File, func(t *testing.T) {
			dir := t.TempDir()
			src := gunzipCatalog(t, rc.File, dir, "")
			before := fileState(t, src)
			lite := filepath.Join(dir, "work.sqlite")
			if err := ConvertToSQLite(ctx, src, lite); err != nil {
				t.Fatal(err)
			}
			if after := fileState(t, src); after != before {
				t.Errorf("ConvertToSQLite changed its source")
			}
			if got := listDir(t, dir); !slices.Equal(got, []string{rc.File, "work.sqlite"}) {
				t.Errorf("files after conversion: %v", got)
			}
			if b, err := DetectBackend(lite); err != nil || b != BackendSQLite {
				t.Fatalf("DetectBackend = %v, %v", b, err)
			}
			db := sqliteDB(t, lite, true)
			if mode := sqliteRows(t, db, "PRAGMA journal_mode"); !slices.Equal(mode, []string{"string:wal"}) {
				t.Errorf("journal_mode = %v, want wal", mode)
			}
			checkSQLiteTypes(t, db)
			db.Close()

			frozen := filepath.Join(dir, "frozen.duckdb")
			info, err := Freeze(ctx, lite, frozen)
			if err != nil {
				t.Fatal(err)
			}
			if info.Format != rc.Format || info.Snapshot.ID != rc.MaxSnapshot {
				t.Errorf("FreezeInfo = %+v, want format %s snapshot %d", info, rc.Format, rc.MaxSnapshot)
			}
			srcStorage, _ := ReadStorage(src)
			if info.Storage != srcStorage {
				t.Errorf("storage %+v, source %+v", info.Storage, srcStorage)
			}
			compareDatabases(t, src, frozen)
			compareValues(t, src, frozen)

			// Open reads the SQLite file as it reads the DuckDB one.
			a, err := Open(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := Open(ctx, lite)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.Backend() != BackendSQLite || a.Backend() != BackendDuckDB {
				t.Errorf("backends %s, %s", a.Backend(), b.Backend())
			}
			sa, _ := a.Snapshots(ctx)
			sb, _ := b.Snapshots(ctx)
			if fmt.Sprint(sa) != fmt.Sprint(sb) {
				t.Errorf("snapshots differ:\n%v\n%v", sa, sb)
			}
			sta, err := a.State(ctx, rc.MaxSnapshot)
			if err != nil {
				t.Fatal(err)
			}
			stb, err := b.State(ctx, rc.MaxSnapshot)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(sta) != fmt.Sprint(stb) {
				t.Errorf("states differ:\n%v\n%v", sta, stb)
			}
		})
	}
}

// checkSQLiteTypes checks the SQLite layout rules on every column: declared
// types only BIGINT, VARCHAR, DOUBLE or BLOB; booleans stored as 0/1
// integers; UUIDs and timestamps as text.
func checkSQLiteTypes(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, row := range sqliteRows(t, db, "SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY 1, p.cid") {
		f := strings.Split(row, " | ")
		table, col, decl := strings.TrimPrefix(f[0], "string:"), strings.TrimPrefix(f[1], "string:"), strings.TrimPrefix(f[2], "string:")
		if !slices.Contains([]string{"BIGINT", "VARCHAR", "DOUBLE", "BLOB"}, decl) {
			t.Errorf("%s.%s declared %s", table, col, decl)
		}
		want, known := metadataColumns[table][col]
		if !known {
			continue
		}
		if sqliteDeclType(want, false) != decl {
			t.Errorf("%s.%s declared %s, want %s", table, col, decl, sqliteDeclType(want, false))
		}
		q := fmt.Sprintf("SELECT DISTINCT typeof(%s) FROM %s WHERE %s IS NOT NULL", sqlquote.Ident(col), sqlquote.Ident(table), sqlquote.Ident(col))
		for _, typ := range sqliteRows(t, db, q) {
			ok := map[string]string{tBoolean: "string:integer", tBigint: "string:integer", tUUID: "string:text", tTimestamp: "string:text", tVarchar: "string:text"}[want]
			if typ != ok {
				t.Errorf("%s.%s (%s) stores %s", table, col, want, typ)
			}
		}
		if want == tBoolean {
			if got := sqliteRows(t, db, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s NOT IN (0, 1)", sqlquote.Ident(table), sqlquote.Ident(col))); got[0] != "int64:0" {
				t.Errorf("%s.%s holds booleans other than 0/1", table, col)
			}
		}
		if want == tTimestamp {
			for _, v := range sqliteRows(t, db, fmt.Sprintf("SELECT %s FROM %s WHERE %s IS NOT NULL", sqlquote.Ident(col), sqlquote.Ident(table), sqlquote.Ident(col))) {
				if !strings.HasSuffix(v, "+00") {
					t.Errorf("%s.%s = %s, want UTC text ending in +00", table, col, v)
				}
			}
		}
	}
}

// The real SQLite catalog (written by DuckDB's ducklake extension) converts
// to DuckDB with the DuckDB-format 0.2 layout, and back to SQLite with the
// very CREATE TABLE statements and stored values of the original.
func TestSQLiteRealCatalogLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ahri := gunzipCatalog(t, "ahri-tre-v0.2.sqlite", dir, "")
	before := sha256File(t, ahri)
	frozen := filepath.Join(dir, "ahri.duckdb")
	info, err := Freeze(ctx, ahri, frozen)
	if err != nil {
		t.Fatal(err)
	}
	if sha256File(t, ahri) != before {
		t.Error("Freeze changed the SQLite source")
	}
	if info.Format != "0.2" || info.Snapshot.ID != 4 || info.Storage.Number != 64 {
		t.Errorf("FreezeInfo %+v", info)
	}
	// Same tables and column types as the real DuckDB-format 0.2 catalog.
	air := gunzipCatalog(t, "airduck-v0.2.ducklake", dir, "")
	r := newRawDB(t, "")
	r.exec(fmt.Sprintf("ATTACH %s AS a (READ_ONLY)", sqlquote.String(air)), fmt.Sprintf("ATTACH %s AS b (READ_ONLY)", sqlquote.String(frozen)))
	q := `SELECT table_name, column_index, column_name, data_type FROM duckdb_columns() WHERE database_name = '%s' ORDER BY ALL`
	if a, b := r.strings(fmt.Sprintf(q, "a")), r.strings(fmt.Sprintf(q, "b")); !slices.Equal(a, b) {
		t.Errorf("columns differ from airduck-v0.2:\n%q\n%q", a, b)
	}
	qc := `SELECT table_name, constraint_type, constraint_column_names::VARCHAR FROM duckdb_constraints() WHERE database_name = '%s' ORDER BY ALL`
	if a, b := r.strings(fmt.Sprintf(qc, "a")), r.strings(fmt.Sprintf(qc, "b")); !slices.Equal(a, b) {
		t.Errorf("constraints differ from airduck-v0.2:\n%q\n%q", a, b)
	}
	r.close()

	back := filepath.Join(dir, "back.sqlite")
	if err := ConvertToSQLite(ctx, frozen, back); err != nil {
		t.Fatal(err)
	}
	orig, conv := sqliteDB(t, ahri, true), sqliteDB(t, back, true)
	ddl := "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
	if a, b := sqliteRows(t, orig, ddl), sqliteRows(t, conv, ddl); !slices.Equal(a, b) {
		t.Errorf("CREATE TABLE statements differ:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	idx := "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' ORDER BY name"
	if a, b := sqliteRows(t, orig, idx), sqliteRows(t, conv, idx); !slices.Equal(a, b) {
		t.Errorf("indexes differ:\n%q\n%q", a, b)
	}
	for _, row := range sqliteRows(t, orig, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") {
		name := strings.TrimPrefix(row, "string:")
		q := "SELECT * FROM " + sqlquote.Ident(name) + " ORDER BY " + strings.Join(columnNumbers(t, orig, name), ", ")
		if a, b := sqliteRows(t, orig, q), sqliteRows(t, conv, q); !slices.Equal(a, b) {
			t.Errorf("table %s differs:\n%q\n%q", name, a, b)
		}
	}
	checkSQLiteTypes(t, conv)
}

func columnNumbers(t testing.TB, db *sql.DB, table string) []string {
	n := len(sqliteRows(t, db, "SELECT name FROM pragma_table_info("+sqlquote.String(table)+")"))
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// Open reads the real SQLite catalog: the facts MANIFEST.md gives.
func TestOpenSQLite(t *testing.T) {
	ctx := context.Background()
	var rc testutil.Entry
	for _, c := range testutil.Manifest(t) {
		if c.DB == "sqlite" {
			rc = c
		}
	}
	dir := t.TempDir()
	path := gunzipCatalog(t, rc.File, dir, "")
	c, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Format() != rc.Format || c.DataPath() != rc.DataPath || c.Backend() != BackendSQLite || c.Path() != path {
		t.Errorf("format %q data_path %q backend %s path %s", c.Format(), c.DataPath(), c.Backend(), c.Path())
	}
	last, err := c.LastSnapshot(ctx)
	if err != nil || last.ID != rc.MaxSnapshot || last.Time.IsZero() {
		t.Fatalf("last snapshot %+v, %v", last, err)
	}
	if got := last.Time.UTC().Format("2006-01-02 15:04:05.000"); got != "2025-06-24 13:31:38.927" {
		t.Errorf("snapshot 4 time %s", got)
	}
	st, err := c.State(ctx, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := tableNames(st); !slices.Equal(got, rc.Tables) {
		t.Errorf("live tables %v, want %v", got, rc.Tables)
	}
	n := 0
	for _, s := range st.Schemas {
		for _, tb := range s.Tables {
			n += countColumns(tb.Columns)
		}
	}
	if n != rc.LiveColumns {
		t.Errorf("live columns %d, want %d", n, rc.LiveColumns)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{rc.File}) {
		t.Errorf("Open left files: %v", got)
	}
}

// A SQLite file that is not a DuckLake catalog, a truncated one and one
// whose -wal file is damaged each get a clear error, and nothing changes.
//
// It is one piece: one check helper and the damaged files it is run on,
// made one after the other in one folder.
func TestSQLiteRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	check := func(name, path string, want error, mention ...string) {
		t.Helper()
		state := dirState(t, filepath.Dir(path))
		_, err := Open(ctx, path)
		if !errors.Is(err, want) {
			t.Errorf("%s: Open = %v, want %v", name, err, want)
			return
		}
		if cerr := CheckSQLite(ctx, path); !errors.Is(cerr, want) {
			t.Errorf("%s: CheckSQLite = %v, want %v", name, cerr, want)
		}
		out := filepath.Join(t.TempDir(), "x.duckdb")
		_, ferr := Freeze(ctx, path, out)
		if !errors.Is(ferr, want) {
			t.Errorf("%s: Freeze = %v, want %v", name, ferr, want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: Freeze left %s", name, out)
		}
		for _, m := range append(mention, path) {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not mention %q", name, err, m)
			}
		}
		if got := dirState(t, filepath.Dir(path)); got != state {
			t.Errorf("%s: the folder changed:\n%s\n--\n%s", name, state, got)
		}
	}

	// A plain SQLite database.
	plainDir := filepath.Join(dir, "plain")
	os.Mkdir(plainDir, 0o755)
	plain := filepath.Join(plainDir, "notes.sqlite")
	pdb, err := sql.Open("sqlite3", sqliteDSN(plain, "mode=rwc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pdb.Exec("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('hi')"); err != nil {
		t.Fatal(err)
	}
	pdb.Close()
	check("plain", plain, ErrNotCatalog, "ducklake_metadata")

	// Truncated: cut at a page boundary (header says more pages) and in
	// the middle of a page.
	for _, cut := range []int64{4096 * 5, 50000, 60} {
		d := filepath.Join(dir, fmt.Sprint("cut", cut))
		os.Mkdir(d, 0o755)
		p := gunzipCatalog(t, "ahri-tre-v0.2.sqlite", d, "")
		if err := os.Truncate(p, cut); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprint("truncated at ", cut), p, ErrCorrupt, "truncated")
	}

	// converted is dltest-v04 converted to SQLite in a folder of dir named
	// name.
	converted := func(name string) string {
		p := filepath.Join(dir, name, "lake.sqlite")
		os.Mkdir(filepath.Dir(p), 0o755)
		if err := ConvertToSQLite(ctx, gunzipCatalog(t, "dltest-v04.ducklake", t.TempDir(), ""), p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A damaged index that no read of the rows touches (the primary key
	// index of an empty ducklake_delete_file): only SQLite's quick_check
	// finds it, which Freeze runs after its dumps.
	{
		p := converted("index")
		testutil.DamageSQLitePage(t, p, "sqlite_autoindex_ducklake_delete_file_1", func(page []byte) {
			page[0] = 0x07 // no such b-tree page type
		})
		// A reader has had it open (as after any fdl status): the -wal
		// and -shm files SQLite keeps beside it exist before the check.
		ro := sqliteDB(t, p, true)
		if _, err := ro.Exec("SELECT count(*) FROM sqlite_master"); err != nil {
			t.Fatal(err)
		}
		ro.Close()
		// SnapshotMarks reads the snapshots only: no quick_check.
		if marks, err := SnapshotMarks(ctx, p); err != nil || len(marks) == 0 {
			t.Errorf("damaged index: SnapshotMarks = %v, %v; want the snapshots", marks, err)
		}
		check("damaged index", p, ErrCorrupt, "quick_check")
	}

	// A row of ducklake_column cut off (its leaf page's cell count one
	// less): the layout read meets a column that is not there, and the
	// error is the damage quick_check finds, not an unsupported layout,
	// though SnapshotMarks runs no check when its reads succeed.
	{
		p := converted("cell")
		testutil.DamageSQLitePage(t, p, "ducklake_column", func(page []byte) {
			if page[0] != 0x0d {
				t.Fatalf("ducklake_column's root page is of type %#x, not a table leaf", page[0])
			}
			n := int(page[3])<<8 | int(page[4])
			page[3], page[4] = byte((n-1)>>8), byte(n-1)
		})
		if _, err := SnapshotMarks(ctx, p); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "quick_check") {
			t.Errorf("cut cell: SnapshotMarks = %v, want %v from quick_check", err, ErrCorrupt)
		}
		check("cut cell", p, ErrCorrupt, "quick_check")
	}

	// A damaged WAL: a catalog with committed transactions in its -wal
	// file (copied while a connection held it open, as after a crash).
	for _, damage := range []string{"header", "frame"} {
		d := filepath.Join(dir, "wal-"+damage)
		os.Mkdir(d, 0o755)
		p := walCatalog(t, d)
		wal, err := os.ReadFile(p + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		if damage == "header" {
			wal[12] ^= 0xff // checkpoint sequence: the header checksum fails
		} else {
			wal[walHeaderSize+walFrameHeader+100] ^= 0xff // page data of frame 1
		}
		if err := os.WriteFile(p+"-wal", wal, 0o644); err != nil {
			t.Fatal(err)
		}
		check("wal "+damage, p, ErrCorrupt, "-wal", "restore")
	}
}

// walCatalog makes dir/lake.sqlite, a SQLite catalog whose -wal file holds
// committed transactions (two inlined-insert-free snapshots written through
// SQLite), as a process that crashed or still has it open leaves it.
func walCatalog(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	src := gunzipCatalog(t, "dltest-v04.ducklake", t.TempDir(), "")
	live := filepath.Join(t.TempDir(), "lake.sqlite")
	if err := ConvertToSQLite(ctx, src, live); err != nil {
		t.Fatal(err)
	}
	holder := sqliteDB(t, live, false)
	holder.SetMaxOpenConns(1)
	if _, err := holder.Exec("PRAGMA wal_autocheckpoint = 0"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := holder.Exec(fmt.Sprintf(`INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, '2026-01-0%d 10:00:00+00', schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1;
			INSERT INTO ducklake_snapshot_changes (snapshot_id, changes_made) SELECT max(snapshot_id), 'created_schema:"s%d"' FROM ducklake_snapshot`, i+1, i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, ext := range []string{"", "-wal"} {
		b, err := os.ReadFile(live + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "lake.sqlite"+ext), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	holder.Close()
	return filepath.Join(dir, "lake.sqlite")
}

// dirState is a digest of every file under dir (names and bytes).
func dirState(t testing.TB, dir string) string {
	t.Helper()
	var parts []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			parts = append(parts, p+"="+sha256File(t, p))
		}
		return nil
	})
	return strings.Join(parts, "\n")
}

// Rows committed into the -wal file are in the frozen catalog.
func TestSQLiteWALRowsIncluded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := walCatalog(t, dir)
	if fi, err := os.Stat(p + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no WAL: %v", err)
	}
	if n, err := checkWAL(p+"-wal", 4096); err != nil || n == 0 {
		t.Fatalf("checkWAL = %d, %v", n, err)
	}
	frozen := filepath.Join(dir, "f.duckdb")
	info, err := Freeze(ctx, p, frozen)
	if err != nil {
		t.Fatal(err)
	}
	if info.Snapshot.ID != 4 || info.Snapshot.Changes != `created_schema:"s2"` {
		t.Errorf("last snapshot %+v, want 4 from the WAL", info.Snapshot)
	}
}

// The conversion reads one committed state: a snapshot committed by another
// connection while the tables are being read is in none of them.
func TestSQLiteReadIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := gunzipCatalog(t, "dltest-v04.ducklake", dir, "")
	lite := filepath.Join(dir, "lake.sqlite")
	if err := ConvertToSQLite(ctx, src, lite); err != nil {
		t.Fatal(err)
	}
	writer := sqliteDB(t, lite, false)
	wrote := 0
	testHookAfterTable = func(table string) {
		if table != "ducklake_snapshot" || wrote > 0 {
			return
		}
		wrote++
		if _, err := writer.Exec(`INSERT INTO ducklake_snapshot VALUES (2, '2026-01-01 00:00:00+00', 1, 2, 1);
			INSERT INTO ducklake_snapshot_changes (snapshot_id, changes_made) VALUES (2, 'created_schema:"x"')`); err != nil {
			t.Errorf("concurrent write: %v", err)
		}
	}
	defer func() { testHookAfterTable = nil }()
	frozen := filepath.Join(dir, "f.duckdb")
	info, err := Freeze(ctx, lite, frozen)
	if err != nil {
		t.Fatal(err)
	}
	if wrote != 1 {
		t.Fatal("the hook did not write")
	}
	r := newRawDB(t, "")
	r.exec(fmt.Sprintf("ATTACH %s AS f (READ_ONLY)", sqlquote.String(frozen)))
	snaps, changes := r.int("SELECT count(*) FROM f.ducklake_snapshot"), r.int("SELECT count(*) FROM f.ducklake_snapshot_changes")
	if snaps != 2 || changes != 2 || info.Snapshot.ID != 1 {
		t.Errorf("frozen holds %d snapshots and %d snapshot_changes rows (last %d), want the 2 committed before the read", snaps, changes, info.Snapshot.ID)
	}
	// The next read sees the write.
	testHookAfterTable = nil
	info, err = Freeze(ctx, lite, filepath.Join(dir, "g.duckdb"))
	if err != nil || info.Snapshot.ID != 2 {
		t.Errorf("second freeze: %+v, %v", info.Snapshot, err)
	}
}
