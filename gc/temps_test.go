package gc_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/repo"
)

// TestGCTempLeftovers: a folder store's temporary files left by writes a
// crash interrupted (".tmp-*" beside a data file or inside a version
// folder) are invisible to List; verify lists them as notes, and gc deletes
// those older than the grace period and leaves younger ones (a write may
// be in progress). Nothing else changes.
func TestGCTempLeftovers(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	r := h.Repo
	old := time.Now().Add(-8 * 24 * time.Hour)
	place := func(rel string, mod time.Time) string { return placeTemp(t, h.URL, rel, mod) }
	keys := dataKeys(t, r)
	oldData := place(filepath.ToSlash(filepath.Dir(keys[0]))+"/.tmp-killed1", old)
	oldVersion := place(repo.VersionKey(h.Recs[0].ID, ".tmp-killed2"), old)
	young := place(repo.VersionKey(h.Recs[1].ID, ".tmp-inprogress"), time.Now())
	// A push killed during its ref's compare-and-swap or its ref log entry.
	oldRef := place("refs/heads/.tmp-killed3", old)
	oldLog := place("logs/refs/heads/main/.tmp-killed4", old)

	checkTempNotes(t, r, []string{oldData, oldVersion, young, oldRef, oldLog})

	digest := testutil.TreeDigest(t, h.URL)
	plan, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if testutil.TreeDigest(t, h.URL) != digest {
		t.Fatal("the plan changed the repository")
	}
	var planned []string
	for _, f := range plan.Temps {
		planned = append(planned, f.Key)
	}
	slices.Sort(planned)
	wantPlanned := []string{oldData, oldVersion, oldRef, oldLog}
	slices.Sort(wantPlanned)
	if !slices.Equal(planned, wantPlanned) || plan.YoungTemps != 1 || plan.Empty() || plan.Totals.TempBytes != 4*int64(len("half a catalog")) {
		t.Fatalf("plan temps %v (young %d, bytes %d), want %v and 1 young", planned, plan.YoungTemps, plan.Totals.TempBytes, wantPlanned)
	}
	res, err := gc.Apply(ctx, r, plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Temps != 4 {
		t.Fatalf("result %+v", res)
	}
	for _, rel := range []string{oldData, oldVersion, oldRef, oldLog} {
		if _, err := os.Stat(filepath.Join(h.URL, filepath.FromSlash(rel))); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", rel, err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.URL, filepath.FromSlash(young))); err != nil {
		t.Errorf("the young temporary file went: %v", err)
	}
	if !slices.Equal(dataKeys(t, r), keys) {
		t.Fatal("gc of temporary files changed data/")
	}
	if rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true}); err != nil || !rep.OK() {
		t.Fatalf("verify after gc: %+v %v", rep, err)
	}

	// RemoveTemp refuses anything but a temporary file.
	tc := r.Store().(store.TempCleaner)
	if err := tc.RemoveTemp(ctx, keys[0]); err == nil {
		t.Fatal("RemoveTemp deleted a data file")
	}
	if _, err := os.Stat(filepath.Join(h.URL, filepath.FromSlash(keys[0]))); err != nil {
		t.Fatalf("data file: %v", err)
	}
}

// placeTemp writes a temporary file of an interrupted write ("half a
// catalog") at rel under the folder repository root, modified at mod, and
// returns rel.
func placeTemp(t *testing.T, root, rel string, mod time.Time) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("half a catalog"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
	return rel
}

// checkTempNotes checks that verify finds no problem in r and notes
// exactly the temporary files want (CodeTempLeftover).
func checkTempNotes(t *testing.T, r *repo.Repo, want []string) {
	t.Helper()
	rep, err := r.Verify(context.Background(), repo.VerifyOptions{SkipCatalogs: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("leftovers are not problems: %+v", rep.Problems)
	}
	var noted []string
	for _, n := range rep.Notes {
		if n.Code == repo.CodeTempLeftover {
			noted = append(noted, n.Object)
		}
	}
	slices.Sort(noted)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(noted, want) {
		t.Fatalf("verify notes %v, want %v", noted, want)
	}
}
