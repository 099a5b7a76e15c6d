package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/workdir"
)

// prefixClasses are repository prefixes that hold the characters URLs,
// shells, SQL and globs treat specially: every class at once (one
// repository per store keeps the test short), and '#' alone, at the start
// of the prefix and written as the text "%23".
var prefixClasses = []string{
	"all #+=&'\";@:,[x]*é~$!<^|`{}%41",
	"#",
	"%23",
}

// TestGCPrefixCharacters: in a repository whose prefix holds any of the
// characters stores accept, gc keeps every file the branch head reads and
// verify --data checks them (a file deleted by hand is reported missing),
// on every kind of store. A '#' in an S3 prefix made gc count every
// catalog path as outside the repository: verify checked nothing and gc
// deleted the head's files as unlisted once the grace period had passed.
// On a folder and on S3 the real DuckDB writes the lake through the line
// checkout printed and reads the version through the line show prints.
// On GCS and Azure `make test` runs the prefix with every class at once
// (the three with FDL_ALL_STORES=1).
func TestGCPrefixCharacters(t *testing.T) {
	for _, c := range []struct {
		name string
		base func(t *testing.T) string
		real bool // the real DuckDB reaches the store (folder, S3)
	}{
		{"folder", func(t *testing.T) string { return t.TempDir() }, true},
		{"s3", func(t *testing.T) string { return cloudtest.S3(t) }, true},
		{"gcs", func(t *testing.T) string { return cloudtest.WithPrefix(cloudtest.FakeGCS(t), "p") }, false},
		{"azure", func(t *testing.T) string { return cloudtest.Azure(t) }, false},
	} {
		// Every store and prefix has a repository of its own: they run
		// at once (most of the time is the servers' round trips).
		t.Run(c.name, func(t *testing.T) {
			if c.name != "gcs" { // FakeGCS sets the environment
				t.Parallel()
			}
			base := c.base(t)
			prefixes := prefixClasses
			if (c.name == "gcs" || c.name == "azure") && !allStores() {
				prefixes = prefixClasses[:1] // every class at once; '#' alone on S3
			}
			for _, prefix := range prefixes {
				u := withSubPrefix(t, base, prefix)
				t.Run(prefix, func(t *testing.T) {
					t.Parallel()
					checkPrefixGC(t, u, c.real)
				})
			}
		})
	}
}

// withSubPrefix returns the repository URL of the folder or object prefix
// name under base.
func withSubPrefix(t *testing.T, base, name string) string {
	t.Helper()
	if !strings.Contains(base, "://") {
		return filepath.Join(base, name)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + name
	u.RawPath = ""
	return u.String()
}

// checkPrefixGC is one case of TestGCPrefixCharacters: a repository at u
// with a version written by the real DuckDB (real) or the shared session,
// gc and verify --data over it, a file deleted by hand found, and (real)
// the version read through the line show prints.
//
// It is one piece: one scenario on one repository, each step reading what
// the step before it left.
func checkPrefixGC(t *testing.T, u string, real bool) {
	ctx := context.Background()
	r, err := repo.Init(ctx, u, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !strings.HasSuffix(strings.TrimSuffix(r.DataLocation(), "/data/"), strings.TrimSuffix(prefixOf(u), "/")) {
		t.Fatalf("data location %s does not end in the prefix %q", r.DataLocation(), prefixOf(u))
	}
	dir := filepath.Join(t.TempDir(), "w")
	co, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const create = "CREATE TABLE t AS SELECT i AS id FROM range(1000) t(i); DELETE FROM t WHERE id % 10 = 0"
	if real {
		d := realduck.Find(t, realduck.V15, "ducklake", "sqlite", "httpfs", "aws")
		d.MustQuery(t, realduck.OnLake(co.Attach, create, false))
	} else {
		duckWrite(t, duckSession(t), dir, create)
	}
	wd, err := workdir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "load", Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	files := history.CatalogFiles(t, r, rec)
	var keys []string
	for _, f := range files {
		rel, ok := strings.CutPrefix(f.ResolvedPath, r.DataLocation())
		if !ok {
			t.Fatalf("file %s does not lie under %s", f.ResolvedPath, r.DataLocation())
		}
		keys = append(keys, "data/"+rel)
	}
	if len(keys) < 2 {
		t.Fatalf("the head lists %d files, want a data file and a delete file", len(keys))
	}
	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error {
		p.KeepLast = 1
		p.Grace = retention.Duration(time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(30 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Data.Outside != 0 || plan.Data.Kept != len(keys) {
		t.Errorf("gc plan: %d kept, %d outside; want %d kept, none outside", plan.Data.Kept, plan.Data.Outside, len(keys))
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := r.Store().Stat(ctx, k); err != nil {
			t.Fatalf("gc deleted %s, which the branch head reads: %v", k, err)
		}
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil || !rep.OK() || rep.DataFiles != len(keys) || rep.DataOutside != 0 {
		t.Fatalf("verify --data: %d checked, %d outside, problems %+v, %v; want %d checked", rep.DataFiles, rep.DataOutside, rep.Problems, err, len(keys))
	}
	// verify sees what gc sees: a file the head reads, gone.
	b, _, err := store.ReadAll(ctx, r.Store(), keys[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Store().Delete(ctx, keys[0]); err != nil {
		t.Fatal(err)
	}
	rep, err = r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil || len(rep.Problems) != 1 || rep.Problems[0].Code != repo.CodeDataMissing || rep.Problems[0].Object != keys[0] {
		t.Fatalf("verify --data with %s deleted: %+v %v", keys[0], rep.Problems, err)
	}
	if err := r.Store().Create(ctx, keys[0], bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	if !real {
		return
	}
	a, err := r.Attach(ctx, "main", repo.ShowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite", "httpfs", "aws")
	res := d.MustQuery(t, a.Attach+"\nSELECT count(*) FROM "+attachedAlias(t, a.Attach)+".t;")
	if got := fmt.Sprint(res[len(res)-1].Rows); !strings.Contains(got, "900") {
		t.Fatalf("the real DuckDB read %s rows through %s, want 900", got, a.Attach)
	}
}

// prefixOf is the prefix (path) of a repository URL or folder, unescaped.
func prefixOf(u string) string {
	if !strings.Contains(u, "://") {
		return filepath.Base(u)
	}
	p, _ := url.Parse(u)
	return filepath.Base(p.Path)
}

// attachedAlias is the database name an ATTACH statement gives.
func attachedAlias(t *testing.T, attach string) string {
	t.Helper()
	i := strings.LastIndex(attach, " AS ")
	if i < 0 {
		t.Fatalf("no AS in %s", attach)
	}
	name, _, _ := strings.Cut(attach[i+4:], " ")
	return name
}

// TestInitRefusesQueryInPrefix: DuckDB reads '?' in an object-store path
// as the start of query parameters ("Invalid query parameters found"), so
// init refuses such a prefix rather than make a repository that no
// printed line can reach.
func TestInitRefusesQueryInPrefix(t *testing.T) {
	u := withSubPrefix(t, cloudtest.S3(t), "q?x")
	_, err := repo.Init(context.Background(), u, repo.InitOptions{})
	if !errors.Is(err, repo.ErrInvalidArguments) || !strings.Contains(err.Error(), "'?'") {
		t.Fatalf("init %s: %v, want a usage error naming '?'", u, err)
	}
}
