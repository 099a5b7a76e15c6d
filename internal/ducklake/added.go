package ducklake

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// The store keys of the data and delete files that new snapshots add, and
// which of them a store lacks: a push's data check over hundreds of
// thousands of files, done inside the catalog's private DuckDB (which
// spills to disk) so that neither the files' paths nor the store's listing
// are held in Go memory.

// FolderKey says where the files of one table's folder lie in a
// repository (retention.DirPlace): a relative path p of a file of that
// table that passes simplePath has the store key Prefix + p.
type FolderKey struct {
	// Prefix is "" when the folder lies outside the repository (or cannot
	// be placed): its simple files get no key and are not checked.
	Prefix string
	// Nested: the rule holds for paths with folders too; when false, such
	// paths are placed one by one.
	Nested bool
}

// simplePath is the SQL condition on a relative path p (column f.path)
// under which its key is its folder's prefix plus p (a rule as strict as
// retention.SimpleName, and no looser: TestSimplePathMatchesSimpleName):
// not starting with "." or "/", not ending in "/", no "/." (so no "." or
// ".." element and no element starting with "."), no "//", no '?' or '#',
// no backslash or control character. DuckDB's own file names
// ("ducklake-<uuid>.parquet", partition folders "k=v/") pass; other paths
// are placed one by one. An ASCII path (as many bytes as characters) is
// checked without a regular expression (which took half the time of a
// pass over the added rows): to_json escapes exactly the control
// characters below 0x20, the backslash and the double quote (a path with
// a quote is then placed one by one, as exactly), and DEL is looked for
// on its own.
const simplePath = `NOT (starts_with(f.path, '.') OR starts_with(f.path, '/') OR ends_with(f.path, '/') OR f.path = ''
	OR contains(f.path, '/.') OR contains(f.path, '//') OR contains(f.path, '?') OR contains(f.path, '#') OR CASE WHEN strlen(f.path) = length(f.path)
	THEN strlen(to_json(f.path)) <> strlen(f.path) + 2 OR contains(f.path, chr(127))
	ELSE regexp_matches(f.path, '[\\\x00-\x1f\x7f\x{80}-\x{9f}\x{fffd}]') END)`

// Temporary tables of the catalog's connection in its private DuckDB.
const (
	addedTable   = "fdl_added"   // key, table_id (NULL for a file placed on its own), size (file_size_bytes)
	basesTable   = "fdl_bases"   // table_id, prefix, nested
	missingTable = "fdl_missing" // key: added and not listed
)

// addedMemoryLimit bounds DuckDB's memory while it holds the added keys (a
// hundred bytes or so per file) and a batch of the store's listing; beyond
// it DuckDB spills to a temporary folder.
const addedMemoryLimit = "128MB"

// AddedKeys is the set of store keys of the data and delete files begun at
// or after a snapshot that a reader of one of some snapshots reads, kept in
// a temporary table of the catalog's DuckDB. Close drops it; the Catalog
// must stay open meanwhile. Methods are not safe for concurrent use.
type AddedKeys struct {
	c *Catalog
	n int64
	// fast is the query of the keys of the files with a simple relative
	// path (their folder's prefix plus the path), not yet in addedTable
	// while pending: Missing computes them while the store is listed.
	fast    string
	pending bool
	// groups are the fast keys' groups, one per table, from one pass
	// over the added rows (KeyGroup).
	groups []KeyGroup
}

