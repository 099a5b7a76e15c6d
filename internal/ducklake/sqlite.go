package ducklake

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	sqlite3 "github.com/mattn/go-sqlite3" // registers the "sqlite3" database/sql driver (cgo, bundles SQLite)

	"github.com/fdl-dev/fdl/internal/filelock"
	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/internal/sqlquote"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/ducklake/sqlitebulk"
)

// SQLite access settings.
const (
	// SQLiteBusyTimeout is how long one SQLite call waits for a lock held by
	// another process (PRAGMA busy_timeout), in milliseconds. fdl also
	// prints it in the ATTACH line for DuckDB (META_BUSY_TIMEOUT).
	SQLiteBusyTimeout = 5000
	// sqliteRetryDefault bounds how long a read retries after SQLITE_BUSY /
	// SQLITE_LOCKED before it gives up with ErrLocked.
	sqliteRetryDefault = 60 * time.Second
)

// sqliteRetryFor is sqliteRetryDefault (a variable for the tests).
var sqliteRetryFor = sqliteRetryDefault

// sqliteDSN is the mattn/go-sqlite3 DSN of path as a SQLite URI filename
// (the path is percent-encoded, so '?', '#', '%' and spaces are safe).
func sqliteDSN(path string, params string) string {
	u := url.URL{Path: filepath.ToSlash(path)}
	return "file:" + u.EscapedPath() + "?" + params
}

// isSQLiteBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED.
func isSQLiteBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return errors.Is(err, sqlite3.ErrBusy) || errors.Is(err, sqlite3.ErrLocked) // sqlitebulk.Error
}

// classifySQLiteError maps SQLite's corruption codes to ErrCorrupt and
// "file is not a database" to ErrNotCatalog, naming the file. SQLITE_BUSY
// and SQLITE_LOCKED stay what they are (wrapped, so isSQLiteBusy still
// sees them): whatever step meets them, withSQLiteSnapshot retries the
// whole read, and only it turns them into ErrLocked, saying how long it
// waited.
func classifySQLiteError(path, doing string, err error) error {
	code := sqlite3.ErrNo(0)
	var se sqlite3.Error
	var be *sqlitebulk.Error
	switch {
	case errors.As(err, &se):
		code = se.Code
	case errors.As(err, &be):
		code = be.Code
	}
	if code != 0 {
		switch code {
		case sqlite3.ErrCorrupt:
			return fmt.Errorf("%w: %s: %s: %v; restore it from a copy", ErrCorrupt, path, doing, err)
		case sqlite3.ErrNotADB:
			return fmt.Errorf("%w: %s: %v", ErrNotCatalog, path, err)
		}
	}
	return fmt.Errorf("%s: %s: %w", path, doing, err)
}

// sqliteTable is one table of a SQLite catalog, with what is needed to
// rebuild it in DuckDB.
type sqliteTable struct {
	name  string
	kind  tableKind
	cols  []string
	decl  []string // declared SQLite types
	duck  []string // DuckDB types
	pk    []string // PRIMARY KEY columns in key order
	notNu []bool   // NOT NULL
}

// sqliteSnapshot is one read transaction on a SQLite catalog: everything
// read through it is one committed state of the file and its WAL.
type sqliteSnapshot struct {
	path   string
	db     *sql.DB
	conn   *sql.Conn
	tables []*sqliteTable
	format string
	// rowIDCol, when set, is an extra BIGINT column copyInto adds to every
	// table, holding the row's SQLite rowid (CopySQLiteInto).
	rowIDCol string
	// ownTx: copyInto copies each table in a transaction of its own on a
	// connection outside any, and checkpoints after a large one, so what
	// DuckDB holds (a table's key index above all) goes to the file
	// before the next table: memory stays within DuckDB's limit whatever
	// the catalog's size.
	ownTx bool
	// checkLast: PRAGMA quick_check was not run on opening; copyInto's
	// dumper runs it, in the same read transaction, once every table is
	// dumped, while DuckDB is still reading the dumps, and copyInto fails
	// with its error (freeze: the check, a read of every page, is then
	// off the command's critical path).
	checkLast bool
}

