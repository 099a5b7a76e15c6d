package lakewriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// undoHistory is a history the real extension writes, one snapshot per
// statement (snapshot i+1 is stmts[i]): inlined and Parquet inserts,
// updates, deletes (a delete file, inlined deletions of Parquet rows, a
// data file deleted whole), a column added, renamed, retyped and dropped,
// a table renamed and dropped, a view, a schema dropped with its table.
var undoHistory = []string{
	"CREATE TABLE t(id INTEGER, v VARCHAR)",                      // 1
	"INSERT INTO t SELECT i, 'v' || i FROM range(100) r(i)",      // 2
	"INSERT INTO t SELECT i, 'w' || i FROM range(100, 103) r(i)", // 3 inlined
	"UPDATE t SET v = 'u' WHERE id < 5",                          // 4 inlined delete + insert
	"DELETE FROM t WHERE id >= 90 AND id < 95",                   // 5 inlined deletions
	"ALTER TABLE t ADD COLUMN q INTEGER",                         // 6
	"ALTER TABLE t RENAME COLUMN v TO vv",                        // 7
	"INSERT INTO t SELECT i, 'z', i FROM range(200, 250) r(i)",   // 8
	"CREATE SCHEMA s", // 9
	"CREATE TABLE s.d AS SELECT i AS x FROM range(40) r(i)", // 10
	"CREATE VIEW s.vw AS SELECT * FROM s.d WHERE x > 5",     // 11
	"DELETE FROM s.d WHERE x >= 0",                          // 12 whole file
	"INSERT INTO s.d SELECT i FROM range(1000, 1020) r(i)",  // 13
	"ALTER TABLE t RENAME TO t2",                            // 14
	"ALTER TABLE t2 ALTER COLUMN q TYPE BIGINT",             // 15
	"ALTER TABLE t2 DROP COLUMN vv",                         // 16
	"DROP VIEW s.vw",                                        // 17
	"DROP TABLE s.d",                                        // 18
	"DROP SCHEMA s",                                         // 19
	"CREATE TABLE big(k BIGINT)",                            // 20
	"INSERT INTO big SELECT i FROM range(5000) r(i)",        // 21
	"DELETE FROM big WHERE k % 7 = 0",                       // 22 delete file
	"INSERT INTO t2 VALUES (7777, 7777)",                    // 23
	"CREATE TABLE keep(a INTEGER)",                          // 24
	"INSERT INTO keep SELECT i FROM range(50) r(i)",         // 25
	"ALTER TABLE keep RENAME TO kept",                       // 26
	"DROP TABLE kept",                                       // 27
	"INSERT INTO t2 VALUES (8888, 8888)",                    // 28
}

// lakeState is what the real extension reads at one snapshot: the tables
// visible there and a digest of each one's rows.
type lakeState struct {
	Tables, Schemas string
	Rows            map[string]string
}

func (s lakeState) String() string {
	var b strings.Builder
	b.WriteString("schemas: " + s.Schemas + "; tables: " + s.Tables)
	for _, tb := range strings.Split(s.Tables, ",") {
		b.WriteString("\n  " + tb + " " + s.Rows[tb])
	}
	return b.String()
}

func (s lakeState) equal(o lakeState) bool { return s.String() == o.String() }

