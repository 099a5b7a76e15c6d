package lakewriter

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil"
)

// realCatalog gunzips a test catalog into a temporary folder.
func realCatalog(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	testutil.Gunzip(t, name, dst)
	return dst
}

// roCatalog opens a catalog read-only with plain DuckDB (no lakewriter code).
func roCatalog(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("ATTACH " + sqlquote.String(path) + " AS cat (READ_ONLY); USE cat"); err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func queryStrings(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%v\nSQL: %s", err, q)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			if v.Valid {
				row[i] = v.String
			} else {
				row[i] = "NULL"
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func queryInt(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%v\nSQL: %s", err, q)
	}
	return n.Int64
}

func hasTable(t *testing.T, db *sql.DB, name string) bool {
	return queryInt(t, db, "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'cat' AND table_name = ?", name) > 0
}

func hasColumn(t *testing.T, db *sql.DB, table, col string) bool {
	return queryInt(t, db, "SELECT count(*) FROM duckdb_columns() WHERE database_name = 'cat' AND table_name = ? AND column_name = ?", table, col) > 0
}

// checkInvariants checks the catalog invariants of docs/spec.md §5.1 with plain
// SQL: snapshot ids without gaps, every closed row has end_snapshot >
// begin_snapshot, the last snapshot's counters exceed every id used, and
// references between schemas, tables, columns and files hold. Data and
// delete files with begin_snapshot >= fromSnapshot must exist on disk as
// Parquet files with record_count / delete_count rows (older files of real
// catalogs are not in testdata).
//
// It is one piece: one list of invariants, each a query or two over the
// same read-only connection to the catalog.
func checkInvariants(t *testing.T, catalog string, fromSnapshot int64) {
	t.Helper()
	db := roCatalog(t, catalog)
	n := queryInt(t, db, "SELECT count(*) FROM ducklake_snapshot")
	mx := queryInt(t, db, "SELECT max(snapshot_id) FROM ducklake_snapshot")
	mn := queryInt(t, db, "SELECT min(snapshot_id) FROM ducklake_snapshot")
	if mn != 0 || mx != n-1 {
		t.Errorf("snapshot ids have gaps: min %d max %d count %d", mn, mx, n)
	}
	if c := queryInt(t, db, "SELECT count(*) FROM ducklake_snapshot s LEFT JOIN ducklake_snapshot_changes c USING (snapshot_id) WHERE c.snapshot_id IS NULL"); c != 0 {
		t.Errorf("%d snapshots without ducklake_snapshot_changes", c)
	}
	if c := queryInt(t, db, "SELECT count(*) FROM (SELECT schema_version < lag(schema_version) OVER (ORDER BY snapshot_id) AS dec FROM ducklake_snapshot) WHERE dec"); c != 0 {
		t.Errorf("schema_version decreases %d times", c)
	}
	// closed rows, in every table with begin/end snapshots (inlined tables too)
	for _, r := range queryStrings(t, db, `SELECT table_name FROM duckdb_columns() WHERE database_name = 'cat' AND column_name = 'end_snapshot'
		INTERSECT SELECT table_name FROM duckdb_columns() WHERE database_name = 'cat' AND column_name = 'begin_snapshot'`) {
		if c := queryInt(t, db, fmt.Sprintf("SELECT count(*) FROM %s WHERE end_snapshot IS NOT NULL AND NOT (end_snapshot > begin_snapshot)", sqlquote.Ident(r[0]))); c != 0 {
			t.Errorf("%s: %d closed rows with end_snapshot <= begin_snapshot", r[0], c)
		}
		if c := queryInt(t, db, fmt.Sprintf("SELECT count(*) FROM %s WHERE begin_snapshot > %d OR end_snapshot > %d", sqlquote.Ident(r[0]), mx, mx)); c != 0 {
			t.Errorf("%s: %d rows refer to snapshots after the last one", r[0], c)
		}
	}
	var nextCatalog, nextFile int64
	if err := db.QueryRow("SELECT next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = ?", mx).Scan(&nextCatalog, &nextFile); err != nil {
		t.Fatal(err)
	}
	maxCatalog := queryInt(t, db, `SELECT max(id) FROM (SELECT schema_id AS id FROM ducklake_schema UNION ALL SELECT table_id FROM ducklake_table
		UNION ALL SELECT view_id FROM ducklake_view UNION ALL SELECT partition_id FROM ducklake_partition_info)`)
	if maxCatalog >= nextCatalog {
		t.Errorf("next_catalog_id %d does not exceed used id %d", nextCatalog, maxCatalog)
	}
	maxFile := queryInt(t, db, `SELECT max(id) FROM (SELECT data_file_id AS id FROM ducklake_data_file UNION ALL SELECT delete_file_id FROM ducklake_delete_file
		UNION ALL SELECT data_file_id FROM ducklake_files_scheduled_for_deletion)`)
	if queryInt(t, db, "SELECT count(*) FROM ducklake_data_file")+queryInt(t, db, "SELECT count(*) FROM ducklake_delete_file") > 0 && maxFile >= nextFile {
		t.Errorf("next_file_id %d does not exceed used id %d", nextFile, maxFile)
	}
	// counters never go back
	if c := queryInt(t, db, `SELECT count(*) FROM (SELECT next_catalog_id < lag(next_catalog_id) OVER w OR next_file_id < lag(next_file_id) OVER w AS dec
		FROM ducklake_snapshot WINDOW w AS (ORDER BY snapshot_id)) WHERE dec`); c != 0 {
		t.Errorf("counters decrease %d times", c)
	}
	// references
	for _, q := range []string{
		"SELECT count(*) FROM ducklake_table t WHERE NOT EXISTS (SELECT 1 FROM ducklake_schema s WHERE s.schema_id = t.schema_id AND s.begin_snapshot <= t.begin_snapshot)",
		"SELECT count(*) FROM ducklake_column c WHERE NOT EXISTS (SELECT 1 FROM ducklake_table t WHERE t.table_id = c.table_id)",
		"SELECT count(*) FROM ducklake_data_file d WHERE NOT EXISTS (SELECT 1 FROM ducklake_table t WHERE t.table_id = d.table_id)",
		"SELECT count(*) FROM ducklake_delete_file x WHERE NOT EXISTS (SELECT 1 FROM ducklake_data_file d WHERE d.data_file_id = x.data_file_id)",
		"SELECT count(*) FROM ducklake_view v WHERE NOT EXISTS (SELECT 1 FROM ducklake_schema s WHERE s.schema_id = v.schema_id)",
		"SELECT count(*) FROM ducklake_inlined_data_tables i WHERE NOT EXISTS (SELECT 1 FROM ducklake_table t WHERE t.table_id = i.table_id)",
		// one visible delete file per data file at every snapshot
		`SELECT count(*) FROM ducklake_snapshot s, ducklake_data_file d WHERE (SELECT count(*) FROM ducklake_delete_file x WHERE x.data_file_id = d.data_file_id
			AND x.begin_snapshot <= s.snapshot_id AND (x.end_snapshot IS NULL OR s.snapshot_id < x.end_snapshot)) > 1`,
		// a table name is used once per schema at every snapshot
		`SELECT count(*) FROM (SELECT s.snapshot_id, t.schema_id, t.table_name FROM ducklake_snapshot s, ducklake_table t
			WHERE t.begin_snapshot <= s.snapshot_id AND (t.end_snapshot IS NULL OR s.snapshot_id < t.end_snapshot)
			GROUP BY ALL HAVING count(*) > 1)`,
	} {
		if c := queryInt(t, db, q); c != 0 {
			t.Errorf("%d rows violate: %s", c, q)
		}
	}
	// files on disk
	dataDir := resolveDataDir(catalog, queryStrings(t, db, "SELECT value FROM ducklake_metadata WHERE key = 'data_path'")[0][0])
	for _, kind := range []struct{ table, idCol, countCol string }{
		{"ducklake_data_file", "data_file_id", "record_count"},
		{"ducklake_delete_file", "delete_file_id", "delete_count"},
	} {
		rows := queryStrings(t, db, fmt.Sprintf(`SELECT f.%s, f.path, f.path_is_relative, f.%s, t.path, t.path_is_relative, s.path, s.path_is_relative
			FROM %s f JOIN (SELECT DISTINCT ON (table_id) * FROM ducklake_table ORDER BY table_id, begin_snapshot) t USING (table_id)
			JOIN (SELECT DISTINCT ON (schema_id) * FROM ducklake_schema ORDER BY schema_id, begin_snapshot) s ON s.schema_id = t.schema_id
			WHERE f.begin_snapshot >= %d`, kind.idCol, kind.countCol, kind.table, fromSnapshot))
		for _, r := range rows {
			full := joinLakePath(dataDir, r[6], r[7], r[4], r[5], r[1], r[2])
			if _, err := os.Stat(filepath.FromSlash(full)); err != nil {
				t.Errorf("%s %s: %v", kind.table, r[0], err)
				continue
			}
			got := queryInt(t, db, "SELECT count(*) FROM read_parquet("+sqlquote.String(full)+")")
			if fmt.Sprint(got) != r[3] {
				t.Errorf("%s %s: %s has %d rows, catalog says %s", kind.table, r[0], full, got, r[3])
			}
		}
	}
	// scheduled files still exist (the extension deletes them on cleanup only)
	for _, r := range queryStrings(t, db, "SELECT data_file_id, path, path_is_relative FROM ducklake_files_scheduled_for_deletion WHERE schedule_start >= (SELECT snapshot_time FROM ducklake_snapshot WHERE snapshot_id = ?)", fromSnapshot) {
		full := r[1]
		if r[2] == "true" {
			full = dataDir + r[1]
		}
		if _, err := os.Stat(filepath.FromSlash(full)); err != nil {
			t.Errorf("scheduled file %s: %v", r[0], err)
		}
	}
}

func joinLakePath(dataDir, schemaPath, schemaRel, tablePath, tableRel, filePath, fileRel string) string {
	if fileRel != "true" {
		return filePath
	}
	base := ""
	switch {
	case tablePath == "NULL":
		base = ""
	case tableRel != "true":
		return tablePath + filePath
	default:
		base = tablePath
	}
	switch {
	case schemaPath == "NULL":
		return dataDir + base + filePath
	case schemaRel != "true":
		return schemaPath + base + filePath
	default:
		return dataDir + schemaPath + base + filePath
	}
}

// readTable reads the rows of schema.table visible at snapshot snap with
// plain DuckDB (read_parquet of the visible files minus their deletes, plus
// visible inlined rows), independently of the package's own readers. Each row
// is its values cast to VARCHAR and joined by "|", in the column order of the
// table at that snapshot; the result is sorted. ok is false when the table
// does not exist at that snapshot.
//
// It is one piece: one query assembled from the catalog's own rows (the
// table, its columns at the snapshot, its data files, its inlined rows),
// apart from the package's readers so that a fault in them cannot hide
// here.
func readTable(t *testing.T, catalog, schema, table string, snap int64) (rows []string, ok bool) {
	t.Helper()
	db := roCatalog(t, catalog)
	vis := func(alias string) string {
		return fmt.Sprintf("(%[1]s.begin_snapshot <= %[2]d AND (%[1]s.end_snapshot IS NULL OR %[2]d < %[1]s.end_snapshot))", alias, snap)
	}
	tinfo := queryStrings(t, db, fmt.Sprintf(`SELECT t.table_id, t.path, t.path_is_relative, s.path, s.path_is_relative FROM ducklake_table t JOIN ducklake_schema s USING (schema_id)
		WHERE %s AND %s AND s.schema_name = ? AND t.table_name = ?`, vis("t"), vis("s")), schema, table)
	if len(tinfo) == 0 {
		return nil, false
	}
	tid := tinfo[0][0]
	dataDir := resolveDataDir(catalog, queryStrings(t, db, "SELECT value FROM ducklake_metadata WHERE key = 'data_path'")[0][0])
	cols := queryStrings(t, db, fmt.Sprintf("SELECT column_id, column_name, column_type FROM ducklake_column c WHERE table_id = %s AND parent_column IS NULL AND %s ORDER BY column_order", tid, vis("c")))
	var selects []string
	// data files
	files := queryStrings(t, db, fmt.Sprintf("SELECT data_file_id, path, path_is_relative FROM ducklake_data_file d WHERE table_id = %s AND %s", tid, vis("d")))
	for _, f := range files {
		full := joinLakePath(dataDir, tinfo[0][3], tinfo[0][4], tinfo[0][1], tinfo[0][2], f[1], f[2])
		fields := map[string]string{}
		for _, r := range queryStrings(t, db, "SELECT field_id, name FROM parquet_schema("+sqlquote.String(full)+") WHERE field_id IS NOT NULL") {
			fields[r[0]] = r[1]
		}
		var proj []string
		for _, c := range cols {
			if n, ok := fields[c[0]]; ok {
				proj = append(proj, "CAST("+sqlquote.Ident(n)+" AS VARCHAR)")
			} else {
				proj = append(proj, "'NULL'")
			}
		}
		where := "true"
		if n, ok := fields[fmt.Sprint(fieldIDLastUpdatedSeq)]; ok {
			where = fmt.Sprintf("%s <= %d", sqlquote.Ident(n), snap)
		}
		dels := queryStrings(t, db, fmt.Sprintf("SELECT x.path, x.path_is_relative FROM ducklake_delete_file x WHERE data_file_id = %s AND %s", f[0], vis("x")))
		for _, d := range dels {
			dfull := joinLakePath(dataDir, tinfo[0][3], tinfo[0][4], tinfo[0][1], tinfo[0][2], d[0], d[1])
			dsnap := "true"
			if queryInt(t, db, "SELECT count(*) FROM parquet_schema("+sqlquote.String(dfull)+") WHERE name = '_ducklake_internal_snapshot_id'") > 0 {
				dsnap = fmt.Sprintf("_ducklake_internal_snapshot_id <= %d", snap)
			}
			where += fmt.Sprintf(" AND file_row_number NOT IN (SELECT pos FROM read_parquet(%s) WHERE %s)", sqlquote.String(dfull), dsnap)
		}
		selects = append(selects, fmt.Sprintf("SELECT concat_ws('|', %s) AS r FROM read_parquet(%s, file_row_number = true) WHERE %s",
			strings.Join(coalesceNull(proj), ", "), sqlquote.String(full), where))
	}
	// inlined rows: columns matched by position with the table's columns at
	// the start of the inlined table's schema version
	for _, it := range queryStrings(t, db, fmt.Sprintf("SELECT table_name, schema_version FROM ducklake_inlined_data_tables WHERE table_id = %s", tid)) {
		if !hasTable(t, db, it[0]) {
			continue
		}
		var begin int64
		if hasColumn(t, db, "ducklake_schema_versions", "table_id") {
			begin = queryInt(t, db, "SELECT min(begin_snapshot) FROM ducklake_schema_versions WHERE table_id = "+tid+" AND schema_version = "+it[1])
		} else {
			begin = queryInt(t, db, "SELECT min(begin_snapshot) FROM ducklake_schema_versions WHERE schema_version = "+it[1])
		}
		if begin == 0 {
			begin = queryInt(t, db, "SELECT min(snapshot_id) FROM ducklake_snapshot WHERE schema_version = "+it[1])
		}
		atCols := queryStrings(t, db, fmt.Sprintf("SELECT column_id FROM ducklake_column c WHERE table_id = %s AND parent_column IS NULL AND begin_snapshot <= %d AND (end_snapshot IS NULL OR end_snapshot > %d) ORDER BY column_order", tid, begin, begin))
		all := queryStrings(t, db, "SELECT column_name FROM duckdb_columns() WHERE database_name = 'cat' AND table_name = ? ORDER BY column_index", it[0])
		phys := all[3:]
		var proj []string
		for _, c := range cols {
			expr := "'NULL'"
			for i, a := range atCols {
				if a[0] == c[0] {
					expr = "CAST(" + sqlquote.Ident(phys[i][0]) + " AS VARCHAR)"
				}
			}
			proj = append(proj, expr)
		}
		// the metadata columns are the 2nd and 3rd (named with "_ducklake_" from 1.1 on)
		ivis := fmt.Sprintf("(%[1]s <= %[3]d AND (%[2]s IS NULL OR %[3]d < %[2]s))", sqlquote.Ident(all[1][0]), sqlquote.Ident(all[2][0]), snap)
		selects = append(selects, fmt.Sprintf("SELECT concat_ws('|', %s) AS r FROM %s i WHERE %s", strings.Join(coalesceNull(proj), ", "), sqlquote.Ident(it[0]), ivis))
	}
	if len(selects) == 0 {
		return []string{}, true
	}
	for _, r := range queryStrings(t, db, strings.Join(selects, " UNION ALL ")) {
		rows = append(rows, r[0])
	}
	sort.Strings(rows)
	if rows == nil {
		rows = []string{}
	}
	return rows, true
}

func coalesceNull(exprs []string) []string {
	out := make([]string, len(exprs))
	for i, e := range exprs {
		out[i] = "coalesce(" + e + ", 'NULL')"
	}
	return out
}

// model is a plain DuckDB database receiving the same changes as the lake,
// to compare the lake's visible rows with.
type model struct {
	t  *testing.T
	db *sql.DB
}

func newModel(t *testing.T) *model {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return &model{t: t, db: db}
}

func (m *model) exec(q string) {
	m.t.Helper()
	if _, err := m.db.Exec(q); err != nil {
		m.t.Fatalf("model: %v\nSQL: %s", err, q)
	}
}

func (m *model) rows(table string) []string {
	m.t.Helper()
	cols := queryStrings(m.t, m.db, "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index", table)
	var proj []string
	for _, c := range cols {
		proj = append(proj, "CAST("+sqlquote.Ident(c[0])+" AS VARCHAR)")
	}
	var out []string
	for _, r := range queryStrings(m.t, m.db, "SELECT concat_ws('|', "+strings.Join(coalesceNull(proj), ", ")+") FROM "+sqlquote.Ident(table)) {
		out = append(out, r[0])
	}
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func mustNoWAL(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path + ".wal"); err == nil {
		t.Errorf("%s.wal exists", path)
	}
}

var bg = context.Background()
