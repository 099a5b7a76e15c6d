package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// Two writer processes (real DuckDB sessions, as pipelines attached with
// the line checkout printed) add snapshots to one SQLite working catalog
// while `fdl commit` runs: the commit reads one consistent state (every
// snapshot it holds is complete, its statistics agree with its rows),
// nobody gets a lock error, and the next commit picks up the rest.
func TestSQLiteCommitWhileWriting(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	dir := t.TempDir()
	repoDir, wd := filepath.Join(dir, "repo"), filepath.Join(dir, "w")
	mustFdl(t, "init", repoDir)
	out := mustFdl(t, "checkout", repoDir, wd, "--catalog-format", "sqlite")
	if !strings.Contains(out, "ducklake:sqlite:") {
		t.Fatalf("checkout: %s", out)
	}
	attach := attachLine(t, out)
	catalog := filepath.Join(wd, workdir.SQLiteCatalogName)
	d.MustQuery(t, realduck.OnLake(attach, "CREATE TABLE events(writer VARCHAR, n BIGINT)", true))

	// Each writer keeps the catalog attached and adds perWriter snapshots,
	// each an inlined insert of one row (writer name, sequence number),
	// a little apart, so that the commit below runs among them. The two
	// take turns: two DuckDB 1.5.5 writers committing at the same moment
	// to one SQLite catalog fail among themselves ("Failed to flush changes
	// into DuckLake: database is locked", without fdl), which is DuckDB's
	// affair; what this test asks is that fdl's commit, reading among the
	// writes, makes none of them fail.
	const perWriter = 12
	var wg sync.WaitGroup
	var turn sync.Mutex
	errs := make([]error, 2)
	for i, name := range []string{"a", "b"} {
		s := d.Start(t)
		s.MustQuery(t, attach+" USE lake;")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < perWriter; k++ {
				turn.Lock()
				_, err := s.Query(fmt.Sprintf("INSERT INTO events VALUES ('%s', %d)", name, k))
				turn.Unlock()
				if err != nil {
					errs[i] = fmt.Errorf("writer %s, snapshot %d: %w", name, k, err)
					return
				}
				time.Sleep(300 * time.Millisecond)
			}
		}()
	}
	// Commit while both are writing: after a few of their snapshots.
	waitSnapshots(t, catalog, 1+1+4)
	code, out := fdlProc(t, nil, "-C", wd, "commit", "-m", "while writing", "--json")
	if code != 0 {
		t.Fatalf("commit while writing: exit %d\n%s", code, out)
	}
	first := lastRecord(t, wd)
	during := countSnapshots(t, catalog)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	total := int64(1 + 1 + 2*perWriter) // snapshot 0, create table, inserts
	if first.DuckLake.Snapshot >= total-1 || during >= total {
		t.Errorf("the commit did not run while the writers wrote (it holds snapshot %d of %d; %d existed when it ended)", first.DuckLake.Snapshot, total-1, during)
	}
	checkConsistent(t, filepath.Join(wd, workdir.StateDir, workdir.LocalVersions, string(first.ID), version.CatalogFile), first.DuckLake.Snapshot)

	// The next commit picks up the rest.
	mustFdl(t, "-C", wd, "commit", "-m", "the rest")
	second := lastRecord(t, wd)
	if second.DuckLake.Adds.First != first.DuckLake.Snapshot+1 || second.DuckLake.Snapshot != total-1 {
		t.Errorf("second commit adds %d..%d, want %d..%d", second.DuckLake.Adds.First, second.DuckLake.Snapshot, first.DuckLake.Snapshot+1, total-1)
	}
	rows := checkConsistent(t, filepath.Join(wd, workdir.StateDir, workdir.LocalVersions, string(second.ID), version.CatalogFile), second.DuckLake.Snapshot)
	if rows != 2*perWriter {
		t.Errorf("final version holds %d rows, want %d", rows, 2*perWriter)
	}
	mustFdl(t, "-C", wd, "push")
	mustFdl(t, "--repo", repoDir, "verify")
}

func lastRecord(t *testing.T, wd string) *version.Record {
	t.Helper()
	w, err := workdir.Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	if w.BaseRecord == nil {
		t.Fatal("no version committed")
	}
	return w.BaseRecord
}

