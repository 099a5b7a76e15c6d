package lakewriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// queryColumns returns the output column names of a SELECT.
func (o *op) queryColumns(query string) ([]string, error) {
	rows, err := o.w.conn.QueryContext(o.ctx, "SELECT * FROM ("+query+") AS __q LIMIT 0")
	if err != nil {
		return nil, fmt.Errorf("%w: query: %v", ErrInvalid, err)
	}
	defer rows.Close()
	return rows.Columns()
}

func trimQuery(q string) string {
	return strings.TrimRight(strings.TrimSpace(q), "; \t\n")
}

// insertProjection maps the query's columns to the table's columns by name
// (case-insensitively, as DuckDB resolves identifiers; INSERT … BY NAME),
// casting to each column's type; columns the query lacks are NULL.
func (o *op) insertProjection(query string, cols []column) (string, error) {
	qcols, err := o.queryColumns(query)
	if err != nil {
		return "", err
	}
	used := map[string]string{}
	for _, q := range qcols {
		found := false
		for _, c := range cols {
			if strings.EqualFold(q, c.name) {
				if _, dup := used[c.name]; dup {
					return "", fmt.Errorf("%w: query has column %q twice", ErrInvalid, q)
				}
				used[c.name] = q
				found = true
			}
		}
		if !found {
			return "", fmt.Errorf("%w: query column %q is not a column of the table", ErrInvalid, q)
		}
	}
	var proj []string
	for _, c := range cols {
		t, err := duckDBType(c.typ)
		if err != nil {
			return "", err
		}
		if q, ok := used[c.name]; ok {
			proj = append(proj, fmt.Sprintf("CAST(__q.%s AS %s) AS %s", sqlquote.Ident(q), t, sqlquote.Ident(c.name)))
		} else {
			proj = append(proj, fmt.Sprintf("CAST(NULL AS %s) AS %s", t, sqlquote.Ident(c.name)))
		}
	}
	return "SELECT " + strings.Join(proj, ", ") + " FROM (" + query + ") AS __q", nil
}

// parquetOptions returns the COPY options the extension adds from
// ducklake_metadata settings (ducklake_insert.cpp GetCopyOptions).
func (o *op) parquetOptions(t tableInfo) ([]string, error) {
	opts := []string{"GEOPARQUET_VERSION 'NONE'"}
	for _, e := range []struct{ key, opt string }{
		{"parquet_compression", "COMPRESSION"},
		{"parquet_version", "PARQUET_VERSION"},
		{"parquet_compression_level", "COMPRESSION_LEVEL"},
		{"parquet_row_group_size", "ROW_GROUP_SIZE"},
		{"parquet_row_group_size_bytes", "ROW_GROUP_SIZE_BYTES"},
	} {
		v, ok, err := o.option(e.key, t.schema.id, t.id)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if e.key == "parquet_row_group_size_bytes" {
			v += " bytes"
		}
		opts = append(opts, e.opt+" "+sqlquote.String(v))
	}
	return opts, nil
}

func fieldIDs(cols []column) []fieldID {
	out := make([]fieldID, len(cols))
	for i, c := range cols {
		out[i] = fieldID{c.name, c.id}
	}
	return out
}

