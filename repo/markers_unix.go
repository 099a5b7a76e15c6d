//go:build unix

package repo

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// markersIn calls mark with each of ids that has a retirement marker in
// dir, the versions/ folder of a folder store: one fstatat each, relative
// to the folder opened once (a marker is a file; symbolic links are
// followed, as the folder store's Stat does). A missing dir has no
// markers. Errors: the file system's, other than a missing marker.
func markersIn(dir string, ids []version.ID, mark func(version.ID)) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	for _, id := range ids {
		name := string(id) + "/" + retention.MarkerFile
		err := unix.Fstatat(fd, name, &st, 0)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		case err != nil:
			return fmt.Errorf("stat %s/%s: %w", dir, name, err)
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			mark(id)
		}
	}
	return nil
}
