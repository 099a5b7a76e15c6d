package ducklake

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/fdl-dev/fdl/internal/ducklake/sqlitebulk"
	"github.com/fdl-dev/fdl/internal/filecopy"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// The incremental freeze of a SQLite working catalog (docs/spec.md §12.1,
// docs/performance.md): the DuckDB catalog of the base version, kept in
// the working directory, is copied, and only what the SQLite catalog
// changed after the base's last snapshot S is applied to the copy.

// FreezeBase is the DuckDB catalog of the version a SQLite working catalog
// descends from, as FreezeOnto uses it.
type FreezeBase struct {
	Path string // the kept file (read, never changed)
	// Size (bytes) and SHA256 (lower-case hex) are the base's record's: the
	// copy is hashed as it is made, and a file that differs is not used.
	Size   int64
	SHA256 string
	// Format is the base's DuckLake format and Snapshot its last snapshot
	// id (S).
	Format   string
	Snapshot int64
}

// DeltaInfo says how FreezeOnto made its file.
type DeltaInfo struct {
	// Full, when not empty, says why the whole catalog was converted
	// (Freeze's way) instead of the base's copy being brought up to date.
	Full string `json:"full,omitempty"`
	// Delta lists the tables brought up to date row by row (new rows, rows
	// ended after S, rows deleted); every other table was written whole.
	Delta []string `json:"delta,omitempty"`
	// Whole names the tables that would have been brought up to date but
	// were written whole, and why (a change the delta cannot carry).
	Whole map[string]string `json:"whole,omitempty"`
	// Compacted: more than half of the copy's blocks were free, so it was
	// written again into a new file (COPY FROM DATABASE).
	Compacted bool `json:"compacted,omitempty"`
}

// deltaAlias is the name the copy of the base is attached under, and
// scratchAlias an in-memory database for the rows ended after S.
const (
	deltaAlias   = "fdl_frozen"
	scratchAlias = "fdl_scratch"
)

