//go:build !unix && !windows

package store

import (
	"errors"
	"os"
)

// tryLock fails: this platform has no file lock the store can rely on, so
// Swap on a local folder is refused rather than left unsafe.
func tryLock(*os.File) (bool, error) {
	return false, errors.New("file locking is not supported on this platform")
}

func unlockFile(*os.File) {}

func syncDir(string) error { return nil }
