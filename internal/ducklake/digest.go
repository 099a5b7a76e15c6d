package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// Digests of the metadata rows visible at a snapshot (docs/spec.md §24):
// what a version published at its last snapshot S, recorded in its
// dataset.json, and what a later catalog must still show at S.

// digestSkipped are the metadata tables no digest covers, because DuckLake
// updates them in place as it writes after any snapshot: settings
// (ducklake_metadata; data_path and the format are in the record), the
// running totals (ducklake_table_stats, ducklake_table_column_stats), the
// maintenance queue (ducklake_files_scheduled_for_deletion, checked by
// commit's own rule, docs/spec.md §9) and the registrations of inlined-data
// tables (ducklake_inlined_data_tables: the rows of those tables are
// compared).
var digestSkipped = map[string]bool{
	"ducklake_metadata": true, "ducklake_table_stats": true, "ducklake_table_column_stats": true,
	"ducklake_files_scheduled_for_deletion": true, "ducklake_inlined_data_tables": true,
}

// digestParents maps a key column of a metadata table without snapshot
// columns to the table whose rows carry the visibility of that key: a row
// of the child is visible at S when some row of the parent with the same
// key is.
var digestParents = []struct{ key, parent string }{
	{"data_file_id", "ducklake_data_file"},
	{"partition_id", "ducklake_partition_info"},
	{"mapping_id", "ducklake_data_file"},
	{"macro_id", "ducklake_macro"},
	{"sort_id", "ducklake_sort_info"},
}

// digestPlan is how one physical table is digested.
type digestPlan struct {
	table string   // physical table
	key   string   // name in RowDigests.Tables
	cols  []string // columns hashed, sorted by name
	types map[string]string
	// vis returns the SQL condition "visible at s" over the row (alias r)
	// and the parent flags (alias p, column v<i> for snapshot i).
	vis func(i int, s int64) string
	// parent, when set, is the key column and the parent table.
	parentKey, parent string
	group             string // SQL of the group (table id), "" for none
}

// RowDigests returns the digests of the catalog's metadata rows visible at
// each snapshot of at (docs/spec.md §24), in that order, reading each
// metadata table once for all of them. Each digest's Respread lists the
// DuckLake tables whose files visible at that snapshot DuckLake's
// maintenance rewrote after it (meta.RowDigests). It is the digest
// commit and push compare (and an incremental SQLite commit can), for both
// kinds of catalog alike: a SQLite catalog is read with the types of the
// DuckDB form (Open), so both give the same digest. Its cost is one scan
// of each table (docs/performance.md).
// It returns nil (no error) for a catalog whose ducklake_snapshot has no
// next_file_id (formats before 0.2): such catalogs are not digested.
// Errors: a snapshot of at the catalog does not hold; DuckDB's.
func (c *Catalog) RowDigests(ctx context.Context, at ...int64) ([]*meta.RowDigests, error) {
	return c.RowDigestsOf(ctx, nil, at...)
}

// RowDigestsOf is RowDigests restricted to the physical tables named in
// tables (all when nil): what an incremental SQLite commit compares for
// the big tables only (ducklake_data_file, ducklake_file_column_stats…)
// reads only those. Inlined-data tables are named by their own names.
func (c *Catalog) RowDigestsOf(ctx context.Context, tables []string, at ...int64) ([]*meta.RowDigests, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	if !c.has("ducklake_snapshot", "next_file_id") || len(at) == 0 {
		return nil, nil
	}
	var check string
	if err := c.conn.QueryRowContext(ctx, hashCheckSQL).Scan(&check); err != nil {
		return nil, err
	}
	out := make([]*meta.RowDigests, len(at))
	for i, s := range at {
		out[i] = &meta.RowDigests{Encoding: meta.DigestEncoding, HashCheck: check, Snapshot: s, Format: c.format, Tables: map[string]meta.TableDigest{}}
		resp, err := c.respread(ctx, s)
		if err != nil {
			return nil, err
		}
		out[i].Respread = resp
	}
	plans, err := c.digestPlans(ctx)
	if err != nil {
		return nil, err
	}
	var sel []digestPlan
	for _, p := range plans {
		if tables == nil || slices.Contains(tables, p.table) {
			sel = append(sel, p)
		}
	}
	return out, c.digestTables(ctx, sel, at, out)
}