// openSQLiteSnapshot checks the file and its WAL (checkSQLiteFile), opens it
// read-only (SQLite URI mode=ro: it is never written, and closing never
// checkpoints; one connection used by one goroutine at a time, so without
// SQLite's per-call mutex), starts a read transaction and reads the table
// layout inside it. In WAL mode the transaction sees the last commit before it started
// while other processes go on writing. Busy errors are returned as they are
// (withSQLiteSnapshot retries them).
func openSQLiteSnapshot(ctx context.Context, path string, check sqliteCheck) (s *sqliteSnapshot, err error) {
	if _, err := checkSQLiteFile(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite3", sqliteDSN(path, "mode=ro&_mutex=no&_busy_timeout="+strconv.Itoa(SQLiteBusyTimeout)))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	s = &sqliteSnapshot{path: path, db: db, checkLast: check == checkLast}
	snap := s
	defer func() {
		if err != nil {
			snap.close()
		}
	}()
	if s.conn, err = db.Conn(ctx); err != nil {
		return nil, classifySQLiteError(path, "open", err)
	}
	if _, err = s.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, classifySQLiteError(path, "begin a read transaction", err)
	}
	// The first read takes the snapshot (and the WAL read lock).
	var n int64
	if err = s.conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		if isSQLiteBusy(err) {
			return nil, err
		}
		return nil, classifySQLiteError(path, "read the schema", err)
	}
	if check == checkOnOpen {
		if err = s.quickCheck(ctx); err != nil {
			return nil, err
		}
	}
	if err = s.readLayout(ctx); err != nil {
		return nil, s.damageFirst(ctx, check, err)
	}
	return s, nil
}

// damageFirst returns, for a read that failed with err on a snapshot
// whose quick_check has not run yet (checkNone, checkLast), the check's
// error when it finds the file damaged (a damaged page reads as a row
// that is not there, a table whose columns look unsupported), else err:
// damage is reported as damage whichever read meets it first. Busy errors
// and snapshots checked on opening return err as it is.
func (s *sqliteSnapshot) damageFirst(ctx context.Context, check sqliteCheck, err error) error {
	if check == checkOnOpen || isSQLiteBusy(err) {
		return err
	}
	if cerr := s.quickCheck(ctx); cerr != nil && !isSQLiteBusy(cerr) {
		return cerr
	}
	return err
}

func (s *sqliteSnapshot) close() {
	if s.conn != nil {
		_, _ = s.conn.ExecContext(context.Background(), "ROLLBACK")
		s.conn.Close()
		s.conn = nil
	}
	if s.db != nil {
		s.db.Close()
		s.db = nil
	}
}

// quickCheck runs PRAGMA quick_check on the snapshot: it finds pages cut off
// by truncation and damaged b-trees.
func (s *sqliteSnapshot) quickCheck(ctx context.Context) error {
	rows, err := s.conn.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		if isSQLiteBusy(err) {
			return err
		}
		return classifySQLiteError(s.path, "check the database", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return classifySQLiteError(s.path, "check the database", err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		if isSQLiteBusy(err) {
			return err
		}
		return classifySQLiteError(s.path, "check the database", err)
	}
	if len(msgs) != 1 || msgs[0] != "ok" {
		return fmt.Errorf("%w: %s: SQLite's quick_check reports: %s; restore it from a copy", ErrCorrupt, s.path, strings.Join(msgs, "; "))
	}
	return nil
}

// readLayout lists the tables, their columns, declared types and
// constraints, maps each column to its DuckDB type, and reads the format.
func (s *sqliteSnapshot) readLayout(ctx context.Context) error {
	rows, err := s.conn.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid")
	if err != nil {
		return classifySQLiteError(s.path, "list tables", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return classifySQLiteError(s.path, "list tables", err)
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return classifySQLiteError(s.path, "list tables", err)
	}
	byName := map[string]*sqliteTable{}
	for _, n := range names {
		t := &sqliteTable{name: n, kind: classifyTable(n)}
		if err := s.readColumns(ctx, t); err != nil {
			return err
		}
		s.tables = append(s.tables, t)
		byName[n] = t
	}
	if byName["ducklake_metadata"] == nil || byName["ducklake_snapshot"] == nil {
		return fmt.Errorf("%w: %s is a SQLite database without the ducklake_metadata and ducklake_snapshot tables", ErrNotCatalog, s.path)
	}
	var version sql.NullString
	q := `SELECT "value" FROM ducklake_metadata WHERE "key" = 'version'`
	if slices.Contains(byName["ducklake_metadata"].cols, "scope") {
		q += ` AND "scope" IS NULL`
	}
	err = s.conn.QueryRowContext(ctx, q+" LIMIT 1").Scan(&version)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !version.Valid) {
		return fmt.Errorf("%w: %s: ducklake_metadata has no 'version' row", ErrNotCatalog, s.path)
	}
	if err != nil {
		return classifySQLiteError(s.path, "read ducklake_metadata", err)
	}
	if !slices.Contains(supportedFormats, version.String) {
		return fmt.Errorf("%w %q in %s (supported: %s)", ErrUnsupportedFormat, version.String, s.path, strings.Join(supportedFormats, ", "))
	}
	s.format = version.String
	return s.resolveTypes(ctx, byName)
}

func (s *sqliteSnapshot) readColumns(ctx context.Context, t *sqliteTable) error {
	rows, err := s.conn.QueryContext(ctx, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?) ORDER BY cid", t.name)
	if err != nil {
		return classifySQLiteError(s.path, "read the columns of "+t.name, err)
	}
	defer rows.Close()
	type pkCol struct {
		name string
		pos  int
	}
	var pks []pkCol
	for rows.Next() {
		var name, typ string
		var notNull, pk int
		if err := rows.Scan(&name, &typ, &notNull, &pk); err != nil {
			return classifySQLiteError(s.path, "read the columns of "+t.name, err)
		}
		t.cols = append(t.cols, name)
		t.decl = append(t.decl, typ)
		t.notNu = append(t.notNu, notNull != 0)
		if pk > 0 {
			pks = append(pks, pkCol{name, pk})
		}
	}
	if err := rows.Err(); err != nil {
		return classifySQLiteError(s.path, "read the columns of "+t.name, err)
	}
	slices.SortFunc(pks, func(a, b pkCol) int { return a.pos - b.pos })
	for _, p := range pks {
		t.pk = append(t.pk, p.name)
	}
	return nil
}

// resolveTypes gives every column of every table its DuckDB type: from
// metadataColumns for ducklake_* tables, BIGINT for inlined deletions, and
// for inlined-data tables from the ducklake_column rows of the table as it
// was at the inlined table's schema version. A table or column fdl cannot
// type exactly is refused with ErrUnsupportedFormat.
func (s *sqliteSnapshot) resolveTypes(ctx context.Context, byName map[string]*sqliteTable) error {
	var lake *lakeColumns
	for _, t := range s.tables {
		t.duck = make([]string, len(t.cols))
		switch t.kind {
		case kindMetadata:
			for i, c := range t.cols {
				typ, ok := metadataColumns[t.name][c]
				if !ok {
					return fmt.Errorf("%w: %s (format %s): table %s has a column %s that no DuckLake format fdl knows has", ErrUnsupportedFormat, s.path, s.format, t.name, c)
				}
				t.duck[i] = typ
			}
		case kindInlinedDelete:
			for i := range t.cols {
				t.duck[i] = tBigint
			}
		case kindInlinedData:
			if lake == nil {
				var err error
				if lake, err = s.readLakeColumns(ctx, byName); err != nil {
					return err
				}
			}
			if err := lake.typeInlined(t, inlinedInternalColumns(s.format)); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrUnsupportedFormat, s.path, err)
			}
		default:
			return fmt.Errorf("%w: %s has a table %s that is not a DuckLake table; fdl converts only DuckLake catalogs", ErrUnsupportedFormat, s.path, t.name)
		}
	}
	return nil
}

