//go:build !unix

package sqlitebulk

import "errors"

// dupCloexec is not available here: LoadFrom fails.
func dupCloexec(int) (int, error) { return -1, errors.ErrUnsupported }

// closeFD does nothing: no descriptor was duplicated.
func closeFD(int) {}
