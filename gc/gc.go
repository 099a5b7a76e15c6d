// Package gc is fdl's garbage collection (docs/spec.md §16): it plans,
// writing nothing, what the retention policy lets go — the floor's move,
// the versions leaving retention, the data files no catalog in retention
// reads, abandoned uploads, temporary files of interrupted writes, the
// history packs to write and delete — and carries the plan out in five
// resumable steps, under a deletion intent a push reads (§16.1).
//
// What goes is retention's decision (package retention: Decide,
// DataPlanner); gc reads the repository's listings and state through
// package repo (Repo.RetentionInput, Repo.CatalogDataFiles, …) and
// carries the decision out: it moves the floor with Repo.SwapFloor, writes
// markers with Repo.WriteMarker and deletes only through
// Repo.DeleteGarbage, which refuses any key outside data/, versions/ and
// index/packs/. The deletion intent's format is retention's and its
// reading repo's (a push reads intents too); writing, renewing and
// dropping gc's own intent is this package's (intent.go).
//
// Run is the command ('fdl gc'); MakePlan and Apply are its two halves.
// Files: gc.go (Run), plan.go (MakePlan and the Plan), apply.go (Apply,
// Excise), recheck.go (what changed while gc planned), packs.go (history
// packs), intent.go (the deletion intent), errors.go.
//
// The package never prints and never imports cobra or lipgloss.
package gc

import (
	"context"
	"fmt"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/repo"
)

// Options tune MakePlan and Run.
type Options struct {
	// Now is the time the policy and grace period are measured from
	// (default: time.Now).
	Now time.Time
	// Workers is how many catalogs are read at once (default: one per CPU,
	// at most 4).
	Workers int
	// Apply makes Run carry the plan out (Apply); without it Run only
	// plans.
	Apply bool
	// Planned, if set, is called by Run with the plan before it is applied
	// (the CLI prints it then, so a person sees it while gc deletes).
	Planned func(*Plan)
}

// Report is what Run planned and, with Options.Apply, did. Its JSON is
// 'fdl gc --json'.
type Report struct {
	Plan   *Plan   `json:"plan"`
	Result *Result `json:"result,omitempty"`
}

// Run plans gc on repository r (MakePlan) and, with o.Apply, applies the
// plan (Apply; an empty plan is not applied: its result says nothing was
// done). On an error while applying, the report holds the plan and what
// was done so far. Errors as MakePlan and Apply, and store.ErrReadOnly
// (nothing planned) for o.Apply on a store that is never written
// (store.ReadOnly).
func Run(ctx context.Context, r *repo.Repo, o Options) (*Report, error) {
	if o.Apply && r.ReadOnly() {
		// Refused before planning: a plan it cannot carry out is no help.
		return nil, fmt.Errorf("repository %s: %w: applying gc deletes files, and this store is never written (http(s)); apply it on the repository's own location (a folder, s3://, gs:// or azblob://)", r.Where(), store.ErrReadOnly)
	}
	plan, err := MakePlan(ctx, r, o)
	if err != nil {
		return nil, err
	}
	rep := &Report{Plan: plan}
	if o.Planned != nil {
		o.Planned(plan)
	}
	switch {
	case o.Apply && plan.Empty():
		rep.Result = &Result{Floor: plan.FloorGeneration} // nothing done
	case o.Apply:
		rep.Result, err = Apply(ctx, r, plan)
	}
	return rep, err
}
