// Package lakewriter writes DuckLake catalogs with plain SQL, the way DuckDB's
// ducklake extension writes them, without needing the extension. It writes
// DuckDB-format catalogs directly and SQLite-format ones through an
// in-memory mirror (sqlite.go).
//
// fdl uses [Create] to make new working catalogs; the demo and the tests use
// the [Writer] returned by [Open] to add snapshots (tables, inserts, deletes,
// compactions, schema changes) to a catalog, including real catalogs made by
// the extension.
//
// Every rule here comes from the DuckLake specification
// (ducklake.select/docs/stable/specification) and from the extension source
// (github.com/duckdb/ducklake), mainly:
//
//   - src/storage/ducklake_metadata_manager.cpp: the CREATE TABLE statements
//     and the initial rows of a new catalog (InitializeDuckLake,
//     GetCreateTableStatements), and the SQL that records tables, columns,
//     views, data files, delete files, statistics, inlined data, compactions
//     and snapshots;
//   - src/storage/ducklake_transaction_state.cpp: the commit (one snapshot
//     per transaction, schema_version bumps, id counters, changes_made);
//   - src/storage/ducklake_insert.cpp: Parquet COPY options (FIELD_IDS =
//     column ids, file name ducklake-<uuidv7>.parquet, RETURN_STATS);
//   - src/storage/ducklake_delete.cpp: delete files
//     (ducklake-<uuidv7>-delete.parquet with file_path, pos);
//   - src/functions/ducklake_compaction_functions.cpp: compaction.
//
// A Writer holds the catalog's DuckDB file lock while it is open. Each
// mutating method runs in one SQL transaction and adds exactly one snapshot,
// or returns an error and adds none.
//
// Formats: [Create] makes 1.0 (default), 0.4 (same table layout) or 1.1
// catalogs (src/metadata_manager/ducklake_metadata_manager_v1_1.cpp:
// row_group_count on data and delete files, ducklake_view_column_tag,
// inlined-data metadata columns prefixed with "_ducklake_"). [Open] writes
// to catalogs whose ducklake_metadata version is 0.3, 0.4, 1.0, 1.1 or
// 1.1-dev1 and adapts to the columns the catalog actually has; it refuses
// every other version with [ErrUnsupportedFormat]. DuckDB- and SQLite-format
// catalogs (not Postgres metadata) and only primitive column types are
// supported.
package lakewriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2" // database/sql driver "duckdb"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// Sentinel errors. Errors returned by this package wrap one of these (test
// with errors.Is) or a DuckDB error, together with the names involved.
var (
	// ErrExists: Create was given a path that already exists.
	ErrExists = errors.New("catalog file already exists")
	// ErrUnsupportedFormat: the catalog's DuckLake version (ducklake_metadata
	// key "version") or table layout is not one this package writes.
	ErrUnsupportedFormat = errors.New("unsupported DuckLake format")
	// ErrNotFound: a schema, table, view or column named in a call does not
	// exist at the catalog's last snapshot.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a schema, table, view or column of that name exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrNoChange: the call would change nothing (an insert of no rows, a
	// delete that matches no row, a compaction with nothing to compact). The
	// extension makes no snapshot in that case, so neither does the Writer.
	ErrNoChange = errors.New("nothing to change")
	// ErrInvalid: an argument is malformed (empty name, unknown type, ...).
	ErrInvalid = errors.New("invalid argument")
	// ErrClosed: the Writer was closed.
	ErrClosed = errors.New("writer is closed")
)

// Catalog format strings (ducklake_metadata key "version").
const (
	// Format10 is DuckLake 1.0, what the extension creates today
	// (ducklake_metadata_manager.cpp GetVersionString).
	Format10 = "1.0"
	// Format04 is DuckLake 0.4 (DuckDB 1.5.0/1.5.1); same tables as 1.0.
	Format04 = "0.4"
	// Format03 is DuckLake 0.3 (DuckDB 1.4); Open writes to it, Create does not.
	Format03 = "0.3"
	// Format11 is DuckLake 1.1 (DuckDB 2.0).
	Format11 = "1.1"
	// Format11Dev is the string duckdb/ducklake's source writes for 1.1
	// before its release (DuckLakeVersion::V1_1_DEV_1); same tables as 1.1.
	// Open writes to it, Create does not.
	Format11Dev = "1.1-dev1"
)

// lakeAlias is the name the catalog file is attached under.
const lakeAlias = "__fdl_lake"

