package refs

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/version"
)

// IsAncestor reports whether anc is id or reachable from id through
// parents. This is the fast-forward rule (docs/spec.md §10.2): a branch holding
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

// CheckHeld returns a *DanglingError when the version ref holds is not a
// complete version recs can read (its error wraps ErrVersionMissing or
// version.ErrBadRecord), nil when it is, and other read errors (a store
// that cannot be reached) as they are. A branch move compares with the
// version the branch holds, so it checks it first: a ref naming nothing
// must read as damage, never as "not a fast-forward".
func CheckHeld(ctx context.Context, recs RecordReader, ref Name, id version.ID) error {
	_, err := recs.Record(ctx, id)
	if err != nil && (errors.Is(err, ErrVersionMissing) || errors.Is(err, version.ErrBadRecord)) {
		return &DanglingError{Ref: ref, ID: id, Err: err}
	}
	return err
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

// Divergence is how two versions' first-parent histories relate: how many
// versions each has that the other does not, and the newest version they
// share (their merge base; "" when they share none).
type Divergence struct {
	Ahead  int        // versions of a's first-parent history not in b's
	Behind int        // versions of b's first-parent history not in a's
	Base   version.ID // the newest version both histories hold
}

// AheadBehind compares the first-parent histories of a and b ("" is the
// empty history). Because seq is the first parent's seq + 1, the history
// with the higher seq steps back until the two meet, so it reads
// Ahead + Behind records (plus one per side), never the whole history:
// the cost follows the distance. fdl writes at most one parent, so for
// fdl's own versions first-parent ancestry is ancestry. Errors: the
// record reader's.
func AheadBehind(ctx context.Context, recs RecordReader, a, b version.ID) (Divergence, error) {
	var d Divergence
	seq := func(id version.ID) (int64, version.ID, error) {
		if id == "" {
			return 0, "", nil
		}
		rec, err := recs.Record(ctx, id)
		if err != nil {
			return 0, "", err
		}
		return rec.Seq, rec.Parent(), nil
	}
	sa, pa, err := seq(a)
	if err != nil {
		return d, err
	}
	sb, pb, err := seq(b)
	if err != nil {
		return d, err
	}
	for a != b {
		if sa >= sb {
			d.Ahead++
			a = pa
			if sa, pa, err = seq(a); err != nil {
				return d, err
			}
			continue
		}
		d.Behind++
		b = pb
		if sb, pb, err = seq(b); err != nil {
			return d, err
		}
	}
	d.Base = a
	return d, nil
}
