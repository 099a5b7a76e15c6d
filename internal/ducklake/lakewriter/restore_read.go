package lakewriter

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// undo is one Restore or Revert being written: the snapshot objects go
// back to (lo), the last reverted snapshot (hi; the last snapshot for a
// restore), and what it found and did.
type undo struct {
	o        *op
	lo, hi   int64
	revert   bool
	last     int64
	tables   []vtable
	cols     map[string][]string // catalog table -> columns in order
	objs     map[objKey]*object
	scope    map[objKey]bool
	inlDel   map[int64]string // data file id -> its table's inlined-deletion table
	res      UndoResult
	touched  map[int64]bool // tables whose definition changed
	dataTabs map[int64]bool // tables whose data changed
	// endedFiles and copiedFiles are the data files ended and copied, for
	// the statistics.
	endedFiles, copiedFiles []fileCopy
}

// vtable is a catalog table with begin_snapshot and end_snapshot: which
// object each row belongs to and the object's container.
type vtable struct {
	name       string
	grp        string
	key        string // SQL: the object's key as VARCHAR
	parent     string // SQL: the container's id, or NULL
	begin, end string // quoted column names
	tid        int64  // an inlined-data table's table
}

// objKey names one object: its group and key.
type objKey struct{ grp, key string }

// object is what readChanges learnt about one object.
type object struct {
	parent    sql.NullInt64
	rev       int64 // first snapshot in (lo, hi] that changed it, 0 if none
	later     int64 // first snapshot after hi that changed it, 0 if none
	partialLo bool  // a file row visible at lo holds rows of later snapshots
}

// objectGroups are the versioned tables fdl knows: the group of their
// objects, the key columns and the container column. A delete file is
// part of its data file's object.
var objectGroups = map[string]struct {
	grp    string
	keys   []string
	parent string
}{
	"ducklake_schema":         {"schema", []string{"schema_id"}, ""},
	"ducklake_table":          {"table", []string{"table_id"}, "schema_id"},
	"ducklake_view":           {"view", []string{"view_id"}, "schema_id"},
	"ducklake_macro":          {"macro", []string{"macro_id"}, "schema_id"},
	"ducklake_column":         {"column", []string{"table_id", "column_id"}, "table_id"},
	"ducklake_tag":            {"tag", []string{"object_id", "key"}, "object_id"},
	"ducklake_column_tag":     {"column_tag", []string{"table_id", "column_id", "key"}, "table_id"},
	"ducklake_partition_info": {"partition", []string{"table_id"}, "table_id"},
	"ducklake_sort_info":      {"sort", []string{"table_id"}, "table_id"},
	"ducklake_data_file":      {"file", []string{"data_file_id"}, "table_id"},
	"ducklake_delete_file":    {"file", []string{"data_file_id"}, "table_id"},
}

// definitionGroups are the objects that make a table's definition; a
// change to one bumps the schema version.
var definitionGroups = []string{"schema", "table", "view", "macro", "column", "tag", "column_tag", "partition", "sort"}

func newUndo(o *op, lo, hi int64) (*undo, error) {
	u := &undo{o: o, lo: lo, hi: hi, revert: hi >= 0, objs: map[objKey]*object{}, scope: map[objKey]bool{},
		inlDel: map[int64]string{}, touched: map[int64]bool{}, dataTabs: map[int64]bool{}}
	u.last = o.id - 1
	if !u.revert {
		u.hi = u.last
	}
	if lo < 0 || lo > u.last || (u.revert && (hi <= lo || hi > u.last)) {
		if u.revert {
			return nil, fmt.Errorf("%w: snapshots %d..%d are not a range of this catalog's (0..%d)", ErrInvalid, lo+1, hi, u.last)
		}
		return nil, fmt.Errorf("%w: snapshot %d is not one of this catalog's (0..%d)", ErrInvalid, lo, u.last)
	}
	var n int
	if err := o.queryRow("SELECT count(*) FROM ducklake_snapshot WHERE snapshot_id = ?", lo).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: snapshot %d is no longer in the catalog (expired): its state cannot be read", ErrInvalid, lo)
	}
	return u, nil
}

