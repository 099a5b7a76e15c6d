package ducklake

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

func countColumns(cols []meta.Column) int {
	n := 0
	for _, c := range cols {
		n += 1 + countColumns(c.Children)
	}
	return n
}

func tableNames(st *meta.State) []string {
	var names []string
	for _, s := range st.Schemas {
		for _, t := range s.Tables {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names
}

func findTable(t *testing.T, st *meta.State, name string) meta.Table {
	t.Helper()
	for _, s := range st.Schemas {
		for _, tb := range s.Tables {
			if tb.Name == name {
				return tb
			}
		}
	}
	t.Fatalf("table %q not in state at snapshot %d", name, st.Snapshot)
	return meta.Table{}
}

func columnNames(cols []meta.Column) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name)
	}
	return out
}

// TestOpenRealCatalogs checks every DuckDB-format catalog of MANIFEST.md
// against the facts stated there.
//
// It is one piece: one loop over the manifest's catalogs, each compared
// with the manifest's facts one after the other.
func TestOpenRealCatalogs(t *testing.T) {
	ctx := context.Background()
	for _, m := range duckdbCatalogs(t) {
		t.Run(m.File, func(t *testing.T) {
			dir := t.TempDir()
			path := gunzipCatalog(t, m.File, dir, "")
			if got := sha256File(t, path); got != m.SHA256 {
				t.Fatalf("sha256 %s, manifest says %s", got, m.SHA256)
			}
			before := fileState(t, path)
			c, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Format() != m.Format {
				t.Errorf("Format %q, want %q", c.Format(), m.Format)
			}
			if c.DataPath() != m.DataPath {
				t.Errorf("DataPath %q, want %q", c.DataPath(), m.DataPath)
			}
			if c.Path() != path {
				t.Errorf("Path %q, want %q", c.Path(), path)
			}
			if _, ok := c.Tables()["ducklake_snapshot"]; !ok {
				t.Errorf("Tables lacks ducklake_snapshot: %v", c.Tables())
			}
			last, err := c.LastSnapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if last.ID != m.MaxSnapshot {
				t.Errorf("last snapshot %d, want %d", last.ID, m.MaxSnapshot)
			}
			if last.Time.IsZero() || last.Time.Location().String() != "UTC" {
				t.Errorf("last snapshot time %v, want a UTC time", last.Time)
			}
			snaps, err := c.Snapshots(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(snaps)) != m.MaxSnapshot+1 {
				t.Fatalf("%d snapshots, want %d", len(snaps), m.MaxSnapshot+1)
			}
			for i, s := range snaps {
				if s.ID != int64(i) {
					t.Errorf("snapshot %d has id %d", i, s.ID)
				}
				if s.Changes == "" {
					t.Errorf("snapshot %d has no changes_made", s.ID)
				}
				// Every real changes_made parses into kind:value items that
				// join back to the original string.
				items := ParseChanges(s.Changes)
				var parts []string
				for _, it := range items {
					if it.Kind == "" || it.Value == "" {
						t.Errorf("snapshot %d: bad item %+v in %q", s.ID, it, s.Changes)
					}
					parts = append(parts, it.Kind+":"+it.Value)
				}
				if strings.Join(parts, ",") != s.Changes {
					t.Errorf("snapshot %d: %q parsed as %+v", s.ID, s.Changes, items)
				}
			}
			if snaps[len(snaps)-1] != last {
				t.Errorf("LastSnapshot %+v != last of Snapshots %+v", last, snaps[len(snaps)-1])
			}

			st, err := c.State(ctx, last.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := tableNames(st); !slices.Equal(got, m.Tables) {
				t.Errorf("live tables %v, want %v", got, m.Tables)
			}
			live, dataFiles := 0, int64(0)
			for _, s := range st.Schemas {
				for _, tb := range s.Tables {
					live += countColumns(tb.Columns)
					dataFiles += tb.DataFiles
				}
			}
			if live != m.LiveColumns {
				t.Errorf("live columns %d, want %d", live, m.LiveColumns)
			}
			if dataFiles != int64(m.DataFiles) { // no data file of the corpus has an end_snapshot
				t.Errorf("visible data files %d, want %d", dataFiles, m.DataFiles)
			}
			files, err := c.DataFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var nData, nDel int
			for _, f := range files {
				if f.Delete {
					nDel++
				} else {
					nData++
				}
				if f.ResolvedPath == "" || !strings.HasSuffix(f.ResolvedPath, f.Path) {
					t.Errorf("file %d resolved to %q", f.ID, f.ResolvedPath)
				}
			}
			if nData != m.DataFiles || nDel != m.DeleteFiles {
				t.Errorf("DataFiles: %d data, %d delete; want %d, %d", nData, nDel, m.DataFiles, m.DeleteFiles)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			// Total columns, counted independently.
			r := newRawDB(t, "")
			r.exec(fmt.Sprintf("ATTACH %s AS x (READ_ONLY)", sqlquote.String(path)))
			if n := r.int("SELECT count(*) FROM x.ducklake_column"); n != int64(m.TotalCols) {
				t.Errorf("ducklake_column has %d rows, want %d", n, m.TotalCols)
			}
			r.close()
			if after := fileState(t, path); after != before {
				t.Errorf("Open changed the catalog: %v -> %v", before, after)
			}
		})
	}
}

func TestOpenNotCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	random := filepath.Join(dir, "random.bin")
	b := make([]byte, 8192)
	rand.Read(b)
	copy(b[8:], "XXXX") // never DUCK by chance
	if err := os.WriteFile(random, b, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.duckdb")
	withWritable(t, plain, "CREATE TABLE t(i INTEGER)", "INSERT INTO t VALUES (1)")
	// Only one of the two required tables.
	half := filepath.Join(dir, "half.duckdb")
	withWritable(t, half, "CREATE TABLE ducklake_metadata(key VARCHAR, value VARCHAR)", "INSERT INTO ducklake_metadata VALUES ('version', '0.4')")

	for _, p := range []string{random, empty, plain, half, dir} {
		c, err := Open(ctx, p)
		if !errors.Is(err, ErrNotCatalog) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Open(%s) = %v, want ErrNotCatalog", filepath.Base(p), err)
		}
	}
	if _, err := Open(ctx, filepath.Join(dir, "missing.ducklake")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want fs.ErrNotExist", err)
	}
	// A catalog without a version row.
	noVersion := gunzipCatalog(t, "dltest-v04.ducklake", dir, "noversion.ducklake")
	withWritable(t, noVersion, "DELETE FROM ducklake_metadata WHERE key = 'version'")
	if _, err := Open(ctx, noVersion); !errors.Is(err, ErrNotCatalog) {
		t.Errorf("Open(no version) = %v, want ErrNotCatalog", err)
	}
}

func TestOpenUnsupportedFormat(t *testing.T) {
	for _, file := range []string{"dltest-v01.ducklake", "dltest-v04.ducklake"} { // without and with scope columns
		t.Run(file, func(t *testing.T) {
			path := gunzipCatalog(t, file, t.TempDir(), "")
			withWritable(t, path, "UPDATE ducklake_metadata SET value = '9.9' WHERE key = 'version'")
			_, err := Open(context.Background(), path)
			if !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("Open = %v, want ErrUnsupportedFormat", err)
			}
			for _, want := range []string{`"9.9"`, "0.1", "0.3-dev1", "1.0", path} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %s", err, want)
				}
			}
		})
	}
}

