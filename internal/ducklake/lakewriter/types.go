package lakewriter

import (
	"fmt"
	"regexp"
	"strings"
)

// duckLakeToDuckDB maps the primitive DuckLake type names (DuckLake spec:
// Data Types; src/common/ducklake_types.cpp) to the DuckDB type each is read
// and written as.
var duckLakeToDuckDB = map[string]string{
	"boolean":      "BOOLEAN",
	"int8":         "TINYINT",
	"int16":        "SMALLINT",
	"int32":        "INTEGER",
	"int64":        "BIGINT",
	"int128":       "HUGEINT",
	"uint8":        "UTINYINT",
	"uint16":       "USMALLINT",
	"uint32":       "UINTEGER",
	"uint64":       "UBIGINT",
	"uint128":      "UHUGEINT",
	"float32":      "FLOAT",
	"float64":      "DOUBLE",
	"time":         "TIME",
	"timetz":       "TIME WITH TIME ZONE",
	"date":         "DATE",
	"timestamp":    "TIMESTAMP",
	"timestamptz":  "TIMESTAMP WITH TIME ZONE",
	"timestamp_s":  "TIMESTAMP_S",
	"timestamp_ms": "TIMESTAMP_MS",
	"timestamp_ns": "TIMESTAMP_NS",
	"interval":     "INTERVAL",
	"varchar":      "VARCHAR",
	"blob":         "BLOB",
	"json":         "JSON",
	"uuid":         "UUID",
}

// duckDBAliases maps DuckDB spellings (upper-cased) to DuckLake names.
var duckDBAliases = map[string]string{
	"BOOLEAN": "boolean", "BOOL": "boolean",
	"TINYINT": "int8", "INT1": "int8",
	"SMALLINT": "int16", "INT2": "int16", "SHORT": "int16",
	"INTEGER": "int32", "INT": "int32", "INT4": "int32", "SIGNED": "int32",
	"BIGINT": "int64", "INT8": "int64", "LONG": "int64",
	"HUGEINT":  "int128",
	"UTINYINT": "uint8", "USMALLINT": "uint16", "UINTEGER": "uint32", "UBIGINT": "uint64", "UHUGEINT": "uint128",
	"FLOAT": "float32", "REAL": "float32", "FLOAT4": "float32",
	"DOUBLE": "float64", "FLOAT8": "float64",
	"TIME": "time", "TIMETZ": "timetz", "TIME WITH TIME ZONE": "timetz",
	"DATE":      "date",
	"TIMESTAMP": "timestamp", "DATETIME": "timestamp",
	"TIMESTAMPTZ": "timestamptz", "TIMESTAMP WITH TIME ZONE": "timestamptz",
	"TIMESTAMP_S": "timestamp_s", "TIMESTAMP_MS": "timestamp_ms", "TIMESTAMP_NS": "timestamp_ns",
	"INTERVAL": "interval",
	"VARCHAR":  "varchar", "TEXT": "varchar", "STRING": "varchar",
	"BLOB": "blob", "BYTEA": "blob",
	"JSON": "json",
	"UUID": "uuid",
}

var decimalRE = regexp.MustCompile(`^(?i:decimal|numeric)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$`)

// normalizeType returns the DuckLake name stored in ducklake_column.column_type
// for a user-given type, e.g. "INTEGER" → "int32", "DECIMAL(9, 2)" →
// "decimal(9,2)" (the spelling the extension stores, see airduck-v0.2).
func normalizeType(t string) (string, error) {
	s := strings.TrimSpace(t)
	if m := decimalRE.FindStringSubmatch(s); m != nil {
		var p, sc int
		fmt.Sscan(m[1], &p)
		fmt.Sscan(m[2], &sc)
		if p < 1 || p > 38 || sc > p {
			return "", fmt.Errorf("%w: type %q", ErrInvalid, t)
		}
		return fmt.Sprintf("decimal(%d,%d)", p, sc), nil
	}
	if _, ok := duckLakeToDuckDB[strings.ToLower(s)]; ok {
		return strings.ToLower(s), nil
	}
	if v, ok := duckDBAliases[strings.ToUpper(strings.Join(strings.Fields(s), " "))]; ok {
		return v, nil
	}
	return "", fmt.Errorf("%w: type %q is not a primitive DuckLake type", ErrInvalid, t)
}

// duckDBType returns the DuckDB type for a stored DuckLake type name.
func duckDBType(t string) (string, error) {
	if m := decimalRE.FindStringSubmatch(t); m != nil {
		return "DECIMAL(" + m[1] + "," + m[2] + ")", nil
	}
	if v, ok := duckLakeToDuckDB[strings.ToLower(t)]; ok {
		return v, nil
	}
	return "", fmt.Errorf("%w: column type %q (only primitive types are supported)", ErrUnsupportedFormat, t)
}

// isFloat reports whether stats of the type carry contains_nan.
func isFloat(t string) bool { return t == "float32" || t == "float64" }
