package lakewriter

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// Reserved Parquet field ids (Iceberg's, as DuckDB's multi_file_reader.hpp
// names them) that the extension writes for its own columns.
const (
	fieldIDFilename        = 2147483646 // delete file "file_path" (MultiFileReader::FILENAME_FIELD_ID)
	fieldIDOrdinal         = 2147483645 // delete file "pos" (MultiFileReader::ORDINAL_FIELD_ID)
	fieldIDRowID           = 2147483540 // "_ducklake_internal_row_id" (ROW_ID_FIELD_ID)
	fieldIDLastUpdatedSeq  = 2147483539 // "_ducklake_internal_snapshot_id" (LAST_UPDATED_SEQUENCE_NUMBER_ID)
	internalRowIDColumn    = "_ducklake_internal_row_id"
	internalSnapshotColumn = "_ducklake_internal_snapshot_id"
)

// colStats is the per-column statistics DuckDB's Parquet writer returns with
// COPY ... (RETURN_STATS), parsed like ducklake_insert.cpp ParseColumnStats.
type colStats struct {
	hasNull, hasNum, hasMin, hasMax, hasNaN bool
	nullCount, numValues, size              int64
	min, max                                string
	nan                                     bool
}

// writtenFile is one Parquet file written by COPY, with what RETURN_STATS said.
type writtenFile struct {
	path   string // local path, forward slashes
	count  int64
	size   int64
	footer int64
	stats  map[string]colStats // by top-level column name
	// rowGroups is the file's row group count, from RETURN_STATS'
	// extra_info (DuckDB 2.0; NULL when absent).
	rowGroups sql.NullInt64
}

type fieldID struct {
	name string
	id   int64
}

// copyParquet runs COPY (selectSQL) TO dir/name (FORMAT parquet, FIELD_IDS …,
// RETURN_STATS) plus extra options, creating dir first, and records the file
// for removal if the operation fails.
func (o *op) copyParquet(dir, name, selectSQL string, ids []fieldID, extra []string) (writtenFile, error) {
	if dir == "" {
		return writtenFile{}, fmt.Errorf("%w: data path %q is not a local directory", ErrUnsupportedFormat, o.w.dataPath)
	}
	if err := os.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
		return writtenFile{}, err
	}
	full := dir + name
	var fid []string
	for _, f := range ids {
		fid = append(fid, fmt.Sprintf("%s: %d", sqlquote.String(f.name), f.id))
	}
	opts := append([]string{"FORMAT parquet", "FIELD_IDS {" + strings.Join(fid, ", ") + "}"}, extra...)
	opts = append(opts, "RETURN_STATS")
	o.newFiles = append(o.newFiles, filepath.FromSlash(full))
	// DuckDB 2.0's RETURN_STATS adds extra_info MAP(VARCHAR, VARIANT)
	// (row_group_count), a type duckdb-go cannot scan: a CTE around the COPY
	// selects the columns and casts the row group count.
	q := "WITH __fdl_copy AS (COPY (" + selectSQL + ") TO " + sqlquote.String(full) + " (" + strings.Join(opts, ", ") + ")) " +
		"SELECT filename, count, file_size_bytes, footer_size_bytes, column_statistics, TRY_CAST(extra_info['row_group_count'] AS BIGINT) FROM __fdl_copy"
	var fn string
	var count, size, footer int64
	var stats any
	var rowGroups sql.NullInt64
	if err := o.queryRow(q).Scan(&fn, &count, &size, &footer, &stats, &rowGroups); err != nil {
		return writtenFile{}, fmt.Errorf("%w\nSQL: %s", err, q)
	}
	wf := writtenFile{path: full, count: count, size: size, footer: footer, stats: map[string]colStats{}, rowGroups: rowGroups}
	for _, e := range mapEntries(stats) {
		key, _ := e[0].(string)
		names, err := parseQuotedList(key)
		if err != nil || len(names) != 1 {
			continue // nested fields are not written by this package
		}
		var cs colStats
		for _, kv := range mapEntries(e[1]) {
			k, _ := kv[0].(string)
			v := fmt.Sprint(kv[1])
			switch k {
			case "min":
				cs.hasMin, cs.min = true, v
			case "max":
				cs.hasMax, cs.max = true, v
			case "null_count":
				cs.hasNull = true
				cs.nullCount, _ = strconv.ParseInt(v, 10, 64)
			case "num_values":
				cs.hasNum = true
				cs.numValues, _ = strconv.ParseInt(v, 10, 64)
			case "column_size_bytes":
				cs.size, _ = strconv.ParseInt(v, 10, 64)
			case "has_nan":
				cs.hasNaN, cs.nan = true, v == "true"
			}
		}
		wf.stats[names[0]] = cs
	}
	return wf, nil
}

