package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// State returns what the catalog holds at snapshot: the schemas, tables and
// views visible there (docs/spec.md §5.1: begin_snapshot <= S AND (end_snapshot IS
// NULL OR S < end_snapshot); DuckLake spec: ducklake_schema, ducklake_table,
// ducklake_view, ducklake_column), sorted by name. Each table carries its
// top-level columns in column_order, nested fields under Children (matched by
// table_id and parent_column), and the data visible at the snapshot:
//
//   - DataFiles, DataBytes: ducklake_data_file rows visible at S, and the sum
//     of their file_size_bytes (bytes);
//   - DeleteFiles: ducklake_delete_file rows visible at S;
//   - RowCount: the data files' record_count, minus the delete files'
//     delete_count, plus the rows visible at S in the table's inlined-data
//     tables (listed in ducklake_inlined_data_tables; one registered but not
//     physically present counts 0), minus inlined deletions
//     (ducklake_inlined_delete_<table_id>, begin_snapshot <= S) of visible
//     files. A compacted file whose partial_file_info reads "s1:n1|s2:n2"
//     (DuckLake 0.3) counts n_i for the last s_i <= S. Caveat: a file with
//     "partial_max:M" (or column partial_max = M) holds rows of snapshots up
//     to M whose split only the Parquet file knows; for S < M its whole
//     record_count is counted (an upper bound). At S >= M it is exact. The
//     same holds for a delete file with partial_max M (a flush of inlined
//     deletions, or from DuckLake 1.1 one Puffin file holding a deletion
//     vector for each of several snapshots): its delete_count is the
//     deletions of all of them, so for S < M the count is a lower bound.
//     A version's own state (S = its last snapshot) is always exact.
//
// Errors: ErrSnapshotNotFound when ducklake_snapshot has no row with id
// snapshot.
func (c *Catalog) State(ctx context.Context, snapshot int64) (*meta.State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	var n int64
	if err := c.conn.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE snapshot_id = %d", c.t("ducklake_snapshot"), snapshot)).Scan(&n); err != nil {
		return nil, fmt.Errorf("read snapshot %d of %s: %w", snapshot, c.path, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s has no snapshot %d", ErrSnapshotNotFound, c.path, snapshot)
	}
	b := &stateBuilder{c: c, at: snapshot, st: &meta.State{Snapshot: snapshot, Schemas: []meta.Schema{}}, schemaIdx: map[int64]int{}, tableRef: map[int64]tableRef{}}
	for _, step := range []func(context.Context) error{b.schemas, b.tables, b.views, b.columns} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.countData(ctx, snapshot, b.table); err != nil {
		return nil, err
	}
	sortByName(b.st)
	return b.st, nil
}

// stateBuilder reads one snapshot's state, table by table of the catalog:
// schemas, then the tables and views in them, then the tables' columns.
// Rows whose schema or table is not visible at the snapshot (an
// inconsistent catalog; verify reports it) are left out.
type stateBuilder struct {
	c         *Catalog
	at        int64
	st        *meta.State
	schemaIdx map[int64]int // schema id -> index in st.Schemas
	tableRef  map[int64]tableRef
}

// tableRef locates a table in State: Schemas[schema].Tables[table].
type tableRef struct{ schema, table int }

// table returns the table with id, nil when it is not visible.
func (b *stateBuilder) table(id int64) *meta.Table {
	r, ok := b.tableRef[id]
	if !ok {
		return nil
	}
	return &b.st.Schemas[r.schema].Tables[r.table]
}

func (b *stateBuilder) schemas(ctx context.Context) error {
	c := b.c
	if !c.has("ducklake_schema") {
		return nil
	}
	return c.query(ctx, fmt.Sprintf("SELECT schema_id, schema_name FROM %s WHERE %s ORDER BY schema_name, schema_id",
		c.t("ducklake_schema"), visible("", b.at)), func(r *sql.Rows) error {
		var s meta.Schema
		var name sql.NullString
		if err := r.Scan(&s.ID, &name); err != nil {
			return err
		}
		s.Name, s.Tables, s.Views = name.String, []meta.Table{}, []meta.View{}
		b.schemaIdx[s.ID] = len(b.st.Schemas)
		b.st.Schemas = append(b.st.Schemas, s)
		return nil
	})
}