// A table lacking a column every format has is refused by name.
func TestOpenMissingColumn(t *testing.T) {
	path := gunzipCatalog(t, "dltest-v04.ducklake", t.TempDir(), "")
	withWritable(t, path, "ALTER TABLE ducklake_column DROP COLUMN column_type")
	_, err := Open(context.Background(), path)
	if !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "ducklake_column") || !strings.Contains(err.Error(), "column_type") {
		t.Fatalf("Open = %v, want ErrUnsupportedFormat naming ducklake_column.column_type", err)
	}
}

// A scoped 'version' row (a per-schema setting) must not be taken for the
// catalog's format.
func TestOpenScopedMetadata(t *testing.T) {
	path := gunzipCatalog(t, "dltest-v04.ducklake", t.TempDir(), "")
	withWritable(t, path,
		"INSERT INTO ducklake_metadata VALUES ('version', '7.7', 'schema', 0)",
		"INSERT INTO ducklake_metadata VALUES ('data_path', 's3://elsewhere/', 'table', 1)")
	c, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Format() != "0.4" || c.DataPath() != "/tmp/v04_data3/" {
		t.Errorf("Format %q DataPath %q", c.Format(), c.DataPath())
	}
}

func TestStateDroppedColumn(t *testing.T) {
	ctx := context.Background()
	path := gunzipCatalog(t, "dltest-per-table-schema.ducklake", t.TempDir(), "")
	c, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	want := map[int64]map[string][]string{
		0: {},
		1: {"T": {"a"}},
		3: {"T": {"a"}, "T_1": {"a"}, "T_2": {"a"}},
		4: {"T": {"a"}, "T_1": {"a"}, "T_2": {"a", "b"}},
		5: {"T": {"a"}, "T_1": {"a", "b"}, "T_2": {"a", "b"}}, // before the drop
		6: {"T": {"a"}, "T_1": {"b"}, "T_2": {"a", "b"}},      // a of T_1 dropped (end_snapshot 6)
	}
	for s, tables := range want {
		st, err := c.State(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if st.Snapshot != s || len(st.Schemas) != 1 || st.Schemas[0].Name != "main" {
			t.Fatalf("snapshot %d: %+v", s, st)
		}
		var names []string
		for name := range tables {
			names = append(names, name)
		}
		slices.Sort(names)
		if got := tableNames(st); !slices.Equal(got, names) {
			t.Errorf("snapshot %d: tables %v, want %v", s, got, names)
		}
		for name, cols := range tables {
			if got := columnNames(findTable(t, st, name).Columns); !slices.Equal(got, cols) {
				t.Errorf("snapshot %d: %s columns %v, want %v", s, name, got, cols)
			}
		}
	}
	if _, err := c.State(ctx, 7); !errors.Is(err, ErrSnapshotNotFound) {
		t.Errorf("State(7) = %v, want ErrSnapshotNotFound", err)
	}
	if _, err := c.State(ctx, -1); !errors.Is(err, ErrSnapshotNotFound) {
		t.Errorf("State(-1) = %v, want ErrSnapshotNotFound", err)
	}
}

func TestStateRowCounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	type want struct {
		table               string
		rows, files, delete int64
		bytes               int64
	}
	cases := []struct {
		file string
		at   map[int64]want
	}{
		{"airduck-v0.2.ducklake", map[int64]want{
			1: {"sales", 0, 0, 0, 0},
			2: {"sales", 2, 1, 0, -1},
		}},
		{"dltest-v03-types.ducklake", map[int64]want{
			2: {"geo_tbl", 0, 0, 0, 0},
			3: {"geo_tbl", 2, 1, 0, -1},
		}},
		// Compaction at 8 folded the earlier files into file 6 with
		// partial_file_info "2:4|6:7"; file 8 (partial_max:9) came at 9.
		{"dltest-compacted-files.ducklake", map[int64]want{
			1:  {"t1", 0, 0, 0, 0},
			2:  {"t1", 4, 1, 0, 607},
			5:  {"t1", 4, 1, 0, 607},
			6:  {"t1", 7, 1, 0, 607},
			8:  {"t1", 7, 1, 0, 607},
			10: {"t1", 8, 2, 0, 607 + 536},
		}},
	}
	for _, tc := range cases {
		path := gunzipCatalog(t, tc.file, dir, "")
		c, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		for s, w := range tc.at {
			st, err := c.State(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			tb := findTable(t, st, w.table)
			if tb.RowCount != w.rows || tb.DataFiles != w.files || tb.DeleteFiles != w.delete || (w.bytes >= 0 && tb.DataBytes != w.bytes) {
				t.Errorf("%s at %d: %s rows %d files %d deletes %d bytes %d; want %+v", tc.file, s, w.table, tb.RowCount, tb.DataFiles, tb.DeleteFiles, tb.DataBytes, w)
			}
		}
		c.Close()
	}
}

// TestStateInlinedAndDeletes builds inlined rows, delete files, nested
// columns, a second schema and a view on a copy of a real 0.4 catalog.
func TestStateInlinedAndDeletes(t *testing.T) {
	ctx := context.Background()
	path := gunzipCatalog(t, "dltest-v04.ducklake", t.TempDir(), "")
	withWritable(t, path,
		// snapshots 2..5
		"INSERT INTO ducklake_snapshot SELECT i, now(), 1, 10, 10 FROM range(2, 6) r(i)",
		"INSERT INTO ducklake_snapshot_changes SELECT i, 'inlined_insert:1', NULL, NULL, NULL FROM range(2, 6) r(i)",
		// inlined rows of table 1 (registered, physically present)
		"INSERT INTO ducklake_inlined_data_1_1 VALUES (0, 2, NULL, 10), (1, 2, 3, 11), (2, 3, NULL, 12), (3, 4, 5, 13)",
		// registered but never created
		"INSERT INTO ducklake_inlined_data_tables VALUES (1, 'ducklake_inlined_data_1_9', 9)",
		// a data file of 100 rows at 3, a delete file of 10 rows at 4, replaced by one of 15 at 5
		"INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, path, path_is_relative, file_format, record_count, file_size_bytes) VALUES (1, 1, 3, 'f1.parquet', true, 'parquet', 100, 1000)",
		"INSERT INTO ducklake_delete_file (delete_file_id, table_id, begin_snapshot, end_snapshot, data_file_id, path, path_is_relative, format, delete_count, file_size_bytes) VALUES (2, 1, 4, 5, 1, 'd1.parquet', true, 'parquet', 10, 50), (3, 1, 5, NULL, 1, 'd2.parquet', true, 'parquet', 15, 60)",
		// inlined deletion of 2 rows of file 1 at 5
		"CREATE TABLE ducklake_inlined_delete_1(file_id BIGINT, row_id BIGINT, begin_snapshot BIGINT)",
		"INSERT INTO ducklake_inlined_delete_1 VALUES (1, 50, 5), (1, 51, 5)",
		// nested column: s STRUCT(x INTEGER, y VARCHAR[]) added at 2
		"INSERT INTO ducklake_column (column_id, begin_snapshot, table_id, column_order, column_name, column_type, nulls_allowed, parent_column) VALUES (2, 2, 1, 2, 's', 'struct', false, NULL), (4, 2, 1, 4, 'y', 'list', true, 2), (3, 2, 1, 3, 'x', 'int32', true, 2), (5, 2, 1, 5, 'element', 'varchar', true, 4)",
		// schema "b" with table "a" and view "v" at 4
		"INSERT INTO ducklake_schema VALUES (7, uuid(), 4, NULL, 'b', 'b/', true)",
		"INSERT INTO ducklake_table VALUES (8, uuid(), 4, NULL, 7, 'zz', 'zz/', true), (9, uuid(), 4, NULL, 7, 'aa', 'aa/', true)",
		"INSERT INTO ducklake_view VALUES (10, uuid(), 4, NULL, 7, 'v', 'duckdb', 'SELECT 1', NULL)",
	)
	c, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows := map[int64]int64{1: 0, 2: 2, 3: 2 + 100, 4: 3 + 100 - 10, 5: 2 + 100 - 15 - 2}
	for s, want := range rows {
		st, err := c.State(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := findTable(t, st, "test").RowCount; got != want {
			t.Errorf("rows at %d: %d, want %d", s, got, want)
		}
	}
	st, err := c.State(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Schemas) != 2 || st.Schemas[0].Name != "b" || st.Schemas[1].Name != "main" {
		t.Fatalf("schemas %+v", st.Schemas)
	}
	b := st.Schemas[0]
	if len(b.Tables) != 2 || b.Tables[0].Name != "aa" || b.Tables[1].Name != "zz" || len(b.Views) != 1 || b.Views[0].SQL != "SELECT 1" || b.Views[0].Dialect != "duckdb" {
		t.Errorf("schema b: %+v", b)
	}
	tb := findTable(t, st, "test")
	if tb.DataFiles != 1 || tb.DeleteFiles != 1 || tb.DataBytes != 1000 {
		t.Errorf("test: %+v", tb)
	}
	want := []meta.Column{
		{ID: 1, Name: "i", Type: "int32", Nullable: true},
		{ID: 2, Name: "s", Type: "struct", Nullable: false, Children: []meta.Column{
			{ID: 3, Name: "x", Type: "int32", Nullable: true},
			{ID: 4, Name: "y", Type: "list", Nullable: true, Children: []meta.Column{{ID: 5, Name: "element", Type: "varchar", Nullable: true}}},
		}},
	}
	if fmt.Sprint(tb.Columns) != fmt.Sprint(want) {
		t.Errorf("columns\n got %+v\nwant %+v", tb.Columns, want)
	}
}

func TestDataFilesResolvedPaths(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	// 0.2: data_path + schema path + table path + file path.
	c, err := Open(ctx, gunzipCatalog(t, "airduck-v0.2.ducklake", dir, ""))
	if err != nil {
		t.Fatal(err)
	}
	files, err := c.DataFiles(ctx)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].ResolvedPath != "s3://ducklake/data/main/sales/ducklake-0197cae1-a7d5-7b34-98ba-5c4f563a3280.parquet" ||
		!files[0].PathIsRelative || files[0].Delete || files[0].BeginSnapshot != 2 || files[0].EndSnapshot != nil || files[0].TableID != 1 || files[0].Size <= 0 {
		t.Errorf("airduck files: %+v", files)
	}

	// 0.1: no schema/table paths, files relative to data_path.
	v01 := gunzipCatalog(t, "dltest-v01.ducklake", dir, "")
	withWritable(t, v01,
		"INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, end_snapshot, path, path_is_relative, record_count, file_size_bytes) VALUES (0, 1, 1, NULL, 'a.parquet', true, 1, 10), (1, 1, 1, 2, '/abs/b.parquet', false, 1, 20)",
		"INSERT INTO ducklake_delete_file (delete_file_id, table_id, begin_snapshot, data_file_id, path, path_is_relative, delete_count, file_size_bytes) VALUES (2, 1, 1, 0, 'del.parquet', true, 1, 5)",
	)
	c, err = Open(ctx, v01)
	if err != nil {
		t.Fatal(err)
	}
	files, err = c.DataFiles(ctx)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for _, f := range files {
		got[f.ID] = f.ResolvedPath
	}
	wantPaths := map[int64]string{0: "files/a.parquet", 1: "/abs/b.parquet", 2: "files/del.parquet"}
	if fmt.Sprint(got) != fmt.Sprint(wantPaths) || len(files) != 3 || !files[2].Delete || files[1].EndSnapshot == nil || *files[1].EndSnapshot != 2 {
		t.Errorf("v01 files: %+v", files)
	}

	// 0.4: absolute schema path, absolute table path, data_path without a
	// trailing slash.
	v04 := gunzipCatalog(t, "dltest-v04.ducklake", dir, "")
	withWritable(t, v04,
		"UPDATE ducklake_metadata SET value = 's3://bucket/lake' WHERE key = 'data_path'",
		"INSERT INTO ducklake_schema VALUES (5, uuid(), 1, NULL, 'other', 'gs://b/other/', false)",
		"INSERT INTO ducklake_table VALUES (6, uuid(), 1, NULL, 5, 't6', 't6/', true), (7, uuid(), 1, NULL, 0, 't7', '/abs/t7/', false)",
		"INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, path, path_is_relative, record_count, file_size_bytes) VALUES (10, 1, 1, 'x.parquet', true, 1, 1), (11, 6, 1, 'y.parquet', true, 1, 1), (12, 7, 1, 'z.parquet', true, 1, 1)",
	)
	c, err = Open(ctx, v04)
	if err != nil {
		t.Fatal(err)
	}
	files, err = c.DataFiles(ctx)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	got = map[int64]string{}
	for _, f := range files {
		got[f.ID] = f.ResolvedPath
	}
	wantPaths = map[int64]string{10: "s3://bucket/lake/main/test/x.parquet", 11: "gs://b/other/t6/y.parquet", 12: "/abs/t7/z.parquet"}
	if fmt.Sprint(got) != fmt.Sprint(wantPaths) {
		t.Errorf("v04 files: %v, want %v", got, wantPaths)
	}
}

func TestClosedCatalog(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, gunzipCatalog(t, "dltest-v04.ducklake", t.TempDir(), ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Snapshots(ctx); err == nil {
		t.Error("Snapshots after Close succeeded")
	}
}
