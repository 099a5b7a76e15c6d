package cache

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fdl-dev/fdl/internal/filelock"
)

// entryLock is an entry's lock, held: the operating system's exclusive
// lock (package filelock) on <sha256>.lock. The file exists only while it
// is held (or after its holder died): release removes it before unlocking,
// and tryLock, having locked a file, checks that it is still the one at
// the path, so a process that opened the file before it was removed never
// believes it holds the lock of a file that is gone.
type entryLock struct {
	f    *os.File
	path string
}

// maxLockRetries bounds tryLock's retries when the lock file is replaced
// between its open and its lock; each retry means another process took
// and released the lock meanwhile.
const maxLockRetries = 1000

// tryLock takes the lock at path without waiting. It reports false when
// another process, or another open file of this one, holds it. Errors:
// opening or locking the file, naming it.
func tryLock(path string) (*entryLock, bool, error) {
	for range maxLockRetries {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, false, fmt.Errorf("cache lock %s: %w", path, err)
		}
		ok, err := filelock.TryLock(f)
		if err != nil {
			f.Close()
			return nil, false, fmt.Errorf("cache lock %s: %w", path, err)
		}
		if !ok {
			f.Close()
			return nil, false, nil
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return &entryLock{f: f, path: path}, true, nil
		}
		// Its holder removed the file between our open and our lock.
		filelock.Unlock(f)
		f.Close()
	}
	return nil, false, fmt.Errorf("cache lock %s: replaced %d times while being taken", path, maxLockRetries)
}

// lock takes the lock at path, polling (1 ms doubling to 50 ms) until it
// is free or ctx is done. Errors: tryLock's; ctx's error, naming the lock.
func lock(ctx context.Context, path string) (*entryLock, error) {
	wait := time.Millisecond
	for {
		l, ok, err := tryLock(path)
		if err != nil || ok {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for cache lock %s: %w", path, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// release removes the lock file and unlocks it (in that order: see
// entryLock). Where the file cannot be removed (Windows, while another
// process has it open) it stays, unlocked, and the next holder reuses it.
func (l *entryLock) release() {
	_ = os.Remove(l.path)
	filelock.Unlock(l.f)
	l.f.Close()
}
