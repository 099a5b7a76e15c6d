package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// Rows inserted and deleted by row identity (docs/spec.md §25: "What a
// diff counts"): a table's state at a snapshot is the multiset of (rowid,
// values) that `SELECT rowid, *` reads; rows deleted are the first
// state EXCEPT ALL the second, rows inserted the other way round. A row
// keeps its rowid through an UPDATE, a compaction and a restore or revert
// (which copy catalog rows, row ids unchanged), so an UPDATE that changes
// values counts once each way, a compaction counts nothing, and a row a
// restore brings back counts as inserted against a state that lacked it.
//
// The cost follows what changed: a data file visible on both sides with
// the same delete files, the same inlined deletions and no rows of a later
// snapshot holds the same rows on both sides and is never read. Only the
// other files (added, ended, or whose deletions changed) are candidates:
// when only one side has candidates their rows are counted from the
// catalog; otherwise their positions and row ids are read (the row-id
// column of a file that has one, `_ducklake_internal_row_id`, else
// row_id_start + position; delete files' positions) and, for the row ids
// found on both sides, their values.

// identityPlan is what one table's identity count needs.
type identityPlan struct {
	files   []*fileRow       // data files whose live rows may differ between the sides
	inlined []*inlinedSource // inlined-data tables with rows visible on one side only
	// cand counts the rows visible only at from ([0]) and only at to
	// ([1]), from the catalog; exact unless needRead.
	cand [2]int64
	// needRead: a file's live rows changed on both sides (or were
	// estimated): only its positions tell.
	needRead bool
	// unreadable says why a candidate file cannot be read ("" if all can).
	unreadable string
}

// inlinedSource is an inlined-data table of one table: its columns and the
// rows visible at exactly one side.
type inlinedSource struct {
	tid               int64
	name              string
	rowID, begin, end string   // its internal columns
	values            []string // its value columns, in order
	onlyFrom, onlyTo  int64
}

// countByIdentity sets every table's inserted and deleted rows by row
// identity; a table whose files cannot be read gets the catalog's
// estimates, exact false and the reason.
func (r *diffReader) countByIdentity(ctx context.Context) error {
	plans := map[int64]*identityPlan{}
	plan := func(tid int64) *identityPlan {
		p := plans[tid]
		if p == nil {
			p = &identityPlan{}
			plans[tid] = p
		}
		return p
	}
	for _, f := range r.data {
		if f.visible(r.from) || f.visible(r.to) {
			r.planFile(ctx, plan(f.table), f)
		}
	}
	for _, x := range r.inlinedSrc {
		if x.onlyFrom+x.onlyTo > 0 {
			p := plan(x.tid)
			p.inlined = append(p.inlined, x)
			p.cand[0] += x.onlyFrom
			p.cand[1] += x.onlyTo
		}
	}
	ids := make([]int64, 0, len(plans))
	for id := range plans {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := r.settle(ctx, id, plans[id]); err != nil {
			return err
		}
	}
	return nil
}

// planFile adds data file f (visible on at least one side) to p unless it
// holds the same rows on both sides.
func (r *diffReader) planFile(ctx context.Context, p *identityPlan, f *fileRow) {
	va, vb := f.visible(r.from), f.visible(r.to)
	if va && vb && r.sameRows(f) {
		return
	}
	p.files = append(p.files, f)
	insA, ok1 := r.inserted(ctx, f, r.from)
	insB, ok2 := r.inserted(ctx, f, r.to)
	remA, ok3 := r.removed(ctx, f, r.from, insA)
	remB, ok4 := r.removed(ctx, f, r.to, insB)
	var liveA, liveB int64
	if va {
		liveA = insA - remA
	}
	if vb {
		liveB = insB - remB
	}
	switch {
	case !vb:
		p.cand[0] += liveA
	case !va:
		p.cand[1] += liveB
	case remA == 0 && insA == insB: // deletions only began: nested
		p.cand[0] += liveA - liveB
	case remB == 0 && insA == insB:
		p.cand[1] += liveB - liveA
	default:
		p.needRead = true
		p.cand[0] += max(0, liveA-liveB)
		p.cand[1] += max(0, liveB-liveA)
	}
	if !(ok1 && ok2 && ok3 && ok4) {
		p.needRead = true
	}
	if why := r.unreadable(f); why != "" && p.unreadable == "" {
		p.unreadable = why
	}
}

