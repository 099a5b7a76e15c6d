package ducklake

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// This file holds what fdl knows about how DuckDB's ducklake extension lays
// out a DuckLake catalog in a DuckDB database and in a SQLite database.
//
// Sources:
//   - duckdb/ducklake src/storage/ducklake_metadata_manager.cpp
//     (GetCreateTableStatements and the migrations MigrateV01..MigrateV04):
//     the ducklake_* tables and the DuckDB type of every column;
//   - duckdb/ducklake src/metadata_manager/sqlite_metadata_manager.cpp:
//     in a SQLite catalog, FLOAT, DOUBLE, TIMESTAMP WITH TIME ZONE,
//     STRUCT, MAP, LIST and VARIANT columns of inlined-data tables are
//     stored as VARCHAR (TypeIsNativelySupported, GetColumnTypeInternal);
//   - duckdb/duckdb-sqlite src/sqlite_utils.cpp ToSQLiteType and
//     src/storage/sqlite_schema_entry.cpp GetCreateTableSQL: a table created
//     through DuckDB's sqlite extension gets the declared SQLite type BIGINT
//     for BOOLEAN and the integer types up to UINTEGER, DOUBLE for FLOAT and
//     DOUBLE, BLOB for BLOB and VARCHAR for every other type, and its column
//     names are quoted only where DuckDB would quote them (keywords, names
//     that are not lower-case identifiers);
//   - the real catalogs of testdata/catalogs (MANIFEST.md), in particular
//     ahri-tre-v0.2.sqlite, which the tests compare with byte for byte.

// Backend is the database system a DuckLake catalog file is stored in (the
// DuckLake documentation calls it the catalog database).
type Backend string

// The catalog databases fdl reads and writes.
const (
	// BackendDuckDB: a DuckDB database file ("DUCK" magic at offset 8).
	BackendDuckDB Backend = "duckdb"
	// BackendSQLite: a SQLite 3 database file ("SQLite format 3\0" magic).
	BackendSQLite Backend = "sqlite"
)

// ParseBackend parses the name of a catalog database ("duckdb" or "sqlite",
// case-insensitive). Errors name the value and the accepted ones.
func ParseBackend(s string) (Backend, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "duckdb":
		return BackendDuckDB, nil
	case "sqlite":
		return BackendSQLite, nil
	}
	return "", fmt.Errorf("catalog format %q: want %q or %q", s, BackendDuckDB, BackendSQLite)
}

// Type names as DuckDB reports them in duckdb_columns().data_type.
const (
	tBigint    = "BIGINT"
	tVarchar   = "VARCHAR"
	tBoolean   = "BOOLEAN"
	tUUID      = "UUID"
	tTimestamp = "TIMESTAMP WITH TIME ZONE"
	tDouble    = "DOUBLE"
	tBlob      = "BLOB"
)

// metadataColumns lists, for every ducklake_* table of DuckLake 0.1 to 1.1,
// every column any of those formats gives it and its DuckDB type. A catalog
// has a subset (the columns of its format); a column or ducklake_* table not
// listed here is one fdl cannot convert between SQLite and DuckDB exactly,
// so the conversion refuses it (ErrUnsupportedFormat).
var metadataColumns = map[string]map[string]string{}

