//go:build !linux

package ducklake

import (
	"errors"
	"os"
)

// pipesWork is false: each table goes through a CSV file (exportAll).
const pipesWork = false

// makePipe is not used where pipesWork is false.
var makePipe = func(string) (r, w *os.File, err error) { return nil, nil, errors.ErrUnsupported }
