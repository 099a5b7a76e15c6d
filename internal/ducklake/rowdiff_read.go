package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// The candidates' rows are read set by set, a few statements per table
// whatever the number of files: DuckDB reads the Parquet files of one
// statement in parallel, and one statement per file would cost more in
// planning than in reading.

// Scratch tables of loadCandidates.
const (
	filesScratch = "fdl_identity_files" // (src, path, start, va, vb, pmax, delta): candidate data files
	delsScratch  = "fdl_identity_dels"  // (src, path, va, vb, pmax): their delete files
	deadScratch  = "fdl_identity_dead"  // (src, side, pos): positions deleted at a side
)

// loadCandidates inserts into rowsScratch the live rows of the candidate
// data files (side, "f<id>", position, row id). A file visible on both
// sides whose rows did not grow (no rows of a snapshot after from) differs
// only by its deletions: its candidates are the positions deleted at one
// side only (live at the other), and its data file is read only for its
// row-id column when it has one. Other files' live rows are read whole
// (position, row id, snapshot id), less the positions deleted at the side.
func (r *diffReader) loadCandidates(ctx context.Context, files []*fileRow) error {
	if len(files) == 0 {
		return nil
	}
	exec := func(q string) error {
		_, err := r.c.conn.ExecContext(ctx, q)
		return err
	}
	cs, err := r.candidateRows(ctx, files)
	if err != nil {
		return err
	}
	if err := r.fillScratch(ctx, files, cs); err != nil {
		return err
	}
	paths, local, sides := cs.paths, cs.local, r.sides()
	embedded, err := r.withRowIDs(ctx, paths)
	if err != nil {
		return err
	}
	var deltaEmb, scan, scanEmb []string
	scanPartial := false
	for _, f := range files {
		p := sqlquote.String(local[f])
		switch {
		case f.visible(r.from) && f.visible(r.to) && f.partialMax <= r.from:
			if embedded[local[f]] {
				deltaEmb = append(deltaEmb, p)
			}
		default:
			scan = append(scan, p)
			scanEmb = appendIf(scanEmb, embedded[local[f]], p)
			scanPartial = scanPartial || f.partialMax >= 0
		}
	}
	// Files that differ by their deletions only.
	delta := fmt.Sprintf(`SELECT (1 - min(side))::UTINYINT AS side, src, pos FROM %s WHERE src IN (SELECT src FROM %s WHERE delta)
		GROUP BY src, pos HAVING count(DISTINCT side) = 1`, deadScratch, filesScratch)
	q := fmt.Sprintf("INSERT INTO %s SELECT c.side, c.src, c.pos, f.start + c.pos FROM (%s) c JOIN %s f USING (src)", rowsScratch, delta, filesScratch)
	if len(deltaEmb) > 0 {
		q = fmt.Sprintf(`INSERT INTO %s SELECT c.side, c.src, c.pos, coalesce(e.rid, f.start + c.pos) FROM (%s) c JOIN %s f USING (src)
			LEFT JOIN (SELECT filename, file_row_number, _ducklake_internal_row_id AS rid FROM read_parquet([%s], filename = true, file_row_number = true, union_by_name = true)) e
			ON e.filename = f.path AND e.file_row_number = c.pos`, rowsScratch, delta, filesScratch, strings.Join(deltaEmb, ", "))
	}
	if err := exec(q); err != nil {
		return err
	}
	if len(scan) == 0 {
		return nil
	}
	rid := "f.start + x.file_row_number"
	if len(scanEmb) > 0 {
		rid = "coalesce(x._ducklake_internal_row_id, " + rid + ")"
	}
	cond := "true"
	if scanPartial {
		cond = "f.pmax < 0 OR f.pmax <= s.snap OR x._ducklake_internal_snapshot_id <= s.snap"
	}
	return exec(fmt.Sprintf(`INSERT INTO %s SELECT s.side, f.src, x.file_row_number, %s
		FROM read_parquet([%s], filename = true, file_row_number = true, union_by_name = true) x
		JOIN %s f ON x.filename = f.path AND NOT f.delta JOIN %s ON (s.side = 0 AND f.va) OR (s.side = 1 AND f.vb)
		WHERE (%s) AND NOT EXISTS (SELECT 1 FROM %s d WHERE d.src = f.src AND d.side = s.side AND d.pos = x.file_row_number)`,
		rowsScratch, rid, strings.Join(scan, ", "), filesScratch, sides, cond, deadScratch))
}

// sides is the two sides of the diff as a relation s(side, snap): side 0
// at the older snapshot (from), side 1 at the newer (to).
func (r *diffReader) sides() string {
	return fmt.Sprintf("(VALUES (0::UTINYINT, %d::BIGINT), (1::UTINYINT, %d::BIGINT)) s(side, snap)", r.from, r.to)
}

