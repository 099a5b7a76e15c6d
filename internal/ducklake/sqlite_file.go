package ducklake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// SQLite file format facts used here (sqlite.org/fileformat2.html):
//
//   - database header: magic "SQLite format 3\0" (16 bytes); page size at
//     offset 16 (big-endian uint16, 1 means 65536); file change counter at
//     24; "in-header database size" in pages at 28, valid only when it is
//     non-zero and the change counter equals the version-valid-for number
//     at 92; bytes 18 and 19 are 2 in WAL mode;
//   - WAL file: a 32-byte header (magic 0x377f0682 or 0x377f0683, format
//     version 3007000, page size, checkpoint sequence, salt-1, salt-2,
//     checksum-1, checksum-2, all big-endian) and frames of a 24-byte header
//     (page number, database size in pages after a commit or 0, salt-1,
//     salt-2, checksum-1, checksum-2) plus one page. Checksums are cumulative
//     over the header and every frame; the magic's low bit says whether the
//     checksum reads the data as big-endian (1) or little-endian (0) words.
//     A reader uses the frames up to the last valid commit frame and
//     silently ignores the rest: a damaged frame loses every transaction
//     after it without an error, which is why fdl checks the WAL itself.

const (
	sqliteHeaderSize = 100
	walHeaderSize    = 32
	walFrameHeader   = 24
	walMagicLE       = 0x377f0682
	walMagicBE       = 0x377f0683
	walVersion       = 3007000
)

// ErrCorrupt: the catalog file (or its SQLite -wal file) is damaged:
// truncated, or with a WAL whose committed frames SQLite would silently skip.
var ErrCorrupt = errors.New("catalog file is damaged")

// DetectBackend reads the first bytes of path and says which database
// system wrote it. Errors: ErrNotCatalog (naming the file) when it is
// neither a DuckDB nor a SQLite database, or a directory; the os error when
// it cannot be read. It never writes.
func DetectBackend(path string) (Backend, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return "", fmt.Errorf("%w: %s is a directory", ErrNotCatalog, path)
	}
	buf := make([]byte, 64)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	buf = buf[:n]
	switch {
	case bytes.HasPrefix(buf, sqliteMagic):
		return BackendSQLite, nil
	case len(buf) >= duckHeaderPrefix && bytes.Equal(buf[duckMagicOffset:duckMagicOffset+4], duckMagic):
		return BackendDuckDB, nil
	}
	return "", fmt.Errorf("%w: %s is neither a DuckDB nor a SQLite database", ErrNotCatalog, path)
}

// sqliteFileInfo is what checkSQLiteFile read from a database header.
type sqliteFileInfo struct {
	pageSize int64
	walMode  bool
}

// checkSQLiteFile checks that path is a whole SQLite database and that its
// -wal file (if any) has no damaged committed frames. Because writers may be
// appending while it reads, a failed check is repeated a few times and only
// a damage seen every time is reported (ErrCorrupt, naming the file, what is
// wrong and what to do).
func checkSQLiteFile(path string) (sqliteFileInfo, error) {
	var info sqliteFileInfo
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 40 * time.Millisecond)
		}
		info, err = checkSQLiteOnce(path)
		if err == nil || !errors.Is(err, ErrCorrupt) {
			return info, err
		}
	}
	return info, err
}