// FreezeOnto is Freeze for a SQLite working catalog src whose base
// version's DuckDB catalog is at hand (base): dst gets the same rows, table
// by table, as Freeze would write, but is made from a copy of the base's
// file to which only what src changed after the base's last snapshot S is
// applied (docs/spec.md §12.1). Tables DuckLake changes in place (settings,
// running statistics, the deletion queue, inlined data) and small tables
// are written whole; in the others the rows after S are inserted, the
// rows ended after S get their end_snapshot, and data files (with their
// statistics) and snapshots DuckLake deleted are deleted. Each such table
// is then checked against src (row counts and per-column sums of the rows
// at or before S) and written whole when it differs. The whole catalog is
// converted instead (DeltaInfo.Full says why) when the kept file does not
// match the base's record, its format or storage version is not what a
// conversion of src writes, or src no longer holds S as the base has it.
// Errors: those of Freeze.
func FreezeOnto(ctx context.Context, src, dst string, base FreezeBase) (info FreezeInfo, d DeltaInfo, err error) {
	srcAbs, err := filepath.Abs(src)
	if err != nil {
		return info, d, err
	}
	dstAbs, err := filepath.Abs(dst)
	if err != nil {
		return info, d, err
	}
	if backend, err := DetectBackend(srcAbs); err != nil {
		return info, d, err
	} else if backend != BackendSQLite {
		info, err = Freeze(ctx, srcAbs, dstAbs)
		return info, DeltaInfo{Full: "the working catalog is a DuckDB file"}, err
	}
	for _, p := range []string{dstAbs, dstAbs + ".wal", walPath(dstAbs)} {
		if _, err := os.Lstat(p); err == nil {
			return info, d, fmt.Errorf("freeze %s: %s: %w", srcAbs, p, fs.ErrExist)
		}
	}
	workParent := filepath.Dir(dstAbs)
	if strings.Contains(workParent, "?") {
		workParent = os.TempDir()
	}
	work, err := os.MkdirTemp(workParent, ".fdl-freeze-*")
	if err != nil {
		return info, d, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	defer os.RemoveAll(work)
	tmp := filepath.Join(work, "catalog.duckdb")
	err = withSQLiteSnapshotCheck(ctx, srcAbs, checkLast, func(s *sqliteSnapshot) error {
		var err error
		info = FreezeInfo{}
		d, err = s.freezeOnto(ctx, base, tmp, work, &info)
		return err
	})
	if err == nil && d.Full != "" {
		info, err = describeFrozen(ctx, srcAbs, tmp)
	}
	if err != nil {
		return info, d, err
	}
	if err := placeNew(tmp, dstAbs); err != nil {
		return info, d, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	syncDir(filepath.Dir(dstAbs))
	return info, d, nil
}

// describeFrozen checks the frozen copy tmp of srcAbs (one file, in the
// storage version of its format), reads its format and last snapshot,
// fsyncs and hashes it.
func describeFrozen(ctx context.Context, srcAbs, tmp string) (info FreezeInfo, err error) {
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
	return describeWritten(ctx, srcAbs, tmp, format, last)
}

// describeWritten checks the frozen copy tmp of srcAbs, whose format and
// last snapshot are known (one file, in the storage version of its
// format), fsyncs and hashes it.
func describeWritten(ctx context.Context, srcAbs, tmp, format string, last Snapshot) (info FreezeInfo, err error) {
	got, err := checkCopy(srcAbs, tmp, storageForFormat(format))
	if err != nil {
		return info, err
	}
	if err := syncFile(tmp); err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	info = FreezeInfo{Format: format, Snapshot: last, Storage: got}
	if info.Size, info.SHA256, err = fileDigest(ctx, tmp); err != nil {
		return info, fmt.Errorf("freeze %s: %w", srcAbs, err)
	}
	return info, nil
}

// freezeOnto writes the snapshot's catalog at tmp: the base's copy brought
// up to date when it can be (applyDelta), else a full conversion
// (freezeInto), saying why; frozen describes a file brought up to date
// (left as it is after a full conversion). The base is copied while
// SQLite sums the large tables' rows at S. It may run more than once (a
// retry after SQLITE_BUSY): it starts from no file.
func (s *sqliteSnapshot) freezeOnto(ctx context.Context, base FreezeBase, tmp, work string, frozen *FreezeInfo) (DeltaInfo, error) {
	os.Remove(tmp)
	os.Remove(tmp + ".wal")
	d := DeltaInfo{}
	reason := ""
	if base.Format != s.format {
		reason = fmt.Sprintf("the working catalog's DuckLake format is %s, the base's %s", s.format, base.Format)
	}
	var tables []*deltaTable
	if reason == "" {
		type copied struct {
			reason string
			err    error
		}
		done := make(chan copied, 1)
		go func() {
			r, err := copyBase(ctx, base, tmp)
			done <- copied{r, err}
		}()
		var err error
		tables, reason, err = s.planAndSum(ctx, base.Snapshot)
		c := <-done
		switch {
		case c.err != nil:
			return d, c.err
		case err != nil:
			return d, err
		case c.reason != "":
			reason = c.reason
		}
	}
	if reason == "" {
		if st, err := ReadStorage(tmp); err != nil || st.Number != storageForFormat(s.format).Number {
			reason = fmt.Sprintf("the base's storage version is not the one a conversion writes (%s)", storageForFormat(s.format).MinDuckDB)
		}
	}
	if reason == "" {
		var err error
		if reason, err = s.applyDelta(ctx, base.Snapshot, tables, tmp, work, &d, frozen); err != nil {
			return d, err
		}
	}
	if reason == "" {
		return d, nil
	}
	os.Remove(tmp)
	os.Remove(tmp + ".wal")
	d = DeltaInfo{Full: reason}
	_, err := s.freezeInto(ctx, tmp, work)
	return d, err
}

// planAndSum plans the delta (planDelta, with next_file_id of snapshot
// snap as the SQLite catalog has it) and reads the sums of each delta
// table's rows at snap; a reason when the catalog no longer holds snap.
func (s *sqliteSnapshot) planAndSum(ctx context.Context, snap int64) ([]*deltaTable, string, error) {
	if err := s.registerFNV(); err != nil {
		return nil, "", err
	}
	var nf sql.NullInt64
	q := "SELECT NULL"
	if slices.ContainsFunc(s.tables, func(t *sqliteTable) bool {
		return t.name == "ducklake_snapshot" && slices.Contains(t.cols, "next_file_id")
	}) {
		q = "SELECT next_file_id"
	}
	err := s.conn.QueryRowContext(ctx, q+" FROM ducklake_snapshot WHERE snapshot_id = ?", snap).Scan(&nf)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Sprintf("the working catalog no longer holds snapshot %d", snap), nil
	}
	if err != nil {
		if isSQLiteBusy(err) {
			return nil, "", err
		}
		return nil, "", classifySQLiteError(s.path, "read ducklake_snapshot", err)
	}
	next := int64(-1)
	if nf.Valid {
		next = nf.Int64
	}
	tables := s.planDelta(snap, next)
	for _, dt := range tables {
		if dt.old == "" || dt.idFrom != "" {
			continue
		}
		exprs := sumExprs(dt, true)
		sums, err := scanSums(s.conn.QueryRowContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM "+sqlquote.Ident(dt.t.name)+" WHERE "+dt.old), len(exprs))
		if isSQLiteBusy(err) {
			return nil, "", err
		}
		if err != nil {
			dt.old, dt.why = "", "its sums at the base's snapshot: "+err.Error()
			continue
		}
		dt.sums = sums
	}
	return tables, "", nil
}

// copyBase copies the kept base catalog to tmp, hashing it on the way
// (with tmp the empty string, only hashes it: the incremental pull), and
// says why it cannot be used ("" when it can): missing, or not the file
// its record names.
func copyBase(ctx context.Context, base FreezeBase, tmp string) (string, error) {
	in, err := os.Open(base.Path)
	if errors.Is(err, fs.ErrNotExist) || base.Path == "" {
		return "the base version's catalog is not kept in the working directory", nil
	}
	if err != nil {
		return "", err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || fi.Size() != base.Size {
		return "the kept base catalog " + base.Path + " is not the size its record gives", nil
	}
	var n int64
	var sum string
	if tmp == "" {
		n, sum, err = filecopy.Digest(ctx, in, nil)
	} else {
		out, oerr := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if oerr != nil {
			return "", oerr
		}
		n, sum, err = filecopy.Copy(ctx, out, in, nil)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return "", err
	}
	if n != base.Size || sum != base.SHA256 {
		return "the kept base catalog " + base.Path + " does not match its record's sha256", nil
	}
	return "", nil
}

// deltaTable is how one table of the snapshot is brought up to date.
type deltaTable struct {
	t *sqliteTable
	// old is the SQL condition (in both engines) of the rows that existed
	// at S; "" for a table written whole.
	old string
	// end is the end_snapshot column ("" for none); id the column whose
	// deleted values (data files, delete files, snapshots) are deleted.
	end, id string
	// idFrom is the table whose deleted ids are this one's (a statistics
	// table takes its data files'). Such a table is only counted: its
	// rows at S are its rows less those after S (SQLite counts a whole
	// table from its b-tree's pages, and the rows after S are read
	// anyway), so no scan of it adds up its columns; DuckLake writes
	// these rows once and deletes them with their data file.
	idFrom string
	sums   sumsOf // the rows at S in SQLite
	// pre are the copy's sums before any change (preSums); they stand for
	// its rows at S after the changes when none deleted or ended a row.
	pre     sumsOf
	touched bool   // rows at S deleted or ended in the copy
	why     string // written whole instead, and why
	// The dumps readSQLite made: the rows after S, the rows at S ended
	// after it, and (when the table lost rows) the ids it keeps at S.
	added, ended dumped
	kept         string
}

// sumsOf are a table's row count and per-column counts and sums, as text.
type sumsOf []string

// planDelta decides each table's way: whole, or a delta with its "at S"
// condition (docs/spec.md §12.1). nextFile is next_file_id at S (-1 when
// the format has none).
func (s *sqliteSnapshot) planDelta(snap, nextFile int64) []*deltaTable {
	var out []*deltaTable
	for _, t := range s.tables {
		dt := &deltaTable{t: t}
		out = append(out, dt)
		if _, ok := s.bulkKinds(t); ok {
			dt.plan(snap, nextFile)
		}
	}
	return out
}

// plan sets dt's way for a table whose rows can go in bulk (the rule both
// directions share, FreezeOnto and PullSQLite): metadata tables that
// DuckLake changes only by adding rows, ending them (end_snapshot) and
// deleting data files and snapshots get the condition of their rows at S
// (old) and the column that names what was deleted (id); the others
// (settings, running statistics, the deletion queue, inlined data) stay
// whole. nextFile is next_file_id at S (-1 when the format has none).
func (dt *deltaTable) plan(snap, nextFile int64) {
	t := dt.t
	if t.kind != kindMetadata || digestSkipped[t.name] || t.name == "ducklake_inlined_data_tables" {
		return
	}
	has := func(c string) bool { return slices.Contains(t.cols, c) }
	if has("end_snapshot") {
		dt.end = "end_snapshot"
	}
	switch {
	case t.name == "ducklake_snapshot" || t.name == "ducklake_snapshot_changes":
		dt.old, dt.id = fmt.Sprintf("snapshot_id <= %d", snap), "snapshot_id"
	case t.name == dataFileTable && nextFile >= 0:
		dt.old, dt.id = fmt.Sprintf("data_file_id < %d", nextFile), "data_file_id"
	case t.name == deleteFileTable && nextFile >= 0:
		dt.old, dt.id = fmt.Sprintf("delete_file_id < %d", nextFile), "delete_file_id"
	case has("data_file_id") && !has("begin_snapshot") && nextFile >= 0 && t.name != "ducklake_files_scheduled_for_deletion":
		dt.old, dt.id, dt.idFrom = fmt.Sprintf("data_file_id < %d", nextFile), "data_file_id", dataFileTable
	case has("begin_snapshot"):
		dt.old = fmt.Sprintf("begin_snapshot <= %d", snap)
	}
}

// sumExprs are the aggregates that summarise dt's rows (the SQL of one
// engine: sqlite, else DuckDB over t's DuckDB types): the row count, and
// for each column the sum of its integers and booleans, the sum of the
// 32-bit FNV-1a hashes of its texts (fnvFunc), or for UUIDs and timestamps, whose
// text another writer may spell differently, the count of values. One
// aggregate a column: SQLite's cost is per aggregate and row.
func sumExprs(dt *deltaTable, sqlite bool) []string {
	t := dt.t
	out := []string{"count(*)"}
	for i, c := range t.cols {
		if dt.idFrom != "" {
			break // counted only (see deltaTable.idFrom)
		}
		q := sqlquote.Ident(c)
		switch {
		case t.duck[i] == tBigint || (t.duck[i] == tBoolean && sqlite):
			out = append(out, "sum("+q+")")
		case t.duck[i] == tBoolean:
			out = append(out, "sum(CAST("+q+" AS INTEGER))")
		case t.duck[i] == tVarchar:
			out = append(out, "sum("+fnvFunc+"("+q+"))")
		default:
			out = append(out, "count("+q+")")
		}
	}
	for i, e := range out {
		if sqlite {
			out[i] = "coalesce(CAST(" + e + " AS TEXT), '')"
		} else {
			out[i] = "coalesce(CAST(" + e + " AS VARCHAR), '')"
		}
	}
	return out
}

// fnvFunc is the SQL function both engines hash a text with: on SQLite's
// side a C function (sqlitebulk.RegisterFNV32), on DuckDB's a Go one
// (fnv32UDF) giving the same values.
const fnvFunc = "fdl_fnv32"

// fnv32UDF is fdl_fnv32 for DuckDB: VARCHAR to BIGINT, NULL for NULL.
type fnv32UDF struct{}

// Config gives the function's types.
func (fnv32UDF) Config() duckdb.ScalarFuncConfig {
	v, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	b, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{v}, ResultTypeInfo: b}
}

// Executor hashes one value.
func (fnv32UDF) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(vals []driver.Value) (any, error) {
		s, ok := vals[0].(string)
		if !ok {
			return nil, fmt.Errorf("%s of a %T", fnvFunc, vals[0])
		}
		return int64(sqlitebulk.FNV32([]byte(s))), nil
	}}
}

