//go:build unix

package gc_test

import (
	"syscall"
	"time"
)

// cpuTime is the user and system CPU time this process has used (every
// thread, DuckDB's included): a measure other processes on a shared
// machine do not disturb.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
