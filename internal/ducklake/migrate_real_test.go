package ducklake

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

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// The migration is judged by DuckDB's own ducklake extension (1.5.5, format
// 1.0): for each catalog, fdl's migrated copy must equal, table by table
// (columns, types, defaults, constraints, every row), the copy the extension
// migrates itself with AUTOMATIC_MIGRATION; read through the line fdl
// prints (READ_ONLY), it must give the same count and row checksum for
// every table at every snapshot (AT (VERSION => n)) as the extension's copy
// gives, and as the older release that wrote the catalog gives reading the
// original, where one is installed.

// migrationCase is one catalog to migrate.
type migrationCase struct {
	name string
	src  string // the catalog to migrate (never changed)
	// reader reads src as it is (the release that writes its format), with
	// prefix "ducklake:" or "ducklake:sqlite:"; nil when none is installed.
	reader *realduck.DuckDB
	prefix string
	// readerSkips names a table the reader cannot read and why.
	readerSkips map[string]string
	// extSource, when set, is the catalog the extension migrates as the
	// reference, instead of a copy of src (in DuckDB form).
	extSource string
}

// readerFor returns the installed release that reads format as it is, or
// nil.
func readerFor(t *testing.T, format string) *realduck.DuckDB {
	rel := map[string]realduck.Release{"0.2": realduck.V132, "0.3": realduck.V144, "0.4": realduck.V151}[format]
	if rel == "" {
		return nil
	}
	return realduck.Find(t, rel, "ducklake", "sqlite")
}

// TestMigrateMatchesExtensionCorpus migrates every real catalog of the
// corpus (0.1, 0.2 in DuckDB and SQLite form, 0.3, 0.4).
func TestMigrateMatchesExtensionCorpus(t *testing.T) {
	d15 := realduck.Find(t, realduck.V15, "ducklake", "sqlite", "httpfs")
	for _, e := range testutil.Manifest(t) {
		t.Run(e.File, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "orig", e.File)
			testutil.Gunzip(t, e.File, src)
			c := migrationCase{name: e.File, src: src, prefix: "ducklake:"}
			// The corpus's data files are not on this machine: a table is
			// read at a snapshot only where every file it lists there is
			// (the metadata is compared in full either way).
			if e.DB == "sqlite" {
				c.prefix = "ducklake:sqlite:"
			}
			// A reader that needs an extension for the data path's scheme
			// (httpfs for s3://) that the old release lacks is left out.
			if r := readerFor(t, e.Format); r != nil && (!strings.Contains(e.DataPath, "://") || r.Has("httpfs")) {
				c.reader = r
			}
			checkMigration(t, d15, c)
		})
	}
}