// registerDataFile writes the ducklake_data_file row and the
// ducklake_file_column_stats rows of a new data file
// (ducklake_metadata_manager.cpp WriteNewDataFiles): the path relative to the
// table's path, file_format 'parquet', footer_size, value_count =
// num_values - null_count, contains_nan only for floating point columns.
func (o *op) registerDataFile(t tableInfo, cols []column, f writtenFile, begin int64, rowIDStart, partialMax sql.NullInt64) (int64, error) {
	id := o.newFileID()
	p, rel := relTo(f.path, t.dataDir)
	partialCol, partialVal := "partial_max", nullInt(partialMax)
	if !o.w.lay.dataPartialMax {
		partialCol, partialVal = "partial_file_info", "NULL"
		if partialMax.Valid {
			partialVal = sqlquote.String(fmt.Sprintf("partial_max:%d", partialMax.Int64))
		}
	}
	if o.w.lay.rowGroupCount {
		partialCol += ", row_group_count"
		partialVal += ", " + nullInt(f.rowGroups)
	}
	if err := o.exec(fmt.Sprintf(`INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, end_snapshot, file_order, path, path_is_relative, file_format, record_count, file_size_bytes, footer_size, row_id_start, partition_id, encryption_key, mapping_id, %s)
		VALUES (%d, %d, %d, NULL, NULL, %s, %t, 'parquet', %d, %d, %d, %s, NULL, NULL, NULL, %s)`,
		partialCol, id, t.id, begin, sqlquote.String(p), rel, f.count, f.size, f.footer, nullInt(rowIDStart), partialVal)); err != nil {
		return 0, err
	}
	for _, c := range cols {
		s, ok := f.stats[c.name]
		if !ok {
			continue
		}
		valueCount, nullCount := "NULL", "NULL"
		if s.hasNull && s.hasNum && s.nullCount <= s.numValues {
			valueCount, nullCount = fmt.Sprint(s.numValues-s.nullCount), fmt.Sprint(s.nullCount)
		}
		nan := "NULL"
		if s.hasNaN {
			nan = fmt.Sprint(s.nan)
		}
		if err := o.exec(fmt.Sprintf(`INSERT INTO ducklake_file_column_stats (data_file_id, table_id, column_id, column_size_bytes, value_count, null_count, min_value, max_value, contains_nan)
			VALUES (%d, %d, %d, %d, %s, %s, %s, %s, %s)`,
			id, t.id, c.id, s.size, valueCount, nullCount, strOrNull(s.hasMin, s.min), strOrNull(s.hasMax, s.max), nan)); err != nil {
			return 0, err
		}
	}
	return id, nil
}

func strOrNull(ok bool, s string) string {
	if !ok {
		return "NULL"
	}
	return sqlquote.String(s)
}

// checkNotNull refuses NULLs written to NOT NULL columns, as
// ducklake_insert.cpp AddWrittenFiles does ("NOT NULL constraint failed").
func checkNotNull(t tableInfo, cols []column, stats map[string]colStats) error {
	for _, c := range cols {
		if s, ok := stats[c.name]; ok && !c.nullable && s.hasNull && s.nullCount > 0 {
			return fmt.Errorf("%w: NOT NULL constraint failed: %s.%s", ErrInvalid, sqlquote.Ident(t.name), sqlquote.Ident(c.name))
		}
	}
	return nil
}

// tableStats is a ducklake_table_stats row.
type tableStats struct {
	exists                         bool
	recordCount, nextRowID, fsSize int64
}

func (o *op) tableStats(tableID int64) (tableStats, error) {
	var s tableStats
	var rc, nr, fs sql.NullInt64
	err := o.queryRow("SELECT record_count, next_row_id, file_size_bytes FROM ducklake_table_stats WHERE table_id = ?", tableID).Scan(&rc, &nr, &fs)
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	return tableStats{exists: true, recordCount: rc.Int64, nextRowID: nr.Int64, fsSize: fs.Int64}, nil
}

// globalColStats is a ducklake_table_column_stats row in memory.
type globalColStats struct {
	nullKnown, containsNull bool
	nanKnown, containsNaN   bool
	hasMin, hasMax          bool
	min, max                string
}

func fromFileStats(s colStats) globalColStats {
	g := globalColStats{hasMin: s.hasMin, min: s.min, hasMax: s.hasMax, max: s.max}
	if s.hasNull {
		g.nullKnown, g.containsNull = true, s.nullCount > 0
	}
	if s.hasNaN {
		g.nanKnown, g.containsNaN = true, s.nan
	}
	return g
}

