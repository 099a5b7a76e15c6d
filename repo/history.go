package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// IDs returns every version id that has a folder in the store (complete or
// not), sorted. The result is cached for the life of the Repo.
func (r *Repo) IDs(ctx context.Context) ([]version.ID, error) {
	if r.ids != nil {
		return r.ids, nil
	}
	seen := map[version.ID]bool{}
	ids := []version.ID{}
	err := r.st.List(ctx, VersionsPrefix, func(o store.ObjectInfo) error {
		rest := strings.TrimPrefix(o.Key, VersionsPrefix)
		i := strings.IndexByte(rest, '/')
		if i <= 0 {
			return nil
		}
		id, err := version.ParseID(rest[:i])
		if err != nil || seen[id] {
			return nil
		}
		seen[id] = true
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	r.ids = ids
	return ids, nil
}

func (r *Repo) forgetIDs() { r.ids = nil }

// Record reads and validates versions/<id>/version.json. Errors:
// ErrIncomplete if the version folder exists without a record (an upload
// that never finished), ErrUnknownRev if there is no such version,
// version.ErrBadRecord.
func (r *Repo) Record(ctx context.Context, id version.ID) (*version.Record, error) {
	if rec, ok := r.record[id]; ok {
		return rec, nil
	}
	b, _, err := store.ReadAll(ctx, r.st, VersionKey(id, version.RecordFile))
	if errors.Is(err, store.ErrNotExist) {
		if _, serr := r.st.Stat(ctx, VersionKey(id, version.CatalogFile)); serr == nil {
			return nil, fmt.Errorf("version %s has no %s: %w (an upload that did not finish)", id, version.RecordFile, ErrIncomplete)
		}
		return nil, fmt.Errorf("version %s: %w: it is not in %s", id, ErrUnknownRev, r.url)
	}
	if err != nil {
		return nil, fmt.Errorf("read version %s: %w", id, err)
	}
	rec, err := version.ParseRecord(b, id)
	if err != nil {
		return nil, err
	}
	r.record[id] = rec
	return rec, nil
}

// Dataset reads versions/<id>/dataset.json and checks it against the size
// and sha256 its record gives. Errors: *ChecksumError, ErrUnknownRev,
// version.ErrBadRecord.
func (r *Repo) Dataset(ctx context.Context, id version.ID) (*version.Dataset, error) {
	rec, err := r.Record(ctx, id)
	if err != nil {
		return nil, err
	}
	key := VersionKey(id, version.DatasetFile)
	b, _, err := store.ReadAll(ctx, r.st, key)
	if err != nil {
		return nil, fmt.Errorf("read dataset of version %s: %w", id, err)
	}
	if sum := sha256Hex(b); int64(len(b)) != rec.Dataset.Size || sum != rec.Dataset.SHA256 {
		return nil, &ChecksumError{Version: id, WantSize: rec.Dataset.Size, GotSize: int64(len(b)), WantSHA: rec.Dataset.SHA256, GotSHA: sum, Location: r.st.Location(key)}
	}
	return version.ParseDataset(b, id)
}

// Log returns the first-parent history from id back to the first version
// (newest first), at most max records when max > 0.
func (r *Repo) Log(ctx context.Context, id version.ID, max int) ([]*version.Record, error) {
	var out []*version.Record
	for id != "" && (max <= 0 || len(out) < max) {
		rec, err := r.Record(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, rec)
		id = rec.Parent()
	}
	return out, nil
}

// IsAncestor reports whether anc is id or reachable from id through parents
// (DESIGN.md §4.2: the fast-forward rule). Records not in the store are
// looked up with extra (local, unpushed records) first.
func (r *Repo) IsAncestor(ctx context.Context, anc, id version.ID, extra map[version.ID]*version.Record) (bool, error) {
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
		rec := extra[cur]
		if rec == nil {
			var err error
			rec, err = r.Record(ctx, cur)
			if err != nil {
				return false, err
			}
		}
		queue = append(queue, rec.Parents...)
	}
	return false, nil
}

// ShortLen returns the number of hex digits that makes every version id in
// the repository unique, at least 8. Ids minted in the same minute share
// their first digits, so the length grows with the repository (like Git's
// abbreviations).
func (r *Repo) ShortLen(ctx context.Context) (int, error) {
	ids, err := r.IDs(ctx)
	if errors.Is(err, store.ErrCannotList) {
		return 32, nil // a store that cannot list (plain HTTP): full ids
	}
	if err != nil {
		return 0, err
	}
	return ShortLen(ids), nil
}

// ShortLen returns the shortest hex prefix length (>= 8) that tells every id
// in a sorted list apart.
func ShortLen(sorted []version.ID) int {
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
	return n
}

// Short returns id's first n hex digits, in canonical form (dashes kept).
func Short(id version.ID, n int) string {
	s := string(id)
	digits := 0
	for i, c := range s {
		if c != '-' {
			digits++
		}
		if digits == n {
			return s[:i+1]
		}
	}
	return s
}

// Resolved is a revision resolved to a version, with the ref it went through
// (empty for a plain id).
type Resolved struct {
	ID  version.ID
	Ref refs.Name // the branch or tag named, if any
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
// Errors: ErrUnknownRev, ErrAmbiguousRev (listing the candidates), refs
// errors for a corrupt ref.
func (r *Repo) Resolve(ctx context.Context, rev string) (Resolved, error) {
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
		back += n
		base = base[:i]
	}
	res, err := r.resolveBase(ctx, rev, base)
	if err != nil {
		return Resolved{}, err
	}
	for i := 0; i < back; i++ {
		rec, err := r.Record(ctx, res.ID)
		if err != nil {
			return Resolved{}, err
		}
		if rec.Parent() == "" {
			return Resolved{}, fmt.Errorf("revision %q: version %s (seq %d) has no parent, so it cannot go back %d: %w", rev, rec.ID, rec.Seq, back, ErrUnknownRev)
		}
		res = Resolved{ID: rec.Parent()}
	}
	return res, nil
}

func (r *Repo) resolveBase(ctx context.Context, rev, base string) (Resolved, error) {
	if base == "" {
		return Resolved{}, fmt.Errorf("revision %q is empty: %w", rev, ErrUnknownRev)
	}
	if i := strings.IndexByte(base, '@'); i >= 0 {
		seq, err := strconv.ParseInt(base[i+1:], 10, 64)
		if err != nil || seq < 1 {
			return Resolved{}, fmt.Errorf("revision %q: %q after '@' is not a seq number (1, 2, …): %w", rev, base[i+1:], ErrUnknownRev)
		}
		var head Resolved
		if i == 0 {
			head, err = r.resolveBase(ctx, rev, "HEAD")
		} else {
			head, err = r.resolveRef(ctx, rev, base[:i], true)
		}
		if err != nil {
			return Resolved{}, err
		}
		id := head.ID
		for id != "" {
			rec, err := r.Record(ctx, id)
			if err != nil {
				return Resolved{}, err
			}
			if rec.Seq == seq {
				return Resolved{ID: id}, nil
			}
			if rec.Seq < seq {
				break
			}
			id = rec.Parent()
		}
		return Resolved{}, fmt.Errorf("revision %q: %s has no version with seq %d on its first-parent history: %w", rev, head.Ref.Short(), seq, ErrUnknownRev)
	}
	if base == "HEAD" {
		n, err := r.refs.Head(ctx)
		if err != nil {
			return Resolved{}, err
		}
		ref, err := r.refs.Read(ctx, n)
		if err != nil {
			if errors.Is(err, refs.ErrNotFound) {
				return Resolved{}, fmt.Errorf("HEAD names branch %s, which has no version yet: %w; publish the first one: fdl checkout %s DIR, write to its catalog, then fdl commit and fdl push", n.Short(), ErrUnknownRev, ShellQuote(r.url))
			}
			return Resolved{}, err
		}
		return Resolved{ID: ref.ID, Ref: n}, nil
	}
	if _, err := version.ParseID(strings.ToLower(base)); err == nil {
		// A full id names that version, whatever refs exist.
		return Resolved{ID: version.ID(strings.ToLower(base))}, nil
	}
	res, err := r.resolveRef(ctx, rev, base, false)
	if err == nil || !errors.Is(err, ErrUnknownRev) {
		return res, err
	}
	return r.resolveID(ctx, rev, base)
}

// resolveRef looks base up as a ref: full name, branch, then tag.
func (r *Repo) resolveRef(ctx context.Context, rev, base string, branchOnly bool) (Resolved, error) {
	var cands []refs.Name
	if strings.HasPrefix(base, "refs/") {
		cands = []refs.Name{refs.Name(base)}
	} else {
		if refs.CheckShort(base) != nil {
			return Resolved{}, fmt.Errorf("revision %q: %w", rev, ErrUnknownRev)
		}
		cands = []refs.Name{refs.Name(refs.HeadsPrefix + base)}
		if !branchOnly {
			cands = append(cands, refs.Name(refs.TagsPrefix+base), refs.Name(refs.RequestsPrefix+base))
		}
	}
	for _, n := range cands {
		ref, err := r.refs.Read(ctx, n)
		if err == nil {
			return Resolved{ID: ref.ID, Ref: n}, nil
		}
		if !errors.Is(err, refs.ErrNotFound) {
			return Resolved{}, err
		}
	}
	what := "branch, tag or version id"
	if branchOnly {
		what = "branch"
	}
	return Resolved{}, fmt.Errorf("revision %q: no %s of that name in %s: %w", rev, what, r.url, ErrUnknownRev)
}

func (r *Repo) resolveID(ctx context.Context, rev, base string) (Resolved, error) {
	hex := strings.ToLower(strings.ReplaceAll(base, "-", ""))
	if len(hex) < 4 || strings.Trim(hex, "0123456789abcdef") != "" {
		return Resolved{}, fmt.Errorf("revision %q: no branch, tag or version id of that name in %s (list them with 'fdl branch -l', 'fdl tag -l', 'fdl log'): %w", rev, r.url, ErrUnknownRev)
	}
	ids, err := r.IDs(ctx)
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
		return Resolved{}, fmt.Errorf("revision %q: no version id starts with it in %s: %w", rev, r.url, ErrUnknownRev)
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

// checkNewName refuses a new branch or tag whose short name would hide
// something a revision names today: a tag or branch of the same name (a
// branch would silently win over the tag readers rely on), or the prefix of
// an existing version id. Errors: refs.ErrInvalidName / refs.ErrExists
// naming what it would hide.
func (r *Repo) checkNewName(ctx context.Context, n refs.Name) error {
	short := n.Short()
	for _, other := range []refs.Name{refs.Name(refs.HeadsPrefix + short), refs.Name(refs.TagsPrefix + short), refs.Name(refs.RequestsPrefix + short)} {
		if other == n {
			continue
		}
		if ref, err := r.refs.Read(ctx, other); err == nil {
			return fmt.Errorf("%s %q: a %s of that name exists (at %s), and the two would hide each other in revisions: choose another name: %w", n.Kind(), short, other.Kind(), ref.ID, refs.ErrExists)
		}
	}
	// As in Git, a ref cannot also be a folder of refs ("main" and
	// "main/x"): on a folder store the two cannot both exist, and on object
	// stores they would read differently from a folder copy of the same
	// repository. A deleted ref's tombstone counts: it stays in place.
	parts := strings.Split(string(n), "/")
	for i := 3; i < len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if _, err := r.st.Stat(ctx, prefix); err == nil {
			return fmt.Errorf("%s %q: %s exists (a ref, or the tombstone of a deleted one), and a ref cannot also be a folder of refs: choose another name: %w", n.Kind(), short, prefix, refs.ErrExists)
		}
	}
	var under string
	if err := r.st.List(ctx, string(n)+"/", func(o store.ObjectInfo) error {
		under = o.Key
		return errStop
	}); err != nil && !errors.Is(err, errStop) {
		return err
	}
	if under != "" {
		return fmt.Errorf("%s %q: %s exists under that name, and a ref cannot also be a folder of refs: choose another name: %w", n.Kind(), short, under, refs.ErrExists)
	}
	if refs.LooksLikeID(short) {
		hex := strings.ToLower(strings.ReplaceAll(short, "-", ""))
		ids, err := r.IDs(ctx)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if strings.HasPrefix(id.Hex(), hex) {
				return fmt.Errorf("%s %q: it is a prefix of version id %s and would hide it: choose another name: %w", n.Kind(), short, id, refs.ErrInvalidName)
			}
		}
	}
	return nil
}
