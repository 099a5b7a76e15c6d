package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// Replacing a working catalog in place (fdl pull): the file keeps its path,
// so the ATTACH statement pipelines and notebooks use does not change, and
// no process that has it attached ever reads a half-written catalog or
// writes into a file that is no longer the catalog.

// SnapshotMark is a snapshot's id and time: with the id, the time tells one
// timeline from another (DuckLake snapshot ids restart in every lake).
type SnapshotMark struct {
	ID   int64
	Time time.Time
}

// SnapshotMarks returns the id and snapshot_time of every snapshot of the
// catalog at path, sorted by id, reading nothing else: a SQLite catalog is
// queried in one read transaction of its own (after the header and WAL
// checks Open makes, but without SQLite's quick_check, a read of every
// page, unless a read fails: CheckSQLite runs it where a command goes on
// to use the rest of the file), without the copy into DuckDB Open makes;
// a DuckDB catalog is attached read-only. Errors as Open (damage that no
// read of the layout and the snapshots meets is not reported).
func SnapshotMarks(ctx context.Context, path string) ([]SnapshotMark, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	backend, err := DetectBackend(abs)
	if err != nil {
		return nil, err
	}
	if backend == BackendDuckDB {
		c, err := Open(ctx, abs)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		snaps, err := c.Snapshots(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]SnapshotMark, len(snaps))
		for i, s := range snaps {
			out[i] = SnapshotMark{ID: s.ID, Time: s.Time}
		}
		return out, nil
	}
	var out []SnapshotMark
	err = withSQLiteSnapshotCheck(ctx, abs, checkNone, func(s *sqliteSnapshot) error {
		var err error
		if out, err = sqliteMarks(ctx, s.conn, abs, "main"); err != nil {
			return s.damageFirst(ctx, checkNone, err)
		}
		return nil
	})
	return out, err
}

// FilesKnownAtFile is Catalog.FilesKnownAt for the catalog file at path,
// DuckDB or SQLite (read in place, in one read transaction, with no
// quick_check: a read that fails runs it, as SnapshotMarks does). A
// SQLite catalog's tables are counted whole, less their rows with ids at
// or above s's next_file_id (few: the files written after s), so the
// count costs a walk of each table's smallest index. Errors:
// ErrSnapshotNotFound when s is not in the catalog; Open's.
func FilesKnownAtFile(ctx context.Context, path string, s int64) (int64, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, err
	}
	backend, err := DetectBackend(abs)
	if err != nil {
		return 0, err
	}
	if backend == BackendDuckDB {
		c, err := Open(ctx, abs)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.FilesKnownAt(ctx, s)
	}
	var n int64
	err = withSQLiteSnapshotCheck(ctx, abs, checkNone, func(sn *sqliteSnapshot) error {
		var err error
		if n, err = sqliteFilesKnownAt(ctx, sn.conn, abs, s); err != nil {
			return sn.damageFirst(ctx, checkNone, err)
		}
		return nil
	})
	return n, err
}

// sqliteFilesKnownAt counts, in the SQLite catalog on conn, the rows of
// ducklake_data_file, ducklake_delete_file and
// ducklake_files_scheduled_for_deletion (those it has) whose file id is
// below snapshot s's next_file_id.
func sqliteFilesKnownAt(ctx context.Context, conn *sql.Conn, path string, s int64) (int64, error) {
	var next sql.NullInt64
	err := conn.QueryRowContext(ctx, "SELECT next_file_id FROM ducklake_snapshot WHERE snapshot_id = ?", s).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !next.Valid {
		return 0, fmt.Errorf("%w: %s has no snapshot %d", ErrSnapshotNotFound, path, s)
	}
	if err != nil {
		return 0, err
	}
	var total int64
	for _, tc := range knownFileIDs {
		var has int
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", tc.table, tc.id).Scan(&has); err != nil {
			return 0, err
		}
		if has == 0 {
			continue
		}
		var all, after int64
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+tc.table).Scan(&all); err != nil {
			return 0, err
		}
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+tc.table+" WHERE "+tc.id+" >= ?", next.Int64).Scan(&after); err != nil {
			return 0, err
		}
		total += all - after
	}
	return total, nil
}

// CheckSQLite runs SQLite's quick_check on the SQLite catalog at path, in
// a read transaction of its own (retried while another process holds the
// file busy): pages cut off by truncation and damaged b-trees are
// ErrCorrupt naming the file; other errors as Open. It reads every page
// (about 1.1 ms of CPU per MiB), so a command runs it beside slower work
// (pull: beside the download of the new version's catalog).
func CheckSQLite(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return withSQLiteSnapshotCheck(ctx, abs, checkOnOpen, func(*sqliteSnapshot) error { return nil })
}