// merge combines two statistics as DuckLakeColumnStats::MergeStats does:
// contains_null / contains_nan are ORed, min and max compared as values of
// the column's type.
func (o *op) merge(typ string, a, b globalColStats) (globalColStats, error) {
	r := globalColStats{
		nullKnown: a.nullKnown || b.nullKnown, containsNull: a.containsNull || b.containsNull,
		nanKnown: a.nanKnown || b.nanKnown, containsNaN: a.containsNaN || b.containsNaN,
	}
	var err error
	r.hasMin, r.min, err = o.pick(typ, a.hasMin, a.min, b.hasMin, b.min, true)
	if err != nil {
		return r, err
	}
	r.hasMax, r.max, err = o.pick(typ, a.hasMax, a.max, b.hasMax, b.max, false)
	return r, err
}

func (o *op) pick(typ string, okA bool, a string, okB bool, b string, wantMin bool) (bool, string, error) {
	if !okA || !okB {
		if okA {
			return true, a, nil
		}
		return okB, b, nil
	}
	t, err := duckDBType(typ)
	if err != nil {
		return false, "", err
	}
	cmp := "<="
	if !wantMin {
		cmp = ">="
	}
	var aWins sql.NullBool
	if err := o.queryRow(fmt.Sprintf("SELECT TRY_CAST(? AS %s) %s TRY_CAST(? AS %s)", t, cmp, t), a, b).Scan(&aWins); err != nil {
		return false, "", err
	}
	if !aWins.Valid || aWins.Bool {
		return true, a, nil
	}
	return true, b, nil
}

func boolOrNull(known, v bool) string {
	if !known {
		return "NULL"
	}
	return fmt.Sprint(v)
}

// addTableStats folds new rows into ducklake_table_stats and
// ducklake_table_column_stats (ducklake_transaction_state.cpp GetNewDataFiles,
// ducklake_metadata_manager.cpp UpdateGlobalTableStatsSql): the first time a
// row is INSERTed for the table and one per column with statistics; after
// that the rows are UPDATEd (a column without a row, e.g. added later, stays
// without one, as in the extension).
func (o *op) addTableStats(t tableInfo, cols []column, st tableStats, records, size int64, stats map[int64]globalColStats) error {
	if !st.exists {
		if err := o.exec(fmt.Sprintf("INSERT INTO ducklake_table_stats (table_id, record_count, next_row_id, file_size_bytes) VALUES (%d, %d, %d, %d)",
			t.id, records, records, size)); err != nil {
			return err
		}
		for _, c := range cols {
			g, ok := stats[c.id]
			if !ok {
				continue
			}
			if err := o.exec(fmt.Sprintf("INSERT INTO ducklake_table_column_stats (table_id, column_id, contains_null, contains_nan, min_value, max_value) VALUES (%d, %d, %s, %s, %s, %s)",
				t.id, c.id, boolOrNull(g.nullKnown, g.containsNull), boolOrNull(g.nanKnown, g.containsNaN), strOrNull(g.hasMin, g.min), strOrNull(g.hasMax, g.max))); err != nil {
				return err
			}
		}
		return nil
	}
	if err := o.exec(fmt.Sprintf("UPDATE ducklake_table_stats SET record_count = %d, file_size_bytes = %d, next_row_id = %d WHERE table_id = %d",
		st.recordCount+records, st.fsSize+size, st.nextRowID+records, t.id)); err != nil {
		return err
	}
	for _, c := range cols {
		g, ok := stats[c.id]
		if !ok {
			continue
		}
		old, found, err := o.globalColumnStats(t.id, c.id)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		m, err := o.merge(c.typ, old, g)
		if err != nil {
			return err
		}
		if err := o.setGlobalColumnStats(t.id, c.id, m); err != nil {
			return err
		}
	}
	return nil
}

func (o *op) globalColumnStats(tableID, columnID int64) (globalColStats, bool, error) {
	var cn, cnan sql.NullBool
	var mn, mx sql.NullString
	err := o.queryRow("SELECT contains_null, contains_nan, min_value, max_value FROM ducklake_table_column_stats WHERE table_id = ? AND column_id = ?", tableID, columnID).Scan(&cn, &cnan, &mn, &mx)
	if errors.Is(err, sql.ErrNoRows) {
		return globalColStats{}, false, nil
	}
	if err != nil {
		return globalColStats{}, false, err
	}
	return globalColStats{nullKnown: cn.Valid, containsNull: cn.Bool, nanKnown: cnan.Valid, containsNaN: cnan.Bool,
		hasMin: mn.Valid, min: mn.String, hasMax: mx.Valid, max: mx.String}, true, nil
}

