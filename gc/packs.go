package gc

import (
	"context"
	"fmt"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// gc's history packs (docs/spec.md §18): the plan lists the packs missing
// on the history of every ref (the versions a walk from the ref jumps to)
// and the packs of versions that are gone; the last step writes the
// former and deletes the latter. Abandoned versions lose their pack with
// them (deleteAbandoned).

// planPacks fills plan.Packs (the missing packs to write, oldest first)
// and plan.PackOrphans (packs whose version folder is gone, older than the
// grace period) from one listing of index/packs/ and the records read for
// the plan (Repo.RetentionInput); the versions with no pack are told to
// the repository's history reader (history.Reader.Absent), so building
// the missing packs looks for none of them.
func planPacks(ctx context.Context, r *repo.Repo, plan *Plan, in *retention.Input) error {
	have := map[version.ID]bool{}
	plan.Packs, plan.PackOrphans = []version.ID{}, []store.ObjectInfo{}
	err := r.Store().List(ctx, history.PacksPrefix, func(o store.ObjectInfo) error {
		id, ok := history.IDFromKey(o.Key)
		if !ok {
			return nil // not a pack: gc leaves it alone
		}
		have[id] = true
		if in.Versions[id] == nil && !retention.Young(plan.Now, o.ModTime, in.Policy.Grace) {
			plan.PackOrphans = append(plan.PackOrphans, o)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list history packs: %w", err)
	}
	for id, v := range in.Versions {
		if !have[id] {
			r.HistoryReader().Absent(id) // no need to look for it while building
		} else if v.Record == nil {
			delete(have, id)
		}
	}
	seen := map[version.ID]bool{}
	for _, ref := range in.Refs {
		jumps := r.Jumps(ctx, ref.ID)
		for i := len(jumps) - 1; i >= 0; i-- {
			if id := jumps[i]; !have[id] && !seen[id] {
				seen[id] = true
				plan.Packs = append(plan.Packs, id)
			}
		}
	}
	return nil
}

// updatePacks is gc's last step: it deletes the packs of versions that are
// gone and writes the missing packs of every ref's history, each built
// from the packs below it or the records gc read.
func (c *collector) updatePacks(ctx context.Context, p *Plan, _ *retention.Floor, res *Result) error {
	for _, o := range p.PackOrphans {
		c.step("gc:pack")
		if err := c.delete(ctx, o.Key); err != nil {
			return err
		}
		res.PacksDeleted++
	}
	w := c.r.HistoryReader().Writer()
	w.Step = func(string) { c.step("gc:pack") }
	for _, id := range p.Packs {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := c.r.Entry(ctx, id)
		if err != nil {
			return err
		}
		wrote, err := w.Write(ctx, e, history.NoBudget)
		if err != nil {
			return err
		}
		if wrote {
			res.PacksWritten++
		}
	}
	return nil
}
