package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// ConvertToSQLite writes dst, a new SQLite-format DuckLake catalog holding
// every table and row of the DuckDB-format catalog src, laid out as DuckDB's
// ducklake extension lays out a SQLite catalog of the same DuckLake format:
// the same table and column names; declared SQLite types BIGINT (BOOLEAN and
// integers), VARCHAR (VARCHAR, UUID, TIMESTAMP WITH TIME ZONE, …), DOUBLE or
// BLOB as DuckDB's sqlite extension maps them; the same PRIMARY KEY and NOT
// NULL columns; column names quoted where DuckDB quotes them ("key",
// "value", "scope", "sql", "transform", "type", …). Values are stored as the
// extension stores them: UUIDs as dashed text, booleans as the integers 0
// and 1, timestamps as text in UTC such as "2025-06-24 02:27:07.261+00".
// Inlined-data tables (ducklake_inlined_data_*, ducklake_inlined_delete_*)
// are carried over row for row, typed as the SQLite metadata manager types
// them (FLOAT, DOUBLE, TIMESTAMP WITH TIME ZONE and nested types as VARCHAR
// text that DuckDB casts back exactly). No data is written to Parquet.
//
// dst is left in WAL journal mode (so several processes can attach it) as a
// single file: it is built in a temporary file beside dst, checked (tables
// and row counts), fsynced and moved into place with a create-only link.
// src is attached read-only and never changed. Memory does not grow with
// the catalog: tables are read in ranges of rowids and written in
// multi-row INSERTs in one transaction without a journal, DuckDB with
// memory_limit 64MB (convertReadRows; TestSQLiteMemoryFlat). Freeze
// is the inverse: for every catalog fdl reads, converting to SQLite and back
// gives the same tables, column types, constraints and rows.
//
// Errors: fs.ErrExist when dst (or dst-wal) exists; ErrLocked, ErrNotCatalog,
// ErrUnsupportedFormat as Open gives them, and ErrUnsupportedFormat for a
// table or column fdl cannot type exactly in SQLite (naming it).
func ConvertToSQLite(ctx context.Context, src, dst string) (err error) {
	srcAbs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	dstAbs, err := filepath.Abs(dst)
	if err != nil {
		return err
	}
	for _, p := range []string{dstAbs, dstAbs + "-wal", dstAbs + "-journal"} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("convert %s to SQLite: %s: %w", srcAbs, p, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("convert %s to SQLite: %w", srcAbs, err)
		}
	}
	c, err := Open(ctx, srcAbs)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.backend == BackendSQLite {
		return fmt.Errorf("convert %s to SQLite: %w: it is already a SQLite catalog", srcAbs, ErrUnsupportedFormat)
	}
	if err := c.toSQLiteSettings(ctx); err != nil {
		return err
	}
	tables, err := c.duckLayout(ctx)
	if err != nil {
		return err
	}
	keywords, err := duckKeywords(ctx, c.conn)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Dir(dstAbs), ".fdl-sqlite-*")
	if err != nil {
		return fmt.Errorf("convert %s to SQLite: %w", srcAbs, err)
	}
	defer os.RemoveAll(work)
	tmp := filepath.Join(work, "catalog.sqlite")
	if err := c.writeSQLite(ctx, tmp, tables, keywords, work); err != nil {
		return fmt.Errorf("convert %s to SQLite: %w", srcAbs, err)
	}
	for _, p := range companionsOf(tmp) {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("convert %s to SQLite: SQLite left %s beside the copy", srcAbs, filepath.Base(p))
		}
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := placeNew(tmp, dstAbs); err != nil {
		return fmt.Errorf("convert %s to SQLite: %w", srcAbs, err)
	}
	syncDir(filepath.Dir(dstAbs))
	return nil
}

