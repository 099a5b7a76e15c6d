package store

import (
	"errors"
	"fmt"
	"os"
)

// ErrBusy: a lock file is held by another process.
var ErrBusy = errors.New("locked by another fdl process")

// LockFile takes an exclusive, non-blocking lock on path (creating it) with
// the same OS lock as the folder store's refs (flock on Unix, LockFileEx on
// Windows), so the kernel releases it when the process dies. It returns the
// function that releases it. Errors: ErrBusy (wrapped with path) when
// another process holds it.
func LockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrBusy)
	}
	return func() { unlockFile(f); f.Close() }, nil
}
