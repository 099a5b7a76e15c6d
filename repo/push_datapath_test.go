package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/workdir"
)

// TestPushRefusesUnplaceablePath: a version that reads a data file by a
// path fdl cannot place (here a tab in its name, the file present under
// that name) is refused (DataPathError, naming the path) and the branch
// does not move: gc would refuse to plan while such a version is kept.
// Before, the file was left unchecked and the version published.
func TestPushRefusesUnplaceablePath(t *testing.T) {
	ctx := context.Background()
	url, r, res := history.Empty(t)
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
	wd, err := workdir.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "odd path", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	main, _ := refs.Branch("main")
	before, _ := r.Ref(ctx, main)
	_, err = wd.Push(ctx, workdir.PushOptions{})
	var dp *repo.DataPathError
	if !errors.As(err, &dp) || !errors.Is(err, repo.ErrDataPath) || dp.Count != 1 || !strings.Contains(err.Error(), "control character") {
		t.Fatalf("push = %v, want a DataPathError naming the one path with a control character", err)
	}
	if after, _ := r.Ref(ctx, main); after.ID != before.ID {
		t.Errorf("main moved from %q to %q", before.ID, after.ID)
	}
}

// TestRelativeDataPath: DuckDB resolves a relative data_path against each
// reader's working directory, so a version that reads its files through one
// reaches them only from the folder it was written in. A push refuses it
// (DataPathError); a version an older fdl published that way never blocks
// gc: gc keeps its files (by name) while it is kept, with a warning, and
// plans without it once it leaves retention; verify --data reports it.
//
// It is one piece: one repository holding a version published with a
// relative data path, followed through push, gc and verify, each step
// reading what the one before it left.
func TestRelativeDataPath(t *testing.T) {
	ctx := context.Background()
	url, r, res := history.Empty(t)
	duck := realduck.Find(t, realduck.V15, "ducklake").Start(t)
	duck.MustQuery(t, realduck.OnLake(res.Attach, `CREATE TABLE t AS SELECT i AS k FROM range(100) t(i)`, false))
	// The same files, read through "data/" from the repository's folder.
	t.Chdir(url)
	catalog := filepath.Join(res.Dir, "ducklake.duckdb")
	duck.MustQuery(t, "USE memory; ATTACH "+sqlquote.String(catalog)+" AS m; UPDATE m.main.ducklake_metadata SET value = 'data/' WHERE key = 'data_path'; DETACH m;")
	wd, err := workdir.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "relative", Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wd.Push(ctx, workdir.PushOptions{})
	var dp *repo.DataPathError
	if !errors.As(err, &dp) || !strings.Contains(err.Error(), "relative") {
		t.Fatalf("push = %v, want a DataPathError naming the relative path", err)
	}
	// As an older fdl published it: the version's files, then the ref.
	for _, f := range []string{"ducklake.duckdb", "dataset.json", "version.json"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(wd.LocalCatalog(rec.ID)), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Store().Create(ctx, "versions/"+string(rec.ID)+"/"+f, strings.NewReader(string(b))); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Store().Create(ctx, "refs/heads/main", strings.NewReader(string(rec.ID)+"\n")); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(filepath.Join(url, "data"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("the real DuckDB wrote no data file")
	}
	t.Chdir(t.TempDir()) // gc and verify run anywhere
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(30 * 24 * time.Hour)})
	if err != nil {
		t.Fatalf("gc refused to plan: %v", err)
	}
	if len(plan.DataFiles) != 0 || !slices.ContainsFunc(plan.Warnings, func(w string) bool { return strings.Contains(w, string(rec.ID)) && strings.Contains(w, "relative") }) {
		t.Fatalf("plan deletes %+v, warnings %q; want nothing deleted and a warning naming %s", plan.DataFiles, plan.Warnings, rec.ID)
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil || !slices.ContainsFunc(rep.Problems, func(p repo.Problem) bool { return p.Code == repo.CodeDataPathInvalid }) {
		t.Fatalf("verify --data: %+v %v, want data-path-invalid", rep.Problems, err)
	}
	// Out of retention (a newer version on main, the policy keeps one), it
	// blocks nothing.
	res2, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(t.TempDir(), "w2")})
	if err != nil {
		t.Fatal(err)
	}
	cat2 := filepath.Join(res2.Dir, "ducklake.duckdb")
	duck.MustQuery(t, "USE memory; ATTACH "+sqlquote.String(cat2)+" AS m; UPDATE m.main.ducklake_metadata SET value = "+sqlquote.String(filepath.ToSlash(filepath.Join(url, "data"))+"/")+" WHERE key = 'data_path'; DETACH m;")
	duck.MustQuery(t, realduck.OnLake(res2.Attach, `INSERT INTO t SELECT i FROM range(10) t(i)`, false))
	wd2, err := workdir.Open(res2.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd2.Commit(ctx, workdir.CommitOptions{Message: "absolute", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wd2.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	plan, err = gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(30 * 24 * time.Hour)})
	if err != nil {
		t.Fatalf("gc refused to plan with the relative version leaving retention: %v", err)
	}
	if len(plan.Retire) != 1 || plan.Retire[0].ID != rec.ID {
		t.Fatalf("plan retires %+v, want %s", plan.Retire, rec.ID)
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("gc deleted %s, which the head reads: %v", f, err)
		}
	}
}
