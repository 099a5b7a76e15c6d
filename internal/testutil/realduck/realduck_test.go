package realduck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealDuckDB checks the harness itself: each installed release runs SQL,
// reports its own version, and 1.5 writes and reads a DuckLake catalog with
// the ducklake extension from the environment (nothing downloaded).
func TestRealDuckDB(t *testing.T) {
	for _, c := range []struct {
		rel  Release
		want string
	}{{V15, "v1.5.5"}, {V151, "v1.5.1"}, {V20, "v2.0.0"}} {
		t.Run(string(c.rel), func(t *testing.T) {
			d := Find(t, c.rel)
			res := d.MustQuery(t, "PRAGMA version")
			if len(res) != 1 || len(res[0].Rows) != 1 || res[0].Rows[0][0] != c.want {
				t.Fatalf("PRAGMA version = %+v, want %s", res, c.want)
			}
		})
	}
	t.Run("ducklake", func(t *testing.T) {
		d := Find(t, V15, "ducklake")
		dir := t.TempDir()
		out, err := d.Text("ATTACH 'ducklake:" + filepath.Join(dir, "l.ducklake") + "' AS l (DATA_PATH '" + filepath.Join(dir, "data") + "/');" +
			"CREATE TABLE l.t AS SELECT range AS i FROM range(10); SELECT count(*), sum(i) FROM l.t;" +
			"SELECT value FROM __ducklake_metadata_l.ducklake_metadata WHERE key = 'version'")
		if err != nil {
			t.Fatal(err)
		}
		if out != "10\t45\n1.0\n" {
			t.Fatalf("got %q", out)
		}
	})
	t.Run("session", func(t *testing.T) {
		d := Find(t, V15, "ducklake")
		s := d.Start(t)
		dir := t.TempDir()
		attach := "ATTACH 'ducklake:" + filepath.Join(dir, "l.ducklake") + "' AS lake (DATA_PATH '" + filepath.Join(dir, "data") + "/');"
		// Two writes through one session; between them the catalog is
		// detached, so the session keeps no state but the connection.
		s.MustQuery(t, OnLake(attach, "CREATE TABLE t(i INTEGER); INSERT INTO t VALUES (1)", false))
		s.MustQuery(t, OnLake(attach, "INSERT INTO t VALUES (2)", true))
		res := s.MustQuery(t, OnLake(attach, `SELECT sum(i)::INTEGER FROM t;
			SELECT string_agg(changes_made, ' ' ORDER BY snapshot_id) FROM __ducklake_metadata_lake.ducklake_snapshot_changes`, false))
		if len(res) != 2 || res[0].Rows[0][0] != float64(3) || res[1].Rows[0][0] != `created_schema:"main" created_table:"main"."t" inserted_into_table:1 inlined_insert:1` {
			t.Fatalf("got %+v", res)
		}
		if dbs := s.MustQuery(t, "SELECT count(*) FROM duckdb_databases() WHERE database_name = 'lake'"); dbs[0].Rows[0][0] != float64(0) {
			t.Fatal("OnLake left lake attached")
		}
		// An error names the statement; the session goes on, and the next
		// OnLake attaches again although the failed one left lake attached.
		if _, err := s.Query(OnLake(attach, "INSERT INTO nope VALUES (1)", false)); err == nil || !strings.Contains(err.Error(), "nope") {
			t.Fatalf("error %v", err)
		}
		s.MustQuery(t, OnLake(attach, "INSERT INTO t VALUES (3)", false))
	})
	t.Run("no-download", func(t *testing.T) {
		d := Find(t, V15)
		// spatial is a known extension that is not installed: with
		// autoinstall off it must fail at once rather than download.
		if _, err := d.Query("LOAD spatial"); err == nil {
			t.Fatal("LOAD spatial succeeded: the environment is not project-local")
		}
	})
}

// TestServedRuns checks what Query and Text promise as runs of their own
// although a few processes serve them: each run starts from a fresh
// DuckDB (nothing a run made is seen by the next), relative paths resolve
// in the caller's working directory, an error names its statement, and a
// run after an error is served.
func TestServedRuns(t *testing.T) {
	d := Find(t, V15)
	for range 3 { // more runs than idle servers: some reuse one
		if out, err := d.Text("CREATE TABLE t AS SELECT 41 + 1 AS x; SELECT x FROM t"); err != nil || out != "42\n" {
			t.Fatalf("got %q, %v; want 42 from a fresh database each time", out, err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rows.csv"), []byte("a\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	res := d.MustQuery(t, "SELECT sum(a)::INTEGER FROM read_csv('rows.csv')")
	if res[0].Rows[0][0] != float64(3) {
		t.Fatalf("relative path in the caller's directory: %+v", res)
	}
	_, err := d.Query("SELECT 1; SELECT * FROM nosuch")
	if err == nil || !strings.Contains(err.Error(), "realduck: statement 2:") || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("error %v; want one naming statement 2 and the table", err)
	}
	if out, err := d.Text("SELECT NULL, 'a'"); err != nil || out != "NULL\ta\n" {
		t.Fatalf("after an error: %q, %v", out, err)
	}
}