// toSQLiteSettings sets the catalog's DuckDB for writing its tables into
// SQLite: a spill folder Close removes (DuckDB spills beyond its limit),
// UTC (timestamps as the extension writes them), memory_limit
// convertMemoryMB plus convertThreadMB a thread, and one thread: SQLite's
// inserts (one thread) are the slower end of each table's stream, and one
// thread of DuckDB's COPY keeps ahead of them; a second only takes a core
// from them (68 MiB catalog on 2 cores: 1.6 s against 1.9 s,
// docs/performance.md).
func (c *Catalog) toSQLiteSettings(ctx context.Context) error {
	if err := c.bigQuerySettings(ctx); err != nil {
		return err
	}
	limit := fmt.Sprintf("%dMB", convertMemoryMB+convertThreadMB*(convertThreads+1))
	for _, q := range []string{"SET TimeZone = 'UTC'", "SET memory_limit = " + sqlquote.String(limit), fmt.Sprintf("SET threads = %d", convertThreads)} {
		if _, err := c.conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// duckTable is one table of a DuckDB-format catalog.
type duckTable struct {
	name    string
	kind    tableKind
	cols    []string
	types   []string
	notNull map[string]bool
	pk      []string
}

// duckLayout reads the tables, column types and constraints of the attached
// DuckDB catalog and checks that each can be written to SQLite exactly.
func (c *Catalog) duckLayout(ctx context.Context) ([]*duckTable, error) {
	return c.duckLayoutAlias(ctx, catalogAlias)
}

func (c *Catalog) duckLayoutAlias(ctx context.Context, alias string) ([]*duckTable, error) {
	tables, byName, err := c.duckColumns(ctx, alias)
	if err != nil {
		return nil, err
	}
	if err := c.duckConstraints(ctx, alias, byName); err != nil {
		return nil, err
	}
	for _, t := range tables {
		if err := c.checkConvertible(t); err != nil {
			return nil, err
		}
	}
	return tables, nil
}

// duckColumns reads the tables of the attached catalog alias with their
// columns and types, in the catalog's order.
func (c *Catalog) duckColumns(ctx context.Context, alias string) ([]*duckTable, map[string]*duckTable, error) {
	rows, err := c.conn.QueryContext(ctx, `SELECT table_name, column_name, data_type FROM duckdb_columns()
		WHERE database_name = ? AND schema_name = ? ORDER BY table_oid, column_index`, alias, c.schema)
	if err != nil {
		return nil, nil, fmt.Errorf("read the columns of %s: %w", c.path, err)
	}
	defer rows.Close()
	var tables []*duckTable
	byName := map[string]*duckTable{}
	for rows.Next() {
		var tn, cn, ty string
		if err := rows.Scan(&tn, &cn, &ty); err != nil {
			return nil, nil, err
		}
		t := byName[tn]
		if t == nil {
			t = &duckTable{name: tn, kind: classifyTable(tn), notNull: map[string]bool{}}
			byName[tn] = t
			tables = append(tables, t)
		}
		t.cols = append(t.cols, cn)
		t.types = append(t.types, ty)
	}
	return tables, byName, rows.Err()
}

// duckConstraints reads the PRIMARY KEY and NOT NULL constraints of the
// attached catalog alias into its tables.
func (c *Catalog) duckConstraints(ctx context.Context, alias string, byName map[string]*duckTable) error {
	rows, err := c.conn.QueryContext(ctx, `SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints()
		WHERE database_name = ? AND schema_name = ? AND constraint_type IN ('PRIMARY KEY', 'NOT NULL')`, alias, c.schema)
	if err != nil {
		return fmt.Errorf("read the constraints of %s: %w", c.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var tn, ct string
		var names duckdbList
		if err := rows.Scan(&tn, &ct, &names); err != nil {
			return err
		}
		t := byName[tn]
		if t == nil {
			continue
		}
		if ct == "PRIMARY KEY" {
			t.pk = names
		} else {
			for _, n := range names {
				t.notNull[n] = true
			}
		}
	}
	return rows.Err()
}

// checkConvertible refuses a table that cannot be written to SQLite
// exactly: a metadata table with a column or type no DuckLake format has,
// an inlined table of an unexpected shape, a table that is not DuckLake's.
func (c *Catalog) checkConvertible(t *duckTable) error {
	switch t.kind {
	case kindMetadata:
		for i, col := range t.cols {
			want, ok := metadataColumns[t.name][col]
			if !ok {
				return fmt.Errorf("%w: %s (format %s): table %s has a column %s that no DuckLake format fdl knows has", ErrUnsupportedFormat, c.path, c.format, t.name, col)
			}
			if t.types[i] != want {
				return fmt.Errorf("%w: %s (format %s): column %s.%s is %s, DuckLake stores %s", ErrUnsupportedFormat, c.path, c.format, t.name, col, t.types[i], want)
			}
		}
	case kindInlinedDelete:
		for i, col := range t.cols {
			if t.types[i] != tBigint {
				return fmt.Errorf("%w: %s: column %s.%s is %s, not BIGINT", ErrUnsupportedFormat, c.path, t.name, col, t.types[i])
			}
		}
	case kindInlinedData:
		if internal := inlinedInternalColumns(c.format); len(t.cols) < 3 || strings.Join(t.cols[:3], ",") != strings.Join(internal, ",") {
			return fmt.Errorf("%w: %s: inlined-data table %s does not start with columns %v", ErrUnsupportedFormat, c.path, t.name, internal)
		}
	default:
		return fmt.Errorf("%w: %s has a table %s that is not a DuckLake table; fdl converts only DuckLake catalogs", ErrUnsupportedFormat, c.path, t.name)
	}
	return nil
}

// duckdbList scans a DuckDB VARCHAR[] value.
type duckdbList []string

func (l *duckdbList) Scan(v any) error {
	xs, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list, got %T", v)
	}
	*l = nil
	for _, x := range xs {
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("want a list of strings, got %T", x)
		}
		*l = append(*l, s)
	}
	return nil
}

// duckKeywords returns DuckDB's keywords (duckdb_keywords()), lower-case.
func duckKeywords(ctx context.Context, conn *sql.Conn) (map[string]bool, error) {
	rows, err := conn.QueryContext(ctx, "SELECT lower(keyword_name) FROM duckdb_keywords()")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

var plainIdentRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// sqliteIdent writes a name as DuckDB's KeywordHelper::WriteOptionallyQuoted
// does when the sqlite extension creates a table: bare when it is a
// lower-case identifier and not a keyword, else double-quoted.
func sqliteIdent(name string, keywords map[string]bool) string {
	if plainIdentRE.MatchString(name) && !keywords[name] {
		return name
	}
	return sqlquote.Ident(name)
}

// sqliteCreateTable is the CREATE TABLE statement DuckDB's sqlite extension
// sends to SQLite for t (GetCreateTableSQL; TableCatalogEntry::ColumnsToSQL).
func sqliteCreateTable(t *duckTable, keywords map[string]bool) (string, []string) {
	decls := make([]string, len(t.cols))
	var defs []string
	for i, col := range t.cols {
		decls[i] = sqliteDeclType(t.types[i], t.kind == kindInlinedData && i >= 3)
		d := sqliteIdent(col, keywords) + " " + decls[i]
		if len(t.pk) == 1 && t.pk[0] == col {
			d += " PRIMARY KEY"
		} else if t.notNull[col] {
			d += " NOT NULL"
		}
		defs = append(defs, d)
	}
	if len(t.pk) > 1 {
		var q []string
		for _, p := range t.pk {
			q = append(q, sqliteIdent(p, keywords))
		}
		defs = append(defs, "PRIMARY KEY("+strings.Join(q, ", ")+")")
	}
	return "CREATE TABLE " + sqliteIdent(t.name, keywords) + "(" + strings.Join(defs, ", ") + ")", decls
}

// writeSQLite creates the SQLite file path with every table of c and its
// rows (writeTables; work holds the CSV files of the bulk copy), then
// switches it to WAL journal mode and closes it (SQLite checkpoints and
// removes the WAL when its last connection closes).
func (c *Catalog) writeSQLite(ctx context.Context, path string, tables []*duckTable, keywords map[string]bool, work string) error {
	db, err := sql.Open("sqlite3", sqliteDSN(path, "mode=rwc&_mutex=no&_busy_timeout=5000"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// A new private file: no journal while loading; WAL at the end.
	for _, p := range []string{"PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF"} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return err
		}
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	counts, err := c.writeTables(ctx, conn, tables, keywords, work)
	if err != nil {
		conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	for name, want := range counts {
		var got int64
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+sqlquote.Ident(name)).Scan(&got); err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("table %s: SQLite copy has %d rows, source %d", name, got, want)
		}
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("SQLite did not switch %s to WAL mode (journal_mode %s)", path, mode)
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = FULL"); err != nil {
		return err
	}
	if err := conn.Close(); err != nil {
		return err
	}
	return db.Close()
}

// Batch sizes of ConvertToSQLite. duckdb-go materialises a query's whole
// result before the first row is read, so each table is read in ranges of
// convertReadRows rowids (one query each): memory holds one range, whatever
// the table's size. Rows go to SQLite convertInsertRows at a time in one
// multi-row INSERT (fewer for tables so wide that the statement would have
// more than sqliteMaxParams parameters), which takes about a third less
// time than one INSERT per row (measured on a 68 MiB catalog).
const (
	convertReadRows   = 32768
	convertInsertRows = 64
	sqliteMaxParams   = 32766 // SQLITE_MAX_VARIABLE_NUMBER since SQLite 3.32
	// DuckDB's memory_limit in ConvertToSQLite is convertMemoryMB plus
	// convertThreadMB for each of DuckDB's threads and one more: DuckDB
	// keeps the blocks it has read cached up to its limit (by default
	// most of the machine's memory), and writing a table to CSV needs
	// little, but DuckDB 2.0's COPY allocates a 32 MiB block per thread
	// (a fixed 64MB failed with "failed to allocate data of size 32.0
	// MiB" on a 68 MiB catalog with 2 threads). (Freeze of a SQLite
	// catalog: memoryLimit.)
	convertMemoryMB = 64
	convertThreadMB = 40
	// convertThreads is DuckDB's threads in ConvertToSQLite.
	convertThreads = 1
)

// writeSQLiteTable creates t in SQLite and copies its rows in rowid order,
// each value cast by DuckDB to the SQLite column's type (BOOLEAN to BIGINT
// 0/1, UUID and TIMESTAMP WITH TIME ZONE to VARCHAR text in UTC, …), as
// DuckDB does when the extension inserts into a SQLite table, row by row
// (tables with a DOUBLE or BLOB column; others are copied in bulk, see
// writeSQLite). The table exists already.
func (c *Catalog) writeSQLiteTable(ctx context.Context, conn *sql.Conn, t *duckTable, decls []string) (int64, error) {
	ins, err := newBatchInsert(ctx, conn, t.name, t.cols)
	if err != nil {
		return 0, err
	}
	defer ins.close()
	var lo, hi sql.NullInt64
	if err := c.conn.QueryRowContext(ctx, "SELECT min(rowid), max(rowid) FROM "+c.t(t.name)).Scan(&lo, &hi); err != nil {
		return 0, fmt.Errorf("read %s: %w", t.name, err)
	}
	if !lo.Valid {
		return 0, nil
	}
	sel := make([]string, len(t.cols))
	for i, col := range t.cols {
		sel[i] = fmt.Sprintf("CAST(%s AS %s)", sqlquote.Ident(col), decls[i])
	}
	query := "SELECT " + strings.Join(sel, ", ") + " FROM " + c.t(t.name) + " WHERE rowid >= ? AND rowid < ? ORDER BY rowid"
	ptrs := scanTargets(decls)
	for from := lo.Int64; from <= hi.Int64; from += convertReadRows {
		rows, err := c.conn.QueryContext(ctx, query, from, from+convertReadRows)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", t.name, err)
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return 0, fmt.Errorf("read %s: %w", t.name, err)
			}
			if err := ins.add(ctx, ptrs); err != nil {
				rows.Close()
				return 0, err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("read %s: %w", t.name, err)
		}
	}
	return ins.finish(ctx)
}

// scanTargets returns a scan destination per column for the SQLite types
// decls (NULL-able, a copy of BLOBs).
func scanTargets(decls []string) []any {
	ptrs := make([]any, len(decls))
	for i, d := range decls {
		switch d {
		case tBigint:
			ptrs[i] = new(sql.NullInt64)
		case tDouble:
			ptrs[i] = new(sql.NullFloat64)
		case tBlob:
			ptrs[i] = new([]byte)
		default:
			ptrs[i] = new(sql.NullString)
		}
	}
	return ptrs
}

// scanned returns the value a scan target holds (nil for NULL).
func scanned(p any) any {
	switch x := p.(type) {
	case *sql.NullInt64:
		if x.Valid {
			return x.Int64
		}
	case *sql.NullFloat64:
		if x.Valid {
			return x.Float64
		}
	case *[]byte:
		if *x != nil {
			return *x // Scan stores a copy each time
		}
	case *sql.NullString:
		if x.Valid {
			return x.String
		}
	}
	return nil
}

// batchInsert writes rows to a SQLite table with multi-row INSERTs of as
// many rows as SQLite's parameter limit allows (at most convertInsertRows).
type batchInsert struct {
	conn          *sql.Conn
	table         string
	insert, tuple string
	ncol, per     int
	full          *sql.Stmt
	vals          []any
	n             int64
}

func newBatchInsert(ctx context.Context, conn *sql.Conn, table string, cols []string) (*batchInsert, error) {
	b := &batchInsert{conn: conn, table: table, ncol: len(cols)}
	names := make([]string, len(cols))
	marks := make([]string, len(cols))
	for i, col := range cols {
		names[i], marks[i] = sqlquote.Ident(col), "?"
	}
	b.insert = "INSERT INTO " + sqlquote.Ident(table) + " (" + strings.Join(names, ", ") + ") VALUES "
	b.tuple = "(" + strings.Join(marks, ", ") + ")"
	b.per = max(1, min(convertInsertRows, sqliteMaxParams/b.ncol))
	var err error
	if b.full, err = b.prepare(ctx, b.per); err != nil {
		return nil, err
	}
	b.vals = make([]any, 0, b.per*b.ncol)
	return b, nil
}

func (b *batchInsert) prepare(ctx context.Context, rows int) (*sql.Stmt, error) {
	return b.conn.PrepareContext(ctx, b.insert+strings.TrimSuffix(strings.Repeat(b.tuple+", ", rows), ", "))
}

// add adds the row the scan targets hold, writing a full batch.
func (b *batchInsert) add(ctx context.Context, ptrs []any) error {
	for _, p := range ptrs {
		b.vals = append(b.vals, scanned(p))
	}
	if len(b.vals) < cap(b.vals) {
		return nil
	}
	if _, err := b.full.ExecContext(ctx, b.vals...); err != nil {
		return fmt.Errorf("write %s: %w", b.table, err)
	}
	b.n += int64(b.per)
	b.vals = b.vals[:0]
	return nil
}

// finish writes the last, partial batch and returns the rows written.
func (b *batchInsert) finish(ctx context.Context) (int64, error) {
	if len(b.vals) == 0 {
		return b.n, nil
	}
	k := len(b.vals) / b.ncol
	last, err := b.prepare(ctx, k)
	if err != nil {
		return 0, err
	}
	defer last.Close()
	if _, err := last.ExecContext(ctx, b.vals...); err != nil {
		return 0, fmt.Errorf("write %s: %w", b.table, err)
	}
	return b.n + int64(k), nil
}

func (b *batchInsert) close() { b.full.Close() }