// AddedKeys collects the store keys of the rows of ducklake_data_file and
// ducklake_delete_file written at or after snapshot since (the rows
// DataFilesSince gives: begin_snapshot >= since, or an id the catalog
// handed out from since on, as merged and flushed files have) that are visible at
// one of the snapshots readAt (the MVCC rule: a file a version neither
// reads nor keeps is not checked). Paths resolve as DataFiles resolves
// them. For each table, folder gives the FolderKey of the folder its
// relative paths are appended to; files with a simple relative path take
// their key from it without leaving DuckDB, every other file's resolved
// path is given to place, which returns its key ("" or an error: not
// checked, as for a file outside the repository).
func (c *Catalog) AddedKeys(ctx context.Context, since int64, readAt []int64, folder func(dir string) (FolderKey, error), place func(path string) (string, error)) (*AddedKeys, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	if err := c.bigQuerySettings(ctx); err != nil {
		return nil, err
	}
	if err := c.exec(ctx, "CREATE OR REPLACE TEMP TABLE "+addedTable+" (key VARCHAR, table_id BIGINT, size BIGINT)"); err != nil {
		return nil, err
	}
	a := &AddedKeys{c: c}
	added := c.addedRows(since, readAt)
	if added == "" {
		return a, nil
	}
	paths, err := c.pathTree(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.loadBases(ctx, added, paths, folder); err != nil {
		return nil, err
	}
	fast := "f.rel AND " + simplePath + " AND (b.nested OR strpos(f.path, '/') = 0)"
	// One pass over the added rows: the fast keys' groups and count (the
	// keys themselves are made when they are compared: Missing, or
	// materialize for Keys), and how many files the fast rule does not
	// cover.
	var odd int64
	// (The path rule is applied to each row before the join with the
	// folders: the same condition as fast, which DuckDB evaluates in a
	// third less time so.)
	q := fmt.Sprintf(`SELECT any_value(prefix), count(*) FILTER (WHERE prefix <> '' AND ok), min(path) FILTER (WHERE prefix <> '' AND ok),
		max(path) FILTER (WHERE prefix <> '' AND ok), count(*) FILTER (WHERE NOT ok)
		FROM (SELECT f.table_id, f.path, b.prefix, coalesce(f.simple AND (b.nested OR f.flat), false) AS ok
			FROM (SELECT f.table_id, f.path, f.rel AND %s AS simple, strpos(f.path, '/') = 0 AS flat FROM (%s) f) f
			JOIN %s b USING (table_id)) GROUP BY table_id`, simplePath, added, basesTable)
	err = c.query(ctx, q, func(r *sql.Rows) error {
		var prefix string
		var lo, hi sql.NullString
		var n, o int64
		if err := r.Scan(&prefix, &n, &lo, &hi, &o); err != nil {
			return err
		}
		if n > 0 {
			a.groups = append(a.groups, KeyGroup{Prefix: prefix + commonPrefix(lo.String, hi.String), Count: n})
			a.n += n
		}
		odd += o
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The fast keys' query. When the pass found every added row to pass
	// the fast rule (odd = 0, the common case: DuckDB's own file names),
	// the rule is not evaluated again on each path: the catalog is
	// attached read-only, so the rows are the ones the pass saw.
	cond := "b.prefix <> ''"
	if odd > 0 {
		cond += " AND " + fast
	}
	a.fast = fmt.Sprintf("SELECT b.prefix || f.path AS key, f.table_id, f.size FROM (%s) f JOIN %s b USING (table_id) WHERE %s", added, basesTable, cond)
	a.pending = a.n > 0
	if odd > 0 {
		if err := c.placeOdd(ctx, added, fast, paths, place); err != nil {
			return nil, err
		}
		if err := c.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+addedTable).Scan(&odd); err != nil {
			return nil, fmt.Errorf("query %s: %w", c.path, err)
		}
		a.n += odd
	}
	return a, nil
}

// materialize adds the fast keys to addedTable, once.
func (a *AddedKeys) materialize(ctx context.Context) error {
	if !a.pending {
		return nil
	}
	if _, err := a.c.conn.ExecContext(ctx, "INSERT INTO "+addedTable+" "+a.fast); err != nil {
		return fmt.Errorf("query %s: %w", a.c.path, err)
	}
	a.pending = false
	return nil
}

// bigQuerySettings gives the catalog's DuckDB a memory limit and a spill
// folder (removed by Close), for queries whose size grows with the files.
func (c *Catalog) bigQuerySettings(ctx context.Context) error {
	if c.spill == "" {
		dir, remove, err := scratch.New(scratch.Spill)
		if err != nil {
			return err
		}
		c.spill, c.spillRemove = dir, remove
	}
	if err := c.exec(ctx, "SET memory_limit = "+sqlquote.String(addedMemoryLimit)); err != nil {
		return err
	}
	return c.exec(ctx, "SET temp_directory = "+sqlquote.String(c.spill))
}

func (c *Catalog) exec(ctx context.Context, q string, args ...any) error {
	if _, err := c.conn.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("query %s: %w", c.path, err)
	}
	return nil
}

// addedRows is the query of the added files (table_id, path, rel, size:
// file_size_bytes, NULL when not recorded), data and delete files alike;
// "" when the catalog has neither table.
func (c *Catalog) addedRows(since int64, readAt []int64) string {
	var read []string
	for _, s := range readAt {
		read = append(read, "("+visible("", s)+")")
	}
	visibleAt := ""
	if len(read) > 0 {
		visibleAt = " AND (" + strings.Join(read, " OR ") + ")"
	}
	var parts []string
	for _, t := range []struct{ t, id string }{{dataFileTable, "data_file_id"}, {deleteFileTable, "delete_file_id"}} {
		if !c.has(t.t) {
			continue
		}
		// Written at or after since (as DataFilesSince): begun then, or
		// with an id the last snapshot before since had not handed out
		// (a merge or a flush of inlined data writes files whose
		// begin_snapshot is that of the oldest rows they hold).
		where := fmt.Sprintf("(begin_snapshot >= %d OR %s >= coalesce((SELECT next_file_id FROM %s WHERE snapshot_id < %d ORDER BY snapshot_id DESC LIMIT 1), 0))%s",
			since, sqlquote.Ident(t.id), c.t("ducklake_snapshot"), since, visibleAt)
		rel := c.col(t.t, "", "path_is_relative", "NULL::BOOLEAN")
		// NULL (or no column): relative unless plainly absolute (isRelative).
		parts = append(parts, fmt.Sprintf(`SELECT table_id, path, coalesce(%s, NOT (starts_with(path, '/') OR contains(path, '://'))) AS rel, %s AS size FROM %s WHERE path IS NOT NULL AND %s`,
			rel, c.col(t.t, "", "file_size_bytes", "NULL::BIGINT"), c.t(t.t), where))
	}
	return strings.Join(parts, " UNION ALL ")
}

// loadBases fills basesTable with the FolderKey of each table that has
// added files (a table whose folder cannot be placed gets prefix "").
func (c *Catalog) loadBases(ctx context.Context, added string, paths *pathTree, folder func(string) (FolderKey, error)) error {
	var ids []int64
	err := c.query(ctx, "SELECT DISTINCT table_id FROM ("+added+") ORDER BY table_id", func(r *sql.Rows) error {
		var id int64
		if err := r.Scan(&id); err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return err
	}
	if err := c.exec(ctx, "CREATE OR REPLACE TEMP TABLE "+basesTable+" (table_id BIGINT, prefix VARCHAR, nested BOOLEAN)"); err != nil {
		return err
	}
	return c.appendRows(ctx, basesTable, func(add func(...driver.Value) error) error {
		for _, id := range ids {
			fk, err := folder(paths.tableBase(id))
			if err != nil {
				fk = FolderKey{} // not placeable: like a folder outside the repository
			}
			if err := add(id, fk.Prefix, fk.Nested); err != nil {
				return err
			}
		}
		return nil
	})
}

// placeOdd places, one by one, the added files the fast rule does not
// cover (absolute paths, paths that are not simple) and adds their keys
// (those place gives a key for).
func (c *Catalog) placeOdd(ctx context.Context, added, fast string, paths *pathTree, place func(string) (string, error)) error {
	var keys []string
	var sizes []sql.NullInt64
	q := fmt.Sprintf("SELECT f.table_id, f.path, f.rel, f.size FROM (%s) f JOIN %s b USING (table_id) WHERE NOT (%s)", added, basesTable, fast)
	err := c.query(ctx, q, func(r *sql.Rows) error {
		var tid int64
		var path string
		var rel bool
		var size sql.NullInt64
		if err := r.Scan(&tid, &path, &rel, &size); err != nil {
			return err
		}
		if rel {
			path = paths.tableBase(tid) + path
		}
		if key, err := place(path); err == nil && key != "" {
			keys, sizes = append(keys, key), append(sizes, size)
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	return c.appendRows(ctx, addedTable, func(add func(...driver.Value) error) error {
		for i, k := range keys {
			var size any
			if sizes[i].Valid {
				size = sizes[i].Int64
			}
			if err := add(k, nil, size); err != nil {
				return err
			}
		}
		return nil
	})
}

// appendRows appends rows to a temporary table with DuckDB's Appender.
func (c *Catalog) appendRows(ctx context.Context, table string, fill func(add func(...driver.Value) error) error) error {
	err := c.conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppender(dc.(driver.Conn), "temp", "main", table)
		if err != nil {
			return err
		}
		if err := fill(func(v ...driver.Value) error { return app.AppendRow(v...) }); err != nil {
			app.Close()
			return err
		}
		return app.Close()
	})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.path, table, err)
	}
	return nil
}

// Count returns the number of added keys (a file listed twice counts
// twice).
func (a *AddedKeys) Count() int64 { return a.n }

// Keys returns the first limit distinct keys in byte order (DuckDB's
// default collation compares bytes, as Go does).
func (a *AddedKeys) Keys(ctx context.Context, limit int) ([]string, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	if err := a.c.ready(); err != nil {
		return nil, err
	}
	if err := a.materialize(ctx); err != nil {
		return nil, err
	}
	return a.c.keys(ctx, fmt.Sprintf("SELECT DISTINCT key FROM %s ORDER BY key LIMIT %d", addedTable, limit))
}

// KeySize is an added key and the size its catalog row records
// (file_size_bytes; -1 when not recorded).
type KeySize struct {
	Key  string
	Size int64
}

// KeySizes returns the first limit distinct (key, size) pairs in byte
// order of the keys (a key two rows record with two sizes comes twice).
func (a *AddedKeys) KeySizes(ctx context.Context, limit int) ([]KeySize, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	if err := a.c.ready(); err != nil {
		return nil, err
	}
	if err := a.materialize(ctx); err != nil {
		return nil, err
	}
	var out []KeySize
	err := a.c.query(ctx, fmt.Sprintf("SELECT DISTINCT key, coalesce(size, -1) FROM %s ORDER BY key LIMIT %d", addedTable, limit), func(r *sql.Rows) error {
		var ks KeySize
		if err := r.Scan(&ks.Key, &ks.Size); err != nil {
			return err
		}
		out = append(out, ks)
		return nil
	})
	return out, err
}

func (c *Catalog) keys(ctx context.Context, q string) ([]string, error) {
	if err := c.ready(); err != nil {
		return nil, err
	}
	var out []string
	err := c.query(ctx, q, func(r *sql.Rows) error {
		var k string
		if err := r.Scan(&k); err != nil {
			return err
		}
		out = append(out, k)
		return nil
	})
	return out, err
}

// KeyGroup is the added keys of one table's folder (or, for files placed
// one by one, of their folder): how many, and the prefix every one of them
// starts with (the folder and the longest prefix of the paths they share),
// which a listing of the store can be limited to.
type KeyGroup struct {
	Prefix string
	Count  int64
}

// Groups returns the added keys grouped by folder, in byte order of their
// prefixes.
func (a *AddedKeys) Groups(ctx context.Context) ([]KeyGroup, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	c := a.c
	if err := c.ready(); err != nil {
		return nil, err
	}
	out := slices.Clone(a.groups)
	q := fmt.Sprintf(`SELECT min(key), max(key), count(*) FROM %s WHERE table_id IS NULL GROUP BY regexp_extract(key, '^(.*/)', 1)`, addedTable)
	err := c.query(ctx, q, func(r *sql.Rows) error {
		var lo, hi string
		var n int64
		if err := r.Scan(&lo, &hi, &n); err != nil {
			return err
		}
		out = append(out, KeyGroup{Prefix: commonPrefix(lo, hi), Count: n})
		return nil
	})
	slices.SortFunc(out, func(x, y KeyGroup) int { return strings.Compare(x.Prefix, y.Prefix) })
	return out, err
}

// commonPrefix returns the longest common prefix of a and b (in bytes:
// for the smallest and largest of a set of strings, the prefix all share).
func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// Missing returns the keys (the first limit distinct ones, in byte order)
// not among the keys that list emits, and how many distinct keys are
// missing. list is called once, from a goroutine of its own; it emits the
// keys a store lists, in any order, duplicates and keys that were not
// added allowed (emit copies a key before it returns: the caller may
// reuse its bytes). The listed keys stream, a line each, through a named pipe
// in the spill folder (a file where no pipe can be made) into DuckDB's
// read_csv, on the far side of one anti join with the added keys (those
// still pending computed as the join runs): DuckDB builds its hash table
// from the listing as the store is read, and spills beyond the memory
// limit. (Splitting batches of keys in SQL, before, took most of a push's
// data check; read_csv takes a tenth of that time. The join is written
// ANTI JOIN: DuckDB decorrelates the NOT EXISTS form into a DISTINCT of
// the added keys and a mark join, which took twice the CPU.)
func (a *AddedKeys) Missing(ctx context.Context, list func(emit func(key []byte) error) error, limit int) ([]string, int64, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	c := a.c
	if err := c.ready(); err != nil {
		return nil, 0, err
	}
	if c.spill == "" {
		return nil, 0, errors.New("ducklake: Missing called on a catalog without a spill folder (AddedKeys makes it)")
	}
	added := "SELECT key FROM " + addedTable
	if a.pending {
		added += " UNION ALL SELECT key FROM (" + a.fast + ")"
	}
	err := withListing(ctx, filepath.Join(c.spill, "listed"), list, func(path string) error {
		missing := fmt.Sprintf("SELECT DISTINCT a.key FROM (%s) a ANTI JOIN read_csv(%s, %s) l ON l.key = a.key",
			added, sqlquote.String(path), listedCSV)
		return c.exec(ctx, "CREATE OR REPLACE TEMP TABLE "+missingTable+" AS "+missing)
	})
	if err != nil {
		return nil, 0, err
	}
	defer c.exec(context.Background(), "DROP TABLE IF EXISTS "+missingTable)
	var count int64
	if err := c.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+missingTable).Scan(&count); err != nil {
		return nil, 0, fmt.Errorf("query %s: %w", c.path, err)
	}
	if count == 0 {
		return nil, 0, nil
	}
	shown, err := c.keys(ctx, fmt.Sprintf("SELECT key FROM %s ORDER BY key LIMIT %d", missingTable, limit))
	return shown, count, err
}