// realState returns, per snapshot, each visible table's rows as the real
// extension reads them (a count and a digest of the sorted rows), by
// attaching the catalog at that snapshot in session d, which it leaves
// with nothing attached.
func realState(t *testing.T, d *realduck.Session, uri, data string, snaps []int64) map[int64]lakeState {
	t.Helper()
	slices.Sort(snaps)
	snaps = slices.Compact(snaps)
	var q, detach strings.Builder
	detach.WriteString("USE memory;\n")
	for _, s := range snaps {
		fmt.Fprintf(&detach, "DETACH DATABASE IF EXISTS at%d;\n", s)
	}
	defer func() {
		if _, err := d.Query(detach.String()); err != nil {
			t.Errorf("detach the snapshots: %v", err)
		}
	}()
	q.WriteString(detach.String())
	for _, s := range snaps {
		fmt.Fprintf(&q, "ATTACH %s AS at%d (READ_ONLY, DATA_PATH %s, SNAPSHOT_VERSION %d);\n", sqlquote.String(uri), s, sqlquote.String(data), s)
		fmt.Fprintf(&q, "SELECT %d, coalesce(string_agg(schema_name || '.' || table_name, ',' ORDER BY schema_name, table_name), ''), (SELECT string_agg(schema_name, ',' ORDER BY schema_name) FROM duckdb_schemas() WHERE database_name = 'at%d') FROM duckdb_tables() WHERE database_name = 'at%d';\n", s, s, s)
	}
	out := map[int64]lakeState{}
	for _, r := range d.MustQuery(t, q.String()) {
		out[int64(num(r.Rows[0][0]))] = lakeState{Tables: fmt.Sprint(r.Rows[0][1]), Schemas: fmt.Sprint(r.Rows[0][2]), Rows: map[string]string{}}
	}
	q.Reset()
	n := 0
	for _, s := range snaps {
		for _, tb := range strings.Split(out[s].Tables, ",") {
			if tb == "" {
				continue
			}
			fmt.Fprintf(&q, "SELECT %d, %s, count(*)::VARCHAR || ' rows ' || md5(coalesce(string_agg(x::VARCHAR, '|' ORDER BY x::VARCHAR), '')) FROM (SELECT tb AS x FROM at%d.%s tb);\n",
				s, sqlquote.String(tb), s, tb)
			n++
		}
	}
	if n == 0 {
		return out
	}
	for _, r := range d.MustQuery(t, q.String()) {
		out[int64(num(r.Rows[0][0]))].Rows[fmt.Sprint(r.Rows[0][1])] = fmt.Sprint(r.Rows[0][2])
	}
	return out
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		var f float64
		fmt.Sscan(x, &f)
		return f
	}
	return -1
}

// undoLake writes undoHistory with the real extension into a catalog of
// the given kind ("duckdb" or "sqlite") and returns its path, the ATTACH
// URI and the data path.
func undoLake(t *testing.T, d *realduck.Session, kind string) (path, uri, data string) {
	dir := t.TempDir()
	data = filepath.Join(dir, "data") + "/"
	path = filepath.Join(dir, "lake."+kind)
	uri = "ducklake:" + path
	if kind == "sqlite" {
		uri = "ducklake:sqlite:" + path
	}
	d.MustQuery(t, fmt.Sprintf("USE memory;\nDETACH DATABASE IF EXISTS lake;\nATTACH %s AS lake (DATA_PATH %s);\nUSE lake;\n%s;\nUSE memory;\nDETACH lake;", sqlquote.String(uri), sqlquote.String(data), strings.Join(undoHistory, ";\n")))
	return path, uri, data
}

