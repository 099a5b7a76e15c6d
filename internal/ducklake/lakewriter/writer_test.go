package lakewriter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// step is one Writer call, the matching change to the model, and the
// changes_made the extension would record for it.
type step struct {
	name    string
	run     func(w *Writer) error
	model   string // SQL applied to the model after run succeeds
	changes string // expected changes_made; "" to skip the check
}

// lakeTable names a table in the lake and in the model.
type lakeTable struct{ schema, table, modelTable string }

// runSteps applies the steps, checks that each adds exactly one snapshot,
// and remembers the model's rows for every tracked table at every snapshot.
func runSteps(t *testing.T, w *Writer, m *model, steps []step, tracked func() []lakeTable, history map[int64]map[lakeTable][]string) {
	t.Helper()
	for _, s := range steps {
		before, err := w.Snapshot(bg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.run(w); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		after, err := w.Snapshot(bg)
		if err != nil {
			t.Fatal(err)
		}
		if after != before+1 {
			t.Fatalf("%s: snapshot went from %d to %d, want exactly one new snapshot", s.name, before, after)
		}
		if s.model != "" {
			m.exec(s.model)
		}
		if s.changes != "" {
			var got string
			if err := w.conn.QueryRowContext(bg, "SELECT changes_made FROM ducklake_snapshot_changes WHERE snapshot_id = ?", after).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != s.changes {
				t.Errorf("%s: changes_made %q, want %q", s.name, got, s.changes)
			}
		}
		snap := map[lakeTable][]string{}
		for _, lt := range tracked() {
			snap[lt] = m.rows(lt.modelTable)
		}
		history[after] = snap
	}
}

// checkHistory reads every tracked table at every recorded snapshot with the
// independent reader and compares with the model.
func checkHistory(t *testing.T, catalog string, history map[int64]map[lakeTable][]string) {
	t.Helper()
	for snap, tables := range history {
		for lt, want := range tables {
			got, ok := readTable(t, catalog, lt.schema, lt.table, snap)
			if !ok {
				t.Errorf("snapshot %d: table %q.%q not visible", snap, lt.schema, lt.table)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("snapshot %d: %q.%q has %d rows, model %d; first differences: %v", snap, lt.schema, lt.table, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(a, b []string) []string {
	am := map[string]int{}
	for _, x := range a {
		am[x]++
	}
	for _, x := range b {
		am[x]--
	}
	var out []string
	for k, v := range am {
		if v != 0 {
			out = append(out, k)
		}
		if len(out) > 5 {
			break
		}
	}
	return out
}

// TestWriterSequence runs operations of every kind on a new catalog, with
// names and paths that need quoting, and checks the invariants, the files,
// the changes_made strings and the rows at every snapshot.
func TestWriterSequence(t *testing.T) {
	for _, format := range []string{Format10, Format04, Format11} {
		t.Run(format, func(t *testing.T) { testWriterSequence(t, format) })
	}
}

// testWriterSequence is TestWriterSequence for one DuckLake format.
//
// It is one piece: one sequence of writer operations on one catalog, each
// checked against the state the ones before it left; the snapshot numbers
// the checks name follow from that order.
func testWriterSequence(t *testing.T, format string) {
	dir := filepath.Join(t.TempDir(), "wörk dir 'q' \"x\"")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(dir, "lake.ducklake")
	dataPath := filepath.ToSlash(filepath.Join(dir, "dätä path"))
	if err := Create(bg, catalog, CreateOptions{Format: format, DataPath: dataPath}); err != nil {
		t.Fatal(err)
	}
	mustNoWAL(t, catalog)
	w, err := Open(bg, catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Format() != format || w.DataPath() != dataPath+"/" {
		t.Fatalf("format %q data path %q", w.Format(), w.DataPath())
	}
	w.Author = "Ada"
	w.Message = "it's a test"

	m := newModel(t)
	const uni = `Ünï "quoted" tàble`
	orders := lakeTable{"main", "orders", "orders"}
	uniT := lakeTable{"sales data", uni, "uni"}
	tracked := []lakeTable{}
	track := func(add ...lakeTable) func(w *Writer) error {
		return func(*Writer) error { tracked = append(tracked, add...); return nil }
	}
	untrack := func(lt lakeTable) {
		for i, x := range tracked {
			if x == lt {
				tracked = append(tracked[:i], tracked[i+1:]...)
				return
			}
		}
	}
	gen := func(from, to int) string {
		return "SELECT i AS id, 'name ' || i AS name, (i * 1.25)::DECIMAL(9,2) AS amount, TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(i) AS ts FROM range(" +
			itoa(from) + ", " + itoa(to) + ") t(i)"
	}
	var tableID int64
	steps := []step{
		{name: "create schema", run: func(w *Writer) error { return w.CreateSchema(bg, "sales data") },
			changes: `created_schema:"sales data"`},
		{name: "create table", run: func(w *Writer) error {
			var err error
			tableID, err = w.CreateTable(bg, "main", "orders", []ColumnDef{
				{Name: "id", Type: "int64"}, {Name: "name", Type: "varchar", Nullable: true},
				{Name: "amount", Type: "DECIMAL(9, 2)", Nullable: true}, {Name: "ts", Type: "timestamptz", Nullable: true}})
			if err == nil {
				tracked = append(tracked, orders)
			}
			return err
		}, model: "CREATE TABLE orders(id BIGINT, name VARCHAR, amount DECIMAL(9,2), ts TIMESTAMPTZ)",
			changes: `created_table:"main"."orders"`},
		{name: "insert 1000", run: func(w *Writer) error { return w.Insert(bg, "main", "orders", gen(0, 1000)) },
			model: "INSERT INTO orders " + gen(0, 1000), changes: "inserted_into_table:2"},
		{name: "insert 500", run: func(w *Writer) error { return w.Insert(bg, "main", "orders", gen(1000, 1500)+";") },
			model: "INSERT INTO orders " + gen(1000, 1500), changes: "inserted_into_table:2"},
		{name: "insert inlined", run: func(w *Writer) error { return w.InsertInlined(bg, "main", "orders", gen(1500, 1503)) },
			model: "INSERT INTO orders " + gen(1500, 1503), changes: "inlined_insert:2"},
		{name: "delete every 10th", run: func(w *Writer) error { return w.DeleteWhere(bg, "main", "orders", "id % 10 = 0") },
			model: "DELETE FROM orders WHERE id % 10 = 0", changes: "deleted_from_table:2,inlined_delete:2"},
		{name: "delete again from the first file", run: func(w *Writer) error { return w.DeleteWhere(bg, "main", "orders", "id < 25") },
			model: "DELETE FROM orders WHERE id < 25", changes: "deleted_from_table:2"},
		{name: "add column", run: func(w *Writer) error {
			return w.AddColumn(bg, "main", "orders", ColumnDef{Name: "qty", Type: "INTEGER", Nullable: true})
		}, model: "ALTER TABLE orders ADD COLUMN qty INTEGER", changes: "altered_table:2"},
		{name: "insert with new column", run: func(w *Writer) error {
			return w.Insert(bg, "main", "orders", "SELECT i AS id, i % 7 AS qty FROM range(2000, 2100) t(i)")
		}, model: "INSERT INTO orders (id, qty) SELECT i, i % 7 FROM range(2000, 2100) t(i)", changes: "inserted_into_table:2"},
		{name: "rename column", run: func(w *Writer) error { return w.RenameColumn(bg, "main", "orders", "name", `customer "name"`) },
			model: `ALTER TABLE orders RENAME COLUMN name TO "customer ""name"""`, changes: "altered_table:2"},
		{name: "compact (rewrite deletes)", run: func(w *Writer) error { return w.Compact(bg, "main", "orders") },
			changes: "compacted_table:2"},
		{name: "insert after compaction", run: func(w *Writer) error {
			return w.Insert(bg, "main", "orders", `SELECT i AS id, 'late' AS "customer ""name""" FROM range(3000, 3050) t(i)`)
		}, model: `INSERT INTO orders (id, "customer ""name""") SELECT i, 'late' FROM range(3000, 3050) t(i)`, changes: "inserted_into_table:2"},
		{name: "compact (merge adjacent)", run: func(w *Writer) error { return w.Compact(bg, "main", "orders") },
			changes: "compacted_table:2"},
		{name: "create unicode table", run: func(w *Writer) error {
			_, err := w.CreateTable(bg, "sales data", uni, []ColumnDef{{Name: "a b", Type: "varchar", Nullable: true}, {Name: "x'y", Type: "int32", Nullable: true}, {Name: "f", Type: "float64", Nullable: true}})
			if err == nil {
				tracked = append(tracked, uniT)
			}
			return err
		}, model: `CREATE TABLE uni("a b" VARCHAR, "x'y" INTEGER, f DOUBLE)`, changes: `created_table:"sales data"."Ünï ""quoted"" tàble"`},
		{name: "insert unicode", run: func(w *Writer) error {
			return w.Insert(bg, "sales data", uni, `SELECT 'ä ' || i AS "a b", i AS "x'y", CASE WHEN i = 3 THEN 'nan'::DOUBLE ELSE i / 3 END AS f FROM range(10) t(i)`)
		}, model: `INSERT INTO uni SELECT 'ä ' || i, i, CASE WHEN i = 3 THEN 'nan'::DOUBLE ELSE i / 3 END FROM range(10) t(i)`, changes: "inserted_into_table:3"},
		{name: "create view", run: func(w *Writer) error {
			return w.CreateView(bg, "main", `big "orders"`, "select id from orders where id > 100")
		}, changes: `created_view:"main"."big ""orders"""`},
		{name: "rename table", run: func(w *Writer) error {
			err := w.RenameTable(bg, "main", "orders", "orders 2024")
			if err == nil {
				untrack(orders)
				orders = lakeTable{"main", "orders 2024", "orders"}
				tracked = append(tracked, orders)
			}
			return err
		}, changes: `created_table:"main"."orders 2024"`},
		{name: "drop column", run: func(w *Writer) error { return w.DropColumn(bg, "main", "orders 2024", "amount") },
			model: "ALTER TABLE orders DROP COLUMN amount", changes: "altered_table:2"},
		{name: "insert after drop column", run: func(w *Writer) error {
			return w.InsertInlined(bg, "main", "orders 2024", "SELECT 9999 AS id, 5 AS qty")
		}, model: "INSERT INTO orders (id, qty) VALUES (9999, 5)", changes: "inlined_insert:2"},
		{name: "delete all rows of a file", run: func(w *Writer) error { return w.DeleteWhere(bg, "sales data", uni, "true") },
			model: "DELETE FROM uni", changes: "deleted_from_table:3"},
		{name: "delete inlined only", run: func(w *Writer) error { return w.DeleteWhere(bg, "main", "orders 2024", "id = 9999") },
			model: "DELETE FROM orders WHERE id = 9999", changes: "inlined_delete:2"},
		{name: "drop view", run: func(w *Writer) error { return w.DropView(bg, "main", `big "orders"`) },
			changes: "dropped_view:4"},
		{name: "drop table", run: func(w *Writer) error {
			err := w.DropTable(bg, "sales data", uni)
			if err == nil {
				untrack(uniT)
			}
			return err
		}, changes: "dropped_table:3"},
		{name: "final insert", run: func(w *Writer) error { return w.Insert(bg, "main", "orders 2024", "SELECT 42 AS id") },
			model: "INSERT INTO orders (id) VALUES (42)", changes: "inserted_into_table:2"},
	}
	_ = track
	history := map[int64]map[lakeTable][]string{}
	runSteps(t, w, m, steps, func() []lakeTable { return tracked }, history)
	if tableID != 2 {
		t.Errorf("table id %d, want 2 (schema 1 was created first)", tableID)
	}

	// refused calls make no snapshot
	last, _ := w.Snapshot(bg)
	for name, err := range map[string]error{
		"no rows":        w.Insert(bg, "main", "orders 2024", "SELECT 1 AS id WHERE false"),
		"no match":       w.DeleteWhere(bg, "main", "orders 2024", "id < 0"),
		"missing":        w.DropTable(bg, "main", "nope"),
		"exists":         w.CreateSchema(bg, "sales data"),
		"bad type":       w.AddColumn(bg, "main", "orders 2024", ColumnDef{Name: "z", Type: "int33", Nullable: true}),
		"not null":       w.Insert(bg, "main", "orders 2024", "SELECT NULL::BIGINT AS id"),
		"bad column":     w.Insert(bg, "main", "orders 2024", "SELECT 1 AS nope"),
		"nothing merges": w.Compact(bg, "main", "orders 2024"),
		"duplicate table": func() error {
			_, err := w.CreateTable(bg, "main", "orders 2024", []ColumnDef{{Name: "a", Type: "int32"}})
			return err
		}(),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if s, _ := w.Snapshot(bg); s != last {
		t.Errorf("refused calls moved the snapshot from %d to %d", last, s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := w.Snapshot(bg); !errors.Is(err, ErrClosed) {
		t.Errorf("snapshot after close: %v", err)
	}
	mustNoWAL(t, catalog)

	checkInvariants(t, catalog, 0)
	checkHistory(t, catalog, history)
	checkSequenceDetails(t, catalog, format)
}

// checkSequenceDetails checks rows the extension would write for the
// sequence of testWriterSequence.
//
// It is one piece: one list of row checks, each naming a snapshot of
// testWriterSequence's sequence, in that order.
func checkSequenceDetails(t *testing.T, catalog, format string) {
	db := roCatalog(t, catalog)
	if v := queryStrings(t, db, "SELECT value FROM ducklake_metadata WHERE key = 'version'")[0][0]; v != format {
		t.Errorf("version %q", v)
	}
	// authors and messages on every new snapshot, none on snapshot 0
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_snapshot_changes WHERE snapshot_id > 0 AND (author IS DISTINCT FROM 'Ada' OR commit_message IS DISTINCT FROM 'it''s a test')"); n != 0 {
		t.Errorf("%d snapshots without author/message", n)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_snapshot_changes WHERE snapshot_id = 0 AND author IS NULL AND commit_message IS NULL"); n != 1 {
		t.Errorf("snapshot 0 has author or message")
	}
	// the schema with a space gets a UUID folder, "main" keeps its name
	for _, r := range queryStrings(t, db, "SELECT schema_name, schema_uuid::VARCHAR, path FROM ducklake_schema") {
		want := r[0] + "/"
		if r[0] == "sales data" {
			want = r[1] + "/"
		}
		if r[2] != want {
			t.Errorf("schema %q path %q, want %q", r[0], r[2], want)
		}
	}
	// a renamed table keeps id, uuid and path; two rows, the old one closed
	rows := queryStrings(t, db, "SELECT table_name, table_uuid::VARCHAR, path, begin_snapshot, end_snapshot FROM ducklake_table WHERE table_id = 2 ORDER BY begin_snapshot")
	if len(rows) != 2 || rows[0][0] != "orders" || rows[1][0] != "orders 2024" || rows[0][1] != rows[1][1] || rows[0][2] != "orders/" || rows[1][2] != "orders/" || rows[0][4] != rows[1][3] {
		t.Errorf("renamed table rows: %v", rows)
	}
	// column ids: 1..4, qty 5; the renamed column has two rows with id 2
	cols := queryStrings(t, db, "SELECT column_id, column_name, column_order, end_snapshot IS NULL, default_value FROM ducklake_column WHERE table_id = 2 ORDER BY column_id, begin_snapshot")
	want := [][]string{{"1", "id", "1", "true", "NULL"}, {"2", "name", "2", "false", "NULL"}, {"2", `customer "name"`, "2", "true", "NULL"},
		{"3", "amount", "3", "false", "NULL"}, {"4", "ts", "4", "true", "NULL"}, {"5", "qty", "5", "true", "NULL"}}
	if !reflect.DeepEqual(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_column WHERE default_value_type = 'literal' AND default_value_dialect = 'duckdb'"); n != int64(len(want))+3 {
		t.Errorf("%d columns with default_value_type literal", n)
	}
	// NOT NULL stored
	if v := queryStrings(t, db, "SELECT nulls_allowed FROM ducklake_column WHERE table_id = 2 AND column_id = 1")[0][0]; v != "false" {
		t.Errorf("id nulls_allowed %s", v)
	}
	// per-table schema versions: create, alter (add, rename, drop), rename of orders
	sv := queryStrings(t, db, "SELECT table_id, count(*) FROM ducklake_schema_versions GROUP BY table_id ORDER BY table_id")
	if !reflect.DeepEqual(sv, [][]string{{"2", "5"}, {"3", "1"}}) {
		t.Errorf("schema_versions per table %v", sv)
	}
	// one inlined-data table per schema version of a table (inlining on by default)
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_inlined_data_tables WHERE table_id = 2"); n != 5 {
		t.Errorf("%d inlined tables for orders, want 5", n)
	}
	// data file names and relative paths
	for _, r := range queryStrings(t, db, "SELECT path, path_is_relative FROM ducklake_data_file UNION ALL SELECT path, path_is_relative FROM ducklake_delete_file") {
		if r[1] != "true" || !strings.HasPrefix(r[0], "ducklake-") || strings.Contains(r[0], "/") || !strings.HasSuffix(r[0], ".parquet") {
			t.Errorf("file path %v", r)
		}
	}
	// the overwritten delete file left the metadata and was scheduled; merged files too
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_files_scheduled_for_deletion"); n != 3 {
		t.Errorf("%d files scheduled for deletion, want 3 (one overwritten delete file, two merged data files)", n)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_delete_file WHERE partial_max IS NOT NULL"); n != 1 {
		t.Errorf("%d delete files with partial_max, want 1", n)
	}
	// merged file: begin at the first source, partial_max set, embedded columns
	merged := queryStrings(t, db, "SELECT partial_max, row_id_start FROM ducklake_data_file WHERE partial_max IS NOT NULL")
	if len(merged) != 1 || merged[0][1] != "NULL" {
		t.Errorf("merged files %v", merged)
	}
	// stats: the float column with a NaN has contains_nan in the file stats
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_file_column_stats WHERE table_id = 3 AND column_id = 3 AND contains_nan"); n != 1 {
		t.Errorf("contains_nan not recorded")
	}
	// the fully deleted file was ended, not given a delete file
	if n := queryInt(t, db, "SELECT count(*) FROM ducklake_delete_file WHERE table_id = 3"); n != 0 {
		t.Errorf("delete file for a fully deleted data file")
	}
	// inlined rows take row ids from next_row_id: 1500..1502 after 1500 rows
	// in files; from 1.1 on the metadata columns are prefixed
	n := inlinedNamesFor(format)
	if v := queryStrings(t, db, fmt.Sprintf("SELECT min(%s), max(%[1]s), count(*), min(%s) FROM ducklake_inlined_data_2_2", sqlquote.Ident(n.rowID), sqlquote.Ident(n.begin))); !reflect.DeepEqual(v, [][]string{{"1500", "1502", "3", "5"}}) {
		t.Errorf("inlined rows %v", v)
	}
	if is11(format) {
		// row_group_count on every data and delete file, as the Parquet
		// writer reported it (one row group each: all files are small)
		for _, tbl := range []string{"ducklake_data_file", "ducklake_delete_file"} {
			if v := queryStrings(t, db, "SELECT count(*), count(row_group_count), min(row_group_count), max(row_group_count) FROM "+tbl); v[0][0] == "0" || v[0][0] != v[0][1] || v[0][2] != "1" || v[0][3] != "1" {
				t.Errorf("%s row_group_count: rows, non-null, min, max = %v", tbl, v[0])
			}
		}
		if !hasTable(t, db, "ducklake_view_column_tag") {
			t.Error("no ducklake_view_column_tag")
		}
	} else if hasColumn(t, db, "ducklake_data_file", "row_group_count") {
		t.Errorf("format %s has row_group_count", format)
	}
	// the view keeps DuckDB's printed SQL
	if v := queryStrings(t, db, "SELECT sql, dialect, column_aliases FROM ducklake_view")[0]; v[0] != "SELECT id FROM orders WHERE (id > 100)" || v[1] != "duckdb" || v[2] != "" {
		t.Errorf("view %v", v)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
