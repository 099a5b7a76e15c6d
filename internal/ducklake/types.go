// Package ducklake reads DuckLake catalogs stored as DuckDB or SQLite files
// with plain SQL over the ducklake_* tables (the ducklake extension is not
// needed), freezes a working catalog into a single-file DuckDB copy, and
// converts a DuckDB-format catalog into a SQLite-format one
// (ConvertToSQLite) and back (Freeze).
//
// Source of the rules: the DuckLake specification (ducklake.select/docs) and
// the catalogs observed in testdata/catalogs/MANIFEST.md. The set of tables
// and columns is read from each catalog, never assumed from its format string.
package ducklake

import (
	"errors"
	"time"
)

// Sentinel errors, wrapped with the file path and details.
var (
	// ErrNotCatalog: the file is not a DuckDB database, or it has no
	// ducklake_metadata / ducklake_snapshot tables.
	ErrNotCatalog = errors.New("not a DuckLake catalog")
	// ErrUnsupportedFormat: the DuckLake format string is one fdl cannot read.
	ErrUnsupportedFormat = errors.New("unsupported DuckLake format")
	// ErrLocked: another process holds the DuckDB file lock.
	ErrLocked = errors.New("catalog is locked by another process")
	// ErrSQLite: the file is a SQLite database where a DuckDB database file
	// is needed (ReadStorage reads a DuckDB header). Open, Freeze and
	// ConvertToSQLite read SQLite-format catalogs.
	ErrSQLite = errors.New("a SQLite database, not a DuckDB database file")
	// ErrSnapshotNotFound: the catalog has no ducklake_snapshot row with the
	// requested id (or no snapshot at all).
	ErrSnapshotNotFound = errors.New("snapshot not found")
	// ErrUnknownStorage: the DuckDB file header carries a storage version
	// number that fdl knows no DuckDB release for (see ReadStorage).
	ErrUnknownStorage = errors.New("unknown DuckDB storage version")
)

// Snapshot is one row of ducklake_snapshot joined with ducklake_snapshot_changes
// (DuckLake spec: ducklake_snapshot, ducklake_snapshot_changes).
type Snapshot struct {
	ID            int64     `json:"id"`
	Time          time.Time `json:"time"` // snapshot_time, UTC
	SchemaVersion int64     `json:"schema_version"`
	NextCatalogID int64     `json:"next_catalog_id"`
	NextFileID    int64     `json:"next_file_id"`
	Changes       string    `json:"changes,omitempty"` // changes_made, raw
	// Author, Message and ExtraInfo exist from DuckLake 0.3 on; empty otherwise.
	Author    string `json:"author,omitempty"`
	Message   string `json:"message,omitempty"`
	ExtraInfo string `json:"extra_info,omitempty"`
}

// Change is one item of a changes_made string, e.g. Kind "created_table",
// Value `"main"."T"`; Kind "inserted_into_table", Value "1".
type Change struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

// State is what a catalog holds at one snapshot (DESIGN.md §5 visibility rule).
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

// DataFile is one row of ducklake_data_file or ducklake_delete_file.
type DataFile struct {
	ID             int64  `json:"id"`
	TableID        int64  `json:"table_id"`
	Path           string `json:"path"` // as stored
	PathIsRelative bool   `json:"path_is_relative"`
	ResolvedPath   string `json:"resolved_path"` // against table, schema and data_path
	BeginSnapshot  int64  `json:"begin_snapshot"`
	EndSnapshot    *int64 `json:"end_snapshot,omitempty"`
	Size           int64  `json:"size"`
	Delete         bool   `json:"delete"` // a delete file
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

// FreezeInfo describes a frozen catalog.
type FreezeInfo struct {
	Format   string   `json:"format"`   // ducklake_metadata version, e.g. "0.4"
	Snapshot Snapshot `json:"snapshot"` // the last snapshot
	Storage  Storage  `json:"storage"`  // storage format of the frozen file
}
