//go:build unix

package filelock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// TryLock takes an exclusive flock(2) on f without waiting. It reports false
// if another open file description holds it. The kernel releases the lock
// when f is closed or its process dies.
func TryLock(f *os.File) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		default:
			return false, fmt.Errorf("flock: %w", err)
		}
	}
}

// Unlock releases the lock TryLock took on f (closing f releases it too).
func Unlock(f *os.File) {
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN) // closing f releases it anyway
}