func (b *stateBuilder) tables(ctx context.Context) error {
	c := b.c
	if !c.has("ducklake_table") {
		return nil
	}
	return c.query(ctx, fmt.Sprintf("SELECT table_id, schema_id, table_name FROM %s WHERE %s ORDER BY table_name, table_id",
		c.t("ducklake_table"), visible("", b.at)), func(r *sql.Rows) error {
		var t meta.Table
		var schemaID int64
		var name sql.NullString
		if err := r.Scan(&t.ID, &schemaID, &name); err != nil {
			return err
		}
		si, ok := b.schemaIdx[schemaID]
		if !ok {
			return nil
		}
		t.Name, t.Columns = name.String, []meta.Column{}
		b.tableRef[t.ID] = tableRef{si, len(b.st.Schemas[si].Tables)}
		b.st.Schemas[si].Tables = append(b.st.Schemas[si].Tables, t)
		return nil
	})
}

func (b *stateBuilder) views(ctx context.Context) error {
	c := b.c
	if !c.has("ducklake_view") {
		return nil
	}
	return c.query(ctx, fmt.Sprintf("SELECT view_id, schema_id, view_name, %s, %s FROM %s WHERE %s ORDER BY view_name, view_id",
		c.col("ducklake_view", "", "dialect", "NULL::VARCHAR"), c.col("ducklake_view", "", "sql", "NULL::VARCHAR"),
		c.t("ducklake_view"), visible("", b.at)), func(r *sql.Rows) error {
		var v meta.View
		var schemaID int64
		var name, dialect, sqlText sql.NullString
		if err := r.Scan(&v.ID, &schemaID, &name, &dialect, &sqlText); err != nil {
			return err
		}
		si, ok := b.schemaIdx[schemaID]
		if !ok {
			return nil
		}
		v.Name, v.Dialect, v.SQL = name.String, dialect.String, sqlText.String
		b.st.Schemas[si].Views = append(b.st.Schemas[si].Views, v)
		return nil
	})
}

// columnNode is a column as read, with its parent column (nested types).
type columnNode struct {
	table  int64
	col    meta.Column
	parent *int64
}

// columns reads the columns and nests them under their parents: ids are
// unique per table only, so nesting is keyed by (table_id, column_id).
func (b *stateBuilder) columns(ctx context.Context) error {
	c := b.c
	if !c.has("ducklake_column") {
		return nil
	}
	var nodes []columnNode
	err := c.query(ctx, fmt.Sprintf(`SELECT table_id, column_id, column_name, column_type, %s, %s FROM %s
		WHERE %s ORDER BY table_id, column_order, column_id`,
		c.col("ducklake_column", "", "nulls_allowed", "NULL::BOOLEAN"),
		c.col("ducklake_column", "", "parent_column", "NULL::BIGINT"),
		c.t("ducklake_column"), visible("", b.at)), func(r *sql.Rows) error {
		var n columnNode
		var name, typ sql.NullString
		var nullable sql.NullBool
		var parent sql.NullInt64
		if err := r.Scan(&n.table, &n.col.ID, &name, &typ, &nullable, &parent); err != nil {
			return err
		}
		if b.table(n.table) == nil {
			return nil
		}
		n.col.Name, n.col.Type = name.String, typ.String
		n.col.Nullable = !nullable.Valid || nullable.Bool
		if parent.Valid {
			p := parent.Int64
			n.parent = &p
		}
		nodes = append(nodes, n)
		return nil
	})
	if err != nil {
		return err
	}
	type key struct{ table, col int64 }
	children := map[key][]int{}
	for i, n := range nodes {
		if n.parent != nil {
			k := key{n.table, *n.parent}
			children[k] = append(children[k], i)
		}
	}
	var build func(i int, depth int) meta.Column
	build = func(i int, depth int) meta.Column {
		col := nodes[i].col
		if depth > 64 {
			return col // a parent cycle; never produced by DuckLake
		}
		for _, ci := range children[key{nodes[i].table, col.ID}] {
			col.Children = append(col.Children, build(ci, depth+1))
		}
		return col
	}
	for i, n := range nodes {
		if n.parent == nil {
			t := b.table(n.table)
			t.Columns = append(t.Columns, build(i, 0))
		}
	}
	return nil
}