// Close drops the tables.
func (a *AddedKeys) Close() error {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	if a.c.conn == nil {
		return nil
	}
	var errs []error
	for _, t := range []string{addedTable, basesTable, missingTable} {
		if _, err := a.c.conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listedCSV is read_csv's dialect for a listing: one key a line, no
// header, no quoting or escaping, and a delimiter (U+0001) no key holds,
// so each line is one VARCHAR exactly as written (csvKey keeps out what
// could not pass so). A line is at most max_line_size bytes, well above
// maxListedKey; the buffer stays small (read_csv holds one per thread).
// The delimiter is the byte itself: DuckDB reads no escapes in a string
// literal and takes the text '\x01' as a 4-byte delimiter (new_line, by
// contrast, takes the text '\n').
const listedCSV = `columns = {'key': 'VARCHAR'}, header = false, delim = '` + "\x01" + `', quote = '', escape = '',
	new_line = '\n', auto_detect = false, strict_mode = true, max_line_size = 65536, buffer_size = 1048576`

// maxListedKey is the longest key a listing passes on. An object store's
// keys are at most store.MaxKeyLen (1,024) bytes, but a folder store
// lists the path of any file under its folder, which can be longer (hive
// partition folders of long values): such a file is in the store, and its
// key must reach the comparison.
const maxListedKey = 32 << 10

// csvKey reports whether a listed key can stand for an added file's key
// and pass listedCSV's lines unchanged: not empty, at most maxListedKey
// bytes, valid UTF-8 without control characters (an added key is a
// DuckDB VARCHAR, which is valid UTF-8, made by simplePath or a
// normaliser, which refuse control characters). A key it refuses is
// dropped from the listing: at worst an added file is then reported
// missing, never found.
func csvKey(k []byte) bool {
	if len(k) == 0 || len(k) > maxListedKey {
		return false
	}
	ascii := true
	for i := 0; i < len(k); i++ {
		switch b := k[i]; {
		case b < 0x20 || b == 0x7f:
			return false
		case b >= 0x80:
			ascii = false
		}
	}
	return ascii || utf8.Valid(k)
}

// withListing runs read with the path of a file DuckDB's read_csv reads
// the keys list emits from (listedCSV): a named pipe at base+".pipe" that
// the keys are written into while read runs, or, where the file system
// makes no named pipe, a file at base+".csv" written whole first. Both
// are removed after. Errors: list's (read fails with it, on a short
// listing or the cancellation), else read's.
func withListing(ctx context.Context, base string, list func(emit func(key []byte) error) error, read func(path string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	write := func(w io.Writer) error { return writeListing(ctx, w, list) }
	path := base + ".pipe"
	os.Remove(path)
	r, w, perr := makePipe(path)
	if perr != nil {
		// No named pipe here (see streamTable): the listing goes
		// through a file.
		return listingThroughFile(base, perr, write, read)
	}
	defer os.Remove(path)
	return listingThroughPipe(path, r, w, cancel, write, read)
}

// writeListing writes the keys list emits to w as listedCSV's lines, a
// blank line first; it stops with ctx's error once ctx is done.
func writeListing(ctx context.Context, w io.Writer, list func(emit func(key []byte) error) error) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	// A blank line first (a NULL key, which matches nothing): the
	// pipe then always carries a byte for DuckDB to take (see
	// listingThroughPipe).
	bw.WriteByte('\n')
	n := 0
	err := list(func(k []byte) error {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err() // read stopped, or the caller
		}
		if !csvKey(k) {
			return nil
		}
		bw.Write(k)
		return bw.WriteByte('\n')
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// listingThroughFile is withListing where no named pipe can be made
// (perr says why): the keys are written whole into base+".csv" first,
// then read runs on it; the file is removed after.
func listingThroughFile(base string, perr error, write func(io.Writer) error, read func(path string) error) error {
	path := base + ".csv"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("the store's listing has no way into DuckDB: no named pipe (%v) and no file (%w) in the temporary folder %s; free space there, or set TMPDIR to another folder", perr, err, filepath.Dir(base))
	}
	defer os.Remove(path)
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return read(path)
}

// listingThroughPipe is withListing over the named pipe at path, of which
// fdl holds both ends (r, w): write fills it while read runs, and cancel
// stops write when read fails.
func listingThroughPipe(path string, r, w *os.File, cancel func(), write func(io.Writer) error, read func(path string) error) error {
	// A larger pipe (1 MiB, where the system allows) means fewer
	// switches between the writer and DuckDB.
	growPipe(w)
	// fdl holds both ends (makePipe), so DuckDB's open of the pipe never
	// waits, and DuckDB meets the end of the keys once w is closed. But
	// an open for reading waits for a writer: w is closed only once the
	// pipe is empty, that is once DuckDB has opened it and taken every
	// byte (there is at least one), or once read has returned. If read
	// stops early, what is still written is read and dropped, so the
	// writer never waits on a full pipe.
	listed := make(chan error, 1)
	readDone := make(chan struct{})
	drainedByReader := func() {
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for !pipeEmpty(r) {
			select {
			case <-readDone:
				return
			case <-tick.C:
			}
		}
	}
	go func() {
		err := write(w)
		drainedByReader()
		w.Close()
		listed <- err
	}()
	rerr := read(path)
	close(readDone)
	if rerr != nil {
		cancel()
	}
	drained := make(chan struct{})
	go func() {
		io.Copy(io.Discard, r)
		close(drained)
	}()
	lerr := <-listed
	<-drained
	r.Close()
	if lerr != nil && (rerr == nil || !errors.Is(lerr, context.Canceled)) {
		return lerr // the listing failed (and read with it)
	}
	return rerr
}