// respread returns the DuckLake table ids with a data or delete file
// visible at s whose id is at or past next_file_id of snapshot s: a file
// written after s that holds rows (or deletes) of s, which only DuckLake's
// maintenance writes (merges, flushes of inlined data, rewrites).
func (c *Catalog) respread(ctx context.Context, s int64) ([]int64, error) {
	var next sql.NullInt64
	err := c.conn.QueryRowContext(ctx, fmt.Sprintf("SELECT next_file_id FROM %s WHERE snapshot_id = %d", c.t("ducklake_snapshot"), s)).Scan(&next)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%s holds no snapshot %d", c.path, s)
	}
	if err != nil || !next.Valid {
		return nil, err
	}
	var parts []string
	for table, id := range map[string]string{dataFileTable: "data_file_id", deleteFileTable: "delete_file_id"} {
		if c.has(table, id) {
			parts = append(parts, fmt.Sprintf("SELECT table_id FROM %s WHERE %s AND %s >= %d", c.t(table), visible("", s), id, next.Int64))
		}
	}
	var ids []int64
	err = c.query(ctx, "SELECT DISTINCT table_id FROM ("+strings.Join(parts, " UNION ALL ")+") ORDER BY 1", func(r *sql.Rows) error {
		var id int64
		if err := r.Scan(&id); err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	return ids, err
}

// digestPlans decides, for every table the catalog has, how its rows are
// digested (docs/spec.md §24), reading the columns and their types.
func (c *Catalog) digestPlans(ctx context.Context) ([]digestPlan, error) {
	types := map[string]map[string]string{}
	err := c.query(ctx, fmt.Sprintf(`SELECT table_name, column_name, data_type FROM duckdb_columns()
		WHERE database_name = %s AND schema_name = %s`, sqlquote.String(c.attachedAs()), sqlquote.String(c.schema)), func(r *sql.Rows) error {
		var t, col, typ string
		if err := r.Scan(&t, &col, &typ); err != nil {
			return err
		}
		if types[t] == nil {
			types[t] = map[string]string{}
		}
		types[t][col] = typ
		return nil
	})
	if err != nil {
		return nil, err
	}
	inlined := map[string]int64{}
	if c.has("ducklake_inlined_data_tables") {
		regs, err := c.inlinedRegistrations(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range regs {
			inlined[r.name] = r.tid
		}
	}
	names := make([]string, 0, len(c.tables))
	for t := range c.tables {
		names = append(names, t)
	}
	slices.Sort(names)
	var plans []digestPlan
	for _, t := range names {
		if p, ok := c.digestPlan(t, types[t], inlined); ok {
			plans = append(plans, p)
		}
	}
	return plans, nil
}

// digestPlan is the plan of table t (columns and types cols), false for a
// table no digest covers.
func (c *Catalog) digestPlan(t string, cols map[string]string, inlined map[string]int64) (digestPlan, bool) {
	p := digestPlan{table: t, key: t, types: cols}
	begin, end := "begin_snapshot", "end_snapshot"
	switch {
	case digestSkipped[t] || !strings.HasPrefix(t, "ducklake_"):
		return p, false
	case inlinedDataRE.MatchString(t) || strings.HasPrefix(t, inlinedDeletePrefix):
		tid, ok := inlined[t]
		if !ok { // an inlined-delete table, or an unregistered one: the id in its name
			f := strings.Split(strings.TrimPrefix(strings.TrimPrefix(t, inlinedDataPrefix), inlinedDeletePrefix), "_")
			tid, _ = strconv.ParseInt(f[0], 10, 64)
		}
		p.key, p.group = "ducklake_inlined_data", strconv.FormatInt(tid, 10)
		if strings.HasPrefix(t, inlinedDeletePrefix) {
			p.key = "ducklake_inlined_delete"
		}
		if prefixedInlined(c.format) {
			begin, end = "_ducklake_begin_snapshot", "_ducklake_end_snapshot"
		}
	case t == "ducklake_snapshot" || t == "ducklake_snapshot_changes":
		p.vis = func(_ int, s int64) string { return fmt.Sprintf("r.snapshot_id = %d", s) }
	}
	if p.group == "" && cols["table_id"] != "" {
		p.group = "r.table_id"
	}
	for col := range cols {
		if col != end {
			p.cols = append(p.cols, col)
		}
	}
	slices.Sort(p.cols)
	if p.vis != nil {
		return p, true
	}
	if cols[begin] != "" {
		b, e := sqlquote.Ident(begin), sqlquote.Ident(end)
		hasEnd := cols[end] != ""
		p.vis = func(_ int, s int64) string {
			if !hasEnd {
				return fmt.Sprintf("r.%s <= %d", b, s)
			}
			return fmt.Sprintf("r.%s <= %d AND (r.%s IS NULL OR r.%s > %d)", b, s, e, e, s)
		}
		return p, true
	}
	for _, dp := range digestParents {
		if cols[dp.key] != "" && c.has(dp.parent, dp.key, "begin_snapshot") {
			p.parentKey, p.parent = dp.key, dp.parent
			p.vis = func(i int, _ int64) string { return fmt.Sprintf("coalesce(p.v%d, false)", i) }
			return p, true
		}
	}
	// A table of no known kind: every row, whatever the snapshot.
	p.vis = func(int, int64) string { return "true" }
	return p, true
}

// rowHash is the SQL of the hash of a row of p (docs/spec.md §24):
// DuckDB's hash() of the table's physical name and then the row's columns
// in name order (end_snapshot left out), each with its type in the DuckDB
// form of the catalog. hash() combines typed values (no text is built), so
// a SQLite catalog read with those types (Open) hashes alike.
func (p digestPlan) rowHash() string {
	parts := []string{sqlquote.String(p.table)}
	for _, col := range p.cols {
		parts = append(parts, "r."+sqlquote.Ident(col))
	}
	return "hash(" + strings.Join(parts, ", ") + ")"
}

// hashCheckSQL is the fixed row whose hash names the hash function
// (meta.RowDigests.HashCheck): DuckDB 1.3 to 2.0 give 17470468845548143910.
const hashCheckSQL = `SELECT CAST(hash('abc', 1::BIGINT, NULL::VARCHAR, true, '6F9619FF-8B86-D011-B42D-00C04FC964FF'::UUID, TIMESTAMPTZ '2024-01-02 03:04:05+00') AS VARCHAR)`

// digestSQL is the query that reads table p once and gives, per group g,
// the count and the sum of the row hashes visible at each snapshot of at
// (columns g, then a count and a sum per snapshot, in at's order).
func (c *Catalog) digestSQL(p digestPlan, at []int64) string {
	vis := make([]string, len(at))
	var anyOf, aggs []string
	for i, s := range at {
		vis[i] = fmt.Sprintf("(%s) AS v%d", p.vis(i, s), i)
		anyOf = append(anyOf, fmt.Sprintf("v%d", i))
		aggs = append(aggs, fmt.Sprintf("count(*) FILTER (WHERE v%[1]d), CAST(sum(h) FILTER (WHERE v%[1]d) AS VARCHAR)", i))
	}
	from := c.t(p.table) + " r"
	// A row of a DuckLake table is at s only while its table is: a
	// dropped table's schema versions and inlined rows keep no
	// end_snapshot, and an expiry removes them.
	if p.group != "" && p.table != "ducklake_table" && c.has("ducklake_table", "table_id", "begin_snapshot", "end_snapshot") {
		var flags []string
		for i, s := range at {
			flags = append(flags, fmt.Sprintf("bool_or(%s) AS t%d", visible("", s), i))
			vis[i] = fmt.Sprintf("(%s AND (%s IS NULL OR coalesce(tv.t%d, false))) AS v%d", p.vis(i, s), p.group, i, i)
		}
		from += fmt.Sprintf(" LEFT JOIN (SELECT table_id AS fdl_tid, %s FROM %s GROUP BY table_id) tv ON tv.fdl_tid = %s",
			strings.Join(flags, ", "), c.t("ducklake_table"), p.group)
	}
	if p.parent != "" {
		var flags []string
		for i, s := range at {
			flags = append(flags, fmt.Sprintf("bool_or(%s) AS v%d", visible("", s), i))
		}
		k := sqlquote.Ident(p.parentKey)
		from += fmt.Sprintf(" LEFT JOIN (SELECT %s, %s FROM %s GROUP BY %s) p ON p.%s = r.%s", k, strings.Join(flags, ", "), c.t(p.parent), k, k, k)
	}
	group := "NULL::VARCHAR"
	if p.group != "" {
		group = "CAST(" + p.group + " AS VARCHAR)"
	}
	return fmt.Sprintf(`SELECT g, %s FROM (
		SELECT %s AS g, %s, %s AS h FROM %s) WHERE %s GROUP BY g`,
		strings.Join(aggs, ", "), group, strings.Join(vis, ", "), p.rowHash(), from, strings.Join(anyOf, " OR "))
}

// digestTables reads every table of plans once, in one statement (the
// tables' queries joined by UNION ALL, each row led by its plan's index:
// DuckDB parses and plans one statement instead of one per table, which
// on a small catalog costs more than reading its rows), and adds their
// rows visible at each snapshot of at to out (same order).
func (c *Catalog) digestTables(ctx context.Context, plans []digestPlan, at []int64, out []*meta.RowDigests) error {
	parts := make([]string, len(plans))
	for i, p := range plans {
		parts[i] = fmt.Sprintf("SELECT %d AS fdl_plan, * FROM (%s)", i, c.digestSQL(p, at))
		for _, d := range out {
			if _, ok := d.Tables[p.key]; !ok && p.group == "" {
				d.Tables[p.key] = meta.TableDigest{Part: meta.AddParts(meta.Part{}, meta.Part{})}
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return c.query(ctx, strings.Join(parts, "\nUNION ALL\n"), func(r *sql.Rows) error {
		var i int
		dest := []any{&i, new(sql.NullString)}
		for range at {
			dest = append(dest, new(int64), new(sql.NullString))
		}
		if err := r.Scan(dest...); err != nil {
			return err
		}
		p := plans[i]
		g := dest[1].(*sql.NullString)
		for k, d := range out {
			n := *dest[2+2*k].(*int64)
			if n == 0 {
				continue
			}
			text := dest[3+2*k].(*sql.NullString).String
			sum, ok := new(big.Int).SetString(text, 10)
			if !ok {
				return fmt.Errorf("digest of %s: sum %q", p.table, text)
			}
			// The low 64 bits: the sum mod 2^64.
			addPart(d, p.key, g, meta.Part{Rows: n, Sum: meta.FormatSum(sum.Uint64())})
		}
		return nil
	})
}

// addPart adds part to table key of d, in group g (a table id) when valid.
func addPart(d *meta.RowDigests, key string, g *sql.NullString, part meta.Part) {
	td := d.Tables[key]
	td.Part = meta.AddParts(td.Part, part)
	if g.Valid {
		if td.ByTable == nil {
			td.ByTable = map[string]meta.Part{}
		}
		td.ByTable[g.String] = meta.AddParts(td.ByTable[g.String], part)
	}
	d.Tables[key] = td
}
