package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// Violation codes of CheckInvariants (stable; fdl verify prefixes them
// with "catalog-").
const (
	// ViolationTableSchema: a table or view names a schema_id no
	// ducklake_schema row has.
	ViolationTableSchema = "table-schema"
	// ViolationColumnTable: a column names a table_id no ducklake_table row
	// has.
	ViolationColumnTable = "column-table"
	// ViolationFileTable: a data or delete file names a table_id no
	// ducklake_table row has.
	ViolationFileTable = "file-table"
	// ViolationEndBeforeBegin: a closed row has end_snapshot <= begin_snapshot.
	ViolationEndBeforeBegin = "end-before-begin"
	// ViolationSnapshotGap: snapshot ids are not 0, 1, 2, … without gaps.
	// It is a note (Violation.Note), not a fault: DuckLake's own
	// ducklake_expire_snapshots deletes snapshot rows and leaves gaps.
	ViolationSnapshotGap = "snapshot-gap"
	// ViolationCounter: the last snapshot's next_catalog_id or next_file_id
	// does not exceed every id used.
	ViolationCounter = "counter"
)

// Violation is one broken catalog invariant.
type Violation struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Note marks a finding a catalog written by the ducklake extension can
	// legitimately have (snapshot ids removed by ducklake_expire_snapshots):
	// reported, not a fault.
	Note bool `json:"note,omitempty"`
}

// CheckInvariants checks the catalog invariants of docs/spec.md §5.1 over every
// row, whatever its snapshots (DuckLake spec: ducklake_snapshot,
// ducklake_schema, ducklake_table, ducklake_view, ducklake_column,
// ducklake_data_file, ducklake_delete_file):
//
//   - every table's and view's schema_id exists in ducklake_schema;
//   - every column's table_id exists in ducklake_table;
//   - every data and delete file's table_id exists in ducklake_table;
//   - every closed row of a ducklake_* table with begin_snapshot and
//     end_snapshot columns (inlined-data tables included) has
//     end_snapshot > begin_snapshot;
//   - snapshot ids are 0, 1, 2, … without gaps (a gap is a Note: DuckLake's
//     ducklake_expire_snapshots removes snapshot rows, so the extension
//     itself makes catalogs with gaps);
//   - the last snapshot's next_catalog_id exceeds every schema_id, table_id
//     and view_id, and its next_file_id every data_file_id and
//     delete_file_id.
//
// Tables or columns a format lacks are skipped. It returns the violations
// found (empty when none); the error is for a catalog it could not query.
func (c *Catalog) CheckInvariants(ctx context.Context) ([]Violation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	k := &invariantCheck{c: c, out: []Violation{}}
	for _, check := range []func(context.Context) error{k.references, k.closedRows, k.snapshotIDs, k.counters} {
		if err := check(ctx); err != nil {
			return nil, fmt.Errorf("check invariants of %s: %w", c.path, err)
		}
	}
	return k.out, nil
}

// invariantCheck is one run of CheckInvariants.
type invariantCheck struct {
	c         *Catalog
	out       []Violation
	snapshots int64 // rows of ducklake_snapshot (snapshotIDs)
}

func (k *invariantCheck) add(code, format string, a ...any) {
	k.out = append(k.out, Violation{Code: code, Message: fmt.Sprintf(format, a...)})
}

// count runs a query returning a count and an example.
func (k *invariantCheck) count(ctx context.Context, q string) (int64, string, error) {
	var n int64
	var example sql.NullString
	err := k.c.conn.QueryRowContext(ctx, q).Scan(&n, &example)
	return n, example.String, err
}

// references: every table's and view's schema, every column's table and
// every file's table exists.
func (k *invariantCheck) references(ctx context.Context) error {
	c := k.c
	for _, r := range []struct {
		code, table, idCol, refCol, target, targetCol, what string
	}{
		{ViolationTableSchema, "ducklake_table", "table_id", "schema_id", "ducklake_schema", "schema_id", "table"},
		{ViolationTableSchema, "ducklake_view", "view_id", "schema_id", "ducklake_schema", "schema_id", "view"},
		{ViolationColumnTable, "ducklake_column", "column_id", "table_id", "ducklake_table", "table_id", "column"},
		{ViolationFileTable, "ducklake_data_file", "data_file_id", "table_id", "ducklake_table", "table_id", "data file"},
		{ViolationFileTable, "ducklake_delete_file", "delete_file_id", "table_id", "ducklake_table", "table_id", "delete file"},
	} {
		if !c.has(r.table, r.idCol, r.refCol) || !c.has(r.target, r.targetCol) {
			continue
		}
		n, ex, err := k.count(ctx, fmt.Sprintf(`SELECT count(*), min(x.%[1]s::VARCHAR || ' (' || x.%[2]s::VARCHAR || ')') FROM %[3]s x
			WHERE NOT EXISTS (SELECT 1 FROM %[4]s y WHERE y.%[5]s = x.%[2]s)`,
			sqlquote.Ident(r.idCol), sqlquote.Ident(r.refCol), c.t(r.table), c.t(r.target), sqlquote.Ident(r.targetCol)))
		if err != nil {
			return err
		}
		if n > 0 {
			k.add(r.code, "%d %s row(s) in %s name a %s that %s does not have (e.g. %s %s)", n, r.what, r.table, r.refCol, r.target, r.idCol, ex)
		}
	}
	return nil
}

