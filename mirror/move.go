package mirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
)

// moveRef moves the destination's ref p.name to p.src, once everything
// it reaches is there, through the ref manager (refs.Manager.Update: its
// log entry, then one compare-and-swap from what it read). The move is
// decided again on what the ref holds then, by the destination's own
// records (all copied now): a create where it is absent; nothing where it
// holds p.src; a tag holding another version is refused
// (*refs.ExistsError); a branch moves forward when the version it holds
// is an ancestor of p.src, back only with Options.Backwards, and only
// within the DuckDB releases that read it unless AllowFormatChange
// (*repo.FormatChangeError); a version the destination retired is
// refused whatever the ref (*RetiredAtDestinationError). The outcome is
// left in p.
func (m *mirror) moveRef(ctx context.Context, p *plannedRef) {
	// A version the destination retired (its catalog deleted there) never
	// comes back: no ref there may point at it (docs/spec.md §14).
	if ret, err := m.dst.Retirement(ctx, p.src); err != nil || ret != nil {
		if err == nil {
			err = &RetiredAtDestinationError{Ref: p.name, Source: m.src.Where(), Dest: m.dst.Where(), Retired: ret}
		}
		p.refuse(err)
		return
	}
	why := "mirror from " + m.src.Where()
	_, err := m.dst.Refs().Update(ctx, p.name, func(ctx context.Context, cur refs.Ref, err error) (refs.Move, error) {
		p.result.Old = cur.ID
		switch {
		case errors.Is(err, refs.ErrNotFound):
			if err := m.dst.Refs().CheckNewName(ctx, p.name); err != nil {
				return refs.Move{}, err
			}
			p.result.Action = ActCreated
			return refs.Move{To: p.src, Action: refs.ActionMirror, Why: why}, nil
		case err != nil:
			return refs.Move{}, err
		case cur.ID == p.src:
			p.result.Action = ActUpToDate
			return refs.Move{}, nil
		case p.name.IsTag():
			return refs.Move{}, &TagClashError{Source: m.src.Where(), Dest: m.dst.Where(), Exists: &refs.ExistsError{Ref: p.name, Holds: cur.ID, Wanted: p.src}}
		}
		anc, err := refs.IsAncestor(ctx, m.dst, cur.ID, p.src)
		if err != nil && !errors.Is(err, refs.ErrVersionMissing) && !errors.Is(err, refs.ErrUnknownRev) {
			return refs.Move{}, fmt.Errorf("mirror %s: %w", p.name, err)
		}
		mv := refs.Move{To: p.src, Action: refs.ActionMirror, Why: why}
		p.result.Action = ActMoved
		if !anc {
			if !m.o.Backwards {
				return refs.Move{}, &DivergedError{Ref: p.name, Source: m.src.Where(), Dest: m.dst.Where(), Holds: cur.ID, Wanted: p.src, NotInSource: err != nil}
			}
			mv.Action, mv.Why = refs.ActionMoveBack, m.o.Why
			p.result.Action = ActMovedBack
		}
		if err == nil {
			if ferr := m.checkFormat(ctx, p, cur); ferr != nil {
				return refs.Move{}, ferr
			}
		}
		return mv, nil
	})
	if ce := (*refs.ConflictError)(nil); errors.As(err, &ce) {
		err = &DivergedError{Ref: p.name, Source: m.src.Where(), Dest: m.dst.Where(), Holds: ce.Now, Wanted: p.src, Race: true}
	}
	if err != nil {
		p.refuse(err)
	}
}

// checkFormat refuses a branch move that changes the DuckDB releases
// that read it (repo.FormatChangeOf, the push's rule) unless the options
// allow it; an allowed change is noted in p.
func (m *mirror) checkFormat(ctx context.Context, p *plannedRef, cur refs.Ref) error {
	from, err := m.dst.Record(ctx, cur.ID)
	if err != nil {
		return err
	}
	to, err := m.dst.Record(ctx, p.src)
	if err != nil {
		return err
	}
	c := repo.FormatChangeOf(from, to)
	if c != nil && !m.o.AllowFormatChange {
		return &repo.FormatChangeError{Branch: p.name, Change: *c, Mirror: m.dst.Where(), Backwards: p.back}
	}
	p.result.FormatChange = c
	return nil
}
