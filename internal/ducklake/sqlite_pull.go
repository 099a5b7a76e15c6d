package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/fdl-dev/fdl/internal/ducklake/sqlitebulk"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// The incremental pull (docs/spec.md §12.1, "The incremental pull"): a
// SQLite working catalog at its base version's last snapshot S is brought
// up to a newer version by what that version changed after S, instead of
// a conversion of the whole catalog and a copy of it into the file. It is
// FreezeOnto's rule the other way round: the same tables are brought up to
// date row by row (deltaTable.plan), and the same sums check the result.

// pullBaseAlias is the name the base's catalog is attached under, beside
// the new version's.
const pullBaseAlias = "fdl_base"

// PullSQLite brings the SQLite working catalog dst up to head, the checked
// DuckDB catalog of a version that descends from dst's base (base: its
// kept catalog and record), in place, in one SQLite write transaction, by
// what head changed after the base's last snapshot S: in the tables
// DuckLake changes only by adding and ending rows and deleting data files
// and snapshots, head's rows after S are inserted, its rows ended after S
// get their end_snapshot, and the rows of data files and snapshots head no
// longer has (the base's rows that head lacks) are deleted; every other
// table is written whole from head, as a conversion writes it
// (ConvertToSQLite). Each table brought up to date is then checked: its
// rows at S in dst (row count and per-column sums) must be head's, else
// nothing is changed. The transaction begins with BEGIN IMMEDIATE, then
// calls check with dst's snapshots as they are inside it (the caller's
// refusal of uncommitted work), so no writer's snapshot is lost; readers
// see the old catalog or the new one.
//
// When the pull cannot go this way, dst is left as it was and
// DeltaInfo.Full says why (the caller then converts head whole and
// replaces dst with it, ReplaceSQLite): the kept base is missing or not
// its record's file, the formats differ, dst holds snapshots after S or
// not the base's rows at S, or head does not hold S as the base does.
// Errors: check's; ErrLocked when dst stays busy for a minute; ErrCorrupt
// and the errors of Open for dst or head.
func PullSQLite(ctx context.Context, dst, head string, base FreezeBase, check func([]SnapshotMark) error) (DeltaInfo, error) {
	dstAbs, err := filepath.Abs(dst)
	if err != nil {
		return DeltaInfo{}, err
	}
	if _, err := checkSQLiteFile(dstAbs); err != nil {
		return DeltaInfo{}, err
	}
	if reason, err := copyBase(ctx, base, ""); reason != "" || err != nil {
		return DeltaInfo{Full: reason}, err
	}
	c, err := Open(ctx, head)
	if err != nil {
		return DeltaInfo{}, err
	}
	defer c.Close()
	if c.backend != BackendDuckDB {
		return DeltaInfo{}, fmt.Errorf("pull into %s: %s is not a DuckDB catalog", dstAbs, head)
	}
	if c.format != base.Format {
		return DeltaInfo{Full: fmt.Sprintf("the new version's DuckLake format is %s, the base's %s", c.format, base.Format)}, nil
	}
	if err := c.toSQLiteSettings(ctx); err != nil {
		return DeltaInfo{}, err
	}
	if err := registerUDF(c.db, fnvFunc, func() error { return duckdb.RegisterScalarUDF(c.conn, fnvFunc, fnv32UDF{}) }); err != nil {
		return DeltaInfo{}, err
	}
	if _, err := c.conn.ExecContext(ctx, "ATTACH "+sqlquote.String(base.Path)+" AS "+sqlquote.Ident(pullBaseAlias)+" (READ_ONLY)"); err != nil {
		return DeltaInfo{}, fmt.Errorf("pull into %s: the kept base catalog %s: %w", dstAbs, base.Path, err)
	}
	defer c.conn.ExecContext(context.WithoutCancel(ctx), "DETACH "+sqlquote.Ident(pullBaseAlias))
	p := &pullRun{c: c, dst: dstAbs, snap: base.Snapshot}
	if reason, err := p.prepare(ctx); reason != "" || err != nil {
		return DeltaInfo{Full: reason}, err
	}
	work, err := os.MkdirTemp(filepath.Dir(dstAbs), ".fdl-sqlite-*")
	if err != nil {
		return DeltaInfo{}, fmt.Errorf("pull into %s: %w", dstAbs, err)
	}
	defer os.RemoveAll(work)
	p.work = work
	var reason string
	err = retrySQLiteBusy(ctx, dstAbs, func() error {
		var err error
		reason, err = p.applyOnce(ctx, check)
		return err
	})
	if err != nil {
		return DeltaInfo{}, err
	}
	if reason != "" {
		return DeltaInfo{Full: reason}, nil
	}
	return p.info, nil
}

