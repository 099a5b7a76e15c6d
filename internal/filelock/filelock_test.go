package filelock_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/filelock"
)

// A second Lock of a held file is refused with ErrBusy naming the file
// (flock and LockFileEx both exclude another open file of the same
// process), and the file can be locked again once released.
func TestLockBusyThenFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := filelock.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = filelock.Lock(path)
	if !errors.Is(err, filelock.ErrBusy) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Lock = %v, want ErrBusy naming %s", err, path)
	}
	unlock()
	unlock2, err := filelock.Lock(path)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	unlock2()
}

// TryLock reports false, without an error, on a file another open file
// holds.
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	a, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := filelock.TryLock(a); !ok || err != nil {
		t.Fatalf("TryLock(a) = %v, %v, want true", ok, err)
	}
	if ok, err := filelock.TryLock(b); ok || err != nil {
		t.Fatalf("TryLock(b) while a holds it = %v, %v, want false, nil", ok, err)
	}
	filelock.Unlock(a)
	if ok, err := filelock.TryLock(b); !ok || err != nil {
		t.Fatalf("TryLock(b) after Unlock(a) = %v, %v, want true", ok, err)
	}
}

func TestLockMissingFolder(t *testing.T) {
	if _, err := filelock.Lock(filepath.Join(t.TempDir(), "no", "lock")); err == nil || errors.Is(err, filelock.ErrBusy) {
		t.Fatalf("Lock in a missing folder = %v, want the open error", err)
	}
}