// CreateOptions configures [Create].
type CreateOptions struct {
	// Format is the DuckLake version string to write: "1.0" (default when
	// empty), "0.4" (both with the table layout of
	// ducklake_metadata_manager.cpp GetCreateTableStatements) or "1.1"
	// (DuckLakeMetadataManagerV1_1's).
	Format string
	// DataPath is stored as ducklake_metadata data_path. Like the extension
	// (ducklake_initializer.cpp InitializeDataPath), trailing "/" or "\" are
	// trimmed and one "/" appended, so "data" is stored as "data/". Empty
	// means the extension's default: the catalog path + ".files/". It may be
	// any URL the extension accepts (s3://…); the Writer can only write data
	// files under a local path.
	DataPath string
	// Author and Message, when non-empty, are stored as author and
	// commit_message of snapshot 0. The extension itself always leaves them
	// NULL for snapshot 0, so leave them empty for a byte-for-byte match of
	// its conventions.
	Author, Message string
}

// ColumnDef describes one column of a table.
type ColumnDef struct {
	// Name is the column name, any non-empty string (quoted as DuckDB does).
	Name string
	// Type is a DuckLake type name (DuckLake spec: Data Types), e.g. int32,
	// int64, varchar, float64, boolean, date, timestamp, timestamptz,
	// decimal(9,2), uuid, blob. The common DuckDB spellings (INTEGER,
	// BIGINT, VARCHAR, DOUBLE, TIMESTAMPTZ, DECIMAL(9,2), …) are accepted
	// and stored as the DuckLake name. Nested types are not supported.
	Type string
	// Nullable false stores nulls_allowed = false (NOT NULL); inserts of
	// NULL into such a column are refused as the extension refuses them.
	Nullable bool
}

// Writer adds snapshots to one open DuckLake catalog. It is not safe for
// concurrent use. Close it to release the DuckDB file lock.
type Writer struct {
	// Author and Message, when non-empty, are written to the author and
	// commit_message columns of each new ducklake_snapshot_changes row (the
	// extension's CALL <lake>.set_commit_message). Catalogs without those
	// columns (before 0.3) are not supported anyway.
	Author, Message string
	// CheckFiles, when set, is called by Restore and Revert with the
	// resolved paths (DuckLake's path rules: a relative path under its
	// table's, its schema's and data_path) of the data and delete files
	// the new snapshot makes visible again, before it is committed; an
	// error aborts the snapshot.
	CheckFiles func(paths []string) error

	path     string
	db       *sql.DB
	conn     *sql.Conn
	format   string
	lay      layout
	dataPath string // as stored in ducklake_metadata
	dataDir  string // resolved local directory, ends in "/"; "" if not local
	closed   bool
	lite     *liteState // non-nil for a SQLite-format catalog (sqlite.go)
}

