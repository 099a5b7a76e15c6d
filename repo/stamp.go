package repo

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/fdl-dev/fdl/version"
)

// stampFile is the file beside a local version's catalog
// (.fdl/versions/<id>/catalog.stamp) holding the catalog's stamp as commit
// left it (docs/spec.md §12).
const stampFile = "catalog.stamp"

// sealCatalog makes the catalog commit froze into dir read-only and writes
// its stamp beside it, so a push on the same machine can link it without
// hashing it again (unchangedSinceCommit). Where the platform gives no
// stamp only the mode is set. Errors: the file system's.
func sealCatalog(dir string) error {
	path := filepath.Join(dir, version.CatalogFile)
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
	return writeFileAtomic(filepath.Join(dir, stampFile), b)
}

// unchangedSinceCommit reports whether fi, the local version's catalog in
// dir as a push is about to link it, still has the stamp commit wrote and
// the size the record gives: then its bytes are the ones commit hashed.
// False (hash it) when there is no stamp, it does not parse or anything
// differs.
func unchangedSinceCommit(dir string, fi os.FileInfo, size int64) bool {
	got, ok := stampOf(fi)
	if !ok || fi.Size() != size {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil {
		return false
	}
	var want catalogStamp
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	return got == want
}
