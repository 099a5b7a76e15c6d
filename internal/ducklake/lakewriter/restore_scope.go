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

// pickScope chooses the objects to take back — all that changed after lo
// (restore), or those the reverted snapshots changed (revert) — and
// refuses a revert whose objects later snapshots built on.
func (u *undo) pickScope() error {
	for k, ob := range u.objs {
		if ob.rev == 0 {
			continue
		}
		if k.grp == "macro" || strings.HasPrefix(k.grp, "other:") {
			return fmt.Errorf("%w: %s changed after snapshot %d, and fdl cannot take %s back yet", ErrUnsupportedFormat, u.describe(k, ob), u.lo, k.grp)
		}
		u.scope[k] = true
	}
	if !u.revert {
		return nil
	}
	var cs []Conflict
	for k := range u.scope {
		if ob := u.objs[k]; ob.later != 0 {
			cs = append(cs, Conflict{Object: u.describe(k, ob), Snapshot: ob.later, Why: fmt.Sprintf("changed by snapshot %d and again later", ob.rev)})
		}
	}
	more, err := u.containerConflicts()
	if err != nil {
		return err
	}
	cs = append(cs, more...)
	if more, err = u.columnConflicts(); err != nil {
		return err
	}
	cs = append(cs, more...)
	if len(cs) > 0 {
		slices.SortFunc(cs, func(a, b Conflict) int {
			if c := strings.Compare(a.Object, b.Object); c != 0 {
				return c
			}
			return int(a.Snapshot - b.Snapshot)
		})
		return &ConflictError{Conflicts: cs}
	}
	return nil
}

// children are the groups of objects a schema or a table holds.
var children = map[string][]string{
	"schema": {"table", "view", "macro"},
	"table":  {"column", "tag", "column_tag", "partition", "sort", "file", "inlined"},
}

// containerConflicts: a schema or table the reverted snapshots created
// (no row of it visible at lo) in which a later snapshot changed something.
func (u *undo) containerConflicts() ([]Conflict, error) {
	var cs []Conflict
	for k := range u.scope {
		kids, ok := children[k.grp]
		if !ok {
			continue
		}
		existed, err := u.visibleAt(k, u.lo)
		if err != nil {
			return nil, err
		}
		if existed {
			continue
		}
		id, _ := strconv.ParseInt(k.key, 10, 64)
		for ck, cob := range u.objs {
			if cob.later != 0 && cob.parent.Valid && cob.parent.Int64 == id && slices.Contains(kids, ck.grp) {
				cs = append(cs, Conflict{Object: u.describe(ck, cob), Snapshot: cob.later,
					Why: fmt.Sprintf("is in %s, which the reverted snapshots created; a later snapshot changed it", u.describe(k, u.objs[k]))})
			}
		}
	}
	return cs, nil
}

// columnConflicts: a column the reverted snapshots added, dropped or
// retyped, in a table a later snapshot wrote data to (that data was
// written for the columns they made).
func (u *undo) columnConflicts() ([]Conflict, error) {
	var cs []Conflict
	for k := range u.scope {
		if k.grp != "column" {
			continue
		}
		before, err := u.columnType(k.key, u.lo)
		if err != nil {
			return nil, err
		}
		after, err := u.columnType(k.key, u.hi)
		if err != nil {
			return nil, err
		}
		if before == after {
			continue // renamed, or its nullability changed: data is matched by column id
		}
		tid := u.objs[k].parent.Int64
		first := int64(0)
		if existed, err := u.visibleAt(objKey{"table", strconv.FormatInt(tid, 10)}, u.lo); err != nil {
			return nil, err
		} else if !existed {
			continue // a new table: containerConflicts speaks for it
		}
		for dk, dob := range u.objs {
			if (dk.grp == "file" || dk.grp == "inlined") && dob.later != 0 && dob.parent.Valid && dob.parent.Int64 == tid && (first == 0 || dob.later < first) {
				first = dob.later
			}
		}
		if first != 0 {
			cs = append(cs, Conflict{Object: u.describe(k, u.objs[k]), Snapshot: first,
				Why: "the reverted snapshots added, dropped or retyped it, and a later snapshot wrote data to its table"})
		}
	}
	return cs, nil
}