// cloneLake copies a lake undoLake wrote — its catalog file (with a SQLite
// -wal file, if any) and its data folder — into a new folder and points
// the copy's data_path there, so that each case may change files (the
// extension's cleanup deletes some) without touching the others'.
func cloneLake(t *testing.T, src, kind string) (path, uri, data string) {
	t.Helper()
	dir := t.TempDir()
	srcDir := filepath.Dir(src)
	err := filepath.WalkDir(srcDir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(srcDir, p)
		dst := filepath.Join(dir, rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, filepath.Base(src))
	data = filepath.Join(dir, "data") + "/"
	uri = "ducklake:" + path
	if kind == "sqlite" {
		uri = "ducklake:sqlite:" + path
		db, err := sql.Open("sqlite3", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", data); err != nil {
			t.Fatal(err)
		}
		return path, uri, data
	}
	setDataPath(t, path, data)
	return path, uri, data
}

// TestRestoreRealExtension restores a catalog the real extension wrote
// (DuckDB and SQLite form) to several snapshots and checks with the real
// DuckDB 1.5.5 that the new snapshot reads exactly as the one restored,
// that every older snapshot still reads as before, and that the extension
// writes on top of the result.
//
// Each restore takes the real DuckDB ~15 s to check on two shared cores: a
// spread of targets, fewer in SQLite form, whose restores run the DuckDB
// form's code on a mirror and write the difference back (make test: one
// restore and one refusal; make soak, FDL_SOAK=1, also restores to 3).
func TestRestoreRealExtension(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite").Start(t)
	last := int64(len(undoHistory))
	soak := testutil.Soak(t, "the SQLite form's restore to 3 is")
	for _, kind := range []string{"duckdb", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			targets := []int64{1, 3, 8, 11, 13, 18, 22}
			if kind == "sqlite" {
				targets = []int64{13, 22}
				if soak {
					targets = []int64{3, 13, 22}
				}
			}
			src, srcURI, data := undoLake(t, d, kind)
			before := realState(t, d, srcURI, data, restoreReads(targets, last))
			for _, at := range targets {
				t.Run(fmt.Sprint("to ", at), func(t *testing.T) {
					path, uri, data := cloneLake(t, src, kind)
					w, err := Open(context.Background(), path)
					if err != nil {
						t.Fatal(err)
					}
					w.Author, w.Message = "fdl test", fmt.Sprintf("restore %d", at)
					res, err := w.Restore(context.Background(), at)
					if cerr := w.Close(); err == nil {
						err = cerr
					}
					// Snapshots 10-17 hold table s.d in schema s, both
					// dropped since: refused (docs/spec.md §19).
					if wantRefused := restoreRefused(at); wantRefused || errors.Is(err, ErrSchemaDropped) {
						if !wantRefused || !errors.Is(err, ErrSchemaDropped) || !strings.Contains(fmt.Sprint(err), "s.d") {
							t.Fatalf("restore to %d: got %v, want ErrSchemaDropped naming s.d only for snapshots 10-17", at, err)
						}
						t.Logf("refused: %v", err)
						return
					}
					if errors.Is(err, ErrCannotRestore) {
						t.Skipf("refused: %v", err)
					}
					if err != nil {
						t.Fatal(err)
					}
					if res.Snapshot != last+1 {
						t.Fatalf("restore wrote snapshot %d, want %d", res.Snapshot, last+1)
					}
					// Time travel: every older snapshot the restore could
					// have disturbed reads as before.
					olds := restoreOlds(at, last)
					after := realState(t, d, uri, data, append(slices.Clone(olds), res.Snapshot))
					for _, s := range olds {
						if s < 0 || s > last {
							continue
						}
						if !after[s].equal(before[s]) {
							t.Errorf("snapshot %d reads differently after the restore:\nbefore %s\nafter  %s", s, before[s], after[s])
						}
					}
					if !after[res.Snapshot].equal(before[at]) {
						t.Errorf("new snapshot %d does not read as snapshot %d:\nwant %s\ngot  %s", res.Snapshot, at, before[at], after[res.Snapshot])
					}
					checkWritable(t, d, uri, data, path)
					t.Logf("restore to %d: %d rows ended, %d copied, changes %s", at, res.Ended, res.Reopened, res.Changes)
				})
			}
		})
	}
}

// restoreRefused reports whether TestRestoreRealExtension's restore to
// snapshot at is refused: snapshots 10-17 hold table s.d in schema s, both
// dropped since (docs/spec.md §19).
func restoreRefused(at int64) bool { return at >= 10 && at < 18 }

// restoreOlds lists the snapshots a restore to at (of a lake whose last
// snapshot is last) could have disturbed, which must read as before it.
func restoreOlds(at, last int64) []int64 { return []int64{0, 1, at - 1, at, at + 1, last} }

// restoreReads lists the snapshots TestRestoreRealExtension reads before
// the restores to targets: those the restores that go through compare.
func restoreReads(targets []int64, last int64) []int64 {
	var out []int64
	for _, at := range targets {
		if !restoreRefused(at) {
			out = append(out, restoreOlds(at, last)...)
		}
	}
	return out
}

