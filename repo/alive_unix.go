//go:build unix

package repo

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this id runs on this
// machine (signal 0: EPERM means it runs under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