func init() {
	def := func(table string, cols string) {
		m := map[string]string{}
		for _, c := range strings.Split(cols, ",") {
			f := strings.Fields(c)
			typ := tBigint
			if len(f) > 1 {
				typ = map[string]string{"V": tVarchar, "B": tBoolean, "U": tUUID, "T": tTimestamp}[f[1]]
			}
			m[f[0]] = typ
		}
		metadataColumns[table] = m
	}
	// Column lists: MANIFEST.md (0.1 to 0.4, observed),
	// GetCreateTableStatements (1.0) and, for 1.1, duckdb/ducklake
	// src/metadata_manager/ducklake_metadata_manager_v1_1.cpp (row_group_count
	// on data and delete files, ducklake_view_column_tag). Type letters: V
	// VARCHAR, B BOOLEAN, U UUID, T TIMESTAMP WITH TIME ZONE; no letter:
	// BIGINT.
	def("ducklake_metadata", "key V, value V, scope V, scope_id")
	def("ducklake_snapshot", "snapshot_id, snapshot_time T, schema_version, next_catalog_id, next_file_id")
	def("ducklake_snapshot_changes", "snapshot_id, changes_made V, author V, commit_message V, commit_extra_info V")
	def("ducklake_schema", "schema_id, schema_uuid U, begin_snapshot, end_snapshot, schema_name V, path V, path_is_relative B")
	def("ducklake_table", "table_id, table_uuid U, begin_snapshot, end_snapshot, schema_id, table_name V, path V, path_is_relative B")
	def("ducklake_view", "view_id, view_uuid U, begin_snapshot, end_snapshot, schema_id, view_name V, dialect V, sql V, column_aliases V")
	def("ducklake_tag", "object_id, begin_snapshot, end_snapshot, key V, value V")
	def("ducklake_column_tag", "table_id, column_id, begin_snapshot, end_snapshot, key V, value V")
	def("ducklake_view_column_tag", "view_id, column_name V, begin_snapshot, end_snapshot, key V, value V")
	def("ducklake_data_file", "data_file_id, table_id, begin_snapshot, end_snapshot, file_order, path V, path_is_relative B, file_format V, record_count, file_size_bytes, footer_size, row_id_start, partition_id, encryption_key V, partial_file_info V, mapping_id, partial_max, row_group_count")
	def("ducklake_file_column_statistics", "data_file_id, table_id, column_id, column_size_bytes, value_count, null_count, min_value V, max_value V, contains_nan B")
	def("ducklake_file_column_stats", "data_file_id, table_id, column_id, column_size_bytes, value_count, null_count, min_value V, max_value V, contains_nan B, extra_stats V")
	def("ducklake_file_variant_stats", "data_file_id, table_id, column_id, variant_path V, shredded_type V, column_size_bytes, value_count, null_count, min_value V, max_value V, contains_nan B, extra_stats V")
	def("ducklake_delete_file", "delete_file_id, table_id, begin_snapshot, end_snapshot, data_file_id, path V, path_is_relative B, format V, delete_count, file_size_bytes, footer_size, encryption_key V, partial_max, row_group_count")
	def("ducklake_column", "column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name V, column_type V, initial_default V, default_value V, nulls_allowed B, parent_column, default_value_type V, default_value_dialect V")
	def("ducklake_table_stats", "table_id, record_count, next_row_id, file_size_bytes")
	def("ducklake_table_column_stats", "table_id, column_id, contains_null B, contains_nan B, min_value V, max_value V, extra_stats V")
	def("ducklake_partition_info", "partition_id, table_id, begin_snapshot, end_snapshot")
	def("ducklake_partition_column", "partition_id, table_id, partition_key_index, column_id, transform V")
	def("ducklake_file_partition_value", "data_file_id, table_id, partition_key_index, partition_value V")
	def("ducklake_files_scheduled_for_deletion", "data_file_id, path V, path_is_relative B, schedule_start T")
	def("ducklake_inlined_data_tables", "table_id, table_name V, schema_version")
	def("ducklake_column_mapping", "mapping_id, table_id, type V")
	def("ducklake_name_mapping", "mapping_id, column_id, source_name V, target_field_id, parent_column, is_partition B")
	def("ducklake_schema_versions", "begin_snapshot, schema_version, table_id")
	def("ducklake_macro", "schema_id, macro_id, macro_name V, begin_snapshot, end_snapshot")
	def("ducklake_macro_impl", "macro_id, impl_id, dialect V, sql V, type V")
	def("ducklake_macro_parameters", "macro_id, impl_id, column_id, parameter_name V, parameter_type V, default_value V, default_value_type V")
	def("ducklake_sort_info", "sort_id, table_id, begin_snapshot, end_snapshot")
	def("ducklake_sort_expression", "sort_id, table_id, sort_key_index, expression V, dialect V, sort_direction V, null_order V")
}

// Names of the per-table data tables (DuckLake spec: Data Inlining;
// ducklake_metadata_manager.cpp GetInlinedTableName, GetInlinedDeletionTableName).
const (
	inlinedDataPrefix   = "ducklake_inlined_data_"
	inlinedDeletePrefix = "ducklake_inlined_delete_"
)

var inlinedDataRE = regexp.MustCompile(`^ducklake_inlined_data_(\d+)_(\d+)$`)

// inlinedInternalColumns are the first columns of every inlined-data table
// of a catalog of DuckLake format format, all BIGINT (GetInlinedTableQuery,
// DuckLakeInlinedColNames): row_id, begin_snapshot, end_snapshot up to 1.0;
// from 1.1 on the same with the prefix "_ducklake_" (so that user columns
// may take those names).
func inlinedInternalColumns(format string) []string {
	if prefixedInlined(format) {
		return []string{"_ducklake_row_id", "_ducklake_begin_snapshot", "_ducklake_end_snapshot"}
	}
	return []string{"row_id", "begin_snapshot", "end_snapshot"}
}

// tableKind classifies a table of a catalog file.
type tableKind int

const (
	kindOther    tableKind = iota // not a DuckLake table: refused
	kindMetadata                  // a ducklake_* table of metadataColumns
	kindInlinedData
	kindInlinedDelete // ducklake_inlined_delete_<table_id>(file_id, row_id, begin_snapshot), all BIGINT
)

func classifyTable(name string) tableKind {
	switch {
	case metadataColumns[name] != nil:
		return kindMetadata
	case inlinedDataRE.MatchString(name):
		return kindInlinedData
	case strings.HasPrefix(name, inlinedDeletePrefix):
		return kindInlinedDelete
	}
	return kindOther
}

