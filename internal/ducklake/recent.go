package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// What a working catalog's newest snapshots did, read for `fdl status`
// without reading the rest of the catalog: a SQLite catalog is read where
// it lies (no conversion), a DuckDB catalog by a few small queries.

// TableName is a table's schema and name, as of a snapshot.
type TableName struct {
	ID     int64  `json:"id"`
	Schema string `json:"schema"`
	Name   string `json:"name"`
}

// Recent is what ReadRecent returns.
type Recent struct {
	// Snapshots are the catalog's snapshots with id >= the id asked for,
	// ordered by id, times in UTC (as Catalog.Snapshots gives them); when
	// there is none, the last snapshot alone (where the catalog ends).
	Snapshots []Snapshot
	// Tables are the tables and views visible at the snapshot asked for
	// (when it exists) and at the last snapshot, by id (DuckLake gives
	// tables and views ids from one counter, and changes_made names a
	// dropped or altered view by its id); where one was renamed, its name
	// at the last snapshot. Those that began after the snapshot asked
	// for are named too (one created and dropped there is visible at
	// neither end).
	Tables map[int64]TableName
	// Schemas are the schemas' names by id, read as Tables are
	// (changes_made names a dropped schema by its id).
	Schemas map[int64]string
	// Renames are the tables and views renamed after the snapshot asked
	// for, ordered by snapshot and id: DuckLake ends the row and begins
	// one under the same id, and changes_made says created_table (or
	// created_view) with the new name, which is no new table.
	Renames []Rename
}

// Rename is a table or view that took another name (or schema) at
// Snapshot.
type Rename struct {
	Snapshot int64
	From, To TableName
}

// renameQuery returns the query of Recent's renames after from (each
// row: snapshot, id, old schema and name, new schema and name); table
// qualifies a ducklake_* table name for the connection.
func renameQuery(table func(string) string, views bool, from int64) string {
	at := func(s, x string) string {
		return fmt.Sprintf("%[1]s.begin_snapshot <= %[2]s AND (%[1]s.end_snapshot IS NULL OR %[2]s < %[1]s.end_snapshot)", s, x)
	}
	one := func(obj, id, name string) string {
		return fmt.Sprintf(`SELECT n.begin_snapshot AS b, n.%[2]s AS i, os.schema_name AS osn, o.%[3]s AS onm, ns.schema_name AS nsn, n.%[3]s AS nnm FROM %[1]s n JOIN %[1]s o ON o.%[2]s = n.%[2]s AND o.end_snapshot = n.begin_snapshot JOIN %[4]s ns ON ns.schema_id = n.schema_id AND %[5]s JOIN %[4]s os ON os.schema_id = o.schema_id AND %[6]s WHERE n.begin_snapshot > %[7]d AND (o.%[3]s <> n.%[3]s OR o.schema_id <> n.schema_id)`,
			table(obj), id, name, table("ducklake_schema"), at("ns", "n.begin_snapshot"), at("os", "o.begin_snapshot"), from)
	}
	q := one("ducklake_table", "table_id", "table_name")
	if views {
		q += " UNION ALL " + one("ducklake_view", "view_id", "view_name")
	}
	return "SELECT b, i, osn, onm, nsn, nnm FROM (" + q + ") ORDER BY b, i"
}

// scanRename reads one row of renameQuery.
func scanRename(scan func(...any) error) (Rename, error) {
	var r Rename
	err := scan(&r.Snapshot, &r.From.ID, &r.From.Schema, &r.From.Name, &r.To.Schema, &r.To.Name)
	r.To.ID = r.From.ID
	return r, err
}

// put records one row of recentTableQueries: a schema's (Name "") or a
// table's or view's.
func (rec *Recent) put(tn TableName) {
	if tn.Name == "" {
		rec.Schemas[tn.ID] = tn.Schema
		return
	}
	rec.Tables[tn.ID] = tn
}

// ReadRecent opens the catalog at path read-only and returns its
// snapshots with id >= from (from < 0: all of them) and the names of the
// tables visible at from and at the last snapshot. Its cost follows those
// snapshots and the tables, not the data files or statistics: a
// SQLite-format catalog is read in place in one read transaction (one
// committed state, including its -wal file; the file and its WAL are
// checked as Open checks them, except that SQLite's quick_check, which
// reads every page, is left to commit), through the primary key of
// ducklake_snapshot. Errors as Open gives them.
func ReadRecent(ctx context.Context, path string, from int64) (*Recent, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	backend, err := DetectBackend(abs)
	if err != nil {
		return nil, err
	}
	if backend == BackendSQLite {
		var rec *Recent
		err := withSQLiteRead(ctx, abs, func(s *sqliteRead) error {
			var err error
			rec, err = s.recent(ctx, from)
			return err
		})
		if !errors.Is(err, errSlowPath) {
			return rec, err
		}
		// A value fdl cannot read without DuckDB's casts: convert.
	}
	c, err := Open(ctx, abs)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Recent(ctx, from)
}

