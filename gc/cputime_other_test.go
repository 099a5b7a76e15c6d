//go:build !unix

package gc_test

import "time"

// cpuTime is not measured on this system (see cputime_unix_test.go).
func cpuTime() time.Duration { return 0 }
