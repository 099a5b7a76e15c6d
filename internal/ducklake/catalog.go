package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" database/sql driver
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

const catalogAlias = "fdl_catalog"

// requiredColumns are the columns every DuckLake format (0.1 to 1.1) has in
// these tables (DuckLake spec; MANIFEST.md column lists); queries use them
// without checking. A present table lacking one is a layout fdl cannot read.
// Every other column is looked up (Catalog.has) before use.
var requiredColumns = map[string][]string{
	"ducklake_metadata":    {"key", "value"},
	"ducklake_snapshot":    {"snapshot_id"},
	"ducklake_schema":      {"schema_id", "schema_name", "begin_snapshot", "end_snapshot"},
	"ducklake_table":       {"table_id", "schema_id", "table_name", "begin_snapshot", "end_snapshot"},
	"ducklake_view":        {"view_id", "schema_id", "view_name", "begin_snapshot", "end_snapshot"},
	"ducklake_column":      {"column_id", "table_id", "column_order", "column_name", "column_type", "begin_snapshot", "end_snapshot"},
	"ducklake_data_file":   {"data_file_id", "table_id", "path", "begin_snapshot", "end_snapshot", "record_count", "file_size_bytes"},
	"ducklake_delete_file": {"delete_file_id", "table_id", "path", "begin_snapshot", "end_snapshot", "delete_count"},
}

// Catalog is a DuckDB-format DuckLake catalog opened read-only. It holds an
// in-memory DuckDB instance that ATTACHes the file (READ_ONLY), so it holds
// DuckDB's shared file lock until Close. Methods are safe for concurrent use
// (they are serialised).
type Catalog struct {
	mu       sync.Mutex
	path     string
	alias    string // the name the file is attached under; "" is catalogAlias (attachedCatalog sets another)
	db       *sql.DB
	conn     *sql.Conn
	schema   string // schema of the attached database holding ducklake_* (usually "main")
	format   string
	dataPath string
	tables   map[string][]string // present tables -> columns in physical order
	backend  Backend             // the file's catalog database
	spill    string              // DuckDB's spill folder, removed by Close (SQLite catalogs)
	// spillRemove lets go of spill's owner file and removes the folder
	// (scratch.New).
	spillRemove func() error
}