// Recent is ReadRecent on an open catalog.
func (c *Catalog) Recent(ctx context.Context, from int64) (*Recent, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	snaps, err := c.snapshots(ctx, fmt.Sprintf("WHERE s.snapshot_id >= %d ORDER BY s.snapshot_id", from))
	if err == nil && len(snaps) == 0 {
		snaps, err = c.snapshots(ctx, "ORDER BY s.snapshot_id DESC LIMIT 1")
	}
	if err != nil {
		return nil, err
	}
	rec := &Recent{Snapshots: snaps, Tables: map[int64]TableName{}, Schemas: map[int64]string{}}
	if len(snaps) == 0 || !c.has("ducklake_table") || !c.has("ducklake_schema") {
		return rec, nil
	}
	for _, q := range recentTableQueries(c.t, c.has("ducklake_view"), snaps, from) {
		err := c.query(ctx, q, func(r *sql.Rows) error {
			var tn TableName
			if err := r.Scan(&tn.ID, &tn.Schema, &tn.Name); err != nil {
				return err
			}
			rec.put(tn)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	err = c.query(ctx, renameQuery(c.t, c.has("ducklake_view"), from), func(r *sql.Rows) error {
		rn, err := scanRename(r.Scan)
		rec.Renames = append(rec.Renames, rn)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// recentTableQueries returns the queries of Recent's table names (each
// row: id, schema name, table or view name; a schema's row has the
// empty string for a name), in the order they are read, later rows
// overwriting earlier ones of the same id: the tables and views that
// began after from, each named as at its first
// snapshot there, ordered by begin_snapshot so the latest name wins (so
// one created and dropped among the new snapshots, visible at neither
// end, is still named: DuckLake's changes_made names its drop by id
// only); then those visible at each snapshot recentAt gives. table
// qualifies a ducklake_* table name for the connection.
func recentTableQueries(table func(string) string, views bool, snaps []Snapshot, from int64) []string {
	var out []string
	born := func(obj, id, name string) string {
		return fmt.Sprintf(`SELECT o.%[2]s AS i, s.schema_name AS sn, o.%[3]s AS n, o.begin_snapshot AS b FROM %[1]s o JOIN %[4]s s ON s.schema_id = o.schema_id AND s.begin_snapshot <= o.begin_snapshot AND (s.end_snapshot IS NULL OR o.begin_snapshot < s.end_snapshot) WHERE o.begin_snapshot > %[5]d`,
			table(obj), id, name, table("ducklake_schema"), from)
	}
	q := born("ducklake_table", "table_id", "table_name")
	if views {
		q += " UNION ALL " + born("ducklake_view", "view_id", "view_name")
	}
	q += fmt.Sprintf(" UNION ALL SELECT schema_id, schema_name, '', begin_snapshot FROM %s WHERE begin_snapshot > %d", table("ducklake_schema"), from)
	out = append(out, "SELECT i, sn, n FROM ("+q+") ORDER BY b")
	for _, at := range recentAt(snaps, from) {
		q := fmt.Sprintf(`SELECT t.table_id, s.schema_name, t.table_name FROM %s t JOIN %s s ON s.schema_id = t.schema_id AND %s WHERE %s`,
			table("ducklake_table"), table("ducklake_schema"), visible("s.", at), visible("t.", at))
		if views {
			q += fmt.Sprintf(` UNION ALL SELECT v.view_id, s.schema_name, v.view_name FROM %s v JOIN %s s ON s.schema_id = v.schema_id AND %s WHERE %s`,
				table("ducklake_view"), table("ducklake_schema"), visible("s.", at), visible("v.", at))
		}
		q += fmt.Sprintf(" UNION ALL SELECT s.schema_id, s.schema_name, '' FROM %s s WHERE %s", table("ducklake_schema"), visible("s.", at))
		out = append(out, q)
	}
	return out
}

// recentAt returns the snapshots whose tables Recent names: from (when it
// is one of snaps) and then the last, so the last one's names win.
func recentAt(snaps []Snapshot, from int64) []int64 {
	last := snaps[len(snaps)-1].ID
	if from >= 0 && from != last && slices.ContainsFunc(snaps, func(s Snapshot) bool { return s.ID == from }) {
		return []int64{from, last}
	}
	return []int64{last}
}

// errSlowPath: a SQLite catalog holds a value the direct reader does not
// parse (a snapshot time in a form DuckDB's cast reads but fdl's does not);
// ReadRecent then converts the catalog as Open does.
var errSlowPath = errors.New("read through a conversion")

// sqliteRead is a read transaction on a SQLite catalog without the layout
// and type work a conversion needs (openSQLiteSnapshot).
type sqliteRead struct {
	path string
	db   *sql.DB
	conn *sql.Conn
	cols map[string][]string // table -> columns, for the tables read
}

// withSQLiteRead runs fn in a read transaction on the SQLite catalog at
// path, retried on SQLITE_BUSY as withSQLiteSnapshot does.
func withSQLiteRead(ctx context.Context, path string, fn func(s *sqliteRead) error) error {
	return retrySQLiteBusy(ctx, path, func() error {
		s, err := openSQLiteRead(ctx, path)
		if err != nil {
			return err
		}
		defer s.close()
		return fn(s)
	})
}

func openSQLiteRead(ctx context.Context, path string) (s *sqliteRead, err error) {
	if _, err := checkSQLiteFile(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite3", sqliteDSN(path, "mode=ro&_busy_timeout="+strconv.Itoa(SQLiteBusyTimeout)))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	s = &sqliteRead{path: path, db: db, cols: map[string][]string{}}
	// The deferred close holds its own copy: a failing return sets s to
	// nil before it runs.
	rd := s
	defer func() {
		if err != nil {
			rd.close()
		}
	}()
	if s.conn, err = db.Conn(ctx); err != nil {
		return nil, classifySQLiteError(path, "open", err)
	}
	if _, err = s.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, classifySQLiteError(path, "begin a read transaction", err)
	}
	for _, t := range []string{"ducklake_metadata", "ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_table", "ducklake_schema", "ducklake_view"} {
		if err := s.readColumns(ctx, t); err != nil {
			return nil, err
		}
	}
	if s.cols["ducklake_metadata"] == nil || s.cols["ducklake_snapshot"] == nil {
		return nil, fmt.Errorf("%w: %s is a SQLite database without the ducklake_metadata and ducklake_snapshot tables", ErrNotCatalog, path)
	}
	return s, s.checkFormat(ctx)
}

func (s *sqliteRead) close() {
	if s.conn != nil {
		_, _ = s.conn.ExecContext(context.Background(), "ROLLBACK")
		s.conn.Close()
	}
	if s.db != nil {
		s.db.Close()
	}
}

// readColumns records the columns of table (none when it does not exist).
func (s *sqliteRead) readColumns(ctx context.Context, table string) error {
	rows, err := s.conn.QueryContext(ctx, "SELECT name FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return s.fail("read the columns of "+table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return s.fail("read the columns of "+table, err)
		}
		s.cols[table] = append(s.cols[table], c)
	}
	if err := rows.Err(); err != nil {
		return s.fail("read the columns of "+table, err)
	}
	return nil
}

// fail classifies err; busy errors pass unchanged (to be retried).
func (s *sqliteRead) fail(doing string, err error) error {
	if isSQLiteBusy(err) {
		return err
	}
	return classifySQLiteError(s.path, doing, err)
}

// checkFormat refuses a format fdl does not read, as Open does.
func (s *sqliteRead) checkFormat(ctx context.Context) error {
	q := `SELECT "value" FROM ducklake_metadata WHERE "key" = 'version'`
	if slices.Contains(s.cols["ducklake_metadata"], "scope") {
		q += ` AND "scope" IS NULL`
	}
	var v sql.NullString
	err := s.conn.QueryRowContext(ctx, q+" LIMIT 1").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !v.Valid) {
		return fmt.Errorf("%w: %s: ducklake_metadata has no 'version' row", ErrNotCatalog, s.path)
	}
	if err != nil {
		return s.fail("read ducklake_metadata", err)
	}
	if !slices.Contains(supportedFormats, v.String) {
		return fmt.Errorf("%w %q in %s (supported: %s)", ErrUnsupportedFormat, v.String, s.path, strings.Join(supportedFormats, ", "))
	}
	return nil
}

// col returns prefix+column when table has it, else NULL.
func (s *sqliteRead) col(table, prefix, column string) string {
	if slices.Contains(s.cols[table], column) {
		return prefix + sqlquote.Ident(column)
	}
	return "NULL"
}

// recent reads what ReadRecent returns.
func (s *sqliteRead) recent(ctx context.Context, from int64) (*Recent, error) {
	snaps, err := s.snapshots(ctx, "WHERE s.snapshot_id >= ? ORDER BY s.snapshot_id", from)
	if err == nil && len(snaps) == 0 {
		snaps, err = s.snapshots(ctx, "ORDER BY s.snapshot_id DESC LIMIT 1")
	}
	if err != nil {
		return nil, err
	}
	rec := &Recent{Snapshots: snaps, Tables: map[int64]TableName{}, Schemas: map[int64]string{}}
	if len(snaps) == 0 || s.cols["ducklake_table"] == nil || s.cols["ducklake_schema"] == nil {
		return rec, nil
	}
	plain := func(table string) string { return table }
	for _, q := range recentTableQueries(plain, s.cols["ducklake_view"] != nil, snaps, from) {
		rows, err := s.conn.QueryContext(ctx, q)
		if err != nil {
			return nil, s.fail("read ducklake_table", err)
		}
		for rows.Next() {
			var tn TableName
			if err := rows.Scan(&tn.ID, &tn.Schema, &tn.Name); err != nil {
				rows.Close()
				return nil, s.fail("read ducklake_table", err)
			}
			rec.put(tn)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, s.fail("read ducklake_table", err)
		}
	}
	rows, err := s.conn.QueryContext(ctx, renameQuery(plain, s.cols["ducklake_view"] != nil, from))
	if err != nil {
		return nil, s.fail("read ducklake_table", err)
	}
	defer rows.Close()
	for rows.Next() {
		rn, err := scanRename(rows.Scan)
		if err != nil {
			return nil, s.fail("read ducklake_table", err)
		}
		rec.Renames = append(rec.Renames, rn)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read ducklake_table", err)
	}
	return rec, nil
}

// snapshots reads the snapshots tail selects (a WHERE and ORDER BY on
// alias s, with args), with their changes.
func (s *sqliteRead) snapshots(ctx context.Context, tail string, args ...any) ([]Snapshot, error) {
	const sn, sc = "ducklake_snapshot", "ducklake_snapshot_changes"
	changes, author, msg, extra, join := "NULL", "NULL", "NULL", "NULL", ""
	if slices.Contains(s.cols[sc], "snapshot_id") {
		changes, author = s.col(sc, "ch.", "changes_made"), s.col(sc, "ch.", "author")
		msg, extra = s.col(sc, "ch.", "commit_message"), s.col(sc, "ch.", "commit_extra_info")
		join = "LEFT JOIN " + sc + " ch ON ch.snapshot_id = s.snapshot_id"
	}
	q := fmt.Sprintf(`SELECT s.snapshot_id, %s, %s, %s, %s, %s, %s, %s, %s FROM %s s %s %s`,
		s.col(sn, "s.", "snapshot_time"), s.col(sn, "s.", "schema_version"), s.col(sn, "s.", "next_catalog_id"), s.col(sn, "s.", "next_file_id"),
		changes, author, msg, extra, sn, join, tail)
	rows, err := s.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.fail("read ducklake_snapshot", err)
	}
	defer rows.Close()
	var out []Snapshot
	for rows.Next() {
		var (
			snap                         Snapshot
			t                            any
			sv, nc, nf                   sql.NullInt64
			changes, author, msg, extraS sql.NullString
		)
		if err := rows.Scan(&snap.ID, &t, &sv, &nc, &nf, &changes, &author, &msg, &extraS); err != nil {
			return nil, s.fail("read ducklake_snapshot", err)
		}
		if snap.Time, err = sqliteTime(t); err != nil {
			return nil, err
		}
		snap.SchemaVersion, snap.NextCatalogID, snap.NextFileID = sv.Int64, nc.Int64, nf.Int64
		snap.Changes, snap.Author, snap.Message, snap.ExtraInfo = changes.String, author.String, msg.String, extraS.String
		out = append(out, snap)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read ducklake_snapshot", err)
	}
	return out, nil
}

// sqliteTimeLayouts are the forms of a TIMESTAMP WITH TIME ZONE as text in
// a SQLite catalog: DuckDB writes "2025-06-24 02:27:07.261+00" (UTC, the
// fraction only as long as needed; the offset as hours, or hours and
// minutes outside whole-hour zones); RFC 3339; a time without a zone is
// UTC (the TimeZone fdl's conversions run in).
var sqliteTimeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07",
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999-07:00:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// sqliteTime reads a snapshot_time value as DuckDB's cast to TIMESTAMP
// WITH TIME ZONE reads it (microseconds, UTC); NULL is the zero time. A
// form it does not know is errSlowPath.
func sqliteTime(v any) (time.Time, error) {
	var s string
	switch x := v.(type) {
	case nil:
		return time.Time{}, nil
	case time.Time: // the driver parses columns declared as timestamps
		return x.UTC().Truncate(time.Microsecond), nil
	case string:
		s = x
	case []byte:
		s = string(x)
	default:
		return time.Time{}, errSlowPath
	}
	for _, l := range sqliteTimeLayouts {
		if t, err := time.Parse(l, strings.TrimSpace(s)); err == nil {
			return t.UTC().Truncate(time.Microsecond), nil
		}
	}
	return time.Time{}, errSlowPath
}