// Create creates a new, empty DuckLake catalog at path (a DuckDB database
// file) with every ducklake_* table of the format and the initial rows the
// extension writes for a new catalog (ducklake_metadata_manager.cpp
// InitializeDuckLake): snapshot 0 with schema_version 0, next_catalog_id 1,
// next_file_id 0; changes_made `created_schema:"main"`; metadata version,
// created_by ("DuckDB <source id>"), data_path, encrypted = false; schema 0
// "main" with a new UUIDv7 and path "main/" (relative). The file is written
// in the storage version of the DuckDB release whose extension writes the
// format (ATTACH … (STORAGE_VERSION …)): v1.5.0 (storage 68) for 0.4 and 1.0,
// which DuckDB 1.5 reads, v2.0.0 (storage 999) for 1.1, which only DuckDB
// 2.0 reads. It is checkpointed, so it is a single file with no .wal. Create
// returns an error wrapping ErrExists if path (or path.wal) exists and
// ErrUnsupportedFormat for a format other than "1.0", "0.4" or "1.1".
func Create(ctx context.Context, path string, opts CreateOptions) error {
	format := opts.Format
	if format == "" {
		format = Format10
	}
	stmts, storage := createTableStatements, "v1.5.0"
	switch format {
	case Format10, Format04:
	case Format11:
		stmts, storage = createTableStatements11, "v2.0.0"
	default:
		return fmt.Errorf("create %s: %w: %q (want %q, %q or %q)", path, ErrUnsupportedFormat, format, Format10, Format04, Format11)
	}
	for _, p := range []string{path, path + ".wal"} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("create %s: %w", p, ErrExists)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	dataPath := opts.DataPath
	if dataPath == "" {
		dataPath = path + ".files"
	}
	dataPath = normalizeDataPath(dataPath)

	db, conn, err := openDuckDB(ctx)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer ducklake.ReleaseInstance(db, conn)
	if _, err := conn.ExecContext(ctx, "ATTACH "+sqlquote.String(path)+" AS "+sqlquote.Ident(lakeAlias)+" (STORAGE_VERSION "+sqlquote.String(storage)+")"); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	fail := func(err error) error {
		_, _ = conn.ExecContext(ctx, "DETACH "+sqlquote.Ident(lakeAlias))
		_ = os.Remove(path)
		_ = os.Remove(path + ".wal")
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := conn.ExecContext(ctx, "USE "+sqlquote.Ident(lakeAlias)); err != nil {
		return fail(err)
	}
	var sourceID, schemaUUID string
	if err := conn.QueryRowContext(ctx, "SELECT source_id FROM pragma_version()").Scan(&sourceID); err != nil {
		return fail(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT uuidv7()::VARCHAR").Scan(&schemaUUID); err != nil {
		return fail(err)
	}
	var b strings.Builder
	b.WriteString("BEGIN TRANSACTION;\n")
	for _, stmt := range stmts {
		b.WriteString(stmt)
		b.WriteString("\n")
	}
	// ducklake_metadata_manager.cpp InitializeDuckLake: the four initial rows.
	fmt.Fprintf(&b, "INSERT INTO ducklake_snapshot VALUES (0, NOW(), 0, 1, 0);\n")
	fmt.Fprintf(&b, "INSERT INTO ducklake_snapshot_changes VALUES (0, %s, %s, %s, NULL);\n",
		sqlquote.String(`created_schema:"main"`), qsOrNull(opts.Author), qsOrNull(opts.Message))
	fmt.Fprintf(&b, "INSERT INTO ducklake_metadata (key, value) VALUES ('version', %s), ('created_by', %s), ('data_path', %s), ('encrypted', 'false');\n",
		sqlquote.String(format), sqlquote.String("DuckDB "+sourceID), sqlquote.String(dataPath))
	fmt.Fprintf(&b, "INSERT INTO ducklake_schema VALUES (0, %s::UUID, 0, NULL, 'main', 'main/', true);\n", sqlquote.String(schemaUUID))
	b.WriteString("COMMIT;\n")
	if _, err := conn.ExecContext(ctx, b.String()); err != nil {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		return fail(err)
	}
	if _, err := conn.ExecContext(ctx, "USE memory; CHECKPOINT "+sqlquote.Ident(lakeAlias)+"; DETACH "+sqlquote.Ident(lakeAlias)); err != nil {
		return fail(err)
	}
	return nil
}

// Open opens an existing DuckDB-format DuckLake catalog read-write and takes
// DuckDB's lock on the file until Close. The catalog's version must be 0.3,
// 0.4, 1.0, 1.1 or 1.1-dev1 (ErrUnsupportedFormat otherwise, naming the
// version; the two 1.1 strings are written alike) and its tables must have
// the columns this package writes for that version. A relative data_path is resolved against the directory of the catalog file
// (the extension resolves it against the working directory of the process
// that attached it, which is that directory when the extension chose the
// default "<catalog>.files/"). Existing files keep their DuckDB storage
// version.
//
// A SQLite-format catalog (ducklake.DetectBackend) is written through an
// in-memory DuckDB mirror, one SQLite write transaction per snapshot; see
// sqlite.go. No lock is held between operations.
func Open(ctx context.Context, path string) (*Writer, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if b, err := ducklake.DetectBackend(path); err == nil && b == ducklake.BackendSQLite {
		return openSQLite(ctx, path)
	}
	db, conn, err := openDuckDB(ctx)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := conn.ExecContext(ctx, "ATTACH "+sqlquote.String(path)+" AS "+sqlquote.Ident(lakeAlias)); err != nil {
		ducklake.ReleaseInstance(db, conn)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w := &Writer{path: path, db: db, conn: conn}
	if err := w.init(ctx); err != nil {
		_ = w.detach(context.Background(), false)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return w, nil
}

func (w *Writer) init(ctx context.Context) error {
	if _, err := w.conn.ExecContext(ctx, "USE "+sqlquote.Ident(lakeAlias)); err != nil {
		return err
	}
	var n int
	if err := w.conn.QueryRowContext(ctx,
		"SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name IN ('ducklake_metadata', 'ducklake_snapshot')",
		lakeAlias).Scan(&n); err != nil {
		return err
	}
	if n != 2 {
		return fmt.Errorf("%w: not a DuckLake catalog (no ducklake_metadata/ducklake_snapshot tables)", ErrUnsupportedFormat)
	}
	var version, dataPath sql.NullString
	if err := w.conn.QueryRowContext(ctx, "SELECT max(value) FILTER (WHERE key = 'version'), max(value) FILTER (WHERE key = 'data_path') FROM ducklake_metadata").Scan(&version, &dataPath); err != nil {
		return err
	}
	switch version.String {
	case Format03, Format04, Format10, Format11, Format11Dev:
	default:
		return fmt.Errorf("%w: DuckLake version %q (this writer supports %s, %s, %s, %s and %s)", ErrUnsupportedFormat, version.String, Format03, Format04, Format10, Format11, Format11Dev)
	}
	w.format = version.String
	lay, err := readLayout(ctx, w.conn, w.format)
	if err != nil {
		return err
	}
	w.lay = lay
	w.dataPath = dataPath.String
	w.dataDir = resolveDataDir(w.path, w.dataPath)
	return nil
}

// StageDataIn makes the writer write and read data files under the local
// folder dir when the catalog's data_path is not a local folder (s3://,
// gs://, az://, which DuckDB here cannot write to): file paths are still
// recorded relative to data_path, so copying dir's files to data_path
// afterwards (a test's upload) gives the catalog its files. It reports
// whether it did anything (data_path is not local); call it before any
// write.
func (w *Writer) StageDataIn(dir string) (bool, error) {
	if w.dataDir != "" {
		return false, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	w.dataDir = normalizeDataPath(filepath.ToSlash(abs))
	return true, nil
}

// Format returns the catalog's DuckLake version string (e.g. "1.0").
func (w *Writer) Format() string { return w.format }

// DataPath returns ducklake_metadata data_path as stored.
func (w *Writer) DataPath() string { return w.dataPath }

// Snapshot returns the id of the catalog's last snapshot
// (max(ducklake_snapshot.snapshot_id)).
func (w *Writer) Snapshot(ctx context.Context) (int64, error) {
	if w.closed {
		return 0, ErrClosed
	}
	var id int64
	err := w.conn.QueryRowContext(ctx, "SELECT max(snapshot_id) FROM ducklake_snapshot").Scan(&id)
	return id, err
}

// Close checkpoints the catalog (so no .wal file is left), detaches it and
// releases the DuckDB file lock. Closing twice returns nil.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return w.detach(context.Background(), true)
}

func (w *Writer) detach(ctx context.Context, checkpoint bool) error {
	var errs []error
	if _, err := w.conn.ExecContext(ctx, "USE memory"); err != nil {
		errs = append(errs, err)
	}
	if checkpoint {
		if _, err := w.conn.ExecContext(ctx, "CHECKPOINT "+sqlquote.Ident(lakeAlias)); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := w.conn.ExecContext(ctx, "DETACH "+sqlquote.Ident(lakeAlias)); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, ducklake.ReleaseInstance(w.db, w.conn))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return nil
}

// openDuckDB returns an in-memory DuckDB instance with one connection
// (ducklake.Instance: an idle one of the process when there is one; give
// it back with ducklake.ReleaseInstance); catalogs are ATTACHed to it,
// like the extension attaches its metadata database.
func openDuckDB(ctx context.Context) (*sql.DB, *sql.Conn, error) {
	return ducklake.Instance(ctx)
}

// normalizeDataPath stores a data path the way ducklake_initializer.cpp
// InitializeDataPath does: trailing separators trimmed, one "/" appended.
func normalizeDataPath(p string) string {
	return strings.TrimRight(p, `/\`) + "/"
}

// isRemote reports whether p is a URL (s3://, gs://, https://, …).
func isRemote(p string) bool {
	i := strings.Index(p, "://")
	return i > 0 && !strings.ContainsAny(p[:i], `/\`)
}

// resolveDataDir turns the stored data_path into a local directory ending in
// "/"; "" when the data path is not local.
func resolveDataDir(catalogPath, dataPath string) string {
	if dataPath == "" || isRemote(dataPath) {
		if strings.HasPrefix(dataPath, "file://") {
			return normalizeDataPath(strings.TrimPrefix(dataPath, "file://"))
		}
		return ""
	}
	p := dataPath
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(catalogPath), p)
	}
	return normalizeDataPath(filepath.ToSlash(p))
}

// qsOrNull is s as a string literal (sqlquote.String), NULL for "".
func qsOrNull(s string) string {
	if s == "" {
		return "NULL"
	}
	return sqlquote.String(s)
}

func nullInt(v sql.NullInt64) string {
	if !v.Valid {
		return "NULL"
	}
	return fmt.Sprint(v.Int64)
}