// sortByName sorts st's schemas, and the tables and views in each, by name
// then id. The queries' ORDER BY already does; sorting again in Go makes
// it byte order whatever DuckDB's collation settings.
func sortByName(st *meta.State) {
	byName := func(a, b string, ia, ib int64) int {
		if c := strings.Compare(a, b); c != 0 {
			return c
		}
		return int(ia - ib)
	}
	slices.SortStableFunc(st.Schemas, func(a, b meta.Schema) int { return byName(a.Name, b.Name, a.ID, b.ID) })
	for i := range st.Schemas {
		slices.SortStableFunc(st.Schemas[i].Tables, func(a, b meta.Table) int { return byName(a.Name, b.Name, a.ID, b.ID) })
		slices.SortStableFunc(st.Schemas[i].Views, func(a, b meta.View) int { return byName(a.Name, b.Name, a.ID, b.ID) })
	}
}

// partialInfoRe matches a DuckLake 0.3 partial_file_info list "s1:n1|s2:n2".
var partialInfoRe = regexp.MustCompile(`^\d+:\d+(\|\d+:\d+)*$`)

// countData fills DataFiles, DataBytes, DeleteFiles and RowCount of the
// visible tables: rows in Parquet files (less their delete files), rows
// inlined in the catalog, and inlined deletions of Parquet rows.
func (c *Catalog) countData(ctx context.Context, s int64, table func(int64) *meta.Table) error {
	for _, count := range []func(context.Context, int64, func(int64) *meta.Table) error{
		c.countFiles, c.countPartial, c.countDeleteFiles, c.countInlined, c.countInlinedDeletes,
	} {
		if err := count(ctx, s, table); err != nil {
			return err
		}
	}
	return nil
}

const (
	dataFileTable   = "ducklake_data_file"
	deleteFileTable = "ducklake_delete_file"
)

// countFiles counts each table's data files, their bytes and records.
func (c *Catalog) countFiles(ctx context.Context, s int64, table func(int64) *meta.Table) error {
	if !c.has(dataFileTable) {
		return nil
	}
	return c.query(ctx, fmt.Sprintf(`SELECT table_id, count(*), coalesce(sum(file_size_bytes), 0)::BIGINT, coalesce(sum(record_count), 0)::BIGINT
		FROM %s WHERE %s GROUP BY table_id`, c.t(dataFileTable), visible("", s)), func(r *sql.Rows) error {
		var tid, n, size, rowsN int64
		if err := r.Scan(&tid, &n, &size, &rowsN); err != nil {
			return err
		}
		if t := table(tid); t != nil {
			t.DataFiles, t.DataBytes, t.RowCount = n, size, rowsN
		}
		return nil
	})
}

// countPartial corrects the records of compacted files whose rows became
// visible in steps (DuckLake 0.3 partial_file_info).
func (c *Catalog) countPartial(ctx context.Context, s int64, table func(int64) *meta.Table) error {
	if !c.has(dataFileTable, "partial_file_info") {
		return nil
	}
	return c.query(ctx, fmt.Sprintf(`SELECT table_id, record_count, partial_file_info FROM %s
		WHERE %s AND partial_file_info IS NOT NULL AND partial_file_info NOT LIKE 'partial_max:%%'`,
		c.t(dataFileTable), visible("", s)), func(r *sql.Rows) error {
		var tid int64
		var rc sql.NullInt64
		var info string
		if err := r.Scan(&tid, &rc, &info); err != nil {
			return err
		}
		t := table(tid)
		if t == nil || !partialInfoRe.MatchString(info) {
			return nil
		}
		t.RowCount += partialRows(info, s, rc.Int64) - rc.Int64
		return nil
	})
}

