// Package stamp records what the file system says about a local version's
// catalog once commit has hashed it (docs/spec.md §12), so that a push on
// the same machine can link it without hashing it again: Git's index rule
// for skipping a rehash of unchanged files.
package stamp

import (
	"encoding/json"
	"github.com/fdl-dev/fdl/internal/atomicfile"
	"os"
	"path/filepath"
)

// File is the file beside a local version's catalog
// (.fdl/versions/<id>/catalog.stamp) holding the catalog's stamp as commit
// left it (docs/spec.md §12).
const File = "catalog.stamp"

// Seal makes the catalog commit froze (path: a local version's
// ducklake.duckdb) read-only and writes its stamp beside it (File, in
// the same folder), so a push on the same machine can link it without
// hashing it again (Unchanged). Where the platform gives no stamp only
// the mode is set. Errors: the file system's.
func Seal(path string) error {
	dir := filepath.Dir(path)
	if err := os.Chmod(path, 0o444); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	s, ok := stampOf(fi)
	if !ok {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, File), b)
}

// Unchanged reports whether fi, the local version's catalog in
// dir as a push is about to link it, still has the stamp commit wrote and
// the size the record gives: then its bytes are the ones commit hashed.
// False (hash it) when there is no stamp, it does not parse or anything
// differs.
func Unchanged(dir string, fi os.FileInfo, size int64) bool {
	got, ok := stampOf(fi)
	if !ok || fi.Size() != size {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return false
	}
	var want catalogStamp
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	return got == want
}

// Of returns fi's stamp as bytes (JSON: device, inode, size, modification
// and change times), for a caller that keeps it beside a file it hashed
// and compares it with the file's stamp later (package cache does, for
// its entries); false where the platform gives none.
func Of(fi os.FileInfo) ([]byte, bool) {
	s, ok := stampOf(fi)
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(s)
	return b, err == nil
}
