package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// TestLocalDataOnObjectStore: on a repository in an object store (S3, GCS,
// Azure), a version whose data files are read by a local path (a data_path
// of this machine's disk) is one no reader of the bucket can read: push
// refuses to publish it (nothing uploaded), and verify reports a version
// already there that does (data-local-path), with and without --data.
func TestLocalDataOnObjectStore(t *testing.T) {
	for _, c := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"s3", func(t *testing.T) string { return cloudtest.S3(t) }},
		{"gcs", func(t *testing.T) string { return cloudtest.WithPrefix(cloudtest.FakeGCS(t), t.Name()) }},
		{"azure", func(t *testing.T) string { return cloudtest.Azure(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			url, base := newRepoWithBaseAt(t, c.url(t))
			verifyClean(t, url) // the staged writes put the data in the bucket
			r, err := repo.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			dir := filepath.Join(t.TempDir(), "w")
			if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: dir}); err != nil {
				t.Fatal(err)
			}
			local := filepath.Join(t.TempDir(), "localdata")
			db, err := sql.Open("duckdb", filepath.Join(dir, workdir.CatalogName))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("UPDATE ducklake_metadata SET value = " + sqlquote.String(filepath.ToSlash(local)+"/") + " WHERE key = 'data_path'"); err != nil {
				t.Fatal(err)
			}
			db.Close()
			duckWrite(t, duckSession(t), dir, "INSERT INTO base VALUES (100)")
			mustFdl(t, "-C", dir, "commit", "-m", "local data")
			before := testutil.TreeDigest(t, filepath.Join(dir, ".fdl"))
			code, out := fdlProc(t, nil, "--json", "-C", dir, "push")
			if code != exitError || !strings.Contains(out, `"kind":"data_local"`) || !strings.Contains(out, local) {
				t.Fatalf("push of a version reading local files to %s: exit %d\n%s", c.name, code, out)
			}
			if head := branchHead(t, url); head != base {
				t.Fatalf("main moved to %s", head)
			}
			if testutil.TreeDigest(t, filepath.Join(dir, ".fdl")) != before {
				t.Fatal("the refused push changed the working directory")
			}
			// A version that got there anyway (an older fdl pushed it):
			// copy the local version's objects and point main at it.
			wd, err := workdir.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			pending, err := wd.PendingVersions()
			if err != nil || len(pending) != 1 {
				t.Fatalf("pending: %v %v", pending, err)
			}
			id := pending[0].Record.ID
			st := r.Store()
			for _, f := range []string{"ducklake.duckdb", "dataset.json", "version.json"} {
				b, err := os.ReadFile(filepath.Join(pending[0].Dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Create(ctx, repo.VersionKey(id, f), bytes.NewReader(b)); err != nil {
					t.Fatal(err)
				}
			}
			mustFdl(t, "--repo", url, "branch", "-f", "main", string(id))
			for _, args := range [][]string{{"verify"}, {"verify", "--data"}} {
				code, out := fdlProc(t, nil, append([]string{"--repo", url}, args...)...)
				if code != exitError || !strings.Contains(out, "data-local-path") {
					t.Errorf("%v of a version reading local files on %s: exit %d\n%s", args, c.name, code, out)
				}
			}
		})
	}
}
