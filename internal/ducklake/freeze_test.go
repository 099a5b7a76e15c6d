package ducklake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// compareDatabases checks that the DuckDB files a and b hold the same
// schemas, tables, columns (name, position, type, nullability, default),
// constraints, views, sequences, indexes and rows (as multisets).
func compareDatabases(t *testing.T, a, b string) {
	t.Helper()
	r := newRawDB(t, "")
	r.exec(fmt.Sprintf("ATTACH %s AS a (READ_ONLY)", sqlquote.String(a)), fmt.Sprintf("ATTACH %s AS b (READ_ONLY)", sqlquote.String(b)))
	defer r.close()
	same := func(what, q string) []string {
		t.Helper()
		qa, qb := strings.ReplaceAll(q, "$DB", "'a'"), strings.ReplaceAll(q, "$DB", "'b'")
		ra, rb := r.strings(qa), r.strings(qb)
		if !slices.Equal(ra, rb) {
			t.Errorf("%s differ:\nsource %q\n  copy %q", what, ra, rb)
		}
		return ra
	}
	tables := same("tables", `SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = $DB ORDER BY ALL`)
	if len(tables) == 0 {
		t.Fatal("no tables")
	}
	same("columns", `SELECT schema_name, table_name, column_index, column_name, data_type, is_nullable, column_default
		FROM duckdb_columns() WHERE database_name = $DB ORDER BY ALL`)
	same("constraints", `SELECT schema_name, table_name, constraint_type, constraint_text, expression,
		constraint_column_names::VARCHAR, constraint_name FROM duckdb_constraints() WHERE database_name = $DB ORDER BY ALL`)
	same("views", `SELECT schema_name, view_name, sql FROM duckdb_views() WHERE database_name = $DB AND NOT internal ORDER BY ALL`)
	same("sequences", `SELECT schema_name, sequence_name, start_value, increment_by, last_value FROM duckdb_sequences() WHERE database_name = $DB ORDER BY ALL`)
	same("indexes", `SELECT schema_name, index_name, table_name, is_unique, sql FROM duckdb_indexes() WHERE database_name = $DB ORDER BY ALL`)
	same("macros", `SELECT schema_name, function_name, macro_definition FROM duckdb_functions() WHERE database_name = $DB AND function_type LIKE '%macro' AND NOT internal ORDER BY ALL`)
	for _, row := range tables {
		s, tb, _ := strings.Cut(row, " | ")
		name := sqlquote.Ident(s) + "." + sqlquote.Ident(tb)
		na := r.int("SELECT count(*) FROM a." + name)
		nb := r.int("SELECT count(*) FROM b." + name)
		d1 := r.int(fmt.Sprintf("SELECT count(*) FROM (SELECT * FROM a.%[1]s EXCEPT ALL SELECT * FROM b.%[1]s)", name))
		d2 := r.int(fmt.Sprintf("SELECT count(*) FROM (SELECT * FROM b.%[1]s EXCEPT ALL SELECT * FROM a.%[1]s)", name))
		if na != nb || d1 != 0 || d2 != 0 {
			t.Errorf("table %s: %d vs %d rows, %d only in source, %d only in copy", name, na, nb, d1, d2)
		}
	}
}

// freezeAndCheck freezes src to dst and checks everything Freeze promises.
func freezeAndCheck(t *testing.T, src, dst string) FreezeInfo {
	t.Helper()
	ctx := context.Background()
	before := fileState(t, src)
	srcStorage, err := ReadStorage(src)
	if err != nil {
		t.Fatal(err)
	}
	dirBefore := listDir(t, filepath.Dir(dst))
	info, err := Freeze(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if after := fileState(t, src); after != before {
		t.Errorf("Freeze changed the source: %v -> %v", before, after)
	}
	if _, err := os.Stat(dst + ".wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("copy has a WAL: %v", err)
	}
	if got := listDir(t, filepath.Dir(dst)); !slices.Equal(got, slices.Sorted(slices.Values(append(dirBefore, filepath.Base(dst))))) {
		t.Errorf("folder after Freeze: %v (before %v)", got, dirBefore)
	}
	dstStorage, err := ReadStorage(dst)
	if err != nil {
		t.Fatal(err)
	}
	if dstStorage != srcStorage || info.Storage != srcStorage {
		t.Errorf("storage: source %+v, copy %+v, info %+v", srcStorage, dstStorage, info.Storage)
	}
	compareDatabases(t, src, dst)

	// Both read the same through Open; Freeze reports what Open reads.
	cs, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	cd, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer cd.Close()
	ls, err := cs.LastSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Format != cs.Format() || info.Snapshot != ls || cd.Format() != cs.Format() || cd.DataPath() != cs.DataPath() {
		t.Errorf("info %+v; source %s %+v; copy %s", info, cs.Format(), ls, cd.Format())
	}
	ss, err := cs.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sd, err := cd.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ss, sd) {
		t.Errorf("snapshots differ:\n%+v\n%+v", ss, sd)
	}
	sts, err := cs.State(ctx, ls.ID)
	if err != nil {
		t.Fatal(err)
	}
	std, err := cd.State(ctx, ls.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sts, std) {
		t.Errorf("state differs:\n%+v\n%+v", sts, std)
	}
	return info
}

