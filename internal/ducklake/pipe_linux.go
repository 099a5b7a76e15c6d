//go:build linux

package ducklake

import (
	"os"

	"golang.org/x/sys/unix"
)

// makePipe makes a named pipe at path (mode 0600) and opens both of its
// ends without waiting for the other: r, for blocking reads, and w, held
// so that a reader meets the end of the rows only once w is closed (and
// every other writer). Errors: the file system's. A variable so tests can
// stand for a file system without named pipes.
var makePipe = func(path string) (r, w *os.File, err error) {
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil, nil, &os.PathError{Op: "mkfifo", Path: path, Err: err}
	}
	rfd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	// A write end opens at once now that a read end is open.
	wfd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.SetNonblock(rfd, false)
	}
	if err != nil {
		unix.Close(rfd)
		if wfd >= 0 {
			unix.Close(wfd)
		}
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(rfd), path), os.NewFile(uintptr(wfd), path), nil
}

// growPipe asks for a 1 MiB buffer on the pipe of f (F_SETPIPE_SZ); where
// the system refuses (a smaller /proc/sys/fs/pipe-max-size), the pipe
// keeps its size.
func growPipe(f *os.File) {
	unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, 1<<20)
}

// pipeEmpty reports whether the pipe of f holds no bytes (FIONREAD, which
// Linux names TIOCINQ); an error counts as empty.
func pipeEmpty(f *os.File) bool {
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
	return err != nil || n == 0
}
