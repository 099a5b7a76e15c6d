package store

import "context"

// LockForTest takes the lock Swap takes on key and returns its release.
func (l *Local) LockForTest(ctx context.Context, key string) (unlock func(), err error) {
	return l.lock(ctx, key)
}

// RedactForTest exposes redactString.
func RedactForTest(s string) string { return redactString(s) }
