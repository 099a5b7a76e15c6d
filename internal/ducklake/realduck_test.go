package ducklake_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// These tests are judged by the real DuckDB (scripts/pyenv.sh): DuckDB
// 1.5.5 with its ducklake and sqlite extensions, and DuckDB 2.0.0 (core
// only: PyPI serves no extension for it). fdl's DuckDB is 2.0, so every
// file fdl writes must name a storage version DuckDB 1.5 reads unless its
// source is already DuckDB 2.0's.

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// text runs sql in d and returns its output rows, failing t on error.
func text(t *testing.T, d *realduck.DuckDB, sql string) string {
	t.Helper()
	out, err := d.Text(sql)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// TestStorageReadByDuckDB15: every storage version fdl's DuckDB (2.0) writes
// when pinned to a 1.x release is read by the real DuckDB 1.5.5; what it
// writes by default (999) is refused by it, which is why fdl pins.
func TestStorageReadByDuckDB15(t *testing.T) {
	d := realduck.Find(t, realduck.V15)
	dir := t.TempDir()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var script strings.Builder
	for _, opt := range []string{"v0.10.0", "v1.2.0", "v1.3.0", "v1.4.0", "v1.5.0"} {
		p := filepath.Join(dir, opt+".duckdb")
		for _, q := range []string{fmt.Sprintf("ATTACH %s AS d (STORAGE_VERSION '%s')", sqlString(p), opt),
			"CREATE TABLE d.t AS SELECT range AS i FROM range(100000)", "DETACH d"} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&script, "ATTACH %s AS %q (READ_ONLY); SELECT '%s', count(*), sum(i) FROM %[2]q.t;\n", sqlString(p), opt, opt)
	}
	want := "v0.10.0\t100000\t4999950000\nv1.2.0\t100000\t4999950000\nv1.3.0\t100000\t4999950000\nv1.4.0\t100000\t4999950000\nv1.5.0\t100000\t4999950000"
	if got := text(t, d, script.String()); got != want {
		t.Errorf("DuckDB 1.5.5 read:\n%s\nwant\n%s", got, want)
	}
	p := filepath.Join(dir, "default.duckdb")
	for _, q := range []string{fmt.Sprintf("ATTACH %s AS d", sqlString(p)), "CREATE TABLE d.t(i INTEGER)", "DETACH d"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Text(fmt.Sprintf("ATTACH %s AS d (READ_ONLY)", sqlString(p))); err == nil || !strings.Contains(err.Error(), "version number 999") {
		t.Errorf("DuckDB 1.5.5 on a default DuckDB 2.0 file: %v", err)
	}
}

// lake15 makes a DuckLake 1.0 catalog with the real DuckDB 1.5.5 and its
// ducklake extension and returns its path and the rows' count and sum as
// DuckDB saw them. With wal the last statements stay in the catalog's WAL
// (no checkpoint), so Freeze must take its COPY FROM DATABASE path.
func lake15(t *testing.T, d *realduck.DuckDB, dir, name string, wal bool) (path, counts string) {
	t.Helper()
	path = filepath.Join(dir, name)
	pre := ""
	if wal {
		pre = "PRAGMA disable_checkpoint_on_shutdown; SET checkpoint_threshold = '1TB';\n"
	}
	counts = text(t, d, pre+fmt.Sprintf(`ATTACH %s AS l (DATA_PATH %s);
CREATE TABLE l.t AS SELECT range AS id, range * 2 AS v, 'row ' || range AS s FROM range(1000);
DELETE FROM l.t WHERE id %% 7 = 0;
INSERT INTO l.t VALUES (5000, 1, 'late');
ALTER TABLE l.t ADD COLUMN extra INTEGER;
CREATE VIEW l.w AS SELECT id FROM l.t WHERE id > 10;
SELECT count(*), sum(v), (SELECT count(*) FROM l.w) FROM l.t;`, sqlString("ducklake:"+path), sqlString(filepath.Join(dir, "data")+"/")))
	if _, err := os.Stat(path + ".wal"); (err == nil) != wal {
		t.Fatalf("WAL present: %v, want %v", err == nil, wal)
	}
	return path, counts
}

// readBy15 attaches a frozen catalog READ_ONLY with DuckDB 1.5.5's ducklake
// extension, as a reader of the version would, and returns the counts.
func readBy15(t *testing.T, d *realduck.DuckDB, catalog, dataPath string) string {
	t.Helper()
	return text(t, d, fmt.Sprintf(`ATTACH %s AS l (READ_ONLY, DATA_PATH %s);
SELECT count(*), sum(v), (SELECT count(*) FROM l.w) FROM l.t;`, sqlString("ducklake:"+catalog), sqlString(dataPath)))
}

// TestFreezeReadByDuckDB15: a version frozen by fdl (DuckDB 2.0 inside) from
// a catalog DuckDB 1.5.5 wrote stays readable by DuckDB 1.5.5 and its
// ducklake extension: the byte copy, the COPY FROM DATABASE of a catalog
// with a WAL (pinned to the source's storage version), and a SQLite working
// catalog frozen to a DuckDB file (pinned to what the extension of its
// format writes), then converted back to SQLite.
func TestFreezeReadByDuckDB15(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "data") + "/"
	for _, wal := range []bool{false, true} {
		name := map[bool]string{false: "checkpointed", true: "wal"}[wal]
		t.Run(name, func(t *testing.T) {
			src, want := lake15(t, d, dir, name+".ducklake", wal)
			frozen := filepath.Join(dir, name+"-frozen.duckdb")
			info, err := ducklake.Freeze(ctx, src, frozen)
			if err != nil {
				t.Fatal(err)
			}
			if info.Format != "1.0" || info.Storage.Number != 68 {
				t.Errorf("frozen %+v, want format 1.0 in storage 68 as DuckDB 1.5.5 wrote it", info)
			}
			got := readBy15(t, d, frozen, data)
			if got != want || want == "" {
				t.Errorf("DuckDB 1.5.5 reads %q from the frozen catalog, the writer saw %q", got, want)
			}
			t.Logf("DuckDB 1.5.5 wrote and reads back (count, sum, view count): %q; frozen %+v", got, info.Storage)
			if r := meta.ReadersOf(info.Format, info.Storage); r.Attach != ">= 1.5.2" {
				t.Errorf("readers %+v", r)
			}
		})
	}

	// A SQLite working catalog written by DuckDB 1.5.5.
	lite := filepath.Join(dir, "lake.sqlite")
	want := text(t, d, fmt.Sprintf(`ATTACH %s AS l (DATA_PATH %s);
CREATE TABLE l.t AS SELECT range AS id, range * 3 AS v FROM range(500);
DELETE FROM l.t WHERE id < 100;
CREATE VIEW l.w AS SELECT id FROM l.t;
SELECT count(*), sum(v), (SELECT count(*) FROM l.w) FROM l.t;`, sqlString("ducklake:sqlite:"+lite), sqlString(data)))
	frozen := filepath.Join(dir, "from-sqlite.duckdb")
	info, err := ducklake.Freeze(ctx, lite, frozen)
	if err != nil {
		t.Fatal(err)
	}
	if info.Storage.Number != 68 {
		t.Errorf("frozen from SQLite in storage %d, want 68 (what the 1.0 extension writes)", info.Storage.Number)
	}
	if got := readBy15(t, d, frozen, data); got != want {
		t.Errorf("DuckDB 1.5.5 reads %q from the frozen SQLite catalog, the writer saw %q", got, want)
	}
	back := filepath.Join(dir, "back.sqlite")
	if err := ducklake.ConvertToSQLite(ctx, frozen, back); err != nil {
		t.Fatal(err)
	}
	if got := readBy15(t, d, "sqlite:"+back, data); got != want {
		t.Errorf("DuckDB 1.5.5 reads %q from the converted SQLite catalog, the writer saw %q", got, want)
	}
}

