//go:build !linux

package folder

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// readEntries calls fn with the key of each entry of the open folder f
// (dirKey plus its name) and its type, listBatch entries at a time through
// os.File.ReadDir (the Linux build reads the folder with getdents64
// instead). fn's error stops the reading and is returned; so are the
// reads'.
func readEntries(f *os.File, dirKey string, fn func(key string, typ fs.FileMode) error) error {
	for {
		entries, err := f.ReadDir(listBatch)
		for _, e := range entries {
			if ferr := fn(dirKey+e.Name(), e.Type()); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
