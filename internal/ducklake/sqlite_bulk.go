package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake/sqlitebulk"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// The bulk copies between SQLite and DuckDB: each table passes as CSV
// text, written and read by C loops on the SQLite side (package
// sqlitebulk) and by DuckDB's own COPY and read_csv on the other, so no
// value is handled in Go. Into SQLite each table streams through a named
// pipe (streamTable; a CSV file where no pipe can be made); out of SQLite
// through CSV files, the next table written while the last is read (two
// cores). Tables with a column the bulk copy
// cannot carry exactly go row by row (copyRows, writeSQLiteTable's row
// path).

// The CSV dialect of sqlitebulk, for DuckDB's COPY (to) and read_csv
// (from): NULL is an empty unquoted field; a COPY quotes every text value
// (FORCE_QUOTE on the text columns), so an empty string is "".
const (
	csvCopyOptions = `FORMAT csv, HEADER false, DELIMITER ',', QUOTE '"', ESCAPE '"', NULLSTR '', NEW_LINE '\n'`
	csvReadOptions = `header = false, delim = ',', quote = '"', escape = '"', nullstr = '', allow_quoted_nulls = false,
		auto_detect = false, new_line = '\n', strict_mode = true, max_line_size = 1048576, buffer_size = 4194304`
	// csvMaxLine is read_csv's max_line_size above (its buffers, one per
	// thread, are 4 MiB: memory DuckDB's limit must leave room for): a
	// table with a longer row (a view's SQL of a megabyte) goes row by row.
	csvMaxLine = 1 << 20
)

// bulkStages reports whether columns of the staging types stage can be
// copied in bulk: BIGINT and VARCHAR values pass through the CSV text
// exactly (sqlitebulk's Integer and Text kinds); BLOB goes row by row.
func bulkStages(stage []string) ([]sqlitebulk.Kind, bool) {
	kinds := make([]sqlitebulk.Kind, len(stage))
	for i, st := range stage {
		switch st {
		case tBigint:
			kinds[i] = sqlitebulk.Integer
		case tVarchar:
			kinds[i] = sqlitebulk.Text
		default:
			return nil, false
		}
	}
	return kinds, true
}

// dumped is a table written to a CSV file for DuckDB to read (or why not).
type dumped struct {
	t    *sqliteTable
	path string
	rows int64
	err  error // sqlitebulk.ErrOdd: copy it row by row
}

// copyInto creates every table of the snapshot in the DuckDB database
// attached as alias (schema main) with the DuckDB types and constraints a
// DuckDB-format catalog of the same format has, and copies every row.
// Values are read with the SQLite storage types (BIGINT, BLOB or VARCHAR,
// see stageType) and, where a table's DuckDB types differ, cast by DuckDB
// (VARCHAR to UUID, to TIMESTAMP WITH TIME ZONE, BIGINT 0/1 to BOOLEAN, …),
// as DuckDB's own sqlite scanner reads them. A table whose columns are all
// staged as BIGINT or VARCHAR (every ducklake_* table) is written by
// SQLite to a CSV file in work (sqlitebulk.Dump) and read by DuckDB's
// read_csv, which casts as it inserts; the next table is written while
// the last is read. A table with a BLOB column, or a value the bulk copy
// does not carry exactly (text in an integer column, a real number in a
// text column), is copied row by row through DuckDB's Appender, as exact
// as before. Memory holds a buffer per side, whatever the tables' sizes;
// the CSV files (removed as they are read) hold a table at a time. It
// returns each table's row count.
func (s *sqliteSnapshot) copyInto(ctx context.Context, duck *sql.Conn, alias, work string) (map[string]int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The dumper may run ahead by every table (each a file on disk), so
	// that with checkLast its quick_check overlaps DuckDB's reading.
	dumps := make(chan dumped, len(s.tables)+1)
	go s.dumpAll(ctx, work, dumps)
	defer func() {
		cancel()
		for d := range dumps { // wait for the dumper; remove what it left
			os.Remove(d.path)
		}
	}()
	counts := map[string]int64{}
	for _, t := range s.tables {
		n, err := s.copyTableTx(ctx, duck, alias, t, dumps)
		if err != nil {
			return nil, err
		}
		counts[t.name] = n
		if testHookAfterTable != nil {
			testHookAfterTable(t.name)
		}
	}
	if s.checkLast {
		d, ok := <-dumps // the dumper's last word: the quick_check
		switch {
		case !ok:
			return nil, fmt.Errorf("convert %s: the dump stopped before its check", s.path)
		case d.err != nil:
			return nil, d.err
		}
	}
	return counts, nil
}

