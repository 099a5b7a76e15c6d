package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// What changed between two snapshots: the structure from the two states
// (meta.CompareStates), the data from the catalog's file and inlined-row
// tables with DuckLake's visibility rule (docs/spec.md §7).

// Diff compares snapshot from with snapshot to, both read from this
// catalog (one timeline: an id names the same object on both sides).
// When to < from the changes from to to from are read and reversed. A
// negative from is the empty lake before the catalog's first snapshot:
// everything is created.
//
// Per table it counts, as the extension's ducklake_table_changes(catalog,
// schema, table, from+1, to) does (source: duckdb/ducklake
// ducklake_metadata_manager.cpp GetTableInsertions, GetTableDeletions):
//
//   - inserted: the rows of data files begun in (from, to] and inlined
//     rows begun there; a compacted file (merge_adjacent_files,
//     flush_inlined_data: partial_max, or DuckLake 0.3 partial_file_info)
//     counts only its rows of those snapshots;
//   - deleted: for each data file, the rows deleted at to less those
//     deleted at from, where a file ended (end_snapshot) has all its rows
//     deleted and a live one those of its visible delete files (a delete
//     file with partial_max counts only its positions of snapshots up to
//     the one read) and of its inlined deletions; plus inlined rows ended
//     in (from, to]. A table dropped in between has every row deleted.
//
// A file holding rows of several snapshots is split by its
// _ducklake_internal_snapshot_id column, read from the Parquet file when
// it is a local file; otherwise the counts are estimates (Rows.Exact
// false). Data and delete files are added or removed by id.
//
// Errors: ErrSnapshotNotFound when the catalog lacks either snapshot.
func (c *Catalog) Diff(ctx context.Context, from, to int64) (*meta.Diff, error) {
	if to < from {
		d, err := c.Diff(ctx, to, from)
		if err != nil {
			return nil, err
		}
		d.Reverse()
		return d, nil
	}
	a := &meta.State{Snapshot: from, Schemas: []meta.Schema{}}
	if from >= 0 {
		var err error
		if a, err = c.State(ctx, from); err != nil {
			return nil, err
		}
	}
	b, err := c.State(ctx, to)
	if err != nil {
		return nil, err
	}
	data, err := c.tableData(ctx, from, to, false)
	if err != nil {
		return nil, err
	}
	d := meta.CompareStates(a, b, meta.CompareOptions{SameTimeline: true})
	for i := range d.Tables {
		tc := &d.Tables[i]
		id := tc.ToID
		if id == 0 && tc.FromID != 0 {
			id = tc.FromID
		}
		data[id].fill(tc, tc.FromID != 0, tc.ToID != 0, true)
	}
	d.Finish(true)
	return d, nil
}

// DiffCatalogs compares snapshot from of catalog a with snapshot to of
// catalog b: two timelines (two branches that parted, or a catalog that no
// longer holds the other's snapshot). base is the state of their last
// common snapshot, or nil: objects the base has are matched by id, others
// by name (meta.CompareOptions). Rows before and after are counted as by
// Diff; inserted and deleted are not known (nil). Data files are matched by
// their resolved path. Errors: ErrSnapshotNotFound.
func DiffCatalogs(ctx context.Context, a *Catalog, from int64, b *Catalog, to int64, base *meta.State) (*meta.Diff, error) {
	sa, err := a.State(ctx, from)
	if err != nil {
		return nil, err
	}
	sb, err := b.State(ctx, to)
	if err != nil {
		return nil, err
	}
	da, err := a.tableData(ctx, from, from, true)
	if err != nil {
		return nil, err
	}
	db, err := b.tableData(ctx, to, to, true)
	if err != nil {
		return nil, err
	}
	d := meta.CompareStates(sa, sb, meta.CompareOptions{Base: base})
	for i := range d.Tables {
		tc := &d.Tables[i]
		pairData(orNew(da[tc.FromID]), orNew(db[tc.ToID])).fill(tc, tc.FromID != 0, tc.ToID != 0, false)
	}
	d.Finish(false)
	return d, nil
}

// tableData is one table's data at two snapshots of one catalog.
type tableData struct {
	before, after     int64 // visible rows
	inserted, deleted int64
	exact             bool
	// files maps a data file's key (its id, or its resolved path across
	// two catalogs) to its size, for the files visible at each snapshot.
	filesBefore, filesAfter map[string]int64
	delBefore, delAfter     map[string]bool
}