// mapEntries returns the key/value pairs of a DuckDB MAP value as scanned by
// duckdb-go.
func mapEntries(v any) [][2]any {
	var out [][2]any
	switch m := v.(type) {
	case duckdb.OrderedMap:
		keys, vals := m.Keys(), m.Values()
		for i := range keys {
			out = append(out, [2]any{keys[i], vals[i]})
		}
	case *duckdb.OrderedMap:
		return mapEntries(*m)
	case duckdb.Map:
		for k, x := range m {
			out = append(out, [2]any{k, x})
		}
	case map[any]any:
		for k, x := range m {
			out = append(out, [2]any{k, x})
		}
	}
	return out
}

// parseQuotedList parses `"a"."b"` (DuckLakeUtil::ParseQuotedList with '.').
func parseQuotedList(s string) ([]string, error) {
	var out []string
	i := 0
	for i < len(s) {
		if s[i] != '"' {
			return nil, fmt.Errorf("expected quote in %q", s)
		}
		i++
		var b strings.Builder
		closed := false
		for i < len(s) {
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i += 2
					continue
				}
				i++
				closed = true
				break
			}
			b.WriteByte(s[i])
			i++
		}
		if !closed {
			return nil, fmt.Errorf("unterminated quote in %q", s)
		}
		out = append(out, b.String())
		if i < len(s) {
			if s[i] != '.' {
				return nil, fmt.Errorf("expected '.' in %q", s)
			}
			i++
		}
	}
	return out, nil
}

// dataFile is a visible ducklake_data_file row with its visible delete file.
type dataFile struct {
	id          int64
	path        string // as stored
	full        string // resolved local path
	recordCount int64
	fileSize    int64
	rowIDStart  sql.NullInt64
	begin       int64
	partialMax  sql.NullInt64 // partial_max, or parsed from 0.3 partial_file_info
	deleteID    sql.NullInt64
	deleteFull  string
	deleteBegin int64
	deleteCount int64
}

var partialMaxRE = regexp.MustCompile(`partial_max:(\d+)`)

