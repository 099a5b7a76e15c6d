//go:build linux

package lakewriter

import (
	"os"

	"golang.org/x/sys/unix"
)

// cloneFile makes dst share src's blocks (FICLONE: btrfs, XFS and other
// copy-on-write file systems); an error where the file system cannot.
func cloneFile(dst, src *os.File) error {
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
}