func (o *op) setGlobalColumnStats(tableID, columnID int64, g globalColStats) error {
	return o.exec(fmt.Sprintf("UPDATE ducklake_table_column_stats SET contains_null = CAST(%s AS BOOLEAN), contains_nan = CAST(%s AS BOOLEAN), min_value = %s, max_value = %s WHERE table_id = %d AND column_id = %d",
		boolOrNull(g.nullKnown, g.containsNull), boolOrNull(g.nanKnown, g.containsNaN), strOrNull(g.hasMin, g.min), strOrNull(g.hasMax, g.max), tableID, columnID))
}

// Insert appends the rows of query (a DuckDB SELECT; its columns are matched
// to the table's by name, missing ones are NULL) to a table in one snapshot.
// The query runs in the Writer's own DuckDB session, whose default database
// is the catalog file (read other data with read_parquet, range, VALUES, …).
// The rows are written as one Parquet file: COPY … TO '<table folder>/ducklake-<uuidv7>.parquet'
// (FORMAT parquet, FIELD_IDS {column: column_id}, RETURN_STATS), where the
// table folder is data_path + schema path + table path (ducklake_insert.cpp
// GetCopyOptions; parquet_* options of ducklake_metadata are honoured). The
// file is registered in ducklake_data_file (row_id_start = the table's
// next_row_id, path relative to the table path), its statistics in
// ducklake_file_column_stats, and ducklake_table_stats /
// ducklake_table_column_stats are updated; changes_made is
// `inserted_into_table:<id>`. Unlike the extension, which rotates files at
// target_file_size, it always writes one file.
// Errors: ErrNotFound, ErrInvalid (bad query, unknown column, NULL in a NOT
// NULL column), ErrNoChange (no rows), ErrUnsupportedFormat (data path not
// local).
func (w *Writer) Insert(ctx context.Context, schema, table, query string) error {
	return w.runOnColumns(ctx, fmt.Sprintf("insert into %q.%q", schema, table), schema, table, func(o *op, t tableInfo, cols []column) error {
		sel, err := o.insertProjection(trimQuery(query), cols)
		if err != nil {
			return err
		}
		opts, err := o.parquetOptions(t)
		if err != nil {
			return err
		}
		uuid, err := o.uuidv7()
		if err != nil {
			return err
		}
		f, err := o.copyParquet(t.dataDir, "ducklake-"+uuid+".parquet", sel, fieldIDs(cols), opts)
		if err != nil {
			return err
		}
		if f.count == 0 {
			return fmt.Errorf("%w: the query returned no rows", ErrNoChange)
		}
		if err := checkNotNull(t, cols, f.stats); err != nil {
			return err
		}
		st, err := o.tableStats(t.id)
		if err != nil {
			return err
		}
		start := sql.NullInt64{Int64: st.nextRowID, Valid: true}
		if _, err := o.registerDataFile(t, cols, f, o.id, start, sql.NullInt64{}); err != nil {
			return err
		}
		stats := map[int64]globalColStats{}
		for _, c := range cols {
			if s, ok := f.stats[c.name]; ok {
				stats[c.id] = fromFileStats(s)
			}
		}
		if err := o.addTableStats(t, cols, st, f.count, f.size, stats); err != nil {
			return err
		}
		o.changes.insertedInto = append(o.changes.insertedInto, t.id)
		return nil
	})
}