func countSnapshots(t *testing.T, catalog string) int64 {
	t.Helper()
	c, err := ducklake.Open(context.Background(), catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	last, err := c.LastSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return last.ID + 1
}

func waitSnapshots(t *testing.T, catalog string, n int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for countSnapshots(t, catalog) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the writers did not reach %d snapshots", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkConsistent checks, with DuckDB, that the frozen catalog holds a
// complete state at its last snapshot last: snapshot ids 0..last without
// gaps; every inlined_insert snapshot has its row (and no row belongs to a
// snapshot that is missing); the table's statistics count exactly the rows
// there are. It returns the number of rows.
func checkConsistent(t *testing.T, frozen string, last int64) int64 {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := func(query string) int64 {
		t.Helper()
		var n sql.NullInt64
		if err := db.QueryRow(query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n.Int64
	}
	if _, err := db.Exec("ATTACH '" + strings.ReplaceAll(frozen, "'", "''") + "' AS f (READ_ONLY); USE f"); err != nil {
		t.Fatal(err)
	}
	if n, mx := q("SELECT count(*) FROM ducklake_snapshot"), q("SELECT max(snapshot_id) FROM ducklake_snapshot"); n != last+1 || mx != last {
		t.Errorf("%s: %d snapshots, max id %d, want 0..%d", frozen, n, mx, last)
	}
	rowsUnion := "SELECT * FROM (SELECT row_id, begin_snapshot, writer, n FROM ducklake_inlined_data_1_1)"
	if q("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'ducklake_inlined_data_1_1'") == 0 {
		rowsUnion = "SELECT NULL::BIGINT AS row_id, NULL::BIGINT AS begin_snapshot, NULL AS writer, NULL AS n WHERE false"
	}
	inserts := q("SELECT count(*) FROM ducklake_snapshot_changes WHERE changes_made = 'inlined_insert:1'")
	rows := q("SELECT count(*) FROM (" + rowsUnion + ")")
	if inserts != rows {
		t.Errorf("%s: %d inlined_insert snapshots but %d rows", frozen, inserts, rows)
	}
	if orphans := q("SELECT count(*) FROM (" + rowsUnion + ") r WHERE NOT EXISTS (SELECT 1 FROM ducklake_snapshot_changes c WHERE c.snapshot_id = r.begin_snapshot AND c.changes_made = 'inlined_insert:1')"); orphans != 0 {
		t.Errorf("%s: %d rows belong to no inlined_insert snapshot", frozen, orphans)
	}
	if rows > 0 {
		if rc, nr := q("SELECT record_count FROM ducklake_table_stats WHERE table_id = 1"), q("SELECT next_row_id FROM ducklake_table_stats WHERE table_id = 1"); rc != rows || nr != rows {
			t.Errorf("%s: table stats record_count %d, next_row_id %d, rows %d", frozen, rc, nr, rows)
		}
		if mx := q("SELECT max(row_id) FROM (" + rowsUnion + ")"); mx != rows-1 {
			t.Errorf("%s: max row_id %d with %d rows", frozen, mx, rows)
		}
	}
	return rows
}

// A SQLite file that is not a DuckLake catalog, a truncated one, and a
// working catalog whose -wal file is damaged: each gets a clear error from
// checkout --from or commit, and nothing changes.
//
// It is one piece: the files fdl must refuse, made one after the other in
// one folder, each refused with the repository left as its one digest says.
func TestSQLiteRefusalsCLI(t *testing.T) {
	dir := t.TempDir()
	repoDir := filepath.Join(dir, "repo")
	mustFdl(t, "init", repoDir)
	repoBefore := dirDigest(t, repoDir)

	plain := filepath.Join(dir, "notes.sqlite")
	db, err := sql.Open("sqlite3", "file:"+plain+"?mode=rwc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('hi')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	truncated := filepath.Join(dir, "cut.sqlite")
	testutil.Gunzip(t, "ahri-tre-v0.2.sqlite", truncated)
	if err := os.Truncate(truncated, 4096*5); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want, kind string }{
		{plain, "not a DuckLake catalog", "not_catalog"},
		{truncated, "truncated", "corrupt_catalog"},
	} {
		before := fileDigest(t, c.file)
		code, out := fdlProc(t, nil, "--json", "checkout", repoDir, filepath.Join(dir, "w"), "--from", c.file)
		if code != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, c.file) || !strings.Contains(out, `"kind":"`+c.kind+`"`) {
			t.Errorf("checkout --from %s: exit %d, want 1 and %q naming the file (kind %s):\n%s", filepath.Base(c.file), code, c.want, c.kind, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "w")); err == nil {
			t.Errorf("checkout --from %s left the directory", filepath.Base(c.file))
		}
		if fileDigest(t, c.file) != before {
			t.Errorf("checkout changed %s", c.file)
		}
	}

	// A working catalog with committed transactions in its -wal file (a
	// connection keeps it from being checkpointed), then one frame damaged.
	wd := filepath.Join(dir, "wd")
	attach := attachLine(t, mustFdl(t, "checkout", repoDir, wd, "--catalog-format", "sqlite"))
	catalog := filepath.Join(wd, workdir.SQLiteCatalogName)
	holder, err := sql.Open("sqlite3", "file:"+catalog+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	holder.SetMaxOpenConns(1)
	if _, err := holder.Exec("PRAGMA wal_autocheckpoint = 0"); err != nil {
		t.Fatal(err)
	}
	// A read opens the WAL index: from then on the holder's lock keeps the
	// writer's closing connection (another process) from checkpointing.
	var n int
	if err := holder.QueryRow("SELECT count(*) FROM ducklake_snapshot").Scan(&n); err != nil {
		t.Fatal(err)
	}
	duckSession(t).MustQuery(t, realduck.OnLake(attach, "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1)", true))
	walFile := catalog + "-wal"
	b, err := os.ReadFile(walFile)
	if err != nil || len(b) < 32+24+4096 {
		t.Fatalf("no WAL frames: %d bytes, %v", len(b), err)
	}
	b[32+24+200] ^= 0xff // page data of the first frame
	if err := os.WriteFile(walFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := dirDigest(t, filepath.Join(wd, workdir.StateDir))
	catBefore, walBefore := fileDigest(t, catalog), fileDigest(t, walFile)
	for _, args := range [][]string{{"commit", "-m", "x"}, {"status"}} {
		code, out := fdlProc(t, nil, append([]string{"-C", wd}, args...)...)
		if code != 1 || !strings.Contains(out, "-wal") || !strings.Contains(out, "damaged") || !strings.Contains(out, "restore") {
			t.Errorf("%v with a damaged WAL: exit %d\n%s", args, code, out)
		}
	}
	if dirDigest(t, filepath.Join(wd, workdir.StateDir)) != before || fileDigest(t, catalog) != catBefore || fileDigest(t, walFile) != walBefore {
		t.Errorf("a refused commit changed the working directory:\n%s\n---\n%s", before, dirDigest(t, filepath.Join(wd, workdir.StateDir)))
	}
	if dirDigest(t, repoDir) != repoBefore {
		t.Error("the repository changed")
	}
}

// A SQLite working catalog with a damaged page that no read of its
// snapshots touches (the primary key index of its empty
// ducklake_delete_file): fdl pull, which writes into it in place, is
// refused by SQLite's quick_check (run beside the download) before
// anything changes; status, which reads the snapshots only, still answers.
func TestPullRefusesDamagedSQLite(t *testing.T) {
	dir := t.TempDir()
	repoDir := filepath.Join(dir, "repo")
	mustFdl(t, "init", repoDir)
	a, s := filepath.Join(dir, "a"), filepath.Join(dir, "s")
	attach := attachLine(t, mustFdl(t, "checkout", repoDir, a, "--catalog-format", "duckdb"))
	duck := duckSession(t)
	duck.MustQuery(t, realduck.OnLake(attach, "CREATE TABLE t(a INTEGER)", false))
	mustFdl(t, "-C", a, "commit", "-m", "one")
	mustFdl(t, "-C", a, "push")
	mustFdl(t, "checkout", repoDir, s, "--catalog-format", "sqlite")
	duck.MustQuery(t, realduck.OnLake(attach, "INSERT INTO t VALUES (1)", true))
	mustFdl(t, "-C", a, "commit", "-m", "two")
	mustFdl(t, "-C", a, "push")

	catalog := filepath.Join(s, workdir.SQLiteCatalogName)
	testutil.DamageSQLitePage(t, catalog, "sqlite_autoindex_ducklake_delete_file_1", func(page []byte) {
		page[0] = 0x07 // no such b-tree page type
	})

	if out := mustFdl(t, "-C", s, "status"); !strings.Contains(out, "Behind main by 1 version") {
		t.Errorf("status of the damaged catalog:\n%s", out)
	}
	before, catBefore, repoBefore := dirDigest(t, filepath.Join(s, workdir.StateDir)), fileDigest(t, catalog), dirDigest(t, repoDir)
	code, out := fdlProc(t, nil, "-C", s, "--json", "pull")
	if code != 1 || !strings.Contains(out, "quick_check") || !strings.Contains(out, catalog) || !strings.Contains(out, `"kind":"corrupt_catalog"`) {
		t.Errorf("pull into a damaged SQLite catalog: exit %d, want 1, kind corrupt_catalog, naming quick_check and %s:\n%s", code, catalog, out)
	}
	if dirDigest(t, filepath.Join(s, workdir.StateDir)) != before || fileDigest(t, catalog) != catBefore {
		t.Error("a refused pull changed the working directory")
	}
	if dirDigest(t, repoDir) != repoBefore {
		t.Error("a refused pull changed the repository")
	}
}

// dirDigest is the names and sha256 of every file under dir, except the
// persistent (empty) lock file a commit takes (.fdl/lock).
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() && !(fi.Name() == "lock" && fi.Size() == 0) {
			fmt.Fprintf(&b, "%s=%s\n", p, fileDigest(t, p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
