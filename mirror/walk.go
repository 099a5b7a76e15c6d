package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// versionsToCopy returns the records of the versions the destination
// lacks among those starts and optional reach through parents, parents
// before children. A walk stops at a version the destination holds (its
// record there means its ancestors are there too: every writer writes
// parents first). The first-parent runs are read through the source's
// history packs (repo.Walk); other parents are walked in turn. A version
// named in optional (by a ref log entry) that the source does not hold
// whole is skipped; one that starts names is an error.
func (m *mirror) versionsToCopy(ctx context.Context, starts, optional []version.ID) ([]*version.Record, error) {
	recs := map[version.ID]*version.Record{}
	var order []version.ID // as found: children before parents on each run
	type job struct {
		id       version.ID
		optional bool
	}
	var todo []job
	for _, id := range starts {
		todo = append(todo, job{id, false})
	}
	for _, id := range optional {
		todo = append(todo, job{id, true})
	}
	for len(todo) > 0 {
		j := todo[0]
		todo = todo[1:]
		err := m.src.Walk(ctx, j.id, func(rec *version.Record) (bool, error) {
			if recs[rec.ID] != nil || m.known[rec.ID] {
				return false, nil
			}
			has, err := m.dstHas(ctx, rec.ID)
			if err != nil || has {
				m.known[rec.ID] = has
				return false, err
			}
			recs[rec.ID] = rec
			order = append(order, rec.ID)
			for _, p := range rec.Parents[min(1, len(rec.Parents)):] {
				todo = append(todo, job{p, j.optional})
			}
			return true, nil
		})
		if err != nil && j.optional && (errors.Is(err, refs.ErrVersionMissing) || errors.Is(err, refs.ErrUnknownRev) || errors.Is(err, store.ErrNotExist)) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("mirror from %s: %w", m.src.Where(), err)
		}
	}
	// Parents before children: a depth-first order over the parents.
	out := make([]*version.Record, 0, len(recs))
	placed := map[version.ID]bool{}
	var place func(id version.ID)
	place = func(id version.ID) {
		// Iterative along first parents (histories are long), recursive
		// only for the others (rare).
		var run []version.ID
		for cur := id; cur != "" && recs[cur] != nil && !placed[cur]; cur = recs[cur].Parent() {
			placed[cur] = true
			run = append(run, cur)
		}
		for i := len(run) - 1; i >= 0; i-- {
			for _, p := range recs[run[i]].Parents[min(1, len(recs[run[i]].Parents)):] {
				place(p)
			}
			out = append(out, recs[run[i]])
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		place(order[i])
	}
	return out, nil
}

// dstHas reports whether the destination holds version id's record:
// one Stat each for the first statLimit versions asked, then one listing
// of versions/ for all the rest.
func (m *mirror) dstHas(ctx context.Context, id version.ID) (bool, error) {
	if m.dstIDs != nil {
		return m.dstIDs[id], nil
	}
	if m.dstStats < statLimit {
		m.dstStats++
		_, err := m.dst.Store().Stat(ctx, repo.VersionKey(id, version.RecordFile))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, store.ErrNotExist):
			return false, nil
		}
		return false, fmt.Errorf("mirror to %s: %w", m.dst.Where(), err)
	}
	ids := map[version.ID]bool{}
	err := m.dst.Store().List(ctx, repo.VersionsPrefix, func(oi store.ObjectInfo) error {
		if rest, ok := strings.CutSuffix(strings.TrimPrefix(oi.Key, repo.VersionsPrefix), "/"+version.RecordFile); ok && !strings.Contains(rest, "/") {
			ids[version.ID(rest)] = true
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("mirror to %s: %w", m.dst.Where(), err)
	}
	m.dstIDs = ids
	return ids[id], nil
}
