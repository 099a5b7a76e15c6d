package lakewriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// SQLite-format catalogs.
//
// A Writer on a SQLite-format catalog (Open detects it) writes each
// snapshot the way the ducklake extension does with a SQLite metadata
// database: inside one SQLite write transaction. For every operation it
//
//  1. opens the file and takes SQLite's write lock (BEGIN IMMEDIATE; other
//     writers wait for it with a busy timeout, readers in WAL mode go on);
//  2. reads the catalog as it is now into an in-memory DuckDB mirror with
//     the DuckDB-format layout (ducklake.CopySQLiteInto), twice: once to
//     write to, once with each row's SQLite rowid;
//  3. runs the operation on the mirror with exactly the code that writes
//     DuckDB-format catalogs (one snapshot, same rows);
//  4. writes the difference back: rows the operation removed or replaced
//     are DELETEd by rowid, new rows are INSERTed (values cast by DuckDB to
//     the SQLite column types, as the extension's inserts are), new tables
//     (inlined data) are created with the SQLite layout of ConvertToSQLite;
//  5. commits, or rolls everything back on any error.
//
// So two Writers (or processes) on one SQLite catalog never interleave: the
// second waits for the first's commit and then builds on it, as the
// extension's writers do. This mode serves tests and the demo; it re-reads
// the catalog on every operation, so it is meant for small catalogs.

const (
	rowIDColumn  = "__fdl_rowid"
	preAlias     = "__fdl_pre"
	sqliteRetry  = 60 * time.Second
	sqliteParams = "mode=rw&_busy_timeout=" // + ducklake.SQLiteBusyTimeout
)

// liteState is the SQLite side of a Writer.
type liteState struct {
	path string
	db   *sql.DB
	conn *sql.Conn
}

