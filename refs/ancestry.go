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