func newTableData() *tableData {
	return &tableData{exact: true, filesBefore: map[string]int64{}, filesAfter: map[string]int64{}, delBefore: map[string]bool{}, delAfter: map[string]bool{}}
}

func orNew(t *tableData) *tableData {
	if t == nil {
		return newTableData()
	}
	return t
}

// pairData joins two catalogs' data of one table: before from x's first
// snapshot, after from y's, files keyed by path.
func pairData(x, y *tableData) *tableData {
	t := newTableData()
	t.before, t.after, t.exact = x.before, y.after, x.exact && y.exact
	t.filesBefore, t.delBefore = x.filesBefore, x.delBefore
	t.filesAfter, t.delAfter = y.filesAfter, y.delAfter
	return t
}

// fill writes t into a table's change: rows (inserted and deleted when
// known) and files. A table absent on a side has no rows or files there.
func (t *tableData) fill(tc *meta.TableChange, hasBefore, hasAfter, known bool) {
	if t == nil {
		t = newTableData()
	}
	before, after, ins, del := t.before, t.after, t.inserted, t.deleted
	fb, fa, db, da := t.filesBefore, t.filesAfter, t.delBefore, t.delAfter
	if !hasBefore {
		before, fb, db = 0, nil, nil
		ins = after + del
	}
	if !hasAfter {
		after, fa, da = 0, nil, nil
		del = before + ins
	}
	tc.Rows = meta.RowChange{Before: before, After: after, Exact: t.exact}
	if known {
		tc.Rows.Inserted, tc.Rows.Deleted = &ins, &del
	}
	f := &tc.Files
	*f = meta.FileChange{}
	for k, size := range fb {
		f.Before++
		f.BytesBefore += size
		if _, ok := fa[k]; !ok {
			f.Removed++
			f.BytesRemoved += size
		}
	}
	for k, size := range fa {
		f.After++
		f.BytesAfter += size
		if _, ok := fb[k]; !ok {
			f.Added++
			f.BytesAdded += size
		}
	}
	for k := range db {
		if !da[k] {
			f.DeleteFilesRemoved++
		}
	}
	for k := range da {
		if !db[k] {
			f.DeleteFilesAdded++
		}
	}
}

// fileRow is a data or delete file row begun by the later snapshot.
type fileRow struct {
	id, table, dataFile int64 // dataFile: a delete file's data file
	begin               int64
	end                 *int64
	count, size         int64 // record_count (data) or delete_count (delete)
	partialMax          int64 // -1 when none
	partialInfo         string
	path                string // resolved
}

func (f *fileRow) visible(s int64) bool {
	return f.begin <= s && (f.end == nil || s < *f.end)
}

// tableData reads every table's data at from and to (from <= to), keyed by
// table id; files are keyed by id, or by resolved path when byPath.
func (c *Catalog) tableData(ctx context.Context, from, to int64, byPath bool) (map[int64]*tableData, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	r := &diffReader{c: c, from: from, to: to, out: map[int64]*tableData{}, counts: map[string]int64{}, byPath: byPath}
	for _, step := range []func(context.Context) error{r.readFiles, r.readInlinedDeletes, r.countFiles, r.countInlined} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return r.out, nil
}

// diffReader gathers tableData for one catalog and two snapshots.
type diffReader struct {
	c        *Catalog
	from, to int64
	out      map[int64]*tableData
	data     []*fileRow
	deletes  map[int64][]*fileRow // by data file id
	inlDel   map[int64][2]int64   // data file id -> inlined deletions at from, at to
	counts   map[string]int64     // Parquet counts read, by path and snapshot
	paths    *pathTree
	// byPath keys files by resolved path (comparing two catalogs) rather
	// than by id.
	byPath bool
}

func (r *diffReader) table(id int64) *tableData {
	t := r.out[id]
	if t == nil {
		t = newTableData()
		r.out[id] = t
	}
	return t
}

// readFiles reads the data and delete files begun at or before to.
func (r *diffReader) readFiles(ctx context.Context) error {
	c := r.c
	var err error
	if r.paths, err = c.pathTree(ctx); err != nil {
		return err
	}
	r.deletes = map[int64][]*fileRow{}
	if c.has(dataFileTable) {
		r.data, err = r.fileRows(ctx, dataFileTable, "data_file_id", "record_count", "NULL::BIGINT")
		if err != nil {
			return err
		}
	}
	if c.has(deleteFileTable) {
		dels, err := r.fileRows(ctx, deleteFileTable, "delete_file_id", "delete_count", "data_file_id")
		if err != nil {
			return err
		}
		for _, d := range dels {
			r.deletes[d.dataFile] = append(r.deletes[d.dataFile], d)
		}
	}
	return nil
}