// TestDuckDB20ReadsFdl20Storage: a 1.1 catalog fdl writes (in DuckDB 2.0's
// storage, 999) opens in the real DuckDB 2.0 (core: its ducklake extension
// is not served, so the catalog tables are read as plain tables) with the
// rows fdl reads, and DuckDB 1.5.5 refuses the file.
func TestDuckDB20ReadsFdl20Storage(t *testing.T) {
	d20 := realduck.Find(t, realduck.V20)
	ctx := context.Background()
	dir := t.TempDir()
	l := makeLake11(t, dir)
	frozen := filepath.Join(dir, "frozen.duckdb")
	if _, err := ducklake.Freeze(ctx, l.path, frozen); err != nil {
		t.Fatal(err)
	}
	got := text(t, d20, fmt.Sprintf(`ATTACH %s AS c (READ_ONLY);
SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = 'c';
SELECT value FROM c.ducklake_metadata WHERE key = 'version';
SELECT count(*), sum(row_group_count) FROM c.ducklake_data_file;
SELECT count(*) FROM c.ducklake_view_column_tag;
SELECT count(*) FROM c.ducklake_inlined_data_1_1 WHERE _ducklake_end_snapshot IS NULL;`, sqlString(frozen)))
	if want := "v2.0.0+\n1.1\n2\t2\n0\n2"; got != want {
		t.Errorf("DuckDB 2.0 reads:\n%s\nwant\n%s", got, want)
	}
	if d15, err := realduck.Locate(realduck.V15); err == nil {
		if _, err := d15.Text(fmt.Sprintf("ATTACH %s AS c (READ_ONLY)", sqlString(frozen))); err == nil {
			t.Error("DuckDB 1.5.5 opened a DuckDB 2.0 storage file")
		}
	}
}