// readTables lists the catalog's versioned tables and every table's columns.
func (u *undo) readTables() error {
	rows, err := u.o.w.conn.QueryContext(u.o.ctx, `SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns()
		WHERE database_name = ? AND schema_name = 'main' GROUP BY table_name ORDER BY table_name`, lakeAlias)
	if err != nil {
		return err
	}
	u.cols = map[string][]string{}
	for rows.Next() {
		var name string
		var cols []any
		if err := rows.Scan(&name, &cols); err != nil {
			rows.Close()
			return err
		}
		for _, c := range cols {
			u.cols[name] = append(u.cols[name], fmt.Sprint(c))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	inlined, err := u.inlinedTableIDs()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(u.cols))
	for n := range u.cols {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		if t, ok := u.vtableOf(name, inlined); ok {
			u.tables = append(u.tables, t)
		}
	}
	return nil
}

// vtableOf describes a versioned table (ok false for the others).
func (u *undo) vtableOf(name string, inlined map[string]int64) (vtable, bool) {
	cols := u.cols[name]
	if tid, ok := inlined[name]; ok {
		// Its first three columns as the extension names them for the
		// catalog's format (DuckLakeInlinedColNames).
		n := u.o.w.lay.inl
		if !slices.Contains(cols, n.rowID) || !slices.Contains(cols, n.begin) || !slices.Contains(cols, n.end) {
			return vtable{}, false
		}
		return vtable{name: name, grp: "inlined", key: fmt.Sprintf("'%d|' || %s::VARCHAR", tid, sqlquote.Ident(n.rowID)), parent: strconv.FormatInt(tid, 10),
			begin: sqlquote.Ident(n.begin), end: sqlquote.Ident(n.end), tid: tid}, true
	}
	if !slices.Contains(cols, "begin_snapshot") || !slices.Contains(cols, "end_snapshot") {
		return vtable{}, false
	}
	g, ok := objectGroups[name]
	if !ok {
		// A versioned table fdl does not know: its rows are its objects.
		var all []string
		for _, c := range cols {
			if c != "begin_snapshot" && c != "end_snapshot" {
				all = append(all, sqlquote.Ident(c)+"::VARCHAR")
			}
		}
		return vtable{name: name, grp: "other:" + name, key: "concat_ws('|', " + strings.Join(all, ", ") + ")", parent: "NULL",
			begin: `"begin_snapshot"`, end: `"end_snapshot"`}, true
	}
	var keys []string
	for _, k := range g.keys {
		keys = append(keys, sqlquote.Ident(k)+"::VARCHAR")
	}
	parent := "NULL"
	if g.parent != "" {
		parent = sqlquote.Ident(g.parent)
	}
	return vtable{name: name, grp: g.grp, key: "concat_ws('|', " + strings.Join(keys, ", ") + ")", parent: parent,
		begin: `"begin_snapshot"`, end: `"end_snapshot"`}, true
}

// inlinedTableIDs maps each registered inlined-data table that exists to
// its table.
func (u *undo) inlinedTableIDs() (map[string]int64, error) {
	out := map[string]int64{}
	if u.cols["ducklake_inlined_data_tables"] == nil {
		return out, nil
	}
	rows, err := u.o.w.conn.QueryContext(u.o.ctx, "SELECT DISTINCT table_name, table_id FROM ducklake_inlined_data_tables")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var tid int64
		if err := rows.Scan(&name, &tid); err != nil {
			return nil, err
		}
		if u.cols[name] != nil {
			out[name] = tid
		}
	}
	return out, rows.Err()
}

// readChanges reads every row begun or ended after lo (and every file row
// holding rows of snapshots after lo) into objects.
func (u *undo) readChanges() error {
	for _, t := range u.tables {
		if err := u.readTableChanges(t); err != nil {
			return err
		}
	}
	return u.readInlinedDeletes()
}