// countDeleteFiles counts each table's delete files of data files visible
// at s and the rows they delete.
func (c *Catalog) countDeleteFiles(ctx context.Context, s int64, table func(int64) *meta.Table) error {
	if !c.has(deleteFileTable) {
		return nil
	}
	// Only those of data files visible at s: DuckLake's flush of inlined
	// deletions can write a delete file, visible at s, for a data file
	// that a rewrite had already ended by then.
	onVisible := ""
	if c.has(deleteFileTable, "data_file_id") && c.has(dataFileTable, "data_file_id") {
		onVisible = fmt.Sprintf(" AND data_file_id IN (SELECT data_file_id FROM %s WHERE %s)", c.t(dataFileTable), visible("", s))
	}
	return c.query(ctx, fmt.Sprintf(`SELECT table_id, count(*), coalesce(sum(delete_count), 0)::BIGINT
		FROM %s WHERE %s%s GROUP BY table_id`, c.t(deleteFileTable), visible("", s), onVisible), func(r *sql.Rows) error {
		var tid, n, deleted int64
		if err := r.Scan(&tid, &n, &deleted); err != nil {
			return err
		}
		if t := table(tid); t != nil {
			t.DeleteFiles = n
			t.RowCount -= deleted
		}
		return nil
	})
}

// countInlined adds the rows inlined in the catalog (DuckLake spec:
// ducklake_inlined_data_tables; the tables
// ducklake_inlined_data_<table_id>_<schema_version> start with three
// metadata columns row_id, begin_snapshot, end_snapshot, which 1.1
// renames with a "_ducklake_" prefix).
func (c *Catalog) countInlined(ctx context.Context, s int64, table func(int64) *meta.Table) error {
	if !c.has("ducklake_inlined_data_tables", "table_id", "table_name") {
		return nil
	}
	regs, err := c.inlinedRegistrations(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, x := range regs {
		t := table(x.tid)
		if t == nil || seen[x.name] {
			continue
		}
		seen[x.name] = true
		begin, end, ok := c.inlinedSnapshotColumns(c.tables[x.name])
		if !ok {
			continue // registered but not physically present (or not shaped as expected)
		}
		var n int64
		q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s <= %d AND (%s IS NULL OR %d < %s)",
			c.t(x.name), sqlquote.Ident(begin), s, sqlquote.Ident(end), s, sqlquote.Ident(end))
		if err := c.conn.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return fmt.Errorf("count inlined rows in %s of %s: %w", x.name, c.path, err)
		}
		t.RowCount += n
	}
	return nil
}

// countInlinedDeletes takes off the inlined deletions of rows in Parquet
// files: ducklake_inlined_delete_<table_id>(file_id, row_id,
// begin_snapshot).
func (c *Catalog) countInlinedDeletes(ctx context.Context, s int64, table func(int64) *meta.Table) error {
	if !c.has(dataFileTable) {
		return nil
	}
	for name, cols := range c.tables {
		idStr, ok := strings.CutPrefix(name, "ducklake_inlined_delete_")
		if !ok || !slices.Contains(cols, "file_id") || !slices.Contains(cols, "begin_snapshot") {
			continue
		}
		tid, err := strconv.ParseInt(idStr, 10, 64)
		if err != nil {
			continue
		}
		t := table(tid)
		if t == nil {
			continue
		}
		cond := fmt.Sprintf("d.begin_snapshot <= %d", s)
		if slices.Contains(cols, "end_snapshot") {
			cond = visible("d.", s)
		}
		var n int64
		q := fmt.Sprintf(`SELECT count(*) FROM %s d WHERE %s AND d.file_id IN
			(SELECT data_file_id FROM %s WHERE table_id = %d AND %s)`, c.t(name), cond, c.t(dataFileTable), tid, visible("", s))
		if err := c.conn.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return fmt.Errorf("count inlined deletions in %s of %s: %w", name, c.path, err)
		}
		t.RowCount -= n
	}
	return nil
}