func checkSQLiteOnce(path string) (sqliteFileInfo, error) {
	var info sqliteFileInfo
	f, err := os.Open(path)
	if err != nil {
		return info, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return info, err
	}
	hdr := make([]byte, sqliteHeaderSize)
	n, err := io.ReadFull(f, hdr)
	if !bytes.HasPrefix(hdr[:n], sqliteMagic) {
		return info, fmt.Errorf("%w: %s is not a SQLite database", ErrNotCatalog, path)
	}
	if err != nil {
		return info, fmt.Errorf("%w: %s is truncated: %d bytes, shorter than the 100-byte SQLite header; restore it from a copy", ErrCorrupt, path, st.Size())
	}
	ps := int64(binary.BigEndian.Uint16(hdr[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		return info, fmt.Errorf("%w: %s has an invalid SQLite page size %d; restore it from a copy", ErrCorrupt, path, ps)
	}
	info.pageSize = ps
	info.walMode = hdr[18] == 2 && hdr[19] == 2
	size := st.Size()
	if size%ps != 0 {
		return info, fmt.Errorf("%w: %s is truncated: %d bytes is not a whole number of %d-byte pages; restore it from a copy", ErrCorrupt, path, size, ps)
	}
	walFrames, err := checkWAL(path+"-wal", ps)
	if err != nil {
		return info, err
	}
	// The header's page count is exact when valid, but a database whose WAL
	// has committed frames may be mid-checkpoint (the pages are in the WAL).
	pages := int64(binary.BigEndian.Uint32(hdr[28:32]))
	valid := pages != 0 && bytes.Equal(hdr[24:28], hdr[92:96])
	if valid && walFrames == 0 && pages*ps > size {
		return info, fmt.Errorf("%w: %s is truncated: its header counts %d pages of %d bytes (%d bytes) but the file has %d bytes; restore it from a copy",
			ErrCorrupt, path, pages, ps, pages*ps, size)
	}
	return info, nil
}

// checkWAL validates a SQLite WAL file and returns the number of frames
// SQLite will use (up to the last valid commit frame). A missing or empty
// file is fine. It reports ErrCorrupt when the header is damaged (SQLite
// would ignore every transaction in it), when a frame of the current WAL
// generation (matching salts) carrying a commit mark fails its checksum, or
// when a damaged frame is followed by a committed frame of the same
// generation (SQLite would silently drop that committed transaction).
func checkWAL(walPath string, pageSize int64) (int64, error) {
	b, err := os.ReadFile(walPath)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, nil
	}
	damaged := func(what string) error {
		return fmt.Errorf("%w: %s: %s, so SQLite would silently leave out committed transactions; stop the processes that write to the catalog and restore the catalog and its -wal file from a copy (deleting the -wal file discards every transaction in it)",
			ErrCorrupt, walPath, what)
	}
	if len(b) < walHeaderSize {
		return 0, damaged(fmt.Sprintf("the WAL header is cut short (%d bytes)", len(b)))
	}
	magic := binary.BigEndian.Uint32(b[0:4])
	if magic != walMagicLE && magic != walMagicBE {
		return 0, damaged(fmt.Sprintf("the WAL header has magic %#08x", magic))
	}
	bigEndian := magic == walMagicBE
	if v := binary.BigEndian.Uint32(b[4:8]); v != walVersion {
		return 0, damaged(fmt.Sprintf("the WAL header has format version %d", v))
	}
	s1, s2 := walChecksum(bigEndian, b[0:24], 0, 0)
	if s1 != binary.BigEndian.Uint32(b[24:28]) || s2 != binary.BigEndian.Uint32(b[28:32]) {
		return 0, damaged("the WAL header checksum does not match")
	}
	if ps := int64(binary.BigEndian.Uint32(b[8:12])); ps != pageSize {
		return 0, damaged(fmt.Sprintf("the WAL page size %d differs from the database's %d", ps, pageSize))
	}
	salt := b[16:24]
	frame := walFrameHeader + pageSize
	var used, lastCommit int64
	bad := int64(-1)
	for i, off := int64(0), int64(walHeaderSize); off+frame <= int64(len(b)); i, off = i+1, off+frame {
		fh := b[off : off+walFrameHeader]
		if !bytes.Equal(fh[8:16], salt) {
			break // an older generation's frame: the end of the log
		}
		commit := binary.BigEndian.Uint32(fh[4:8]) != 0
		if bad >= 0 {
			if commit {
				return 0, damaged(fmt.Sprintf("frame %d is damaged and committed frame %d follows it", bad+1, i+1))
			}
			continue
		}
		c1, c2 := walChecksum(bigEndian, fh[0:8], s1, s2)
		c1, c2 = walChecksum(bigEndian, b[off+walFrameHeader:off+frame], c1, c2)
		if c1 != binary.BigEndian.Uint32(fh[16:20]) || c2 != binary.BigEndian.Uint32(fh[20:24]) {
			if commit {
				return 0, damaged(fmt.Sprintf("committed frame %d fails its checksum", i+1))
			}
			bad = i
			continue
		}
		s1, s2 = c1, c2
		used++
		if commit {
			lastCommit = used
		}
	}
	return lastCommit, nil
}

// walChecksum is SQLite's WAL checksum (walChecksumBytes) over b (a multiple
// of 8 bytes), continuing from s1, s2.
func walChecksum(bigEndian bool, b []byte, s1, s2 uint32) (uint32, uint32) {
	order := binary.ByteOrder(binary.LittleEndian)
	if bigEndian {
		order = binary.BigEndian
	}
	for i := 0; i+8 <= len(b); i += 8 {
		s1 += order.Uint32(b[i:]) + s2
		s2 += order.Uint32(b[i+4:]) + s1
	}
	return s1, s2
}

// sqliteCompanions are the files SQLite keeps beside a database file.
var sqliteCompanions = []string{"-wal", "-shm", "-journal"}

// RemoveSQLite removes the SQLite database file at path and the files
// SQLite keeps beside it (-wal, -shm, -journal), those that exist: a
// temporary copy leaves nothing behind. Errors: the first removal that
// failed for another reason than the file's absence.
func RemoveSQLite(path string) error {
	var first error
	for _, p := range append([]string{path}, companionsOf(path)...) {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) && first == nil {
			first = err
		}
	}
	return first
}

func companionsOf(path string) []string {
	out := make([]string, len(sqliteCompanions))
	for i, c := range sqliteCompanions {
		out[i] = path + c
	}
	return out
}
