package ducklake

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// minute. Its cases mostly wait (7 s each): they run in parallel, each on
// a catalog of its own, beside the package's other parallel tests.
func TestSQLiteLockedWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, what := range []string{"freeze", "open"} {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			src := walCatalog(t, t.TempDir())
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
// ErrLocked and says how long fdl waited, truly: at least the retries' span,
// at most the time Freeze took (which also counts its work before and after
// the retries: on a loaded machine that is more than a second, so the
// figure is not compared with the rounded time Freeze took).
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
	m := regexp.MustCompile(`stayed locked by another process for (\S+) \(`).FindStringSubmatch(said)
	if m == nil {
		t.Fatalf("error %q does not say how long it waited", said)
	}
	waited, perr := time.ParseDuration(m[1])
	if perr != nil || waited < sqliteRetryFor || waited > took {
		t.Fatalf("error %q says it waited %s; Freeze took %s, retrying for %s", said, m[1], took, sqliteRetryFor)
	}
}

// TestSQLiteLockedNamesHolder: when another process holds the lock past the
// retries, the error names it (pid and command), so a person can see which
// writer to wait for or stop.
func TestSQLiteLockedNamesHolder(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc: holders are not named here")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	defer func(d time.Duration) { sqliteRetryFor = d }(sqliteRetryFor)
	sqliteRetryFor = time.Second
	src := walCatalog(t, t.TempDir())
	cmd := exec.Command(py, "-c", `import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA locking_mode = EXCLUSIVE")
c.execute("BEGIN EXCLUSIVE")
c.execute("UPDATE ducklake_metadata SET value = value WHERE key = 'version'")
print("locked", flush=True)
time.sleep(120)`, src)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("the holder did not take the lock: %q %v", line, err)
	}
	_, err = Freeze(context.Background(), src, filepath.Join(t.TempDir(), "frozen.duckdb"))
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("freeze of a catalog another process keeps locked: %v", err)
	}
	if want := fmt.Sprintf("pid %d (python3)", cmd.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Fatalf("error does not name the holder %q: %v", want, err)
	}
}
