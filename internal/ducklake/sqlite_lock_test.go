package ducklake

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lockSQLite takes an exclusive lock on the SQLite catalog at path from a
// connection of its own (locking_mode EXCLUSIVE and a write transaction:
// readers get SQLITE_BUSY, even in WAL mode) and returns the function
// that releases it.
func lockSQLite(t *testing.T, path string) func() {
	t.Helper()
	db := sqliteDB(t, path, false)
	db.SetMaxOpenConns(1)
	for _, q := range []string{"PRAGMA locking_mode = EXCLUSIVE", "BEGIN EXCLUSIVE", "UPDATE ducklake_metadata SET value = value WHERE key = 'version'"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	released := false
	return func() {
		if !released {
			released = true
			db.Exec("COMMIT")
			db.Close()
		}
	}
}

// TestSQLiteLockedWaits: a SQLite working catalog locked by another process
// for longer than one busy timeout (5 s) is read once the lock goes — by
// Freeze (commit) and Open (status) alike — because every step of the read
// that can meet SQLITE_BUSY is retried on a fresh snapshot for up to a
// minute.
func TestSQLiteLockedWaits(t *testing.T) {
	ctx := context.Background()
	src := walCatalog(t, t.TempDir())
	for _, what := range []string{"freeze", "open"} {
		t.Run(what, func(t *testing.T) {
			release := lockSQLite(t, src)
			t.Cleanup(release)
			hold := time.Duration(SQLiteBusyTimeout)*time.Millisecond + 2*time.Second
			time.AfterFunc(hold, release)
			start := time.Now()
			var err error
			switch what {
			case "freeze":
				_, err = Freeze(ctx, src, filepath.Join(t.TempDir(), "frozen.duckdb"))
			case "open":
				var c *Catalog
				if c, err = Open(ctx, src); err == nil {
					c.Close()
				}
			}
			if err != nil {
				t.Fatalf("%s of a catalog locked for %s, after %s: %v", what, hold, time.Since(start).Round(time.Millisecond), err)
			}
			if took := time.Since(start); took < hold {
				t.Fatalf("%s finished in %s although the lock was held for %s", what, took, hold)
			}
		})
	}
}

// TestSQLiteLockedMessage: when the lock outlasts the retries, the error is
// ErrLocked and says how long fdl waited, truly: not less than it waited.
func TestSQLiteLockedMessage(t *testing.T) {
	defer func(d time.Duration) { sqliteRetryFor = d }(sqliteRetryFor)
	sqliteRetryFor = 7 * time.Second
	src := walCatalog(t, t.TempDir())
	release := lockSQLite(t, src)
	defer release()
	start := time.Now()
	_, err := Freeze(context.Background(), src, filepath.Join(t.TempDir(), "frozen.duckdb"))
	took := time.Since(start)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("freeze of a catalog that stays locked: %v", err)
	}
	if took < sqliteRetryFor {
		t.Fatalf("gave up after %s, before the %s of retries", took, sqliteRetryFor)
	}
	said := strings.TrimSpace(err.Error())
	if !strings.Contains(said, "for "+took.Round(time.Second).String()) && !strings.Contains(said, "for "+took.Truncate(time.Second).String()) {
		t.Fatalf("error %q does not say it waited %s", said, took.Round(time.Second))
	}
}
