package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"os"
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
// Per table it gives the rows visible at each side (data files' rows less
// their visible deletions, a compacted file's rows of the snapshots up to
// the side, inlined rows) and the rows inserted and deleted by row
// identity: `SELECT rowid, *` of the second state EXCEPT ALL the first,
// and the other way round (countByIdentity, docs/spec.md §25). Data files
// whose rows cannot differ between the sides are never read; the others
// are counted from the catalog when that is enough, else their row ids
// (and for a row id on both sides their values) are read from the Parquet
// files, local ones or those DiffOptions.Fetch copies. When a file cannot
// be read the counts are the catalog's estimates: Rows.Exact false and
// Rows.Approximate says why. Data and delete files are added or removed
// by id.
//
// Errors: ErrSnapshotNotFound when the catalog lacks either snapshot.
func (c *Catalog) Diff(ctx context.Context, from, to int64) (*meta.Diff, error) {
	return c.DiffWith(ctx, from, to, DiffOptions{})
}

// DiffOptions are the options of DiffWith.
type DiffOptions struct {
	// Fetch returns a local copy of a data or delete file that is not a
	// local file (path: resolved, as the catalog names it), for the few
	// files a diff must read; nil: such files are not read, and counts
	// that need them are estimates (Rows.Exact false).
	Fetch func(ctx context.Context, path string) (string, error)
}

// DiffWith is Diff with options.
func (c *Catalog) DiffWith(ctx context.Context, from, to int64, o DiffOptions) (*meta.Diff, error) {
	if to < from {
		d, err := c.DiffWith(ctx, to, from, o)
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
	data, err := c.tableData(ctx, from, to, false, o)
	if err != nil {
		return nil, err
	}
	d := meta.CompareStates(a, b, meta.CompareOptions{SameTimeline: true})
	if err := partitioned(ctx, d, c, from, a, c, to, b); err != nil {
		return nil, err
	}
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
	da, err := a.tableData(ctx, from, from, true, DiffOptions{})
	if err != nil {
		return nil, err
	}
	db, err := b.tableData(ctx, to, to, true, DiffOptions{})
	if err != nil {
		return nil, err
	}
	d := meta.CompareStates(sa, sb, meta.CompareOptions{Base: base})
	if err := partitioned(ctx, d, a, from, sa, b, to, sb); err != nil {
		return nil, err
	}
	for i := range d.Tables {
		tc := &d.Tables[i]
		x, y := orNew(da[tc.FromID]), orNew(db[tc.ToID])
		pairData(x, y).fill(tc, tc.FromID != 0, tc.ToID != 0, false)
		// Rows differ when the files are the same and the inlined rows
		// are not; with other files (a flush of inlined rows, a
		// compaction) the files say what changed, not which rows.
		tc.Rows.Differ = tc.FromID != 0 && tc.ToID != 0 && sameKeys(x.filesBefore, y.filesAfter) && sameKeys(x.delBefore, y.delAfter) && !sameInlined(x.inlined, y.inlined)
	}
	d.Finish(false)
	return d, nil
}

// tableData is one table's data at two snapshots of one catalog.
type tableData struct {
	before, after     int64 // visible rows
	inserted, deleted int64
	exact             bool
	// why says what is approximate when exact is false ("" when the
	// counts were estimated for another reason, e.g. a remote file).
	why string
	// compared: rows of one rowid on both sides were compared by value.
	compared bool
	// files maps a data file's key (its id, or its resolved path across
	// two catalogs) to its size, for the files visible at each snapshot.
	filesBefore, filesAfter map[string]int64
	delBefore, delAfter     map[string]bool
	// inlined are the inlined rows and deletions visible (across two
	// catalogs only: identifyInlined), sorted.
	inlined []inlinedMark
}

func newTableData() *tableData {
	return &tableData{exact: true, filesBefore: map[string]int64{}, filesAfter: map[string]int64{}, delBefore: map[string]bool{}, delAfter: map[string]bool{}}
}

// approximate marks t's counts as estimates, for the reason why.
func (t *tableData) approximate(why string) {
	t.exact = false
	if t.why == "" {
		t.why = why
	}
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
		ins, del = after, 0
	}
	if !hasAfter {
		after, fa, da = 0, nil, nil
		ins, del = 0, before
	}
	tc.Rows = meta.RowChange{Before: before, After: after, Exact: t.exact, Approximate: t.why}
	if t.compared && len(tc.Columns) > 0 && hasBefore && hasAfter {
		tc.Rows.Exact = false
		if tc.Rows.Approximate == "" {
			tc.Rows.Approximate = "the table's columns changed: rows of one rowid were compared by the values of the columns each file holds"
		}
	}
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
	rowIDStart          int64  // row_id_start (data files)
	format              string // "parquet", "puffin" (DuckLake 1.1 deletion vectors), or "" when not recorded
}

func (f *fileRow) visible(s int64) bool {
	return f.begin <= s && (f.end == nil || s < *f.end)
}

