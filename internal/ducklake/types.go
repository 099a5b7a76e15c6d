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

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
)

// Sentinel errors, wrapped with the file path and details.
var (
	// ErrNotCatalog: the file is not a DuckDB database, or it has no
	// ducklake_metadata / ducklake_snapshot tables.
	ErrNotCatalog = errors.New("not a DuckLake catalog")
	// ErrUnsupportedFormat: the DuckLake format string is one fdl cannot read
	// (the same error as meta.ErrUnsupportedFormat).
	ErrUnsupportedFormat = meta.ErrUnsupportedFormat
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
	ID            int64     `json:"snapshot_id"`
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

// DataFile is one row of ducklake_data_file or ducklake_delete_file
// (meta.DataFile: a plain value, so that packages deciding on data files,
// as retention does, link no database).
type DataFile = meta.DataFile

// FreezeInfo describes a frozen catalog.
type FreezeInfo struct {
	Format   string       `json:"format"`   // ducklake_metadata version, e.g. "0.4"
	Snapshot Snapshot     `json:"snapshot"` // the last snapshot
	Storage  meta.Storage `json:"storage"`  // storage format of the frozen file
	// Size (bytes) and SHA256 (lower-case hex) of the frozen file,
	// computed while it was copied, or read once after DuckDB wrote it.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}