// lakeColumns holds ducklake_column and the schema version of each snapshot,
// to type inlined-data tables.
type lakeColumns struct {
	rows      []lakeColumnRow
	snapshots [][2]int64 // (snapshot_id, schema_version) ordered by id
	// begins maps (table_id, schema_version) to the snapshot that began
	// that schema version, from ducklake_schema_versions; table_id is -1
	// in formats before 1.0, whose table has no table_id column. The
	// extension keeps these rows when it expires the snapshots
	// (GetBeginSnapshotForSchemaVersion reads them).
	begins map[[2]int64]int64
}

type lakeColumnRow struct {
	id, table, order, begin int64
	end, parent             sql.NullInt64
	name, typ               string
}

func (s *sqliteSnapshot) readLakeColumns(ctx context.Context, byName map[string]*sqliteTable) (*lakeColumns, error) {
	lc := &lakeColumns{}
	if byName["ducklake_column"] == nil {
		return lc, nil
	}
	rows, err := s.conn.QueryContext(ctx, "SELECT column_id, table_id, column_order, begin_snapshot, end_snapshot, parent_column, column_name, column_type FROM ducklake_column")
	if err != nil {
		return nil, classifySQLiteError(s.path, "read ducklake_column", err)
	}
	for rows.Next() {
		var r lakeColumnRow
		if err := rows.Scan(&r.id, &r.table, &r.order, &r.begin, &r.end, &r.parent, &r.name, &r.typ); err != nil {
			rows.Close()
			return nil, classifySQLiteError(s.path, "read ducklake_column", err)
		}
		lc.rows = append(lc.rows, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, classifySQLiteError(s.path, "read ducklake_column", err)
	}
	rows, err = s.conn.QueryContext(ctx, "SELECT snapshot_id, schema_version FROM ducklake_snapshot ORDER BY snapshot_id")
	if err != nil {
		return nil, classifySQLiteError(s.path, "read ducklake_snapshot", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var sv sql.NullInt64
		if err := rows.Scan(&id, &sv); err != nil {
			return nil, classifySQLiteError(s.path, "read ducklake_snapshot", err)
		}
		lc.snapshots = append(lc.snapshots, [2]int64{id, sv.Int64})
	}
	if err := rows.Err(); err != nil {
		return nil, classifySQLiteError(s.path, "read ducklake_snapshot", err)
	}
	rows.Close()
	return lc, s.readSchemaBegins(ctx, byName["ducklake_schema_versions"], lc)
}

// readSchemaBegins fills lc.begins from ducklake_schema_versions (t; nil
// when the catalog has no such table).
func (s *sqliteSnapshot) readSchemaBegins(ctx context.Context, t *sqliteTable, lc *lakeColumns) error {
	if t == nil {
		return nil
	}
	q := "SELECT -1, schema_version, begin_snapshot FROM ducklake_schema_versions"
	if slices.Contains(t.cols, "table_id") {
		q = "SELECT coalesce(table_id, -1), schema_version, begin_snapshot FROM ducklake_schema_versions"
	}
	rows, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return classifySQLiteError(s.path, "read ducklake_schema_versions", err)
	}
	defer rows.Close()
	lc.begins = map[[2]int64]int64{}
	for rows.Next() {
		var table, sv, begin sql.NullInt64
		if err := rows.Scan(&table, &sv, &begin); err != nil {
			return classifySQLiteError(s.path, "read ducklake_schema_versions", err)
		}
		if sv.Valid && begin.Valid {
			lc.begins[[2]int64{table.Int64, sv.Int64}] = begin.Int64
		}
	}
	return rows.Err()
}

// typeInlined sets the DuckDB types of an inlined-data table
// ducklake_inlined_data_<table_id>_<schema_version>: its first three
// columns (internal: row_id, begin_snapshot, end_snapshot, with the prefix
// "_ducklake_" from DuckLake 1.1 on) are BIGINT; the other columns are the table's top-level
// columns at the first snapshot with that schema version, in column_order
// (the extension creates the table from exactly these:
// GetInlinedTableQuery). When that snapshot no longer exists (expired) the
// snapshot ducklake_schema_versions records as its beginning stands in;
// failing that each column is looked up by name among the table's columns,
// which must then all have one type.
func (lc *lakeColumns) typeInlined(t *sqliteTable, internal []string) error {
	m := inlinedDataRE.FindStringSubmatch(t.name)
	tableID, _ := strconv.ParseInt(m[1], 10, 64)
	sv, _ := strconv.ParseInt(m[2], 10, 64)
	if len(t.cols) < len(internal) || !slices.Equal(t.cols[:3], internal) {
		return fmt.Errorf("inlined-data table %s does not start with columns %v", t.name, internal)
	}
	user := t.cols[3:]
	for i := 0; i < 3; i++ {
		t.duck[i] = tBigint
	}
	tree := lc.columnTree(tableID)
	if at, top := lc.topColumnsAt(tableID, sv); at >= 0 && slices.Equal(lakeColumnNames(top), user) {
		for i, r := range top {
			typ, err := duckDBTypeOf(tree(r, at))
			if err != nil {
				return fmt.Errorf("inlined-data table %s: %v", t.name, err)
			}
			t.duck[3+i] = typ
		}
		return nil
	}
	for i, name := range user {
		typ, err := lc.typeByName(t.name, tableID, name, tree)
		if err != nil {
			return err
		}
		t.duck[3+i] = typ
	}
	return nil
}

// columnTree returns a function building the column a ducklake_column row
// of table tableID describes, with its children visible at snapshot at.
func (lc *lakeColumns) columnTree(tableID int64) func(r lakeColumnRow, at int64) *lakeColumn {
	byParent := map[int64][]lakeColumnRow{}
	for _, r := range lc.rows {
		if r.parent.Valid && r.table == tableID {
			byParent[r.parent.Int64] = append(byParent[r.parent.Int64], r)
		}
	}
	var build func(r lakeColumnRow, at int64) *lakeColumn
	build = func(r lakeColumnRow, at int64) *lakeColumn {
		c := &lakeColumn{id: r.id, name: r.name, typ: r.typ}
		kids := slices.Clone(byParent[r.id])
		slices.SortFunc(kids, func(a, b lakeColumnRow) int { return int(a.order - b.order) })
		for _, k := range kids {
			if visibleAt(k, at) {
				c.children = append(c.children, build(k, at))
			}
		}
		return c
	}
	return build
}

// topColumnsAt returns the first snapshot with schema version sv (when
// none is left, the snapshot ducklake_schema_versions says began it; -1
// when neither is known) and table tableID's top-level columns visible
// there, in column_order.
func (lc *lakeColumns) topColumnsAt(tableID, sv int64) (int64, []lakeColumnRow) {
	at := int64(-1)
	for _, s := range lc.snapshots {
		if s[1] == sv {
			at = s[0]
			break
		}
	}
	if at < 0 {
		// Every snapshot with that schema version expired: the snapshot
		// that began it, as the extension records it.
		b, ok := lc.begins[[2]int64{tableID, sv}]
		if !ok {
			b, ok = lc.begins[[2]int64{-1, sv}]
		}
		if !ok {
			return -1, nil
		}
		at = b
	}
	var top []lakeColumnRow
	for _, r := range lc.rows {
		if r.table == tableID && !r.parent.Valid && visibleAt(r, at) {
			top = append(top, r)
		}
	}
	slices.SortFunc(top, func(a, b lakeColumnRow) int { return int(a.order - b.order) })
	return at, top
}

func lakeColumnNames(rows []lakeColumnRow) []string {
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.name
	}
	return names
}

