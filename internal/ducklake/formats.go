package ducklake

import (
	"slices"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
)

// supportedFormats are the ducklake_metadata 'version' strings fdl reads,
// oldest first (meta.Formats; DuckLakeVersionFromString). Queries never
// rely on the string, only on the tables and columns a catalog has, except
// for the names of the inlined-data metadata columns, which the extension
// chooses by format (prefixedInlined).
var supportedFormats = func() []string {
	var out []string
	for _, f := range meta.Formats() {
		out = append(out, f.Name)
	}
	return out
}()

// SupportedFormats returns the DuckLake format strings (ducklake_metadata key
// 'version') that Open accepts, oldest first.
func SupportedFormats() []string { return slices.Clone(supportedFormats) }

// prefixedInlined reports whether inlined-data tables of format name their
// first three columns _ducklake_row_id, _ducklake_begin_snapshot and
// _ducklake_end_snapshot (DuckLake 1.1 and its development string 1.1-dev1;
// duckdb/ducklake DuckLakeInlinedColNames, SupportsV1_1Metadata).
func prefixedInlined(format string) bool { return format == "1.1-dev1" || format == "1.1" }

// storageForFormat is the DuckDB storage version fdl writes a new catalog
// file of a DuckLake format in when there is no DuckDB header to keep (a
// frozen catalog whose working catalog is SQLite): the one the extension of
// that format wrote for a DuckDB catalog file (meta.StorageFor) — 64 up to
// DuckDB 1.4 (DuckLake 0.1-0.3), 68 for DuckDB 1.5 (0.4, 1.0), 999 for
// DuckDB 2.0 (1.1) — so that every DuckDB whose extension reads the format
// also opens the file.
func storageForFormat(format string) meta.Storage { return meta.StorageFor(format) }
