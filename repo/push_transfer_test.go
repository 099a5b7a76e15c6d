package repo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// pushSetup is a folder repository with one version and a working
// directory (at wd, which may be on another file system) holding one
// local commit that adds files new data files to table events.
type pushSetup struct {
	r      *repo.Repo
	url    string
	wd     *workdir.Workdir
	commit *version.Record
	added  []string // store keys of the data files the commit adds
}

func newPushSetup(t *testing.T, wdDir string, files int) *pushSetup {
	t.Helper()
	ctx := context.Background()
	s := &pushSetup{url: filepath.Join(t.TempDir(), "repo")}
	r, err := repo.Init(ctx, s.url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	s.r = r
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: wdDir})
	if err != nil {
		t.Fatal(err)
	}
	// The real DuckDB writes, through the line checkout printed.
	duck := realduck.Find(t, realduck.V15, "ducklake").Start(t)
	write := func(sql string) { duck.MustQuery(t, realduck.OnLake(res.Attach, sql, false)) }
	commit := func(msg string) *version.Record {
		wd, err := workdir.Open(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: msg, Author: "t"})
		if err != nil {
			t.Fatal(err)
		}
		s.wd = wd
		return rec
	}
	write("CREATE TABLE events(k INTEGER)")
	commit("first")
	if _, err := s.wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	// One insert a statement: one data file each.
	var inserts []string
	for i := range files {
		inserts = append(inserts, fmt.Sprintf("INSERT INTO events VALUES (%d)", i))
	}
	write(strings.Join(inserts, ";\n"))
	s.commit = commit("many files")
	c, err := ducklake.Open(ctx, s.wd.LocalCatalog(s.commit.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all, err := c.DataFilesSince(ctx, s.commit.DuckLake.Adds.First)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		key, ok := strings.CutPrefix(f.ResolvedPath, filepath.ToSlash(s.url)+"/")
		if !ok {
			t.Fatalf("data file %s outside the repository %s", f.ResolvedPath, s.url)
		}
		s.added = append(s.added, key)
	}
	if len(s.added) != files {
		t.Fatalf("the commit adds %d files, want %d", len(s.added), files)
	}
	return s
}

// TestPushDataCheckListing: with more new files than the data check Stats
// one by one, it lists the store instead, and still finds the one file of
// many that is missing (deleted from the store after the working catalog
// wrote it): the push is refused naming it, the repository is unchanged
// (no catalog, no folder), and once the file is back the push succeeds.
func TestPushDataCheckListing(t *testing.T) {
	ctx := context.Background()
	defer repo.SetStatMaxKeys(3)()
	s := newPushSetup(t, filepath.Join(t.TempDir(), "w"), 9)
	gone := s.added[4]
	path := filepath.Join(s.url, filepath.FromSlash(gone))
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	digest := testutil.TreeDigest(t, s.url)
	_, err = s.wd.Push(ctx, workdir.PushOptions{})
	var dm *repo.DataMissingError
	if !errors.As(err, &dm) || dm.Count != 1 || len(dm.Missing) != 1 || dm.Missing[0] != gone {
		t.Fatalf("push with %s missing: %v (%+v)", gone, err, dm)
	}
	if testutil.TreeDigest(t, s.url) != digest {
		t.Fatal("a refused push changed the repository")
	}
	if err := os.WriteFile(path, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatalf("push with every file there: %v", err)
	}
	if rep, err := s.r.Verify(ctx, repo.VerifyOptions{Data: true}); err != nil || !rep.OK() {
		t.Fatalf("verify --data after the push: %+v %v", rep, err)
	}
}

