package repo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/storetest"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// seed makes a folder repository with one pushed version and a working
// directory with one more local commit, ready to push.
func seed(t *testing.T) (url string, base version.ID, wdDir string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	url = filepath.Join(dir, "repo")
	r, err := repo.Init(ctx, url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wdDir = filepath.Join(dir, "w")
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: wdDir})
	if err != nil {
		t.Fatal(err)
	}
	// The real DuckDB writes, through the line checkout printed (the
	// faults are the store's, not the catalog's).
	duck := realduck.Find(t, realduck.V15, "ducklake").Start(t)
	for i, msg := range []string{"base", "next"} {
		duck.MustQuery(t, realduck.OnLake(res.Attach, fmt.Sprintf("CREATE TABLE t%[1]d(x BIGINT); INSERT INTO t%[1]d SELECT i AS x FROM range(10) t(i)", i), false))
		wd, _ := workdir.Open(wdDir)
		rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: msg, Author: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
				t.Fatal(err)
			}
			base = rec.ID
		}
	}
	return url, base, wdDir
}

func openFaulty(t *testing.T, url string, f *storetest.Faulty) *repo.Repo {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	f.Store = st
	r, err := repo.OpenStore(context.Background(), f, url)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mainHead(t *testing.T, url string) version.ID {
	r, err := repo.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ref, err := r.Ref(context.Background(), refs.Name("refs/heads/main"))
	if err != nil {
		t.Fatal(err)
	}
	return ref.ID
}

// TestPushFaultAtEveryStoreCall fails each store call a push makes, one at
// a time: the push reports the error, main holds its old version, verify is
// clean; then a push without faults completes. The repository and working
// directory are seeded once and restored before each call's case, at the
// same path (a seed costs the real DuckDB and two commits).
func TestPushFaultAtEveryStoreCall(t *testing.T) {
	ctx := context.Background()
	// Count the calls a clean push makes.
	url, base, dir := seed(t)
	root, pristine := filepath.Dir(url), filepath.Join(t.TempDir(), "seed")
	testutil.RestoreTree(t, root, pristine)
	probe := &storetest.Faulty{}
	r := openFaulty(t, url, probe)
	opened := len(probe.Calls())
	wd, _ := workdir.OpenWith(dir, r)
	if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	calls := probe.Calls()[opened:]
	if len(calls) < 5 {
		t.Fatalf("a push made only %d store calls: %v", len(calls), calls)
	}
	for i := range calls {
		t.Run(fmt.Sprintf("call%d-%s", i, calls[i]), func(t *testing.T) {
			testutil.RestoreTree(t, pristine, root)
			f := &storetest.Faulty{}
			r := openFaulty(t, url, f)
			n := 0
			f.FailAt = func(op, key string) error {
				n++
				if n == i+1 {
					return storetest.ErrInjected
				}
				return nil
			}
			defer r.Close()
			wd, _ := workdir.OpenWith(dir, r)
			_, err := wd.Push(ctx, workdir.PushOptions{})
			head := mainHead(t, url)
			switch {
			case err == nil:
				// Some calls are reads whose failure is tolerated (a
				// re-read after the ref moved): then the push is complete.
				if head == base {
					t.Fatalf("push reported success but main did not move")
				}
			case !errors.Is(err, storetest.ErrInjected):
				t.Fatalf("push error %v does not carry the injected fault", err)
			case head != base:
				t.Fatalf("failed push moved main to %s", head)
			}
			r2, _ := repo.Open(ctx, url)
			defer r2.Close()
			if rep, err := r2.Verify(ctx, repo.VerifyOptions{}); err != nil || !rep.OK() {
				t.Fatalf("verify after fault: %+v %v", rep, err)
			}
			wd, _ = workdir.Open(dir)
			if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
				t.Fatalf("push after fault: %v", err)
			}
			if mainHead(t, url) == base {
				t.Fatal("main did not move on the retry")
			}
		})
	}
}

// TestPushConflictThatSucceeded: the store applies the ref move but
// reports a conflict (a retried request answering 412): push reads the ref
// again, finds its own id and reports success.
func TestPushConflictThatSucceeded(t *testing.T) {
	ctx := context.Background()
	url, base, dir := seed(t)
	f := &storetest.Faulty{FailAfter: func(op, key string) error {
		if op == storetest.OpSwap && key == "refs/heads/main" {
			return store.ErrConflict
		}
		return nil
	}}
	r := openFaulty(t, url, f)
	defer r.Close()
	wd, _ := workdir.OpenWith(dir, r)
	res, err := wd.Push(ctx, workdir.PushOptions{})
	if err != nil {
		t.Fatalf("push whose ref move succeeded but reported a conflict: %v", err)
	}
	if res.New == base || mainHead(t, url) != res.New {
		t.Fatalf("main %s, pushed %s", mainHead(t, url), res.New)
	}
}

// TestPushCleanupRefused: a push refused after its uploads (here a data
// file of the version is missing) whose credentials may write but not
// delete (S3's AccessDenied on every delete) still ends as a refused push
// does, with its kind, and says what it left and that gc deletes it.
func TestPushCleanupRefused(t *testing.T) {
	ctx := context.Background()
	url, base, dir := seed(t)
	wd, err := workdir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := wd.PendingVersions()
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending %v %v", pending, err)
	}
	// A data file the pending version adds, gone from the store.
	var gone string
	filepath.WalkDir(filepath.Join(url, "data"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "/t1/") {
			gone = p
		}
		return nil
	})
	if gone == "" {
		t.Fatal("no data file of table t1")
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	denied := &store.AuthError{Store: "s3", Location: url, Op: "delete", Reason: store.AuthDenied, Code: "AccessDenied"}
	f := &storetest.Faulty{FailAt: func(op, key string) error {
		if op == storetest.OpDelete {
			return denied
		}
		return nil
	}}
	r := openFaulty(t, url, f)
	defer r.Close()
	wd, _ = workdir.OpenWith(dir, r)
	_, err = wd.Push(ctx, workdir.PushOptions{})
	var left *repo.LeftoverError
	if !errors.Is(err, repo.ErrDataMissing) || !errors.As(err, &left) || left.Failed == 0 || !strings.Contains(err.Error(), "gc deletes them") {
		t.Fatalf("push = %v, want a refusal (data missing) that names its leftovers for gc", err)
	}
	if head := mainHead(t, url); head != base {
		t.Fatalf("main moved to %s", head)
	}
	// What it could not delete stays, reached by no ref.
	r2, _ := repo.Open(ctx, url)
	defer r2.Close()
	if _, err := r2.Store().Stat(ctx, repo.VersionKey(pending[0].Record.ID, version.RecordFile)); err != nil {
		t.Fatalf("the record it could not delete: %v", err)
	}
}
