package refs

import (
	"context"
	"fmt"

	"github.com/fdl-dev/fdl/version"
)

// IsAncestor reports whether anc is id or reachable from id through
// parents. This is the fast-forward rule (DESIGN.md §4.2): a branch holding
// anc may move to id only when it is true.
//
// It reads anc's record for its seq, then walks id's first-parent history
// (h.Walk: history packs where the store has them) down to that seq, and
// stops there: every parent has a lower seq than its child (docs/spec.md
// §6), so nothing below it reaches anc. Other parents (fdl writes none)
// are walked the same way. A refused fast-forward therefore reads as many
// records as the two versions are apart, not the history.
func IsAncestor(ctx context.Context, h Ancestry, anc, id version.ID) (bool, error) {
	if anc == id {
		return true, nil
	}
	a, err := h.Record(ctx, anc)
	if err != nil {
		return false, err
	}
	return reaches(ctx, h, a, id)
}

// reaches reports whether version anc (its record) is reachable from id
// through parents, walking no version whose seq is at or below anc's
// other than anc.
func reaches(ctx context.Context, h Walker, anc *version.Record, id version.ID) (bool, error) {
	seen := map[version.ID]bool{}
	queue := []version.ID{id}
	found := false
	for len(queue) > 0 && !found {
		start := queue[0]
		queue = queue[1:]
		err := h.Walk(ctx, start, func(rec *version.Record) (bool, error) {
			switch {
			case rec.ID == anc.ID:
				found = true
				return false, nil
			case seen[rec.ID] || rec.Seq <= anc.Seq:
				return false, nil
			}
			seen[rec.ID] = true
			if len(rec.Parents) > 1 {
				queue = append(queue, rec.Parents[1:]...)
			}
			return true, nil
		})
		if err != nil {
			return false, err
		}
	}
	return found, nil
}

// Undone returns the versions of from's first-parent history that to does
// not reach (newest first): what a branch moved from from to to no longer
// holds. It walks from's history down to the first version to reaches.
func Undone(ctx context.Context, h Ancestry, from, to version.ID) ([]version.ID, error) {
	out := []version.ID{}
	err := h.Walk(ctx, from, func(rec *version.Record) (bool, error) {
		ok, err := reaches(ctx, h, rec, to)
		if err != nil || ok {
			return false, err
		}
		out = append(out, rec.ID)
		return true, nil
	})
	return out, err
}

// Nth returns the version n first parents back from id (id itself for 0),
// walking h. Errors: *TooFarError when the first version comes first, h's.
func Nth(ctx context.Context, h Walker, id version.ID, n int) (version.ID, error) {
	var last *version.Record
	i, found := 0, false
	err := h.Walk(ctx, id, func(rec *version.Record) (bool, error) {
		last = rec
		if found = i == n; found {
			return false, nil
		}
		i++
		return true, nil
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", &TooFarError{From: id, Back: n, First: last}
	}
	return last.ID, nil
}

// TooFarError: a revision goes back further than the first version.
type TooFarError struct {
	From  version.ID
	Back  int
	First *version.Record // the first version, where the walk ended
}

func (e *TooFarError) Error() string {
	if e.First == nil {
		return fmt.Sprintf("version %s has no history", e.From)
	}
	return fmt.Sprintf("version %s (seq %d) has no parent, so it cannot go back %d from %s", e.First.ID, e.First.Seq, e.Back, e.From)
}

func (e *TooFarError) Unwrap() error { return ErrUnknownRev }
