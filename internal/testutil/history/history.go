// Package history builds folder repositories with a history of versions
// for the tests of repo and cmd/fdl. It is imported only by tests. It is
// apart from internal/testutil because it imports repo: the tests of
// packages repo imports (internal/ducklake/...) use testutil.
package history

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// History is a folder repository built by BuildReal.
type History struct {
	Dir  string            // holds repo/ and the working directory w/
	URL  string            // the repository, Dir/repo
	Repo *repo.Repo        // open until the test ends
	Recs []*version.Record // the versions on main, oldest first
	WD   string            // the working directory, Dir/w
	// Attach is the ATTACH statement checkout printed for the working
	// catalog (naming it lake).
	Attach string
	// Duck is the real DuckDB session that wrote the versions (BuildReal;
	// nil for Build), for the test's further writes (Write).
	Duck *realduck.Session
}

// SQLOps returns the SQL statements that write version i (1-based) into
// the working catalog, run with the real DuckDB on the catalog attached as
// lake and made the default database (realduck.OnLake: data inlining off).
type SQLOps func(i int) string

// ChurnSQL is what version i (1-based) does, run by the real DuckDB on
// the working catalog (BuildReal, data inlining off): appends every
// time, deletes, compaction (ducklake_rewrite_data_files of orders' files
// with deletes, ducklake_merge_adjacent_files of events', which removes the
// merged files' rows from the catalog), dropped tables, inlined rows: the
// mixed history the tests of gc, verify and push build (an SQLOps).
func ChurnSQL(i int) string {
	var q []string
	if i == 1 {
		q = append(q, "CREATE TABLE orders(id BIGINT, amount DOUBLE)", "CREATE TABLE events(k INTEGER)",
			"CREATE TABLE tmp(x INTEGER)", "CREATE TABLE small(k INTEGER)",
			"INSERT INTO tmp SELECT i::INTEGER AS x FROM range(10) t(i)")
	}
	q = append(q, fmt.Sprintf("INSERT INTO orders SELECT %d + i AS id, i * 1.5 AS amount FROM range(100) t(i)", i*1000),
		fmt.Sprintf("INSERT INTO events VALUES (%d)", i))
	if i%5 == 0 {
		q = append(q, fmt.Sprintf("DELETE FROM orders WHERE id %% 10 = %d", i%10))
	}
	if i%7 == 0 {
		q = append(q, "CALL ducklake_rewrite_data_files('lake', 'orders', delete_threshold => 0)")
	}
	if i%9 == 0 {
		q = append(q, "CALL ducklake_merge_adjacent_files('lake', 'events')")
	}
	switch i {
	case 9:
		q = append(q, "DROP TABLE tmp")
	case 12:
		q = append(q, "CREATE TABLE tmp2(y BIGINT)", "INSERT INTO tmp2 SELECT i AS y FROM range(5) t(i)")
	case 20:
		q = append(q, "DROP TABLE tmp2")
	}
	if i%4 == 0 {
		q = append(q, "SET ducklake_default_data_inlining_row_limit = 10",
			fmt.Sprintf("INSERT INTO small VALUES (%d)", i),
			"SET ducklake_default_data_inlining_row_limit = 0")
	}
	return strings.Join(q, ";\n")
}

// BuildReal makes a folder repository in a temporary folder and a working
// directory of its main branch (a DuckDB working catalog), then makes n
// versions, each committed ("version i", author "t") and pushed, written by
// the real DuckDB (1.5.5 and DuckDB's own ducklake extension) as a
// pipeline would: ops(i) runs on the
// working catalog attached with the ATTACH statement checkout printed. One
// DuckDB session (History.Duck) writes every version. Without the real
// DuckDB the test is skipped (failed under CI: realduck.Find).
func BuildReal(t testing.TB, n int, ops SQLOps) *History {
	t.Helper()
	return BuildRealPrepared(t, n, ops, nil)
}

// BuildRealPrepared is BuildReal with prepare (if not nil) called on the
// new repository's folder before anything else is written to it (to make
// data/ or a folder in it a symbolic link, say).
func BuildRealPrepared(t testing.TB, n int, ops SQLOps, prepare func(repoDir string)) *History {
	t.Helper()
	s := realduck.Find(t, realduck.V15, "ducklake").Start(t)
	h := build(t, n, func(ctx context.Context, h *History, catalog string, i int) error {
		_, err := s.Query(realduck.OnLake(h.Attach, ops(i), false))
		return err
	}, prepare)
	h.Duck = s
	return h
}

// Write runs sql with the real DuckDB session that built h (BuildReal) on
// its working catalog, as the versions were written (realduck.OnLake,
// data inlining off).
func (h *History) Write(t testing.TB, sql string) []realduck.Result {
	t.Helper()
	if h.Duck == nil {
		t.Fatal("history.Write: the history was not built with the real DuckDB (BuildReal)")
	}
	return h.Duck.MustQuery(t, realduck.OnLake(h.Attach, sql, false))
}

// Kept is a history's folder set aside by Keep, to give each case of a
// test the same history without building it again.
type Kept struct {
	h    *History
	copy string
}

// Keep copies h's folder (the repository and the working directory) aside.
// Building a history costs the real DuckDB and a commit and push per
// version; cases that each change one may share one build: each calls
// Restore first. Cases must run one after the other (not in parallel),
// and those whose claim needs fresh ids or times keep a build of their
// own (a restored history has the same ids and times each time).
func (h *History) Keep(t testing.TB) *Kept {
	t.Helper()
	k := &Kept{h: h, copy: filepath.Join(t.TempDir(), "kept")}
	testutil.RestoreTree(t, h.Dir, k.copy)
	return k
}