// sqliteMarks reads the snapshots of the SQLite catalog attached as schema
// on conn.
func sqliteMarks(ctx context.Context, conn *sql.Conn, path, schema string) ([]SnapshotMark, error) {
	rows, err := conn.QueryContext(ctx, "SELECT snapshot_id, CAST(snapshot_time AS TEXT) FROM "+sqlquote.Ident(schema)+".ducklake_snapshot ORDER BY snapshot_id")
	if err != nil {
		if isSQLiteBusy(err) {
			return nil, err
		}
		return nil, classifySQLiteError(path, "read its snapshots", err)
	}
	defer rows.Close()
	var out []SnapshotMark
	for rows.Next() {
		var id int64
		var ts sql.NullString
		if err := rows.Scan(&id, &ts); err != nil {
			return nil, fmt.Errorf("%s: read its snapshots: %w", path, err)
		}
		t, err := parseSQLiteTime(ts.String)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: snapshot %d: %v", ErrNotCatalog, path, id, err)
		}
		out = append(out, SnapshotMark{ID: id, Time: t})
	}
	if err := rows.Err(); err != nil {
		if isSQLiteBusy(err) {
			return nil, err
		}
		return nil, classifySQLiteError(path, "read its snapshots", err)
	}
	return out, nil
}

// parseSQLiteTime reads a snapshot_time stored as text in a SQLite
// catalog (sqliteTimeLayouts).
func parseSQLiteTime(s string) (time.Time, error) {
	for _, l := range sqliteTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("snapshot_time %q is not a timestamp with time zone", s)
}

// ReplaceSQLite replaces the contents of the SQLite catalog dst with those
// of the SQLite catalog src, in place and atomically, in one SQLite write
// transaction on dst: every process that has dst open (DuckDB's sqlite
// extension opens it for each transaction) sees either the old catalog or
// the new one, and no write of theirs is lost: the transaction begins with
// BEGIN IMMEDIATE (no other writer until it commits; readers go on reading
// the old state from the WAL), then check is called with dst's snapshots
// as they are inside it (the caller refuses when a writer added snapshots
// since it looked), then every table of src is copied into dst (tables dst
// has and src lacks are dropped; tables whose CREATE statement differs are
// made again), row counts are compared, and the transaction commits. A
// busy dst is retried for at most a minute, then ErrLocked. On any error
// dst is left as it was. src is read only.
func ReplaceSQLite(ctx context.Context, dst, src string, check func([]SnapshotMark) error) error {
	if _, err := checkSQLiteFile(dst); err != nil {
		return err
	}
	return retrySQLiteBusy(ctx, dst, func() error { return replaceSQLiteOnce(ctx, dst, src, check) })
}

