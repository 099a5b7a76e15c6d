package refs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
	"golang.org/x/text/unicode/norm"
)

// Resolved is a revision resolved to a version, with the ref it went through
// (empty for a plain id).
type Resolved struct {
	ID  version.ID
	Ref Name // the branch or tag named, if any
}

// Resolve turns a revision into a version id (docs/spec.md §revisions):
//
//	main, 2025-final     a branch (refs/heads/) or a tag (refs/tags/); a
//	                     branch wins over a tag of the same name
//	refs/heads/main      a full ref name
//	HEAD                 the branch HEAD names
//	0192f0c1-6c1a-…      a full id or a unique prefix of at least 4 hex
//	                     digits (dashes optional)
//	main@12              the version with seq 12 on branch main's
//	                     first-parent history; "@12" uses HEAD's branch
//	main~2               two first parents back; suffixes combine: main@12~1
//
// Errors wrap ErrUnknownRev (*NoSuchRevError for a name nothing has,
// *NoVersionYetError for HEAD on a branch with no version) or
// ErrAmbiguousRev (listing the candidates); a corrupt ref's *CorruptError.
func (m *Manager) Resolve(ctx context.Context, rev string) (Resolved, error) {
	base, back := rev, 0
	for {
		i := strings.LastIndexByte(base, '~')
		if i < 0 {
			break
		}
		nstr := base[i+1:]
		n := 1
		if nstr != "" {
			v, err := strconv.Atoi(nstr)
			if err != nil || v < 0 {
				return Resolved{}, fmt.Errorf("revision %q: %q after '~' is not a number: %w", rev, nstr, ErrUnknownRev)
			}
			n = v
		}
		if n > math.MaxInt-back {
			// The sum would wrap around (to 0 for main~MAX~MAX~2): no
			// history is that long.
			return Resolved{}, fmt.Errorf("revision %q goes back more versions than any history holds: %w", rev, ErrUnknownRev)
		}
		back += n
		base = base[:i]
	}
	res, err := m.resolveBase(ctx, rev, base)
	if errors.Is(err, ErrUnknownRev) {
		// A name typed in another Unicode form (NFD from some keyboards
		// and file systems) names the NFC ref: ref names are NFC.
		if nfc := norm.NFC.String(base); nfc != base {
			if r2, err2 := m.resolveBase(ctx, rev, nfc); err2 == nil {
				res, err = r2, nil
			}
		}
	}
	if err != nil {
		return Resolved{}, err
	}
	if back == 0 {
		return res, nil
	}
	id, err := Nth(ctx, m.recs, res.ID, back)
	if err != nil {
		if res.Ref != "" && errors.Is(err, ErrVersionMissing) {
			if d := m.dangling(ctx, res); d != nil {
				return Resolved{}, d
			}
		}
		return Resolved{}, fmt.Errorf("revision %q: %w", rev, err)
	}
	return Resolved{ID: id}, nil
}

// ResolveRecord resolves rev and reads its version's record. A ref that
// names a version the repository does not hold whole is a *DanglingError
// naming the ref (Read set), not the version's own error.
func (m *Manager) ResolveRecord(ctx context.Context, rev string) (*version.Record, Resolved, error) {
	res, err := m.Resolve(ctx, rev)
	if err != nil {
		return nil, res, err
	}
	rec, err := m.recs.Record(ctx, res.ID)
	if err != nil && res.Ref != "" {
		return nil, res, DanglingRead(res.Ref, res.ID, err)
	}
	return rec, res, err
}

// DanglingRead returns err, the error of reading the record of version id
// that ref n holds, as a *DanglingError (Read set) naming n when it says
// the version is missing or its record unreadable (ErrVersionMissing,
// version.ErrBadRecord); any other error as it is.
func DanglingRead(n Name, id version.ID, err error) error {
	if errors.Is(err, ErrVersionMissing) || errors.Is(err, version.ErrBadRecord) {
		return &DanglingError{Ref: n, ID: id, Err: err, Read: true}
	}
	return err
}

