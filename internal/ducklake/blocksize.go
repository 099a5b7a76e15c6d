package ducklake

import (
	"fmt"
	"os"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
)

// The block size of the DuckDB files fdl writes itself (a catalog frozen
// from a SQLite working catalog, its incremental copies and compactions,
// the private DuckDB copy Open makes of a SQLite catalog): docs/spec.md
// §26 ("Block size").
//
// DuckDB's default block is 256 KiB and every table of a database takes at
// least one block of its own, so a DuckLake catalog of a few rows (about
// 25 metadata tables) is a 3.8 MiB file; with 16 KiB blocks it is 0.3 MiB,
// which every checkout, push, cache and checksum pays. Small blocks cost
// once a catalog holds more than a few MiB: between 5 and 26 MiB its file
// was 7 to 45 % larger and an incremental commit about twice as slow, and
// a 67 MiB catalog took 4.7 s to write against 1.3 s. So a catalog is
// written with small blocks only while its SQLite form is under
// smallCatalogMax (4 MiB), and an incremental commit rewrites it with
// DuckDB's default once that form passes twice the bound (and a 256 KiB
// one back to small blocks below half of it). The SQLite form's size is
// the measure, not the DuckDB copy's used blocks: those count a whole
// block for every table, so a few-row catalog of 30 tables would look
// 8 MiB large with 256 KiB blocks.
//
// Files with a block size other than 256 KiB are read by DuckDB v1.2.0 and
// later; storage versions older than that (DuckLake 0.1 to 0.3, which
// DuckDB 1.3 and 1.4 read) keep the default. A base of another block size
// (a DuckDB-form lake's own choice) is kept until it is small.
const (
	// smallBlockSize is the block size of a small catalog, in bytes (the
	// smallest DuckDB accepts).
	smallBlockSize = 16 << 10
	// defaultBlockSize is DuckDB's default block size, in bytes.
	defaultBlockSize = 256 << 10
	// smallBlockStorage is the oldest storage version number (v1.2.0) whose
	// readers read a block size other than the default.
	smallBlockStorage = 65
)

// smallCatalogMax is the size of a catalog's SQLite form, in bytes, below
// which its DuckDB file is written with smallBlockSize (a variable for the
// tests that cross it).
var smallCatalogMax int64 = 4 << 20

// blockSizeFor returns the block size, in bytes, of a new DuckDB file of
// storage version storage for a catalog whose SQLite form is size bytes.
func blockSizeFor(storage meta.Storage, size int64) int64 {
	if storage.Number < smallBlockStorage || size >= smallCatalogMax {
		return defaultBlockSize
	}
	return smallBlockSize
}

// rewriteForBlockSize reports whether a copy with block size current, of
// a catalog whose SQLite form is size bytes, should be written again to get
// the block size that size asks for: only past twice the bound (or below
// half of it), so a catalog near the bound is not rewritten back and forth.
func rewriteForBlockSize(storage meta.Storage, current, size int64) bool {
	switch {
	case storage.Number < smallBlockStorage:
		return false
	case current == smallBlockSize:
		return size > 2*smallCatalogMax
	default:
		return size < smallCatalogMax/2
	}
}

// blockSizeOption is the ATTACH option that writes a new file with block
// size bs (", BLOCK_SIZE 16384"), "" for DuckDB's default.
func blockSizeOption(bs int64) string {
	if bs == defaultBlockSize {
		return ""
	}
	return fmt.Sprintf(", BLOCK_SIZE %d", bs)
}

// sqliteBytes is the size of the SQLite database at path with its -wal
// file, in bytes (0 when it cannot be read): the estimate blockSizeFor
// takes for a catalog copied from it (its DuckDB form is smaller).
func sqliteBytes(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