// registerFNV registers fdl_fnv32 on the SQLite connection of s.
func (s *sqliteSnapshot) registerFNV() error {
	return s.conn.Raw(func(dc any) error { return sqlitebulk.RegisterFNV32(dc) })
}

// scanSums reads one row of text aggregates.
func scanSums(row *sql.Row, n int) (sumsOf, error) {
	out := make(sumsOf, n)
	ptrs := make([]any, n)
	for i := range out {
		ptrs[i] = &out[i]
	}
	return out, row.Scan(ptrs...)
}

// deltaRun is one application of a delta: the snapshot being frozen, the
// DuckDB connection with the base's copy attached, and what was decided.
type deltaRun struct {
	s      *sqliteSnapshot
	duck   *sql.Conn
	work   string
	snap   int64
	tables []*deltaTable
	counts map[string]int64 // each table's rows in SQLite
	gone   map[string]bool  // tables whose deleted ids are in scratch
	info   *DeltaInfo
}

// applyDelta brings the base's copy at tmp up to date with the snapshot
// (work is DuckDB's spill folder and holds the dumps) and describes it in
// frozen (describeFrozen), or says why it cannot ("": it did; the caller
// then converts the whole catalog). SQLite's quick_check runs in the
// snapshot's transaction meanwhile.
func (s *sqliteSnapshot) applyDelta(ctx context.Context, snap int64, tables []*deltaTable, tmp, work string, info *DeltaInfo, frozen *FreezeInfo) (string, error) {
	limit, err := s.memoryLimit(ctx)
	if err != nil {
		return "", err
	}
	db, duck, err := newDuckDB(ctx, []string{
		"SET memory_limit = " + sqlquote.String(limit),
		"SET temp_directory = " + sqlquote.String(filepath.Join(work, "spill")),
		"SET TimeZone = 'UTC'",
		"SET preserve_insertion_order = false",
		"ATTACH " + sqlquote.String(tmp) + " AS " + sqlquote.Ident(deltaAlias),
		"ATTACH ':memory:' AS " + sqlquote.Ident(scratchAlias),
	})
	if err != nil {
		return "", err
	}
	defer releaseDuckDB(db, duck)
	if err := registerUDF(db, fnvFunc, func() error { return duckdb.RegisterScalarUDF(duck, fnvFunc, fnv32UDF{}) }); err != nil {
		return "", err
	}
	r := &deltaRun{s: s, duck: duck, work: work, snap: snap, tables: tables, counts: map[string]int64{}, gone: map[string]bool{}, info: info}
	if reason, err := r.checkBase(ctx); reason != "" || err != nil {
		return reason, err
	}
	db.SetMaxOpenConns(2)
	pre := make(chan struct{})
	go func() {
		defer close(pre)
		r.preSums(ctx, db)
	}()
	err = r.readSQLite(ctx)
	<-pre
	if err != nil {
		return "", err
	}
	// SQLite's quick_check (the snapshot's connection) runs while DuckDB
	// applies, checkpoints and the result is hashed; a table to write
	// whole waits for it (its rows are read on that connection).
	checked := make(chan error, 1)
	go func() { checked <- s.quickCheck(ctx) }()
	var cerr error
	waited := false
	wait := func() error {
		if !waited {
			waited, cerr = true, <-checked
		}
		return cerr
	}
	defer wait()
	if err := r.applyAll(ctx); err != nil {
		return "", err
	}
	if slices.ContainsFunc(r.tables, func(dt *deltaTable) bool { return dt.old != "" && dt.why != "" }) {
		if err := wait(); err != nil {
			return "", err
		}
	}
	if err := r.rewriteFailed(ctx); err != nil {
		return "", err
	}
	if err := checkCounts(ctx, duck, deltaAlias, r.counts); err != nil {
		return "", fmt.Errorf("freeze %s: %w", s.path, err)
	}
	fi, err := r.finishAndDescribe(ctx, tmp)
	if err := wait(); err != nil {
		return "", err
	}
	*frozen = fi
	return "", err
}

