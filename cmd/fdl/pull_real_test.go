package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// session is one long-lived real DuckDB process (DuckDB 1.5.5 with its own
// ducklake and sqlite extensions) that runs one statement per line: a
// notebook or pipeline that keeps a catalog attached.
type session struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

const sessionPy = `import duckdb, json, os, sys
env = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
con = duckdb.connect(config={"extension_directory": os.path.join(env, "extensions"),
    "autoinstall_known_extensions": False, "autoload_known_extensions": True})
for line in sys.stdin:
    try:
        cur = con.execute(line)
        rows = cur.fetchall() if cur.description else []
        print(json.dumps({"rows": [[str(v) for v in r] for r in rows]}), flush=True)
    except Exception as e:
        print(json.dumps({"error": str(e)}), flush=True)
`

func newSession(t *testing.T, d *realduck.DuckDB) *session {
	t.Helper()
	script := filepath.Join(t.TempDir(), "session.py")
	if err := os.WriteFile(script, []byte(sessionPy), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(d.Python, script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return s
}

// exec runs one statement and returns its rows (each value as text) or
// its error message.
func (s *session) exec(sql string) ([][]string, string) {
	s.t.Helper()
	if _, err := fmt.Fprintln(s.in, strings.ReplaceAll(sql, "\n", " ")); err != nil {
		s.t.Fatal(err)
	}
	if !s.out.Scan() {
		s.t.Fatalf("DuckDB session ended: %v", s.out.Err())
	}
	var r struct {
		Rows  [][]string `json:"rows"`
		Error string     `json:"error"`
	}
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
		s.t.Fatalf("DuckDB session: %q: %v", s.out.Text(), err)
	}
	return r.Rows, r.Error
}

func (s *session) must(sql string) [][]string {
	s.t.Helper()
	rows, e := s.exec(sql)
	if e != "" {
		s.t.Fatalf("%s: %s", sql, e)
	}
	return rows
}

// column returns the first column of rows, joined by commas.
func column(rows [][]string) string {
	var c []string
	for _, r := range rows {
		c = append(c, r[0])
	}
	return strings.Join(c, ",")
}

// TestPullRealSQLite: a real DuckDB session keeps a SQLite working catalog
// attached while fdl pull replaces it in place. The session sees the
// branch's new rows in its next statement through the same ATTACH; its
// next write continues the snapshots and is a fast-forward; a transaction
// it holds open across the pull fails at COMMIT (as after any other
// writer's commit) instead of being lost. The pull writes only what the
// branch changed (ducklake.PullSQLite).
func TestPullRealSQLite(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite_scanner")
	dir := t.TempDir()
	url := filepath.Join(dir, "repo")
	mustFdl(t, "init", url)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	attach := func(w string) string {
		return "ATTACH OR REPLACE 'ducklake:sqlite:" + w + "/ducklake.sqlite' AS lake (META_JOURNAL_MODE 'WAL', META_BUSY_TIMEOUT 5000)"
	}
	mustFdl(t, "checkout", url, a, "--catalog-format", "sqlite")
	writer := newSession(t, d)
	writer.must(attach(a))
	writer.must("CREATE TABLE lake.t(x INTEGER)")
	writer.must("INSERT INTO lake.t VALUES (1)")
	mustFdl(t, "-C", a, "commit", "-m", "one")
	mustFdl(t, "-C", a, "push")

	out := mustFdl(t, "checkout", url, b, "--catalog-format", "sqlite")
	if !strings.Contains(out, strings.TrimSuffix(attach(b), ")")+", METADATA_CATALOG '__ducklake_metadata_lake_") {
		t.Fatalf("checkout printed:\n%s\nwant the line %s", out, attach(b))
	}
	reader := newSession(t, d)
	reader.must(attach(b))
	if got := column(reader.must("SELECT x FROM lake.t ORDER BY x")); got != "1" {
		t.Fatalf("before the pull the session reads %q", got)
	}
	reader.must("BEGIN")
	reader.must("INSERT INTO lake.t VALUES (100)")

	writer.must("INSERT INTO lake.t VALUES (2)")
	mustFdl(t, "-C", a, "commit", "-m", "two")
	mustFdl(t, "-C", a, "push")
	out = mustFdl(t, "-v", "-C", b, "pull")
	if !strings.Contains(out, "Same path, same ATTACH statement") || !strings.Contains(out, strings.TrimSuffix(attach(b), ")")+", METADATA_CATALOG '__ducklake_metadata_lake_") {
		t.Fatalf("pull printed:\n%s", out)
	}
	// It wrote what the new version changed (docs/spec.md §12.2), from
	// the catalog checkout kept.
	if !strings.Contains(out, "pull: the working catalog brought up to date by what changed") {
		t.Errorf("the pull did not go by what changed:\n%s", out)
	}
	// The pull's SQLite copy goes, and the -shm and -wal a read of it made.
	if left, _ := filepath.Glob(filepath.Join(b, ".fdl", "pull.*")); len(left) > 0 {
		t.Fatalf("the pull left %v", left)
	}
	if _, e := reader.exec("COMMIT"); e == "" {
		t.Fatalf("a transaction open across the pull committed; want it refused (its snapshot is stale)")
	}
	if got := column(reader.must("SELECT x FROM lake.t ORDER BY x")); got != "1,2" {
		t.Fatalf("after the pull the attached session reads %q, want 1,2", got)
	}
	reader.must("INSERT INTO lake.t VALUES (3)")
	if got := column(reader.must("SELECT snapshot_id FROM ducklake_snapshots('lake') ORDER BY snapshot_id")); got != "0,1,2,3,4" {
		t.Fatalf("snapshots after the pull and one write: %q", got)
	}
	out = mustFdl(t, "-C", b, "status")
	if !strings.Contains(out, "Up to date with main") || !strings.Contains(out, "1 new snapshot(s)") {
		t.Fatalf("status after the write:\n%s", out)
	}
	mustFdl(t, "-C", b, "commit", "-m", "three")
	mustFdl(t, "-C", b, "push")
	verifyClean(t, url)
}

// TestPullRealDuckDB: a DuckDB-format working catalog attached by a real
// DuckDB session is not replaced (DuckDB holds its lock; the error says to
// DETACH); after DETACH the pull goes, and the same ATTACH reads the
// branch's head.
func TestPullRealDuckDB(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake")
	dir := t.TempDir()
	url := filepath.Join(dir, "repo")
	mustFdl(t, "init", url)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	attach := func(w string) string { return "ATTACH OR REPLACE 'ducklake:" + w + "/ducklake.duckdb' AS lake" }
	mustFdl(t, "checkout", url, a, "--catalog-format", "duckdb")
	writer := newSession(t, d)
	writer.must(attach(a))
	writer.must("CREATE TABLE lake.t(x INTEGER)")
	writer.must("INSERT INTO lake.t VALUES (1)")
	writer.must("DETACH lake")
	mustFdl(t, "-C", a, "commit", "-m", "one")
	mustFdl(t, "-C", a, "push")
	mustFdl(t, "checkout", url, b, "--catalog-format", "duckdb")
	reader := newSession(t, d)
	reader.must(attach(b))

	writer.must(attach(a))
	writer.must("INSERT INTO lake.t VALUES (2)")
	writer.must("DETACH lake")
	mustFdl(t, "-C", a, "commit", "-m", "two")
	mustFdl(t, "-C", a, "push")
	code, out := fdlProc(t, nil, "-C", b, "pull")
	if code != 1 || !strings.Contains(out, "DETACH") || !strings.Contains(out, filepath.Join(b, "ducklake.duckdb")) {
		t.Fatalf("pull while attached: exit %d\n%s", code, out)
	}
	if got := column(reader.must("SELECT x FROM lake.t ORDER BY x")); got != "1" {
		t.Fatalf("the refused pull changed what the session reads: %q", got)
	}
	reader.must("DETACH lake")
	mustFdl(t, "-C", b, "pull")
	reader.must(attach(b))
	if got := column(reader.must("SELECT x FROM lake.t ORDER BY x")); got != "1,2" {
		t.Fatalf("after the pull the same ATTACH reads %q, want 1,2", got)
	}
}