// partialRows returns the rows of a compacted file visible at snapshot s from
// its partial_file_info "s1:n1|s2:n2|…" (n_i rows are visible from s_i on).
func partialRows(info string, s, recordCount int64) int64 {
	rows := int64(0)
	for _, part := range strings.Split(info, "|") {
		a, b, _ := strings.Cut(part, ":")
		snap, err1 := strconv.ParseInt(a, 10, 64)
		n, err2 := strconv.ParseInt(b, 10, 64)
		if err1 != nil || err2 != nil {
			return recordCount
		}
		if snap <= s {
			rows = n
		}
	}
	return rows
}

// inlinedSnapshotColumns returns the begin/end snapshot columns of an
// inlined-data table with columns cols: named as the extension names them
// for the catalog's format (DuckLakeInlinedColNames: begin_snapshot and
// end_snapshot up to 1.0, _ducklake_begin_snapshot and
// _ducklake_end_snapshot from 1.1 on, where user columns may be called
// begin_snapshot), else the 2nd and 3rd columns, where the extension always
// puts them.
func (c *Catalog) inlinedSnapshotColumns(cols []string) (begin, end string, ok bool) {
	names := inlinedInternalColumns(c.format)
	if slices.Contains(cols, names[1]) && slices.Contains(cols, names[2]) {
		return names[1], names[2], true
	}
	if len(cols) >= 3 {
		return cols[1], cols[2], true
	}
	return "", "", false
}

// DataFiles returns every row of ducklake_data_file (ordered by id) followed
// by every row of ducklake_delete_file (ordered by id), whatever their
// snapshots, with ResolvedPath computed as the DuckLake spec ("Paths") and
// the extension (FromRelativePath: plain string concatenation) do: a relative
// file path is appended to its table's path, a relative table path to its
// schema's path, a relative schema path to data_path (given a trailing "/"
// when it lacks one). DuckLake 0.1 has no schema or table paths: there files
// are relative to data_path itself. A relative data_path stays relative (to
// the reader's working directory, as in DuckDB). Size is file_size_bytes.
func (c *Catalog) DataFiles(ctx context.Context) ([]DataFile, error) {
	return c.dataFiles(ctx, -1)
}

// DataFilesSince is DataFiles restricted to the files written at or after
// snapshot since (what a version adds to its parent, with since = the first
// snapshot it adds): rows with begin_snapshot >= since, and rows whose id is
// at or above the next_file_id of the catalog's last snapshot before since.
// The second kind matters: DuckLake's ducklake_merge_adjacent_files and
// ducklake_flush_inlined_data write new files whose begin_snapshot is that
// of the oldest rows they hold, possibly long before the snapshot that
// wrote them (seen with DuckDB 1.5.5; internal/acceptance maintenance.txtar).
func (c *Catalog) DataFilesSince(ctx context.Context, since int64) ([]DataFile, error) {
	return c.dataFiles(ctx, since)
}

