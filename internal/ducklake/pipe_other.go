//go:build !linux

package ducklake

import (
	"errors"
	"os"
)

// makePipe fails here (ErrUnsupported): streamTable then passes each table
// through a CSV file (fileTable).
var makePipe = func(string) (r, w *os.File, err error) { return nil, nil, errors.ErrUnsupported }
