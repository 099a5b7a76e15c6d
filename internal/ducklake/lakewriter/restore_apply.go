package lakewriter

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// scopeTable is the temporary table holding the keys of the objects a
// restore or revert takes back.
const scopeTable = "__fdl_undo_scope"

// applyGeneric takes back every object in scope but data files: ends its
// rows begun after lo and copies its rows visible at lo and ended since.
// Schemas go first: a schema copied gets a new schema_id, which the tables
// and views copied with it then name.
func (u *undo) applyGeneric() error {
	o := u.o
	if err := o.exec("CREATE OR REPLACE TEMP TABLE " + scopeTable + "(grp VARCHAR, k VARCHAR)"); err != nil {
		return err
	}
	var vals []string
	for k := range u.scope {
		vals = append(vals, "("+sqlquote.String(k.grp)+", "+sqlquote.String(k.key)+")")
	}
	for len(vals) > 0 {
		n := min(len(vals), 1000)
		if err := o.exec("INSERT INTO " + scopeTable + " VALUES " + strings.Join(vals[:n], ", ")); err != nil {
			return err
		}
		vals = vals[n:]
	}
	if err := u.checkRecreatedSchemas(); err != nil {
		return err
	}
	remap, err := u.applySchemas()
	if err != nil {
		return err
	}
	for _, t := range u.tables {
		if t.grp == "schema" || t.grp == "file" || !u.inScope(t.grp) {
			continue
		}
		if err := u.applyTable(t, remap); err != nil {
			return err
		}
	}
	return nil
}

func (u *undo) inScope(grp string) bool {
	for k := range u.scope {
		if k.grp == grp {
			return true
		}
	}
	return false
}

// scoped is the condition that a row of t belongs to an object in scope.
func scoped(t vtable) string {
	return fmt.Sprintf("%s IN (SELECT k FROM %s WHERE grp = %s)", t.key, scopeTable, sqlquote.String(t.grp))
}

// ended and reopened are the conditions of the rows an undo ends (begun
// after lo, still open) and copies (visible at lo, ended since).
func (u *undo) ended(t vtable) string {
	return fmt.Sprintf("%s IS NULL AND %s > %d AND %s", t.end, t.begin, u.lo, scoped(t))
}

func (u *undo) reopened(t vtable) string {
	return fmt.Sprintf("%s <= %d AND %s > %d AND %s", t.begin, u.lo, t.end, u.lo, scoped(t))
}

