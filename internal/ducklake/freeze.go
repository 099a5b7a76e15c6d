package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// Freeze settings: DuckDB streams COPY FROM DATABASE through its buffer
// manager, so a modest limit with a spill folder keeps memory flat whatever
// the catalog size (measured: peak RSS 178-191 MiB for catalogs of 40, 94
// and 184 MiB; 256MB gave ~300 MiB, 64MB ~125 MiB but slower; see
// BenchmarkFreeze and TestFreezeMemoryFlat).
const (
	freezeMemoryLimit = "128MB"
	frozenAlias       = "fdl_frozen"
)

// Freeze writes to dst a single-file DuckDB-format copy of the DuckLake
// catalog src.
//
// When src is a SQLite-format catalog, it is read in one SQLite read
// transaction (one committed state including the rows of its -wal file,
// while other processes may go on writing; retried on SQLITE_BUSY for at
// most a minute) and written as a new DuckDB database whose tables, column
// types (BOOLEAN, UUID, TIMESTAMP WITH TIME ZONE, …) and PRIMARY KEY / NOT
// NULL constraints are those of a DuckDB-format catalog of the same DuckLake
// format, inlined-data tables included, in the storage version the
// extension of that format wrote (storageForFormat); rows go to DuckDB in
// batches in one transaction with memory_limit 64MB, so memory does not
// grow with the catalog (TestSQLiteMemoryFlat). Errors as Open gives
// them for SQLite files (ErrCorrupt, ErrNotCatalog, ErrUnsupportedFormat,
// ErrLocked).
//
// When src is a DuckDB-format catalog, dst gets every committed row of every table (including rows still in
// src's .wal, which DuckDB replays when attaching), with the same tables,
// column names, column types and PRIMARY KEY / NOT NULL constraints, and no
// .wal beside it. dst is written with the STORAGE_VERSION that src's header
// needs (ReadStorage), so any DuckDB that reads src reads dst.
//
// src is attached READ_ONLY and never modified (neither it nor its WAL). The
// copy is made in a temporary folder ".fdl-freeze-*" beside dst (also
// DuckDB's spill folder; DuckDB runs with memory_limit 128MB, so peak RSS
// stays near 180 MiB whatever the catalog size) and moved to dst with a
// create-only link. When dst's folder path holds '?' (where DuckDB cannot
// write, see walPath) the copy is built under os.TempDir() and copied beside
// dst first. On any error nothing is left behind. Before it is moved, the
// copy's tables and per-table row counts are checked against src's, and its
// header against src's storage version.
//
// Errors: fs.ErrExist when dst or its WAL path already exists; ErrLocked when
// another process holds src's DuckDB write lock (the message names src);
// ErrSQLite, ErrNotCatalog, ErrUnsupportedFormat, ErrUnknownStorage as Open
// and ReadStorage give them; an error when the copy's row counts differ from
// src's.
func Freeze(ctx context.Context, src, dst string) (info FreezeInfo, err error) {
	srcAbs, err := filepath.Abs(src)
	if err != nil {
		return info, err
	}
	dstAbs, err := filepath.Abs(dst)
	if err != nil {
		return info, err
	}
	if backend, err := DetectBackend(srcAbs); err != nil {
		return info, err
	} else if backend == BackendSQLite {
		for _, p := range []string{dstAbs, dstAbs + ".wal", walPath(dstAbs)} {
			if _, err := os.Lstat(p); err == nil {
				return info, fmt.Errorf("freeze %s: %s: %w", srcAbs, p, fs.ErrExist)
			}
		}
		return freezeSQLite(ctx, srcAbs, dstAbs)
	}
	storage, err := ReadStorage(srcAbs)
	if err != nil {
		return info, err
	}
	for _, p := range []string{dstAbs, dstAbs + ".wal", walPath(dstAbs)} {
		if _, err := os.Lstat(p); err == nil {
			return info, fmt.Errorf("freeze %s: %s: %w", srcAbs, p, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
		}
	}
	// DuckDB misplaces the WAL of a path holding '?' (walPath), so the copy
	// is built in a folder whose path has none: beside dst when possible
	// (then moved with a link), else in the system temp folder (then copied).
	workParent := filepath.Dir(dstAbs)
	if strings.Contains(workParent, "?") {
		workParent = os.TempDir()
		if strings.Contains(workParent, "?") {
			return info, fmt.Errorf("freeze %s: no work folder without '?' in its path (TMPDIR %s)", srcAbs, workParent)
		}
	}
	work, err := os.MkdirTemp(workParent, ".fdl-freeze-*")
	if err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	defer os.RemoveAll(work)
	tmp := filepath.Join(work, "catalog.duckdb")
	info, err = freezeDuckDB(ctx, srcAbs, tmp, work, storage)
	if err != nil {
		return info, err
	}
	if err := syncFile(tmp); err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	if err := placeNew(tmp, dstAbs); err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	syncDir(filepath.Dir(dstAbs))
	return info, nil
}

// freezeDuckDB copies the DuckDB-format catalog srcAbs to tmp inside the
// folder work (also DuckDB's spill folder), in the storage version storage,
// and checks the copy against srcAbs (checkCopy). Without a WAL beside
// srcAbs the file's bytes are copied while DuckDB's read-only attachment
// holds the shared lock; with one, DuckDB copies every committed row
// (copyDatabase).
func freezeDuckDB(ctx context.Context, srcAbs, tmp, work string, storage meta.Storage) (info FreezeInfo, err error) {
	db, conn, err := newDuckDB(ctx, []string{
		"SET memory_limit = " + sqlquote.String(freezeMemoryLimit),
		"SET temp_directory = " + sqlquote.String(filepath.Join(work, "spill")),
		"SET preserve_insertion_order = false",
	})
	if err != nil {
		return info, err
	}
	c := &Catalog{path: srcAbs, db: db, conn: conn, backend: BackendDuckDB}
	defer c.Close()
	if err := c.attach(ctx); err != nil {
		return info, err
	}
	if err := c.load(ctx); err != nil {
		return info, err
	}
	last, err := c.snapshots(ctx, "ORDER BY s.snapshot_id DESC LIMIT 1")
	if err != nil {
		return info, err
	}
	if len(last) == 0 {
		return info, fmt.Errorf("freeze: %w: %s has no snapshots", ErrSnapshotNotFound, srcAbs)
	}

	if !hasWAL(srcAbs) {
		// Fast path: with no WAL the file itself is a complete checkpointed
		// database. Copy its bytes while DuckDB's read-only attachment holds
		// the shared lock, so no writer can start meanwhile.
		if err := copyLocked(ctx, c, srcAbs, tmp); err != nil {
			return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
		}
	} else if err := c.copyDatabase(ctx, conn, srcAbs, tmp, storage); err != nil {
		return info, err
	}
	if err := c.Close(); err != nil {
		return info, fmt.Errorf("freeze %s: close duckdb: %w", srcAbs, err)
	}
	got, err := checkCopy(srcAbs, tmp, storage)
	if err != nil {
		return info, err
	}
	return FreezeInfo{Format: c.format, Snapshot: last[0], Storage: got}, nil
}

// hasWAL reports whether a DuckDB write-ahead log sits beside path.
func hasWAL(path string) bool {
	for _, p := range []string{path + ".wal", walPath(path)} {
		if _, err := os.Lstat(p); err == nil {
			return true
		}
	}
	return false
}

// copyLocked copies src's bytes to dst while c (attached to src read-only)
// holds DuckDB's lock, then detaches before closing its own descriptor:
// POSIX fcntl locks belong to the process, and closing any descriptor of
// the file would drop DuckDB's lock, so the order matters.
func copyLocked(ctx context.Context, c *Catalog, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close() // after the DETACH below
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, &ctxReader{ctx: ctx, r: in})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if hasWAL(src) {
		return fmt.Errorf("a WAL appeared beside %s during the copy", src)
	}
	_, err = c.conn.ExecContext(ctx, "DETACH "+sqlquote.Ident(catalogAlias))
	return err
}

