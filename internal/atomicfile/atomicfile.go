// Package atomicfile writes a file so that a reader, or a process killed
// half way, sees either the old bytes or the new ones: a temporary file in
// the same folder, fsync, rename. It serves the working directory's state
// files and the files a local version is made of.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces the file at path with b: a temporary file ".tmp-*" in the
// same folder, written and fsynced, renamed over path. A failure leaves the
// old file (or none) and removes the temporary file. Errors: the file
// system's.
func Write(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
