//go:build !unix

package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// markersIn calls mark with each of ids that has a retirement marker in
// dir, the versions/ folder of a folder store: one stat each. Errors: the
// file system's, other than a missing marker.
func markersIn(dir string, ids []version.ID, mark func(version.ID)) error {
	for _, id := range ids {
		fi, err := os.Stat(filepath.Join(dir, string(id), retention.MarkerFile))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("stat marker of %s: %w", id, err)
		case !fi.IsDir():
			mark(id)
		}
	}
	return nil
}