// ctxReader stops a copy when its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// copyDatabase writes every table of the attached catalog into a new
// database at tmp with COPY FROM DATABASE (used when src has a WAL, whose
// rows must be checkpointed into the copy), checks per-table row counts,
// and detaches both.
func (c *Catalog) copyDatabase(ctx context.Context, conn *sql.Conn, srcAbs, tmp string, storage meta.Storage) error {
	steps := []string{
		fmt.Sprintf("ATTACH %s AS %s (STORAGE_VERSION %s)", sqlquote.String(tmp), sqlquote.Ident(frozenAlias), sqlquote.String(storage.MinDuckDB)),
		fmt.Sprintf("COPY FROM DATABASE %s TO %s", sqlquote.Ident(catalogAlias), sqlquote.Ident(frozenAlias)),
	}
	for _, s := range steps {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("freeze %s: %s: %w", srcAbs, s, err)
		}
	}
	if err := compareCounts(ctx, conn, catalogAlias, frozenAlias); err != nil {
		return fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	for _, s := range []string{"CHECKPOINT " + sqlquote.Ident(frozenAlias), "DETACH " + sqlquote.Ident(frozenAlias), "DETACH " + sqlquote.Ident(catalogAlias)} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("freeze %s: %s: %w", srcAbs, s, err)
		}
	}
	return nil
}