// checkWritable has the real extension write on top of the result, expire
// every older snapshot and clean up the files they alone read, then read
// every table in full, in session d (left with nothing attached); and
// fdl's reader check the catalog's invariants.
func checkWritable(t *testing.T, d *realduck.Session, uri, data, path string) {
	t.Helper()
	const detach = "USE memory;\nDETACH DATABASE IF EXISTS lake;\n"
	tables := d.MustQuery(t, fmt.Sprintf("%sATTACH %s AS lake (DATA_PATH %s);\nSELECT schema_name || '.' || table_name FROM duckdb_tables() WHERE database_name = 'lake' ORDER BY 1;", detach, sqlquote.String(uri), sqlquote.String(data)))
	var q strings.Builder
	for _, r := range tables[0].Rows {
		tb := fmt.Sprint(r[0])
		fmt.Fprintf(&q, "INSERT INTO lake.%s SELECT * FROM lake.%s LIMIT 3;\nDELETE FROM lake.%s WHERE rowid %% 11 = 3;\nSELECT count(*) FROM lake.%s;\n", tb, tb, tb, tb)
	}
	// DuckLake's own maintenance: expire every snapshot but the last and
	// delete the files only expired rows read. Every file a live row reads
	// must survive it (a copied row has a file of its own).
	q.WriteString("SELECT count(*) FROM ducklake_expire_snapshots('lake', older_than => now());\nSELECT count(*) FROM ducklake_cleanup_old_files('lake', cleanup_all => true);\n")
	for _, r := range tables[0].Rows {
		fmt.Fprintf(&q, "SELECT md5(coalesce(string_agg(x::VARCHAR, '|'), '')) FROM (SELECT tb AS x FROM lake.%s tb);\n", r[0])
	}
	q.WriteString(detach)
	d.MustQuery(t, q.String())
	c, err := ducklake.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	vs, err := c.CheckInvariants(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if !v.Note {
			t.Errorf("invariant: %+v", v)
		}
	}
}

// revertCase is one revert of TestRevertRealExtension: of snapshots
// after+1..upto of undoHistory's lake.
type revertCase struct {
	name        string
	after, upto int64
	conflict    string            // part of the conflict, "" when the revert goes through
	tables      int64             // the snapshot whose tables (and schemas) the result has
	schemas     string            // the result's schemas, when not those of tables
	tableList   string            // the result's tables, when not those of tables
	rows        map[string]string // table at the result -> "table@snapshot" whose rows it has
}

// checkRevertCase makes revert c on a clone of the lake src (kind duckdb
// or sqlite), whose snapshots the real DuckDB d read as before, the lake's
// last snapshot being last: refused with c's conflict, or the result reads
// as c says, the snapshots around it read as before, and the extension
// writes on top.
func checkRevertCase(t *testing.T, d *realduck.Session, src, kind string, c revertCase, before map[int64]lakeState, last int64) {
	path, uri, data := cloneLake(t, src, kind)
	w, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Revert(context.Background(), c.after, c.upto)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if c.conflict != "" {
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), c.conflict) {
			t.Fatalf("revert %d..%d: %v, want a conflict %q", c.after+1, c.upto, err, c.conflict)
		}
		t.Logf("refused: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	after := realState(t, d, uri, data, []int64{c.after, c.upto, last, res.Snapshot})
	got, exp := after[res.Snapshot], before[c.tables]
	if c.schemas != "" {
		exp.Schemas = c.schemas
	}
	if c.tableList != "" {
		exp.Tables = c.tableList
	}
	if got.Tables != exp.Tables || got.Schemas != exp.Schemas {
		t.Errorf("revert %d..%d: schemas/tables %s / %s, want %s / %s", c.after+1, c.upto, got.Schemas, got.Tables, exp.Schemas, exp.Tables)
	}
	for tb, from := range c.rows {
		i := strings.Index(from, "@")
		var s int64
		fmt.Sscan(from[i+1:], &s)
		if got.Rows[tb] != before[s].Rows[from[:i]] {
			t.Errorf("revert %d..%d: %s reads %s, want %s as %s", c.after+1, c.upto, tb, got.Rows[tb], from, before[s].Rows[from[:i]])
		}
	}
	for _, s := range []int64{c.after, c.upto, last} {
		if b, ok := before[s]; ok && !after[s].equal(b) {
			t.Errorf("snapshot %d reads differently after the revert:\nbefore %s\nafter  %s", s, b, after[s])
		}
	}
	checkWritable(t, d, uri, data, path)
	t.Logf("revert %d..%d: %d rows ended, %d copied, changes %s", c.after+1, c.upto, res.Ended, res.Reopened, res.Changes)
}

