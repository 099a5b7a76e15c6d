//go:build unix

package ducklake

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockOwner creates the owner file path and locks it (flock, exclusive)
// until release is called or the process ends. The file is locked under
// another name and then renamed into place, so a sweep never finds it
// unlocked while its process lives.
func lockOwner(path string) (release func(), err error) {
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flockRetry(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	return func() { f.Close() }, nil
}

// ownerAlive says whether some process holds the owner file path locked.
// Errors: the file's (fs.ErrNotExist when there is none).
func ownerAlive(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = flockRetry(f, unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case err == nil:
		return false, nil // released by closing f
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, nil
	}
	return false, err
}

func flockRetry(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