// typeByName returns the one DuckDB type every top-level column called
// name of table tableID ever had (inlined is the inlined-data table, for
// errors).
func (lc *lakeColumns) typeByName(inlined string, tableID int64, name string, tree func(lakeColumnRow, int64) *lakeColumn) (string, error) {
	typ := ""
	for _, r := range lc.rows {
		if r.table != tableID || r.parent.Valid || r.name != name {
			continue
		}
		got, err := duckDBTypeOf(tree(r, r.begin))
		if err != nil {
			return "", fmt.Errorf("inlined-data table %s: %v", inlined, err)
		}
		if typ != "" && got != typ {
			return "", fmt.Errorf("inlined-data table %s: column %q had types %s and %s; fdl cannot tell which one the table holds", inlined, name, typ, got)
		}
		typ = got
	}
	if typ == "" {
		return "", fmt.Errorf("inlined-data table %s: column %q is not a column of table %d in ducklake_column", inlined, name, tableID)
	}
	return typ, nil
}

func visibleAt(r lakeColumnRow, at int64) bool {
	return r.begin <= at && (!r.end.Valid || at < r.end.Int64)
}

// withSQLiteSnapshot runs fn on a fresh read snapshot of path, again (on a
// new snapshot) while it fails with SQLITE_BUSY or SQLITE_LOCKED, for at
// most sqliteRetryFor; fn must undo its own partial work before returning an
// error. Then the error is ErrLocked, naming the file.
func withSQLiteSnapshot(ctx context.Context, path string, fn func(s *sqliteSnapshot) error) error {
	return withSQLiteSnapshotCheck(ctx, path, checkOnOpen, fn)
}