// sameRows reports whether f, visible on both sides, has the same live
// rows on both: no rows of a snapshot after from, the same delete files
// (none holding deletions of a snapshot after from) and the same inlined
// deletions.
func (r *diffReader) sameRows(f *fileRow) bool {
	if f.partialMax > r.from {
		return false
	}
	if partialInfoRe.MatchString(f.partialInfo) && partialRows(f.partialInfo, r.from, f.count) != partialRows(f.partialInfo, r.to, f.count) {
		return false
	}
	for _, d := range r.deletes[f.id] {
		if d.visible(r.from) != d.visible(r.to) || (d.visible(r.from) && d.partialMax > r.from) {
			return false
		}
	}
	return r.inlDel[f.id][2] == 0
}

// unreadable says why f's rows or deletions cannot be read by fdl, or "".
func (r *diffReader) unreadable(f *fileRow) string {
	if f.format != "" && !strings.EqualFold(f.format, "parquet") {
		return fmt.Sprintf("data file %s is in format %s", f.path, f.format)
	}
	if partialInfoRe.MatchString(f.partialInfo) {
		return fmt.Sprintf("data file %s holds rows of several snapshots (DuckLake 0.3 partial_file_info)", f.path)
	}
	for _, d := range r.deletes[f.id] {
		if !d.visible(r.from) && !d.visible(r.to) {
			continue
		}
		if d.format != "" && !strings.EqualFold(d.format, "parquet") {
			return fmt.Sprintf("delete file %s is in format %s, which fdl does not read", d.path, d.format)
		}
	}
	return ""
}

// settle sets table tid's inserted and deleted rows from its plan.
func (r *diffReader) settle(ctx context.Context, tid int64, p *identityPlan) error {
	t := r.table(tid)
	t.deleted, t.inserted = p.cand[0], p.cand[1]
	if !p.needRead && (p.cand[0] == 0 || p.cand[1] == 0) {
		return nil // no row can match one of the other side
	}
	if p.unreadable != "" {
		t.approximate(p.unreadable + ": rows are counted from the catalog, assuming no row of one side equals one of the other")
		return nil
	}
	ins, del, compared, why, err := r.readIdentity(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		t.approximate(fmt.Sprintf("a file could not be read (%s): rows are counted from the catalog, assuming no row of one side equals one of the other", msg))
		return nil
	}
	t.inserted, t.deleted, t.compared = ins, del, compared
	if why != "" {
		t.approximate(why)
	}
	return nil
}

// The scratch tables of readIdentity, in the private DuckDB's memory.
const (
	rowsScratch = "fdl_identity_rows" // (side, src, pos, rid): live rows of the candidates
	onlyScratch = "fdl_identity_only" // the same, less the rows both sides share
	valsScratch = "fdl_identity_vals" // (side, rid, vals): rows compared by value
)