// checkpointRows: with ownTx, a table of at least this many rows is
// followed by a checkpoint.
const checkpointRows = 65536

// copyTableTx is copyTable in a transaction of its own (and followed by a
// checkpoint when large) when s.ownTx is set.
func (s *sqliteSnapshot) copyTableTx(ctx context.Context, duck *sql.Conn, alias string, t *sqliteTable, dumps <-chan dumped) (int64, error) {
	if !s.ownTx {
		return s.copyTable(ctx, duck, alias, t, dumps)
	}
	if _, err := duck.ExecContext(ctx, "BEGIN"); err != nil {
		return 0, err
	}
	n, err := s.copyTable(ctx, duck, alias, t, dumps)
	if err != nil {
		duck.ExecContext(context.Background(), "ROLLBACK")
		return 0, err
	}
	if _, err := duck.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, fmt.Errorf("convert %s: table %s: %w", s.path, t.name, err)
	}
	if n >= checkpointRows {
		if _, err := duck.ExecContext(ctx, "CHECKPOINT "+sqlquote.Ident(alias)); err != nil {
			return 0, fmt.Errorf("convert %s: table %s: %w", s.path, t.name, err)
		}
	}
	return n, nil
}

// copyTable creates t in alias and copies its rows: in bulk from its dump
// (the next one dumps sends) when it has one, else row by row.
func (s *sqliteSnapshot) copyTable(ctx context.Context, duck *sql.Conn, alias string, t *sqliteTable, dumps <-chan dumped) (int64, error) {
	if err := s.createTable(ctx, duck, alias, t); err != nil {
		return 0, err
	}
	if _, ok := s.bulkKinds(t); !ok {
		return s.copyRows(ctx, duck, alias, t)
	}
	d := <-dumps
	defer os.Remove(d.path)
	switch {
	case d.err == nil:
		return s.readDump(ctx, duck, alias, d)
	case errors.Is(d.err, sqlitebulk.ErrOdd):
		return s.copyRows(ctx, duck, alias, t)
	}
	return 0, d.err
}

// bulkKinds returns the sqlitebulk kinds of t's columns as SQLite gives
// them (the rowid last, when asked for), and whether t can be copied in
// bulk.
func (s *sqliteSnapshot) bulkKinds(t *sqliteTable) ([]sqlitebulk.Kind, bool) {
	names := make([]string, len(t.cols)+1)
	stage, _, _ := s.stages(t, names)
	return bulkStages(stage)
}