// pullRun is one incremental pull: the new version's catalog (c, with the
// base's attached as pullBaseAlias), the working catalog, and each table's
// way.
type pullRun struct {
	c    *Catalog
	dst  string
	work string // the CSV pipes' folder, beside dst
	snap int64  // S
	// snapTime is S's snapshot_time in the base and the new version.
	snapTime time.Time
	tables   []*pullTable
	// gone maps a table to the DuckDB temporary table of the ids it lost
	// after S (data files, delete files, snapshots).
	gone map[string]string
	info DeltaInfo
}

// pullTable is one table of the new version's catalog as a pull writes it.
type pullTable struct {
	d     *duckTable
	ddl   string   // its CREATE TABLE in SQLite, as a conversion writes it
	decls []string // its SQLite columns' declared types
	dt    *deltaTable
	// sig is its columns and declared types ("name TYPE, …"), to compare
	// with the working catalog's.
	sig string
	// What the new version holds (pullRun.count): its rows; for a delta
	// table its rows after S (added), its rows at S ended after S, the
	// kept base's ids it no longer has (gone), and the sums of its rows
	// at S (sumExprs joined by '|').
	rows, added, ended, gone int64
	sums                     string
}

// prepare checks that the base's catalog ends at S and that the new
// version holds S as the base does (same snapshot_time and next_file_id),
// reads the new version's tables and plans each (deltaTable.plan), or
// says why the pull cannot go by what changed.
func (p *pullRun) prepare(ctx context.Context) (string, error) {
	c := p.c
	bt := func(t string) string {
		return sqlquote.Ident(pullBaseAlias) + "." + sqlquote.Ident(c.schema) + "." + sqlquote.Ident(t)
	}
	var last sql.NullInt64
	if err := c.conn.QueryRowContext(ctx, "SELECT max(snapshot_id) FROM "+bt("ducklake_snapshot")).Scan(&last); err != nil {
		return "", fmt.Errorf("pull into %s: the kept base catalog: %w", p.dst, err)
	}
	if !last.Valid || last.Int64 != p.snap {
		return fmt.Sprintf("the kept base catalog ends at snapshot %d, not %d", last.Int64, p.snap), nil
	}
	same, nextCol := "h.snapshot_time = b.snapshot_time", "NULL"
	if c.has("ducklake_snapshot", "next_file_id") {
		same += " AND h.next_file_id IS NOT DISTINCT FROM b.next_file_id"
		nextCol = "b.next_file_id"
	}
	var ok sql.NullBool
	var next sql.NullInt64
	var at sql.NullTime
	q := fmt.Sprintf("SELECT bool_and(%s), any_value(%s), any_value(b.snapshot_time) FROM %s h JOIN %s b USING (snapshot_id) WHERE snapshot_id = %d",
		same, nextCol, c.t("ducklake_snapshot"), bt("ducklake_snapshot"), p.snap)
	if err := c.conn.QueryRowContext(ctx, q).Scan(&ok, &next, &at); err != nil {
		return "", fmt.Errorf("pull into %s: %w", p.dst, err)
	}
	if !ok.Valid || !ok.Bool {
		return fmt.Sprintf("the new version does not hold the base's snapshot %d as the base does", p.snap), nil
	}
	p.snapTime = at.Time
	nextFile := int64(-1)
	if next.Valid {
		nextFile = next.Int64
	}
	tables, err := c.duckLayout(ctx)
	if err != nil {
		return "", err
	}
	keywords, err := duckKeywords(ctx, c.conn)
	if err != nil {
		return "", err
	}
	baseCols, err := p.baseColumns(ctx)
	if err != nil {
		return "", err
	}
	for _, t := range tables {
		ddl, decls := sqliteCreateTable(t, keywords)
		st := &sqliteTable{name: t.name, kind: t.kind, cols: t.cols, decl: decls, duck: t.types, pk: t.pk}
		pt := &pullTable{d: t, ddl: ddl, decls: decls, dt: &deltaTable{t: st}}
		sig := make([]string, len(t.cols))
		for i := range t.cols {
			sig[i] = t.cols[i] + " " + decls[i]
		}
		pt.sig = strings.Join(sig, ", ")
		if _, bulk := sqliteKinds(decls); bulk {
			pt.dt.plan(p.snap, nextFile)
		}
		if pt.dt.old != "" && baseCols[t.name] != columnsOf(st) {
			pt.dt.old, pt.dt.why = "", "its columns differ from the base's"
		}
		p.tables = append(p.tables, pt)
	}
	return "", p.count(ctx)
}

