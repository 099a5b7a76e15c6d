//go:build !unix

package ducklake

import "io/fs"

// lockDuckDBFile has no lock to take outside Unix: there, a file another
// process has open cannot be renamed over (the rename fails, sharing
// violation), so the replacement refuses by itself.
func lockDuckDBFile(path string) (func(), error) { return func() {}, nil }

// fileInode is 0 outside Unix (FileStamp compares sizes and times).
func fileInode(fi fs.FileInfo) uint64 { return 0 }