// columnType is a column's type at snapshot s ("" when it has none there).
func (u *undo) columnType(key string, s int64) (string, error) {
	var typ string
	err := u.o.queryRow(fmt.Sprintf("SELECT column_type FROM ducklake_column WHERE concat_ws('|', table_id::VARCHAR, column_id::VARCHAR) = ? AND %s",
		visibleAt("", s)), key).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return typ, err
}

// visibleAt is DuckLake's visibility rule at snapshot s (docs/spec.md §7).
func visibleAt(prefix string, s int64) string {
	return fmt.Sprintf("%[1]sbegin_snapshot <= %[2]d AND (%[1]send_snapshot IS NULL OR %[2]d < %[1]send_snapshot)", prefix, s)
}

// visibleAt reports whether a schema or table object has a row visible at s.
func (u *undo) visibleAt(k objKey, s int64) (bool, error) {
	table, col := "ducklake_schema", "schema_id"
	if k.grp == "table" {
		table, col = "ducklake_table", "table_id"
	}
	var n int
	err := u.o.queryRow(fmt.Sprintf("SELECT count(*) FROM %s WHERE %s::VARCHAR = ? AND %s", table, col, visibleAt("", s)), k.key).Scan(&n)
	return n > 0, err
}

// checkPartial refuses to take back a file that holds rows or deletions of
// snapshots on both sides of lo.
func (u *undo) checkPartial() error {
	var paths []string
	for k := range u.scope {
		if ob := u.objs[k]; k.grp == "file" && ob.partialLo {
			paths = append(paths, u.describe(k, ob))
		}
	}
	if len(paths) == 0 {
		return nil
	}
	slices.Sort(paths)
	return fmt.Errorf("%w: %s hold(s) rows or deletions of snapshots both up to %d and after it (merge_adjacent_files, flush_inlined_data, or two deletes from one data file wrote them); fdl does not rewrite Parquet files",
		ErrCannotRestore, strings.Join(paths, ", "), u.lo)
}

// describe names an object for people, from its newest row.
func (u *undo) describe(k objKey, ob *object) string {
	q := func(query string, args ...any) string {
		var s sql.NullString
		if err := u.o.queryRow(query, args...).Scan(&s); err != nil || !s.Valid {
			return ""
		}
		return s.String
	}
	tableName := func(id string) string {
		n := q(`SELECT '"' || replace(s.schema_name, '"', '""') || '"."' || replace(t.table_name, '"', '""') || '"' FROM ducklake_table t
			JOIN ducklake_schema s USING (schema_id) WHERE t.table_id::VARCHAR = ? ORDER BY t.begin_snapshot DESC, s.begin_snapshot DESC LIMIT 1`, id)
		if n == "" {
			return "table " + id
		}
		return "table " + n
	}
	parts := strings.Split(k.key, "|")
	switch k.grp {
	case "schema":
		return "schema " + sqlquote.Ident(q("SELECT schema_name FROM ducklake_schema WHERE schema_id::VARCHAR = ? ORDER BY begin_snapshot DESC LIMIT 1", k.key))
	case "table":
		return tableName(k.key)
	case "view":
		return "view " + sqlquote.Ident(q("SELECT view_name FROM ducklake_view WHERE view_id::VARCHAR = ? ORDER BY begin_snapshot DESC LIMIT 1", k.key))
	case "column", "column_tag":
		name := q("SELECT column_name FROM ducklake_column WHERE table_id::VARCHAR = ? AND column_id::VARCHAR = ? ORDER BY begin_snapshot DESC LIMIT 1", parts[0], parts[1])
		what := "column " + sqlquote.Ident(name) + " of " + tableName(parts[0])
		if k.grp == "column_tag" {
			return "tag " + sqlquote.Ident(parts[2]) + " of " + what
		}
		return what
	case "tag":
		return "tag " + sqlquote.Ident(parts[1]) + " of object " + parts[0]
	case "partition", "sort":
		return "the " + map[string]string{"partition": "partitioning", "sort": "sort order"}[k.grp] + " of " + tableName(parts[0])
	case "file":
		p := q("SELECT path FROM ducklake_data_file WHERE data_file_id::VARCHAR = ?", k.key)
		return fmt.Sprintf("data file %s of %s", p, tableName(strconv.FormatInt(ob.parent.Int64, 10)))
	case "inlined":
		return fmt.Sprintf("inlined row %s of %s", parts[1], tableName(parts[0]))
	}
	return k.grp + " " + k.key
}
