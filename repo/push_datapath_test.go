package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
)

// TestPushRefusesUnplaceablePath: a version that reads a data file by a
// path fdl cannot place (here a tab in its name, the file present under
// that name) is refused (DataPathError, naming the path) and the branch
// does not move: gc would refuse to plan while such a version is kept.
// Before, the file was left unchecked and the version published.
func TestPushRefusesUnplaceablePath(t *testing.T) {
	ctx := context.Background()
	url, r, res := folderRepoCheckout(t)
	duck := realduck.Find(t, realduck.V15, "ducklake").Start(t)
	duck.MustQuery(t, realduck.OnLake(res.Attach, `CREATE TABLE t(k INTEGER); INSERT INTO t VALUES (1)`, false))
	var file string
	filepath.WalkDir(filepath.Join(url, "data"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			file = p
		}
		return nil
	})
	if file == "" {
		t.Fatal("the real DuckDB wrote no data file")
	}
	odd := strings.TrimSuffix(filepath.Base(file), ".parquet") + "\t.parquet"
	if err := os.Rename(file, filepath.Join(filepath.Dir(file), odd)); err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(res.Dir, "ducklake.duckdb")
	duck.MustQuery(t, "USE memory; ATTACH "+sqlquote.String(catalog)+" AS m; UPDATE m.main.ducklake_data_file SET path = "+
		sqlquote.String(odd)+" WHERE path = "+sqlquote.String(filepath.Base(file))+"; DETACH m;")
	wd, err := repo.OpenWorkdir(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Commit(ctx, repo.CommitOptions{Message: "odd path", Author: "t"}, nil); err != nil {
		t.Fatal(err)
	}
	main, _ := refs.Branch("main")
	before, _ := r.Ref(ctx, main)
	_, err = wd.Push(ctx, r, "")
	var dp *repo.DataPathError
	if !errors.As(err, &dp) || !errors.Is(err, repo.ErrDataPath) || dp.Count != 1 || !strings.Contains(err.Error(), "control character") {
		t.Fatalf("push = %v, want a DataPathError naming the one path with a control character", err)
	}
	if after, _ := r.Ref(ctx, main); after.ID != before.ID {
		t.Errorf("main moved from %q to %q", before.ID, after.ID)
	}
}

// folderRepoCheckout makes a new folder repository (closed when the test
// ends) and a working directory checked out from it, in the test's
// temporary folders: the repository's URL, the repository and the
// checkout.
func folderRepoCheckout(t *testing.T) (string, *repo.Repo, *repo.CheckoutResult) {
	t.Helper()
	ctx := context.Background()
	url := filepath.Join(t.TempDir(), "repo")
	r, err := repo.Init(ctx, url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	res, err := r.Checkout(ctx, repo.CheckoutOptions{Dir: filepath.Join(t.TempDir(), "w")})
	if err != nil {
		t.Fatal(err)
	}
	return url, r, res
}
