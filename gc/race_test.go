package gc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// TestGCChangesWhilePlanning: what changes between a plan and its
// application must not lose a version the repository now keeps. A policy
// changed meanwhile, or a branch created meanwhile that keeps a version the
// plan retires, stops gc after the floor moved and before anything is
// deleted (ErrRetentionConflict); the next gc takes those versions back into
// retention. The two cases share one history (History.Keep), restored
// before each.
func TestGCChangesWhilePlanning(t *testing.T) {
	kept := history.BuildReal(t, 6, history.ChurnSQL).Keep(t)
	t.Run("policy", func(t *testing.T) { policyChangedWhilePlanning(t, kept.Restore(t)) })
	t.Run("branch", func(t *testing.T) { branchCreatedWhilePlanning(t, kept.Restore(t)) })
}

// policyChangedWhilePlanning: keep-last 0 set while gc plans keep-last 2
// stops it; the floor is put back, and the next plan retires nothing. h
// has 6 versions (history.ChurnSQL).
func policyChangedWhilePlanning(t *testing.T, h *history.History) {
	ctx := context.Background()
	r := h.Repo
	if _, err := r.UpdatePolicy(ctx, keepLast(2)); err != nil {
		t.Fatal(err)
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil || len(plan.Retire) != 4 {
		t.Fatalf("plan: %v, retires %d", err, len(plan.Retire))
	}
	// Someone stops deletions while gc plans.
	if _, err := r.UpdatePolicy(ctx, keepLast(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Apply(ctx, r, plan); !errors.Is(err, repo.ErrRetentionConflict) || !strings.Contains(err.Error(), "the floor was put back") {
		t.Fatalf("apply after a policy change: %v", err)
	}
	if n := catalogsLeft(t, r, h.Recs); n != 6 {
		t.Fatalf("%d of 6 catalogs left after a refused gc", n)
	}
	// The floor is back: readers are not refused in the meantime.
	if ids, err := r.RetiredIDs(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("retired after a refused gc: %v %v", ids, err)
	}
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(t.TempDir(), "c"), Rev: string(h.Recs[0].ID)}); err != nil {
		t.Fatalf("checkout after a refused gc: %v", err)
	}
	again, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil || len(again.Retire) != 0 || again.FloorMoves {
		t.Fatalf("next plan: %v; retires %d, floor moves %v", err, len(again.Retire), again.FloorMoves)
	}
}

// branchCreatedWhilePlanning: a branch created while gc plans keeps a
// version the plan retires: gc stops, and the next gc keeps that version.
// h has 6 versions (history.ChurnSQL).
func branchCreatedWhilePlanning(t *testing.T, h *history.History) {
	ctx := context.Background()
	r := h.Repo
	if _, err := r.UpdatePolicy(ctx, keepLast(2)); err != nil {
		t.Fatal(err)
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A branch at main~1 keeps main~1 and main~2; the plan retires main~2.
	if _, err := r.CreateBranch(ctx, nil, "dev", "main~1"); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Apply(ctx, r, plan); !errors.Is(err, repo.ErrRetentionConflict) {
		t.Fatalf("apply after a new branch: %v", err)
	}
	if n := catalogsLeft(t, r, h.Recs); n != 6 {
		t.Fatalf("%d of 6 catalogs left after a refused gc", n)
	}
	again, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Apply(ctx, r, again); err != nil {
		t.Fatal(err)
	}
	if n := catalogsLeft(t, r, h.Recs); n != 3 {
		t.Fatalf("%d catalogs after gc, want main's last 2 and dev's second (3)", n)
	}
	if _, err := r.Store().Stat(ctx, repo.VersionKey(h.Recs[3].ID, version.CatalogFile)); err != nil {
		t.Fatalf("main~2, kept by dev: %v", err)
	}
	if rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// catalogsLeft counts the versions of recs whose catalog is in the store.
func catalogsLeft(t *testing.T, r *repo.Repo, recs []*version.Record) int {
	t.Helper()
	n := 0
	for _, rec := range recs {
		if _, err := r.Store().Stat(context.Background(), repo.VersionKey(rec.ID, version.CatalogFile)); err == nil {
			n++
		}
	}
	return n
}

// keepLast is a policy change to keep-last n.
func keepLast(n int) func(*retention.Policy) error {
	return func(p *retention.Policy) error { p.KeepLast = n; return nil }
}

// TestPushRefusesDataGCDeleted: a working catalog left uncommitted past the
// grace period names a data file gc deleted (listed by no catalog); commit
// works, but push refuses before uploading anything, naming the file, and
// the branch stays.
func TestPushRefusesDataGCDeleted(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	r := h.Repo
	writeUncommitted(t, h, 4242)
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(8 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.DataFiles) != 1 || plan.DataFiles[0].Reason != retention.ReasonUnlisted {
		t.Fatalf("plan deletes %+v, want the uncommitted file", plan.DataFiles)
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	wd, _ := workdir.Open(h.WD)
	if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "late", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	digest := testutil.TreeDigest(t, h.URL)
	_, err = wd.Push(ctx, workdir.PushOptions{})
	if !errors.Is(err, repo.ErrDataMissing) || !strings.Contains(err.Error(), plan.DataFiles[0].Key) {
		t.Fatalf("push naming a deleted file: %v", err)
	}
	if testutil.TreeDigest(t, h.URL) != digest {
		t.Fatal("a refused push changed the repository")
	}
	if head := mustHead(t, r); head != h.Recs[1].ID {
		t.Fatalf("main moved to %s", head)
	}
}

// TestGCDamagedLeavingCatalog: a version leaving retention whose catalog is
// damaged, or was deleted outside gc, does not stop gc: it is retired
// unread, with a warning; a damaged catalog in retention still stops gc.
func TestGCDamagedLeavingCatalog(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 4, history.ChurnSQL)
	r := h.Repo
	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	damage := func(id version.ID) {
		t.Helper()
		p := filepath.Join(h.URL, filepath.FromSlash(repo.VersionKey(id, version.CatalogFile)))
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("X"), 5000); err != nil {
			t.Fatal(err)
		}
	}
	damage(h.Recs[1].ID)
	if err := r.Store().Delete(ctx, repo.VersionKey(h.Recs[0].ID, version.CatalogFile)); err != nil {
		t.Fatal(err)
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(plan.Warnings, "\n")
	if len(plan.Retire) != 3 || !strings.Contains(joined, "already missing") || !strings.Contains(joined, "cannot be read") {
		t.Fatalf("retires %d; warnings:\n%s", len(plan.Retire), joined)
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	if rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	// The head's catalog damaged: gc refuses.
	damage(h.Recs[3].ID)
	if _, err := gc.MakePlan(ctx, r, gc.Options{}); !errors.Is(err, gc.ErrRefused) || !errors.Is(err, repo.ErrChecksum) {
		t.Fatalf("a damaged catalog in retention: %v", err)
	}
}

// TestGCPushWhilePlanning: a working catalog wrote a file long ago and
// commits and pushes it while gc runs, after gc planned to delete that file
// as listed by no catalog: gc reads the version that appeared and keeps the
// file. A policy change while gc plans stops it even when the floor does
// not move.
func TestGCPushWhilePlanning(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	r := h.Repo
	writeUncommitted(t, h, 777)
	later := gc.Options{Now: time.Now().Add(8 * 24 * time.Hour)}
	plan, err := gc.MakePlan(ctx, r, later)
	if err != nil || len(plan.DataFiles) != 1 {
		t.Fatalf("plan: %v; deletes %+v", err, plan.DataFiles)
	}
	file := plan.DataFiles[0].Key
	wd, _ := workdir.Open(h.WD)
	if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "late", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := gc.Apply(ctx, r, plan)
	if err != nil || res.Protected != 1 || res.DataFiles != 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if _, err := r.Store().Stat(ctx, file); err != nil {
		t.Fatalf("the pushed version's file: %v", err)
	}
	if rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}

	// A stray file, and the grace period raised while gc plans: gc stops.
	stray := "data/main/ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet" // a name DuckDB's ducklake writes
	if err := r.Store().Create(ctx, stray, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	plan, err = gc.MakePlan(ctx, r, later)
	if err != nil || plan.FloorMoves || len(plan.DataFiles) != 1 {
		t.Fatalf("plan: %v; floor moves %v; deletes %+v", err, plan.FloorMoves, plan.DataFiles)
	}
	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.Grace = retention.Duration(30 * 24 * time.Hour); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Apply(ctx, r, plan); !errors.Is(err, repo.ErrRetentionConflict) {
		t.Fatalf("apply after a policy change: %v", err)
	}
	if _, err := r.Store().Stat(ctx, stray); err != nil {
		t.Fatalf("stray file: %v", err)
	}
}

// writeUncommitted inserts one row (k) into h's working catalog without
// committing it: a new data file that no catalog in the store lists.
func writeUncommitted(t *testing.T, h *history.History, k int) {
	t.Helper()
	h.Write(t, fmt.Sprintf("INSERT INTO events VALUES (%d)", k))
}