func (c *Catalog) dataFiles(ctx context.Context, since int64) ([]DataFile, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	paths, err := c.pathTree(ctx)
	if err != nil {
		return nil, err
	}
	var out []DataFile
	for _, t := range []struct {
		table, idCol string
		del          bool
	}{{dataFileTable, "data_file_id", false}, {deleteFileTable, "delete_file_id", true}} {
		files, err := c.fileRows(ctx, t.table, t.idCol, t.del, since, paths)
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// pathNode is a schema's or a table's path as the catalog stores it.
type pathNode struct {
	path     string
	relative bool
	parent   int64 // a table's schema
}

// pathTree is what data-file paths are resolved against: data_path and
// the paths of every schema and table (any snapshot's: later rows, renames,
// win; DuckLake keeps the path across them).
type pathTree struct {
	base            string // data_path with a trailing separator
	schemas, tables map[int64]pathNode
}

func (c *Catalog) pathTree(ctx context.Context) (*pathTree, error) {
	t := &pathTree{base: c.dataPath, schemas: map[int64]pathNode{}, tables: map[int64]pathNode{}}
	if t.base != "" && !strings.HasSuffix(t.base, "/") && !strings.HasSuffix(t.base, `\`) {
		t.base += "/"
	}
	if c.has("ducklake_schema", "path") {
		err := c.query(ctx, fmt.Sprintf("SELECT schema_id, path, %s FROM %s ORDER BY begin_snapshot, schema_id",
			c.col("ducklake_schema", "", "path_is_relative", "NULL::BOOLEAN"), c.t("ducklake_schema")), func(r *sql.Rows) error {
			var id int64
			var path sql.NullString
			var rel sql.NullBool
			if err := r.Scan(&id, &path, &rel); err != nil {
				return err
			}
			t.schemas[id] = pathNode{path: path.String, relative: isRelative(path.String, rel)}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if c.has("ducklake_table") {
		err := c.query(ctx, fmt.Sprintf("SELECT table_id, schema_id, %s, %s FROM %s ORDER BY begin_snapshot, table_id",
			c.col("ducklake_table", "", "path", "NULL::VARCHAR"), c.col("ducklake_table", "", "path_is_relative", "NULL::BOOLEAN"),
			c.t("ducklake_table")), func(r *sql.Rows) error {
			var id, sid int64
			var path sql.NullString
			var rel sql.NullBool
			if err := r.Scan(&id, &sid, &path, &rel); err != nil {
				return err
			}
			t.tables[id] = pathNode{path: path.String, relative: isRelative(path.String, rel), parent: sid}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// tableBase returns the path a table's relative file paths are relative
// to: the table's path, under its schema's, under data_path, as far as
// each is relative.
func (t *pathTree) tableBase(tid int64) string {
	tb, ok := t.tables[tid]
	if !ok {
		return t.base
	}
	sb := t.base
	if s, ok := t.schemas[tb.parent]; ok {
		if s.relative {
			sb = t.base + s.path
		} else {
			sb = s.path
		}
	}
	if tb.relative {
		return sb + tb.path
	}
	return tb.path
}

// fileRows reads the rows of a data-file or delete-file table (when since
// >= 0, those written at or after it: see DataFilesSince), with their
// resolved paths.
func (c *Catalog) fileRows(ctx context.Context, table, idCol string, del bool, since int64, paths *pathTree) ([]DataFile, error) {
	if !c.has(table) {
		return nil, nil
	}
	where := ""
	if since >= 0 {
		where = fmt.Sprintf("WHERE begin_snapshot >= %d OR %s >= coalesce((SELECT next_file_id FROM %s WHERE snapshot_id < %d ORDER BY snapshot_id DESC LIMIT 1), 0) ",
			since, sqlquote.Ident(idCol), c.t("ducklake_snapshot"), since)
	}
	countCol, formatCol := "record_count", "file_format"
	if del {
		countCol, formatCol = "delete_count", "format"
	}
	q := fmt.Sprintf("SELECT %s, table_id, path, %s, begin_snapshot, end_snapshot, %s, %s, %s, %s, %s FROM %s %sORDER BY %s",
		sqlquote.Ident(idCol), c.col(table, "", "path_is_relative", "NULL::BOOLEAN"),
		c.col(table, "", "file_size_bytes", "NULL::BIGINT"), c.col(table, "", countCol, "NULL::BIGINT"),
		c.col(table, "", "footer_size", "NULL::BIGINT"), c.col(table, "", formatCol, "NULL::VARCHAR"),
		c.col(table, "", "encryption_key", "NULL::VARCHAR"), c.t(table), where, sqlquote.Ident(idCol))
	var out []DataFile
	err := c.query(ctx, q, func(r *sql.Rows) error {
		var f DataFile
		var path, format, key sql.NullString
		var rel sql.NullBool
		var end, size, count, footer sql.NullInt64
		if err := r.Scan(&f.ID, &f.TableID, &path, &rel, &f.BeginSnapshot, &end, &size, &count, &footer, &format, &key); err != nil {
			return err
		}
		f.Path, f.PathIsRelative, f.Size, f.Delete = path.String, isRelative(path.String, rel), size.Int64, del
		f.Records, f.FooterSize, f.Format, f.Encrypted = -1, footer.Int64, format.String, key.Valid && key.String != ""
		if count.Valid {
			f.Records = count.Int64
		}
		if end.Valid {
			e := end.Int64
			f.EndSnapshot = &e
		}
		if f.PathIsRelative {
			f.ResolvedPath = paths.tableBase(f.TableID) + f.Path
		} else {
			f.ResolvedPath = f.Path
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// isRelative reads a path_is_relative value; NULL (or a missing column) means
// relative, as the 0.1 -> 0.2 migration's DEFAULT TRUE does, unless the path
// is plainly absolute.
func isRelative(path string, rel sql.NullBool) bool {
	if rel.Valid {
		return rel.Bool
	}
	return !(strings.HasPrefix(path, "/") || strings.Contains(path, "://"))
}

// query runs q on the catalog connection and calls fn for every row.
func (c *Catalog) query(ctx context.Context, q string, fn func(*sql.Rows) error) error {
	rows, err := c.conn.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("query %s: %w", c.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return fmt.Errorf("query %s: %w", c.path, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query %s: %w", c.path, err)
	}
	return nil
}

// ScheduledFile is a row of ducklake_files_scheduled_for_deletion: a data
// or delete file DuckLake's maintenance superseded (merge, rewrite, flush
// of inlined data, snapshot expiry) and that ducklake_cleanup_old_files
// would delete.
type ScheduledFile struct {
	ID           int64     // data_file_id (data and delete files share the id counter)
	ResolvedPath string    // path resolved against data_path when relative
	Scheduled    time.Time // schedule_start: when it was superseded
}

// ScheduledSince returns the rows of ducklake_files_scheduled_for_deletion
// whose schedule_start is at or after t (the zero time: every row).
// DuckLake stores their paths relative to data_path (GetRelativePath), not
// to the table's path.
func (c *Catalog) ScheduledSince(ctx context.Context, t time.Time) ([]ScheduledFile, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	const table = "ducklake_files_scheduled_for_deletion"
	if !c.has(table, "data_file_id", "path", "schedule_start") {
		return nil, nil
	}
	base := c.dataPath
	if base != "" && !strings.HasSuffix(base, "/") && !strings.HasSuffix(base, `\`) {
		base += "/"
	}
	var out []ScheduledFile
	q := fmt.Sprintf("SELECT data_file_id, path, %s, schedule_start FROM %s WHERE schedule_start >= CAST('%s' AS TIMESTAMPTZ) ORDER BY data_file_id",
		c.col(table, "", "path_is_relative", "NULL::BOOLEAN"), c.t(table), t.UTC().Format("2006-01-02 15:04:05.999999+00"))
	err := c.query(ctx, q, func(r *sql.Rows) error {
		var f ScheduledFile
		var path sql.NullString
		var rel sql.NullBool
		var at sql.NullTime
		if err := r.Scan(&f.ID, &path, &rel, &at); err != nil {
			return err
		}
		f.ResolvedPath, f.Scheduled = path.String, at.Time
		if isRelative(path.String, rel) {
			f.ResolvedPath = base + path.String
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// FilesKnownAt counts the data and delete files of snapshot s's time that
// the catalog still knows of: the rows of ducklake_data_file and
// ducklake_delete_file (ended ones too) and of
// ducklake_files_scheduled_for_deletion whose file id is below s's
// next_file_id. Every file a catalog frozen at s listed or scheduled has
// such an id, and a file written after s has a larger one, so a later
// catalog of the same lake counts fewer at s exactly when a row of one of
// them was dropped from all three tables: DuckLake's cleanup deleted the
// file (ducklake_cleanup_old_files, after an expiry or a merge scheduled
// it). Commit records the count at its snapshot in dataset.json
// (totals.known_files) and compares a later working catalog's count with
// it (docs/spec.md §9). Errors: ErrSnapshotNotFound when s is not in the
// catalog; query errors.
func (c *Catalog) FilesKnownAt(ctx context.Context, s int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return 0, err
	}
	var next sql.NullInt64
	err := c.query(ctx, fmt.Sprintf("SELECT next_file_id FROM %s WHERE snapshot_id = %d", c.t("ducklake_snapshot"), s), func(r *sql.Rows) error {
		return r.Scan(&next)
	})
	if err != nil {
		return 0, err
	}
	if !next.Valid {
		return 0, fmt.Errorf("%w: %s has no snapshot %d", ErrSnapshotNotFound, c.path, s)
	}
	parts := []string{"0"}
	for _, tc := range knownFileIDs {
		if c.has(tc.table, tc.id) {
			parts = append(parts, fmt.Sprintf("(SELECT count(*) FROM %s WHERE %s < %d)", c.t(tc.table), tc.id, next.Int64))
		}
	}
	var n int64
	err = c.query(ctx, "SELECT "+strings.Join(parts, " + "), func(r *sql.Rows) error { return r.Scan(&n) })
	return n, err
}

// knownFileIDs are the tables whose rows FilesKnownAt counts, each with
// its file id column (data and delete files share the id counter).
var knownFileIDs = []struct{ table, id string }{
	{"ducklake_data_file", "data_file_id"},
	{"ducklake_delete_file", "delete_file_id"},
	{"ducklake_files_scheduled_for_deletion", "data_file_id"},
}

// InexactAt returns the ids of the tables whose RowCount in State(s) may
// not be exact: a data file or delete file visible at s that also holds
// rows (deletes) of snapshots after s, whose split only the Parquet file
// knows (partial_max M > s, as partial_file_info "partial_max:M" or column
// partial_max). DuckLake writes such files when
// ducklake_merge_adjacent_files compacts files of several snapshots (the
// count at s is then an upper bound) and when a delete on a file that
// already has a delete file rewrites it with the older deletes (a lower
// bound). Empty when every count is exact.
func (c *Catalog) InexactAt(ctx context.Context, s int64) (map[int64]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	out := map[int64]bool{}
	for _, table := range []string{dataFileTable, deleteFileTable} {
		if !c.has(table) {
			continue
		}
		var conds []string
		if c.has(table, "partial_max") {
			conds = append(conds, fmt.Sprintf("partial_max > %d", s))
		}
		if c.has(table, "partial_file_info") {
			conds = append(conds, fmt.Sprintf("(partial_file_info LIKE 'partial_max:%%' AND TRY_CAST(substr(partial_file_info, 13) AS BIGINT) > %d)", s))
		}
		if len(conds) == 0 {
			continue
		}
		err := c.query(ctx, fmt.Sprintf(`SELECT DISTINCT table_id FROM %s WHERE %s AND (%s)`,
			c.t(table), visible("", s), strings.Join(conds, " OR ")), func(r *sql.Rows) error {
			var tid int64
			if err := r.Scan(&tid); err != nil {
				return err
			}
			out[tid] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// inlinedReg is one row of ducklake_inlined_data_tables: the inlined-data
// table name registered for a table (one per schema version).
type inlinedReg struct {
	tid  int64
	name string
}

// inlinedRegistrations returns the distinct (table_id, table_name) rows of
// ducklake_inlined_data_tables, by table id and name. The caller checks
// that the table exists (c.has).
func (c *Catalog) inlinedRegistrations(ctx context.Context) ([]inlinedReg, error) {
	var regs []inlinedReg
	err := c.query(ctx, fmt.Sprintf("SELECT DISTINCT table_id, table_name FROM %s ORDER BY table_id, table_name",
		c.t("ducklake_inlined_data_tables")), func(r *sql.Rows) error {
		var x inlinedReg
		var name sql.NullString
		if err := r.Scan(&x.tid, &name); err != nil {
			return err
		}
		x.name = name.String
		regs = append(regs, x)
		return nil
	})
	return regs, err
}