// dumpAll writes, in order, each bulk table of the snapshot to a CSV file
// in work and sends it on out (which it closes); it stops at the first
// error other than ErrOdd. With s.checkLast, the last thing it sends is
// the snapshot's quick_check (no table; err its error).
func (s *sqliteSnapshot) dumpAll(ctx context.Context, work string, out chan<- dumped) {
	defer close(out)
	for i, t := range s.tables {
		kinds, ok := s.bulkKinds(t)
		if !ok {
			continue
		}
		d := dumped{t: t, path: filepath.Join(work, "table-"+strconv.Itoa(i)+".csv")}
		sel := make([]string, len(t.cols))
		for i, c := range t.cols {
			sel[i] = sqlquote.Ident(c)
		}
		if s.rowIDCol != "" {
			sel = append(sel, "rowid")
		}
		q := "SELECT " + strings.Join(sel, ", ") + " FROM " + sqlquote.Ident(t.name)
		d.err = s.conn.Raw(func(dc any) error {
			got, err := sqlitebulk.Dump(ctx, dc, q, d.path, kinds)
			d.rows = got.Rows
			if err == nil && got.MaxLine >= csvMaxLine {
				err = fmt.Errorf("a row of %d bytes: %w", got.MaxLine, sqlitebulk.ErrOdd)
			}
			return err
		})
		if d.err != nil && !errors.Is(d.err, sqlitebulk.ErrOdd) && !isSQLiteBusy(d.err) {
			d.err = classifySQLiteError(s.path, "read "+t.name, d.err)
		}
		select {
		case out <- d:
		case <-ctx.Done():
			os.Remove(d.path)
			return
		}
		if d.err != nil && !errors.Is(d.err, sqlitebulk.ErrOdd) {
			return
		}
	}
	if s.checkLast {
		select {
		case out <- dumped{err: s.quickCheck(ctx)}:
		case <-ctx.Done():
		}
	}
}

// readDump inserts the rows of a dumped table into alias with DuckDB's
// read_csv, casting each staged column to the table's DuckDB type, and
// checks their number.
func (s *sqliteSnapshot) readDump(ctx context.Context, duck *sql.Conn, alias string, d dumped) (int64, error) {
	t := d.t
	n := len(t.cols)
	if s.rowIDCol != "" {
		n++
	}
	names := make([]string, n)
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	stage, _, casts := s.stages(t, names)
	cols := make([]string, n)
	for i := range names {
		cols[i] = sqlquote.String(names[i]) + ": " + sqlquote.String(stage[i])
	}
	q := fmt.Sprintf("INSERT INTO %s SELECT %s FROM read_csv(%s, columns = {%s}, %s)",
		target(alias, t), strings.Join(casts, ", "), sqlquote.String(d.path), strings.Join(cols, ", "), csvReadOptions)
	res, err := duck.ExecContext(ctx, q)
	if err != nil {
		if strings.Contains(err.Error(), "Conversion Error") {
			return 0, fmt.Errorf("convert %s: table %s holds a value that is not a %s as DuckLake stores it: %w",
				s.path, t.name, strings.Join(uniqueSorted(t.duck), "/"), err)
		}
		return 0, fmt.Errorf("convert %s: table %s: %w", s.path, t.name, err)
	}
	if got, err := res.RowsAffected(); err == nil && got != d.rows {
		return 0, fmt.Errorf("convert %s: table %s: DuckDB read %d rows of the %d SQLite gave", s.path, t.name, got, d.rows)
	}
	return d.rows, nil
}

// exported is a DuckDB table written to a CSV file for SQLite to read.
type exported struct {
	t    *duckTable
	path string
	rows int64
	err  error
}

// sqliteKinds returns the sqlitebulk kinds of SQLite columns of the
// declared types decls, and whether they can be copied in bulk: BIGINT and
// VARCHAR carry through the CSV text exactly; DOUBLE and BLOB go row by
// row.
func sqliteKinds(decls []string) ([]sqlitebulk.Kind, bool) {
	return bulkStages(decls)
}

// writeTables creates every table in the SQLite file of conn (inside its
// open transaction) and copies its rows, in the catalog's order: a table
// whose SQLite columns are all BIGINT or VARCHAR (every ducklake_* table)
// in bulk — DuckDB writes it as CSV, each value cast to the SQLite column's
// type, with COPY (in the table's order) into a named pipe in work, and a
// C loop binds the fields into SQLite as they come (streamTable; a CSV file
// where no pipe can be made) — and the others row by row
// (writeSQLiteTable). It returns each table's row count, checked against
// what DuckDB wrote.
func (c *Catalog) writeTables(ctx context.Context, conn *sql.Conn, tables []*duckTable, keywords map[string]bool, work string) (map[string]int64, error) {
	counts := map[string]int64{}
	for i, t := range tables {
		ddl, decls := sqliteCreateTable(t, keywords)
		if _, err := conn.ExecContext(ctx, ddl); err != nil {
			return nil, fmt.Errorf("%s: %w", ddl, err)
		}
		var n int64
		var err error
		if kinds, bulk := sqliteKinds(decls); bulk {
			n, err = c.streamTable(ctx, conn, t, decls, kinds, filepath.Join(work, "table-"+strconv.Itoa(i)+".pipe"), rowsOf{})
		} else {
			n, err = c.writeSQLiteTable(ctx, conn, t, decls)
		}
		if err != nil {
			return nil, err
		}
		counts[t.name] = n
	}
	return counts, nil
}