// sqliteDeclType is the declared SQLite type of a column of DuckDB type t in
// a SQLite catalog. For user columns of inlined-data tables (inlined true)
// the SQLite metadata manager first turns the types SQLite cannot hold
// exactly into VARCHAR; then DuckDB's sqlite extension maps the type
// (ToSQLiteType).
func sqliteDeclType(t string, inlined bool) string {
	u := strings.ToUpper(strings.TrimSpace(t))
	if inlined && !sqliteNative(u) {
		return tVarchar
	}
	switch u {
	case "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER":
		return tBigint
	case "FLOAT", "DOUBLE":
		return tDouble
	case "BLOB":
		return tBlob
	}
	return tVarchar
}

// sqliteNative mirrors SQLiteMetadataManager::TypeIsNativelySupported.
func sqliteNative(u string) bool {
	switch {
	case u == "FLOAT", u == "DOUBLE", u == tTimestamp, u == "TIMESTAMP_TZ", u == "TIMESTAMPTZ",
		u == "TIMESTAMP_TZ_NS", u == "VARIANT",
		strings.HasPrefix(u, "STRUCT"), strings.HasPrefix(u, "MAP"), strings.HasSuffix(u, "]"):
		return false
	}
	return true
}

// stageType is the DuckDB type fdl reads a SQLite column as before casting
// it to its DuckDB type: BIGINT for a declared type with INTEGER affinity
// (or "BOOL", which DuckDB's sqlite scanner also reads as BIGINT), BLOB for a
// declared BLOB (or no type), VARCHAR otherwise (numbers are formatted
// exactly and cast by DuckDB, as the scanner's VARCHAR path does).
func stageType(decl string) string {
	d := strings.ToLower(decl)
	switch {
	case strings.Contains(d, "int"), strings.Contains(d, "bool"):
		return tBigint
	case strings.Contains(d, "blob"), d == "":
		return tBlob
	}
	return tVarchar
}

// duckLakeTypes maps the primitive DuckLake column types (DuckLake spec:
// Data Types; src/common/ducklake_types.cpp) to DuckDB types.
var duckLakeTypes = map[string]string{
	"boolean": "BOOLEAN", "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
	"int128": "HUGEINT", "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT",
	"uint128": "UHUGEINT", "float32": "FLOAT", "float64": "DOUBLE", "time": "TIME", "time_ns": "TIME_NS",
	"timetz": "TIME WITH TIME ZONE", "date": "DATE", "timestamp": "TIMESTAMP", "timestamptz": tTimestamp,
	"timestamp_s": "TIMESTAMP_S", "timestamp_ms": "TIMESTAMP_MS", "timestamp_ns": "TIMESTAMP_NS",
	"interval": "INTERVAL", "varchar": "VARCHAR", "blob": "BLOB", "json": "JSON", "uuid": "UUID",
	"geometry": "GEOMETRY", "variant": "VARIANT", "bignum": "BIGNUM", "varint": "BIGNUM",
}

var decimalTypeRE = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)

// lakeColumn is one ducklake_column row with its children (nested types).
type lakeColumn struct {
	id       int64
	name     string
	typ      string
	children []*lakeColumn
}

// duckDBTypeOf returns the DuckDB type of a DuckLake column as the extension
// spells it in an inlined-data table of a DuckDB catalog
// (DuckLakeMetadataManager::GetColumnType: DuckLakeTypes::FromString(type)
// .ToString(), STRUCT(...), T[], MAP(K, V)).
func duckDBTypeOf(c *lakeColumn) (string, error) {
	t := strings.ToLower(strings.TrimSpace(c.typ))
	switch t {
	case "struct":
		var parts []string
		for _, ch := range c.children {
			ct, err := duckDBTypeOf(ch)
			if err != nil {
				return "", err
			}
			parts = append(parts, sqlquote.Ident(ch.name)+" "+ct)
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")", nil
	case "list":
		if len(c.children) != 1 {
			return "", fmt.Errorf("list column %q has %d children", c.name, len(c.children))
		}
		ct, err := duckDBTypeOf(c.children[0])
		return ct + "[]", err
	case "map":
		if len(c.children) != 2 {
			return "", fmt.Errorf("map column %q has %d children", c.name, len(c.children))
		}
		k, err := duckDBTypeOf(c.children[0])
		if err != nil {
			return "", err
		}
		v, err := duckDBTypeOf(c.children[1])
		return "MAP(" + k + ", " + v + ")", err
	}
	if m := decimalTypeRE.FindStringSubmatch(t); m != nil {
		return "DECIMAL(" + m[1] + "," + m[2] + ")", nil
	}
	if d, ok := duckLakeTypes[t]; ok {
		return d, nil
	}
	return "", fmt.Errorf("DuckLake column type %q of column %q", c.typ, c.name)
}

// formatNumber writes a SQLite REAL or INTEGER read from a column that fdl
// stages as VARCHAR so that DuckDB's cast reads back the same number.
func formatNumber(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
