package lockfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/filelock"
)

// LockPath returns the path of the writers' lock of the lockfile at path:
// ".<name>.lock" in its folder (".fdl.lock.lock" for fdl.lock), present
// only while a writer holds it (or after a holder died).
func LockPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// maxLockRetries bounds Lock's retries when the lock file is replaced
// between its open and its lock; each retry means another writer took and
// released the lock meanwhile.
const maxLockRetries = 1000

// Lock takes the writers' lock of the lockfile at path, waiting (polling
// 1 ms doubling to 50 ms) while another process holds it, and returns the
// function that releases it. A command that changes a lockfile (read,
// change, Save) holds it from before its read to after its save, so that
// two of them at once (two `fdl lock add`, an add and an update) never
// write over each other's change; readers take no lock (Save renames a
// whole file into place). The lock is the operating system's
// (internal/filelock: flock, LockFileEx), released by the kernel when its
// holder dies; its file (LockPath) is removed by the holder before it
// unlocks, and a process that locks the file checks that it is still the
// one at the path (the catalog cache's protocol, docs/spec.md §21.1).
// Errors: creating or locking the file, naming it; ctx's error while
// waiting, naming the lock and the processes that hold it where the
// system says.
func Lock(ctx context.Context, path string) (release func(), err error) {
	path = linkTarget(path) // links to one lockfile share its lock, as Save writes the target
	lp := LockPath(path)
	wait := time.Millisecond
	for {
		f, ok, err := tryLock(path, lp)
		if err != nil {
			return nil, err
		}
		if ok {
			return func() {
				_ = os.Remove(lp)
				filelock.Unlock(f)
				f.Close()
			}, nil
		}
		select {
		case <-ctx.Done():
			held := ""
			if h := filelock.Holders(lp); len(h) > 0 {
				held = " (held by " + strings.Join(h, ", ") + ")"
			}
			return nil, fmt.Errorf("waiting for %s, the lock another fdl holds while it writes %s%s: %w", lp, path, held, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// tryLock locks the file at lp, the lock of the lockfile at path, without
// waiting; ok false when another process, or another open file of this
// one, holds it.
func tryLock(path, lp string) (f *os.File, ok bool, err error) {
	for range maxLockRetries {
		f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("lockfile %s: its folder %s does not exist: %w", path, filepath.Dir(path), err)
		}
		if err != nil {
			return nil, false, fmt.Errorf("lock %s: %w", lp, err)
		}
		ok, err := filelock.TryLock(f)
		if err != nil || !ok {
			f.Close()
			if err != nil {
				return nil, false, fmt.Errorf("lock %s: %w", lp, err)
			}
			return nil, false, nil
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(lp)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, true, nil
		}
		// Its holder removed the file between our open and our lock.
		filelock.Unlock(f)
		f.Close()
	}
	return nil, false, fmt.Errorf("lock %s: replaced %d times while being taken", lp, maxLockRetries)
}
