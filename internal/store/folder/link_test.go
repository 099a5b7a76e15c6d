//go:build unix

package folder_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/testutil"
)

// TestCreateLink: the linked object is the local file itself (one inode,
// no copy), read-only for every name, checked before it becomes visible;
// a failing check or an existing key creates nothing.
func TestCreateLink(t *testing.T) {
	ctx := t.Context()
	l := newLocal(t)
	local := filepath.Join(t.TempDir(), "catalog.duckdb")
	data := bytes.Repeat([]byte("catalog "), 1<<16)
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A failing check: nothing at the key, no temporary file.
	refuse := errors.New("digest differs")
	err := l.CreateLink(ctx, "versions/1/ducklake.duckdb", local, func(f *os.File) error { return refuse })
	if !errors.Is(err, refuse) {
		t.Fatalf("CreateLink with a failing check: %v", err)
	}
	if _, err := l.Stat(ctx, "versions/1/ducklake.duckdb"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("after a failing check: %v", err)
	}
	// The check reads the file's bytes through the new name.
	var seen []byte
	err = l.CreateLink(ctx, "versions/1/ducklake.duckdb", local, func(f *os.File) error {
		var err error
		seen, err = io.ReadAll(f)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seen, data) {
		t.Fatal("check did not read the file's bytes")
	}
	stored := l.Location("versions/1/ducklake.duckdb")
	a, errA := os.Stat(local)
	b, errB := os.Stat(stored)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !os.SameFile(a, b) {
		t.Fatal("the object is not the local file (a copy was made)")
	}
	if a.Mode().Perm() != 0o444 {
		t.Errorf("mode %v, want read-only 0444 for every name", a.Mode().Perm())
	}
	if os.Geteuid() != 0 {
		// Read-only refuses a write through the local name.
		if f, err := os.OpenFile(local, os.O_WRONLY, 0); err == nil {
			f.Close()
			t.Error("the linked file can be opened for writing")
		}
	}
	got, _, err := store.ReadAll(ctx, l, "versions/1/ducklake.duckdb")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after CreateLink: %v", err)
	}
	// Create-only.
	err = l.CreateLink(ctx, "versions/1/ducklake.duckdb", local, nil)
	if !errors.Is(err, store.ErrExist) {
		t.Fatalf("second CreateLink: %v, want ErrExist", err)
	}
	// Removing the local name leaves the object whole.
	if err := os.Remove(local); err != nil {
		t.Fatal(err)
	}
	if got, _, err := store.ReadAll(ctx, l, "versions/1/ducklake.duckdb"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after removing the local name: %v", err)
	}
}

// TestCreateLinkOtherFileSystem: a file on another file system is refused
// with ErrCannotLink and nothing is written (the caller copies). It needs a
// second file system: FDL_OTHER_FS names a folder on one, else /dev/shm
// (tmpfs on Linux) is used when it is one.
func TestCreateLinkOtherFileSystem(t *testing.T) {
	other := testutil.OtherFileSystem(t)
	ctx := t.Context()
	l := newLocal(t)
	local := filepath.Join(other, "catalog.duckdb")
	if err := os.WriteFile(local, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	called := false
	err := l.CreateLink(ctx, "versions/1/ducklake.duckdb", local, func(*os.File) error { called = true; return nil })
	if !errors.Is(err, store.ErrCannotLink) {
		t.Fatalf("CreateLink across file systems: %v, want ErrCannotLink", err)
	}
	if called {
		t.Error("check was called although nothing was linked")
	}
	if fi, _ := os.Stat(local); fi.Mode().Perm() != 0o644 {
		t.Errorf("the local file's mode changed to %v", fi.Mode().Perm())
	}
	var keys []string
	l.List(ctx, "", func(oi store.ObjectInfo) error { keys = append(keys, oi.Key); return nil })
	if len(keys) != 0 {
		t.Errorf("objects after a refused link: %v", keys)
	}
}

// TestListKeysLargeFolder: ListKeys of a folder gives exactly List's keys
// (in its own order)
// (links to files included, links to folders followed, dangling links,
// temporary files and folders that cannot hold the prefix left out).
func TestListKeysLargeFolder(t *testing.T) {
	ctx := t.Context()
	l := newLocal(t)
	for i := range 300 {
		name := "data/main/t/ducklake-" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".parquet"
		if err := l.Create(ctx, name, bytes.NewReader(nil)); err != nil {
			t.Fatal(err)
		}
	}
	dir := l.Location("data/main/t")
	os.Symlink(filepath.Join(dir, "ducklake-aa.parquet"), filepath.Join(dir, "linked.parquet"))
	os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "dangling.parquet"))
	os.WriteFile(filepath.Join(dir, ".tmp-123"), nil, 0o644)
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "f.parquet"), nil, 0o644)
	os.Symlink(other, filepath.Join(dir, "sub"))
	for _, prefix := range []string{"", "data/", "data/main/t/", "data/main/t/ducklake-b", "data/main/t/sub/", "data/main/t/li"} {
		var list, keys []string
		if err := l.List(ctx, prefix, func(oi store.ObjectInfo) error { list = append(list, oi.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := l.ListKeys(ctx, prefix, func(k []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		if !slices.Equal(list, keys) || len(list) == 0 {
			t.Errorf("prefix %q: List %d keys, ListKeys %d; differ or empty", prefix, len(list), len(keys))
		}
	}
	os.Remove(filepath.Join(dir, ".tmp-123"))
}

// TestFailedCreateLeavesNoFolder: a Create whose reader fails, or a
// CreateLink whose check fails, removes the folders it made for the key
// (a refused push leaves the repository as it was).
func TestFailedCreateLeavesNoFolder(t *testing.T) {
	ctx := t.Context()
	l := newLocal(t)
	if err := l.Create(ctx, "fdl.json", bytes.NewReader(nil)); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("refused at the end")
	err := l.Create(ctx, "versions/9/ducklake.duckdb", io.MultiReader(bytes.NewReader([]byte("abc")), errReader{fail}))
	if !errors.Is(err, fail) {
		t.Fatalf("Create: %v", err)
	}
	local := filepath.Join(t.TempDir(), "c")
	os.WriteFile(local, []byte("x"), 0o644)
	if err := l.CreateLink(ctx, "versions/8/ducklake.duckdb", local, func(*os.File) error { return fail }); !errors.Is(err, fail) {
		t.Fatalf("CreateLink: %v", err)
	}
	for _, d := range []string{"versions/9", "versions/8", "versions"} {
		if _, err := os.Stat(l.Location(d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after failed writes: %v", d, err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestCreateExistingReadsNothing: Create refuses a key whose file exists
// before it reads r, so a resumed push on a nearly full disk needs no room
// for a second copy of the catalog it stored before.
func TestCreateExistingReadsNothing(t *testing.T) {
	ctx := t.Context()
	l := newLocal(t)
	if err := l.Create(ctx, "versions/9/ducklake.duckdb", bytes.NewReader([]byte("abc"))); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("read")
	err := l.Create(ctx, "versions/9/ducklake.duckdb", errReader{fail})
	if !errors.Is(err, store.ErrExist) || errors.Is(err, fail) {
		t.Fatalf("Create over an existing key: %v, want store.ErrExist before any read", err)
	}
	if err := l.Create(ctx, "versions/9", errReader{fail}); err == nil || errors.Is(err, store.ErrExist) || errors.Is(err, fail) {
		t.Fatalf("Create over a folder: %v, want the folder named before any read", err)
	}
}