func (u *undo) readTableChanges(t vtable) error {
	partial := "NULL::BIGINT"
	info := "NULL::VARCHAR"
	if t.grp == "file" {
		if slices.Contains(u.cols[t.name], "partial_max") {
			partial = "partial_max"
		}
		if slices.Contains(u.cols[t.name], "partial_file_info") {
			info = "partial_file_info"
		}
	}
	q := fmt.Sprintf("SELECT %s, %s, %s, %s, %s, %s FROM %s WHERE %s > %d OR %s > %d OR %s > %d OR %s IS NOT NULL",
		t.key, t.parent, t.begin, t.end, partial, info, sqlquote.Ident(t.name), t.begin, u.lo, t.end, u.lo, partial, u.lo, info)
	rows, err := u.o.w.conn.QueryContext(u.o.ctx, q)
	if err != nil {
		return fmt.Errorf("read %s: %w", t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var parent, end, pmax sql.NullInt64
		var begin int64
		var pinfo sql.NullString
		if err := rows.Scan(&key, &parent, &begin, &end, &pmax, &pinfo); err != nil {
			return err
		}
		span := partialSpan(pmax, pinfo)
		if span <= u.lo && begin <= u.lo && (!end.Valid || end.Int64 <= u.lo) {
			continue // a 0.3 file whose steps all lie before lo, never changed since
		}
		ob := u.object(objKey{t.grp, key}, parent)
		if begin > u.lo {
			u.mark(ob, begin)
		}
		if end.Valid && end.Int64 > u.lo {
			u.mark(ob, end.Int64)
		}
		if span > u.lo && begin <= u.hi {
			// Rows (or deletions) of the snapshots up to span live in
			// this file: it changed in every snapshot its span covers.
			u.mark(ob, max(begin, u.lo+1))
			u.mark(ob, span)
			if begin <= u.lo && (!end.Valid || end.Int64 > u.lo) {
				ob.partialLo = true
			}
		}
	}
	return rows.Err()
}

// partialSpan is the last snapshot whose rows a compacted data file or a
// delete file of several snapshots holds (partial_max, or DuckLake 0.3
// partial_file_info "s1:n1|s2:n2" / "partial_max:M"); 0 for none.
func partialSpan(pmax sql.NullInt64, info sql.NullString) int64 {
	if pmax.Valid {
		return pmax.Int64
	}
	if !info.Valid {
		return 0
	}
	if m, ok := strings.CutPrefix(info.String, "partial_max:"); ok {
		v, _ := strconv.ParseInt(m, 10, 64)
		return v
	}
	span := int64(0)
	for _, part := range strings.Split(info.String, "|") {
		s, _, _ := strings.Cut(part, ":")
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && v > span {
			span = v
		}
	}
	return span
}

// readInlinedDeletes adds the inlined deletions of Parquet rows made after
// lo (ducklake_inlined_delete_<table_id>: file_id, row_id,
// begin_snapshot; they have no end_snapshot) to their data files' objects.
func (u *undo) readInlinedDeletes() error {
	for name, cols := range u.cols {
		idStr, ok := strings.CutPrefix(name, "ducklake_inlined_delete_")
		tid, err := strconv.ParseInt(idStr, 10, 64)
		if !ok || err != nil || !slices.Contains(cols, "file_id") || !slices.Contains(cols, "begin_snapshot") {
			continue
		}
		rows, err := u.o.w.conn.QueryContext(u.o.ctx, fmt.Sprintf("SELECT file_id, min(begin_snapshot), max(begin_snapshot) FROM %s WHERE begin_snapshot > %d GROUP BY file_id", sqlquote.Ident(name), u.lo))
		if err != nil {
			return err
		}
		for rows.Next() {
			var fid, first, lastSnap int64
			if err := rows.Scan(&fid, &first, &lastSnap); err != nil {
				rows.Close()
				return err
			}
			ob := u.object(objKey{"file", strconv.FormatInt(fid, 10)}, sql.NullInt64{Int64: tid, Valid: true})
			u.mark(ob, first)
			u.mark(ob, lastSnap)
			u.inlDel[fid] = name
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	// Files deleted from inline before lo keep their table name too, for
	// copying their deletions when they are copied.
	return nil
}

func (u *undo) object(k objKey, parent sql.NullInt64) *object {
	ob := u.objs[k]
	if ob == nil {
		ob = &object{}
		u.objs[k] = ob
	}
	if parent.Valid {
		ob.parent = parent
	}
	return ob
}

// mark records that snapshot s changed ob: in the reverted range, or later.
func (u *undo) mark(ob *object, s int64) {
	slot := &ob.rev
	if s > u.hi {
		slot = &ob.later
	}
	if *slot == 0 || s < *slot {
		*slot = s
	}
}