// tableData reads every table's data at from and to (from <= to), keyed by
// table id; files are keyed by id, or by resolved path when byPath.
func (c *Catalog) tableData(ctx context.Context, from, to int64, byPath bool, o DiffOptions) (map[int64]*tableData, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	r := &diffReader{c: c, from: from, to: to, out: map[int64]*tableData{}, counts: map[string]int64{}, columns: map[string][]string{}, locals: map[string]string{}, fetch: o.Fetch, byPath: byPath}
	steps := []func(context.Context) error{r.readFiles, r.readInlinedDeletes, r.countFiles, r.countInlined}
	if !byPath {
		steps = append(steps, r.countByIdentity)
	} else {
		steps = append(steps, r.identifyInlined)
	}
	for _, step := range steps {
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
	// inlDel maps a data file id to its inlined deletions at from, at to,
	// and those visible at one of the two only.
	inlDel     map[int64][3]int64
	counts     map[string]int64    // Parquet counts read, by path and snapshot
	columns    map[string][]string // Parquet files' columns, by path
	inlinedSrc []*inlinedSource    // inlined-data tables
	paths      *pathTree
	fetch      func(context.Context, string) (string, error) // DiffOptions.Fetch
	locals     map[string]string                             // local copies, by path
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
		r.data, err = r.fileRows(ctx, dataFileTable, "data_file_id", "record_count", "NULL::BIGINT", r.c.col(dataFileTable, "", "row_id_start", "0::BIGINT"))
		if err != nil {
			return err
		}
	}
	if c.has(deleteFileTable) {
		dels, err := r.fileRows(ctx, deleteFileTable, "delete_file_id", "delete_count", "data_file_id", "NULL::BIGINT")
		if err != nil {
			return err
		}
		for _, d := range dels {
			r.deletes[d.dataFile] = append(r.deletes[d.dataFile], d)
		}
	}
	return nil
}

func (r *diffReader) fileRows(ctx context.Context, table, idCol, countCol, dataFileCol, rowIDStartCol string) ([]*fileRow, error) {
	c := r.c
	q := fmt.Sprintf(`SELECT %s, table_id, %s, begin_snapshot, end_snapshot, %s, %s, %s, %s, path, %s, %s, %s FROM %s WHERE begin_snapshot <= %d ORDER BY %s`,
		sqlquote.Ident(idCol), dataFileCol, c.col(table, "", countCol, "0::BIGINT"), c.col(table, "", "file_size_bytes", "NULL::BIGINT"),
		c.col(table, "", "partial_max", "NULL::BIGINT"), c.col(table, "", "partial_file_info", "NULL::VARCHAR"),
		c.col(table, "", "path_is_relative", "NULL::BOOLEAN"), rowIDStartCol, c.col(table, "", "format", "NULL::VARCHAR"),
		c.t(table), r.to, sqlquote.Ident(idCol))
	var out []*fileRow
	err := c.query(ctx, q, func(rows *sql.Rows) error {
		f := &fileRow{partialMax: -1}
		var df, end, count, size, pmax, start sql.NullInt64
		var info, path, format sql.NullString
		var rel sql.NullBool
		if err := rows.Scan(&f.id, &f.table, &df, &f.begin, &end, &count, &size, &pmax, &info, &path, &rel, &start, &format); err != nil {
			return err
		}
		f.dataFile, f.count, f.size, f.partialInfo = df.Int64, count.Int64, size.Int64, info.String
		f.rowIDStart, f.format = start.Int64, format.String
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
	r.inlDel = map[int64][3]int64{}
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
		a, b := inlinedDeleteAt(cols, r.from), inlinedDeleteAt(cols, r.to)
		q := fmt.Sprintf("SELECT file_id, count(*) FILTER (WHERE %s), count(*) FILTER (WHERE %s), count(*) FILTER (WHERE (%s) <> (%s)) FROM %s GROUP BY file_id",
			a, b, a, b, c.t(name))
		err := c.query(ctx, q, func(rows *sql.Rows) error {
			var id, a, b, changed int64
			if err := rows.Scan(&id, &a, &b, &changed); err != nil {
				return err
			}
			v := r.inlDel[id]
			r.inlDel[id] = [3]int64{v[0] + a, v[1] + b, v[2] + changed}
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
	local, err := r.local(ctx, path)
	if err != nil {
		return 0, err
	}
	var n int64
	q := fmt.Sprintf("SELECT count(*) FROM read_parquet(%s) WHERE _ducklake_internal_snapshot_id <= %d", sqlquote.String(local), s)
	if err := r.c.conn.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, err
	}
	r.counts[key] = n
	return n, nil
}

// local returns a local path of a data or delete file: the file itself,
// or a copy Fetch made. Errors: the file is not local and there is no
// Fetch, or Fetch's.
func (r *diffReader) local(ctx context.Context, path string) (string, error) {
	if p, ok := localFile(path); ok {
		if _, err := os.Stat(p); err != nil {
			return "", err // names p
		}
		return p, nil
	}
	if p, ok := r.locals[path]; ok {
		return p, nil
	}
	if r.fetch == nil {
		return "", fmt.Errorf("%s is not a local file", path)
	}
	p, err := r.fetch(ctx, path)
	if err != nil {
		return "", err
	}
	r.locals[path] = p
	return p, nil
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
		cols := c.tables[x.name]
		begin, end, ok := c.inlinedSnapshotColumns(cols)
		if !ok {
			continue
		}
		src := &inlinedSource{tid: x.tid, name: x.name, rowID: cols[0], begin: begin, end: end}
		for _, col := range cols {
			if col != src.rowID && col != begin && col != end {
				src.values = append(src.values, col)
			}
		}
		va, vb := src.visibleAt(r.from), src.visibleAt(r.to)
		q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE %s), count(*) FILTER (WHERE %s),
			count(*) FILTER (WHERE %s AND NOT %s), count(*) FILTER (WHERE %s AND NOT %s) FROM %s`,
			va, vb, va, vb, vb, va, c.t(x.name))
		var before, after int64
		if err := c.conn.QueryRowContext(ctx, q).Scan(&before, &after, &src.onlyFrom, &src.onlyTo); err != nil {
			return fmt.Errorf("count inlined rows in %s of %s: %w", x.name, c.path, err)
		}
		t := r.table(x.tid)
		t.before += before
		t.after += after
		r.inlinedSrc = append(r.inlinedSrc, src)
	}
	return nil
}

// sameKeys reports whether a and b have the same keys.
func sameKeys[V any](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}
