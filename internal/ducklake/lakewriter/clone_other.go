//go:build !linux

package lakewriter

import (
	"errors"
	"os"
)

// cloneFile is not available here: the caller copies.
func cloneFile(dst, src *os.File) error { return errors.ErrUnsupported }