// count reads, in three statements whatever the number of tables (each
// of DuckDB's statements costs milliseconds), what the pull will write of
// each table: its rows in the new version; for a delta table its rows
// after S, its rows at S ended after S, the sums of its rows at S
// (sumExprs; the row count alone for a table counted only) and, for a
// table of ids (data files, delete files, snapshots), how many of the
// kept base's ids the new version no longer has.
func (p *pullRun) count(ctx context.Context) error {
	c := p.c
	var counts, sums, gone []string
	for _, pt := range p.tables {
		dt, name := pt.dt, sqlquote.String(pt.d.name)
		added, ended := "0", "0"
		if dt.old != "" {
			added = "count(*) FILTER (WHERE NOT (" + dt.old + "))"
			if dt.end != "" {
				ended = fmt.Sprintf("count(*) FILTER (WHERE (%s) AND %s > %d)", dt.old, sqlquote.Ident(dt.end), p.snap)
			}
			if dt.idFrom == "" {
				sums = append(sums, fmt.Sprintf("SELECT %s, concat_ws('|', %s) FROM %s WHERE %s", name, strings.Join(sumExprs(dt, false), ", "), c.t(pt.d.name), dt.old))
			}
			if dt.id != "" && dt.idFrom == "" {
				id := sqlquote.Ident(dt.id)
				bt := sqlquote.Ident(pullBaseAlias) + "." + sqlquote.Ident(c.schema) + "." + sqlquote.Ident(pt.d.name)
				gone = append(gone, fmt.Sprintf("SELECT %s, count(*) FROM %s b ANTI JOIN %s h ON b.%s = h.%s WHERE b.%s", name, bt, c.t(pt.d.name), id, id, dt.old))
			}
		}
		counts = append(counts, fmt.Sprintf("SELECT %s, count(*), %s, %s FROM %s", name, added, ended, c.t(pt.d.name)))
	}
	byName := map[string]*pullTable{}
	for _, pt := range p.tables {
		byName[pt.d.name] = pt
	}
	// each runs the statements parts joined by UNION ALL; every row is a
	// table's name and the values scan stores into that table.
	each := func(parts []string, n int, scan func(pt *pullTable, vals []sql.NullString) error) error {
		if len(parts) == 0 {
			return nil
		}
		rows, err := c.conn.QueryContext(ctx, strings.Join(parts, " UNION ALL "))
		if err != nil {
			return fmt.Errorf("pull into %s: %w", p.dst, err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			vals := make([]sql.NullString, n)
			ptrs := []any{&name}
			for i := range vals {
				ptrs = append(ptrs, &vals[i])
			}
			if err := rows.Scan(ptrs...); err != nil {
				return fmt.Errorf("pull into %s: %w", p.dst, err)
			}
			if pt := byName[name]; pt != nil {
				if err := scan(pt, vals); err != nil {
					return fmt.Errorf("pull into %s: table %s: %w", p.dst, name, err)
				}
			}
		}
		return rows.Err()
	}
	num := func(v sql.NullString) (int64, error) { return strconv.ParseInt(v.String, 10, 64) }
	err := each(counts, 3, func(pt *pullTable, v []sql.NullString) error {
		var err [3]error
		pt.rows, err[0] = num(v[0])
		pt.added, err[1] = num(v[1])
		pt.ended, err[2] = num(v[2])
		return errors.Join(err[:]...)
	})
	if err != nil {
		return err
	}
	if err := each(sums, 1, func(pt *pullTable, v []sql.NullString) error {
		pt.sums = v[0].String
		return nil
	}); err != nil {
		return err
	}
	return each(gone, 1, func(pt *pullTable, v []sql.NullString) (err error) {
		pt.gone, err = num(v[0])
		return err
	})
}

// baseColumns returns the base catalog's tables and their columns with
// DuckDB types ("name TYPE, …", as columnsOf gives them).
func (p *pullRun) baseColumns(ctx context.Context) (map[string]string, error) {
	out, err := textPairs(ctx, p.c.conn, duckColumnsQuery, pullBaseAlias, p.c.schema)
	if err != nil {
		return nil, fmt.Errorf("pull into %s: the kept base catalog: %w", p.dst, err)
	}
	return out, nil
}

// applyOnce is one attempt at the pull's transaction on the working
// catalog: a reason when it cannot go by what changed (nothing changed),
// busy errors as they are.
func (p *pullRun) applyOnce(ctx context.Context, check func([]SnapshotMark) error) (reason string, err error) {
	p.info, p.gone = DeltaInfo{}, map[string]string{}
	db, err := sql.Open("sqlite3", sqliteDSN(p.dst, "_busy_timeout="+strconv.Itoa(SQLiteBusyTimeout)))
	if err != nil {
		return "", fmt.Errorf("open %s: %w", p.dst, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", classifySQLiteError(p.dst, "open", err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error { return sqlitebulk.RegisterFNV32(dc) }); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		if isSQLiteBusy(err) {
			return "", err
		}
		return "", classifySQLiteError(p.dst, "begin a write transaction", err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
		p.dropGone()
	}()
	if reason, err := p.checkWorking(ctx, conn, check); reason != "" || err != nil {
		return reason, err
	}
	if reason, err := p.writeTables(ctx, conn); reason != "" || err != nil {
		return reason, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		if isSQLiteBusy(err) {
			return "", err
		}
		return "", classifySQLiteError(p.dst, "commit", err)
	}
	committed = true
	sort.Strings(p.info.Delta)
	return "", nil
}

// checkWorking calls check with the working catalog's snapshots, inside
// the transaction, and says why the pull cannot go by what changed: the
// working catalog does not end at S (snapshots not committed, which check
// let be discarded), or its DuckLake format is not the new version's.
func (p *pullRun) checkWorking(ctx context.Context, conn *sql.Conn, check func([]SnapshotMark) error) (string, error) {
	marks, err := sqliteMarks(ctx, conn, p.dst, "main")
	if err != nil {
		return "", err
	}
	if err := check(marks); err != nil {
		return "", err
	}
	if len(marks) == 0 || marks[len(marks)-1].ID != p.snap || !marks[len(marks)-1].Time.Equal(p.snapTime) {
		return fmt.Sprintf("the working catalog does not end at the base's snapshot %d", p.snap), nil
	}
	var format sql.NullString
	err = conn.QueryRowContext(ctx, "SELECT value FROM ducklake_metadata WHERE key = 'version'").Scan(&format)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		if isSQLiteBusy(err) {
			return "", err
		}
		return "", classifySQLiteError(p.dst, "read ducklake_metadata", err)
	}
	if format.String != p.c.format {
		return fmt.Sprintf("the working catalog's DuckLake format is %s, the new version's %s", format.String, p.c.format), nil
	}
	return "", nil
}

// writeTables makes the working catalog's tables the new version's: those
// it lacks are created and written, those the new version lacks dropped,
// those whose columns differ and those planned whole written whole; then
// the delta tables are brought up to date (applyDeltas).
func (p *pullRun) writeTables(ctx context.Context, conn *sql.Conn) (string, error) {
	have, err := sqliteColumnSigs(ctx, conn)
	if err != nil {
		return "", classifySQLiteError(p.dst, "read its tables", err)
	}
	for name := range have {
		if !slices.ContainsFunc(p.tables, func(pt *pullTable) bool { return pt.d.name == name }) {
			if _, err := conn.ExecContext(ctx, "DROP TABLE main."+sqlquote.Ident(name)); err != nil {
				return "", p.fail("drop "+name, err)
			}
		}
	}
	for i, pt := range p.tables {
		name := pt.d.name
		sig, exists := have[name]
		switch {
		case exists && sig == pt.sig && pt.dt.old != "":
			continue // a delta table (applyDeltas)
		case exists && sig != pt.sig:
			if _, err := conn.ExecContext(ctx, "DROP TABLE main."+sqlquote.Ident(name)); err != nil {
				return "", p.fail("drop "+name, err)
			}
			exists = false
			if pt.dt.old != "" {
				pt.dt.old, pt.dt.why = "", "its columns differ from the working catalog's"
			}
		case !exists && pt.dt.old != "":
			pt.dt.old, pt.dt.why = "", "the working catalog lacks it"
		}
		if exists {
			if _, err := conn.ExecContext(ctx, "DELETE FROM main."+sqlquote.Ident(name)); err != nil {
				return "", p.fail("empty "+name, err)
			}
		} else if _, err := conn.ExecContext(ctx, pt.ddl); err != nil {
			return "", p.fail("create "+name, err)
		}
		if err := p.copyAll(ctx, conn, i); err != nil {
			return "", err
		}
		if pt.dt.why != "" {
			if p.info.Whole == nil {
				p.info.Whole = map[string]string{}
			}
			p.info.Whole[name] = pt.dt.why
		}
	}
	return p.applyDeltas(ctx, conn)
}

// sqliteColumnSigs returns the working catalog's tables and their columns
// with declared types ("name TYPE, …").
func sqliteColumnSigs(ctx context.Context, conn *sql.Conn) (map[string]string, error) {
	return textPairs(ctx, conn, `SELECT m.name, group_concat(c.name || ' ' || c.type, ', ')
		FROM sqlite_master m, pragma_table_info(m.name) c
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' GROUP BY m.name ORDER BY m.name`)
}

// copyRows copies the rows of table i that rows chooses from the new
// version's catalog into the working catalog: in bulk through a named
// pipe as a conversion does, or row by row (a table with a DOUBLE or BLOB
// column: all its rows, rows must choose them all).
func (p *pullRun) copyRows(ctx context.Context, conn *sql.Conn, i int, rows rowsOf) (int64, error) {
	pt := p.tables[i]
	if kinds, bulk := sqliteKinds(pt.decls); bulk {
		return p.c.streamTable(ctx, conn, pt.d, pt.decls, kinds, filepath.Join(p.work, "table-"+strconv.Itoa(i)+".pipe"), rows)
	}
	if rows != (rowsOf{}) {
		return 0, fmt.Errorf("pull into %s: table %s goes row by row, whole only", p.dst, pt.d.name)
	}
	return p.c.writeSQLiteTable(ctx, conn, pt.d, pt.decls)
}

// copyAll copies every row of table i (none when the new version's table
// is empty: no statement of DuckDB's, which costs milliseconds).
func (p *pullRun) copyAll(ctx context.Context, conn *sql.Conn, i int) error {
	if p.tables[i].rows == 0 {
		return nil
	}
	_, err := p.copyRows(ctx, conn, i, rowsOf{})
	return err
}

// fail wraps a SQLite error of the pull's transaction (busy errors as
// they are, for the retry).
func (p *pullRun) fail(doing string, err error) error {
	if isSQLiteBusy(err) {
		return err
	}
	return classifySQLiteError(p.dst, doing, err)
}

// applyDeltas brings the delta tables up to date: first the rows of the
// data files, delete files and snapshots the new version no longer has
// are deleted (and the statistics of those data files), then each table
// gets its rows ended after S and its new rows, and is checked. A table
// whose rows do not match (the working catalog's rows at S are not the
// base's, or the new version changed them in place: DuckLake's expiry
// deletes ended rows of the schema's tables) is written whole instead.
func (p *pullRun) applyDeltas(ctx context.Context, conn *sql.Conn) (string, error) {
	for i, pt := range p.tables {
		if pt.dt.old != "" && pt.dt.id != "" && pt.dt.idFrom == "" && pt.gone > 0 {
			if err := p.orWhole(ctx, conn, i, func() (string, error) { return p.deleteGone(ctx, conn, pt) }); err != nil {
				return "", err
			}
		}
	}
	for i, pt := range p.tables {
		dt := pt.dt
		err := p.orWhole(ctx, conn, i, func() (string, error) {
			if dt.idFrom != "" && p.gone[dt.idFrom] != "" {
				if reason, err := p.deleteGone(ctx, conn, pt); reason != "" || err != nil {
					return reason, err
				}
			}
			if dt.end != "" && pt.ended > 0 {
				if reason, err := p.endRows(ctx, conn, i); reason != "" || err != nil {
					return reason, err
				}
			}
			if pt.added > 0 {
				if _, err := p.copyRows(ctx, conn, i, rowsOf{where: "NOT (" + dt.old + ")"}); err != nil {
					return "", err
				}
			}
			return p.checkTable(ctx, conn, pt)
		})
		if err != nil {
			return "", err
		}
		if dt.old != "" {
			p.info.Delta = append(p.info.Delta, pt.d.name)
		}
	}
	return "", nil
}

// orWhole runs step on delta table i (none when the table is not one, or
// no longer); when step says why the table cannot be brought up to date
// by its changes, the table is written whole from the new version instead
// and DeltaInfo.Whole says why.
func (p *pullRun) orWhole(ctx context.Context, conn *sql.Conn, i int, step func() (string, error)) error {
	pt := p.tables[i]
	if pt.dt.old == "" {
		return nil
	}
	why, err := step()
	if err != nil || why == "" {
		return err
	}
	pt.dt.old, pt.dt.why = "", why
	name := pt.d.name
	if _, err := conn.ExecContext(ctx, "DELETE FROM main."+sqlquote.Ident(name)); err != nil {
		return p.fail("empty "+name, err)
	}
	if err := p.copyAll(ctx, conn, i); err != nil {
		return err
	}
	if p.info.Whole == nil {
		p.info.Whole = map[string]string{}
	}
	p.info.Whole[name] = why
	return nil
}

// deleteGone deletes from the working catalog the rows of pt whose id the
// base has at S and the new version has not (for a table that takes its
// ids from another, idFrom: the rows of that table's deleted ids), and
// says why not when the rows deleted are not as many as the base holds.
func (p *pullRun) deleteGone(ctx context.Context, conn *sql.Conn, pt *pullTable) (string, error) {
	dt, c := pt.dt, p.c
	name := pt.d.name
	id := sqlquote.Ident(dt.id)
	bt := sqlquote.Ident(pullBaseAlias) + "." + sqlquote.Ident(c.schema) + "." + sqlquote.Ident(name)
	ids := p.gone[dt.idFrom]
	if dt.idFrom == "" {
		ids = sqlquote.Ident("fdl_gone_" + name)
		q := fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT DISTINCT b.%s AS id FROM %s b ANTI JOIN %s h ON b.%s = h.%s WHERE b.%s",
			ids, id, bt, c.t(name), id, id, dt.old)
		if _, err := c.conn.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("pull into %s: table %s: %w", p.dst, name, err)
		}
		p.gone[name] = ids
	}
	var want int64
	q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IN (SELECT id FROM %s)", bt, id, ids)
	if err := c.conn.QueryRowContext(ctx, q).Scan(&want); err != nil {
		return "", fmt.Errorf("pull into %s: table %s: %w", p.dst, name, err)
	}
	if want == 0 {
		return "", nil
	}
	list, err := c.conn.QueryContext(ctx, "SELECT id FROM "+ids+" ORDER BY id")
	if err != nil {
		return "", fmt.Errorf("pull into %s: table %s: %w", p.dst, name, err)
	}
	var all []int64
	for list.Next() {
		var v int64
		if err := list.Scan(&v); err != nil {
			list.Close()
			return "", err
		}
		all = append(all, v)
	}
	list.Close()
	if err := list.Err(); err != nil {
		return "", err
	}
	tmp := "temp." + sqlquote.Ident("fdl_gone_"+name)
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE "+sqlquote.Ident("fdl_gone_"+name)+" (id INTEGER PRIMARY KEY)"); err != nil {
		return "", p.fail("delete from "+name, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+tmp)
	for len(all) > 0 {
		n := min(len(all), 500)
		args := make([]any, n)
		for i := range args {
			args[i] = all[i]
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO "+tmp+" VALUES "+strings.Repeat("(?), ", n-1)+"(?)", args...); err != nil {
			return "", p.fail("delete from "+name, err)
		}
		all = all[n:]
	}
	res, err := conn.ExecContext(ctx, fmt.Sprintf("DELETE FROM main.%s WHERE %s IN (SELECT id FROM %s)", sqlquote.Ident(name), id, tmp))
	if err != nil {
		return "", p.fail("delete from "+name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != want {
		return fmt.Sprintf("%d of its rows are gone from the new version, and %d matched the working catalog's", want, n), nil
	}
	return "", nil
}

// dropGone drops the DuckDB temporary tables of deleted ids.
func (p *pullRun) dropGone() {
	for _, t := range p.gone {
		p.c.conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+t)
	}
}