// readIdentity reads the candidates' rows (a data file's source is
// "f<id>", its position the row's; an inlined table's "i<name>", its
// position the row's begin snapshot), drops those both sides share, and
// compares the rest by row id, then (compared) by values for the row ids
// on both sides. why is set when that comparison is not exact.
func (r *diffReader) readIdentity(ctx context.Context, p *identityPlan) (ins, del int64, compared bool, why string, err error) {
	exec := func(q string) error {
		_, err := r.c.conn.ExecContext(ctx, q)
		return err
	}
	if err := exec(fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s(side UTINYINT, src VARCHAR, pos BIGINT, rid BIGINT)", rowsScratch)); err != nil {
		return 0, 0, false, "", err
	}
	if err := r.loadCandidates(ctx, p.files); err != nil {
		return 0, 0, false, "", err
	}
	for _, x := range p.inlined {
		for side, s := range [2]int64{r.from, r.to} {
			o := [2]int64{r.to, r.from}[side]
			q := fmt.Sprintf("INSERT INTO %s SELECT %d, %s, %s, %s FROM %s WHERE %s AND NOT (%s)", rowsScratch, side,
				sqlquote.String("i"+x.name), sqlquote.Ident(x.begin), sqlquote.Ident(x.rowID), r.c.t(x.name), x.visibleAt(s), x.visibleAt(o))
			if err := exec(q); err != nil {
				return 0, 0, false, "", err
			}
		}
	}
	one := func(a, b int) string {
		return fmt.Sprintf("SELECT %d AS side, * FROM (SELECT src, pos, rid FROM %s WHERE side = %d EXCEPT ALL SELECT src, pos, rid FROM %s WHERE side = %d)", a, rowsScratch, a, rowsScratch, b)
	}
	if err := exec(fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS %s UNION ALL %s", onlyScratch, one(0, 1), one(1, 0))); err != nil {
		return 0, 0, false, "", err
	}
	var matched int64
	counts := fmt.Sprintf(`SELECT count(*) FILTER (WHERE side = 0), count(*) FILTER (WHERE side = 1),
		(SELECT count(*) FROM (SELECT rid FROM %[1]s WHERE side = 0 INTERSECT SELECT rid FROM %[1]s WHERE side = 1)) FROM %[1]s`, onlyScratch)
	if err := r.c.conn.QueryRowContext(ctx, counts).Scan(&del, &ins, &matched); err != nil {
		return 0, 0, false, "", err
	}
	if matched == 0 {
		return ins, del, false, "", nil
	}
	ins, del, why, err = r.compareValues(ctx, p)
	return ins, del, true, why, err
}

// inlinedDeleteAt is the condition that an inlined deletion (a row of
// ducklake_inlined_delete_<table_id> with columns cols) holds at s.
func inlinedDeleteAt(cols []string, s int64) string {
	if slices.Contains(cols, "end_snapshot") {
		return visible("", s)
	}
	return fmt.Sprintf("begin_snapshot <= %d", s)
}

