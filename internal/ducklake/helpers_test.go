package ducklake

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Child-process roles of the test binary (see TestMain).
const (
	envHoldLock    = "FDL_DUCKLAKE_TEST_HOLD_LOCK"  // path: open it read-write and hold it until stdin closes
	envFreezeSrc   = "FDL_DUCKLAKE_TEST_FREEZE_SRC" // with envFreezeDst: run Freeze, print peak RSS
	envFreezeDst   = "FDL_DUCKLAKE_TEST_FREEZE_DST" //
	envConvertSrc  = "FDL_DUCKLAKE_TEST_SQLITE_SRC" // with envConvertDst: run ConvertToSQLite, print peak RSS
	envConvertDst  = "FDL_DUCKLAKE_TEST_SQLITE_DST" //
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

// realCatalog is one row of shared/testdata/catalogs/MANIFEST.md.
type realCatalog struct {
	file        string // without .gz
	sqlite      bool
	format      string
	maxSnapshot int64
	liveTables  []string
	liveCols    int
	totalCols   int
	dataFiles   int
	deleteFiles int
	dataPath    string
	sha256      string
}

// manifest holds the facts MANIFEST.md states (read there with DuckDB 1.5.6
// and sqlite3 by people outside this package).
var manifest = []realCatalog{
	{file: "dltest-v01.ducklake", format: "0.1", maxSnapshot: 1, liveTables: []string{"test"}, liveCols: 1, totalCols: 1, dataPath: "files/", sha256: "3e523ff198d501423adc65bdbf5b36b0a596978edf22d70390c183e648d11877"},
	{file: "airduck-v0.2.ducklake", format: "0.2", maxSnapshot: 2, liveTables: []string{"sales"}, liveCols: 3, totalCols: 3, dataFiles: 1, dataPath: "s3://ducklake/data/", sha256: "4729fc808a8cd173d9330d59d4a6a79fe4290b6b2be223d7a31f2451255b7b01"},
	{file: "ahri-tre-v0.2.sqlite", sqlite: true, format: "0.2", maxSnapshot: 4, liveTables: []string{"demo", "nl_train_stations"}, liveCols: 12, totalCols: 12, dataFiles: 3, deleteFiles: 1, dataPath: "/data/datalake/", sha256: "e00d2890de6c8bf8d7c87a05f9e30d18e6cb4d79fd6378a4b90980d09dee7821"},
	{file: "orbital-api-v0.2-empty.ducklake", format: "0.2", maxSnapshot: 0, liveTables: nil, dataPath: "gs://orbital_data_pipeline/CATALOG_DATA_SNAPSHOTS/", sha256: "1081de7e9d87ccce0e4054ad513a32574c08db7b288f5abd60ff4695b088c5ac"},
	{file: "wikigrams-v0.3.ducklake", format: "0.3", maxSnapshot: 2, liveTables: []string{"wikigrams"}, liveCols: 4, totalCols: 4, dataPath: "/netfiles/compethicslab/wikimedia_temp/", sha256: "15f2731aeab7015749ebd1d7f7ddfb2eeeb08bb6c4106739294eb1cb6826c3ba"},
	{file: "dltest-compacted-files.ducklake", format: "0.3", maxSnapshot: 10, liveTables: []string{"t1"}, liveCols: 1, totalCols: 1, dataFiles: 2, dataPath: "./bla/", sha256: "1c0b09afe9e816d38acff565d623ca968161cc5fa3ce18002ed0bdd4696b3961"},
	{file: "dltest-per-table-schema.ducklake", format: "0.3", maxSnapshot: 6, liveTables: []string{"T", "T_1", "T_2"}, liveCols: 4, totalCols: 5, dataPath: "a.db.files/", sha256: "156f5b64d2e7725292cfc77299342e7995d47250fd65eb730774a8e4b7d709fa"},
	{file: "dltest-v03-types.ducklake", format: "0.3", maxSnapshot: 3, liveTables: []string{"geo_tbl", "test"}, liveCols: 2, totalCols: 2, dataFiles: 1, dataPath: "/tmp/v03_types_data/", sha256: "33b68e3c8a0176e248df0f577b7604ef6299647451616f9ba0a8bc48f5180371"},
	{file: "dltest-v04.ducklake", format: "0.4", maxSnapshot: 1, liveTables: []string{"test"}, liveCols: 1, totalCols: 1, dataPath: "/tmp/v04_data3/", sha256: "7e886d54ed08345b74cbf2160842e55d06908a745c2e4e0a077355d0faccc5bb"},
}

func duckdbCatalogs() []realCatalog {
	var out []realCatalog
	for _, c := range manifest {
		if !c.sqlite {
			out = append(out, c)
		}
	}
	return out
}

// catalogsDir finds ../shared/testdata/catalogs beside the module root; it
// skips the test when absent, unless CI is set.
func catalogsDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
	cats := filepath.Join(dir, "..", "shared", "testdata", "catalogs")
	if _, err := os.Stat(filepath.Join(cats, "MANIFEST.md")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("test catalogs not found at %s (CI is set): %v", cats, err)
		}
		t.Skipf("test catalogs not found at %s: %v", cats, err)
	}
	return cats
}

// gunzipCatalog writes the named real catalog into dir (as name) and returns
// its path. The shared .gz copies are only read.
func gunzipCatalog(t testing.TB, file, dir, name string) string {
	t.Helper()
	in, err := os.Open(filepath.Join(catalogsDir(t), file+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	if name == "" {
		name = file
	}
	out := filepath.Join(dir, name)
	f, err := os.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, zr); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
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
	r.exec(fmt.Sprintf("ATTACH %s AS w", quoteString(path)), "USE w")
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
