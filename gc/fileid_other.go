//go:build !unix

package gc

import "os"

// fileID is a file's identity on its machine (none on this platform: gc
// then relies on paths with symbolic links resolved).
type fileID struct{ dev, ino uint64 }

// identify returns false: no file identity on this platform.
func identify(os.FileInfo) (fileID, bool) { return fileID{}, false }