// dangling returns the *DanglingError (Read set) for res when its ref
// names a version the repository does not hold whole, else nil.
func (m *Manager) dangling(ctx context.Context, res Resolved) error {
	var d *DanglingError
	if errors.As(CheckHeld(ctx, m.recs, res.Ref, res.ID), &d) {
		d.Read = true
		return d
	}
	return nil
}

func (m *Manager) resolveBase(ctx context.Context, rev, base string) (Resolved, error) {
	if base == "" {
		return Resolved{}, fmt.Errorf("revision %q is empty: %w", rev, ErrUnknownRev)
	}
	if i := strings.IndexByte(base, '@'); i >= 0 {
		return m.resolveSeq(ctx, rev, base[:i], base[i+1:])
	}
	if base == "HEAD" {
		n, err := m.Head(ctx)
		if err != nil {
			return Resolved{}, err
		}
		ref, err := m.Read(ctx, n)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				e := &NoVersionYetError{Branch: n, Where: m.o.Where}
				// A mirror of tags alone has versions, but no branch:
				// its tags are what to name (one listing, on this
				// error's path only).
				if tags, _, err := m.List(ctx, TagsPrefix); err == nil {
					e.Tags = len(tags)
				}
				return Resolved{}, e
			}
			return Resolved{}, err
		}
		return Resolved{ID: ref.ID, Ref: n}, nil
	}
	if _, err := version.ParseID(strings.ToLower(base)); err == nil {
		// A full id names that version, whatever refs exist.
		return Resolved{ID: version.ID(strings.ToLower(base))}, nil
	}
	res, err := m.resolveRef(ctx, rev, base, false)
	if err == nil || !errors.Is(err, ErrUnknownRev) {
		return res, err
	}
	return m.resolveID(ctx, rev, base)
}

// resolveSeq resolves branch@seq: the version with that seq on the
// branch's first-parent history ("" branch: HEAD's).
func (m *Manager) resolveSeq(ctx context.Context, rev, branch, seqStr string) (Resolved, error) {
	seq, err := strconv.ParseInt(seqStr, 10, 64)
	if err != nil || seq < 1 {
		return Resolved{}, fmt.Errorf("revision %q: %q after '@' is not a seq number (1, 2, …): %w", rev, seqStr, ErrUnknownRev)
	}
	var head Resolved
	if branch == "" {
		head, err = m.resolveBase(ctx, rev, "HEAD")
	} else {
		head, err = m.resolveRef(ctx, rev, branch, true)
	}
	if err != nil {
		return Resolved{}, err
	}
	var found version.ID
	err = m.recs.Walk(ctx, head.ID, func(rec *version.Record) (bool, error) {
		if rec.Seq == seq {
			found = rec.ID
		}
		return rec.Seq > seq, nil
	})
	if err != nil {
		return Resolved{}, err
	}
	if found != "" {
		return Resolved{ID: found}, nil
	}
	return Resolved{}, &NoSeqError{Rev: rev, Branch: head.Ref, Seq: seq}
}

// resolveRef looks base up as a ref: full name, branch, then tag, then
// request (only the branch with branchOnly).
func (m *Manager) resolveRef(ctx context.Context, rev, base string, branchOnly bool) (Resolved, error) {
	if !strings.HasPrefix(base, "refs/") && CheckShort(base) != nil {
		return Resolved{}, fmt.Errorf("revision %q: %w", rev, ErrUnknownRev)
	}
	// A full name is read as it is, so it must at least be a key: one that
	// is not ("refs/.", "refs/x/") names no ref, rather than failing in
	// the store.
	if strings.HasPrefix(base, "refs/") && store.CheckKey(base) != nil {
		return Resolved{}, fmt.Errorf("revision %q: %q is not a ref name: %w", rev, base, ErrUnknownRev)
	}
	cands := candidates(base)
	if branchOnly {
		cands = cands[:1]
	}
	for _, n := range cands {
		ref, err := m.Read(ctx, n)
		if err == nil {
			return Resolved{ID: ref.ID, Ref: n}, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return Resolved{}, err
		}
	}
	what := "branch, tag or version id"
	if branchOnly {
		what = "branch"
	}
	return Resolved{}, fmt.Errorf("revision %q: no %s of that name in %s: %w", rev, what, m.o.Where, ErrUnknownRev)
}

