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

// RestoreTree makes dst an exact copy of src: it removes dst, then copies
// every folder, regular file and symbolic link of src with its mode, and
// each file's modification time (a working directory's stamp compares
// them). A test that builds a fixture once keeps a copy made with it and
// restores the fixture before each case, at the same absolute path (the
// fixture's files name it: the repository URL, the data path).
func RestoreTree(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: neither a folder, a file nor a link", p)
		}
		if err := copyFile(p, to, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(to, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