// fileColumns returns the column names of a local Parquet file (its
// footer only), cached by path.
func (r *diffReader) fileColumns(ctx context.Context, path string) ([]string, error) {
	if cols, ok := r.columns[path]; ok {
		return cols, nil
	}
	local, err := r.local(ctx, path)
	if err != nil {
		return nil, err
	}
	var cols []string
	err = r.c.query(ctx, fmt.Sprintf("SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet(%s))", sqlquote.String(local)), func(rows *sql.Rows) error {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		cols = append(cols, name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.columns[path] = cols
	return cols, nil
}

// compareValues counts the rows left in onlyScratch by (rowid, values):
// the values of the row ids on both sides are read (each column cast to
// text, in the file's or inlined table's column order) into valsScratch;
// the other rows cannot match and carry no values. why is set when two
// rows of one row id were written with different columns (a column added
// or dropped in between): their values are then not comparable.
func (r *diffReader) compareValues(ctx context.Context, p *identityPlan) (ins, del int64, why string, err error) {
	exec := func(q string) error {
		_, err := r.c.conn.ExecContext(ctx, q)
		return err
	}
	matched := fmt.Sprintf("(SELECT rid FROM %[1]s WHERE side = 0 INTERSECT SELECT rid FROM %[1]s WHERE side = 1)", onlyScratch)
	q := fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT side, rid, NULL::VARCHAR[] AS vals FROM %s WHERE rid NOT IN %s", valsScratch, onlyScratch, matched)
	if err := exec(q); err != nil {
		return 0, 0, "", err
	}
	wanted := func(src string) string {
		return fmt.Sprintf("(SELECT side, pos, rid FROM %s WHERE src = %s AND rid IN %s)", onlyScratch, sqlquote.String(src), matched)
	}
	srcs := map[string]bool{}
	err = r.c.query(ctx, fmt.Sprintf("SELECT DISTINCT src FROM %s WHERE rid IN %s", onlyScratch, matched), func(rows *sql.Rows) error {
		var s string
		err := rows.Scan(&s)
		srcs[s] = true
		return err
	})
	if err != nil {
		return 0, 0, "", err
	}
	// Files with the same columns are read by one statement.
	groups := map[string][]string{}
	var keys []string
	for _, f := range p.files {
		if !srcs[src(f)] {
			continue
		}
		cols, err := r.fileColumns(ctx, f.path)
		if err != nil {
			return 0, 0, "", err
		}
		local, err := r.local(ctx, f.path)
		if err != nil {
			return 0, 0, "", err
		}
		k := strings.Join(userColumns(cols), "\x00")
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], sqlquote.String(local))
	}
	all := fmt.Sprintf("(SELECT side, src, pos, rid FROM %s WHERE rid IN %s)", onlyScratch, matched)
	for _, k := range keys {
		q := fmt.Sprintf(`INSERT INTO %s SELECT o.side, o.rid, %s FROM read_parquet([%s], filename = true, file_row_number = true) x
			JOIN %s f ON x.filename = f.path JOIN %s o ON o.src = f.src AND o.pos = x.file_row_number`,
			valsScratch, textList("x", strings.Split(k, "\x00")), strings.Join(groups[k], ", "), filesScratch, all)
		if k == "" {
			q = fmt.Sprintf(`INSERT INTO %s SELECT o.side, o.rid, []::VARCHAR[] FROM %s f JOIN %s o ON o.src = f.src WHERE f.path IN (%s)`,
				valsScratch, filesScratch, all, strings.Join(groups[k], ", "))
		}
		if err := exec(q); err != nil {
			return 0, 0, "", err
		}
	}
	for _, x := range p.inlined {
		q := fmt.Sprintf("INSERT INTO %s SELECT o.side, o.rid, %s FROM %s p JOIN %s o ON p.%s = o.pos AND p.%s = o.rid",
			valsScratch, textList("p", x.values), r.c.t(x.name), wanted("i"+x.name), sqlquote.Ident(x.begin), sqlquote.Ident(x.rowID))
		if err := exec(q); err != nil {
			return 0, 0, "", err
		}
	}
	var odd int64
	q = fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT rid, vals FROM %[1]s WHERE side = 1 EXCEPT ALL SELECT rid, vals FROM %[1]s WHERE side = 0)),
		(SELECT count(*) FROM (SELECT rid, vals FROM %[1]s WHERE side = 0 EXCEPT ALL SELECT rid, vals FROM %[1]s WHERE side = 1)),
		(SELECT count(*) FROM %[1]s a JOIN %[1]s b ON a.rid = b.rid AND a.side = 0 AND b.side = 1 WHERE len(a.vals) <> len(b.vals))`, valsScratch)
	if err := r.c.conn.QueryRowContext(ctx, q).Scan(&ins, &del, &odd); err != nil {
		return 0, 0, "", err
	}
	if odd > 0 {
		why = fmt.Sprintf("%d row(s) of one rowid were written with different columns on the two sides and are counted as changed", odd)
	}
	return ins, del, why, nil
}

// userColumns drops DuckLake's internal columns (_ducklake_internal_*).
func userColumns(cols []string) []string {
	var out []string
	for _, c := range cols {
		if !strings.HasPrefix(c, "_ducklake_internal_") {
			out = append(out, c)
		}
	}
	return out
}

// textList is a DuckDB list of alias's columns cast to text.
func textList(alias string, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("CAST(%s.%s AS VARCHAR)", alias, sqlquote.Ident(c))
	}
	return "[" + strings.Join(parts, ", ") + "]::VARCHAR[]"
}

// visibleAt is the condition that a row of x is visible at s.
func (x *inlinedSource) visibleAt(s int64) string {
	b, e := sqlquote.Ident(x.begin), sqlquote.Ident(x.end)
	return fmt.Sprintf("(%s <= %d AND (%s IS NULL OR %d < %s))", b, s, e, s, e)
}
