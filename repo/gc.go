package repo

import (
	"context"
	"fmt"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
)

// gc, the command: plan (gc_plan.go), then apply (gc_apply.go); and the
// temporary files of interrupted writes both look at. The retention state
// gc reads and moves — policy, floor, markers — is in retention.go.

// GCOptions tune PlanGC and GC.
type GCOptions struct {
	// Now is the time the policy and grace period are measured from
	// (default: time.Now).
	Now time.Time
	// Workers is how many catalogs are read at once (default: one per CPU,
	// at most 4).
	Workers int
	// Apply makes GC carry the plan out (ApplyGC); without it GC only
	// plans.
	Apply bool
	// Planned, if set, is called by GC with the plan before it is applied
	// (the CLI prints it then, so a person sees it while gc deletes).
	Planned func(*GCPlan)
}

// GCRun is what GC planned and, with GCOptions.Apply, did. Its JSON is
// 'fdl gc --json'.
type GCRun struct {
	Plan   *GCPlan   `json:"plan"`
	Result *GCResult `json:"result,omitempty"`
}

// GC plans (PlanGC) and, with o.Apply, applies the plan (ApplyGC; an
// empty plan is not applied: its result says nothing was done). On an
// error while applying, the run holds the plan and what was done so far.
// Errors as PlanGC and ApplyGC, and store.ErrReadOnly (nothing planned)
// for o.Apply on a store that is never written (store.ReadOnly).
func (r *Repo) GC(ctx context.Context, o GCOptions) (*GCRun, error) {
	if o.Apply && store.IsReadOnly(r.st) {
		// Refused before planning: a plan it cannot carry out is no help.
		return nil, fmt.Errorf("repository %s: %w: applying gc deletes files, and this store is never written (http(s)); apply it on the repository's own location (a folder, s3://, gs:// or azblob://)", r.Where(), store.ErrReadOnly)
	}
	plan, err := r.PlanGC(ctx, o)
	if err != nil {
		return nil, err
	}
	run := &GCRun{Plan: plan}
	if o.Planned != nil {
		o.Planned(plan)
	}
	switch {
	case o.Apply && plan.Empty():
		run.Result = &GCResult{Floor: plan.FloorGeneration} // nothing done
	case o.Apply:
		run.Result, err = r.ApplyGC(ctx, plan)
	}
	return run, err
}
