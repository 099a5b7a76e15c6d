package lakewriter

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// createTableStatements are the CREATE TABLE statements of a new 0.4/1.0
// catalog, in the order and with the column names, types and constraints of
// ducklake_metadata_manager.cpp GetCreateTableStatements (28 tables). The
// tests compare the result with the real dltest-v04.ducklake.
var createTableStatements = []string{
	"CREATE TABLE ducklake_metadata(key VARCHAR NOT NULL, value VARCHAR NOT NULL, scope VARCHAR, scope_id BIGINT);",
	"CREATE TABLE ducklake_snapshot(snapshot_id BIGINT PRIMARY KEY, snapshot_time TIMESTAMPTZ, schema_version BIGINT, next_catalog_id BIGINT, next_file_id BIGINT);",
	"CREATE TABLE ducklake_snapshot_changes(snapshot_id BIGINT PRIMARY KEY, changes_made VARCHAR, author VARCHAR, commit_message VARCHAR, commit_extra_info VARCHAR);",
	"CREATE TABLE ducklake_schema(schema_id BIGINT PRIMARY KEY, schema_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN);",
	"CREATE TABLE ducklake_table(table_id BIGINT, table_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, table_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN);",
	"CREATE TABLE ducklake_view(view_id BIGINT, view_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, view_name VARCHAR, dialect VARCHAR, sql VARCHAR, column_aliases VARCHAR);",
	"CREATE TABLE ducklake_tag(object_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR);",
	"CREATE TABLE ducklake_column_tag(table_id BIGINT, column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR);",
	"CREATE TABLE ducklake_data_file(data_file_id BIGINT PRIMARY KEY, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, file_order BIGINT, path VARCHAR, path_is_relative BOOLEAN, file_format VARCHAR, record_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, row_id_start BIGINT, partition_id BIGINT, encryption_key VARCHAR, mapping_id BIGINT, partial_max BIGINT);",
	"CREATE TABLE ducklake_file_column_stats(data_file_id BIGINT, table_id BIGINT, column_id BIGINT, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR);",
	"CREATE TABLE ducklake_file_variant_stats(data_file_id BIGINT, table_id BIGINT, column_id BIGINT, variant_path VARCHAR, shredded_type VARCHAR, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR);",
	"CREATE TABLE ducklake_delete_file(delete_file_id BIGINT PRIMARY KEY, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, format VARCHAR, delete_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, encryption_key VARCHAR, partial_max BIGINT);",
	"CREATE TABLE ducklake_column(column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, table_id BIGINT, column_order BIGINT, column_name VARCHAR, column_type VARCHAR, initial_default VARCHAR, default_value VARCHAR, nulls_allowed BOOLEAN, parent_column BIGINT, default_value_type VARCHAR, default_value_dialect VARCHAR);",
	"CREATE TABLE ducklake_table_stats(table_id BIGINT, record_count BIGINT, next_row_id BIGINT, file_size_bytes BIGINT);",
	"CREATE TABLE ducklake_table_column_stats(table_id BIGINT, column_id BIGINT, contains_null BOOLEAN, contains_nan BOOLEAN, min_value VARCHAR, max_value VARCHAR, extra_stats VARCHAR);",
	"CREATE TABLE ducklake_partition_info(partition_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT);",
	"CREATE TABLE ducklake_partition_column(partition_id BIGINT, table_id BIGINT, partition_key_index BIGINT, column_id BIGINT, transform VARCHAR);",
	"CREATE TABLE ducklake_file_partition_value(data_file_id BIGINT, table_id BIGINT, partition_key_index BIGINT, partition_value VARCHAR);",
	"CREATE TABLE ducklake_files_scheduled_for_deletion(data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, schedule_start TIMESTAMPTZ);",
	"CREATE TABLE ducklake_inlined_data_tables(table_id BIGINT, table_name VARCHAR, schema_version BIGINT);",
	"CREATE TABLE ducklake_column_mapping(mapping_id BIGINT, table_id BIGINT, type VARCHAR);",
	"CREATE TABLE ducklake_name_mapping(mapping_id BIGINT, column_id BIGINT, source_name VARCHAR, target_field_id BIGINT, parent_column BIGINT, is_partition BOOLEAN);",
	"CREATE TABLE ducklake_schema_versions(begin_snapshot BIGINT, schema_version BIGINT, table_id BIGINT);",
	"CREATE TABLE ducklake_macro(schema_id BIGINT, macro_id BIGINT, macro_name VARCHAR, begin_snapshot BIGINT, end_snapshot BIGINT);",
	"CREATE TABLE ducklake_macro_impl(macro_id BIGINT, impl_id BIGINT, dialect VARCHAR, sql VARCHAR, type VARCHAR);",
	"CREATE TABLE ducklake_macro_parameters(macro_id BIGINT, impl_id BIGINT, column_id BIGINT, parameter_name VARCHAR, parameter_type VARCHAR, default_value VARCHAR, default_value_type VARCHAR);",
	"CREATE TABLE ducklake_sort_info(sort_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT);",
	"CREATE TABLE ducklake_sort_expression(sort_id BIGINT, table_id BIGINT, sort_key_index BIGINT, expression VARCHAR, dialect VARCHAR, sort_direction VARCHAR, null_order VARCHAR);",
}