// sqliteCheck says when a read snapshot of a SQLite catalog runs SQLite's
// quick_check, a read of every page (0.74 s of CPU for a 661 MiB catalog):
// on opening, last (copyInto runs it once every table is dumped), or not
// at all.
type sqliteCheck int

const (
	// checkOnOpen runs quick_check before anything else is read.
	checkOnOpen sqliteCheck = iota
	// checkLast leaves it to copyInto (sqliteSnapshot.checkLast), which
	// fn must call.
	checkLast
	// checkNone runs it only when a read fails (damageFirst): for reads
	// of a few rows that go into no version and no file (SnapshotMarks).
	checkNone
)

// withSQLiteSnapshotCheck is withSQLiteSnapshot, with quick_check run as
// check says.
func withSQLiteSnapshotCheck(ctx context.Context, path string, check sqliteCheck, fn func(s *sqliteSnapshot) error) error {
	return retrySQLiteBusy(ctx, path, func() error {
		s, err := openSQLiteSnapshot(ctx, path, check)
		if err != nil {
			return err
		}
		defer s.close()
		return fn(s)
	})
}

// retrySQLiteBusy runs try again while it fails with SQLITE_BUSY or
// SQLITE_LOCKED, for at most sqliteRetryFor; then the error is ErrLocked,
// naming the file.
func retrySQLiteBusy(ctx context.Context, path string, try func() error) error {
	start := time.Now()
	deadline := start.Add(sqliteRetryFor)
	wait := 20 * time.Millisecond
	for {
		err := try()
		if err == nil || !isSQLiteBusy(err) {
			return err
		}
		if time.Now().After(deadline) {
			// The time waited, as it was: each try may itself wait up to
			// the busy timeout, so it exceeds sqliteRetryFor.
			return lockedError(path, time.Since(start).Truncate(time.Second), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
}

// testHookAfterTable, when set by a test, runs after each table is copied
// (to write to the catalog in the middle of a read).
var testHookAfterTable func(table string)

// appendFlushRows is how many rows copyTable hands DuckDB's Appender before
// it flushes them into the table (the Appender itself flushes every 204,800
// rows, which holds far more memory for wide rows).
const appendFlushRows = 16384

// stageTable names the appended rows in the query that casts them into a
// table (DuckDB's query appender).
const stageTable = "__fdl_stage"

// createTable creates t in the DuckDB database attached as alias (schema
// main) with the DuckDB types and constraints a DuckDB-format catalog of
// the same format gives it (and the rowid column, when asked for).
func (s *sqliteSnapshot) createTable(ctx context.Context, duck *sql.Conn, alias string, t *sqliteTable) error {
	var defs []string
	for i, c := range t.cols {
		d := sqlquote.Ident(c) + " " + t.duck[i]
		if len(t.pk) == 1 && t.pk[0] == c {
			d += " PRIMARY KEY"
		} else if t.notNu[i] {
			d += " NOT NULL"
		}
		defs = append(defs, d)
	}
	if len(t.pk) > 1 {
		var q []string
		for _, p := range t.pk {
			q = append(q, sqlquote.Ident(p))
		}
		defs = append(defs, "PRIMARY KEY ("+strings.Join(q, ", ")+")")
	}
	if s.rowIDCol != "" {
		defs = append(defs, sqlquote.Ident(s.rowIDCol)+" BIGINT")
	}
	if _, err := duck.ExecContext(ctx, "CREATE TABLE "+target(alias, t)+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return fmt.Errorf("convert %s: create %s: %w", s.path, t.name, err)
	}
	return nil
}

// target is the qualified name of t in the DuckDB database alias.
func target(alias string, t *sqliteTable) string {
	return sqlquote.Ident(alias) + ".main." + sqlquote.Ident(t.name)
}

// stages returns the staging type of each column SQLite gives for t
// (stageType; the rowid column last, when asked for), whether they are all
// t's DuckDB types already, and the casts from staged columns named names
// to t's DuckDB types.
func (s *sqliteSnapshot) stages(t *sqliteTable, names []string) (stage []string, direct bool, casts []string) {
	direct = true
	for i := range t.cols {
		stage = append(stage, stageType(t.decl[i]))
		if stage[i] != t.duck[i] {
			direct = false
		}
		casts = append(casts, fmt.Sprintf("CAST(%s AS %s)", sqlquote.Ident(names[i]), t.duck[i]))
	}
	if s.rowIDCol != "" {
		stage = append(stage, tBigint)
		casts = append(casts, sqlquote.Ident(names[len(t.cols)]))
	}
	return stage, direct, casts
}

// copyRows copies every row of t (created by createTable) row by row:
// read from SQLite one at a time and handed to DuckDB's Appender with the
// staging types (appendRows).
func (s *sqliteSnapshot) copyRows(ctx context.Context, duck *sql.Conn, alias string, t *sqliteTable) (int64, error) {
	cols := slices.Clone(t.cols)
	if s.rowIDCol != "" {
		cols = append(cols, s.rowIDCol)
	}
	stage, direct, casts := s.stages(t, cols)
	var cast string
	if !direct {
		cast = "INSERT INTO " + target(alias, t) + " SELECT " + strings.Join(casts, ", ") + " FROM " + sqlquote.Ident(stageTable)
	}
	return s.appendRows(ctx, duck, alias, t, cols, stage, cast)
}

// appendRows reads every row of t from SQLite and appends it with DuckDB's
// Appender: straight into alias.main.t when cast is empty, else through
// cast, the query that inserts the appended rows (named stageTable, with
// the columns cols of the staging types stage) into the table.
func (s *sqliteSnapshot) appendRows(ctx context.Context, duck *sql.Conn, alias string, t *sqliteTable, cols, stage []string, cast string) (int64, error) {
	sel := make([]string, len(t.cols))
	for i, c := range t.cols {
		sel[i] = sqlquote.Ident(c)
	}
	if s.rowIDCol != "" {
		sel = append(sel, "rowid")
	}
	types, err := stageTypes(stage)
	if err != nil {
		return 0, err
	}
	rows, err := s.conn.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+sqlquote.Ident(t.name))
	if err != nil {
		if isSQLiteBusy(err) {
			return 0, err
		}
		return 0, classifySQLiteError(s.path, "read "+t.name, err)
	}
	defer rows.Close()
	// appendErr names the table; a cast that fails is a value that is not
	// what DuckLake stores in that column.
	appendErr := func(err error) error {
		if cast != "" {
			return fmt.Errorf("convert %s: table %s holds a value that is not a %s as DuckLake stores it: %w", s.path, t.name, strings.Join(uniqueSorted(t.duck), "/"), err)
		}
		return fmt.Errorf("convert %s: table %s: %w", s.path, t.name, err)
	}
	var n int64
	err = duck.Raw(func(dc any) error {
		var app *duckdb.Appender
		var err error
		if cast == "" {
			app, err = duckdb.NewAppender(dc.(driver.Conn), alias, "main", t.name)
		} else {
			app, err = duckdb.NewQueryAppender(dc.(driver.Conn), cast, stageTable, types, cols)
		}
		if err != nil {
			return fmt.Errorf("convert %s: table %s: %w", s.path, t.name, err)
		}
		n, err = s.appendAll(rows, app, t.name, sel, stage, appendErr)
		if err != nil {
			app.Close()
			return err
		}
		if err := app.Close(); err != nil {
			return appendErr(err)
		}
		return nil
	})
	return n, err
}

// uniqueSorted returns the distinct strings of xs, sorted.
func uniqueSorted(xs []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(xs)))
}

