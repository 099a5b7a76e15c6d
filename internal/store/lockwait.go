package store

import (
	"context"
	"time"
)

// LockWaitNotice is how long a write waits on a lock before the store
// says so (NoteLockWait), once per wait.
const LockWaitNotice = 2 * time.Second

// LockWait is what a store says about a write that has waited
// LockWaitNotice on a lock another process holds: on a folder store, the
// flock(2) of a ref's "<key>.lock" file, which a push, branch move or tag
// holds for the few milliseconds of its compare-and-swap, so a long wait
// means a holder that is stuck (stopped, or on a hung file system).
type LockWait struct {
	Key     string        // the key whose lock is awaited: refs/heads/main
	Lock    string        // where the lock is, as the store names it
	Waited  time.Duration // how long it has waited so far
	Holders []string      // "pid N (command)" of the processes holding the lock file open, where known
}

type lockWaitKey struct{}

// WithLockWait returns ctx carrying fn, which a store calls (from the
// waiting goroutine) when a write in ctx has waited LockWaitNotice on a
// lock: the command line prints it, so a waiting push does not look hung.
func WithLockWait(ctx context.Context, fn func(LockWait)) context.Context {
	return context.WithValue(ctx, lockWaitKey{}, fn)
}

// NoteLockWait gives w to the function WithLockWait put in ctx, if any.
func NoteLockWait(ctx context.Context, w LockWait) {
	if fn, ok := ctx.Value(lockWaitKey{}).(func(LockWait)); ok && fn != nil {
		fn(w)
	}
}
