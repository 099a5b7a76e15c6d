package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
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

// RestoreTree makes dst an exact copy of src: it removes dst, then copies
// src there with `cp -a` (folders, files and symbolic links, with their
// modes and modification times: a working directory's stamp compares
// them). A test that builds a fixture once keeps a copy made with it and
// restores the fixture before each case, at the same absolute path (the
// fixture's files name it: the repository URL, the data path).
func RestoreTree(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy %s to %s: %v\n%s", src, dst, err, out)
	}
}