// finishAndDescribe reads the copy's format and last snapshot where it is
// attached (no second DuckDB instance), then finishes the file (finish)
// and checks and hashes it as written (describeWritten).
func (r *deltaRun) finishAndDescribe(ctx context.Context, tmp string) (FreezeInfo, error) {
	attached, err := attachedCatalog(ctx, r.duck, deltaAlias, tmp)
	if err != nil {
		return FreezeInfo{}, fmt.Errorf("freeze %s: the copy: %w", r.s.path, err)
	}
	last, err := attached.LastSnapshot(ctx)
	if err != nil {
		return FreezeInfo{}, fmt.Errorf("freeze %s: %w", r.s.path, err)
	}
	if err := r.finish(ctx, tmp); err != nil {
		return FreezeInfo{}, err
	}
	return describeWritten(ctx, r.s.path, tmp, attached.Format(), last)
}

// checkBase checks that the copy ends at S and that the snapshot holds S
// as the copy does (same snapshot_time and next_file_id), or says why the
// copy cannot be brought up to date.
func (r *deltaRun) checkBase(ctx context.Context) (string, error) {
	var last sql.NullInt64
	q := "SELECT max(snapshot_id) FROM " + sqlquote.Ident(deltaAlias) + ".main.ducklake_snapshot"
	if err := r.duck.QueryRowContext(ctx, q).Scan(&last); err != nil {
		return "", fmt.Errorf("freeze %s: the base's copy: %w", r.s.path, err)
	}
	if !last.Valid || last.Int64 != r.snap {
		return fmt.Sprintf("the kept base catalog ends at snapshot %d, not %d", last.Int64, r.snap), nil
	}
	next := "NULL"
	if slices.ContainsFunc(r.s.tables, func(t *sqliteTable) bool {
		return t.name == "ducklake_snapshot" && slices.Contains(t.cols, "next_file_id")
	}) {
		next = "next_file_id"
	}
	var at sql.NullString
	var nf sql.NullInt64
	err := r.s.conn.QueryRowContext(ctx, "SELECT snapshot_time, "+next+" FROM ducklake_snapshot WHERE snapshot_id = ?", r.snap).Scan(&at, &nf)
	if err != nil {
		if isSQLiteBusy(err) {
			return "", err
		}
		return "", classifySQLiteError(r.s.path, "read ducklake_snapshot", err)
	}
	var same bool
	q = fmt.Sprintf("SELECT coalesce(bool_and(snapshot_time = TRY_CAST(? AS TIMESTAMPTZ) AND %s IS NOT DISTINCT FROM ?), false) FROM %s.main.ducklake_snapshot WHERE snapshot_id = %d",
		next, sqlquote.Ident(deltaAlias), r.snap)
	if err := r.duck.QueryRowContext(ctx, q, at.String, nf).Scan(&same); err != nil {
		return "", fmt.Errorf("freeze %s: the base's copy: %w", r.s.path, err)
	}
	if !same {
		return fmt.Sprintf("the working catalog's snapshot %d is not the base's (another snapshot_time or next_file_id)", r.snap), nil
	}
	return "", nil
}