func (r *diffReader) fileRows(ctx context.Context, table, idCol, countCol, dataFileCol string) ([]*fileRow, error) {
	c := r.c
	q := fmt.Sprintf(`SELECT %s, table_id, %s, begin_snapshot, end_snapshot, %s, %s, %s, %s, path, %s FROM %s WHERE begin_snapshot <= %d ORDER BY %s`,
		sqlquote.Ident(idCol), dataFileCol, c.col(table, "", countCol, "0::BIGINT"), c.col(table, "", "file_size_bytes", "NULL::BIGINT"),
		c.col(table, "", "partial_max", "NULL::BIGINT"), c.col(table, "", "partial_file_info", "NULL::VARCHAR"),
		c.col(table, "", "path_is_relative", "NULL::BOOLEAN"), c.t(table), r.to, sqlquote.Ident(idCol))
	var out []*fileRow
	err := c.query(ctx, q, func(rows *sql.Rows) error {
		f := &fileRow{partialMax: -1}
		var df, end, count, size, pmax sql.NullInt64
		var info, path sql.NullString
		var rel sql.NullBool
		if err := rows.Scan(&f.id, &f.table, &df, &f.begin, &end, &count, &size, &pmax, &info, &path, &rel); err != nil {
			return err
		}
		f.dataFile, f.count, f.size, f.partialInfo = df.Int64, count.Int64, size.Int64, info.String
		if end.Valid {
			e := end.Int64
			f.end = &e
		}
		if pmax.Valid {
			f.partialMax = pmax.Int64
		} else if m, ok := strings.CutPrefix(f.partialInfo, "partial_max:"); ok {
			if v, err := strconv.ParseInt(m, 10, 64); err == nil {
				f.partialMax = v
			}
		}
		f.path = path.String
		if isRelative(path.String, rel) {
			f.path = r.paths.tableBase(f.table) + path.String
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// readInlinedDeletes counts each data file's inlined deletions
// (ducklake_inlined_delete_<table_id>) at from and at to.
func (r *diffReader) readInlinedDeletes(ctx context.Context) error {
	c := r.c
	r.inlDel = map[int64][2]int64{}
	names := make([]string, 0)
	for name := range c.tables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cols := c.tables[name]
		if !strings.HasPrefix(name, "ducklake_inlined_delete_") || !slices.Contains(cols, "file_id") || !slices.Contains(cols, "begin_snapshot") {
			continue
		}
		at := func(s int64) string {
			if slices.Contains(cols, "end_snapshot") {
				return visible("", s)
			}
			return fmt.Sprintf("begin_snapshot <= %d", s)
		}
		q := fmt.Sprintf("SELECT file_id, count(*) FILTER (WHERE %s), count(*) FILTER (WHERE %s) FROM %s GROUP BY file_id",
			at(r.from), at(r.to), c.t(name))
		err := c.query(ctx, q, func(rows *sql.Rows) error {
			var id, a, b int64
			if err := rows.Scan(&id, &a, &b); err != nil {
				return err
			}
			v := r.inlDel[id]
			r.inlDel[id] = [2]int64{v[0] + a, v[1] + b}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// countFiles adds each data file's rows and its files to its table.
func (r *diffReader) countFiles(ctx context.Context) error {
	for _, f := range r.data {
		t := r.table(f.table)
		key := strconv.FormatInt(f.id, 10)
		if r.byPath {
			key = f.path
		}
		insA, okA := r.inserted(ctx, f, r.from)
		insB, okB := r.inserted(ctx, f, r.to)
		remA, okC := r.removed(ctx, f, r.from, insA)
		remB, okD := r.removed(ctx, f, r.to, insB)
		t.exact = t.exact && okA && okB && okC && okD
		t.before += insA - remA
		t.after += insB - remB
		t.inserted += insB - insA
		t.deleted += remB - remA
		if f.visible(r.from) {
			t.filesBefore[key] = f.size
		}
		if f.visible(r.to) {
			t.filesAfter[key] = f.size
		}
		for _, d := range r.deletes[f.id] {
			dk := "d" + strconv.FormatInt(d.id, 10)
			if r.byPath {
				dk = d.path
			}
			if d.visible(r.from) {
				t.delBefore[dk] = true
			}
			if d.visible(r.to) {
				t.delAfter[dk] = true
			}
		}
	}
	return nil
}

// inserted is the number of f's rows inserted at or before snapshot s, and
// whether it is exact.
func (r *diffReader) inserted(ctx context.Context, f *fileRow, s int64) (int64, bool) {
	switch {
	case f.begin > s:
		return 0, true
	case partialInfoRe.MatchString(f.partialInfo):
		return partialRows(f.partialInfo, s, f.count), true
	case f.partialMax > s:
		if n, err := r.countUpTo(ctx, f.path, s); err == nil {
			return n, true
		}
		return f.count, false
	}
	return f.count, true
}

// removed is the number of f's rows deleted at snapshot s (ins: the rows it
// had inserted by then): all of them once f ended, else those of its
// visible delete files and inlined deletions.
func (r *diffReader) removed(ctx context.Context, f *fileRow, s, ins int64) (int64, bool) {
	if f.begin > s {
		return 0, true
	}
	if f.end != nil && *f.end <= s {
		return ins, true
	}
	n, exact := int64(0), true
	for _, d := range r.deletes[f.id] {
		if !d.visible(s) {
			continue
		}
		if d.partialMax > s {
			if m, err := r.countUpTo(ctx, d.path, s); err == nil {
				n += m
				continue
			}
			exact = false
		}
		n += d.count
	}
	v := r.inlDel[f.id]
	if s == r.from {
		n += v[0]
	} else {
		n += v[1]
	}
	return n, exact
}

// countUpTo counts the rows of a local Parquet file (a compacted data file
// or a delete file of several snapshots) whose
// _ducklake_internal_snapshot_id is at most s. Remote files are not read
// (an error): the caller then estimates.
func (r *diffReader) countUpTo(ctx context.Context, path string, s int64) (int64, error) {
	key := path + "\x00" + strconv.FormatInt(s, 10)
	if n, ok := r.counts[key]; ok {
		return n, nil
	}
	local, ok := localFile(path)
	if !ok {
		return 0, fmt.Errorf("%s is not a local file", path)
	}
	var n int64
	q := fmt.Sprintf("SELECT count(*) FROM read_parquet(%s) WHERE _ducklake_internal_snapshot_id <= %d", sqlquote.String(local), s)
	if err := r.c.conn.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, err
	}
	r.counts[key] = n
	return n, nil
}

// localFile returns a resolved data-file path as a local path: a plain
// path, or a file:// URL; ok is false for any other URL.
func localFile(p string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		return rest, true
	}
	if i := strings.Index(p, "://"); i > 0 && !strings.ContainsAny(p[:i], `/\`) {
		return "", false
	}
	return p, true
}

// countInlined adds each table's inlined rows: visible at from and at to,
// begun and ended in between (DuckLake spec: ducklake_inlined_data_tables).
func (r *diffReader) countInlined(ctx context.Context) error {
	c := r.c
	if !c.has("ducklake_inlined_data_tables", "table_id", "table_name") {
		return nil
	}
	regs, err := c.inlinedRegistrations(ctx)
	if err != nil {
		return err
	}
	for _, x := range regs {
		begin, end, ok := c.inlinedSnapshotColumns(c.tables[x.name])
		if !ok {
			continue
		}
		b, e := sqlquote.Ident(begin), sqlquote.Ident(end)
		vis := func(s int64) string { return fmt.Sprintf("%s <= %d AND (%s IS NULL OR %d < %s)", b, s, e, s, e) }
		q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE %s), count(*) FILTER (WHERE %s),
			count(*) FILTER (WHERE %s > %d AND %s <= %d), count(*) FILTER (WHERE %s > %d AND %s <= %d) FROM %s`,
			vis(r.from), vis(r.to), b, r.from, b, r.to, e, r.from, e, r.to, c.t(x.name))
		var va, vb, ins, del int64
		if err := c.conn.QueryRowContext(ctx, q).Scan(&va, &vb, &ins, &del); err != nil {
			return fmt.Errorf("count inlined rows in %s of %s: %w", x.name, c.path, err)
		}
		t := r.table(x.tid)
		t.before += va
		t.after += vb
		t.inserted += ins
		t.deleted += del
	}
	return nil
}
