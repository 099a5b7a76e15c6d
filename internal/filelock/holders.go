package filelock

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxHolders bounds how many processes Holders names.
const maxHolders = 4

// Holders returns the processes other than this one that hold one of
// paths open, as "pid N (command)", at most four of them (then "…"), for a
// message about a lock that is taking long: a lock's holder has its file
// open. It reads /proc/<pid>/fd, one readlink per descriptor, so it costs
// in proportion to the open files on the machine: call it only once a
// wait has gone on. nil where /proc is absent (not Linux) or the holder
// is another user's process.
func Holders(paths ...string) []string {
	want := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		want[abs] = true
		if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			want[filepath.Join(dir, filepath.Base(abs))] = true
		}
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		if !holds(pid, want) {
			continue
		}
		if len(out) == maxHolders {
			return append(out, "…")
		}
		out = append(out, describeProcess(pid))
	}
	return out
}

// holds reports whether process pid has one of the files in want open.
func holds(pid int, want map[string]bool) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && want[target] {
			return true
		}
	}
	return false
}

// describeProcess is "pid N (command)", the command from /proc/N/comm.
func describeProcess(pid int) string {
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if name := strings.TrimSpace(string(comm)); err == nil && name != "" {
		return fmt.Sprintf("pid %d (%s)", pid, name)
	}
	return fmt.Sprintf("pid %d", pid)
}