// InsertInlined appends the rows of query to a table in one snapshot using
// data inlining: the rows go into the table's latest inlined-data table
// ducklake_inlined_data_<table_id>_<schema_version> (row_id from the table's
// next_row_id, begin_snapshot = the new snapshot, end_snapshot NULL, then the
// columns). When the table has none, or its columns are not the table's
// current ones, one is created and registered in ducklake_inlined_data_tables
// and schema_version is bumped, as ducklake_metadata_manager.cpp
// WriteNewInlinedData does. next_file_id is advanced by one (the extension
// marks inlined-only changes so), table statistics are updated, and
// changes_made is `inlined_insert:<id>`. The extension inlines only inserts
// of fewer rows than data_inlining_row_limit (default 10); this method does
// not enforce the limit (an ATTACH option can raise it without a trace in the
// catalog). Errors: ErrNotFound, ErrInvalid, ErrNoChange (no rows).
func (w *Writer) InsertInlined(ctx context.Context, schema, table, query string) error {
	return w.runOnColumns(ctx, fmt.Sprintf("insert inlined into %q.%q", schema, table), schema, table, func(o *op, t tableInfo, cols []column) error {
		if !o.canInline(cols) {
			return fmt.Errorf("%w: a column name collides with the inlined-data columns %v", ErrInvalid, o.w.lay.inl.reserved())
		}
		sel, err := o.insertProjection(trimQuery(query), cols)
		if err != nil {
			return err
		}
		if err := o.exec("CREATE OR REPLACE TEMP TABLE __fdl_rows AS SELECT row_number() OVER () - 1 AS __fdl_n, * FROM (" + sel + ")"); err != nil {
			return err
		}
		defer o.w.conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS temp.__fdl_rows")
		var n int64
		if err := o.queryRow("SELECT count(*) FROM temp.__fdl_rows").Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: the query returned no rows", ErrNoChange)
		}
		var names []string
		for _, c := range cols {
			names = append(names, sqlquote.Ident(c.name))
			if !c.nullable {
				var nulls int64
				if err := o.queryRow("SELECT count(*) FROM temp.__fdl_rows WHERE " + sqlquote.Ident(c.name) + " IS NULL").Scan(&nulls); err != nil {
					return err
				}
				if nulls > 0 {
					return fmt.Errorf("%w: NOT NULL constraint failed: %s.%s", ErrInvalid, sqlquote.Ident(t.name), sqlquote.Ident(c.name))
				}
			}
		}
		target, err := o.latestInlinedTable(t, cols)
		if err != nil {
			return err
		}
		st, err := o.tableStats(t.id)
		if err != nil {
			return err
		}
		if err := o.exec(fmt.Sprintf("INSERT INTO %s SELECT %d + __fdl_n, %d, NULL, %s FROM temp.__fdl_rows ORDER BY __fdl_n",
			sqlquote.Ident(target), st.nextRowID, o.id, strings.Join(names, ", "))); err != nil {
			return err
		}
		stats, err := o.inlinedStats(cols, "temp.__fdl_rows")
		if err != nil {
			return err
		}
		if err := o.addTableStats(t, cols, st, n, 0, stats); err != nil {
			return err
		}
		o.nextFileID++ // ducklake_transaction_state.cpp GetNewDataFiles: inlined-only change
		o.changes.inlinedInsert = append(o.changes.inlinedInsert, t.id)
		return nil
	})
}

// latestInlinedTable returns the inlined-data table new rows go to
// (ducklake_metadata_manager.cpp LatestInlinedTableQuery), creating one at a
// new schema version when there is none with the table's current columns.
func (o *op) latestInlinedTable(t tableInfo, cols []column) (string, error) {
	list, err := o.inlinedTables(t)
	if err != nil {
		return "", err
	}
	if len(list) > 0 {
		last := list[len(list)-1]
		same := len(last.columnIDs) == len(cols)
		for i := 0; same && i < len(cols); i++ {
			same = last.columnIDs[i] == cols[i].id && last.physical[i] == cols[i].name
		}
		if same {
			return last.name, nil
		}
	}
	if err := o.bumpSchema(); err != nil {
		return "", err
	}
	return o.createInlinedTable(t.id, cols)
}