// stageTypes returns the DuckDB types of the staging types stage.
func stageTypes(stage []string) ([]duckdb.TypeInfo, error) {
	types := make([]duckdb.TypeInfo, len(stage))
	for i, st := range stage {
		typ := map[string]duckdb.Type{tBigint: duckdb.TYPE_BIGINT, tBlob: duckdb.TYPE_BLOB, tVarchar: duckdb.TYPE_VARCHAR}[st]
		var err error
		if types[i], err = duckdb.NewTypeInfo(typ); err != nil {
			return nil, err
		}
	}
	return types, nil
}

// appendAll appends every row of rows (the columns sel of table) to app,
// each value turned into its staging type, flushing every appendFlushRows
// rows. It returns the rows appended.
func (s *sqliteSnapshot) appendAll(rows *sql.Rows, app *duckdb.Appender, table string, sel, stage []string, appendErr func(error) error) (int64, error) {
	vals := make([]any, len(sel))
	ptrs := make([]any, len(sel))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	row := make([]driver.Value, len(sel))
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, classifySQLiteError(s.path, "read "+table, err)
		}
		for i, v := range vals {
			var err error
			if row[i], err = stageValue(v, stage[i]); err != nil {
				return n, fmt.Errorf("%w: %s: table %s, column %s, row %d: %v", ErrCorrupt, s.path, table, sel[i], n+1, err)
			}
		}
		if err := app.AppendRow(row...); err != nil {
			return n, appendErr(err)
		}
		n++
		if n%appendFlushRows == 0 {
			if err := app.Flush(); err != nil {
				return n, appendErr(err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		if isSQLiteBusy(err) {
			return n, err
		}
		return n, classifySQLiteError(s.path, "read "+table, err)
	}
	return n, nil
}

// stageValue turns a value read from SQLite into the Go value the Appender
// takes for the staging type: int64 for BIGINT, []byte for BLOB, string for
// VARCHAR (numbers formatted exactly), nil for NULL.
func stageValue(v any, stage string) (driver.Value, error) {
	if v == nil {
		return nil, nil
	}
	switch stage {
	case tBigint:
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			if x == float64(int64(x)) {
				return int64(x), nil
			}
		case string:
			if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
				return i, nil
			}
		case []byte:
			if i, err := strconv.ParseInt(strings.TrimSpace(string(x)), 10, 64); err == nil {
				return i, nil
			}
		}
		return nil, fmt.Errorf("holds %v (%T) where DuckLake stores an integer", v, v)
	case tBlob:
		switch x := v.(type) {
		case []byte:
			return slices.Clone(x), nil
		case string:
			return []byte(x), nil
		}
		return []byte(formatNumber(v)), nil
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case int64, float64:
		return formatNumber(x), nil
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.999999-07"), nil
	}
	return nil, fmt.Errorf("holds a value of Go type %T", v)
}

