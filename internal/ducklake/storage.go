package ducklake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
)

// DuckDB main file header (DuckDB source: src/storage/storage_info.cpp,
// MainHeader): bytes 0..7 are a checksum, bytes 8..11 the magic "DUCK",
// bytes 12..19 the storage version number as a little-endian uint64, then
// four uint64 flags and the writer's version strings.
const (
	duckMagicOffset   = 8
	duckVersionOffset = 12
	duckHeaderPrefix  = duckVersionOffset + 8
)

var (
	duckMagic   = []byte("DUCK")
	sqliteMagic = []byte("SQLite format 3\x00")
)

// storageVersions maps a storage version number to the oldest DuckDB release
// that writes (and therefore reads) it; that release name is also the value
// the STORAGE_VERSION option of ATTACH takes to write a file with this number.
//
// Established empirically with DuckDB v1.5.6 (duckdb-go v2.10506.0): for every
// value that `ATTACH 'x.db' AS d (STORAGE_VERSION '...')` accepts (v0.10.0
// through v1.5.6; it rejects v0.9.0 and anything newer than the library), a
// table was created, the database checkpointed and detached, and the uint64
// at offset 12 of the file read back:
//
//	v0.10.0 … v1.1.3  -> 64
//	v1.2.0 … v1.2.2   -> 65
//	v1.3.0 … v1.3.2   -> 66
//	v1.4.0 … v1.4.5   -> 67
//	v1.5.0 … v1.5.6   -> 68 (also what 'latest' writes)
//
// A plain ATTACH without the option writes 64. TestStorageVersionTable
// repeats the experiment, so a DuckDB upgrade that changes it fails a test.
var storageVersions = map[uint64]string{
	64: "v0.10.0",
	65: "v1.2.0",
	66: "v1.3.0",
	67: "v1.4.0",
	68: "v1.5.0",
}

// ReadStorage reads the storage version number from the header of the DuckDB
// database file at path and maps it to the oldest DuckDB release that reads
// it (Storage.MinDuckDB, e.g. "v1.0.0"; usable as ATTACH's STORAGE_VERSION).
//
// Errors: ErrSQLite for a SQLite file, ErrNotCatalog for a file that is not a
// DuckDB database (no "DUCK" magic at offset 8), ErrUnknownStorage naming the
// number when it is not in the table, and the os error when the file cannot
// be read. It does not look at the WAL and never writes.
func ReadStorage(path string) (meta.Storage, error) {
	hdr, err := readHeader(path)
	if err != nil {
		return meta.Storage{}, err
	}
	n := binary.LittleEndian.Uint64(hdr[duckVersionOffset:duckHeaderPrefix])
	min, ok := storageVersions[n]
	if !ok {
		return meta.Storage{Number: n}, fmt.Errorf("%w %d in %s (known: 64-68, DuckDB v0.10.0-v1.5.x)", ErrUnknownStorage, n, path)
	}
	return meta.Storage{Number: n, MinDuckDB: min}, nil
}

// readHeader returns the first bytes of a DuckDB file after checking its
// magic; it classifies SQLite and non-DuckDB files.
func readHeader(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a directory", ErrNotCatalog, path)
	}
	buf := make([]byte, 64)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	buf = buf[:n]
	if bytes.HasPrefix(buf, sqliteMagic) {
		return nil, fmt.Errorf("%w: %s is a SQLite database", ErrSQLite, path)
	}
	if len(buf) < duckHeaderPrefix || !bytes.Equal(buf[duckMagicOffset:duckMagicOffset+4], duckMagic) {
		return nil, fmt.Errorf("%w: %s is not a DuckDB database (no DUCK header)", ErrNotCatalog, path)
	}
	return buf, nil
}
