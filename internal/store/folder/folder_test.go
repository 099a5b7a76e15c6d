package folder_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/folder"
	"github.com/fdl-dev/fdl/internal/store/storetest"
)

func newLocal(t *testing.T) *folder.Store {
	t.Helper()
	l, err := folder.Open(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
		assertNoTemp(t, l.Location(""))
	})
	return l
}

// assertNoTemp fails if a temporary file is left under root.
func assertNoTemp(t *testing.T, root string) {
	t.Helper()
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", path)
		}
		return nil
	})
}

func TestFolderConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newLocal(t) })
}

func TestFolderFaultyConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return &storetest.Faulty{Store: newLocal(t)} })
}

func TestFolderFiles(t *testing.T) {
	ctx := t.Context()
	l := newLocal(t)
	if l.Exists() {
		t.Fatalf("Exists() before the first write")
	}
	if err := l.Create(ctx, "versions/01/version.json", strings.NewReader("{}\n")); err != nil {
		t.Fatal(err)
	}
	if !l.Exists() {
		t.Errorf("Exists() false after a write")
	}
	path := l.Location("versions/01/version.json")
	if !filepath.IsAbs(path) || path != filepath.Join(l.Location(""), "versions", "01", "version.json") {
		t.Errorf("Location = %q, want an absolute path under %q", path, l.Location(""))
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{}\n" {
		t.Errorf("file at Location holds %q, %v", b, err)
	}
	// Token = hex SHA-256 of the content.
	tok, err := l.Swap(ctx, "refs/heads/main", store.NoToken, []byte("abc\n"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("abc\n"))
	if want := store.Token(hex.EncodeToString(sum[:])); tok != want {
		t.Errorf("Swap token = %q, want %q", tok, want)
	}
	if _, gtok, _ := store.ReadAll(ctx, l, "refs/heads/main"); gtok != tok {
		t.Errorf("Get token = %q, want %q", gtok, tok)
	}
	// The lock file exists on disk but is not listed.
	if _, err := os.Stat(l.Location("refs/heads/main") + ".lock"); err != nil {
		t.Errorf("lock file: %v", err)
	}
}

func TestFolderLargeToken(t *testing.T) {
	ctx := t.Context()
	l := newLocal(t)
	big := bytes.Repeat([]byte("x"), store.MaxSwapSize+1)
	if err := l.Create(ctx, "big", bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	got, tok, err := store.ReadAll(ctx, l, "big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("ReadAll = %d bytes, %v", len(got), err)
	}
	if tok == store.NoToken {
		t.Fatalf("large object has NoToken")
	}
	if _, err := l.Swap(ctx, "big", tok, []byte("small")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Swap of a large object = %v, want ErrConflict", err)
	}
	sum := sha256.Sum256(big)
	if _, err := l.Swap(ctx, "big", store.Token(hex.EncodeToString(sum[:])), []byte("small")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Swap of a large object with its hash = %v, want ErrConflict", err)
	}
	// Not even the hash of empty content (what a nil read would hash to).
	empty := sha256.Sum256(nil)
	if _, err := l.Swap(ctx, "big", store.Token(hex.EncodeToString(empty[:])), []byte("small")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Swap of a large object with the empty hash = %v, want ErrConflict", err)
	}
	if got, _, _ := store.ReadAll(ctx, l, "big"); !bytes.Equal(got, big) {
		t.Errorf("refused Swap changed the object")
	}
	// Exactly MaxSwapSize is hashed and swappable.
	edge := bytes.Repeat([]byte("y"), store.MaxSwapSize)
	if err := l.Create(ctx, "edge", bytes.NewReader(edge)); err != nil {
		t.Fatal(err)
	}
	_, tok, _ = store.ReadAll(ctx, l, "edge")
	if _, err := l.Swap(ctx, "edge", tok, []byte("small")); err != nil {
		t.Errorf("Swap of a MaxSwapSize object: %v", err)
	}
}

func TestFolderFolderVersusObject(t *testing.T) {
	ctx := t.Context()
	l := newLocal(t)
	if err := l.Create(ctx, "a/b", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	// "a" is a folder, not an object.
	if _, _, err := l.Get(ctx, "a"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("Get of a folder = %v, want ErrNotExist", err)
	}
	if _, err := l.Stat(ctx, "a"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("Stat of a folder = %v, want ErrNotExist", err)
	}
	if err := l.Create(ctx, "a", strings.NewReader("y")); err == nil || errors.Is(err, store.ErrExist) {
		t.Errorf("Create over a folder = %v, want an error other than ErrExist", err)
	}
	if err := l.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete of a folder = %v, want nil (no object)", err)
	}
	if _, _, err := l.Get(ctx, "a/b"); err != nil {
		t.Errorf("Delete of the folder removed its object: %v", err)
	}
	// "a/b" is a file: "a/b/c" cannot exist below it.
	if _, _, err := l.Get(ctx, "a/b/c"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("Get below a file = %v, want ErrNotExist", err)
	}
	if err := l.Create(ctx, "a/b/c", strings.NewReader("z")); err == nil || errors.Is(err, store.ErrExist) {
		t.Errorf("Create below a file = %v, want an error other than ErrExist", err)
	}
	if _, err := l.Swap(ctx, "a/b/c", store.NoToken, []byte("z")); err == nil || errors.Is(err, store.ErrConflict) {
		t.Errorf("Swap below a file = %v, want an error other than ErrConflict", err)
	}
}

func TestFolderDeleteRemovesEmptyFolders(t *testing.T) {
	ctx := t.Context()
	l := newLocal(t)
	for _, k := range []string{"versions/01/ducklake.duckdb", "versions/01/version.json", "versions/02/version.json"} {
		if err := l.Create(ctx, k, strings.NewReader(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"versions/01/ducklake.duckdb", "versions/01/version.json"} {
		if err := l.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(l.Location("versions/01")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty folder versions/01 left after Delete: %v", err)
	}
	if _, err := os.Stat(l.Location("versions/02")); err != nil {
		t.Errorf("non-empty folder removed: %v", err)
	}
	if err := l.Delete(ctx, "versions/02/version.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.Location("")); err != nil {
		t.Errorf("Delete removed the root: %v", err)
	}
}

func TestOpenOnFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := folder.Open(f); err == nil {
		t.Errorf("Open on a file succeeded")
	}
	if _, err := folder.Open(""); err == nil {
		t.Errorf("Open(\"\") succeeded")
	}
}

// TestFirstForeign: files that are not objects are found (a lockfile with
// content, a name with a control character); the store's own empty lock
// files, temporary files and objects are not.
func TestFirstForeign(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "r")
	l, err := folder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := l.FirstForeign(ctx); err != nil || got != "" {
		t.Fatalf("missing root: %q, %v", got, err)
	}
	if err := l.Create(ctx, "data/a.parquet", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Swap(ctx, "refs/heads/main", store.NoToken, []byte("v\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "data", ".tmp-abc"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := l.FirstForeign(ctx); err != nil || got != "" {
		t.Fatalf("objects, a Swap's lock and a temp file: %q, %v; want none", got, err)
	}
	if err := os.WriteFile(filepath.Join(root, "fdl.lock"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := l.FirstForeign(ctx); err != nil || got != "fdl.lock" {
		t.Fatalf("a lockfile with content: %q, %v; want fdl.lock", got, err)
	}
	os.Remove(filepath.Join(root, "fdl.lock"))
	if err := os.WriteFile(filepath.Join(root, "data", "bad\x01name"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := l.FirstForeign(ctx); err != nil || got != "data/bad\x01name" {
		t.Fatalf("a name no key can have: %q, %v", got, err)
	}
}
