//go:build !unix && !windows

package filelock

import (
	"errors"
	"os"
)

// TryLock fails: this platform has no file lock fdl can rely on, so a
// folder store's Swap is refused rather than left unsafe.
func TryLock(*os.File) (bool, error) {
	return false, errors.New("file locking is not supported on this platform")
}

// Unlock does nothing (TryLock never locks here).
func Unlock(*os.File) {}