// fillScratch makes loadCandidates' scratch tables from cs: filesScratch
// (the candidate files), delsScratch (their delete files) and deadScratch
// (the positions deleted at each side, from delete files and from the
// table's inlined deletions).
func (r *diffReader) fillScratch(ctx context.Context, files []*fileRow, cs candidateSet) error {
	fileRows, delRows, delPaths, ids, partialDel := cs.fileRows, cs.delRows, cs.delPaths, cs.ids, cs.partialDel
	sides := r.sides()
	stmts := []string{
		fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT * FROM (VALUES %s) v(src, path, start, va, vb, pmax, delta)", filesScratch, strings.Join(fileRows, ", ")),
		fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s(src VARCHAR, side UTINYINT, pos BIGINT)", deadScratch),
	}
	if len(delRows) > 0 {
		cond := "true"
		if partialDel {
			cond = "d.pmax < 0 OR d.pmax <= s.snap OR x._ducklake_internal_snapshot_id <= s.snap"
		}
		stmts = append(stmts,
			fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT * FROM (VALUES %s) v(src, path, va, vb, pmax)", delsScratch, strings.Join(delRows, ", ")),
			fmt.Sprintf(`INSERT INTO %s SELECT d.src, s.side, x.pos FROM read_parquet([%s], filename = true, union_by_name = true) x
				JOIN %s d ON x.filename = d.path JOIN %s ON (s.side = 0 AND d.va) OR (s.side = 1 AND d.vb) WHERE %s`,
				deadScratch, strings.Join(delPaths, ", "), delsScratch, sides, cond))
	}
	name := "ducklake_inlined_delete_" + strconv.FormatInt(files[0].table, 10)
	if cols, ok := r.c.tables[name]; ok && containsAll(cols, "file_id", "row_id") {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO %s SELECT 'f' || file_id, s.side, row_id FROM %s JOIN %s ON (s.side = 0 AND %s) OR (s.side = 1 AND %s) WHERE file_id IN (%s)",
			deadScratch, r.c.t(name), sides, inlinedDeleteAt(cols, r.from), inlinedDeleteAt(cols, r.to), strings.Join(ids, ", ")))
	}
	for _, q := range stmts {
		if _, err := r.c.conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// withRowIDs returns which of the files (quoted local paths) have a
// _ducklake_internal_row_id column (their footers only).
func (r *diffReader) withRowIDs(ctx context.Context, paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	q := fmt.Sprintf("SELECT DISTINCT file_name FROM parquet_schema([%s]) WHERE name = '_ducklake_internal_row_id'", strings.Join(paths, ", "))
	err := r.c.query(ctx, q, func(rows *sql.Rows) error {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		out[name] = true
		return nil
	})
	return out, err
}

// src names a data file in the scratch tables.
func src(f *fileRow) string { return "f" + strconv.FormatInt(f.id, 10) }

func containsAll(cols []string, names ...string) bool {
	for _, n := range names {
		found := false
		for _, c := range cols {
			found = found || c == n
		}
		if !found {
			return false
		}
	}
	return true
}

func appendIf(s []string, ok bool, v string) []string {
	if ok {
		return append(s, v)
	}
	return s
}

// candidateSet is what loadCandidates puts in its scratch tables: the
// VALUES rows of the candidate files and of their delete files, their
// local paths (quoted), the files' ids, each file's local path, and
// whether a delete file holds rows of several snapshots.
type candidateSet struct {
	fileRows, delRows, paths, delPaths, ids []string
	local                                   map[*fileRow]string
	partialDel                              bool
}

// candidateRows fetches (or finds locally) each candidate file and its
// delete files visible at either side, and describes them for
// loadCandidates.
func (r *diffReader) candidateRows(ctx context.Context, files []*fileRow) (candidateSet, error) {
	cs := candidateSet{local: map[*fileRow]string{}}
	for _, f := range files {
		p, err := r.local(ctx, f.path)
		if err != nil {
			return cs, err
		}
		cs.local[f] = p
		cs.paths = append(cs.paths, sqlquote.String(p))
		cs.ids = append(cs.ids, strconv.FormatInt(f.id, 10))
		delta := f.visible(r.from) && f.visible(r.to) && f.partialMax <= r.from
		cs.fileRows = append(cs.fileRows, fmt.Sprintf("(%s, %s, %d, %t, %t, %d, %t)", sqlquote.String(src(f)), sqlquote.String(p), f.rowIDStart, f.visible(r.from), f.visible(r.to), f.partialMax, delta))
		for _, d := range r.deletes[f.id] {
			if !d.visible(r.from) && !d.visible(r.to) {
				continue
			}
			dp, err := r.local(ctx, d.path)
			if err != nil {
				return cs, err
			}
			cs.partialDel = cs.partialDel || d.partialMax >= 0
			cs.delPaths = append(cs.delPaths, sqlquote.String(dp))
			cs.delRows = append(cs.delRows, fmt.Sprintf("(%s, %s, %t, %t, %d)", sqlquote.String(src(f)), sqlquote.String(dp), d.visible(r.from), d.visible(r.to), d.partialMax))
		}
	}
	return cs, nil
}
