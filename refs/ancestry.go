package refs

import (
	"context"
	"errors"
	"sort"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// IsAncestor reports whether anc is id or reachable from id through parents,
// reading records from recs. This is the fast-forward rule (DESIGN.md §4.2):
// a branch holding anc may move to id only when it is true.
func IsAncestor(ctx context.Context, recs RecordReader, anc, id version.ID) (bool, error) {
	seen := map[version.ID]bool{}
	queue := []version.ID{id}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == anc {
			return true, nil
		}
		if seen[cur] {
			continue
		}
		seen[cur] = true
		rec, err := recs.Record(ctx, cur)
		if err != nil {
			return false, err
		}
		queue = append(queue, rec.Parents...)
	}
	return false, nil
}

// Undone returns the versions of from's first-parent history that to does
// not reach (newest first): what a branch moved from from to to no longer
// holds.
func Undone(ctx context.Context, recs RecordReader, from, to version.ID) ([]version.ID, error) {
	out := []version.ID{}
	for id := from; id != ""; {
		if ok, err := IsAncestor(ctx, recs, id, to); err != nil {
			return out, err
		} else if ok {
			break
		}
		out = append(out, id)
		rec, err := recs.Record(ctx, id)
		if err != nil {
			return out, err
		}
		id = rec.Parent()
	}
	return out, nil
}

// Abbrev is the number of hex digits of the short ids shown to people:
// enough to tell every version of the repository apart (ShortLen). The
// zero Abbrev shows full ids.
type Abbrev int

// Short returns id's first a hex digits, in canonical form (dashes kept);
// the whole id when a is 0 or at least 32; "" for "".
func (a Abbrev) Short(id version.ID) string {
	s := string(id)
	if a <= 0 {
		return s
	}
	digits := 0
	for i, c := range s {
		if c != '-' {
			digits++
		}
		if digits == int(a) {
			return s[:i+1]
		}
	}
	return s
}

// Abbrev returns the short-id length for the repository's versions and
// extra ones (committed locally, not in the store): at least 8 hex digits,
// more when ids minted in the same minute share their first digits (like
// Git's abbreviations); 32 (full ids) on a store that cannot list.
func (m *Manager) Abbrev(ctx context.Context, extra ...version.ID) (Abbrev, error) {
	ids, err := m.recs.IDs(ctx)
	if errors.Is(err, store.ErrCannotList) {
		return 32, nil // a store that cannot list (plain HTTP): full ids
	}
	if err != nil {
		return 0, err
	}
	if len(extra) > 0 {
		ids = append(append([]version.ID(nil), ids...), extra...)
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	}
	return ShortLen(ids), nil
}

// ShortLen returns the shortest hex prefix length (>= 8) that tells every id
// in a sorted list apart.
func ShortLen(sorted []version.ID) Abbrev {
	n := 8
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1].Hex(), sorted[i].Hex()
		c := 0
		for c < len(a) && c < len(b) && a[c] == b[c] {
			c++
		}
		if c+1 > n {
			n = c + 1
		}
	}
	if n > 32 {
		n = 32
	}
	return Abbrev(n)
}

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