func TestFreezeRealCatalogs(t *testing.T) {
	for _, m := range duckdbCatalogs(t) {
		t.Run(m.File, func(t *testing.T) {
			dir := t.TempDir()
			src := gunzipCatalog(t, m.File, dir, "")
			out := filepath.Join(dir, "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			info := freezeAndCheck(t, src, filepath.Join(out, "ducklake.duckdb"))
			if info.Format != m.Format || info.Snapshot.ID != m.MaxSnapshot {
				t.Errorf("info %+v", info)
			}
			if got := sha256File(t, src); got != m.SHA256 {
				t.Errorf("source changed: %s", got)
			}
		})
	}
}

// TestFreezeFidelity adds to a copy of a real catalog what a catalog could
// hold beyond the ducklake_* tables' own types: UUID, TIMESTAMPTZ, BOOLEAN,
// DECIMAL, BLOB, nested types, enums, defaults, composite/unique keys, CHECK,
// a second schema, odd names, a view, a sequence, an index and a macro.
func TestFreezeFidelity(t *testing.T) {
	for _, file := range []string{"dltest-v01.ducklake", "dltest-v04.ducklake"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			src := gunzipCatalog(t, file, dir, "")
			withWritable(t, src,
				"CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
				`CREATE TABLE "odd ""name"", ü"(
					id UUID PRIMARY KEY,
					"ts col" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT '2025-01-01 00:00:00+00',
					flag BOOLEAN NOT NULL,
					amount DECIMAL(18,3) CHECK (amount >= 0),
					raw BLOB,
					tags VARCHAR[],
					s STRUCT(a INTEGER, b VARCHAR),
					m MAP(VARCHAR, INTEGER),
					feel mood,
					"表" VARCHAR UNIQUE,
					t TIME, d DATE, i HUGEINT, u UBIGINT, f DOUBLE, iv INTERVAL)`,
				`INSERT INTO "odd ""name"", ü" SELECT uuid(), TIMESTAMPTZ '2025-06-24 02:27:07.261+00' + i * INTERVAL 1 HOUR,
					i % 2 = 0, i * 1.5, 'x\x00y'::BLOB, ['a', NULL, 'c,"d'], {'a': i, 'b': 'q''uote'}, MAP {'k': i},
					'ok', 'row ' || i, TIME '12:34:56', DATE '2025-01-01' + i::INTEGER, 170141183460469231731687303715884105727 - i, 18446744073709551615 - i,
					CASE WHEN i = 3 THEN 'NaN'::DOUBLE ELSE i / 7 END, INTERVAL (i) DAY
					FROM range(5) r(i)`,
				`INSERT INTO "odd ""name"", ü" (id, flag, "表") VALUES ('00000000-0000-0000-0000-000000000000', false, NULL)`,
				"CREATE SCHEMA extra",
				"CREATE TABLE extra.pairs(a INTEGER, b INTEGER, c VARCHAR NOT NULL, PRIMARY KEY (a, b))",
				"INSERT INTO extra.pairs SELECT i, i * 2, 'v' || i FROM range(1000) r(i)",
				"CREATE SEQUENCE extra.seq START 7",
				"CREATE VIEW extra.v AS SELECT a + b AS s FROM extra.pairs",
				"CREATE INDEX pairs_c ON extra.pairs(c)",
				"CREATE MACRO extra.twice(x) AS x * 2",
				// rows still only in the WAL are covered by TestWAL
			)
			out := filepath.Join(dir, "out")
			os.Mkdir(out, 0o755)
			freezeAndCheck(t, src, filepath.Join(out, "frozen.duckdb"))
		})
	}
}

func TestFreezeRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := gunzipCatalog(t, "dltest-v04.ducklake", dir, "")
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)

	// dst exists.
	existing := filepath.Join(out, "exists.duckdb")
	os.WriteFile(existing, []byte("keep me"), 0o644)
	if _, err := Freeze(ctx, src, existing); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Freeze onto existing file: %v", err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Error("existing dst was changed")
	}
	// A stale WAL where dst would go would be replayed onto the copy.
	stale := filepath.Join(out, "stale.duckdb")
	os.WriteFile(stale+".wal", []byte("wal"), 0o644)
	if _, err := Freeze(ctx, src, stale); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Freeze beside a stale WAL: %v", err)
	}

	// A SQLite source is converted, but never over an existing dst.
	sqlite := gunzipCatalog(t, "ahri-tre-v0.2.sqlite", dir, "")
	if _, err := Freeze(ctx, sqlite, existing); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Freeze(sqlite) onto an existing dst: %v", err)
	}
	plain := filepath.Join(dir, "plain.duckdb")
	withWritable(t, plain, "CREATE TABLE t(i INTEGER)")
	if _, err := Freeze(ctx, plain, filepath.Join(out, "b.duckdb")); !errors.Is(err, ErrNotCatalog) {
		t.Errorf("Freeze(plain): %v", err)
	}
	bad := gunzipCatalog(t, "dltest-v03-types.ducklake", dir, "")
	withWritable(t, bad, "UPDATE ducklake_metadata SET value = '9.9' WHERE key = 'version'")
	if _, err := Freeze(ctx, bad, filepath.Join(out, "c.duckdb")); !errors.Is(err, ErrUnsupportedFormat) {
		t.Errorf("Freeze(9.9): %v", err)
	}
	if _, err := Freeze(ctx, filepath.Join(dir, "missing"), filepath.Join(out, "d.duckdb")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Freeze(missing): %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Freeze(cctx, src, filepath.Join(out, "e.duckdb")); err == nil {
		t.Error("Freeze with a cancelled context succeeded")
	}
	// Nothing but what the test put there.
	if got := listDir(t, out); !slices.Equal(got, []string{"exists.duckdb", "stale.duckdb.wal"}) {
		t.Errorf("leftovers: %v", got)
	}
}

