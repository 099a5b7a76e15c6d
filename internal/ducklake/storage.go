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
// four uint64 flags (20..51) and the writing library's version string
// (52..83, NUL-padded, e.g. "v2.0.0") and source id (84..115). The main
// header is written once, when the file is created; DuckDB never changes a
// file's storage version afterwards (a DuckDB 2.0 that writes to a file
// with number 68 keeps 68; TestStorageKeptOnWrite).
const (
	duckMagicOffset   = 8
	duckVersionOffset = 12
	duckHeaderPrefix  = duckVersionOffset + 8
	duckLibraryOffset = 52
	duckLibraryLen    = 32
)

var (
	duckMagic   = []byte("DUCK")
	sqliteMagic = []byte("SQLite format 3\x00")
)

// storageNumberByRelease is the storage version number DuckDB 2.0 writes by
// default. It does not name a format by itself: the release that created
// the file (the version string at offset 52) does, through
// storageReleaseLines.
const storageNumberByRelease = 999

// storageVersions maps a storage version number of DuckDB 0.10 to 1.5 to
// the oldest DuckDB release that writes (and therefore reads) it; that
// release name is also the value the STORAGE_VERSION option of ATTACH takes
// to write a file with this number.
//
// Established empirically with DuckDB v2.0.0 (duckdb-go v2.20000.0,
// TestStorageVersionTable): for every value that `ATTACH 'x.db' AS d
// (STORAGE_VERSION '...')` accepts (v0.9.0 through v2.0.0 and 'latest'; it
// rejects any release it does not know, e.g. v1.5.9 or v2.0.1), a table was
// created, the database checkpointed and detached, and the uint64 at offset
// 12 of the file read back:
//
//	v0.9.0 … v1.1.3   -> 64
//	v1.2.0 … v1.2.2   -> 65
//	v1.3.0 … v1.3.2   -> 66
//	v1.4.0 … v1.4.5   -> 67
//	v1.5.0 … v1.5.6   -> 68
//	v2.0.0, 'latest'  -> 999, with "v2.0.0" at offset 52
//
// A plain ATTACH without the option writes 999 with DuckDB 2.0 (DuckDB 1.5
// wrote 64), so every file fdl creates names its STORAGE_VERSION. DuckDB
// 1.5.5 refuses 999 ("can only read versions between 64 and 68") and reads
// 68 written by DuckDB 2.0 (TestStorageReadByDuckDB15). The same experiment
// with DuckDB v1.5.6 gave 64-68 for v0.10.0-v1.5.6 and rejected v0.9.0;
// v0.9.0 is not listed since DuckDB 0.9 predates the serialization format
// that 64 names from v0.10.0 on.
var storageVersions = map[uint64]string{
	64: "v0.10.0",
	65: "v1.2.0",
	66: "v1.3.0",
	67: "v1.4.0",
	68: "v1.5.0",
}

// storageReleaseLines maps the release line ("vMAJOR.MINOR") of the library
// that created a file with storage number 999 to the oldest release that
// reads it. Only DuckDB 2.0 is known; a file created by a later release is
// refused (ErrUnknownStorage), since fdl's DuckDB (2.0) may not read it.
var storageReleaseLines = map[string]string{
	"v2.0": "v2.0.0",
}

// ReadStorage reads the storage version number from the header of the DuckDB
// database file at path and maps it to the oldest DuckDB release that reads
// it (Storage.MinDuckDB, e.g. "v1.5.0"; usable as ATTACH's STORAGE_VERSION):
// 64..68 through storageVersions, 999 through the release line of the
// library version string at offset 52 (storageReleaseLines).
//
// Errors: ErrSQLite for a SQLite file, ErrNotCatalog for a file that is not a
// DuckDB database (no "DUCK" magic at offset 8), ErrUnknownStorage naming the
// number (and for 999 the writing release) when it is not in the table, and
// the os error when the file cannot be read. It does not look at the WAL and
// never writes.
func ReadStorage(path string) (meta.Storage, error) {
	hdr, err := readHeader(path)
	if err != nil {
		return meta.Storage{}, err
	}
	n := binary.LittleEndian.Uint64(hdr[duckVersionOffset:duckHeaderPrefix])
	if n == storageNumberByRelease {
		lib := ""
		if len(hdr) >= duckLibraryOffset+duckLibraryLen {
			lib = string(bytes.TrimRight(hdr[duckLibraryOffset:duckLibraryOffset+duckLibraryLen], "\x00"))
		}
		if min := storageReleaseLines[meta.ReleaseLine(lib)]; min != "" {
			return meta.Storage{Number: n, MinDuckDB: min}, nil
		}
		return meta.Storage{Number: n}, fmt.Errorf("%w %d in %s, created by DuckDB %q (known: 64-68 for DuckDB v0.10.0-v1.5.x, 999 from DuckDB v2.0.x): upgrade fdl", ErrUnknownStorage, n, path, lib)
	}
	min, ok := storageVersions[n]
	if !ok {
		return meta.Storage{Number: n}, fmt.Errorf("%w %d in %s (known: 64-68 for DuckDB v0.10.0-v1.5.x, 999 from DuckDB v2.0.x)", ErrUnknownStorage, n, path)
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
	buf := make([]byte, duckLibraryOffset+duckLibraryLen+32)
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
