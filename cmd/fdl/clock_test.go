package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// TestCommitWarnsOfClockSkew: a commit on a machine whose clock is behind
// the one that made the parent gives the version the parent's created_at
// (created_at never goes back along parents) and says so, instead of
// setting a time from the future silently.
func TestCommitWarnsOfClockSkew(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := filepath.Join(dir, "repo")
	r, err := repo.Init(ctx, url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a := filepath.Join(dir, "a")
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: a}); err != nil {
		t.Fatal(err)
	}
	duckWrite(t, duckSession(t), a, "CREATE TABLE t(x INTEGER)")
	w, err := workdir.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	// The parent, made by a machine whose clock runs an hour ahead.
	future := func() time.Time { return time.Now().Add(time.Hour) }
	if _, err := w.Commit(ctx, workdir.CommitOptions{Message: "from the future", Author: "t", Now: future}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	duckWrite(t, duckSession(t), a, "INSERT INTO t VALUES (1)")
	code, out := fdlProc(t, nil, "-C", a, "commit", "-m", "now")
	if code != 0 || !strings.Contains(out, "this machine's clock is") || !strings.Contains(out, "behind the one that made version") {
		t.Fatalf("commit behind the parent's clock: exit %d\n%s", code, out)
	}
	code, out = fdlProc(t, nil, "-C", a, "push")
	if code != 0 {
		t.Fatalf("push: exit %d\n%s", code, out)
	}
	// No skew, no warning.
	url2, _ := newRepoWithBase(t)
	b := filepath.Join(dir, "b")
	mustFdl(t, "checkout", url2, b, "--catalog-format", "duckdb")
	duckWrite(t, duckSession(t), b, "INSERT INTO base VALUES (100)")
	if _, out := fdlProc(t, nil, "-C", b, "commit", "-m", "later"); strings.Contains(out, "clock") {
		t.Fatalf("a commit with its parent's time in the past warned:\n%s", out)
	}
}