// visibleFiles lists the data files of a table at the last snapshot, in the
// order compaction reads them (ducklake_metadata_manager.cpp
// GetFilesForCompaction: begin_snapshot, row_id_start, data_file_id).
func (o *op) visibleFiles(t tableInfo) ([]dataFile, error) {
	partial := "d.partial_max::VARCHAR"
	if !o.w.lay.dataPartialMax {
		partial = "d.partial_file_info"
	}
	rows, err := o.w.conn.QueryContext(o.ctx, fmt.Sprintf(`SELECT d.data_file_id, d.path, d.path_is_relative, d.record_count, d.file_size_bytes, d.row_id_start, d.begin_snapshot, %s,
			x.delete_file_id, x.path, x.path_is_relative, x.begin_snapshot, x.delete_count
		FROM ducklake_data_file d
		LEFT JOIN (SELECT * FROM ducklake_delete_file WHERE end_snapshot IS NULL) x ON x.data_file_id = d.data_file_id
		WHERE d.table_id = ? AND d.end_snapshot IS NULL
		ORDER BY d.begin_snapshot, d.row_id_start, d.data_file_id`, partial), t.id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []dataFile
	for rows.Next() {
		var f dataFile
		var rel, drel sql.NullBool
		var partialS, dpath sql.NullString
		var dbegin, dcount sql.NullInt64
		if err := rows.Scan(&f.id, &f.path, &rel, &f.recordCount, &f.fileSize, &f.rowIDStart, &f.begin, &partialS,
			&f.deleteID, &dpath, &drel, &dbegin, &dcount); err != nil {
			return nil, err
		}
		f.full = o.w.resolveFile(t, f.path, !rel.Valid || rel.Bool)
		if partialS.Valid {
			s := partialS.String
			if m := partialMaxRE.FindStringSubmatch(s); m != nil {
				s = m[1]
			}
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				f.partialMax = sql.NullInt64{Int64: n, Valid: true}
			} else {
				return nil, fmt.Errorf("%w: data file %d has partial_file_info %q", ErrUnsupportedFormat, f.id, partialS.String)
			}
		}
		if f.deleteID.Valid {
			f.deleteFull = o.w.resolveFile(t, dpath.String, !drel.Valid || drel.Bool)
			f.deleteBegin = dbegin.Int64
			f.deleteCount = dcount.Int64
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// resolveFile resolves a data or delete file path: relative paths are under
// the table's path (DuckLake spec: ducklake_data_file.path).
func (w *Writer) resolveFile(t tableInfo, p string, rel bool) string {
	if rel {
		return t.dataDir + p
	}
	return localDir(p)
}

// parquetFields maps field_id to column name for the top-level columns of a
// Parquet file.
func (o *op) parquetFields(path string) (map[int64]string, error) {
	rows, err := o.w.conn.QueryContext(o.ctx, "SELECT name, field_id FROM parquet_schema("+sqlquote.String(path)+") WHERE field_id IS NOT NULL")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[int64]string{}
	for rows.Next() {
		var name string
		var id int64
		if err := rows.Scan(&name, &id); err != nil {
			return nil, err
		}
		m[id] = name
	}
	return m, rows.Err()
}

// fileRows returns a SELECT over one data file that yields the target
// columns (matched by Parquet field_id = column_id, as the extension reads
// them; missing columns are the column's initial_default or NULL), plus
// __pos (file_row_number), __rowid and __snap (embedded
// _ducklake_internal_row_id / _ducklake_internal_snapshot_id, else
// row_id_start + position and begin_snapshot).
func (o *op) fileRows(f dataFile, target []column) (string, error) {
	fields, err := o.parquetFields(f.full)
	if err != nil {
		return "", err
	}
	var proj []string
	for _, c := range target {
		t, err := duckDBType(c.typ)
		if err != nil {
			return "", err
		}
		if phys, ok := fields[c.id]; ok {
			proj = append(proj, fmt.Sprintf("CAST(%s AS %s) AS %s", sqlquote.Ident(phys), t, sqlquote.Ident(c.name)))
		} else if c.initial.Valid {
			proj = append(proj, fmt.Sprintf("CAST(%s AS %s) AS %s", sqlquote.String(c.initial.String), t, sqlquote.Ident(c.name)))
		} else {
			proj = append(proj, fmt.Sprintf("CAST(NULL AS %s) AS %s", t, sqlquote.Ident(c.name)))
		}
	}
	rowID := fmt.Sprintf("(%d + file_row_number)", f.rowIDStart.Int64)
	if name, ok := fields[fieldIDRowID]; ok {
		rowID = sqlquote.Ident(name)
	} else if !f.rowIDStart.Valid {
		return "", fmt.Errorf("%w: data file %d has neither row_id_start nor %s", ErrUnsupportedFormat, f.id, internalRowIDColumn)
	}
	snap := fmt.Sprint(f.begin)
	if name, ok := fields[fieldIDLastUpdatedSeq]; ok {
		snap = sqlquote.Ident(name)
	}
	proj = append(proj, "file_row_number AS __pos", "CAST("+rowID+" AS BIGINT) AS __rowid", "CAST("+snap+" AS BIGINT) AS __snap")
	return "SELECT " + strings.Join(proj, ", ") + " FROM read_parquet(" + sqlquote.String(f.full) + ", file_row_number = true)", nil
}

// deletedPositions returns a SELECT of the positions (column pos, and snap:
// the snapshot each delete became valid) already deleted from a data file at
// the last snapshot: its delete file (embedded _ducklake_internal_snapshot_id
// or the delete file's begin_snapshot) and inlined file deletions
// (ducklake_inlined_delete_<table_id>, DuckLake 1.0 deletion inlining).
func (o *op) deletedPositions(t tableInfo, f dataFile) (string, error) {
	var parts []string
	if f.deleteID.Valid {
		fields, err := o.parquetFields(f.deleteFull)
		if err != nil {
			return "", err
		}
		snap := fmt.Sprint(f.deleteBegin)
		if _, ok := fields[fieldIDLastUpdatedSeq]; ok {
			snap = sqlquote.Ident(internalSnapshotColumn)
		}
		parts = append(parts, fmt.Sprintf("SELECT CAST(pos AS BIGINT) AS pos, CAST(%s AS BIGINT) AS snap FROM read_parquet(%s)", snap, sqlquote.String(f.deleteFull)))
	}
	inl, err := o.inlinedDeleteTable(t.id)
	if err != nil {
		return "", err
	}
	if inl != "" {
		// ducklake_inlined_delete_<id> keeps row_id and begin_snapshot in 1.1.
		parts = append(parts, fmt.Sprintf("SELECT CAST(row_id AS BIGINT) AS pos, CAST(begin_snapshot AS BIGINT) AS snap FROM %s WHERE file_id = %d", sqlquote.Ident(inl), f.id))
	}
	if len(parts) == 0 {
		return "SELECT CAST(NULL AS BIGINT) AS pos, CAST(NULL AS BIGINT) AS snap WHERE false", nil
	}
	return strings.Join(parts, " UNION ALL "), nil
}

// inlinedDeleteTable returns the name of ducklake_inlined_delete_<table_id>
// when the catalog has it (ducklake_metadata_manager.cpp
// InlinedFileDeletionTableName), else "".
func (o *op) inlinedDeleteTable(tableID int64) (string, error) {
	name := fmt.Sprintf("ducklake_inlined_delete_%d", tableID)
	var n int
	err := o.queryRow("SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main' AND table_name = ?", lakeAlias, name).Scan(&n)
	if err != nil || n == 0 {
		return "", err
	}
	return name, nil
}

// inlinedTable is one registered inlined-data table of a table.
type inlinedTable struct {
	name          string
	schemaVersion int64
	physical      []string // user column names, after the three metadata columns
	columnIDs     []int64  // column_id of each physical column
}

// inlinedTables lists the inlined-data tables registered for a table that
// exist in the file, with their user columns mapped to column ids through the
// columns the table had when the table's schema version began.
func (o *op) inlinedTables(t tableInfo) ([]inlinedTable, error) {
	rows, err := o.w.conn.QueryContext(o.ctx, "SELECT table_name, schema_version FROM ducklake_inlined_data_tables WHERE table_id = ? ORDER BY schema_version", t.id)
	if err != nil {
		return nil, err
	}
	var list []inlinedTable
	for rows.Next() {
		var it inlinedTable
		if err := rows.Scan(&it.name, &it.schemaVersion); err != nil {
			rows.Close()
			return nil, err
		}
		list = append(list, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []inlinedTable
	for _, it := range list {
		cols, err := o.physicalColumns(it.name)
		if err != nil {
			return nil, err
		}
		if cols == nil {
			continue // registered but dropped
		}
		if len(cols) < 3 {
			return nil, fmt.Errorf("%w: inlined table %s has %d columns", ErrUnsupportedFormat, it.name, len(cols))
		}
		it.physical = cols[3:]
		begin, err := o.schemaVersionBegin(t.id, it.schemaVersion)
		if err != nil {
			return nil, err
		}
		at, err := o.columnsAt(t.id, begin)
		if err != nil {
			return nil, err
		}
		if len(at) != len(it.physical) {
			return nil, fmt.Errorf("%w: inlined table %s has %d user columns, table %d had %d at snapshot %d", ErrUnsupportedFormat, it.name, len(it.physical), t.id, len(at), begin)
		}
		for _, c := range at {
			it.columnIDs = append(it.columnIDs, c.id)
		}
		out = append(out, it)
	}
	return out, nil
}

// physicalColumns returns the column names of a table in the catalog file,
// or nil when it does not exist.
func (o *op) physicalColumns(table string) ([]string, error) {
	rows, err := o.w.conn.QueryContext(o.ctx, "SELECT column_name FROM duckdb_columns() WHERE database_name = ? AND schema_name = 'main' AND table_name = ? ORDER BY column_index", lakeAlias, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// schemaVersionBegin returns the first snapshot of a table's schema version:
// its ducklake_schema_versions row (0.4: per table), else the first snapshot
// with that schema_version.
func (o *op) schemaVersionBegin(tableID, version int64) (int64, error) {
	q := "SELECT min(begin_snapshot) FROM ducklake_schema_versions WHERE schema_version = ?"
	args := []any{version}
	if o.w.lay.schemaVersionsTableID {
		q += " AND table_id = ?"
		args = append(args, tableID)
	}
	var b sql.NullInt64
	if err := o.queryRow(q, args...).Scan(&b); err != nil {
		return 0, err
	}
	if b.Valid {
		return b.Int64, nil
	}
	if err := o.queryRow("SELECT min(snapshot_id) FROM ducklake_snapshot WHERE schema_version = ?", version).Scan(&b); err != nil {
		return 0, err
	}
	if b.Valid {
		return b.Int64, nil
	}
	if version == o.schemaVersion {
		return o.id, nil
	}
	return 0, fmt.Errorf("%w: no snapshot has schema version %d", ErrUnsupportedFormat, version)
}

// inlinedRows returns a SELECT over the visible rows of an inlined table
// that yields the target columns (by column id) plus __rowid and __snap.
func (o *op) inlinedRows(it inlinedTable, target []column) (string, error) {
	var proj []string
	for _, c := range target {
		t, err := duckDBType(c.typ)
		if err != nil {
			return "", err
		}
		expr := "NULL"
		if c.initial.Valid {
			expr = sqlquote.String(c.initial.String)
		}
		for i, id := range it.columnIDs {
			if id == c.id {
				expr = sqlquote.Ident(it.physical[i])
			}
		}
		proj = append(proj, fmt.Sprintf("CAST(%s AS %s) AS %s", expr, t, sqlquote.Ident(c.name)))
	}
	n := o.w.lay.inl
	proj = append(proj, sqlquote.Ident(n.rowID)+" AS __rowid", sqlquote.Ident(n.begin)+" AS __snap")
	return "SELECT " + strings.Join(proj, ", ") + " FROM " + sqlquote.Ident(it.name) + " WHERE " + sqlquote.Ident(n.end) + " IS NULL", nil
}