// TestMigrateOldWriters writes a lake with data with each older release
// (DuckLake 0.2, 0.3, 0.4; DuckDB form, SQLite form, and DuckDB form with
// inlined rows), then migrates it; the data files are local, so every row
// is compared. It also migrates the two
// development formats, built from those lakes as the extension's dev builds
// left them: 0.3-dev1 (DuckDB 1.3's branch migrated 0.2 to it by adding the
// author, commit_message and commit_extra_info columns) and 0.4-dev1 (the
// 0.4 layout, with and without the old partial_file_info column).
//
// make test runs a short form (about 8 s of CPU per lake): every release
// writes the DuckDB form with inlined rows (its metadata holds everything
// the plain form's does, and the inlined-data tables besides; the dev
// formats are made from two of them), DuckLake 0.2 also the SQLite form
// (the one DuckDB 1.5.5 cannot migrate in place), and 0.4 also the plain
// DuckDB form (the old reader then reads every table, t1 after its rename
// included). make soak (FDL_SOAK=1) runs every release in every form.
func TestMigrateOldWriters(t *testing.T) {
	d15 := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	short := map[string]bool{"0.2-duckdb-inlined": true, "0.2-sqlite": true, "0.3-duckdb-inlined": true, "0.4-duckdb": true, "0.4-duckdb-inlined": true}
	all := testutil.Soak(t, "0.2-duckdb, 0.3-duckdb, 0.3-sqlite and 0.4-sqlite are")
	work, err := os.ReadFile("testdata/migrate-workload.sql")
	if err != nil {
		t.Fatal(err)
	}
	lakes := map[string]string{}
	lakeDir := t.TempDir()
	for _, w := range []struct {
		rel    realduck.Release
		format string
	}{{realduck.V132, "0.2"}, {realduck.V144, "0.3"}, {realduck.V151, "0.4"}} {
		for _, form := range []string{"duckdb", "sqlite", "duckdb-inlined"} {
			name := fmt.Sprintf("%s-%s", w.format, form)
			if !all && !short[name] {
				continue
			}
			t.Run(name, func(t *testing.T) {
				old := realduck.Find(t, w.rel, "ducklake", "sqlite")
				dir := filepath.Join(lakeDir, name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				src := filepath.Join(dir, "lake.duckdb")
				prefix, inlining := "ducklake:", 0
				c := migrationCase{name: name, src: src, reader: old, prefix: prefix}
				switch form {
				case "sqlite":
					src = filepath.Join(dir, "lake.sqlite")
					prefix = "ducklake:sqlite:"
					c.src, c.prefix = src, prefix
				case "duckdb-inlined":
					// Small inserts stay in the catalog. The old releases
					// cannot read their own inlined rows once a column was
					// renamed (1.4.4 and 1.5.1: "Failed to read inlined data
					// from DuckLake: Referenced column "name" not found";
					// 1.3.2: an internal error), at any snapshot; DuckDB
					// 1.5.5 reads them from the migrated catalog.
					inlining = 10
					c.readerSkips = map[string]string{"main.t1": "inlined rows after RENAME COLUMN"}
				}
				attach := fmt.Sprintf("ATTACH '%s%s' AS l (DATA_PATH '%s', DATA_INLINING_ROW_LIMIT %d);\n", prefix, src, filepath.Join(dir, "data"), inlining)
				if _, err := old.Query(attach + string(work)); err != nil {
					t.Fatalf("write the lake with DuckDB %s: %v", w.rel, err)
				}
				if got := catalogFormat(t, src); got != w.format {
					t.Fatalf("DuckDB %s wrote format %s, want %s", w.rel, got, w.format)
				}
				lakes[name] = src
				checkMigration(t, d15, c)
			})
		}
	}

	// The dev formats, made from copies of the DuckDB-form lakes above.
	devCase := func(name, from, format string, stmts ...string) {
		t.Run(name, func(t *testing.T) { migrateDevFormat(t, d15, lakes[from], from, name, format, stmts...) })
	}
	// duckdb/ducklake v1.3-ossivalis ducklake_metadata_manager.cpp MigrateV02.
	devCase("0.3-dev1", "0.2-duckdb-inlined", "0.3-dev1",
		"ALTER TABLE ducklake_snapshot_changes ADD COLUMN author VARCHAR DEFAULT NULL",
		"ALTER TABLE ducklake_snapshot_changes ADD COLUMN commit_message VARCHAR DEFAULT NULL",
		"ALTER TABLE ducklake_snapshot_changes ADD COLUMN commit_extra_info VARCHAR DEFAULT NULL")
	devCase("0.4-dev1", "0.4-duckdb-inlined", "0.4-dev1")
	devCase("0.4-dev1-partial-file-info", "0.4-duckdb-inlined", "0.4-dev1",
		"ALTER TABLE ducklake_data_file ADD COLUMN partial_file_info VARCHAR")
}

// migrateDevFormat is one development format of TestMigrateOldWriters:
// a copy of the lake base (written as from) changed by stmts into format,
// named name, then migrated and compared (checkMigration) with d15.
func migrateDevFormat(t *testing.T, d15 *realduck.DuckDB, base, from, name, format string, stmts ...string) {
	if base == "" {
		t.Skipf("the %s lake was not written", from)
	}
	src := filepath.Join(t.TempDir(), "lake.duckdb")
	copyTo(t, base, src)
	db, err := sql.Open("duckdb", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(stmts, "UPDATE ducklake_metadata SET value = '"+format+"' WHERE key = 'version'") {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	c := migrationCase{name: name, src: src, prefix: "ducklake:"}
	if name == "0.4-dev1" {
		// The extension cannot migrate this layout (its MigrateV03
		// reads partial_file_info even in allow_failures mode:
		// "Referenced column partial_file_info not found"); the same
		// lake at 0.4, which it migrates, is the reference.
		if err := extMigrate(d15, copyTo(t, src, filepath.Join(t.TempDir(), "try.duckdb"))); err == nil {
			t.Log("note: the extension now migrates a 0.4-dev1 catalog without partial_file_info")
		} else {
			t.Logf("the extension cannot migrate it: %v", err)
		}
		c.extSource = base
	}
	checkMigration(t, d15, c)
}

// checkMigration migrates c.src with Migrate and compares the result with
// the extension's own migration and, through the extension, with what the
// old release reads from the original.
//
// It is one piece: the checks of one migrated catalog against the
// extension's own migration of the same source, in the order they are made.
func checkMigration(t *testing.T, d15 *realduck.DuckDB, c migrationCase) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	sum0 := sha256File(t, c.src)

	fdl := filepath.Join(dir, "fdl.duckdb")
	info, err := Migrate(ctx, c.src, fdl)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if sum := sha256File(t, c.src); sum != sum0 {
		t.Fatalf("Migrate changed its source %s", c.src)
	}
	if info.To != CurrentFormat || len(info.Steps) == 0 || info.Steps[len(info.Steps)-1].To != CurrentFormat {
		t.Fatalf("Migrate info: %+v", info)
	}

	// The reference: the extension's AUTOMATIC_MIGRATION of a DuckDB-form
	// copy (Freeze's copy for a SQLite catalog: DuckDB 1.5.5's extension
	// cannot migrate a 0.2 SQLite catalog in place, see below).
	ref := filepath.Join(dir, "ext.duckdb")
	from := c.src
	if c.extSource != "" {
		from = c.extSource
	}
	if _, err := Freeze(ctx, from, ref); err != nil {
		t.Fatal(err)
	}
	if err := extMigrate(d15, ref); err != nil {
		t.Fatalf("the extension's own migration: %v", err)
	}
	if b, _ := DetectBackend(c.src); b == BackendSQLite {
		inPlace := copyTo(t, c.src, filepath.Join(dir, "inplace.sqlite"))
		if _, err := d15.Query("ATTACH 'ducklake:sqlite:" + inPlace + "' AS l (AUTOMATIC_MIGRATION true); DETACH l;"); err != nil {
			t.Logf("DuckDB %s cannot migrate the SQLite catalog itself: %v", d15.Release, firstLine(err.Error()))
		}
	}
	if err := compareCatalogFiles(ctx, fdl, ref); err != nil {
		t.Fatalf("fdl's migration differs from the extension's: %v", err)
	}

	// The snapshot ids and the last snapshot: none added.
	cat, err := Open(ctx, fdl)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := cat.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last := snaps[len(snaps)-1]; last.ID != info.Snapshot.ID || !last.Time.Equal(info.Snapshot.Time) {
		t.Fatalf("last snapshot %d, info says %d", last.ID, info.Snapshot.ID)
	}
	plan, unread := readPlan(t, ctx, cat, snaps)
	cat.Close()

	// Through the extension, as a reader attaches a published version.
	got := readThrough(t, d15, "ATTACH 'ducklake:"+fdl+"' AS v (READ_ONLY)", plan)
	want := readThrough(t, d15, "ATTACH 'ducklake:"+ref+"' AS v (READ_ONLY)", plan)
	compareReads(t, "fdl's migrated catalog (DuckDB 1.5.5)", got, "the extension's migrated catalog (DuckDB 1.5.5)", want)
	oldReads := 0
	if c.reader != nil {
		var oldPlan []tableRead
		var gotOld []string
		for i, p := range plan {
			if _, skip := c.readerSkips[p.schema+"."+p.table]; !skip {
				oldPlan = append(oldPlan, p)
				gotOld = append(gotOld, got[i])
			}
		}
		old := readThrough(t, c.reader, "ATTACH '"+c.prefix+c.src+"' AS v (READ_ONLY)", oldPlan)
		compareReads(t, "fdl's migrated catalog (DuckDB 1.5.5)", gotOld, fmt.Sprintf("the original (DuckDB %s)", c.reader.Release), old)
		oldReads = len(oldPlan)
	}
	oldName := "none"
	if c.reader != nil {
		oldName = "DuckDB " + string(c.reader.Release)
	}
	t.Logf("%s: %s -> %s in %d step(s), %d snapshots, metadata equal to the extension's; %d of %d table-at-snapshot reads through the extension (the others' data files are not here), %d also by the original's reader (%s)",
		c.name, info.From, info.To, len(info.Steps), len(snaps), len(plan), len(plan)+unread, oldReads, oldName)
}

// extMigrate lets the extension migrate the DuckDB-form catalog at path in
// place (ATTACH with AUTOMATIC_MIGRATION, then DETACH).
func extMigrate(d *realduck.DuckDB, path string) error {
	_, err := d.Query("ATTACH 'ducklake:" + path + "' AS l (AUTOMATIC_MIGRATION true); DETACH l;")
	return err
}

// tableRead is one table at one snapshot to read through the extension.
type tableRead struct {
	snapshot      int64
	schema, table string
}

// readPlan lists every table visible at every snapshot of cat whose data
// and delete files there are all on this machine, and counts the others.
func readPlan(t *testing.T, ctx context.Context, cat *Catalog, snaps []Snapshot) (plan []tableRead, unread int) {
	t.Helper()
	files, err := cat.DataFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		st, err := cat.State(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range st.Schemas {
			for _, tb := range sc.Tables {
				here := true
				for _, f := range files {
					if f.TableID == tb.ID && f.BeginSnapshot <= s.ID && (f.EndSnapshot == nil || s.ID < *f.EndSnapshot) {
						if _, err := os.Stat(f.ResolvedPath); err != nil {
							here = false
						}
					}
				}
				if !here {
					unread++
					continue
				}
				plan = append(plan, tableRead{snapshot: s.ID, schema: sc.Name, table: tb.Name})
			}
		}
	}
	return plan, unread
}

// readThrough runs attach and then, for each planned read, the table's
// count and (where its data is here) an order-independent checksum of its
// rows at that snapshot, with release d. It returns one line per read.
func readThrough(t *testing.T, d *realduck.DuckDB, attach string, plan []tableRead) []string {
	t.Helper()
	var b strings.Builder
	b.WriteString(attach + ";\n")
	for _, p := range plan {
		name := fmt.Sprintf("v.%s.%s", sqlquote.Ident(p.schema), sqlquote.Ident(p.table))
		sum := "md5(coalesce(string_agg(CAST(x AS VARCHAR), chr(10) ORDER BY CAST(x AS VARCHAR)), ''))"
		fmt.Fprintf(&b, "SELECT %d, %s, count(*), %s FROM (SELECT * FROM %s AT (VERSION => %d)) x;\n", p.snapshot, sqlquote.String(p.schema+"."+p.table), sum, name, p.snapshot)
	}
	res, err := d.Query(b.String())
	if err != nil {
		t.Fatalf("read through DuckDB %s: %v", d.Release, err)
	}
	out := make([]string, 0, len(res))
	for _, r := range res {
		for _, row := range r.Rows {
			out = append(out, fmt.Sprint(row...))
		}
	}
	if len(out) != len(plan) {
		t.Fatalf("DuckDB %s returned %d results for %d reads", d.Release, len(out), len(plan))
	}
	return out
}

func compareReads(t *testing.T, gotName string, got []string, wantName string, want []string) {
	t.Helper()
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("snapshot/table read %d: %s gives %q, %s gives %q", i, gotName, got[i], wantName, want[i])
		}
	}
}