// TestWAL: rows committed to a catalog but still only in its .wal are seen
// by Open and carried by Freeze, and neither touches the file or the WAL.
func TestWAL(t *testing.T) {
	ctx := context.Background()
	for _, file := range []string{"dltest-v01.ducklake", "airduck-v0.2.ducklake", "dltest-v04.ducklake"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			src := gunzipCatalog(t, file, dir, "")
			last := map[string]int64{"dltest-v01.ducklake": 1, "airduck-v0.2.ducklake": 2, "dltest-v04.ducklake": 1}[file]
			next := last + 1
			changes := "snapshot_id, changes_made"
			withWritable(t, src,
				"PRAGMA disable_checkpoint_on_shutdown",
				"SET checkpoint_threshold = '1TB'",
				fmt.Sprintf("INSERT INTO ducklake_snapshot SELECT %d, TIMESTAMPTZ '2030-01-02 03:04:05+00', schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = %d", next, last),
				fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes (%s) VALUES (%d, 'created_table:"main"."from wal"')`, changes, next),
				fmt.Sprintf(`INSERT INTO ducklake_table (table_id, table_uuid, begin_snapshot, schema_id, table_name) VALUES (99, uuid(), %d, 0, 'from wal')`, next),
			)
			if st, err := os.Stat(src + ".wal"); err != nil || st.Size() == 0 {
				t.Fatalf("no WAL was left: %v", err)
			}
			before := fileState(t, src)
			c, err := Open(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			ls, err := c.LastSnapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ls.ID != next || ls.Changes != `created_table:"main"."from wal"` || !ls.Time.Equal(mustTime(t, "2030-01-02T03:04:05Z")) {
				t.Errorf("last snapshot %+v", ls)
			}
			st, err := c.State(ctx, next)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(tableNames(st), "from wal") {
				t.Errorf("tables at %d: %v", next, tableNames(st))
			}
			c.Close()
			if after := fileState(t, src); after != before {
				t.Fatalf("Open changed the catalog or its WAL")
			}
			out := filepath.Join(dir, "out")
			os.Mkdir(out, 0o755)
			dst := filepath.Join(out, "frozen.duckdb")
			info := freezeAndCheck(t, src, dst)
			if info.Snapshot.ID != next {
				t.Errorf("frozen at %d, want %d", info.Snapshot.ID, next)
			}
			if _, err := os.Stat(src + ".wal"); err != nil {
				t.Errorf("source WAL is gone: %v", err)
			}
		})
	}
}

func TestLocked(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := gunzipCatalog(t, "dltest-v04.ducklake", dir, "")
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	release := startLockHolder(t, src)

	for name, run := range map[string]func() error{
		"Open": func() error {
			c, err := Open(ctx, src)
			if err == nil {
				c.Close()
			}
			return err
		},
		"Freeze": func() error {
			_, err := Freeze(ctx, src, filepath.Join(out, "frozen.duckdb"))
			return err
		},
	} {
		err := run()
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("%s while locked: %v, want ErrLocked", name, err)
		}
		for _, want := range []string{src, "DETACH"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", name, err, want)
			}
		}
	}
	if got := listDir(t, out); len(got) != 0 {
		t.Errorf("leftovers: %v", got)
	}
	release()
	freezeAndCheck(t, src, filepath.Join(out, "frozen.duckdb"))
}

// TestOddPaths: spaces, quotes, unicode and '?' in file and folder names.
// DuckDB 1.5.6 puts the WAL of "a?b.db" at "a.wal?b.db" (walPath) and cannot
// write a database in a folder whose path holds '?': Freeze works around
// both.
func TestOddPaths(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	dir := filepath.Join(base, `we ird 'q' "dq" ü 目录`)
	qdir := filepath.Join(base, `q?dir ü`)
	for _, d := range []string{dir, qdir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := gunzipCatalog(t, "dltest-per-table-schema.ducklake", dir, `it's a "cat" ü?.ducklake`)
	// A committed row left in the WAL, where DuckDB puts it for this name.
	withWritable(t, src,
		"PRAGMA disable_checkpoint_on_shutdown", "SET checkpoint_threshold = '1TB'",
		"INSERT INTO ducklake_snapshot SELECT 7, now(), schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = 6")
	if _, err := os.Stat(walPath(src)); err != nil {
		t.Fatalf("no WAL at %s: %v", walPath(src), err)
	}
	c, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path() != src {
		t.Errorf("Path %q", c.Path())
	}
	if last, err := c.LastSnapshot(ctx); err != nil || last.ID != 7 {
		t.Errorf("LastSnapshot %+v %v", last, err)
	}
	if _, err := c.State(ctx, 6); err != nil {
		t.Error(err)
	}
	c.Close()

	// dst with a '?' in its name, beside the source.
	info := freezeAndCheck(t, src, filepath.Join(dir, `frozen 'x' "y" ü?.duckdb`))
	if info.Snapshot.ID != 7 {
		t.Errorf("info %+v", info)
	}
	// dst and src in a folder whose path holds '?'.
	src2 := gunzipCatalog(t, "airduck-v0.2.ducklake", qdir, "src.ducklake")
	freezeAndCheck(t, src2, filepath.Join(qdir, "frozen.duckdb"))
	// ... built on another file system (TMPDIR) and copied over.
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		shm, err := os.MkdirTemp("/dev/shm", "fdl-test-*")
		if err == nil {
			defer os.RemoveAll(shm)
			t.Setenv("TMPDIR", shm)
			freezeAndCheck(t, src2, filepath.Join(qdir, "frozen2.duckdb"))
			if got := listDir(t, shm); len(got) != 0 {
				t.Errorf("leftovers in TMPDIR: %v", got)
			}
		}
	}

	// A relative path works too.
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	c, err = Open(ctx, filepath.Base(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.Path() != src {
		t.Errorf("Path %q, want %q", c.Path(), src)
	}
	c.Close()
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// bigCatalog makes a copy of a real 0.4 catalog grown to about size bytes
// with random strings in ducklake_file_column_stats and ducklake_data_file.
func bigCatalog(t testing.TB, dir string, size int64) string {
	t.Helper()
	src := gunzipCatalog(t, "dltest-v04.ducklake", dir, "big.ducklake")
	rows := size / 80 // about 80 bytes per stats row on disk, plus one data file row per 10
	withWritable(t, src,
		fmt.Sprintf(`INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, path, path_is_relative, file_format, record_count, file_size_bytes)
			SELECT i, 1, 1, 'ducklake-' || uuid() || '.parquet', true, 'parquet', 1000, 123456 FROM range(%d) r(i)`, rows/10),
		fmt.Sprintf(`INSERT INTO ducklake_file_column_stats
			SELECT i // 10, 1, 1, 1000, 1000, 0, md5(random()::VARCHAR) || md5(random()::VARCHAR), md5(random()::VARCHAR) || md5(random()::VARCHAR), false, NULL
			FROM range(%d) r(i)`, rows),
		"CHECKPOINT",
	)
	return src
}

// freezeRSS runs Freeze in a child process and returns its peak RSS (KiB).
func freezeRSS(t testing.TB, src, dst string) int64 {
	t.Helper()
	return childRSS(t, envFreezeSrc+"="+src, envFreezeDst+"="+dst)
}

// childRSS runs the test binary as a child with env (a role of TestMain) and
// returns the peak RSS (KiB) it prints.
func childRSS(t testing.TB, env ...string) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child %v: %v", env, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "peak_rss_kib "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("child %v printed %q", env, out)
	return 0
}

// BenchmarkFreeze freezes a catalog of about 100 MiB (a real 0.4 catalog
// grown with random strings) and reports the source size and the peak RSS
// of a child process that runs one Freeze:
//
//	go test -run '^$' -bench BenchmarkFreeze -benchtime 3x ./internal/ducklake/
func BenchmarkFreeze(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	src := bigCatalog(b, dir, 100<<20)
	st, err := os.Stat(src)
	if err != nil {
		b.Fatal(err)
	}
	benchFreeze(b, ctx, src, dir, float64(st.Size())/(1<<20), "src-MiB")
}

// benchFreeze measures a child process's peak RSS freezing src, then times
// Freeze of src into dir b.N times, and reports sizeMiB under sizeUnit and
// the peak RSS.
func benchFreeze(b *testing.B, ctx context.Context, src, dir string, sizeMiB float64, sizeUnit string) {
	b.Helper()
	rss := freezeRSS(b, src, filepath.Join(dir, "rss.duckdb"))
	b.ResetTimer() // (it also drops reported metrics: report after the loop)
	for i := 0; b.Loop(); i++ {
		dst := filepath.Join(dir, fmt.Sprintf("frozen-%d.duckdb", i))
		if _, err := Freeze(ctx, src, dst); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.Remove(dst)
		b.StartTimer()
	}
	b.ReportMetric(sizeMiB, sizeUnit)
	b.ReportMetric(float64(rss)/1024, "peak-rss-MiB")
}

// TestFreezeMemoryFlat: Freeze's peak RSS does not grow with the catalog's
// size. It builds catalogs of about 40 and 200 MiB, so it only runs when
// FDL_DUCKLAKE_BIG is set:
//
//	FDL_DUCKLAKE_BIG=1 go test -count=1 -run TestFreezeMemoryFlat -v ./internal/ducklake/
func TestFreezeMemoryFlat(t *testing.T) {
	if os.Getenv("FDL_DUCKLAKE_BIG") == "" {
		t.Skip("set FDL_DUCKLAKE_BIG=1 to build 40 and 200 MiB catalogs and compare Freeze's peak RSS")
	}
	var rss []int64
	for _, mib := range []int64{40, 200} {
		dir := t.TempDir()
		src := bigCatalog(t, dir, mib<<20)
		st, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		r := freezeRSS(t, src, filepath.Join(dir, "frozen.duckdb"))
		t.Logf("source %d MiB: peak RSS %d MiB", st.Size()>>20, r>>10)
		rss = append(rss, r)
	}
	if rss[1] > rss[0]+64<<10 || rss[1] > 320<<10 {
		t.Errorf("peak RSS grows with catalog size: %d KiB -> %d KiB", rss[0], rss[1])
	}
	// With a WAL beside the catalog, Freeze copies it with COPY FROM
	// DATABASE under memory_limit 128MB (the byte copy above never holds the
	// catalog in memory).
	rss = rss[:0]
	for _, mib := range []int64{40, 200} {
		dir := t.TempDir()
		src := bigCatalog(t, dir, mib<<20)
		withWritable(t, src, "PRAGMA disable_checkpoint_on_shutdown", "SET checkpoint_threshold = '1TB'",
			"INSERT INTO ducklake_metadata (key, value) VALUES ('fdl_test', 'in the WAL')")
		if _, err := os.Stat(src + ".wal"); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		r := freezeRSS(t, src, filepath.Join(dir, "frozen.duckdb"))
		t.Logf("source %d MiB with a WAL (COPY FROM DATABASE): peak RSS %d MiB", st.Size()>>20, r>>10)
		rss = append(rss, r)
	}
	if rss[1] > rss[0]+64<<10 || rss[1] > 320<<10 {
		t.Errorf("peak RSS of COPY FROM DATABASE grows with catalog size: %d KiB -> %d KiB", rss[0], rss[1])
	}
}
