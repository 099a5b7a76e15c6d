package lakewriter

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// applyStats keeps ducklake_table_stats and ducklake_table_column_stats
// true for the snapshot written: record counts and bytes grow with the
// data files copied (as DuckLake's own inserts move them) and do not
// shrink with the data files ended, and every column's min, max, null and
// NaN flags widen to cover the rows that came back
// (DuckLakeColumnStats::MergeStats). Statistics are never narrowed: the
// extension prunes files and whole scans with them, so they must cover
// every visible row. Counts are never lowered: DuckDB 1.5.5's own DELETE
// that ends a whole data file leaves them as they were, and its reader
// takes a table whose record_count equals its visible rows for one whose
// column statistics are exact, and answers max() and min() from them — a
// count lowered beside statistics left wide gave max() of a reverted
// insert's value (TestScripts/hardening, docs/spec.md §21).
func (u *undo) applyStats() error {
	delta := map[int64][2]int64{} // table -> records, bytes
	for _, f := range u.copiedFiles {
		d := delta[f.table]
		delta[f.table] = [2]int64{d[0] + f.records, d[1] + f.sizeBytes}
	}
	tids := make([]int64, 0, len(delta))
	for tid := range delta {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	for _, tid := range tids {
		if err := u.tableStats(tid, delta[tid]); err != nil {
			return err
		}
	}
	for _, f := range u.copiedFiles {
		if err := u.widenFromFile(f); err != nil {
			return err
		}
	}
	for tid := range u.dataTabs {
		for _, t := range u.inlinedCopies(tid) {
			if err := u.widenFromInlined(tid, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// tableStats moves a table's ducklake_table_stats row by delta (records,
// bytes), or writes one for a table whose data came back without it.
func (u *undo) tableStats(tid int64, delta [2]int64) error {
	st, err := u.o.tableStats(tid)
	if err != nil {
		return err
	}
	var next int64
	if err := u.o.queryRow("SELECT coalesce(max(row_id_start + record_count), 0) FROM ducklake_data_file WHERE table_id = ?", tid).Scan(&next); err != nil {
		return err
	}
	if !st.exists {
		if delta[0] <= 0 && delta[1] <= 0 {
			return nil
		}
		return u.o.exec(fmt.Sprintf("INSERT INTO ducklake_table_stats (table_id, record_count, next_row_id, file_size_bytes) VALUES (%d, %d, %d, %d)",
			tid, max(delta[0], 0), next, max(delta[1], 0)))
	}
	return u.o.exec(fmt.Sprintf("UPDATE ducklake_table_stats SET record_count = %d, file_size_bytes = %d, next_row_id = %d WHERE table_id = %d",
		max(st.recordCount+delta[0], 0), max(st.fsSize+delta[1], 0), max(st.nextRowID, next), tid))
}

// widenFromFile widens a table's column statistics by a copied file's.
func (u *undo) widenFromFile(f fileCopy) error {
	rows, err := u.o.w.conn.QueryContext(u.o.ctx, "SELECT column_id, null_count, contains_nan, min_value, max_value FROM ducklake_file_column_stats WHERE data_file_id = ?", f.id)
	if err != nil {
		return err
	}
	type stat struct {
		col int64
		g   globalColStats
	}
	var stats []stat
	for rows.Next() {
		var s stat
		var nulls sql.NullInt64
		var nan sql.NullBool
		var mn, mx sql.NullString
		if err := rows.Scan(&s.col, &nulls, &nan, &mn, &mx); err != nil {
			rows.Close()
			return err
		}
		s.g = globalColStats{nullKnown: nulls.Valid, containsNull: nulls.Int64 > 0, nanKnown: nan.Valid, containsNaN: nan.Bool,
			hasMin: mn.Valid, min: mn.String, hasMax: mx.Valid, max: mx.String}
		stats = append(stats, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range stats {
		if err := u.widen(f.table, s.col, s.g); err != nil {
			return err
		}
	}
	return nil
}

// widenFromInlined widens a table's column statistics by the inlined rows
// copied into one of its inlined-data tables (its user columns named as
// the table's columns were at that table's schema version).
func (u *undo) widenFromInlined(tid int64, t vtable) error {
	its, err := u.o.inlinedTables(tableInfo{id: tid})
	if err != nil {
		return fmt.Errorf("statistics of the inlined rows of table %d: %w", tid, err)
	}
	for _, it := range its {
		if it.name != t.name {
			continue
		}
		var cols []column
		for i, name := range it.physical {
			var typ string
			err := u.o.queryRow("SELECT column_type FROM ducklake_column WHERE table_id = ? AND column_id = ? AND end_snapshot IS NULL", tid, it.columnIDs[i]).Scan(&typ)
			if errors.Is(err, sql.ErrNoRows) {
				continue // the column is gone: no statistics to keep
			}
			if err != nil {
				return err
			}
			cols = append(cols, column{id: it.columnIDs[i], name: name, typ: typ})
		}
		stats, err := u.o.inlinedStats(cols, fmt.Sprintf("(SELECT * FROM %s WHERE %s = %d)", sqlquote.Ident(it.name), t.begin, u.o.id))
		if err != nil {
			return err
		}
		for _, c := range cols {
			if err := u.widen(tid, c.id, stats[c.id]); err != nil {
				return err
			}
		}
	}
	return nil
}

// widen merges g into a live column's ducklake_table_column_stats row (a
// column without one keeps none, as in the extension).
func (u *undo) widen(tid, cid int64, g globalColStats) error {
	var typ string
	err := u.o.queryRow("SELECT column_type FROM ducklake_column WHERE table_id = ? AND column_id = ? AND end_snapshot IS NULL", tid, cid).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	old, found, err := u.o.globalColumnStats(tid, cid)
	if err != nil || !found {
		return err
	}
	m, err := u.o.merge(typ, old, g)
	if err != nil {
		return err
	}
	return u.o.setGlobalColumnStats(tid, cid, m)
}

// applySchemaVersion bumps schema_version when a definition changed, with
// a per-table schema version (DuckLake 0.4+) and a new inlined-data table
// for each live table whose definition changed, as DuckLake does after a
// CREATE or ALTER.
func (u *undo) applySchemaVersion() error {
	ch := u.o.changes
	if len(ch.createdSchemas)+len(ch.droppedSchemas)+len(ch.createdTables)+len(ch.droppedTables)+
		len(ch.createdViews)+len(ch.droppedViews)+len(ch.alteredTables) == 0 {
		return nil
	}
	if err := u.o.bumpSchema(); err != nil {
		return err
	}
	var tids []int64
	for tid, def := range u.touched {
		if def {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	for _, tid := range tids {
		var sid int64
		err := u.o.queryRow("SELECT schema_id FROM ducklake_table WHERE table_id = ? AND end_snapshot IS NULL", tid).Scan(&sid)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		if err := u.o.tableSchemaVersion(tid); err != nil {
			return err
		}
		if err := u.o.schemaChangedInlining(sid, tid); err != nil && !errors.Is(err, ErrUnsupportedFormat) {
			return err
		}
	}
	return nil
}

// catalogRules are queries for the rules a catalog's live state keeps,
// each over the rows a visibility condition ({V}, per table alias) admits;
// each returns descriptions of what breaks it.
var catalogRules = []string{
	`SELECT 'two schemas are named "' || schema_name || '"' FROM ducklake_schema s WHERE {V:s} GROUP BY schema_name HAVING count(*) > 1`,
	`SELECT 'two tables or views of schema ' || x.schema_id || ' are named "' || x.n || '"' FROM (
		SELECT schema_id, table_name AS n FROM ducklake_table t WHERE {V:t} UNION ALL SELECT schema_id, view_name FROM ducklake_view v WHERE {V:v}) x
		GROUP BY x.schema_id, x.n HAVING count(*) > 1`,
	`SELECT 'two columns of table ' || table_id || ' are named "' || column_name || '"' FROM ducklake_column c WHERE {V:c}
		GROUP BY table_id, parent_column, column_name HAVING count(*) > 1`,
	`SELECT 'table "' || t.table_name || '" is in a schema that is gone' FROM ducklake_table t WHERE {V:t}
		AND NOT EXISTS (SELECT 1 FROM ducklake_schema s WHERE s.schema_id = t.schema_id AND {V:s})`,
	`SELECT 'view "' || v.view_name || '" is in a schema that is gone' FROM ducklake_view v WHERE {V:v}
		AND NOT EXISTS (SELECT 1 FROM ducklake_schema s WHERE s.schema_id = v.schema_id AND {V:s})`,
	`SELECT 'column "' || c.column_name || '" belongs to table ' || c.table_id || ', which is gone' FROM ducklake_column c WHERE {V:c}
		AND NOT EXISTS (SELECT 1 FROM ducklake_table t WHERE t.table_id = c.table_id AND {V:t})`,
	`SELECT 'data file ' || f.path || ' belongs to table ' || f.table_id || ', which is gone' FROM ducklake_data_file f WHERE {V:f}
		AND NOT EXISTS (SELECT 1 FROM ducklake_table t WHERE t.table_id = f.table_id AND {V:t})`,
}

// validate refuses a snapshot whose state breaks a rule that the state
// before it kept: two objects of one name, or an object whose schema or
// table is gone.
func (u *undo) validate() error {
	var cs []Conflict
	for _, rule := range catalogRules {
		before, err := u.ruleFindings(rule, func(a string) string { return visibleAt(a+".", u.last) })
		if err != nil {
			return err
		}
		after, err := u.ruleFindings(rule, func(a string) string { return a + ".end_snapshot IS NULL" })
		if err != nil {
			return err
		}
		for _, f := range after {
			if !slices.Contains(before, f) {
				cs = append(cs, Conflict{Object: "the result", Why: f})
			}
		}
	}
	if len(cs) > 0 {
		return &ConflictError{Conflicts: cs}
	}
	return nil
}

func (u *undo) ruleFindings(rule string, vis func(alias string) string) ([]string, error) {
	q := rule
	for _, a := range []string{"s", "t", "v", "c", "f"} {
		q = strings.ReplaceAll(q, "{V:"+a+"}", vis(a))
	}
	rows, err := u.o.w.conn.QueryContext(u.o.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check the result: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