// compareCounts checks that databases a and b hold the same (schema, table)
// set with the same row count in each table.
func compareCounts(ctx context.Context, conn *sql.Conn, a, b string) error {
	list := func(db string) ([]string, error) {
		rows, err := conn.QueryContext(ctx, `SELECT schema_name, table_name FROM duckdb_tables()
			WHERE database_name = ? ORDER BY schema_name, table_name`, db)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s, t string
			if err := rows.Scan(&s, &t); err != nil {
				return nil, err
			}
			out = append(out, sqlquote.Ident(s)+"."+sqlquote.Ident(t))
		}
		return out, rows.Err()
	}
	ta, err := list(a)
	if err != nil {
		return err
	}
	tb, err := list(b)
	if err != nil {
		return err
	}
	if !slices.Equal(ta, tb) {
		return fmt.Errorf("copy has tables [%s], source [%s]", strings.Join(tb, ", "), strings.Join(ta, ", "))
	}
	for _, t := range ta {
		var na, nb int64
		q := fmt.Sprintf("SELECT (SELECT count(*) FROM %s.%s), (SELECT count(*) FROM %s.%s)", sqlquote.Ident(a), t, sqlquote.Ident(b), t)
		if err := conn.QueryRowContext(ctx, q).Scan(&na, &nb); err != nil {
			return err
		}
		if na != nb {
			return fmt.Errorf("table %s: copy has %d rows, source %d", t, nb, na)
		}
	}
	return nil
}

// placeNew moves tmp to dst without replacing an existing dst. A hard link
// is create-only. When tmp is on another file system it is first copied to
// a temporary file beside dst (and fsynced), which is then linked. Where
// links are unsupported, it falls back to a rename after one more existence
// check.
func placeNew(tmp, dst string) error {
	err := os.Link(tmp, dst)
	if err == nil {
		_ = os.Remove(tmp) // the caller removes the work folder anyway
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", dst, fs.ErrExist)
	}
	if errors.Is(err, syscall.EXDEV) {
		near, err := copyBeside(tmp, dst)
		if err != nil {
			return err
		}
		defer os.Remove(near)
		return placeNew(near, dst)
	}
	if _, statErr := os.Lstat(dst); statErr == nil {
		return fmt.Errorf("%s: %w", dst, fs.ErrExist)
	}
	return os.Rename(tmp, dst)
}

// copyBeside copies src to a new temporary file in dst's folder, fsynced.
func copyBeside(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dst), ".fdl-freeze-*.tmp")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", err
	}
	return out.Name(), nil
}

// walPath is where DuckDB (1.5.6 and 2.0.0) looks for the WAL of the database file p:
// p + ".wal", except that it inserts ".wal" before the first '?' when p has
// one (it treats the rest as URL parameters): "/d/a?b.db" -> "/d/a.wal?b.db",
// and "/d?x/c.db" -> "/d.wal?x/c.db" (so DuckDB cannot write a database in a
// folder whose path holds '?'). Verified in TestOddPaths.
func walPath(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i] + ".wal" + p[i:]
	}
	return p + ".wal"
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a rename durable where the platform allows it; failures are
// ignored (some platforms cannot fsync a directory).
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		f.Close()
	}
}

// checkCopy checks a frozen copy tmp of srcAbs — no WAL beside it (the
// catalog must be one file), the storage version wanted — and returns the
// copy's storage version.
func checkCopy(srcAbs, tmp string, storage meta.Storage) (meta.Storage, error) {
	if _, err := os.Lstat(walPath(tmp)); err == nil {
		return meta.Storage{}, fmt.Errorf("freeze %s: DuckDB left a WAL beside the copy", srcAbs)
	}
	got, err := ReadStorage(tmp)
	if err != nil {
		return meta.Storage{}, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	if got.Number != storage.Number {
		return meta.Storage{}, fmt.Errorf("freeze %s: copy has storage version %d, want %d", srcAbs, got.Number, storage.Number)
	}
	return got, nil
}