// inlinedStats computes the statistics of inlined rows: min/max as VARCHAR,
// null and NaN presence (DuckLakeInlineData keeps them per column).
func (o *op) inlinedStats(cols []column, from string) (map[int64]globalColStats, error) {
	out := map[int64]globalColStats{}
	for _, c := range cols {
		nan := "false"
		if isFloat(c.typ) {
			nan = "coalesce(bool_or(isnan(" + sqlquote.Ident(c.name) + ")), false)"
		}
		var mn, mx sql.NullString
		var nulls int64
		var hasNaN bool
		q := fmt.Sprintf("SELECT min(%s)::VARCHAR, max(%s)::VARCHAR, count(*) - count(%s), %s FROM %s", sqlquote.Ident(c.name), sqlquote.Ident(c.name), sqlquote.Ident(c.name), nan, from)
		if err := o.queryRow(q).Scan(&mn, &mx, &nulls, &hasNaN); err != nil {
			return nil, err
		}
		g := globalColStats{nullKnown: true, containsNull: nulls > 0, hasMin: mn.Valid, min: mn.String, hasMax: mx.Valid, max: mx.String}
		if isFloat(c.typ) {
			g.nanKnown, g.containsNaN = true, hasNaN
			if hasNaN {
				g.hasMin, g.hasMax = false, false
			}
		}
		out[c.id] = g
	}
	return out, nil
}

// DeleteWhere deletes, in one snapshot, the visible rows of a table for which
// predicate (a DuckDB boolean expression over the table's current column
// names) is true. Per data file with matching rows, as ducklake_delete.cpp
// FlushDelete does:
//   - when every row of the file is now deleted, the data file gets
//     end_snapshot (and, from 0.4 on, its rows and bytes leave
//     ducklake_table_stats);
//   - when the file has no delete file yet, a delete file
//     '<table folder>/ducklake-<uuidv7>-delete.parquet' with columns
//     file_path (the data file's full path) and pos (BIGINT row position),
//     sorted by pos, is written and registered in ducklake_delete_file
//     (delete_count, sizes, path relative to the table path);
//   - when it has one, a new delete file with all deleted positions replaces
//     it: in 0.4/1.0 with a _ducklake_internal_snapshot_id column, its
//     begin_snapshot the oldest delete's and partial_max the new snapshot,
//     while the old row is removed from ducklake_delete_file and scheduled in
//     ducklake_files_scheduled_for_deletion (DeleteOverwrittenDeleteFiles);
//     in 0.3 the old row gets end_snapshot.
//
// Matching inlined rows get end_snapshot (WriteNewInlinedDeletes). changes_made
// is `deleted_from_table:<id>` and/or `inlined_delete:<id>`. The extension
// 1.0 writes deletes of at most data_inlining_row_limit rows of a file to
// ducklake_inlined_delete_<id> instead; this method always writes delete
// files (what the extension does with the limit at 0).
// Errors: ErrNotFound, ErrInvalid (bad predicate), ErrNoChange (no row matched).
func (w *Writer) DeleteWhere(ctx context.Context, schema, table, predicate string) error {
	return w.runOnColumns(ctx, fmt.Sprintf("delete from %q.%q", schema, table), schema, table, func(o *op, t tableInfo, cols []column) error {
		pred := "(" + predicate + ")"
		files, err := o.visibleFiles(t)
		if err != nil {
			return err
		}
		defer o.w.conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS temp.__fdl_del")
		deleted := false
		for _, f := range files {
			hit, err := o.deleteInFile(t, f, cols, pred)
			if err != nil {
				return err
			}
			deleted = deleted || hit
		}
		if deleted {
			o.changes.deletedFrom = append(o.changes.deletedFrom, t.id)
		}
		if err := o.deleteInlined(t, cols, pred); err != nil {
			return err
		}
		if !deleted && len(o.changes.inlinedDelete) == 0 {
			return fmt.Errorf("%w: no row matches %s", ErrNoChange, predicate)
		}
		return nil
	})
}

