//go:build !unix

package ducklake

import "os"

// lockOwner creates the owner file path; outside Unix there is no lock
// the kernel drops when the process ends, so leftovers are never swept.
func lockOwner(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// ownerAlive says a folder is always owned outside Unix (nothing is
// swept but folders without an owner file).
func ownerAlive(path string) (bool, error) {
	if _, err := os.Stat(path); err != nil {
		return false, err
	}
	return true, nil
}
