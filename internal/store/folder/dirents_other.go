//go:build !linux

package folder

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// readEntries calls fn with the name of each entry of the open folder f
// and its type, listBatch entries at a time through os.File.ReadDir (the
// Linux build reads the folder with getdents64 instead). fn's error stops
// the reading and is returned; so are the reads'.
func readEntries(f *os.File, fn func(name []byte, typ fs.FileMode) error) error {
	for {
		entries, err := f.ReadDir(listBatch)
		for _, e := range entries {
			if ferr := fn([]byte(e.Name()), e.Type()); ferr != nil {
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