// preSums reads, on a connection of its own while SQLite is read, the
// sums of each delta table's rows in the copy before any change (an error
// only means they are read again after the changes).
func (r *deltaRun) preSums(ctx context.Context, db *sql.DB) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	_ = duckdb.RegisterScalarUDF(conn, fnvFunc, fnv32UDF{}) // the database's already, when DuckDB keeps it there
	for _, dt := range r.tables {
		if dt.old == "" {
			continue
		}
		exprs := sumExprs(dt, false)
		if got, err := scanSums(conn.QueryRowContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM "+target(deltaAlias, dt.t)+" WHERE "+dt.old), len(exprs)); err == nil {
			dt.pre = got
		}
	}
}

// copyTables returns the copy's tables and their columns with DuckDB
// types ("name TYPE, …").
func (r *deltaRun) copyTables(ctx context.Context) (map[string]string, error) {
	return textPairs(ctx, r.duck, duckColumnsQuery, deltaAlias, "main")
}

// duckColumnsQuery lists a DuckDB database's tables (parameters: the
// database's alias, the schema) and their columns with DuckDB types
// ("name TYPE, …", in column order).
const duckColumnsQuery = `SELECT table_name, string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_index)
		FROM duckdb_columns() WHERE database_name = ? AND schema_name = ? GROUP BY table_name`