// deleteInFile deletes the rows of data file f that match pred and were
// not deleted before: it drops the file when no row is left, else writes
// (or rewrites) its delete file. It reports whether any row matched.
func (o *op) deleteInFile(t tableInfo, f dataFile, cols []column, pred string) (bool, error) {
	sel, err := o.fileRows(f, cols)
	if err != nil {
		return false, err
	}
	prior, err := o.deletedPositions(t, f)
	if err != nil {
		return false, err
	}
	if err := o.exec(fmt.Sprintf("CREATE OR REPLACE TEMP TABLE __fdl_del AS SELECT __pos AS pos, CAST(%d AS BIGINT) AS snap FROM (%s) AS __t WHERE %s AND __pos NOT IN (SELECT pos FROM (%s))",
		o.id, sel, pred, prior)); err != nil {
		return false, fmt.Errorf("%w: predicate: %v", ErrInvalid, err)
	}
	var n int64
	if err := o.queryRow("SELECT count(*) FROM temp.__fdl_del").Scan(&n); err != nil {
		return false, err
	}
	if n == 0 {
		return false, nil
	}
	var priorCount int64
	if err := o.queryRow("SELECT count(*) FROM (" + prior + ")").Scan(&priorCount); err != nil {
		return true, err
	}
	switch {
	case priorCount+n >= f.recordCount:
		return true, o.dropDataFile(t, f)
	case !f.deleteID.Valid:
		return true, o.writeDeleteFile(t, f, false, sql.NullInt64{})
	}
	return true, o.rewriteDeleteFile(t, f, prior)
}

// rewriteDeleteFile replaces f's delete file with one holding every
// position deleted so far (the new ones are in temp.__fdl_del, the earlier
// ones in prior): the old file's row ends (a format without partial_max)
// or goes, its file scheduled for deletion.
func (o *op) rewriteDeleteFile(t tableInfo, f dataFile, prior string) error {
	if !o.w.lay.deletePartialMax {
		if err := o.exec("INSERT INTO temp.__fdl_del SELECT pos, snap FROM (" + prior + ")"); err != nil {
			return err
		}
		if err := o.exec(fmt.Sprintf("UPDATE ducklake_delete_file SET end_snapshot = %d WHERE end_snapshot IS NULL AND data_file_id IN (%d)", o.id, f.id)); err != nil {
			return err
		}
		return o.writeDeleteFile(t, f, false, sql.NullInt64{})
	}
	if err := o.exec("INSERT INTO temp.__fdl_del SELECT pos, snap FROM (" + prior + ") WHERE pos IS NOT NULL"); err != nil {
		return err
	}
	if err := o.writeDeleteFile(t, f, true, sql.NullInt64{Int64: o.id, Valid: true}); err != nil {
		return err
	}
	old, rel := relTo(f.deleteFull, o.w.dataDir)
	if err := o.exec(fmt.Sprintf("DELETE FROM ducklake_delete_file WHERE delete_file_id IN (%d)", f.deleteID.Int64)); err != nil {
		return err
	}
	return o.exec(fmt.Sprintf("INSERT INTO ducklake_files_scheduled_for_deletion (data_file_id, path, path_is_relative, schedule_start) VALUES (%d, %s, %t, NOW())",
		f.deleteID.Int64, sqlquote.String(old), rel))
}

// deleteInlined ends the inlined rows of t that match pred (rows inlined
// by this same snapshot are not ended).
func (o *op) deleteInlined(t tableInfo, cols []column, pred string) error {
	inl, err := o.inlinedTables(t)
	if err != nil {
		return err
	}
	for _, it := range inl {
		sel, err := o.inlinedRows(it, cols)
		if err != nil {
			return err
		}
		var n int64
		if err := o.queryRow(fmt.Sprintf("SELECT count(*) FROM (%s) AS __t WHERE %s", sel, pred)).Scan(&n); err != nil {
			return fmt.Errorf("%w: predicate: %v", ErrInvalid, err)
		}
		if n == 0 {
			continue
		}
		nm := o.w.lay.inl
		if err := o.exec(fmt.Sprintf("UPDATE %[1]s SET %[2]s = %[5]d WHERE %[2]s IS NULL AND %[3]s != %[5]d AND %[4]s IN (SELECT __rowid FROM (%[6]s) AS __t WHERE %[7]s)",
			sqlquote.Ident(it.name), sqlquote.Ident(nm.end), sqlquote.Ident(nm.begin), sqlquote.Ident(nm.rowID), o.id, sel, pred)); err != nil {
			return err
		}
		o.changes.inlinedDelete = append(o.changes.inlinedDelete, t.id)
	}
	return nil
}

