package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile starts a CPU profile written to the file FDL_CPUPROFILE
// names, when that variable is set (for finding where a command's time
// goes: go tool pprof bin/fdl FILE; docs/performance.md). The returned
// function stops it. A profile that cannot start is reported on stderr and
// the command runs without it.
func startProfile() (stop func()) {
	path := os.Getenv("FDL_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fdl: FDL_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