// textPairs runs query on conn, whose rows are two texts, and returns the
// first of each row mapped to the second.
func textPairs(ctx context.Context, conn *sql.Conn, query string, args ...any) (map[string]string, error) {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// columnsOf is t's columns as copyTables gives them.
func columnsOf(t *sqliteTable) string {
	parts := make([]string, len(t.cols))
	for i, c := range t.cols {
		parts[i] = c + " " + t.duck[i]
	}
	return strings.Join(parts, ", ")
}

// readSQLite reads what the delta needs from the snapshot, before DuckDB
// applies it: for each delta table the sums of its rows at S, its new
// rows, its rows ended after S and, when it lost rows, the ids it keeps;
// each whole table in full (those the bulk copy cannot carry are copied
// into the copy now, row by row). A table whose layout differs from the
// copy's, or whose sums cannot be read, is written whole.
func (r *deltaRun) readSQLite(ctx context.Context) error {
	have, err := r.copyTables(ctx)
	if err != nil {
		return fmt.Errorf("freeze %s: the base's copy: %w", r.s.path, err)
	}
	for name := range have {
		if !slices.ContainsFunc(r.s.tables, func(t *sqliteTable) bool { return t.name == name }) {
			if _, err := r.duck.ExecContext(ctx, "DROP TABLE "+sqlquote.Ident(deltaAlias)+".main."+sqlquote.Ident(name)); err != nil {
				return fmt.Errorf("freeze %s: %w", r.s.path, err)
			}
		}
	}
	for _, dt := range r.tables {
		if dt.old != "" && have[dt.t.name] != columnsOf(dt.t) {
			dt.old, dt.why = "", "its columns differ from the base's"
		}
		if dt.old != "" {
			if err := r.readDeltaTable(ctx, dt); err != nil {
				return err
			}
		}
		if dt.old == "" {
			if err := r.writeWhole(ctx, dt, have[dt.t.name] != ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// dumpWhere writes the rows of t that meet cond (all when "") to a CSV
// file in the run's work folder named name; sqlitebulk.ErrOdd (wrapped)
// when a value cannot go in bulk.
func (r *deltaRun) dumpWhere(ctx context.Context, t *sqliteTable, cols []string, cond, name string) (dumped, error) {
	kinds := make([]sqlitebulk.Kind, 0, len(cols))
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = sqlquote.Ident(c)
		if j := slices.Index(t.cols, c); j >= 0 && stageType(t.decl[j]) == tVarchar {
			kinds = append(kinds, sqlitebulk.Text)
		} else {
			kinds = append(kinds, sqlitebulk.Integer)
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + sqlquote.Ident(t.name)
	if cond != "" {
		q += " WHERE " + cond
	}
	d := dumped{t: t, path: filepath.Join(r.work, name+".csv")}
	err := r.s.conn.Raw(func(dc any) error {
		got, err := sqlitebulk.Dump(ctx, dc, q, d.path, kinds)
		d.rows = got.Rows
		if err == nil && got.MaxLine >= csvMaxLine {
			err = fmt.Errorf("a row of %d bytes: %w", got.MaxLine, sqlitebulk.ErrOdd)
		}
		return err
	})
	if err != nil && !errors.Is(err, sqlitebulk.ErrOdd) && !isSQLiteBusy(err) {
		err = classifySQLiteError(r.s.path, "read "+t.name, err)
	}
	return d, err
}

// readDeltaTable dumps dt's new rows, its rows ended after S and, when it
// has fewer rows at S than the copy, the ids it keeps; a table counted
// only (idFrom) gets its count at S. A value the bulk copy cannot carry
// makes it a whole table.
func (r *deltaRun) readDeltaTable(ctx context.Context, dt *deltaTable) error {
	t, i := dt.t, strconv.Itoa(slices.Index(r.tables, dt))
	var err error
	odd := func(err error) error {
		if errors.Is(err, sqlitebulk.ErrOdd) {
			dt.old, dt.why = "", err.Error()
			return nil
		}
		return err
	}
	added := "NOT (" + dt.old + ")"
	if dt.idFrom != "" {
		after, err := r.afterOld(ctx, dt)
		if err != nil {
			return err
		}
		added = "rowid > " + strconv.FormatInt(after, 10)
	}
	if dt.added, err = r.dumpWhere(ctx, t, t.cols, added, "added-"+i); err != nil {
		return odd(err)
	}
	if dt.idFrom != "" {
		var all int64
		if err := r.s.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+sqlquote.Ident(t.name)).Scan(&all); err != nil {
			if isSQLiteBusy(err) {
				return err
			}
			return classifySQLiteError(r.s.path, "read "+t.name, err)
		}
		dt.sums = sumsOf{strconv.FormatInt(all-dt.added.rows, 10)}
	}
	if dt.end != "" {
		cond := fmt.Sprintf("%s AND %s > %d", dt.old, sqlquote.Ident(dt.end), r.snap)
		if dt.ended, err = r.dumpWhere(ctx, t, t.cols, cond, "ended-"+i); err != nil {
			return odd(err)
		}
	}
	if dt.id == "" || dt.idFrom != "" {
		return nil
	}
	var inCopy int64
	if err := r.duck.QueryRowContext(ctx, "SELECT count(*) FROM "+target(deltaAlias, t)).Scan(&inCopy); err != nil {
		return fmt.Errorf("freeze %s: the base's copy: %w", r.s.path, err)
	}
	if strconv.FormatInt(inCopy, 10) == dt.sums[0] {
		return nil
	}
	d, err := r.dumpWhere(ctx, t, []string{dt.id}, dt.old, "kept-"+i)
	if err != nil {
		return odd(err)
	}
	dt.kept = d.path
	return nil
}

// afterOld returns the largest rowid of dt's rows at S (0 when none): a
// table without an index on its data file's id is read from its end back
// to its last row at S, not whole. SQLite gives a new row the largest
// rowid plus one, so every row written after S lies beyond every row at
// S that is still there; were one not to, the count of the rows at S
// (all rows less those beyond) would not be the copy's, and the table
// would be written whole.
func (r *deltaRun) afterOld(ctx context.Context, dt *deltaTable) (int64, error) {
	var m sql.NullInt64
	err := r.s.conn.QueryRowContext(ctx, "SELECT rowid FROM "+sqlquote.Ident(dt.t.name)+" WHERE "+dt.old+" ORDER BY rowid DESC LIMIT 1").Scan(&m)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		if isSQLiteBusy(err) {
			return 0, err
		}
		return 0, classifySQLiteError(r.s.path, "read "+dt.t.name, err)
	}
	return m.Int64, nil
}

// writeWhole writes dt's table whole into the copy (dropping the copy's,
// when it has one): in bulk through a dump, or row by row.
func (r *deltaRun) writeWhole(ctx context.Context, dt *deltaTable, exists bool) error {
	t := dt.t
	if exists {
		if _, err := r.duck.ExecContext(ctx, "DROP TABLE "+target(deltaAlias, t)); err != nil {
			return fmt.Errorf("freeze %s: %w", r.s.path, err)
		}
	}
	if err := r.s.createTable(ctx, r.duck, deltaAlias, t); err != nil {
		return err
	}
	var n int64
	var err error
	if _, ok := r.s.bulkKinds(t); ok {
		var d dumped
		d, err = r.dumpWhere(ctx, t, t.cols, "", "whole-"+strconv.Itoa(slices.Index(r.tables, dt)))
		if err == nil {
			n, err = r.s.readDump(ctx, r.duck, deltaAlias, d)
		}
		os.Remove(d.path)
		if errors.Is(err, sqlitebulk.ErrOdd) {
			n, err = r.s.copyRows(ctx, r.duck, deltaAlias, t)
		}
	} else {
		n, err = r.s.copyRows(ctx, r.duck, deltaAlias, t)
	}
	if err != nil {
		return err
	}
	r.counts[t.name] = n
	return nil
}

// applyAll applies the dumps of every delta table to the copy, DuckDB's
// work alone (SQLite's connection checks the file meanwhile): first the
// rows deleted (data files and their statistics, delete files,
// snapshots), then the new rows and the ended ones; then it compares each
// table's rows at S with SQLite's sums. A table that does not match is
// marked (why) for rewriteFailed.
func (r *deltaRun) applyAll(ctx context.Context) error {
	for _, dt := range r.tables {
		if dt.old != "" && dt.kept != "" {
			if err := r.deleteGone(ctx, dt); err != nil {
				return err
			}
		}
	}
	for _, dt := range r.tables {
		if dt.old != "" && dt.idFrom != "" && r.gone[dt.idFrom] {
			dt.touched = true
			q := fmt.Sprintf("DELETE FROM %s WHERE %s IN (SELECT id FROM %s)", target(deltaAlias, dt.t), sqlquote.Ident(dt.id), goneTable(dt.idFrom))
			if _, err := r.duck.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("freeze %s: table %s: %w", r.s.path, dt.t.name, err)
			}
		}
	}
	for _, dt := range r.tables {
		if dt.old == "" {
			continue
		}
		if err := r.applyTable(ctx, dt); err != nil {
			return err
		}
	}
	return nil
}

// goneTable is the scratch table of the ids table deleted after S.
func goneTable(table string) string {
	return sqlquote.Ident(scratchAlias) + ".main." + sqlquote.Ident("gone_"+table)
}

// deleteGone deletes from the copy the rows of dt whose id SQLite no
// longer has at S (dt.kept lists those it keeps), and keeps those ids in
// scratch for the tables that take them (idFrom).
func (r *deltaRun) deleteGone(ctx context.Context, dt *deltaTable) error {
	id := sqlquote.Ident(dt.id)
	steps := []string{
		fmt.Sprintf("CREATE TABLE %s AS SELECT DISTINCT b.%s AS id FROM %s b ANTI JOIN read_csv(%s, columns = {'id': 'BIGINT'}, %s) k ON b.%s = k.id",
			goneTable(dt.t.name), id, target(deltaAlias, dt.t), sqlquote.String(dt.kept), csvReadOptions, id),
		fmt.Sprintf("DELETE FROM %s WHERE %s IN (SELECT id FROM %s)", target(deltaAlias, dt.t), id, goneTable(dt.t.name)),
	}
	for _, q := range steps {
		if _, err := r.duck.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("freeze %s: table %s: %w", r.s.path, dt.t.name, err)
		}
	}
	os.Remove(dt.kept)
	r.gone[dt.t.name] = true
	dt.touched = true
	return nil
}

// applyTable inserts dt's new rows, sets the end_snapshot of its rows
// ended after S, and compares its rows at S with SQLite's sums.
func (r *deltaRun) applyTable(ctx context.Context, dt *deltaTable) error {
	t := dt.t
	var added int64
	var err error
	if dt.added.rows > 0 { // a statement of DuckDB's costs milliseconds, even for no rows
		added, err = r.s.readDump(ctx, r.duck, deltaAlias, dt.added)
	}
	os.Remove(dt.added.path)
	if err != nil {
		return err
	}
	if dt.end != "" && dt.ended.rows > 0 {
		dt.touched = true
		if dt.why, err = r.endRows(ctx, dt); err != nil || dt.why != "" {
			return err
		}
	}
	os.Remove(dt.ended.path)
	got := dt.pre
	if dt.touched || got == nil {
		exprs := sumExprs(dt, false)
		if got, err = scanSums(r.duck.QueryRowContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM "+target(deltaAlias, t)+" WHERE "+dt.old), len(exprs)); err != nil {
			return fmt.Errorf("freeze %s: table %s: %w", r.s.path, t.name, err)
		}
	}
	if !slices.Equal(got, dt.sums) {
		dt.why = "its rows at the base's snapshot changed in place (" + differingSums(t, got, dt.sums) + ")"
		return nil
	}
	old, _ := strconv.ParseInt(dt.sums[0], 10, 64)
	r.counts[t.name] = old + added
	return nil
}

// differingSums names the first aggregate that differs between a and b.
func differingSums(t *sqliteTable, a, b sumsOf) string {
	for i := range a {
		if a[i] != b[i] {
			return fmt.Sprintf("aggregate %d of %d: %s, not %s", i+1, len(a), a[i], b[i])
		}
	}
	return "none"
}

// endRows sets, in the copy, the end_snapshot of dt's rows that SQLite
// ended after S (its dump, loaded into scratch), matching each by its id
// (data and delete files) or by all its other columns. It says why not
// when the rows matched are not exactly those.
func (r *deltaRun) endRows(ctx context.Context, dt *deltaTable) (string, error) {
	t := dt.t
	if err := r.s.createTable(ctx, r.duck, scratchAlias, t); err != nil {
		return "", err
	}
	defer r.duck.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+target(scratchAlias, t))
	if _, err := r.s.readDump(ctx, r.duck, scratchAlias, dt.ended); err != nil {
		return "", err
	}
	var match []string
	for _, c := range t.cols {
		if c == dt.end || (dt.id != "" && dt.id != "snapshot_id" && c != dt.id) {
			continue
		}
		q := sqlquote.Ident(c)
		match = append(match, "b."+q+" IS NOT DISTINCT FROM e."+q)
	}
	end := sqlquote.Ident(dt.end)
	q := fmt.Sprintf("UPDATE %s AS b SET %s = e.%s FROM %s AS e WHERE b.%s IS NULL AND %s",
		target(deltaAlias, t), end, end, target(scratchAlias, t), end, strings.Join(match, " AND "))
	res, err := r.duck.ExecContext(ctx, q)
	if err != nil {
		return "", fmt.Errorf("freeze %s: table %s: %w", r.s.path, t.name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != dt.ended.rows {
		return fmt.Sprintf("%d of its rows ended after the base's snapshot, and %d matched the base's", dt.ended.rows, n), nil
	}
	return "", nil
}

// rewriteFailed writes whole the delta tables applyAll found different,
// and fills the run's DeltaInfo.
func (r *deltaRun) rewriteFailed(ctx context.Context) error {
	for _, dt := range r.tables {
		switch {
		case dt.old != "" && dt.why != "":
			if err := r.writeWhole(ctx, dt, true); err != nil {
				return err
			}
			fallthrough
		case dt.why != "":
			if r.info.Whole == nil {
				r.info.Whole = map[string]string{}
			}
			r.info.Whole[dt.t.name] = dt.why
		case dt.old != "":
			r.info.Delta = append(r.info.Delta, dt.t.name)
		}
	}
	sort.Strings(r.info.Delta)
	return nil
}

// compactShare: when more than this share of the copy's blocks is free
// after a delta, the copy is written again (COPY FROM DATABASE) so that
// the file does not grow with the free space of many commits (a variable
// for the test that forces it).
var compactShare = 0.5

// finish checkpoints the copy and, when over compactShare of its blocks
// are free or the working catalog's size asks for the other block size
// (rewriteForBlockSize), writes it again into a new file at tmp: with the
// block size that size asks for (blockSizeFor) in the second case, its
// own in the first.
func (r *deltaRun) finish(ctx context.Context, tmp string) error {
	if _, err := r.duck.ExecContext(ctx, "CHECKPOINT "+sqlquote.Ident(deltaAlias)); err != nil {
		return fmt.Errorf("freeze %s: %w", r.s.path, err)
	}
	var total, free, bs int64
	q := "SELECT total_blocks, free_blocks, block_size FROM pragma_database_size() WHERE database_name = ?"
	if err := r.duck.QueryRowContext(ctx, q, deltaAlias).Scan(&total, &free, &bs); err != nil {
		return fmt.Errorf("freeze %s: %w", r.s.path, err)
	}
	storage := storageForFormat(r.s.format)
	// The size the catalog asks blocks for is its SQLite form's, as at
	// the first freeze: the copy's used blocks count a whole block for
	// every table, however few its rows.
	size := sqliteBytes(r.s.path)
	rewrite := rewriteForBlockSize(storage, bs, size)
	if total == 0 || (float64(free) <= compactShare*float64(total) && !rewrite) {
		_, err := r.duck.ExecContext(ctx, "DETACH "+sqlquote.Ident(deltaAlias))
		return err
	}
	if rewrite {
		bs = blockSizeFor(storage, size)
	}
	r.info.Compacted = true
	next := tmp + ".compact"
	steps := []string{
		fmt.Sprintf("ATTACH %s AS fdl_compact (STORAGE_VERSION %s%s)", sqlquote.String(next), sqlquote.String(storage.MinDuckDB), blockSizeOption(bs)),
		"COPY FROM DATABASE " + sqlquote.Ident(deltaAlias) + " TO fdl_compact",
	}
	for _, s := range steps {
		if _, err := r.duck.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("freeze %s: %s: %w", r.s.path, s, err)
		}
	}
	if err := compareCounts(ctx, r.duck, deltaAlias, "fdl_compact"); err != nil {
		return fmt.Errorf("freeze %s: %w", r.s.path, err)
	}
	for _, s := range []string{"CHECKPOINT fdl_compact", "DETACH fdl_compact", "DETACH " + sqlquote.Ident(deltaAlias)} {
		if _, err := r.duck.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("freeze %s: %s: %w", r.s.path, s, err)
		}
	}
	return os.Rename(next, tmp)
}