// closedRows: every closed row of a ducklake_* table ends after it begins.
func (k *invariantCheck) closedRows(ctx context.Context) error {
	c := k.c
	tables := make([]string, 0, len(c.tables))
	for t := range c.tables {
		tables = append(tables, t)
	}
	slices.Sort(tables)
	for _, t := range tables {
		if !strings.HasPrefix(t, "ducklake_") {
			continue
		}
		begin, end := "begin_snapshot", "end_snapshot"
		if inlinedDataRE.MatchString(t) {
			// The metadata columns as the catalog's format names them (from
			// 1.1 on a user column may be called begin_snapshot).
			var ok bool
			if begin, end, ok = c.inlinedSnapshotColumns(c.tables[t]); !ok {
				continue
			}
		} else if !c.has(t, begin, end) {
			continue
		}
		n, ex, err := k.count(ctx, fmt.Sprintf(`SELECT count(*), min(%[2]s::VARCHAR || '..' || %[3]s::VARCHAR) FROM %[1]s
			WHERE %[3]s IS NOT NULL AND %[3]s <= %[2]s`, c.t(t), sqlquote.Ident(begin), sqlquote.Ident(end)))
		if err != nil {
			return err
		}
		if n > 0 {
			k.add(ViolationEndBeforeBegin, "%d row(s) of %s have end_snapshot <= begin_snapshot (e.g. %s)", n, t, ex)
		}
	}
	return nil
}

// snapshotIDs: snapshot ids are 0, 1, 2, … (a gap is a note).
func (k *invariantCheck) snapshotIDs(ctx context.Context) error {
	c := k.c
	var n, lo, hi sql.NullInt64
	if err := c.conn.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*), min(snapshot_id), max(snapshot_id) FROM %s", c.t("ducklake_snapshot"))).Scan(&n, &lo, &hi); err != nil {
		return err
	}
	k.snapshots = n.Int64
	if n.Int64 == 0 || (lo.Int64 == 0 && hi.Int64 == n.Int64-1) {
		return nil
	}
	var gap sql.NullInt64
	c.conn.QueryRowContext(ctx, fmt.Sprintf(`SELECT min(s.snapshot_id + 1) FROM %[1]s s
		WHERE s.snapshot_id + 1 <= (SELECT max(snapshot_id) FROM %[1]s)
		AND NOT EXISTS (SELECT 1 FROM %[1]s t WHERE t.snapshot_id = s.snapshot_id + 1)`, c.t("ducklake_snapshot"))).Scan(&gap)
	where := fmt.Sprintf("first missing id %d", gap.Int64)
	if lo.Int64 != 0 {
		where = fmt.Sprintf("the first id is %d", lo.Int64)
	}
	k.out = append(k.out, Violation{Code: ViolationSnapshotGap, Note: true, Message: fmt.Sprintf(
		"%d snapshot(s) with ids %d..%d are not 0, 1, 2, … without gaps (%s): snapshots were expired (ducklake_expire_snapshots) or removed; time travel to a missing snapshot is not possible",
		n.Int64, lo.Int64, hi.Int64, where)})
	return nil
}

// counters: the last snapshot's next_catalog_id and next_file_id exceed
// every id used.
func (k *invariantCheck) counters(ctx context.Context) error {
	c := k.c
	for _, ct := range []struct {
		counter string
		ids     [][2]string // table, id column
	}{
		{"next_catalog_id", [][2]string{{"ducklake_schema", "schema_id"}, {"ducklake_table", "table_id"}, {"ducklake_view", "view_id"}}},
		{"next_file_id", [][2]string{{"ducklake_data_file", "data_file_id"}, {"ducklake_delete_file", "delete_file_id"}}},
	} {
		if !c.has("ducklake_snapshot", ct.counter) || k.snapshots == 0 {
			continue
		}
		var next sql.NullInt64
		if err := c.conn.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM %s ORDER BY snapshot_id DESC LIMIT 1", sqlquote.Ident(ct.counter), c.t("ducklake_snapshot"))).Scan(&next); err != nil {
			return err
		}
		for _, ti := range ct.ids {
			if !c.has(ti[0], ti[1]) {
				continue
			}
			var used sql.NullInt64
			if err := c.conn.QueryRowContext(ctx, fmt.Sprintf("SELECT max(%s) FROM %s", sqlquote.Ident(ti[1]), c.t(ti[0]))).Scan(&used); err != nil {
				return err
			}
			if used.Valid && (!next.Valid || next.Int64 <= used.Int64) {
				k.add(ViolationCounter, "the last snapshot's %s is %s, but %s uses %s %d", ct.counter, nullString(next), ti[0], ti[1], used.Int64)
			}
		}
	}
	return nil
}

func nullString(v sql.NullInt64) string {
	if !v.Valid {
		return "NULL"
	}
	return fmt.Sprint(v.Int64)
}
