// Package history builds folder repositories with a history of versions
// for the tests of repo and cmd/fdl. It is imported only by tests. It is
// apart from internal/testutil because it imports repo: the tests of
// packages repo imports (internal/ducklake/...) use testutil.
package history

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// History is a folder repository built by Build.
type History struct {
	Dir  string            // holds repo/ and the working directory w/
	URL  string            // the repository, Dir/repo
	Repo *repo.Repo        // open until the test ends
	Recs []*version.Record // the versions on main, oldest first
	WD   string            // the working directory, Dir/w
}

// Ops writes version i (1-based) into the working catalog.
type Ops func(ctx context.Context, w *lakewriter.Writer, i int) error

// Build makes a folder repository in a temporary folder and a working
// directory of its main branch (a DuckDB working catalog), then makes n
// versions: for each, ops writes the working catalog, and the version is
// committed ("version i", author "t") and pushed.
func Build(t testing.TB, n int, ops Ops) *History {
	t.Helper()
	return BuildPrepared(t, n, ops, nil)
}

// BuildPrepared is Build with prepare (if not nil) called on the new
// repository's folder before anything else is written to it (to make
// data/ or a folder in it a symbolic link, say).
func BuildPrepared(t testing.TB, n int, ops Ops, prepare func(repoDir string)) *History {
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
	res, err := r.Checkout(ctx, repo.CheckoutOptions{Dir: filepath.Join(h.Dir, "w")})
	if err != nil {
		t.Fatal(err)
	}
	h.WD = res.Dir
	for i := 1; i <= n; i++ {
		w, err := lakewriter.Open(ctx, res.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		if err := ops(ctx, w, i); err != nil {
			w.Close()
			t.Fatalf("version %d: %v", i, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		wd, err := repo.OpenWorkdir(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := wd.Commit(ctx, repo.CommitOptions{Message: fmt.Sprintf("version %d", i), Author: "t"}, nil)
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		if _, err := wd.Push(ctx, r, ""); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		h.Recs = append(h.Recs, rec)
	}
	return h
}

// Col is a nullable column named name of type typ, for CreateTable.
func Col(name, typ string) lakewriter.ColumnDef {
	return lakewriter.ColumnDef{Name: name, Type: typ, Nullable: true}
}

// AllowNoChange returns err, or nil when err is lakewriter.ErrNoChange: a
// delete or compaction an Ops asks for may find nothing to do.
func AllowNoChange(err error) error {
	if errors.Is(err, lakewriter.ErrNoChange) {
		return nil
	}
	return err
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