// TestFdlReadsDuckDB20Files: catalogs the real DuckDB 2.0 wrote into files
// of its own storage (COPY FROM DATABASE into a plain ATTACH, as a user on
// DuckDB 2.0 would copy a catalog) open in fdl with the same state as their
// source: a real 0.4 catalog, a 1.0 catalog DuckDB 1.5.5 made, and a 1.1
// catalog. Freeze keeps storage 999, and the readers say DuckDB >= 2.0.
func TestFdlReadsDuckDB20Files(t *testing.T) {
	d20 := realduck.Find(t, realduck.V20)
	ctx := context.Background()
	dir := t.TempDir()
	sources := map[string]string{"1.1": makeLake11(t, dir).path}
	if d15, err := realduck.Locate(realduck.V15); err == nil && d15.Has("ducklake") {
		sources["1.0"], _ = lake15(t, d15, dir, "lake10.ducklake", false)
	}
	v04 := filepath.Join(dir, "v04.ducklake")
	testutil.Gunzip(t, "dltest-v04.ducklake", v04)
	sources["0.4"] = v04
	for format, src := range sources {
		t.Run(format, func(t *testing.T) {
			copied := filepath.Join(dir, "copied-"+format+".duckdb")
			text(t, d20, fmt.Sprintf("ATTACH %s AS s (READ_ONLY); ATTACH %s AS c; COPY FROM DATABASE s TO c; DETACH c; SELECT 1;",
				sqlString(src), sqlString(copied)))
			st, err := ducklake.ReadStorage(copied)
			if err != nil || st.Number != 999 || st.MinDuckDB != "v2.0.0" {
				t.Fatalf("DuckDB 2.0's copy: storage %+v %v", st, err)
			}
			a, b := stateOf(t, src), stateOf(t, copied)
			if a != b {
				t.Errorf("state of the copy:\n%s\nof the source:\n%s", b, a)
			}
			frozen := filepath.Join(dir, "frozen-"+format+".duckdb")
			info, err := ducklake.Freeze(ctx, copied, frozen)
			if err != nil {
				t.Fatal(err)
			}
			if info.Storage != st || info.Format != format {
				t.Errorf("frozen %+v", info)
			}
			if r := meta.ReadersOf(info.Format, info.Storage); r.DuckDB != ">= 2.0.0" || (format != "0.4" && r.Attach != ">= 2.0.0") {
				t.Errorf("readers %+v", r)
			}
		})
	}
}

// stateOf returns the catalog's format and its state at the last snapshot,
// printed.
func stateOf(t *testing.T, path string) string {
	t.Helper()
	ctx := context.Background()
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	last, err := c.LastSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.State(ctx, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %d %+v", c.Format(), last.ID, *st)
}
