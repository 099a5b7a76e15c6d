package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/internal/store"
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

// recheckAfterFloor is the first part of recheck: it stops gc
// (repo.ErrRetentionConflict, nothing deleted; the next gc takes such versions
// back into retention) when retention/policy.json changed since the plan
// read it, when a ref points at a version the floor retires, or when a
// branch created or moved since the plan keeps a retired version among its
// last keep_last versions. It returns what every ref holds now.
func recheckAfterFloor(ctx context.Context, r *repo.Repo, p *Plan, floor *retention.Floor) (map[refs.Name]version.ID, error) {
	if _, tok, err := r.Policy(ctx); err != nil {
		return nil, err
	} else if tok != p.policyTok {
		return nil, &StopError{Why: StopPolicyChanged, Key: retention.PolicyKey, Err: repo.ErrRetentionConflict}
	}
	good, bad, err := r.Refs().List(ctx, "refs/")
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: a ref cannot be read, and it may protect versions: %w", ErrRefused, errors.Join(bad...))
	}
	now := map[refs.Name]version.ID{}
	for _, ref := range good {
		now[ref.Name] = ref.ID
	}
	if len(floor.RetiredList()) == 0 {
		return now, nil
	}
	for _, ref := range good {
		if floor.Has(ref.ID) && !p.marked[ref.ID] {
			return nil, &StopError{Why: StopRefOnRetired, Ref: ref.Name, Version: ref.ID, Generation: floor.Generation, Err: ErrAheadOfFloor}
		}
		if !ref.Name.IsBranch() || p.refs[ref.Name] == ref.ID {
			continue
		}
		id := ref.ID
		for range p.Policy.KeepLast {
			if id == "" {
				break
			}
			if floor.Has(id) && !p.marked[id] {
				return nil, &StopError{Why: StopBranchKeepsRetired, Ref: ref.Name, Version: id, KeepLast: p.Policy.KeepLast, Generation: floor.Generation, Err: repo.ErrRetentionConflict}
			}
			rec, err := r.Record(ctx, id)
			if err != nil {
				return nil, err
			}
			id = rec.Parent()
		}
	}
	return now, nil
}

// restoreFloor undoes gc's own floor move when gc stops right after it
// (recheckAfterFloor): nothing is marked or deleted yet, so a new floor
// with old's retirements (none when there was no floor) is safe, and it
// spares readers a window where versions gc will keep are refused. One
// compare-and-swap from the token of gc's move; false when another writer
// moved the floor since (then the next gc sorts it out).
func restoreFloor(ctx context.Context, r *repo.Repo, moved *retention.Floor, movedTok store.Token, old *retention.Floor) bool {
	back := retention.Floor{Format: retention.Format, Generation: moved.Generation + 1, MovedAt: time.Now().UTC().Truncate(time.Second),
		MovedBy: r.Actor(), Policy: moved.Policy, Branches: []retention.BranchFloor{}, Retired: []retention.Retirement{}}
	if old != nil {
		back.Policy, back.Branches, back.Retired = old.Policy, old.Branches, old.Retired
	}
	_, err := r.SwapFloor(ctx, movedTok, &back)
	return err == nil
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

// protectNewVersions is the last part of recheck: a version folder that
// appeared since the plan (a push, complete or still uploading), and the
// versions of ref moves in progress (also), may list a file the plan
// deletes — a file no catalog listed then, written by a working catalog
// long before its commit. It reads each such catalog's data-file table
// and calls off the planned deletion of every file it lists (counted in
// p.protected). A catalog that cannot be read stops gc before any data
// file is deleted (repo.ErrRetentionConflict: run gc again); one that is gone
// (its push removed its uploads) protects nothing.
func protectNewVersions(ctx context.Context, r *repo.Repo, p *Plan, also []version.ID) error {
	if len(p.DataFiles) == 0 {
		return nil
	}
	fresh := slices.Clone(also)
	err := r.Store().List(ctx, repo.VersionsPrefix, func(o store.ObjectInfo) error {
		if id, file, ok := repo.SplitVersionKey(o.Key); ok && file == version.CatalogFile && !p.known[id] {
			if _, err := version.ParseID(string(id)); err == nil {
				fresh = append(fresh, id)
			}
		}
		return nil
	})
	if err != nil || len(fresh) == 0 {
		return err
	}
	norm, err := r.Normaliser()
	if err != nil {
		return err
	}
	tmp, removeTmp, err := scratch.New(scratch.GC)
	if err != nil {
		return err
	}
	defer removeTmp()
	listed := map[string]bool{}
	for _, id := range fresh {
		files, err := r.CatalogDataFilesUnchecked(ctx, id, tmp)
		if errors.Is(err, store.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return &StopError{Why: StopNewCatalogUnreadable, Version: id, Detail: err, Err: repo.ErrRetentionConflict}
		}
		for _, f := range files {
			if pl, err := norm.Place(f.ResolvedPath); err == nil && pl.Key != "" {
				listed[pl.Key] = true
				for _, a := range pl.Aliases {
					listed[a] = true
				}
			}
		}
	}
	kept := p.DataFiles[:0]
	for _, f := range p.DataFiles {
		if listed[f.Key] {
			p.protected++
			continue
		}
		kept = append(kept, f)
	}
	p.DataFiles = kept
	return nil
}
