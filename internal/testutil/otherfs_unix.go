//go:build unix

package testutil

import (
	"os"
	"syscall"
	"testing"
)

// OtherFileSystem returns a new folder on a file system other than
// os.TempDir()'s ($FDL_OTHER_FS, else /dev/shm), removed when the test
// ends; it skips the test where there is none. Tests of what differs
// across file systems use it (a push copies there instead of hard-linking).
func OtherFileSystem(t testing.TB) string {
	t.Helper()
	base := os.Getenv("FDL_OTHER_FS")
	if base == "" {
		base = "/dev/shm"
	}
	a, errA := os.Stat(base)
	b, errB := os.Stat(os.TempDir())
	if errA != nil || errB != nil || !a.IsDir() {
		t.Skip("no second file system (set FDL_OTHER_FS to a folder on one)")
	}
	sa, okA := a.Sys().(*syscall.Stat_t)
	sb, okB := b.Sys().(*syscall.Stat_t)
	if !okA || !okB || sa.Dev == sb.Dev {
		t.Skipf("%s is on the file system of %s (set FDL_OTHER_FS to a folder on another)", base, os.TempDir())
	}
	dir, err := os.MkdirTemp(base, "fdl-test-*")
	if err != nil {
		t.Skipf("%s: %v", base, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