// replaceSQLiteOnce is one attempt of ReplaceSQLite; busy errors are
// returned as they are.
func replaceSQLiteOnce(ctx context.Context, dst, src string, check func([]SnapshotMark) error) (err error) {
	db, err := sql.Open("sqlite3", sqliteDSN(dst, "_busy_timeout="+strconv.Itoa(SQLiteBusyTimeout)))
	if err != nil {
		return fmt.Errorf("open %s: %w", dst, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return classifySQLiteError(dst, "open", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH "+sqlquote.String(sqliteDSN(src, "mode=ro"))+" AS src"); err != nil {
		return classifySQLiteError(src, "attach", err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		if isSQLiteBusy(err) {
			return err
		}
		return classifySQLiteError(dst, "begin a write transaction", err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	marks, err := sqliteMarks(ctx, conn, dst, "main")
	if err != nil {
		return err
	}
	if err := check(marks); err != nil {
		return err
	}
	if err := copySQLiteTables(ctx, conn, dst); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		if isSQLiteBusy(err) {
			return err
		}
		return classifySQLiteError(dst, "commit", err)
	}
	return nil
}

// sqliteObject is a table or index of sqlite_master.
type sqliteObject struct{ kind, name, sql string }

func sqliteObjects(ctx context.Context, conn *sql.Conn, schema string) (map[string]sqliteObject, []sqliteObject, error) {
	rows, err := conn.QueryContext(ctx, "SELECT type, name, sql FROM "+sqlquote.Ident(schema)+".sqlite_master WHERE type IN ('table', 'index') AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type DESC, name")
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	byName := map[string]sqliteObject{}
	var list []sqliteObject
	for rows.Next() {
		var o sqliteObject
		if err := rows.Scan(&o.kind, &o.name, &o.sql); err != nil {
			return nil, nil, err
		}
		byName[o.name] = o
		list = append(list, o)
	}
	return byName, list, rows.Err()
}

// copySQLiteTables makes main's tables and indexes those of src, row for
// row, inside the caller's transaction.
func copySQLiteTables(ctx context.Context, conn *sql.Conn, dst string) error {
	fail := func(doing string, err error) error {
		if isSQLiteBusy(err) {
			return err
		}
		return classifySQLiteError(dst, doing, err)
	}
	have, haveList, err := sqliteObjects(ctx, conn, "main")
	if err != nil {
		return fail("list its tables", err)
	}
	want, wantList, err := sqliteObjects(ctx, conn, "src")
	if err != nil {
		return fail("list the new catalog's tables", err)
	}
	for _, o := range haveList {
		if w, ok := want[o.name]; ok && w.kind == o.kind && w.sql == o.sql {
			continue
		}
		if _, err := conn.ExecContext(ctx, "DROP "+strings.ToUpper(o.kind)+" IF EXISTS main."+sqlquote.Ident(o.name)); err != nil {
			return fail("drop "+o.name, err)
		}
		delete(have, o.name)
	}
	for _, o := range wantList {
		q := sqlquote.Ident(o.name)
		if _, ok := have[o.name]; !ok {
			if _, err := conn.ExecContext(ctx, o.sql); err != nil {
				return fail("create "+o.name, err)
			}
		} else if o.kind == "table" {
			if _, err := conn.ExecContext(ctx, "DELETE FROM main."+q); err != nil {
				return fail("empty "+o.name, err)
			}
		}
		if o.kind != "table" {
			continue
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO main."+q+" SELECT * FROM src."+q); err != nil {
			return fail("copy "+o.name, err)
		}
		var a, b int64
		if err := conn.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM main."+q+"), (SELECT count(*) FROM src."+q+")").Scan(&a, &b); err != nil {
			return fail("count "+o.name, err)
		}
		if a != b {
			return fmt.Errorf("%s: copy of %s holds %d rows, the new catalog %d; nothing was changed", dst, o.name, a, b)
		}
	}
	return nil
}

// ReplaceDuckDB replaces the DuckDB catalog file dst with the file src (on
// the same file system) by rename, while holding the lock DuckDB itself
// takes on a database file it opens (an fcntl write lock on the whole
// file): a process that has dst attached holds that lock as long as it is
// attached, so the lock is refused (ErrLocked, naming the file and saying
// to DETACH it) and nothing changes. Holding it, unchanged is called
// (the caller checks that nobody wrote to dst since it looked, e.g. by
// its FileStamp), then dst's WAL (dst + ".wal", which belongs to the old
// file) is removed, src is renamed over dst and the folder is synced. A
// process that attaches dst afterwards opens the new file.
func ReplaceDuckDB(dst, src string, unchanged func() error) error {
	unlock, err := lockDuckDBFile(dst)
	if err != nil {
		return err
	}
	defer unlock()
	if err := unchanged(); err != nil {
		return err
	}
	if err := os.Remove(walPath(dst)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", walPath(dst), err)
	}
	if err := os.Rename(src, dst); err != nil {
		return err
	}
	syncDir(filepath.Dir(dst))
	return nil
}

// FileStamp identifies the contents of a catalog file and its WAL without
// reading them: a write changes the size or the modification time of one
// of them.
type FileStamp struct {
	Size, WALSize   int64
	Mod, WALMod     time.Time
	Inode, WALInode uint64
}

// Stamp returns path's FileStamp (its WAL: the DuckDB ".wal" or SQLite
// "-wal" beside it, absent counts as zero).
func Stamp(path string) (FileStamp, error) {
	var s FileStamp
	fi, err := os.Stat(path)
	if err != nil {
		return s, err
	}
	s.Size, s.Mod, s.Inode = fi.Size(), fi.ModTime(), fileInode(fi)
	for _, w := range []string{walPath(path), path + "-wal"} {
		if wi, err := os.Stat(w); err == nil {
			s.WALSize, s.WALMod, s.WALInode = s.WALSize+wi.Size(), wi.ModTime(), fileInode(wi)
		}
	}
	return s, nil
}
