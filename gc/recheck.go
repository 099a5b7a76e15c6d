package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// recheck runs once the floor holds what the plan wrote and the deletion
// intent is written, before anything is deleted: it reads again what
// pushes and ref moves announce (refs, ref log entries, version folders;
// docs/spec.md §16.1), so that what changed while gc planned
// never loses a version the repository now keeps or a file it reads:
//   - recheckAfterFloor: the policy, every ref, every branch moved since
//     the plan (stop, nothing deleted);
//   - every ref move in progress (refs.PendingMoves over the plan's ref log
//     entries and those written since): one to a version the floor retires
//     stops gc (StopMoveToRetired); the others' versions, the versions of
//     ref moves completed since the plan (a push that finished between
//     plan and apply), and the
//     unreached folders of their first-parent history that the plan
//     abandons, keep their objects (protectPending);
//   - the catalogs of the folders that appeared since the plan and of the
//     versions of moves in progress: the data files they list are not
//     deleted (protectNewVersions).
func recheck(ctx context.Context, r *repo.Repo, p *Plan, floor *retention.Floor) error {
	now, err := recheckAfterFloor(ctx, r, p, floor)
	if err != nil {
		return err
	}
	newer, bad, err := r.Refs().LogNewer(ctx, func(key string) bool { _, ok := p.logs[key]; return ok })
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: a ref log entry written while gc ran does not parse, and it may protect versions: %w", ErrRefused, errors.Join(bad...))
	}
	all := make([]refs.LogEntry, 0, len(p.logs)+len(newer))
	for _, e := range p.logs {
		all = append(all, e)
	}
	all = append(all, newer...)
	var pending []version.ID
	for _, e := range refs.PendingMoves(all, now) {
		if floor.Has(e.New) && !p.marked[e.New] {
			return &StopError{Why: StopMoveToRetired, Ref: e.Ref, Version: e.New, Generation: floor.Generation, Err: repo.ErrRetentionConflict}
		}
		pending = append(pending, e.New)
	}
	// A move that completed since the plan is no longer in progress, but the
	// plan read its version as it was then (uploading, or a folder no ref
	// reached: abandoned, its catalog unread): its objects and files are
	// kept the same way (recheckAfterFloor already stopped gc if the floor
	// retires it).
	for name, id := range now {
		if p.refs[name] != id {
			pending = append(pending, id)
		}
	}
	keep, err := protectPending(ctx, r, p, pending)
	if err != nil {
		return err
	}
	return protectNewVersions(ctx, r, p, keep)
}

// protectPending takes out of the plan's abandoned folders the versions
// of ref moves in progress and the folders of their first-parent history
// that the plan abandons (a push uploads a chain of versions, and may have
// been paused past the grace period). It returns the versions whose
// catalogs protectNewVersions must read besides the new folders: the
// pending ones that the plan did not read as catalogs in retention.
func protectPending(ctx context.Context, r *repo.Repo, p *Plan, pending []version.ID) ([]version.ID, error) {
	abandoned := map[version.ID]bool{}
	for _, a := range p.Abandoned {
		abandoned[a.ID] = true
	}
	keep := map[version.ID]bool{}
	var read []version.ID
	for _, id := range pending {
		if _, live := p.Live[id]; !live && p.known[id] {
			read = append(read, id)
		}
		for cur := id; cur != "" && !keep[cur]; {
			keep[cur] = true
			if !abandoned[cur] && cur != id {
				break
			}
			if abandoned[cur] && cur != id {
				read = append(read, cur)
			}
			rec, err := r.Record(ctx, cur)
			if err != nil {
				break // not a complete version: nothing further up to keep
			}
			cur = rec.Parent()
		}
	}
	kept := p.Abandoned[:0]
	for _, a := range p.Abandoned {
		if keep[a.ID] {
			continue
		}
		kept = append(kept, a)
	}
	p.Abandoned = kept
	slices.Sort(read)
	return slices.Compact(read), nil
}