// endRows sets, in the working catalog, the end_snapshot of table i's
// rows the new version ended after S (copied into a temporary table
// first), matching each by its id (data and delete files) or by all its
// other columns, and says why not when the rows matched are not exactly
// those.
func (p *pullRun) endRows(ctx context.Context, conn *sql.Conn, i int) (string, error) {
	pt := p.tables[i]
	dt, name := pt.dt, pt.d.name
	end := sqlquote.Ident(dt.end)
	tmpName := sqlquote.Ident("fdl_ended_" + name)
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE "+tmpName+" AS SELECT * FROM main."+sqlquote.Ident(name)+" WHERE 0"); err != nil {
		return "", p.fail("end rows of "+name, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp."+tmpName)
	n, err := p.copyRows(ctx, conn, i, rowsOf{where: fmt.Sprintf("(%s) AND %s > %d", dt.old, end, p.snap), into: "temp." + tmpName})
	if err != nil || n == 0 {
		return "", err
	}
	var match []string
	for _, c := range pt.d.cols {
		q := sqlquote.Ident(c)
		switch {
		case c == dt.end:
		case dt.id != "" && dt.id != "snapshot_id":
			if c == dt.id {
				match = append(match, "m."+q+" = e."+q)
			}
		default:
			match = append(match, "m."+q+" IS e."+q)
		}
	}
	q := fmt.Sprintf("UPDATE main.%s AS m SET %s = e.%s FROM temp.%s AS e WHERE m.%s IS NULL AND %s",
		sqlquote.Ident(name), end, end, tmpName, end, strings.Join(match, " AND "))
	res, err := conn.ExecContext(ctx, q)
	if err != nil {
		return "", p.fail("end rows of "+name, err)
	}
	if got, err := res.RowsAffected(); err != nil || got != n {
		return fmt.Sprintf("%d of its rows ended after the base's snapshot, and %d matched the working catalog's", n, got), nil
	}
	return "", nil
}

// checkTable compares pt in the working catalog with the new version's:
// its row count and, but for a table counted only (idFrom), the row
// count and per-column sums of its rows at S (sumExprs).
func (p *pullRun) checkTable(ctx context.Context, conn *sql.Conn, pt *pullTable) (string, error) {
	dt, name := pt.dt, pt.d.name
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM main."+sqlquote.Ident(name)).Scan(&n); err != nil {
		return "", p.fail("read "+name, err)
	}
	if n != pt.rows {
		return fmt.Sprintf("it has %d rows, the new version %d", n, pt.rows), nil
	}
	if dt.idFrom != "" {
		return "", nil
	}
	exprs := sumExprs(dt, true)
	got, err := scanSums(conn.QueryRowContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM main."+sqlquote.Ident(name)+" WHERE "+dt.old), len(exprs))
	if err != nil {
		return "", p.fail("read "+name, err)
	}
	if strings.Join(got, "|") != pt.sums {
		return fmt.Sprintf("its rows at the base's snapshot are not the new version's (%s)", differingSums(dt.t, got, strings.Split(pt.sums, "|"))), nil
	}
	return "", nil
}
