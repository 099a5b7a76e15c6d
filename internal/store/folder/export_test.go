package folder

import "context"

// LockForTest takes the lock Swap takes on key and returns its release.
func (l *Store) LockForTest(ctx context.Context, key string) (unlock func(), err error) {
	return l.lock(ctx, key)
}