// loadCSV is loadExport; tests replace it to fail or cancel a load.
var loadCSV = loadExport

// rowsOf chooses what a bulk copy from DuckDB into SQLite carries: the
// rows of the table that meet where (all when empty), into the SQLite
// table into (a qualified name, quoted; the table's own name in the
// connection's main schema when empty).
type rowsOf struct{ where, into string }

// target is the SQLite table the rows go into.
func (r rowsOf) target(t *duckTable) string {
	if r.into != "" {
		return r.into
	}
	return sqlquote.Ident(t.name)
}

// loadExport inserts the CSV rows of from (an open pipe), or else of the
// file at path, into t's SQLite table (into, when not empty: a quoted
// name) and returns how many it inserted.
func loadExport(ctx context.Context, conn *sql.Conn, t *duckTable, into, path string, from *os.File, kinds []sqlitebulk.Kind) (int64, error) {
	names := make([]string, len(t.cols))
	marks := make([]string, len(t.cols))
	for i, col := range t.cols {
		names[i], marks[i] = sqlquote.Ident(col), "?"
	}
	if into == "" {
		into = sqlquote.Ident(t.name)
	}
	insert := "INSERT INTO " + into + " (" + strings.Join(names, ", ") + ") VALUES (" + strings.Join(marks, ", ") + ")"
	var n int64
	err := conn.Raw(func(dc any) error {
		var err error
		if from != nil {
			n, err = sqlitebulk.LoadFrom(ctx, dc, insert, from, kinds)
		} else {
			n, err = sqlitebulk.Load(ctx, dc, insert, path, kinds)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", t.name, err)
	}
	return n, nil
}

// streamTable copies t in bulk through a named pipe at path: DuckDB's COPY
// writes the CSV rows into it while the C loop inserts them into SQLite,
// so the table is read and written at once and no CSV reaches the disk.
// fdl opens both ends first (makePipe): the loop reads from fdl's read
// end, so it never waits to open the pipe, and fdl's write end, closed
// once the COPY is over, keeps the loop from meeting the end of the rows
// before DuckDB has opened its own. If the loop stops early, what DuckDB
// still writes is read and dropped, so the COPY never waits on a full
// pipe. Errors: ctx's, the COPY's, the loop's, a row count that differs
// between the two.
func (c *Catalog) streamTable(ctx context.Context, conn *sql.Conn, t *duckTable, decls []string, kinds []sqlitebulk.Kind, path string, rows rowsOf) (int64, error) {
	r, w, err := makePipe(path)
	if err != nil {
		// No named pipe here (a platform without them; vfat, SMB, many
		// FUSE mounts refuse mkfifo): the table goes through a CSV file
		// instead; a real fault shows there too.
		return c.fileTable(ctx, conn, t, decls, kinds, strings.TrimSuffix(path, ".pipe")+".csv", rows)
	}
	defer os.Remove(path)
	defer r.Close()
	exportDone := make(chan exported, 1)
	go func() {
		e := c.exportTable(ctx, t, decls, path, rows.where)
		w.Close()
		exportDone <- e
	}()
	n, lerr := loadCSV(ctx, conn, t, rows.target(t), path, r, kinds)
	if lerr != nil {
		go io.Copy(io.Discard, r) // to the end: the COPY is over and w closed
	}
	e := <-exportDone
	switch {
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case e.err != nil:
		return 0, e.err
	case lerr != nil:
		return 0, lerr
	case n != e.rows:
		return 0, fmt.Errorf("write %s: SQLite inserted %d rows, DuckDB wrote %d", t.name, n, e.rows)
	}
	return n, nil
}

// fileTable copies t in bulk through a CSV file at path, removed after:
// streamTable's way where the file system makes no named pipe. Errors:
// the COPY's, the loop's, a row count that differs between the two.
func (c *Catalog) fileTable(ctx context.Context, conn *sql.Conn, t *duckTable, decls []string, kinds []sqlitebulk.Kind, path string, rows rowsOf) (int64, error) {
	defer os.Remove(path)
	e := c.exportTable(ctx, t, decls, path, rows.where)
	if e.err != nil {
		return 0, e.err
	}
	n, err := loadCSV(ctx, conn, t, rows.target(t), path, nil, kinds)
	if err == nil && n != e.rows {
		err = fmt.Errorf("write %s: SQLite inserted %d rows, DuckDB wrote %d", t.name, n, e.rows)
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// exportTable writes t's rows (those that meet where, when not empty),
// each value cast to its SQLite column's declared type (decls), as CSV to
// path with DuckDB's COPY, and says how many it wrote (or why not).
func (c *Catalog) exportTable(ctx context.Context, t *duckTable, decls []string, path, where string) exported {
	e := exported{t: t, path: path}
	sel := make([]string, len(t.cols))
	var quote []string
	for j, col := range t.cols {
		name := "c" + strconv.Itoa(j)
		sel[j] = fmt.Sprintf("CAST(%s AS %s) AS %s", sqlquote.Ident(col), decls[j], name)
		if decls[j] == tVarchar {
			quote = append(quote, name)
		}
	}
	opts := csvCopyOptions
	if len(quote) > 0 {
		opts += ", FORCE_QUOTE (" + strings.Join(quote, ", ") + ")"
	}
	from := c.t(t.name)
	if where != "" {
		from += " WHERE " + where
	}
	q := fmt.Sprintf("COPY (SELECT %s FROM %s) TO %s (%s)", strings.Join(sel, ", "), from, sqlquote.String(path), opts)
	res, err := c.conn.ExecContext(ctx, q)
	if err == nil {
		e.rows, err = res.RowsAffected()
	}
	if err != nil {
		e.err = fmt.Errorf("read %s: %w", t.name, err)
	}
	return e
}

// Memory of the freeze of a SQLite catalog. DuckDB spills table data
// beyond its memory_limit, but not a primary key's index, which must fit
// in memory while its table loads (some 20-30 bytes a key for the
// ascending ids DuckLake gives; 1.9 M data files took about 50 MB). So
// that a catalog of any size converts, the limit is convertMemoryBase
// plus indexBytesPerRow for each row of the largest table with a primary
// key (ducklake_data_file: one row per data file): 64 MB up to a few
// hundred thousand data files, 155 MB at 1.9 M.
const (
	convertMemoryBase = 64 << 20
	indexBytesPerRow  = 48
)

// memoryLimit returns the memory_limit for copying the snapshot into
// DuckDB (see convertMemoryBase), from the largest rowid of each table
// with a primary key (an upper bound of its rows, read from the end of
// its b-tree).
func (s *sqliteSnapshot) memoryLimit(ctx context.Context) (string, error) {
	var most int64
	for _, t := range s.tables {
		if len(t.pk) == 0 {
			continue
		}
		var n sql.NullInt64
		if err := s.conn.QueryRowContext(ctx, "SELECT max(rowid) FROM "+sqlquote.Ident(t.name)).Scan(&n); err != nil {
			if isSQLiteBusy(err) {
				return "", err
			}
			return "", classifySQLiteError(s.path, "read "+t.name, err)
		}
		most = max(most, n.Int64)
	}
	return strconv.FormatInt((convertMemoryBase+indexBytesPerRow*most)>>20, 10) + "MiB", nil
}
