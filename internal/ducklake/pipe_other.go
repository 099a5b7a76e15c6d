//go:build !linux

package ducklake

import (
	"errors"
	"os"
)

// makePipe fails here (ErrUnsupported): streamTable then passes each table
// through a CSV file (fileTable).
var makePipe = func(string) (r, w *os.File, err error) { return nil, nil, errors.ErrUnsupported }

// growPipe does nothing here: makePipe makes no pipe.
func growPipe(*os.File) {}

// pipeEmpty is never asked here: makePipe makes no pipe.
func pipeEmpty(*os.File) bool { return true }
