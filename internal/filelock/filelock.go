// Package filelock takes the operating system's exclusive, non-blocking
// file lock: flock(2) on Unix, LockFileEx on Windows. The kernel releases
// such a lock when its holder closes the file or dies, even by SIGKILL, so a
// crashed process never leaves a lock behind. The folder store locks its
// refs with it (package folder), and a working directory its state.
package filelock

import (
	"errors"
	"fmt"
	"os"
)

// ErrBusy: a lock file is held by another process.
var ErrBusy = errors.New("locked by another fdl process")

// Lock takes an exclusive, non-blocking lock on path (creating the file,
// not its folder) and returns the function that releases it. Errors:
// ErrBusy (wrapped with path) when another process, or another open file
// of this one, holds it; the error of opening path; on a platform with
// neither flock nor LockFileEx, an error saying so.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	ok, err := TryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrBusy)
	}
	return func() { Unlock(f); f.Close() }, nil
}
