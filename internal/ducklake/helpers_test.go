package ducklake

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil"
)

// Child-process roles of the test binary (see TestMain).
const (
	envHoldLock    = "FDL_DUCKLAKE_TEST_HOLD_LOCK"   // path: open it read-write and hold it until stdin closes
	envFreezeSrc   = "FDL_DUCKLAKE_TEST_FREEZE_SRC"  // with envFreezeDst: run Freeze, print peak RSS
	envFreezeDst   = "FDL_DUCKLAKE_TEST_FREEZE_DST"  //
	envConvertSrc  = "FDL_DUCKLAKE_TEST_SQLITE_SRC"  // with envConvertDst: run ConvertToSQLite, print peak RSS
	envConvertDst  = "FDL_DUCKLAKE_TEST_SQLITE_DST"  //
	envMigrateSrc  = "FDL_DUCKLAKE_TEST_MIGRATE_SRC" // with envMigrateDst: run Migrate, print peak RSS
	envMigrateDst  = "FDL_DUCKLAKE_TEST_MIGRATE_DST" //
	childReadyLine = "ready"
)

func TestMain(m *testing.M) {
	if p := os.Getenv(envHoldLock); p != "" {
		os.Exit(holdLock(p))
	}
	if src := os.Getenv(envFreezeSrc); src != "" {
		os.Exit(rssChild(func() error {
			_, err := Freeze(context.Background(), src, os.Getenv(envFreezeDst))
			return err
		}))
	}
	if src := os.Getenv(envMigrateSrc); src != "" {
		os.Exit(rssChild(func() error {
			_, err := Migrate(context.Background(), src, os.Getenv(envMigrateDst))
			return err
		}))
	}
	if src := os.Getenv(envConvertSrc); src != "" {
		os.Exit(rssChild(func() error { return ConvertToSQLite(context.Background(), src, os.Getenv(envConvertDst)) }))
	}
	os.Exit(m.Run())
}

// holdLock opens path read-write with DuckDB (taking its write lock), says
// "ready" on stdout and keeps the lock until stdin reaches EOF.
func holdLock(path string) int {
	db, err := sql.Open("duckdb", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	if _, err := db.Exec("SELECT count(*) FROM ducklake_snapshot"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(childReadyLine)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// rssChild runs fn and prints "peak_rss_kib <VmHWM>" from /proc/self/status.
func rssChild(fn func() error) int {
	if err := fn(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Println("peak_rss_kib", strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0
}

// startLockHolder re-executes the test binary so that another process holds
// DuckDB's write lock on path; the returned func releases it.
func startLockHolder(t *testing.T, path string) func() {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHoldLock+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		if line != childReadyLine {
			stdin.Close()
			cmd.Wait()
			t.Fatalf("lock holder said %q", line)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("lock holder did not start")
	}
	var done bool
	release := func() {
		if done {
			return
		}
		done = true
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("lock holder: %v", err)
		}
	}
	t.Cleanup(release)
	return release
}

// duckdbCatalogs returns the DuckDB-format real catalogs of MANIFEST.md
// (facts read there with DuckDB 1.5.6 and sqlite3 by people outside this
// package).
func duckdbCatalogs(t testing.TB) []testutil.Entry {
	t.Helper()
	var out []testutil.Entry
	for _, c := range testutil.Manifest(t) {
		if c.DB != "sqlite" {
			out = append(out, c)
		}
	}
	return out
}

// gunzipCatalog writes the named real catalog into dir (as name, or as
// file when name is "") and returns its path. It refuses to replace a file.
// The shared .gz copies are only read.
func gunzipCatalog(t testing.TB, file, dir, name string) string {
	t.Helper()
	if name == "" {
		name = file
	}
	out := filepath.Join(dir, name)
	if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("gunzip %s: %s exists (%v)", file, out, err)
	}
	testutil.Gunzip(t, file, out)
	return out
}

func sha256File(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileState is the sha256 of a file and of its .wal ("" when absent).
func fileState(t testing.TB, path string) [2]string {
	t.Helper()
	var s [2]string
	s[0] = sha256File(t, path)
	if _, err := os.Stat(walPath(path)); err == nil {
		s[1] = sha256File(t, walPath(path))
	}
	return s
}

// rawDB is a test-only DuckDB connection for setting up and checking files.
type rawDB struct {
	t    testing.TB
	db   *sql.DB
	conn *sql.Conn
}

// newRawDB opens DuckDB on dsn ("" = in memory, else a file read-write).
func newRawDB(t testing.TB, dsn string) *rawDB {
	t.Helper()
	db, err := sql.Open("duckdb", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	r := &rawDB{t: t, db: db, conn: conn}
	t.Cleanup(func() { r.close() })
	return r
}

func (r *rawDB) close() {
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
}

func (r *rawDB) exec(qs ...string) {
	r.t.Helper()
	for _, q := range qs {
		if _, err := r.conn.ExecContext(context.Background(), q); err != nil {
			r.t.Fatalf("%s: %v", q, err)
		}
	}
}

func (r *rawDB) int(q string) int64 {
	r.t.Helper()
	var n int64
	if err := r.conn.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		r.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// strings returns the rows of q, each row's columns joined with " | ".
func (r *rawDB) strings(q string) []string {
	r.t.Helper()
	rows, err := r.conn.QueryContext(context.Background(), q)
	if err != nil {
		r.t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			r.t.Fatalf("%s: %v", q, err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			if v.Valid {
				parts[i] = v.String
			} else {
				parts[i] = "NULL"
			}
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		r.t.Fatalf("%s: %v", q, err)
	}
	return out
}

// withWritable attaches a database file read-write in this process (made
// the default database, so unqualified names refer to it), runs the
// statements and shuts DuckDB down without a DETACH.
func withWritable(t testing.TB, path string, qs ...string) {
	t.Helper()
	r := newRawDB(t, "")
	r.exec(fmt.Sprintf("ATTACH %s AS w", sqlquote.String(path)), "USE w")
	r.exec(qs...)
	r.close()
}

// listDir returns the names in dir, sorted.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
