//go:build !linux

package filecopy

import "os"

// clone reports false: reflinks are used on Linux only.
func clone(dst, src *os.File) bool { return false }