// compareCatalogFiles compares two DuckDB-format catalogs with plain DuckDB:
// the same tables; in each the same columns in the same order with the same
// types and nullability, and defaults of the same value and type; the same
// constraints; the same rows (as multisets).
//
// It is one piece: one comparison of two catalogs, list by list (tables,
// columns, defaults, rows), over one DuckDB connection.
func compareCatalogFiles(ctx context.Context, a, b string) error {
	db, conn, err := newDuckDB(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	for alias, p := range map[string]string{"a": a, "b": b} {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("ATTACH %s AS %s (READ_ONLY)", sqlquote.String(p), alias)); err != nil {
			return err
		}
	}
	list := func(q string) (map[string][]string, error) {
		out := map[string][]string{}
		for _, alias := range []string{"a", "b"} {
			rows, err := conn.QueryContext(ctx, fmt.Sprintf(q, alias))
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					rows.Close()
					return nil, err
				}
				out[alias] = append(out[alias], s)
			}
			rows.Close()
		}
		return out, nil
	}
	for what, q := range map[string]string{
		"tables":      `SELECT schema_name || '.' || table_name FROM duckdb_tables() WHERE database_name = '%s' ORDER BY 1`,
		"columns":     `SELECT concat_ws(' ', schema_name || '.' || table_name, column_index, column_name, data_type, is_nullable) FROM duckdb_columns() WHERE database_name = '%s' ORDER BY 1`,
		"constraints": `SELECT concat_ws(' ', schema_name || '.' || table_name, constraint_type, array_to_string(constraint_column_names, ',')) FROM duckdb_constraints() WHERE database_name = '%s' ORDER BY 1`,
	} {
		l, err := list(q)
		if err != nil {
			return err
		}
		if !slices.Equal(l["a"], l["b"]) {
			return fmt.Errorf("%s differ:\n  %s: %v\n  %s: %v", what, a, symDiff(l["a"], l["b"]), b, symDiff(l["b"], l["a"]))
		}
	}
	// Column defaults by value: DuckDB releases spell the same default
	// differently in the file (1.5 writes DEFAULT false as
	// CAST('f' AS BOOLEAN), 2.0 as false).
	defaults, err := list(`SELECT schema_name || '.' || table_name || '.' || column_name || chr(0) || column_default FROM duckdb_columns() WHERE database_name = '%s' AND column_default IS NOT NULL ORDER BY 1`)
	if err != nil {
		return err
	}
	for alias, l := range defaults {
		for i, d := range l {
			col, expr, _ := strings.Cut(d, "\x00")
			var v sql.NullString
			if err := conn.QueryRowContext(ctx, "SELECT CAST(("+expr+") AS VARCHAR) || ' ' || typeof("+expr+")").Scan(&v); err != nil {
				return fmt.Errorf("default of %s (%s): %w", col, expr, err)
			}
			defaults[alias][i] = col + " DEFAULT " + v.String
		}
	}
	if !slices.Equal(defaults["a"], defaults["b"]) {
		return fmt.Errorf("column defaults differ:\n  %s: %v\n  %s: %v", a, symDiff(defaults["a"], defaults["b"]), b, symDiff(defaults["b"], defaults["a"]))
	}
	tables, err := list(`SELECT schema_name || chr(0) || table_name FROM duckdb_tables() WHERE database_name = '%s' ORDER BY 1`)
	if err != nil {
		return err
	}
	var errs []error
	for _, st := range tables["a"] {
		schema, table, _ := strings.Cut(st, "\x00")
		tb := sqlquote.Ident(schema) + "." + sqlquote.Ident(table)
		var onlyA, onlyB, n int64
		q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT * FROM a.%[1]s EXCEPT ALL SELECT * FROM b.%[1]s)),
			(SELECT count(*) FROM (SELECT * FROM b.%[1]s EXCEPT ALL SELECT * FROM a.%[1]s)), (SELECT count(*) FROM a.%[1]s)`, tb)
		if err := conn.QueryRowContext(ctx, q).Scan(&onlyA, &onlyB, &n); err != nil {
			return fmt.Errorf("compare %s: %w", tb, err)
		}
		if onlyA != 0 || onlyB != 0 {
			errs = append(errs, fmt.Errorf("table %s: %d of %d rows only in %s, %d only in %s", tb, onlyA, n, a, onlyB, b))
		}
	}
	return errors.Join(errs...)
}

// symDiff returns the items of a not in b.
func symDiff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

func catalogFormat(t *testing.T, path string) string {
	t.Helper()
	c, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Format()
}

func copyTo(t *testing.T, src, dst string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestMigrateV01PartitionKeysMatchesExtension: the 0.1 catalog with a
// partition key (partitioned01) migrates as the extension migrates it.
func TestMigrateV01PartitionKeysMatchesExtension(t *testing.T) {
	d15 := realduck.Find(t, realduck.V15, "ducklake")
	src := partitioned01(t, t.TempDir())
	checkMigration(t, d15, migrationCase{name: "0.1 with a partition key", src: src, prefix: "ducklake:"})
}
