package gc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/repo"
)

// linkedRepo makes a folder repository, lets links prepare its folders
// before anything is written, then publishes n versions of one table, one
// file each.
func linkedRepo(t *testing.T, n int, links func(repoDir string)) (*repo.Repo, string) {
	t.Helper()
	h := history.BuildRealPrepared(t, n, func(i int) string {
		q := fmt.Sprintf("INSERT INTO t VALUES (%d)", i)
		if i == 1 {
			q = "CREATE TABLE t(id BIGINT); " + q
		}
		return q
	}, links)
	return h.Repo, h.URL
}

// TestGCSymlinks: on a folder store, a data/ folder that is a symbolic
// link (to a bigger disk), a folder inside data/ that is one, a link inside
// data/ that points out of the repository, and a hard link to a live file:
// gc deletes no file a version in retention reads and nothing outside the
// data folder, and verify --data checks the files behind the links.
func TestGCSymlinks(t *testing.T) {
	ctx := context.Background()
	later := time.Now().Add(30 * 24 * time.Hour) // every file past the grace period
	for _, tc := range []struct {
		name  string
		links func(t *testing.T, repoDir string)
	}{
		{"data is a link", func(t *testing.T, repoDir string) {
			disk := filepath.Join(t.TempDir(), "disk")
			mustMkdir(t, disk)
			os.RemoveAll(filepath.Join(repoDir, "data"))
			mustLink(t, disk, filepath.Join(repoDir, "data"))
		}},
		{"a folder inside data is a link", func(t *testing.T, repoDir string) {
			other := filepath.Join(t.TempDir(), "main")
			mustMkdir(t, other)
			mustMkdir(t, filepath.Join(repoDir, "data"))
			mustLink(t, other, filepath.Join(repoDir, "data", "main"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := linkedRepo(t, 3, func(d string) { tc.links(t, d) })
			before := dataKeys(t, r)
			if len(before) < 3 {
				t.Fatalf("data/ lists %v", before)
			}
			plan, err := gc.MakePlan(ctx, r, gc.Options{Now: later})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.DataFiles) != 0 || plan.Data.Outside != 0 {
				t.Fatalf("gc plans to delete %+v (%d rows outside); every file is live", plan.DataFiles, plan.Data.Outside)
			}
			rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
			if err != nil || !rep.OK() || rep.DataFiles != len(before) || rep.DataOutside != 0 {
				t.Fatalf("verify --data: %+v %v; want %d files checked, none outside", rep, err, len(before))
			}
		})
	}

	t.Run("links out of data and hard links", linksOutAndHardLinks)
}

// linksOutAndHardLinks: a link inside data/ to a folder outside the
// repository, and a hard link to a file a kept catalog reads: the plan
// deletes neither, with a warning each, and applying it leaves both.
func linksOutAndHardLinks(t *testing.T) {
	ctx := context.Background()
	later := time.Now().Add(30 * 24 * time.Hour) // every file past the grace period
	// Names of the kinds DuckDB's ducklake writes: gc would delete such
	// files as listed by no catalog, but for the links.
	const keep, copied = "ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet", "ducklake-01a23784-9317-7442-aa55-b1a2089a1831.parquet"
	outside := filepath.Join(t.TempDir(), "outside")
	mustMkdir(t, outside)
	if err := os.WriteFile(filepath.Join(outside, keep), []byte("not the repository's"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, url := linkedRepo(t, 2, func(d string) {
		mustMkdir(t, filepath.Join(d, "data"))
		mustLink(t, outside, filepath.Join(d, "data", "ext"))
	})
	var live string
	for _, k := range dataKeys(t, r) {
		if strings.HasPrefix(k, "data/main/") {
			live = k
		}
	}
	hard := "data/main/t/" + copied
	if err := os.Link(filepath.Join(url, filepath.FromSlash(live)), filepath.Join(url, filepath.FromSlash(hard))); err != nil {
		t.Fatal(err)
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.DataFiles) != 0 {
		t.Fatalf("gc plans to delete %+v", plan.DataFiles)
	}
	joined := strings.Join(plan.Warnings, "\n")
	if !strings.Contains(joined, "data/ext/"+keep+" is kept: through a symbolic link") || !strings.Contains(joined, hard+" is kept: it is the same file as") {
		t.Fatalf("warnings:\n%s", joined)
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(outside, keep), filepath.Join(url, filepath.FromSlash(hard))} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("gc deleted %s: %v", p, err)
		}
	}
	if !slices.Contains(dataKeys(t, r), live) {
		t.Fatal("the live file went")
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
