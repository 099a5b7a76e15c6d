//go:build unix

package gc

import (
	"os"
	"syscall"
)

// fileID is a file's identity on its machine: device and inode.
type fileID struct{ dev, ino uint64 }

// identify returns fi's identity; false where the platform gives none.
func identify(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true //nolint:unconvert // Dev is 32 bits on some platforms
}