// TestRevertRealExtension reverts single snapshots of a history the real
// extension wrote: those that later snapshots did not build on come back
// as the real DuckDB reads them (each table as it was before the reverted
// snapshot, or as the last snapshot has it), older snapshots read as
// before and the extension writes on top; the others are refused with a
// conflict.
//
// In SQLite form a revert runs the DuckDB form's code on a mirror and
// writes the difference back; make test checks there the refusals and the
// reverts whose write-back adds rows to most tables (a dropped schema with
// its table and view back) and removes inlined rows (an inlined insert);
// make soak (FDL_SOAK=1) every case.
func TestRevertRealExtension(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite").Start(t)
	sqliteShort := map[string]bool{"inlined insert": true, "drop schema": true}
	soak := testutil.Soak(t, "the SQLite form's reverts of a delete file, a dropped table and a rename are")
	last := int64(len(undoHistory))
	cases := []revertCase{
		{name: "inlined insert", after: 27, upto: 28, tables: 27, rows: map[string]string{"main.t2": "main.t2@27", "main.big": "main.big@27"}},
		{name: "delete file", after: 21, upto: 22, tables: 28, rows: map[string]string{"main.t2": "main.t2@28", "main.big": "main.big@21"}},
		{name: "drop schema", after: 18, upto: 19, tables: 28, schemas: "main,s", rows: map[string]string{"main.t2": "main.t2@28", "main.big": "main.big@28"}},
		{name: "drop table", after: 26, upto: 27, tables: 26, rows: map[string]string{"main.t2": "main.t2@28", "main.big": "main.big@28", "main.kept": "main.kept@26"}},
		{name: "rename, columns changed later", after: 13, upto: 14, tables: 28, tableList: "main.big,main.t", rows: map[string]string{"main.t": "main.t2@28", "main.big": "main.big@28"}},
		{name: "rename, dropped later", after: 25, upto: 26, conflict: "and again later"},
		{name: "rows updated later", after: 1, upto: 2, conflict: "and again later"},
		{name: "column added, data written later", after: 5, upto: 6, conflict: "wrote data to its table"},
		{name: "table created, filled later", after: 19, upto: 20, conflict: "which the reverted snapshots created"},
		{name: "view of a schema dropped later", after: 16, upto: 17, conflict: "without its schema"},
	}
	for _, kind := range []string{"duckdb", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			cases := slices.DeleteFunc(slices.Clone(cases), func(c revertCase) bool {
				return kind == "sqlite" && !soak && c.conflict == "" && !sqliteShort[c.name]
			})
			src, srcURI, data := undoLake(t, d, kind)
			want := map[int64]bool{}
			for _, c := range cases {
				if c.conflict == "" {
					want[c.tables] = true
					for _, r := range c.rows {
						var s int64
						fmt.Sscan(r[strings.Index(r, "@")+1:], &s)
						want[s] = true
					}
				}
			}
			var snaps []int64
			for s := range want {
				snaps = append(snaps, s)
			}
			before := realState(t, d, srcURI, data, snaps)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { checkRevertCase(t, d, src, kind, c, before, last) })
			}
		})
	}
}