// createTableStatements11 are those of a new 1.1 catalog
// (src/metadata_manager/ducklake_metadata_manager_v1_1.cpp, which
// DuckLakeMetadataManagerV1_1 puts in place of the 1.0 ones): the same 28
// tables in the same order, ducklake_data_file and ducklake_delete_file with
// row_group_count BIGINT as their last column, and a 29th table
// ducklake_view_column_tag appended. TestCreate11Layout compares the result
// with the list read from the extension source.
var createTableStatements11 = func() []string {
	out := make([]string, 0, len(createTableStatements)+1)
	for _, s := range createTableStatements {
		switch {
		case strings.HasPrefix(s, "CREATE TABLE ducklake_data_file("), strings.HasPrefix(s, "CREATE TABLE ducklake_delete_file("):
			s = strings.TrimSuffix(s, ");") + ", row_group_count BIGINT);"
		}
		out = append(out, s)
	}
	return append(out, "CREATE TABLE ducklake_view_column_tag(view_id BIGINT, column_name VARCHAR, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR);")
}()

// layout records which of the version-dependent columns a catalog has, read
// from the catalog itself (docs/spec.md §5.1: the version string does not fix the
// table set).
type layout struct {
	v04 bool // 0.4 or 1.0 behaviour (else 0.3)
	// columnDefaultType: ducklake_column has default_value_type and
	// default_value_dialect (0.4, MigrateV03).
	columnDefaultType bool
	// dataPartialMax: ducklake_data_file has partial_max (0.4) instead of
	// partial_file_info (0.3).
	dataPartialMax bool
	// deletePartialMax: ducklake_delete_file has partial_max (0.4).
	deletePartialMax bool
	// schemaVersionsTableID: ducklake_schema_versions has table_id (0.4:
	// per-table schema versions); in 0.3 a row is written per global
	// schema_version.
	schemaVersionsTableID bool
	// extraStats: the stats tables have extra_stats (0.3).
	extraStats bool
	// defaultInlining is data_inlining_row_limit when ducklake_metadata does
	// not set it: 10 from DuckLake 0.4 on (inlining is on by default, as the
	// registered ducklake_inlined_data_1_1 of dltest-v04 shows), 0 in 0.3.
	defaultInlining int64
	// rowGroupCount: ducklake_data_file and ducklake_delete_file have
	// row_group_count (1.1, MigrateV10), which takes the row_group_count the
	// Parquet writer returns (ducklake_insert.cpp, ducklake_delete.cpp).
	rowGroupCount bool
	// inl names the first three columns of an inlined-data table (row id,
	// begin and end snapshot): row_id, begin_snapshot, end_snapshot up to
	// 1.0, with the prefix "_ducklake_" from 1.1 on (DuckLakeInlinedColNames).
	inl inlinedNames
	// tables is the set of tables in the catalog file.
	tables map[string]bool
}

// inlinedNames are the metadata column names of inlined-data tables.
type inlinedNames struct{ rowID, begin, end string }

// inlinedNamesFor returns the names the extension uses for format
// (DuckLakeInlinedColNames(catalog.SupportsV1_1Metadata())).
func inlinedNamesFor(format string) inlinedNames {
	if is11(format) {
		return inlinedNames{"_ducklake_row_id", "_ducklake_begin_snapshot", "_ducklake_end_snapshot"}
	}
	return inlinedNames{"row_id", "begin_snapshot", "end_snapshot"}
}

// reserved lists the column names a table with inlining on may not have
// (DuckLakeInlinedColNames::ConflictsWith).
func (n inlinedNames) reserved() []string {
	return []string{n.rowID, n.begin, n.end, "_ducklake_internal_snapshot_id", "_ducklake_internal_row_id"}
}

// is11 reports whether format is DuckLake 1.1 (or its development string
// 1.1-dev1, which the extension source writes before the release).
func is11(format string) bool { return format == Format11 || format == Format11Dev }

