package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// dataPathSpellings returns other spellings DuckDB reads as the data
// location loc of a repository (its data/ folder as reached now, with a
// trailing "/"), for a folder store (root is the repository's folder) or
// an object store.
func dataPathSpellings(t *testing.T, loc, root string) []string {
	t.Helper()
	if strings.HasPrefix(loc, "/") {
		parent, name := filepath.Dir(root), filepath.Base(root)
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(root, link); err != nil {
			t.Fatal(err)
		}
		return []string{
			parent + "//" + name + "/data/",
			"file://" + loc,
			"FILE://localhost" + loc,
			"file:" + loc,
			root + "/./data/",
			root + "/zz/../data//",
			link + "/data/",
		}
	}
	scheme, rest, _ := strings.Cut(loc, "://")
	bucket, key, _ := strings.Cut(rest, "/")
	out := []string{
		scheme + "://" + bucket + "//" + key,
		scheme + "://" + bucket + "/" + strings.Replace(key, "/data/", "//data/", 1),
		strings.ToUpper(scheme) + "://" + strings.ToUpper(bucket) + "/" + key,
	}
	switch scheme {
	case "s3":
		out = append(out, "s3a://"+bucket+"/"+key, "https://"+bucket+".s3.amazonaws.com/"+key, "https://s3.us-east-1.amazonaws.com/"+bucket+"//"+key)
	case "gs":
		out = append(out, "gcs://"+bucket+"/"+key, "https://storage.googleapis.com/"+bucket+"/"+key)
	case "az":
		out = append(out, "azure://"+bucket+"/"+key, "az://acct.blob.core.windows.net/"+bucket+"/"+key,
			"abfss://"+bucket+"@acct.dfs.core.windows.net/"+key, "https://acct.blob.core.windows.net/"+bucket+"/"+key)
	}
	return out
}

// TestGCSpellings: a branch head whose catalog spells the repository's data
// folder another way DuckDB reads as the same place — a doubled slash (on
// S3 right after the bucket: s3://bucket//repo/data/), another case, a
// scheme alias, an account-qualified or public HTTPS address, file://
// forms, "." and "..", a symbolic link — keeps every file it reads through
// gc, on every kind of store, once the versions that spelled it the usual
// way leave retention; and verify --data sees those files as gc does: one
// deleted by hand is reported missing. On GCS and Azure `make test` runs
// one scheme-independent spelling and the scheme's own ones (all with
// FDL_ALL_STORES=1).
func TestGCSpellings(t *testing.T) {
	for _, c := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"folder", func(t *testing.T) string { return "" }},
		{"s3", func(t *testing.T) string { return cloudtest.S3(t) }},
		{"gcs", func(t *testing.T) string { return cloudtest.WithPrefix(cloudtest.FakeGCS(t), t.Name()) }},
		{"azure", func(t *testing.T) string { return cloudtest.Azure(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			url, _ := newRepoWithBaseAt(t, c.url(t))
			r, err := repo.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error {
				p.KeepLast = 1
				p.Grace = retention.Duration(time.Hour)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			root := ""
			if lf, ok := r.Store().(store.LocalFiles); ok {
				root = lf.LocalPath("")
			}
			spellings := dataPathSpellings(t, r.DataLocation(), root)
			if (c.name == "gcs" || c.name == "azure") && !allStores() {
				// The doubled slash after the bucket and the scheme's own
				// aliases; the other scheme-independent spellings run on
				// S3 (all of them with FDL_ALL_STORES=1).
				spellings = append(spellings[:1:1], spellings[3:]...)
			}
			for i, spelling := range spellings {
				checkSpellingGC(t, r, spelling, i)
			}
		})
	}
}

// checkSpellingGC is one spelling of TestGCSpellings on r: a head pushed
// with data_path spelling (the i-th), then gc as if a month had passed;
// every file the head reads is still there, verify --data is clean, and
// one of them deleted by hand is reported missing (then put back).
func checkSpellingGC(t *testing.T, r *repo.Repo, spelling string, i int) {
	t.Helper()
	ctx := context.Background()
	head := pushWithDataPath(t, r, spelling, i)
	files := history.CatalogFiles(t, r, head)
	if len(files) == 0 {
		t.Fatal("the head lists no files")
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(30 * 24 * time.Hour)})
	if err != nil {
		t.Fatalf("%s: plan: %v", spelling, err)
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatalf("%s: gc: %v", spelling, err)
	}
	var first string
	for _, f := range files {
		if f.EndSnapshot != nil {
			continue
		}
		key := "data/" + f.ResolvedPath[strings.Index(f.ResolvedPath, "main/"):]
		if _, err := r.Store().Stat(ctx, key); err != nil {
			t.Fatalf("data_path %s: gc deleted %s, which the branch head reads: %v", spelling, key, err)
		}
		if first == "" {
			first = key
		}
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil || !rep.OK() {
		t.Fatalf("data_path %s: verify --data after gc: %+v %v", spelling, rep.Problems, err)
	}
	// verify sees what gc sees: a file the head reads, gone.
	b, _, err := store.ReadAll(ctx, r.Store(), first)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Store().Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	rep, err = r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Code != repo.CodeDataMissing || rep.Problems[0].Object != first {
		t.Fatalf("data_path %s: verify --data with %s deleted: %+v", spelling, first, rep.Problems)
	}
	if err := r.Store().Create(ctx, first, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// pushWithDataPath checks out main, sets the working catalog's data_path
// to spelling, adds a table (a snapshot without data) and commits and
// pushes it; it returns the new head's record.
func pushWithDataPath(t *testing.T, r *repo.Repo, spelling string, i int) *version.Record {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "w")
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, workdir.CatalogName)
	db, err := sql.Open("duckdb", cat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE ducklake_metadata SET value = " + sqlquote.String(spelling) + " WHERE key = 'data_path'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// A new table writes no data file: DATA_PATH with OVERRIDE_DATA_PATH
	// (not stored in the catalog, which keeps the spelling set above) only
	// keeps DuckDB from loading the extension of the spelled scheme, which
	// this environment may lack (azure).
	attach := "ATTACH " + sqlquote.String("ducklake:"+cat) + " AS lake (DATA_PATH " + sqlquote.String(filepath.ToSlash(t.TempDir())+"/") + ", OVERRIDE_DATA_PATH true);"
	duckSession(t).MustQuery(t, realduck.OnLake(attach, "CREATE TABLE t"+string(rune('a'+i))+"(x INTEGER)", false))
	wd, err := workdir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "data_path " + spelling, Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatalf("push with data_path %s: %v", spelling, err)
	}
	return rec
}