// checkRecreatedSchemas refuses to bring a table back together with the
// schema it lies in when that schema was dropped since. The schema's copy
// needs a new schema_id (ducklake_schema.schema_id is a primary key) while
// the table keeps its table_id, so the table's rows would name two
// schemas. DuckLake's ducklake_expire_snapshots deletes an expired schema
// row on its own but a table's rows only once every row of its table_id
// expired (DuckLakeMetadataManager::DeleteSnapshots); the table's old row
// would then name a schema that no longer exists, and the extension fails
// to load the catalog at that old row's snapshots, which it reads for the
// inlined rows of older schema versions (GetBeginSnapshotForSchemaVersion).
func (u *undo) checkRecreatedSchemas() error {
	st, ok := u.vtable("ducklake_schema")
	tt, ok2 := u.vtable("ducklake_table")
	if !ok || !ok2 || !u.inScope("schema") || !u.inScope("table") {
		return nil
	}
	schemas, err := u.keys(st, u.reopened(st))
	if err != nil || len(schemas) == 0 {
		return err
	}
	recreated := map[int64]bool{}
	for _, k := range schemas {
		id, _ := strconv.ParseInt(k.key, 10, 64)
		recreated[id] = true
	}
	tables, err := u.keys(tt, u.reopened(tt))
	if err != nil {
		return err
	}
	var names []string
	for _, k := range tables {
		if !k.parent.Valid || !recreated[k.parent.Int64] {
			continue
		}
		var name string
		err := u.o.queryRow(`SELECT s.schema_name || '.' || t.table_name FROM ducklake_table t JOIN ducklake_schema s USING (schema_id)
			WHERE t.table_id::VARCHAR = ? AND `+visibleAt("t.", u.lo)+` AND `+visibleAt("s.", u.lo), k.key).Scan(&name)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return fmt.Errorf("%w: %s (as at snapshot %d): the schema's copy needs a new schema_id while the table keeps its table_id, and DuckLake's expire_snapshots would then leave the table's old rows naming a deleted schema; copy the table back with CREATE TABLE ... AS SELECT * FROM ... AT (VERSION => %d) instead, or take back to a state without it",
		ErrSchemaDropped, strings.Join(names, ", "), u.lo, u.lo)
}

// applySchemas ends and copies schemas; it returns the new schema_id of
// each schema copied.
func (u *undo) applySchemas() (map[int64]int64, error) {
	remap := map[int64]int64{}
	t, ok := u.vtable("ducklake_schema")
	if !ok || !u.inScope("schema") {
		return remap, nil
	}
	ids, err := u.keys(t, u.ended(t))
	if err != nil {
		return nil, err
	}
	if err := u.end(t); err != nil {
		return nil, err
	}
	for _, k := range ids {
		id, _ := strconv.ParseInt(k.key, 10, 64)
		u.o.changes.droppedSchemas = append(u.o.changes.droppedSchemas, id)
	}
	ids, err = u.keys(t, u.reopened(t))
	if err != nil {
		return nil, err
	}
	for _, k := range ids {
		old, _ := strconv.ParseInt(k.key, 10, 64)
		remap[old] = u.o.newCatalogID()
		n, err := u.copyRows(t, map[string]string{"schema_id": strconv.FormatInt(remap[old], 10)}, fmt.Sprintf("schema_id = %d AND %s", old, u.reopened(t)))
		if err != nil {
			return nil, err
		}
		u.res.Reopened += n
		var name string
		if err := u.o.queryRow("SELECT schema_name FROM ducklake_schema WHERE schema_id = ?", remap[old]).Scan(&name); err != nil {
			return nil, err
		}
		u.o.changes.createdSchemas = append(u.o.changes.createdSchemas, name)
	}
	return remap, nil
}

func (u *undo) vtable(name string) (vtable, bool) {
	for _, t := range u.tables {
		if t.name == name {
			return t, true
		}
	}
	return vtable{}, false
}

// keyParent is one row's object key and container.
type keyParent struct {
	key    string
	parent sql.NullInt64
}

// keys lists the object keys and containers of t's rows matching where.
func (u *undo) keys(t vtable, where string) ([]keyParent, error) {
	rows, err := u.o.w.conn.QueryContext(u.o.ctx, fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s", t.key, t.parent, sqlquote.Ident(t.name), where))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []keyParent
	for rows.Next() {
		var kp keyParent
		if err := rows.Scan(&kp.key, &kp.parent); err != nil {
			return nil, err
		}
		out = append(out, kp)
	}
	return out, rows.Err()
}

// end gives end_snapshot = the new snapshot to t's rows the undo ends.
func (u *undo) end(t vtable) error {
	r, err := u.o.w.conn.ExecContext(u.o.ctx, fmt.Sprintf("UPDATE %s SET %s = %d WHERE %s", sqlquote.Ident(t.name), t.end, u.o.id, u.ended(t)))
	if err != nil {
		return fmt.Errorf("end rows of %s: %w", t.name, err)
	}
	n, _ := r.RowsAffected()
	u.res.Ended += n
	return nil
}

// copyRows copies t's rows matching where with begin_snapshot = the new
// snapshot, no end_snapshot, and the columns in subst set to those SQL
// expressions.
func (u *undo) copyRows(t vtable, subst map[string]string, where string) (int64, error) {
	return u.copyTable(t.name, t.begin, t.end, subst, where)
}

func (u *undo) copyTable(table, begin, end string, subst map[string]string, where string) (int64, error) {
	var names, exprs []string
	for _, c := range u.cols[table] {
		q := sqlquote.Ident(c)
		names = append(names, q)
		switch {
		case subst[c] != "":
			exprs = append(exprs, subst[c])
		case q == begin:
			exprs = append(exprs, strconv.FormatInt(u.o.id, 10))
		case q == end:
			exprs = append(exprs, "NULL")
		default:
			exprs = append(exprs, q)
		}
	}
	r, err := u.o.w.conn.ExecContext(u.o.ctx, fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s",
		sqlquote.Ident(table), strings.Join(names, ", "), strings.Join(exprs, ", "), sqlquote.Ident(table), where))
	if err != nil {
		return 0, fmt.Errorf("copy rows of %s: %w", table, err)
	}
	return r.RowsAffected()
}

// applyTable takes back the objects in scope of one versioned table (not
// schemas or files) and records what changed for changes_made.
func (u *undo) applyTable(t vtable, remap map[int64]int64) error {
	gone, err := u.keys(t, u.ended(t))
	if err != nil {
		return err
	}
	back, err := u.keys(t, u.reopened(t))
	if err != nil {
		return err
	}
	if err := u.end(t); err != nil {
		return err
	}
	subst := map[string]string{}
	if (t.grp == "table" || t.grp == "view") && len(remap) > 0 {
		var when []string
		for old, id := range remap {
			when = append(when, fmt.Sprintf("WHEN %d THEN %d", old, id))
		}
		subst["schema_id"] = "CASE schema_id " + strings.Join(when, " ") + " ELSE schema_id END"
	}
	n, err := u.copyRows(t, subst, u.reopened(t))
	if err != nil {
		return err
	}
	u.res.Reopened += n
	return u.record(t, gone, back)
}

// record notes for changes_made, the schema version and the statistics
// what applyTable did.
func (u *undo) record(t vtable, gone, back []keyParent) error {
	ch := &u.o.changes
	ids := func(kps []keyParent) map[int64]bool {
		m := map[int64]bool{}
		for _, kp := range kps {
			id, err := strconv.ParseInt(kp.key, 10, 64)
			if err == nil {
				m[id] = true
			}
		}
		return m
	}
	switch t.grp {
	case "table", "view":
		g, b := ids(gone), ids(back)
		for id := range g {
			if !b[id] {
				if t.grp == "table" {
					ch.droppedTables = append(ch.droppedTables, id)
				} else {
					ch.droppedViews = append(ch.droppedViews, id)
				}
			}
			u.touched[id] = t.grp == "table"
		}
		for id := range b {
			name, err := u.liveName(t.grp, id)
			if err != nil {
				return err
			}
			if t.grp == "table" {
				ch.createdTables = append(ch.createdTables, name)
				u.touched[id] = true
			} else {
				ch.createdViews = append(ch.createdViews, name)
			}
		}
	case "inlined":
		if len(gone) > 0 {
			ch.inlinedDelete = append(ch.inlinedDelete, t.tid)
			u.dataTabs[t.tid] = true
		}
		if len(back) > 0 {
			ch.inlinedInsert = append(ch.inlinedInsert, t.tid)
			u.dataTabs[t.tid] = true
		}
	default: // column, tag, column_tag, partition, sort
		for _, kp := range append(gone, back...) {
			if kp.parent.Valid {
				ch.alteredTables = append(ch.alteredTables, kp.parent.Int64)
				u.touched[kp.parent.Int64] = u.touched[kp.parent.Int64] || t.grp != "tag"
			}
		}
	}
	return nil
}

// liveName is `"schema"."name"` of a table or view as the new snapshot has it.
func (u *undo) liveName(grp string, id int64) (string, error) {
	table, idCol, nameCol := "ducklake_table", "table_id", "table_name"
	if grp == "view" {
		table, idCol, nameCol = "ducklake_view", "view_id", "view_name"
	}
	var schema, name string
	err := u.o.queryRow(fmt.Sprintf(`SELECT s.schema_name, t.%s FROM %s t JOIN ducklake_schema s ON s.schema_id = t.schema_id AND s.end_snapshot IS NULL
		WHERE t.%s = ? AND t.end_snapshot IS NULL`, nameCol, table, idCol), id).Scan(&schema, &name)
	if errors.Is(err, sql.ErrNoRows) {
		k := objKey{grp, strconv.FormatInt(id, 10)}
		return "", &ConflictError{Conflicts: []Conflict{{Object: u.describe(k, &object{}), Why: "would come back without its schema (a later snapshot dropped the schema)"}}}
	}
	return sqlquote.Ident(schema) + "." + sqlquote.Ident(name), err
}

// fileCopy is a data file an undo ended or copied, for the statistics.
type fileCopy struct {
	table, id          int64 // id: the copy's data_file_id (0 for an ended file)
	records, sizeBytes int64
}

// applyFiles takes back each data file in scope with its delete files and
// inlined deletions.
func (u *undo) applyFiles() error {
	var ids []int64
	for k := range u.scope {
		if k.grp == "file" {
			id, _ := strconv.ParseInt(k.key, 10, 64)
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := u.applyFile(id); err != nil {
			return err
		}
	}
	return nil
}

// fileRow is the one ducklake_data_file row of an id.
type dataRow struct {
	table, begin       int64
	end                sql.NullInt64
	records, sizeBytes int64
}

func (u *undo) applyFile(id int64) error {
	var d dataRow
	err := u.o.queryRow("SELECT table_id, begin_snapshot, end_snapshot, coalesce(record_count, 0), coalesce(file_size_bytes, 0) FROM ducklake_data_file WHERE data_file_id = ?", id).
		Scan(&d.table, &d.begin, &d.end, &d.records, &d.sizeBytes)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // its row is gone (compacted away): nothing to take back
	}
	if err != nil {
		return err
	}
	atLo := d.begin <= u.lo && (!d.end.Valid || d.end.Int64 > u.lo)
	keep := atLo && !d.end.Valid && u.inlDel[id] == ""
	u.dataTabs[d.table] = true
	ch := &u.o.changes
	if keep {
		// The data file stays: only its delete files go back.
		ch.deletedFrom = append(ch.deletedFrom, d.table)
		ch.insertedInto = append(ch.insertedInto, d.table)
		return u.restoreDeletes(id, id)
	}
	if !d.end.Valid {
		if err := u.endFile(id); err != nil {
			return err
		}
		ch.deletedFrom = append(ch.deletedFrom, d.table)
		u.endedFiles = append(u.endedFiles, fileCopy{table: d.table, records: d.records, sizeBytes: d.sizeBytes})
	}
	if !atLo {
		return nil
	}
	return u.copyFile(id, d)
}