// dropDataFile ends a data file whose rows are all deleted
// (ducklake_delete.cpp TryDropFullyDeletedFile; ducklake_metadata_manager.cpp
// DropDataFiles). From 0.4 on its rows and bytes are subtracted from
// ducklake_table_stats and, when no rows remain, the column statistics rows
// are removed (ducklake_transaction_state.cpp UpdateStatsForDroppedFiles).
func (o *op) dropDataFile(t tableInfo, f dataFile) error {
	if err := o.exec(fmt.Sprintf("UPDATE ducklake_data_file SET end_snapshot = %d WHERE end_snapshot IS NULL AND data_file_id IN (%d)", o.id, f.id)); err != nil {
		return err
	}
	if !o.w.lay.v04 {
		return nil
	}
	st, err := o.tableStats(t.id)
	if err != nil || !st.exists {
		return err
	}
	rc := st.recordCount - f.recordCount
	if rc < 0 {
		return fmt.Errorf("%w: dropped file stats exceed table stats of table %d", ErrUnsupportedFormat, t.id)
	}
	size := st.fsSize - f.fileSize
	if rc == 0 {
		size = 0
	}
	if err := o.exec(fmt.Sprintf("UPDATE ducklake_table_stats SET record_count = %d, file_size_bytes = %d WHERE table_id = %d", rc, size, t.id)); err != nil {
		return err
	}
	if rc == 0 {
		return o.exec(fmt.Sprintf("DELETE FROM ducklake_table_column_stats WHERE table_id = %d", t.id))
	}
	return nil
}

// writeDeleteFile writes temp.__fdl_del (pos, snap) as a delete file for f
// and registers it (ducklake_delete.cpp WriteDeleteFileInternal;
// ducklake_metadata_manager.cpp WriteNewDeleteFiles). withSnapshots adds the
// _ducklake_internal_snapshot_id column; the row's begin_snapshot is then the
// oldest delete's snapshot and partial_max the newest.
func (o *op) writeDeleteFile(t tableInfo, f dataFile, withSnapshots bool, partialMax sql.NullInt64) error {
	uuid, err := o.uuidv7()
	if err != nil {
		return err
	}
	ids := []fieldID{{"file_path", fieldIDFilename}, {"pos", fieldIDOrdinal}}
	proj := fmt.Sprintf("SELECT CAST(%s AS VARCHAR) AS file_path, CAST(pos AS BIGINT) AS pos", sqlquote.String(f.full))
	if withSnapshots {
		ids = append(ids, fieldID{internalSnapshotColumn, fieldIDLastUpdatedSeq})
		proj += ", CAST(snap AS BIGINT) AS " + sqlquote.Ident(internalSnapshotColumn)
	}
	wf, err := o.copyParquet(t.dataDir, "ducklake-"+uuid+"-delete.parquet", proj+" FROM temp.__fdl_del ORDER BY pos", ids, nil)
	if err != nil {
		return err
	}
	begin := o.id
	if withSnapshots {
		if err := o.queryRow("SELECT min(snap) FROM temp.__fdl_del").Scan(&begin); err != nil {
			return err
		}
	}
	p, rel := relTo(wf.path, t.dataDir)
	cols := "delete_file_id, table_id, begin_snapshot, end_snapshot, data_file_id, path, path_is_relative, format, delete_count, file_size_bytes, footer_size, encryption_key"
	vals := fmt.Sprintf("%d, %d, %d, NULL, %d, %s, %t, 'parquet', %d, %d, %d, NULL", o.newFileID(), t.id, begin, f.id, sqlquote.String(p), rel, wf.count, wf.size, wf.footer)
	if o.w.lay.deletePartialMax {
		cols += ", partial_max"
		vals += ", " + nullInt(partialMax)
	}
	if o.w.lay.rowGroupCount {
		cols += ", row_group_count"
		vals += ", " + nullInt(wf.rowGroups)
	}
	return o.exec("INSERT INTO ducklake_delete_file (" + cols + ") VALUES (" + vals + ")")
}