// openSQLiteCatalog opens a SQLite-format catalog: it reads one consistent
// snapshot of it (withSQLiteSnapshot) into a private DuckDB database
// attached as the catalog, so every Catalog method reads it as it reads a
// DuckDB-format catalog. The file is opened read-only. So that memory does
// not grow with the catalog, the copy is a temporary DuckDB file (in a
// spill folder, scratch.New, that Close removes, also DuckDB's
// spill folder) written a table at a time with memory_limit 64MB, as Freeze
// writes one (in memory, spilled there, when that folder's path holds '?').
func openSQLiteCatalog(ctx context.Context, path string) (*Catalog, error) {
	var c *Catalog
	err := withSQLiteSnapshot(ctx, path, func(s *sqliteSnapshot) error {
		spill, remove, err := scratch.New(scratch.Spill)
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		limit, err := s.memoryLimit(ctx)
		if err != nil {
			remove()
			return err
		}
		db, conn, err := newDuckDB(ctx, []string{
			"SET memory_limit = " + sqlquote.String(limit),
			"SET temp_directory = " + sqlquote.String(spill),
			"SET TimeZone = 'UTC'",
		})
		if err != nil {
			remove()
			return err
		}
		cc := &Catalog{path: path, db: db, conn: conn, backend: BackendSQLite, spill: spill, spillRemove: remove}
		copyPath := filepath.Join(spill, "catalog.duckdb")
		if strings.Contains(copyPath, "?") {
			copyPath = ":memory:" // DuckDB misplaces the WAL of such a path (walPath); spilled instead
		}
		attach := "ATTACH " + sqlquote.String(copyPath) + " AS " + sqlquote.Ident(catalogAlias)
		// The copy is DuckDB 2.0's own file (storage 999): small blocks
		// while the catalog is small, as for a frozen one (blocksize.go).
		if bs := blockSizeFor(meta.Storage{Number: storageNumberByRelease}, sqliteBytes(path)); copyPath != ":memory:" && bs != defaultBlockSize {
			attach += fmt.Sprintf(" (BLOCK_SIZE %d)", bs)
		}
		if _, err := conn.ExecContext(ctx, attach); err != nil {
			cc.Close()
			return err
		}
		s.ownTx = true
		if _, err := s.copyInto(ctx, conn, catalogAlias, spill); err != nil {
			cc.Close()
			return err
		}
		c = cc
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.load(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// freezeSQLite is Freeze for a SQLite-format source: one consistent read
// snapshot of src (with the rows of its -wal file) becomes a new
// DuckDB-format catalog at dst with the tables and column types a
// DuckDB-format catalog of the same DuckLake format has.
func freezeSQLite(ctx context.Context, srcAbs, dstAbs string) (info FreezeInfo, err error) {
	workParent := filepath.Dir(dstAbs)
	if strings.Contains(workParent, "?") {
		workParent = os.TempDir()
	}
	work, err := os.MkdirTemp(workParent, ".fdl-freeze-*")
	if err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	defer os.RemoveAll(work)
	tmp := filepath.Join(work, "catalog.duckdb")
	var storage meta.Storage
	err = withSQLiteSnapshotCheck(ctx, srcAbs, checkLast, func(s *sqliteSnapshot) error {
		var err error
		storage, err = s.freezeInto(ctx, tmp, work)
		return err
	})
	if err != nil {
		return info, err
	}
	got, err := checkCopy(srcAbs, tmp, storage)
	if err != nil {
		return info, err
	}
	cat, err := Open(ctx, tmp)
	if err != nil {
		return info, fmt.Errorf("freeze %s: the copy does not open: %w", srcAbs, err)
	}
	last, err := cat.LastSnapshot(ctx)
	format := cat.Format()
	cat.Close()
	if err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	if err := syncFile(tmp); err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	info = FreezeInfo{Format: format, Snapshot: last, Storage: got}
	if info.Size, info.SHA256, err = fileDigest(ctx, tmp); err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	if err := placeNew(tmp, dstAbs); err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	syncDir(filepath.Dir(dstAbs))
	return info, nil
}

// freezeInto writes the snapshot's rows as a new DuckDB database at tmp
// (work is DuckDB's spill folder), in the storage version the extension of
// the catalog's format wrote, and checks each table's row count. It may run
// more than once (withSQLiteSnapshot retries on SQLITE_BUSY): it starts
// from no file.
func (s *sqliteSnapshot) freezeInto(ctx context.Context, tmp, work string) (meta.Storage, error) {
	os.Remove(tmp)
	os.Remove(tmp + ".wal")
	storage := storageForFormat(s.format)
	limit, err := s.memoryLimit(ctx)
	if err != nil {
		return storage, err
	}
	db, conn, err := newDuckDB(ctx, []string{
		"SET memory_limit = " + sqlquote.String(limit),
		"SET temp_directory = " + sqlquote.String(filepath.Join(work, "spill")),
		"SET TimeZone = 'UTC'",
		// Rows of a DuckLake table have no order: DuckDB may insert them
		// in parallel, as Freeze's COPY FROM DATABASE does.
		"SET preserve_insertion_order = false",
	})
	if err != nil {
		return storage, err
	}
	defer releaseDuckDB(db, conn)
	bs := blockSizeOption(blockSizeFor(storage, sqliteBytes(s.path)))
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("ATTACH %s AS %s (STORAGE_VERSION %s%s)", sqlquote.String(tmp), sqlquote.Ident(frozenAlias), sqlquote.String(storage.MinDuckDB), bs)); err != nil {
		return storage, fmt.Errorf("freeze %s: %w", s.path, err)
	}
	// A transaction per table (DuckDB writes a large insert's rows to the
	// file a row group at a time as they come, not to its WAL and then
	// again at the checkpoint), and a checkpoint after each large table.
	s.ownTx = true
	counts, err := s.copyInto(ctx, conn, frozenAlias, work)
	if err == nil {
		err = checkCounts(ctx, conn, frozenAlias, counts)
	}
	if err == nil {
		_, err = conn.ExecContext(ctx, "CHECKPOINT "+sqlquote.Ident(frozenAlias))
	}
	if _, derr := conn.ExecContext(ctx, "DETACH "+sqlquote.Ident(frozenAlias)); err == nil && derr != nil {
		err = derr
	}
	if err != nil {
		return storage, fmt.Errorf("freeze %s: %w", s.path, err)
	}
	return storage, nil
}

// checkCounts checks that each table of alias has the number of rows read.
func checkCounts(ctx context.Context, conn *sql.Conn, alias string, counts map[string]int64) error {
	for t, want := range counts {
		var got int64
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+sqlquote.Ident(alias)+".main."+sqlquote.Ident(t)).Scan(&got); err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("table %s: copy has %d rows, source %d", t, got, want)
		}
	}
	return nil
}

// lockedError is ErrLocked for the SQLite file at path after waited of
// retries: it names the other processes that have the file (or its -wal,
// -shm or -journal file) open, as "pid N (command)", so a person can see
// which writer holds it (filelock.Holders; nothing where they cannot be
// read).
func lockedError(path string, waited time.Duration, err error) error {
	who := ""
	if h := filelock.Holders(path, path+"-wal", path+"-shm", path+"-journal"); len(h) > 0 {
		who = "; it is open in " + strings.Join(h, ", ")
	}
	return fmt.Errorf("%w: %s stayed locked by another process for %s (%v)%s; try again when its writers are idle", ErrLocked, path, waited, err, who)
}
