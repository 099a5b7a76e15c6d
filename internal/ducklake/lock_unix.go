//go:build unix

package ducklake

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockDuckDBFile takes, without waiting, the lock DuckDB takes on a
// database file it opens for writing: an fcntl (POSIX record) write lock
// on the whole file (DuckDB's LocalFileSystem: F_SETLK, F_WRLCK, l_start 0,
// l_len 0; a read-only attach takes F_RDLCK). While a DuckDB process has
// the file attached, the lock is refused: ErrLocked. POSIX record locks
// belong to the process and go when any descriptor of the file in this
// process is closed: nothing else in fdl may open path while it is held.
func lockDuckDBFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	for {
		err = unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("%w: %s is attached by another process (DuckDB holds its lock); DETACH it there (or close that DuckDB connection) and try again", ErrLocked, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// fileInode is fi's inode number (0 where the system has none).
func fileInode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
