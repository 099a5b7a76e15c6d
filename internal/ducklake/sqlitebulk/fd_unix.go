//go:build unix

package sqlitebulk

import "golang.org/x/sys/unix"

// dupCloexec duplicates fd, close-on-exec.
func dupCloexec(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

// closeFD closes fd.
func closeFD(fd int) { unix.Close(fd) }