// Open opens the DuckLake catalog at path read-only.
//
// Before DuckDB sees the file its header is sniffed (DetectBackend): a file
// that is neither a DuckDB nor a SQLite database gives ErrNotCatalog.
//
// A SQLite-format catalog is read in one SQLite read transaction (one
// committed state, including rows in its -wal file, while other processes
// may go on writing; retried on SQLITE_BUSY for at most a minute, then
// ErrLocked) into a private temporary DuckDB file (under os.TempDir(),
// removed by Close; memory stays flat whatever the catalog's size) with the
// tables and column types of a DuckDB-format catalog of the same format, so
// every method works alike. The file is opened read-only (SQLite mode=ro) and
// checked first: a truncated file, or a -wal file whose committed frames
// SQLite would silently skip, gives ErrCorrupt; a SQLite file without the
// ducklake tables gives ErrNotCatalog.
//
// A DuckDB-format file is attached READ_ONLY in a private in-memory DuckDB; DuckDB replays a
// committed ".wal" beside the file in memory (the file and the WAL are not
// changed; for a path holding '?' DuckDB looks for the WAL where it writes
// it, see walPath). Errors:
//   - ErrLocked when another process holds DuckDB's write lock on the file
//     (the message names the file and what to do);
//   - ErrNotCatalog when ducklake_metadata or ducklake_snapshot is missing,
//     or ducklake_metadata has no 'version';
//   - ErrUnsupportedFormat when the format string is not one of
//     SupportedFormats (the message names it and lists the supported ones),
//     or a ducklake_* table lacks a column every format has;
//   - os errors (e.g. fs.ErrNotExist) when the file cannot be read.
func Open(ctx context.Context, path string) (*Catalog, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	backend, err := DetectBackend(abs)
	if err != nil {
		return nil, err
	}
	if backend == BackendSQLite {
		return openSQLiteCatalog(ctx, abs)
	}
	if _, err := readHeader(abs); err != nil {
		return nil, err
	}
	// Metadata queries are small: never spill (newDuckDB's baseSettings;
	// an in-memory DuckDB would spill into ".tmp" in the caller's working
	// directory).
	db, conn, err := newDuckDB(ctx, nil)
	if err != nil {
		return nil, err
	}
	c := &Catalog{path: abs, db: db, conn: conn, backend: BackendDuckDB}
	if err := c.attach(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.load(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// attach ATTACHes c.path READ_ONLY as catalogAlias.
func (c *Catalog) attach(ctx context.Context) error {
	q := fmt.Sprintf("ATTACH %s AS %s (READ_ONLY, TYPE DUCKDB)", sqlquote.String(c.path), sqlquote.Ident(catalogAlias))
	if _, err := c.conn.ExecContext(ctx, q); err != nil {
		return classifyAttachError(c.path, err)
	}
	return nil
}

// classifyAttachError maps DuckDB's ATTACH errors to the package's sentinels.
// DuckDB 1.5.6 and 2.0.0 report a held write lock as
//
//	IO Error: Could not set lock on file "<path>": Conflicting lock is held in <program> (PID <n>). See also https://duckdb.org/docs/stable/connect/concurrency
func classifyAttachError(path string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Could not set lock on file") || strings.Contains(msg, "Conflicting lock is held"):
		return fmt.Errorf("%w: %s is open for writing in another process; DETACH it there (or close that DuckDB connection) and try again (duckdb: %s)", ErrLocked, path, msg)
	case strings.Contains(msg, "not a valid DuckDB database file"):
		return fmt.Errorf("%w: %s: %s", ErrNotCatalog, path, msg)
	}
	return fmt.Errorf("attach %s: %w", path, err)
}

// load records the tables and columns present, then reads the format and
// data_path.
func (c *Catalog) load(ctx context.Context) error {
	rows, err := c.conn.QueryContext(ctx, `SELECT schema_name, table_name, column_name FROM duckdb_columns()
		WHERE database_name = ? ORDER BY schema_name, table_name, column_index`, c.attachedAs())
	if err != nil {
		return fmt.Errorf("read tables of %s: %w", c.path, err)
	}
	bySchema := map[string]map[string][]string{}
	for rows.Next() {
		var s, t, col string
		if err := rows.Scan(&s, &t, &col); err != nil {
			rows.Close()
			return err
		}
		if bySchema[s] == nil {
			bySchema[s] = map[string][]string{}
		}
		bySchema[s][t] = append(bySchema[s][t], col)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// The ducklake_* tables live in "main" unless the catalog was created
	// with METADATA_SCHEMA; prefer main, else the first schema (by name)
	// holding both required tables.
	schemas := make([]string, 0, len(bySchema))
	for s := range bySchema {
		schemas = append(schemas, s)
	}
	slices.Sort(schemas)
	if i := slices.Index(schemas, "main"); i > 0 {
		schemas = append([]string{"main"}, slices.Delete(schemas, i, i+1)...)
	}
	for _, s := range schemas {
		t := bySchema[s]
		if t["ducklake_metadata"] != nil && t["ducklake_snapshot"] != nil {
			c.schema, c.tables = s, t
			break
		}
	}
	if c.tables == nil {
		return fmt.Errorf("%w: %s has no ducklake_metadata and ducklake_snapshot tables", ErrNotCatalog, c.path)
	}

	version, ok, err := c.metadataValue(ctx, "version")
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s: ducklake_metadata has no 'version' row", ErrNotCatalog, c.path)
	}
	if !slices.Contains(supportedFormats, version) {
		return fmt.Errorf("%w %q in %s (supported: %s)", ErrUnsupportedFormat, version, c.path, strings.Join(supportedFormats, ", "))
	}
	c.format = version
	for table, cols := range requiredColumns {
		if _, ok := c.tables[table]; !ok {
			continue
		}
		for _, col := range cols {
			if !c.has(table, col) {
				return fmt.Errorf("%w: %s (format %s) has table %s without column %s", ErrUnsupportedFormat, c.path, version, table, col)
			}
		}
	}
	dp, _, err := c.metadataValue(ctx, "data_path")
	if err != nil {
		return err
	}
	c.dataPath = dp
	return nil
}

// metadataValue reads the global value of a ducklake_metadata key (DuckLake
// spec: ducklake_metadata; from 0.2 on rows have a scope, and the global row
// has scope NULL).
func (c *Catalog) metadataValue(ctx context.Context, key string) (string, bool, error) {
	q := fmt.Sprintf(`SELECT "value" FROM %s WHERE "key" = ?`, c.t("ducklake_metadata"))
	if c.has("ducklake_metadata", "scope") {
		q += ` AND "scope" IS NULL`
	}
	q += " LIMIT 1"
	var v sql.NullString
	err := c.conn.QueryRowContext(ctx, q, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read ducklake_metadata %q of %s: %w", key, c.path, err)
	}
	return v.String, v.Valid, nil
}

// Backend returns the catalog database the file is stored in.
func (c *Catalog) Backend() Backend { return c.backend }

// Path returns the absolute path of the catalog file.
func (c *Catalog) Path() string { return c.path }

// Format returns the DuckLake format string (ducklake_metadata key 'version'),
// e.g. "0.4"; it is one of SupportedFormats.
func (c *Catalog) Format() string { return c.format }

// DataPath returns ducklake_metadata 'data_path' exactly as stored (e.g.
// "s3://bucket/data/" or a relative "files/"), or "" when absent.
func (c *Catalog) DataPath() string { return c.dataPath }

// Tables returns the ducklake_* (and inlined-data) tables the catalog file
// actually has, each with its column names in physical order. The map is a
// copy.
func (c *Catalog) Tables() map[string][]string {
	out := make(map[string][]string, len(c.tables))
	for t, cols := range c.tables {
		out[t] = slices.Clone(cols)
	}
	return out
}

// Close detaches the catalog and shuts its DuckDB instance down, releasing
// the file lock. It is safe to call more than once.
func (c *Catalog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	switch {
	case c.conn != nil && c.db != nil:
		errs = append(errs, releaseDuckDB(c.db, c.conn))
	case c.conn != nil:
		errs = append(errs, c.conn.Close())
	case c.db != nil:
		errs = append(errs, closeInstance(c.db))
	}
	c.conn, c.db = nil, nil
	if c.spill != "" {
		errs = append(errs, c.spillRemove())
		c.spill, c.spillRemove = "", nil
	}
	return errors.Join(errs...)
}

// has reports whether the catalog has the table and (when given) all columns.
func (c *Catalog) has(table string, cols ...string) bool {
	have, ok := c.tables[table]
	if !ok {
		return false
	}
	for _, col := range cols {
		if !slices.Contains(have, col) {
			return false
		}
	}
	return true
}

// t returns the fully qualified, quoted name of a catalog table.
func (c *Catalog) t(table string) string {
	return sqlquote.Ident(c.attachedAs()) + "." + sqlquote.Ident(c.schema) + "." + sqlquote.Ident(table)
}

// attachedAs is the name the catalog's file is attached under.
func (c *Catalog) attachedAs() string {
	if c.alias == "" {
		return catalogAlias
	}
	return c.alias
}

// attachedCatalog reads the DuckLake catalog attached as alias on conn
// (a connection the caller keeps and closes; the Catalog must not be
// Closed), as Open would read the file at path: its tables and columns,
// format and data path. It saves a DuckDB instance where one already has
// the file attached (the commit's copy of its base, FreezeOnto). Errors:
// Open's ErrNotCatalog and ErrUnsupportedFormat.
func attachedCatalog(ctx context.Context, conn *sql.Conn, alias, path string) (*Catalog, error) {
	c := &Catalog{path: path, alias: alias, conn: conn, backend: BackendDuckDB}
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// col returns prefix+quoted column when the table has it, else fallback (an
// SQL expression such as "NULL::VARCHAR").
func (c *Catalog) col(table, prefix, column, fallback string) string {
	if c.has(table, column) {
		return prefix + sqlquote.Ident(column)
	}
	return fallback
}

func (c *Catalog) ready() error {
	if c.conn == nil {
		return errors.New("ducklake: catalog is closed")
	}
	return nil
}

// Snapshots returns every row of ducklake_snapshot joined with
// ducklake_snapshot_changes, ordered by snapshot id, times in UTC (DuckLake
// spec: ducklake_snapshot, ducklake_snapshot_changes). Author, Message and
// ExtraInfo are empty where the catalog has no such columns (before 0.3).
func (c *Catalog) Snapshots(ctx context.Context) ([]Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshots(ctx, "ORDER BY s.snapshot_id")
}

// LastSnapshot returns the snapshot with the highest id; ErrSnapshotNotFound
// when ducklake_snapshot is empty.
func (c *Catalog) LastSnapshot(ctx context.Context) (Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.snapshots(ctx, "ORDER BY s.snapshot_id DESC LIMIT 1")
	if err != nil {
		return Snapshot{}, err
	}
	if len(s) == 0 {
		return Snapshot{}, fmt.Errorf("%w: %s has no snapshots", ErrSnapshotNotFound, c.path)
	}
	return s[0], nil
}

func (c *Catalog) snapshots(ctx context.Context, tail string) ([]Snapshot, error) {
	if err := c.ready(); err != nil {
		return nil, err
	}
	const sc = "ducklake_snapshot_changes"
	str := "NULL::VARCHAR"
	changes, author, msg, extra := str, str, str, str
	join := ""
	if c.has(sc, "snapshot_id") {
		changes = c.col(sc, "ch.", "changes_made", str)
		author = c.col(sc, "ch.", "author", str)
		msg = c.col(sc, "ch.", "commit_message", str)
		extra = c.col(sc, "ch.", "commit_extra_info", str)
		join = "LEFT JOIN " + c.t(sc) + " ch ON ch.snapshot_id = s.snapshot_id"
	}
	const snap = "ducklake_snapshot"
	q := fmt.Sprintf(`SELECT s.snapshot_id, %s, %s, %s, %s, %s, %s, %s, %s FROM %s s %s %s`,
		c.col(snap, "s.", "snapshot_time", "NULL::TIMESTAMPTZ"),
		c.col(snap, "s.", "schema_version", "NULL::BIGINT"),
		c.col(snap, "s.", "next_catalog_id", "NULL::BIGINT"),
		c.col(snap, "s.", "next_file_id", "NULL::BIGINT"),
		changes, author, msg, extra, c.t(snap), join, tail)
	rows, err := c.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read snapshots of %s: %w", c.path, err)
	}
	defer rows.Close()
	var out []Snapshot
	for rows.Next() {
		var (
			s                             Snapshot
			t                             sql.NullTime
			sv, nc, nf                    sql.NullInt64
			changes, author, msg, extraSt sql.NullString
		)
		if err := rows.Scan(&s.ID, &t, &sv, &nc, &nf, &changes, &author, &msg, &extraSt); err != nil {
			return nil, fmt.Errorf("read snapshots of %s: %w", c.path, err)
		}
		if t.Valid {
			s.Time = t.Time.UTC()
		}
		s.SchemaVersion, s.NextCatalogID, s.NextFileID = sv.Int64, nc.Int64, nf.Int64
		s.Changes, s.Author, s.Message, s.ExtraInfo = changes.String, author.String, msg.String, extraSt.String
		out = append(out, s)
	}
	return out, rows.Err()
}

// visible is the MVCC rule of docs/spec.md §5.1 (the DuckLake spec's): a row is
// visible at snapshot s when begin_snapshot <= s AND (end_snapshot IS NULL OR
// s < end_snapshot). prefix qualifies the columns ("" or "x.").
func visible(prefix string, s int64) string {
	return fmt.Sprintf("%[1]sbegin_snapshot <= %[2]d AND (%[1]send_snapshot IS NULL OR %[2]d < %[1]send_snapshot)", prefix, s)
}

// DuckDBRelease returns the release of the DuckDB library fdl is built
// with (PRAGMA version: "v1.5.6") and its source id (the commit), read from
// a private in-memory DuckDB.
func DuckDBRelease(ctx context.Context) (release, sourceID string, err error) {
	db, conn, err := newDuckDB(ctx, nil)
	if err != nil {
		return "", "", err
	}
	defer releaseDuckDB(db, conn)
	err = conn.QueryRowContext(ctx, "SELECT library_version, source_id FROM pragma_version()").Scan(&release, &sourceID)
	return release, sourceID, err
}
