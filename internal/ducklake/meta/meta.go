// Package meta holds the values fdl reads from a DuckLake catalog and keeps
// beside it: the catalog's state at one snapshot (schemas, tables, columns,
// views), the DuckDB storage format of its file, and what fdl knows about
// DuckLake formats and which DuckDB releases read them (formats.go). They are plain Go values
// with no database behind them, so a package that stores or prints them
// (package version's records and datasets) does not link the DuckDB and
// SQLite drivers that package ducklake reads them with.
package meta

// State is what a catalog holds at one snapshot (docs/spec.md §5.1 visibility rule).
type State struct {
	Snapshot int64    `json:"snapshot"`
	Schemas  []Schema `json:"schemas"`
}

// Schema is a schema visible at the state's snapshot, with its tables and views
// sorted by name.
type Schema struct {
	ID     int64   `json:"id"`
	Name   string  `json:"name"`
	Tables []Table `json:"tables"`
	Views  []View  `json:"views"`
}

// Table is a table visible at the state's snapshot.
type Table struct {
	ID      int64    `json:"id"`
	Name    string   `json:"name"`
	Columns []Column `json:"columns"` // top-level columns in column_order
	// RowCount: rows visible at the snapshot: data files' record_count minus
	// delete files' delete_count, plus visible inlined rows.
	RowCount    int64 `json:"row_count"`
	DataFiles   int64 `json:"data_files"`   // data files visible at the snapshot
	DataBytes   int64 `json:"data_bytes"`   // their file_size_bytes, summed
	DeleteFiles int64 `json:"delete_files"` // delete files visible at the snapshot
}

// Column is a column visible at the state's snapshot. Nested types (struct,
// list, map) carry their fields in Children.
type Column struct {
	ID       int64    `json:"id"`
	Name     string   `json:"name"`
	Type     string   `json:"type"` // column_type as DuckLake stores it, e.g. "int32", "varchar"
	Nullable bool     `json:"nullable"`
	Children []Column `json:"children,omitempty"`
}

// View is a view visible at the state's snapshot.
type View struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Dialect string `json:"dialect"`
	SQL     string `json:"sql"`
}

// Storage describes the DuckDB storage format of a database file, read from
// its header.
type Storage struct {
	// Number is the storage version number in the file header (64 = DuckDB
	// v0.10–v1.1 compatible; 65..68 = v1.2, v1.3, v1.4, v1.5 and newer; 999
	// = DuckDB 2.0's own format, named by the creating release).
	Number uint64 `json:"number"`
	// MinDuckDB is the oldest DuckDB release that reads this format, e.g.
	// "v0.10.0" for 64, "v1.5.0" for 68, "v2.0.0" for 999 made by DuckDB
	// 2.0; it is also the STORAGE_VERSION value that makes DuckDB write this
	// number.
	MinDuckDB string `json:"min_duckdb"`
}