// Restore puts the kept folder back at its path (the files name it: the
// repository's URL in the working directory, the data path in the
// catalogs), byte for byte and with the files' times, and returns the
// history with its repository opened again for t (closed when t ends): a
// Repo opened before may hold what it read of the changed one.
func (k *Kept) Restore(t testing.TB) *History {
	t.Helper()
	testutil.RestoreTree(t, k.copy, k.h.Dir)
	r, err := repo.Open(context.Background(), k.h.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	h := *k.h
	h.Repo = r
	return &h
}

// build makes the repository and its working directory, then n versions,
// each written by write and then committed and pushed.
func build(t testing.TB, n int, write func(ctx context.Context, h *History, catalog string, i int) error, prepare func(repoDir string)) *History {
	t.Helper()
	ctx := context.Background()
	h := &History{Dir: t.TempDir()}
	h.URL = filepath.Join(h.Dir, "repo")
	r, err := repo.Init(ctx, h.URL, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Repo = r
	t.Cleanup(func() { r.Close() })
	if prepare != nil {
		prepare(h.URL)
	}
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(h.Dir, "w")})
	if err != nil {
		t.Fatal(err)
	}
	h.WD, h.Attach = res.Dir, res.Attach
	for i := 1; i <= n; i++ {
		if err := write(ctx, h, res.Catalog, i); err != nil {
			t.Fatalf("version %d: %v", i, err)
		}
		wd, err := workdir.Open(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: fmt.Sprintf("version %d", i), Author: "t"})
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		h.Recs = append(h.Recs, rec)
	}
	return h
}

// CatalogFiles fetches a version's catalog (checked against its record)
// and returns its data-file rows (ducklake.Catalog.DataFiles).
func CatalogFiles(t testing.TB, r *repo.Repo, rec *version.Record) []ducklake.DataFile {
	t.Helper()
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "c.duckdb")
	if err := r.FetchCatalog(ctx, rec, dst); err != nil {
		t.Fatal(err)
	}
	c, err := ducklake.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	files, err := c.DataFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Records writes n versions on one first-parent line into r's store as
// pushes and gc leave them, as far as history reads go: each one's
// version.json (made with the version package) and, with packs, its
// history pack (written oldest first by the library's pack writer, as
// pushes write them); then it creates branch main at the last one and
// retires every version as gc does (a marker each: they have no catalog). The ids are made every ms apart
// (0: as fast as NewIDAfter makes them). It returns the records, oldest
// first. Histories of thousands of versions take seconds, with no DuckDB.
func Records(t testing.TB, r *repo.Repo, n int, packs bool, every time.Duration) []*version.Record {
	t.Helper()
	ctx := context.Background()
	st := r.Store()
	start := time.Now().Add(-time.Duration(n) * every).UTC().Truncate(time.Millisecond)
	var recs []*version.Record
	w := history.NewWriter(st, r)
	var parent *version.Record
	for i := 1; i <= n; i++ {
		created := start.Add(time.Duration(i-1) * every)
		var id version.ID
		var err error
		if every > 0 {
			id, err = idAt(created)
		} else if parent != nil {
			id, err = version.NewIDAfter(parent.ID)
		} else {
			id, err = version.NewID()
		}
		if err != nil {
			t.Fatal(err)
		}
		sum := fmt.Sprintf("%064x", i)
		rec := &version.Record{RecordFormat: version.RecordFormat, ID: id, Seq: int64(i), Parents: []version.ID{},
			Author: "t", Message: fmt.Sprintf("version %d", i), CreatedAt: created,
			Catalog:  version.Catalog{Size: 1, SHA256: sum, Storage: meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}},
			Dataset:  version.File{Size: 1, SHA256: sum},
			DuckLake: version.DuckLake{Format: "1.0", Snapshot: int64(i), Adds: version.SnapshotRange{First: int64(i), Last: int64(i)}, DataPath: "/data/"},
		}
		if parent != nil {
			rec.Parents = []version.ID{parent.ID}
		} else {
			rec.DuckLake.Adds.First = 0
		}
		b, err := rec.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Create(ctx, repo.VersionKey(id, version.RecordFile), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if packs {
			e, err := history.NewEntry(b, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(ctx, e, history.NoBudget); err != nil {
				t.Fatal(err)
			}
		}
		recs = append(recs, rec)
		parent = rec
	}
	if _, err := r.CreateBranch(ctx, nil, "main", string(parent.ID)); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, rec := range recs {
		m := retention.Marker{Format: retention.Format, Version: rec.ID, RetiredAt: now, Floor: 1, Reason: "made without a catalog", DataFiles: []string{}}
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Create(ctx, repo.VersionKey(rec.ID, retention.MarkerFile), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// idAt returns a fresh UUIDv7 whose timestamp is t's millisecond.
func idAt(t time.Time) (version.ID, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	ms := uint64(t.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return version.ParseID(u.String())
}

// ExecCatalog runs statements on a DuckDB-form catalog with plain SQL
// (through database/sql; a test that breaks a catalog on purpose), failing
// the test at the first that fails.
func ExecCatalog(t testing.TB, path string, queries ...string) {
	t.Helper()
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range queries {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Empty makes a new folder repository (closed when the test
// ends) and a working directory checked out from it, in the test's
// temporary folders: the repository's URL, the repository and the
// checkout.
func Empty(t testing.TB) (string, *repo.Repo, *workdir.CheckoutResult) {
	t.Helper()
	ctx := context.Background()
	url := filepath.Join(t.TempDir(), "repo")
	r, err := repo.Init(ctx, url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(t.TempDir(), "w")})
	if err != nil {
		t.Fatal(err)
	}
	return url, r, res
}