// resolveID looks base up as an id prefix.
func (m *Manager) resolveID(ctx context.Context, rev, base string) (Resolved, error) {
	hex := strings.ToLower(strings.ReplaceAll(base, "-", ""))
	if len(hex) < 4 || strings.Trim(hex, "0123456789abcdef") != "" {
		return Resolved{}, &NoSuchRevError{Rev: rev, Where: m.o.Where}
	}
	ids, err := m.recs.IDsWithPrefix(ctx, hex)
	if errors.Is(err, store.ErrCannotList) && len(hex) == 32 {
		// A full id needs no listing (plain HTTP); Record checks it exists.
		if id, perr := version.ParseID(base); perr == nil {
			return Resolved{ID: id}, nil
		}
	}
	if err != nil {
		return Resolved{}, err
	}
	var match []version.ID
	for _, id := range ids {
		if strings.HasPrefix(id.Hex(), hex) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return Resolved{}, fmt.Errorf("revision %q: no version id starts with it in %s: %w", rev, m.o.Where, ErrUnknownRev)
	case 1:
		return Resolved{ID: match[0]}, nil
	}
	shown := make([]string, 0, 5)
	for i, id := range match {
		if i == 5 {
			shown = append(shown, fmt.Sprintf("and %d more", len(match)-5))
			break
		}
		shown = append(shown, string(id))
	}
	return Resolved{}, fmt.Errorf("revision %q matches %d versions (%s): give more digits: %w", rev, len(match), strings.Join(shown, ", "), ErrAmbiguousRev)
}

// CheckNewName refuses a new branch or tag whose short name would hide
// something a revision names today: a ref of another kind with the same
// short name (a branch would silently win over the tag readers rely on),
// a ref that would also be a folder of refs, or the prefix of an existing
// version id. Errors: ErrExists / ErrInvalidName naming what it would hide.
func (m *Manager) CheckNewName(ctx context.Context, n Name) error {
	short := n.Short()
	for _, other := range candidates(short) {
		if other == n {
			continue
		}
		if ref, err := m.Read(ctx, other); err == nil {
			return fmt.Errorf("%s %q: a %s of that name exists (at %s), and the two would hide each other in revisions: choose another name: %w", n.Kind(), short, other.Kind(), ref.ID, ErrExists)
		}
	}
	// As in Git, a ref cannot also be a folder of refs ("main" and
	// "main/x"): on a folder store the two cannot both exist, and on object
	// stores they would read differently from a folder copy of the same
	// repository. A deleted ref's tombstone counts: it stays in place.
	parts := strings.Split(string(n), "/")
	for i := 3; i < len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if _, err := m.st.Stat(ctx, prefix); err == nil {
			return fmt.Errorf("%s %q: %s exists (a ref, or the tombstone of a deleted one), and a ref cannot also be a folder of refs: choose another name: %w", n.Kind(), short, prefix, ErrExists)
		}
	}
	var under string
	if err := m.st.List(ctx, string(n)+"/", func(o store.ObjectInfo) error {
		under = o.Key
		return errStop
	}); err != nil && !errors.Is(err, errStop) {
		return err
	}
	if under != "" {
		return fmt.Errorf("%s %q: %s exists under that name, and a ref cannot also be a folder of refs: choose another name: %w", n.Kind(), short, under, ErrExists)
	}
	if LooksLikeID(short) {
		hex := strings.ToLower(strings.ReplaceAll(short, "-", ""))
		ids, err := m.recs.IDsWithPrefix(ctx, hex)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if strings.HasPrefix(id.Hex(), hex) {
				return fmt.Errorf("%s %q: it is a prefix of version id %s and would hide it: choose another name: %w", n.Kind(), short, id, ErrInvalidName)
			}
		}
	}
	return nil
}

var errStop = errors.New("stop")

// RevName returns the ref-name part of a revision: rev without its ~N and
// @SEQ suffixes ("dev" for dev~2 and dev@5, "" for @5 and for an id
// prefix's empty remainder). It does not check that the name exists.
func RevName(rev string) string {
	if i := strings.IndexAny(rev, "~@"); i >= 0 {
		rev = rev[:i]
	}
	return rev
}
