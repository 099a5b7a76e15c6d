package lakewriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// op is one write transaction that becomes one snapshot, following
// ducklake_transaction_state.cpp Commit: snapshot_id = last + 1,
// schema_version + 1 when the schema changes, next_catalog_id / next_file_id
// advanced past every id handed out, and one ducklake_snapshot_changes row.
type op struct {
	w   *Writer
	ctx context.Context

	id            int64 // the new snapshot id
	prevSchema    int64 // schema_version of the previous snapshot
	schemaVersion int64
	nextCatalogID int64
	nextFileID    int64

	schemaBumped bool
	changes      changeSet
	newFiles     []string // local files written by this op, removed on failure
}

// changeSet collects changes_made items in the order
// ducklake_transaction_state.cpp WriteSnapshotChanges writes them.
type changeSet struct {
	droppedSchemas, droppedTables, droppedViews []int64
	createdSchemas                              []string
	createdTables                               []string // already `"schema"."name"`
	createdViews                                []string
	insertedInto, deletedFrom, alteredTables    []int64
	inlinedInsert, inlinedDelete                []int64
	compacted                                   []int64
}

func (c changeSet) String() string {
	var items []string
	ids := func(kind string, v []int64) {
		for _, id := range uniq(v) {
			items = append(items, fmt.Sprintf("%s:%d", kind, id))
		}
	}
	ids("dropped_schema", c.droppedSchemas)
	ids("dropped_table", c.droppedTables)
	ids("dropped_view", c.droppedViews)
	for _, s := range c.createdSchemas {
		items = append(items, "created_schema:"+sqlquote.Ident(s))
	}
	for _, s := range c.createdTables {
		items = append(items, "created_table:"+s)
	}
	for _, s := range c.createdViews {
		items = append(items, "created_view:"+s)
	}
	ids("inserted_into_table", c.insertedInto)
	ids("deleted_from_table", c.deletedFrom)
	ids("altered_table", c.alteredTables)
	ids("inlined_insert", c.inlinedInsert)
	ids("inlined_delete", c.inlinedDelete)
	ids("compacted_table", c.compacted)
	return strings.Join(items, ",")
}