// requiredColumns lists the columns the Writer reads or writes, per table,
// for every supported version; Open refuses a catalog that lacks one.
var requiredColumns = map[string][]string{
	"ducklake_metadata":                     {"key", "value", "scope", "scope_id"},
	"ducklake_snapshot":                     {"snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id"},
	"ducklake_snapshot_changes":             {"snapshot_id", "changes_made", "author", "commit_message", "commit_extra_info"},
	"ducklake_schema":                       {"schema_id", "schema_uuid", "begin_snapshot", "end_snapshot", "schema_name", "path", "path_is_relative"},
	"ducklake_table":                        {"table_id", "table_uuid", "begin_snapshot", "end_snapshot", "schema_id", "table_name", "path", "path_is_relative"},
	"ducklake_view":                         {"view_id", "view_uuid", "begin_snapshot", "end_snapshot", "schema_id", "view_name", "dialect", "sql", "column_aliases"},
	"ducklake_tag":                          {"object_id", "begin_snapshot", "end_snapshot", "key", "value"},
	"ducklake_column_tag":                   {"table_id", "column_id", "begin_snapshot", "end_snapshot", "key", "value"},
	"ducklake_data_file":                    {"data_file_id", "table_id", "begin_snapshot", "end_snapshot", "file_order", "path", "path_is_relative", "file_format", "record_count", "file_size_bytes", "footer_size", "row_id_start", "partition_id", "encryption_key", "mapping_id"},
	"ducklake_file_column_stats":            {"data_file_id", "table_id", "column_id", "column_size_bytes", "value_count", "null_count", "min_value", "max_value", "contains_nan"},
	"ducklake_delete_file":                  {"delete_file_id", "table_id", "begin_snapshot", "end_snapshot", "data_file_id", "path", "path_is_relative", "format", "delete_count", "file_size_bytes", "footer_size", "encryption_key"},
	"ducklake_column":                       {"column_id", "begin_snapshot", "end_snapshot", "table_id", "column_order", "column_name", "column_type", "initial_default", "default_value", "nulls_allowed", "parent_column"},
	"ducklake_table_stats":                  {"table_id", "record_count", "next_row_id", "file_size_bytes"},
	"ducklake_table_column_stats":           {"table_id", "column_id", "contains_null", "contains_nan", "min_value", "max_value"},
	"ducklake_partition_info":               {"partition_id", "table_id", "begin_snapshot", "end_snapshot"},
	"ducklake_file_partition_value":         {"data_file_id", "table_id", "partition_key_index", "partition_value"},
	"ducklake_files_scheduled_for_deletion": {"data_file_id", "path", "path_is_relative", "schedule_start"},
	"ducklake_inlined_data_tables":          {"table_id", "table_name", "schema_version"},
	"ducklake_schema_versions":              {"begin_snapshot", "schema_version"},
}

// readLayout reads the tables and columns of the attached catalog.
func readLayout(ctx context.Context, conn *sql.Conn, format string) (layout, error) {
	rows, err := conn.QueryContext(ctx,
		"SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = ? AND schema_name = 'main'", lakeAlias)
	if err != nil {
		return layout{}, err
	}
	defer rows.Close()
	cols := map[string]map[string]bool{}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return layout{}, err
		}
		if cols[t] == nil {
			cols[t] = map[string]bool{}
		}
		cols[t][c] = true
	}
	if err := rows.Err(); err != nil {
		return layout{}, err
	}
	var missing []string
	for t, cs := range requiredColumns {
		for _, c := range cs {
			if !cols[t][c] {
				missing = append(missing, t+"."+c)
			}
		}
	}
	if len(missing) > 0 {
		return layout{}, fmt.Errorf("%w: DuckLake %s catalog lacks %s", ErrUnsupportedFormat, format, strings.Join(missing, ", "))
	}
	l := layout{
		v04:                   format != Format03,
		columnDefaultType:     cols["ducklake_column"]["default_value_type"] && cols["ducklake_column"]["default_value_dialect"],
		dataPartialMax:        cols["ducklake_data_file"]["partial_max"],
		deletePartialMax:      cols["ducklake_delete_file"]["partial_max"],
		schemaVersionsTableID: cols["ducklake_schema_versions"]["table_id"],
		extraStats:            cols["ducklake_file_column_stats"]["extra_stats"],
		rowGroupCount:         cols["ducklake_data_file"]["row_group_count"] && cols["ducklake_delete_file"]["row_group_count"],
		inl:                   inlinedNamesFor(format),
		tables:                map[string]bool{},
	}
	for t := range cols {
		l.tables[t] = true
	}
	if l.v04 {
		l.defaultInlining = 10
		if !l.columnDefaultType || !l.dataPartialMax || !l.deletePartialMax || !l.schemaVersionsTableID {
			return layout{}, fmt.Errorf("%w: DuckLake %s catalog without the 0.4 columns (default_value_type, partial_max, schema_versions.table_id)", ErrUnsupportedFormat, format)
		}
		if is11(format) && (!l.rowGroupCount || !l.tables["ducklake_view_column_tag"]) {
			return layout{}, fmt.Errorf("%w: DuckLake %s catalog without the 1.1 tables and columns (row_group_count, ducklake_view_column_tag)", ErrUnsupportedFormat, format)
		}
	} else if !cols["ducklake_data_file"]["partial_file_info"] {
		return layout{}, fmt.Errorf("%w: DuckLake %s catalog without ducklake_data_file.partial_file_info", ErrUnsupportedFormat, format)
	}
	return l, nil
}