// TestPushLinksCatalog: where the working directory and a folder store
// share a file system, the pushed catalog is the committed file itself (a
// hard link, no second copy), read-only, and matches its record; the
// local name is removed after the ref move, leaving the store's the only
// one.
func TestPushLinksCatalog(t *testing.T) {
	ctx := context.Background()
	s := newPushSetup(t, filepath.Join(t.TempDir(), "w"), 2)
	local := s.wd.LocalCatalog(s.commit.ID)
	stored := filepath.Join(s.url, filepath.FromSlash(repo.VersionKey(s.commit.ID, version.CatalogFile)))
	before, err := os.Stat(local)
	if err != nil {
		t.Fatal(err)
	}
	sameAtRefMove := false
	s.wd = reopenWithStep(t, s.wd.Dir, func(step string) {
		if step == "push:state" { // after the ref move, before the local copy goes
			fi, err := os.Stat(stored)
			sameAtRefMove = err == nil && os.SameFile(fi, before)
		}
	})
	if _, err := s.wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if !sameAtRefMove {
		t.Error("the stored catalog is not the committed file (it was copied)")
	}
	fi, err := os.Stat(stored)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o444 {
		t.Errorf("stored catalog mode %v, want 0444", fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		t.Errorf("stored catalog has %d names after the push, want 1", st.Nlink)
	}
	if _, err := os.Stat(local); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("local copy after the push: %v", err)
	}
	if err := s.r.CheckCatalog(ctx, s.commit); err != nil {
		t.Fatal(err)
	}
}

// TestPushCopiesAcrossFileSystems: a working directory on another file
// system than the folder store gets its catalog copied (hashed as it is
// copied): a separate file, matching its record.
func TestPushCopiesAcrossFileSystems(t *testing.T) {
	ctx := context.Background()
	s := newPushSetup(t, filepath.Join(testutil.OtherFileSystem(t), "w"), 2)
	local := s.wd.LocalCatalog(s.commit.ID)
	before, err := os.Stat(local)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join(s.url, filepath.FromSlash(repo.VersionKey(s.commit.ID, version.CatalogFile)))
	fi, err := os.Stat(stored)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(fi, before) {
		t.Fatal("a catalog on another file system was linked")
	}
	if err := s.r.CheckCatalog(ctx, s.commit); err != nil {
		t.Fatal(err)
	}
}

// TestPushRefusesChangedLocalCatalog: a local catalog changed after commit
// is refused with a checksum error naming it, on the link path and on the
// copy path, and nothing reaches the store: grown, and overwritten in
// place with its size and modification time put back (commit's stamp
// still differs in the change time, so the link path hashes it again).
func TestPushRefusesChangedLocalCatalog(t *testing.T) {
	changes := map[string]func(t *testing.T, path string){
		"appended": func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte{0})
			f.Close()
		},
		"overwritten, same size and mtime": func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, 0o644)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("changed"), fi.Size()-64); err != nil {
				t.Fatal(err)
			}
			f.Close()
			os.Chmod(path, 0o444)
			if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
	}
	for _, where := range []string{"same file system", "other file system"} {
		for name, change := range changes {
			t.Run(where+"/"+name, func(t *testing.T) {
				ctx := context.Background()
				base := t.TempDir()
				if where == "other file system" {
					base = testutil.OtherFileSystem(t)
				}
				s := newPushSetup(t, filepath.Join(base, "w"), 1)
				local := s.wd.LocalCatalog(s.commit.ID)
				if fi, err := os.Stat(local); err != nil || fi.Mode().Perm() != 0o444 {
					t.Fatalf("commit left the local catalog %v (%v), want mode 0444", fi.Mode(), err)
				}
				change(t, local)
				digest := testutil.TreeDigest(t, s.url)
				_, err := s.wd.Push(ctx, workdir.PushOptions{})
				var ce *repo.ChecksumError
				if !errors.As(err, &ce) || ce.Location != local {
					t.Fatalf("push of a changed local catalog: %v", err)
				}
				if testutil.TreeDigest(t, s.url) != digest {
					t.Fatal("a refused push changed the repository")
				}
			})
		}
	}
}

// reopenWithStep opens the working directory dir again, its repository
// to be opened with a Step hook.
func reopenWithStep(t *testing.T, dir string, step func(string)) *workdir.Workdir {
	t.Helper()
	w, err := workdir.Open(dir, repo.Options{Step: step})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}