func uniq(v []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, x := range v {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// run executes fn inside one SQL transaction and, if fn succeeds, writes the
// snapshot row and its changes. On any error the transaction is rolled back
// and the data files written so far are removed, as the extension cleans up
// after a failed commit (ducklake_transaction.cpp CleanupFiles).
func (w *Writer) run(ctx context.Context, what string, fn func(o *op) error) (err error) {
	if w.closed {
		return ErrClosed
	}
	if w.lite != nil {
		// SQLite: take the write lock and re-read the catalog first; the
		// difference is written back after the DuckDB commit below.
		if err := w.lite.begin(ctx, w); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		defer w.lite.end()
	}
	if _, err := w.conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	o := &op{w: w, ctx: ctx}
	defer func() {
		if err == nil {
			return
		}
		_, _ = w.conn.ExecContext(context.Background(), "ROLLBACK")
		for _, f := range o.newFiles {
			_ = os.Remove(f)
		}
		err = fmt.Errorf("%s: %w", what, err)
	}()
	var prevID int64
	if err := w.conn.QueryRowContext(ctx,
		"SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = (SELECT max(snapshot_id) FROM ducklake_snapshot)").
		Scan(&prevID, &o.prevSchema, &o.nextCatalogID, &o.nextFileID); err != nil {
		return err
	}
	o.id = prevID + 1
	o.schemaVersion = o.prevSchema
	if err := fn(o); err != nil {
		return err
	}
	changes := o.changes.String()
	if changes == "" {
		return ErrNoChange
	}
	if err := o.exec(fmt.Sprintf("INSERT INTO ducklake_snapshot (snapshot_id, snapshot_time, schema_version, next_catalog_id, next_file_id) VALUES (%d, NOW(), %d, %d, %d)",
		o.id, o.schemaVersion, o.nextCatalogID, o.nextFileID)); err != nil {
		return err
	}
	if err := o.exec(fmt.Sprintf("INSERT INTO ducklake_snapshot_changes (snapshot_id, changes_made, author, commit_message, commit_extra_info) VALUES (%d, %s, %s, %s, NULL)",
		o.id, sqlquote.String(changes), qsOrNull(w.Author), qsOrNull(w.Message))); err != nil {
		return err
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	if w.lite != nil {
		return w.lite.apply(ctx, w)
	}
	return nil
}

// runOnTable runs fn as one operation (see run) on the live table
// schema.table: ErrNotFound when the schema or table does not exist.
func (w *Writer) runOnTable(ctx context.Context, what, schema, table string, fn func(o *op, t tableInfo) error) error {
	return w.run(ctx, what, func(o *op) error {
		t, err := o.table(schema, table)
		if err != nil {
			return err
		}
		return fn(o, t)
	})
}

// runOnColumns is runOnTable that also passes the table's current columns.
func (w *Writer) runOnColumns(ctx context.Context, what, schema, table string, fn func(o *op, t tableInfo, cols []column) error) error {
	return w.run(ctx, what, func(o *op) error {
		t, cols, err := o.tableColumns(schema, table)
		if err != nil {
			return err
		}
		return fn(o, t, cols)
	})
}

func (o *op) exec(query string, args ...any) error {
	_, err := o.w.conn.ExecContext(o.ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%w\nSQL: %s", err, query)
	}
	return nil
}

func (o *op) queryRow(query string, args ...any) *sql.Row {
	return o.w.conn.QueryRowContext(o.ctx, query, args...)
}

// bumpSchema increments schema_version once for this snapshot
// (ducklake_transaction_state.cpp Commit: SchemaChangesMade). In a 0.3
// catalog ducklake_schema_versions gets one row per schema version
// (ducklake_metadata_manager.cpp of DuckLake 0.3; see dltest-per-table-schema).
func (o *op) bumpSchema() error {
	if o.schemaBumped {
		return nil
	}
	o.schemaBumped = true
	o.schemaVersion = o.prevSchema + 1
	if !o.w.lay.schemaVersionsTableID {
		return o.exec(fmt.Sprintf("INSERT INTO ducklake_schema_versions (begin_snapshot, schema_version) VALUES (%d, %d)", o.id, o.schemaVersion))
	}
	return nil
}

// tableSchemaVersion records a per-table schema version (DuckLake 0.4:
// ducklake_metadata_manager.cpp InsertNewSchema) for created, renamed and
// column-altered tables.
func (o *op) tableSchemaVersion(tableID int64) error {
	if err := o.bumpSchema(); err != nil {
		return err
	}
	if o.w.lay.schemaVersionsTableID {
		return o.exec(fmt.Sprintf("INSERT INTO ducklake_schema_versions (begin_snapshot, schema_version, table_id) VALUES (%d, %d, %d)", o.id, o.schemaVersion, tableID))
	}
	return nil
}

func (o *op) newCatalogID() int64 {
	id := o.nextCatalogID
	o.nextCatalogID++
	return id
}

func (o *op) newFileID() int64 {
	id := o.nextFileID
	o.nextFileID++
	return id
}

func (o *op) uuidv7() (string, error) {
	var s string
	err := o.queryRow("SELECT uuidv7()::VARCHAR").Scan(&s)
	return s, err
}

// ---- catalog lookups at the last snapshot (end_snapshot IS NULL) ----

type schemaInfo struct {
	id      int64
	name    string
	path    sql.NullString
	relPath bool
}

type tableInfo struct {
	id      int64
	uuid    string
	name    string
	schema  schemaInfo
	path    sql.NullString
	relPath bool
	begin   int64
	dataDir string // resolved local directory of the table, ends in "/"
}

type column struct {
	id       int64
	name     string
	typ      string // DuckLake type name
	nullable bool
	order    int64
	initial  sql.NullString
}

func (o *op) schema(name string) (schemaInfo, error) {
	var s schemaInfo
	var rel sql.NullBool
	err := o.queryRow("SELECT schema_id, schema_name, path, path_is_relative FROM ducklake_schema WHERE end_snapshot IS NULL AND schema_name = ?", name).
		Scan(&s.id, &s.name, &s.path, &rel)
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("schema %q: %w", name, ErrNotFound)
	}
	s.relPath = !rel.Valid || rel.Bool
	return s, err
}

func (o *op) table(schemaName, name string) (tableInfo, error) {
	s, err := o.schema(schemaName)
	if err != nil {
		return tableInfo{}, err
	}
	t := tableInfo{schema: s}
	var rel sql.NullBool
	err = o.queryRow("SELECT table_id, table_uuid::VARCHAR, table_name, path, path_is_relative, begin_snapshot FROM ducklake_table WHERE end_snapshot IS NULL AND schema_id = ? AND table_name = ?", s.id, name).
		Scan(&t.id, &t.uuid, &t.name, &t.path, &rel, &t.begin)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("table %q.%q: %w", schemaName, name, ErrNotFound)
	}
	if err != nil {
		return t, err
	}
	t.relPath = !rel.Valid || rel.Bool
	t.dataDir = o.w.tableDir(s, t)
	return t, nil
}

// schemaDir and tableDir resolve paths as ducklake_metadata_manager.cpp
// BuildCatalogForSnapshot does: a relative schema path is under data_path, a
// relative table path under its schema's path; NULL means the parent's path.
func (w *Writer) schemaDir(s schemaInfo) string {
	if !s.path.Valid {
		return w.dataDir
	}
	if s.relPath {
		if w.dataDir == "" {
			return ""
		}
		return w.dataDir + s.path.String
	}
	return localDir(s.path.String)
}

func (w *Writer) tableDir(s schemaInfo, t tableInfo) string {
	sd := w.schemaDir(s)
	if !t.path.Valid {
		return sd
	}
	if t.relPath {
		if sd == "" {
			return ""
		}
		return sd + t.path.String
	}
	return localDir(t.path.String)
}

func localDir(p string) string {
	if strings.HasPrefix(p, "file://") {
		return strings.TrimPrefix(p, "file://")
	}
	if isRemote(p) {
		return ""
	}
	return p
}

// nameTaken reports whether a table or view of that name exists in the schema
// (DuckDB keeps tables and views in one namespace per schema).
func (o *op) nameTaken(schemaID int64, name string) (bool, error) {
	var n int
	err := o.queryRow(`SELECT (SELECT count(*) FROM ducklake_table WHERE end_snapshot IS NULL AND schema_id = ? AND table_name = ?)
		+ (SELECT count(*) FROM ducklake_view WHERE end_snapshot IS NULL AND schema_id = ? AND view_name = ?)`, schemaID, name, schemaID, name).Scan(&n)
	return n > 0, err
}

// columnsAt returns the top-level columns of a table visible at a snapshot,
// in column_order (DuckLake spec: ducklake_column).
func (o *op) columnsAt(tableID, snapshot int64) ([]column, error) {
	rows, err := o.w.conn.QueryContext(o.ctx, `SELECT column_id, column_name, column_type, nulls_allowed, column_order, initial_default
		FROM ducklake_column WHERE table_id = ? AND parent_column IS NULL
		AND begin_snapshot <= ? AND (end_snapshot IS NULL OR end_snapshot > ?) ORDER BY column_order`, tableID, snapshot, snapshot)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var c column
		var nullable sql.NullBool
		if err := rows.Scan(&c.id, &c.name, &c.typ, &nullable, &c.order, &c.initial); err != nil {
			return nil, err
		}
		c.nullable = !nullable.Valid || nullable.Bool
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var nested int
	if err := o.queryRow(`SELECT count(*) FROM ducklake_column WHERE table_id = ? AND parent_column IS NOT NULL
		AND begin_snapshot <= ? AND (end_snapshot IS NULL OR end_snapshot > ?)`, tableID, snapshot, snapshot).Scan(&nested); err != nil {
		return nil, err
	}
	if nested > 0 {
		return nil, fmt.Errorf("%w: table %d has nested columns", ErrUnsupportedFormat, tableID)
	}
	return cols, nil
}

// currentColumns are the columns at the snapshot being written.
func (o *op) currentColumns(t tableInfo) ([]column, error) {
	return o.columnsAt(t.id, o.id)
}

// tableColumns returns the live table schema.table (see table) and its
// current columns.
func (o *op) tableColumns(schema, table string) (tableInfo, []column, error) {
	t, err := o.table(schema, table)
	if err != nil {
		return t, nil, err
	}
	cols, err := o.currentColumns(t)
	return t, cols, err
}

func findColumn(cols []column, name string) (column, bool) {
	for _, c := range cols {
		if c.name == name {
			return c, true
		}
	}
	return column{}, false
}

// option looks up a ducklake_metadata setting with table, then schema, then
// global scope, as DuckLakeCatalog::TryGetConfigOption does.
func (o *op) option(key string, schemaID, tableID int64) (string, bool, error) {
	var v sql.NullString
	err := o.queryRow(`SELECT value FROM ducklake_metadata WHERE key = ? AND (
			(scope = 'table' AND scope_id = ?) OR (scope = 'schema' AND scope_id = ?) OR scope IS NULL)
		ORDER BY CASE scope WHEN 'table' THEN 0 WHEN 'schema' THEN 1 ELSE 2 END LIMIT 1`, key, tableID, schemaID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v.String, v.Valid, nil
}

// inliningLimit is data_inlining_row_limit for a table: the stored option,
// or the version's default (layout.defaultInlining).
func (o *op) inliningLimit(schemaID, tableID int64) (int64, error) {
	v, ok, err := o.option("data_inlining_row_limit", schemaID, tableID)
	if err != nil || !ok {
		return o.w.lay.defaultInlining, err
	}
	var n int64
	if _, err := fmt.Sscan(v, &n); err != nil {
		return 0, fmt.Errorf("%w: data_inlining_row_limit %q", ErrUnsupportedFormat, v)
	}
	return n, nil
}

// relTo returns p relative to base when p starts with base, as
// ducklake_metadata_manager.cpp GetRelativePath does.
func relTo(p, base string) (string, bool) {
	if base != "" && strings.HasPrefix(p, base) {
		return p[len(base):], true
	}
	return p, false
}