// openSQLite opens a Writer on a SQLite-format catalog.
func openSQLite(ctx context.Context, path string) (*Writer, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	db, conn, err := openDuckDB(ctx)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w := &Writer{path: abs, db: db, conn: conn, lite: &liteState{path: abs}}
	fail := func(err error) (*Writer, error) {
		ducklake.ReleaseInstance(db, conn)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := conn.ExecContext(ctx, "SET TimeZone = 'UTC'"); err != nil {
		return fail(err)
	}
	if err := w.loadMirror(ctx); err != nil {
		return fail(err)
	}
	if err := w.init(ctx); err != nil {
		return fail(err)
	}
	return w, nil
}

// loadMirror (re)reads the SQLite catalog into the in-memory databases
// lakeAlias (the layout of a DuckDB-format catalog) and preAlias (the same
// with each row's rowid).
func (w *Writer) loadMirror(ctx context.Context) error {
	for _, q := range []string{"USE memory", "DETACH DATABASE IF EXISTS " + sqlquote.Ident(lakeAlias), "DETACH DATABASE IF EXISTS " + sqlquote.Ident(preAlias),
		"ATTACH ':memory:' AS " + sqlquote.Ident(lakeAlias), "ATTACH ':memory:' AS " + sqlquote.Ident(preAlias)} {
		if _, err := w.conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if err := ducklake.CopySQLiteInto(ctx, w.conn, lakeAlias, w.lite.path, ""); err != nil {
		return err
	}
	if err := ducklake.CopySQLiteInto(ctx, w.conn, preAlias, w.lite.path, rowIDColumn); err != nil {
		return err
	}
	_, err := w.conn.ExecContext(ctx, "USE "+sqlquote.Ident(lakeAlias))
	return err
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// begin takes SQLite's write lock (retrying while another writer holds it,
// for at most sqliteRetry) and reloads the mirror under it.
func (l *liteState) begin(ctx context.Context, w *Writer) error {
	db, err := sql.Open("sqlite3", sqliteDSN(l.path, sqliteParams+strconv.Itoa(ducklake.SQLiteBusyTimeout)))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return err
	}
	l.db, l.conn = db, conn
	deadline := time.Now().Add(sqliteRetry)
	for {
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		l.end()
		return fmt.Errorf("lock %s for writing: %w", l.path, err)
	}
	if err := w.loadMirror(ctx); err != nil {
		l.end()
		return err
	}
	lay, err := readLayout(ctx, w.conn, w.format)
	if err != nil {
		l.end()
		return err
	}
	w.lay = lay
	return nil
}

// end rolls back whatever is not committed and closes the connection.
func (l *liteState) end() {
	if l.conn != nil {
		_, _ = l.conn.ExecContext(context.Background(), "ROLLBACK")
		l.conn.Close()
		l.conn = nil
	}
	if l.db != nil {
		l.db.Close()
		l.db = nil
	}
}

// apply writes the difference between preAlias (the catalog before the
// operation, with rowids) and lakeAlias (after it) to SQLite and commits.
func (l *liteState) apply(ctx context.Context, w *Writer) error {
	layout, err := ducklake.SQLiteLayout(ctx, w.conn, lakeAlias)
	if err != nil {
		return err
	}
	pre, err := w.tableNames(ctx, preAlias)
	if err != nil {
		return err
	}
	post := map[string]bool{}
	for _, t := range layout {
		post[t.Name] = true
		if !pre[t.Name] {
			if _, err := l.conn.ExecContext(ctx, t.CreateSQL); err != nil {
				return fmt.Errorf("%s: %w", t.CreateSQL, err)
			}
		}
		if err := l.applyTable(ctx, w, t, pre[t.Name]); err != nil {
			return fmt.Errorf("write %s to %s: %w", t.Name, l.path, err)
		}
	}
	for name := range pre {
		if !post[name] {
			if _, err := l.conn.ExecContext(ctx, "DROP TABLE "+sqlquote.Ident(name)); err != nil {
				return err
			}
		}
	}
	if _, err := l.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit to %s: %w", l.path, err)
	}
	return nil
}

func (w *Writer) tableNames(ctx context.Context, alias string) (map[string]bool, error) {
	rows, err := w.conn.QueryContext(ctx, "SELECT table_name FROM duckdb_tables() WHERE database_name = ?", alias)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

// applyTable DELETEs the rows of t the operation removed (by rowid) and
// INSERTs the rows it added. Rows are matched as multisets: equal rows are
// paired by their rank among equal rows.
func (l *liteState) applyTable(ctx context.Context, w *Writer, t ducklake.SQLiteTable, existed bool) error {
	var part, on, sel []string
	for i, c := range t.Columns {
		part = append(part, sqlquote.Ident(c))
		on = append(on, fmt.Sprintf("p.%[1]s IS NOT DISTINCT FROM q.%[1]s", sqlquote.Ident(c)))
		sel = append(sel, fmt.Sprintf("CAST(q.%s AS %s)", sqlquote.Ident(c), t.DeclTypes[i]))
	}
	on = append(on, "p.__fdl_n = q.__fdl_n")
	post := fmt.Sprintf("(SELECT *, row_number() OVER (PARTITION BY %s) AS __fdl_n FROM %s.main.%s)", strings.Join(part, ", "), sqlquote.Ident(lakeAlias), sqlquote.Ident(t.Name))
	if !existed {
		return l.insertRows(ctx, w, t, fmt.Sprintf("SELECT %s FROM %s q", strings.Join(sel, ", "), post))
	}
	pre := fmt.Sprintf("(SELECT *, row_number() OVER (PARTITION BY %s ORDER BY %s) AS __fdl_n FROM %s.main.%s)", strings.Join(part, ", "), sqlquote.Ident(rowIDColumn), sqlquote.Ident(preAlias), sqlquote.Ident(t.Name))
	rows, err := w.conn.QueryContext(ctx, fmt.Sprintf("SELECT p.%s FROM %s p ANTI JOIN %s q ON %s", sqlquote.Ident(rowIDColumn), pre, post, strings.Join(on, " AND ")))
	if err != nil {
		return err
	}
	var gone []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		gone = append(gone, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range gone {
		if _, err := l.conn.ExecContext(ctx, "DELETE FROM "+sqlquote.Ident(t.Name)+" WHERE rowid = ?", id); err != nil {
			return err
		}
	}
	return l.insertRows(ctx, w, t, fmt.Sprintf("SELECT %s FROM %s q ANTI JOIN %s p ON %s", strings.Join(sel, ", "), post, pre, strings.Join(on, " AND ")))
}

// insertRows runs query on the mirror and INSERTs its rows into t.
func (l *liteState) insertRows(ctx context.Context, w *Writer, t ducklake.SQLiteTable, query string) error {
	rows, err := w.conn.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	var names, marks []string
	for _, c := range t.Columns {
		names = append(names, sqlquote.Ident(c))
		marks = append(marks, "?")
	}
	stmt, err := l.conn.PrepareContext(ctx, "INSERT INTO "+sqlquote.Ident(t.Name)+" ("+strings.Join(names, ", ")+") VALUES ("+strings.Join(marks, ", ")+")")
	if err != nil {
		return err
	}
	defer stmt.Close()
	vals := make([]any, len(t.Columns))
	ptrs := make([]any, len(t.Columns))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, vals...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// sqliteDSN is the mattn/go-sqlite3 DSN of path as a SQLite URI filename.
func sqliteDSN(path, params string) string {
	var b strings.Builder
	for _, c := range []byte(filepath.ToSlash(path)) {
		if c == '/' || c == '-' || c == '_' || c == '.' || c == '~' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return "file:" + b.String() + "?" + params
}
