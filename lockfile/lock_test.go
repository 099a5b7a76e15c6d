package lockfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockExcludesWriters: a second writer waits while the first holds the
// lockfile's writers' lock (here, until its context ends, with an error
// naming the lock and the lockfile); once released, the lock file is gone
// and the lock can be taken again.
func TestLockExcludesWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	release, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(LockPath(path)); err != nil {
		t.Fatalf("held lock has no file: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = Lock(ctx, path)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), LockPath(path)) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Lock while held: %v, want a deadline error naming %s", err, LockPath(path))
	}
	release()
	if _, err := os.Stat(LockPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("released lock left its file: %v", err)
	}
	done := make(chan error, 1)
	release2, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		r, err := Lock(context.Background(), path)
		if err == nil {
			r()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a waiting writer got the lock while it was held (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	release2()
	if err := <-done; err != nil {
		t.Fatalf("the waiting writer, once the lock was free: %v", err)
	}
}

// TestLockMissingFolder: a lockfile in a folder that does not exist is
// named, with its folder, not the lock's own file.
func TestLockMissingFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nosuch")
	path := filepath.Join(dir, "x.lock")
	_, err := Lock(context.Background(), path)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "lockfile "+path+": its folder "+dir+" does not exist") {
		t.Fatalf("Lock in a missing folder: %v", err)
	}
}

// TestSymlinkedLockfile: a lockfile kept as a symbolic link stays one when
// saved through the link (the file it points to gets the new bytes), and
// a writer through the link and one through the target share one lock.
func TestSymlinkedLockfile(t *testing.T) {
	t.Parallel()
	shared := filepath.Join(t.TempDir(), "shared.lock")
	if err := New().Save(shared); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), FileName)
	if err := os.Symlink(shared, link); err != nil {
		t.Fatal(err)
	}
	release, err := Lock(context.Background(), link)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, shared); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock of the target while the link's is held: %v; want it to wait", err)
	}
	f := New()
	if err := f.Set("sales", salesPin()); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(link); err != nil {
		t.Fatal(err)
	}
	release()
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("after a save through it, %s is no longer a symbolic link (%v)", link, err)
	}
	got, err := Load(shared)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Pin("sales"); !ok {
		t.Fatalf("the linked file %s did not get the saved pin", shared)
	}
}

// TestDanglingSymlinkedLockfile: a lockfile that is a symbolic link to a
// file not made yet (relative to the link's folder) stays a link when
// saved through it: the write makes the file it names.
func TestDanglingSymlinkedLockfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, FileName)
	if err := os.Symlink(filepath.Join("shared", "team.lock"), link); err != nil {
		t.Fatal(err)
	}
	release, err := Lock(context.Background(), link)
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	if err := f.Set("sales", salesPin()); err != nil {
		t.Fatal(err)
	}
	err = f.Save(link)
	release()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("after a save through it, %s is no longer a symbolic link (%v)", link, err)
	}
	got, err := Load(filepath.Join(dir, "shared", "team.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Pin("sales"); !ok {
		t.Fatal("the file the link names did not get the saved pin")
	}
	// Find takes a dangling link as its folder's lockfile, before a
	// parent's: the link is where this folder's pins go.
	parent := t.TempDir()
	if err := New().Save(filepath.Join(parent, FileName)); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(parent, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(parent, "nosuch.lock"), filepath.Join(sub, FileName)); err != nil {
		t.Fatal(err)
	}
	if found, err := Find(sub); err != nil || found != filepath.Join(sub, FileName) {
		t.Fatalf("Find from a folder whose fdl.lock is a dangling link = %s, %v; want the link", found, err)
	}
}
