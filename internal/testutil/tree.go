package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TreeDigest digests every file under dir: names, whether each is a
// folder, and the bytes of regular files.
func TreeDigest(t testing.TB, dir string) string {
	t.Helper()
	d, err := DigestTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// DigestTree is TreeDigest for callers without a testing.TB. On an error
// it returns the digest of what it read before the error, and the error
// (a missing dir gives the digest of nothing and an fs.ErrNotExist).
func DigestTree(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%v\x00", rel, d.IsDir())
		if d.Type().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			io.Copy(h, f)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}
