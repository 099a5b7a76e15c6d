package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path"
	"time"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// The repository's side of refs: every move goes through the ref manager
// (refs.Manager: ref log entry, compare-and-swap, entry dropped on
// failure); what the repository adds is its own check before a move — a
// version out of retention never gets a new ref — and what a move means for
// retention (versions only the ref log reaches).

// DefaultActor is who moves refs when the caller does not say (SetActor):
// $FDL_AUTHOR, else the login name, else "unknown".
func DefaultActor() string {
	if a := os.Getenv("FDL_AUTHOR"); a != "" {
		return a
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

// SetActor sets who ref log entries and floor moves name as author.
func (r *Repo) SetActor(name string) { r.actor = name }

// Actor returns who this Repo names as author of ref moves.
func (r *Repo) Actor() string {
	if r.actor == "" {
		r.actor = DefaultActor()
	}
	return r.actor
}

// Ref reads one ref (refs.Manager.Read).
func (r *Repo) Ref(ctx context.Context, n refs.Name) (refs.Ref, error) { return r.refs.Read(ctx, n) }

// Head returns the branch HEAD names (refs.Manager.Head).
func (r *Repo) Head(ctx context.Context) (refs.Name, error) { return r.refs.Head(ctx) }

// RefLog returns the ref log entries of ref (every ref when ref is ""),
// newest first, and the entries that do not parse (refs.Manager.Log).
func (r *Repo) RefLog(ctx context.Context, ref refs.Name) ([]refs.LogEntry, []error, error) {
	return r.refs.Log(ctx, ref)
}

// RefItem is one ref of a listing ('fdl branch -l --json').
type RefItem struct {
	Name    string `json:"name"`
	Ref     string `json:"ref"`
	ID      string `json:"id"`
	Short   string `json:"short_id"`
	Seq     int64  `json:"seq"`
	Message string `json:"message"`
	Head    bool   `json:"is_head"` // the branch HEAD names
}

// RefList is a listing of refs.
type RefList struct {
	Refs []RefItem
	// Bad are the refs that cannot be read, and those whose version's
	// record cannot be read (also listed, without seq and message).
	Bad []error
}

// ListRefs lists the refs under prefix (refs.HeadsPrefix, refs.TagsPrefix)
// whose short names match one of the shell patterns (path.Match; all when
// none is given), with the seq and message of the version each holds.
// Errors: refs.ErrInvalidName wrapped for a malformed pattern; the store's.
func (r *Repo) ListRefs(ctx context.Context, prefix string, patterns []string) (*RefList, error) {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %v: %w", p, err, ErrInvalidArguments)
		}
	}
	good, bad, err := r.refs.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	head, _ := r.refs.Head(ctx)
	shown := make([]version.ID, len(good))
	for i, ref := range good {
		shown[i] = ref.ID
	}
	abbrev, err := r.Abbrev(ctx, shown...)
	if err != nil {
		return nil, err
	}
	out := &RefList{Refs: []RefItem{}, Bad: bad}
	for _, ref := range good {
		if !matchAny(patterns, ref.Name.Short()) {
			continue
		}
		e := RefItem{Name: ref.Name.Short(), Ref: string(ref.Name), ID: string(ref.ID), Short: abbrev.Short(ref.ID), Head: ref.Name == head}
		if rec, err := r.Record(ctx, ref.ID); err == nil {
			e.Seq, e.Message = rec.Seq, rec.Message
		} else {
			out.Bad = append(out.Bad, fmt.Errorf("%s points at %s: %w", ref.Name, ref.ID, err))
		}
		out.Refs = append(out.Refs, e)
	}
	return out, nil
}

func matchAny(patterns []string, name string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// NewRef is a ref just created. Its JSON is 'fdl tag NAME --json'.
type NewRef struct {
	ID   version.ID `json:"id"`
	Name string     `json:"name"`
	Ref  refs.Name  `json:"ref"`
	// UpToDate is true when the ref already held the version (nothing
	// was written).
	UpToDate bool `json:"up_to_date"`
	// Repaired is true when a damaged tag was pointed at ID (RepairTag);
	// Was is what it named before ("" when its file held no version id).
	Repaired bool       `json:"repaired,omitempty"`
	Was      version.ID `json:"was,omitempty"`
	// Signed says what a signed tag's creation signed (CreateSignedTag);
	// nil for a ref made unsigned.
	Signed *SignResult `json:"signed,omitempty"`
	Kind   refs.Kind   `json:"-"`
	Abbrev refs.Abbrev `json:"-"`
}

// CreateTag makes tag name point at rev's version (default: defaultRev).
// Tags never move: a tag that holds another version is refused
// (*refs.ExistsError); one that holds this version is no error (UpToDate);
// a version out of retention is refused (*RetiredError).
func (r *Repo) CreateTag(ctx context.Context, l *Local, name, rev string) (*NewRef, error) {
	n, err := refs.Tag(name)
	if err != nil {
		return nil, err
	}
	ref, err := r.createRef(ctx, n, l.DefaultRev(), rev)
	return ref, l.unknownHere(rev, err)
}

// RepairTag points tag name, which is damaged (its file holds no version
// id, or it names a version the repository does not hold whole), at rev's
// version (default: defaultRev); the ref log records the repair. An intact
// tag is refused (*refs.TagIntactError: tags never move); a version out of
// retention is refused (*RetiredError); a tag that does not exist is
// refs.ErrNotFound (create it with CreateTag).
func (r *Repo) RepairTag(ctx context.Context, l *Local, name, rev string) (*NewRef, error) {
	n, err := refs.Tag(name)
	if err != nil {
		return nil, err
	}
	if rev == "" {
		rev = l.DefaultRev()
	}
	rec, _, err := r.refs.ResolveRecord(ctx, rev)
	if err != nil {
		return nil, l.unknownHere(rev, err)
	}
	was, err := r.refs.RepairTag(ctx, n, rec.ID, "repaired at "+rev, func(ctx context.Context) error { return r.RefuseRetired(ctx, rec) })
	if err != nil {
		if errors.Is(err, refs.ErrNotFound) {
			return nil, fmt.Errorf("tag %s: %w: there is nothing to repair", name, err)
		}
		return nil, err
	}
	abbrev, _ := r.Abbrev(ctx, rec.ID)
	return &NewRef{ID: rec.ID, Name: n.Short(), Ref: n, Kind: n.Kind(), Abbrev: abbrev, UpToDate: was.ID == rec.ID, Repaired: was.ID != rec.ID, Was: was.ID}, nil
}

// CreateBranch makes branch name point at rev's version (default:
// defaultRev), only where the branch does not exist (refs.ErrExists); a
// version out of retention is refused (*RetiredError).
func (r *Repo) CreateBranch(ctx context.Context, l *Local, name, rev string) (*NewRef, error) {
	n, err := refs.Branch(name)
	if err != nil {
		return nil, err
	}
	ref, err := r.createRef(ctx, n, l.DefaultRev(), rev)
	return ref, l.unknownHere(rev, err)
}

func (r *Repo) createRef(ctx context.Context, n refs.Name, def, rev string) (*NewRef, error) {
	if rev == "" {
		rev = def
	}
	rec, _, err := r.refs.ResolveRecord(ctx, rev)
	if err != nil {
		return nil, err
	}
	existed, err := r.refs.Create(ctx, n, rec.ID, "created at "+rev, func(ctx context.Context) error { return r.RefuseRetired(ctx, rec) })
	var ee *refs.ExistsError
	if errors.As(err, &ee) {
		ee.WantedRetired = r.RefuseRetired(ctx, rec) != nil
		if n.IsBranch() {
			anc, aerr := refs.IsAncestor(ctx, r, ee.Holds, ee.Wanted)
			ee.Backwards = aerr == nil && !anc
		}
	}
	if err != nil {
		return nil, err
	}
	abbrev, _ := r.Abbrev(ctx, rec.ID)
	return &NewRef{ID: rec.ID, Name: n.Short(), Ref: n, Kind: n.Kind(), Abbrev: abbrev, UpToDate: existed}, nil
}

// Unprotected are versions no branch holds any more (undone by a move back
// or on a deleted branch) that the retention policy lets leave retention
// at the next gc unless a tag or another branch keeps them.
type Unprotected struct {
	IDs    []version.ID
	Policy retention.Policy
}

// DeletedBranch is a branch just deleted. Its JSON is 'fdl branch -d
// --json'.
type DeletedBranch struct {
	Branch string     `json:"branch"` // short name
	Ref    refs.Name  `json:"ref"`    // full name
	ID     version.ID `json:"id"`     // the version it held
	// Unprotected, if not nil, are the deleted branch's versions that may
	// leave retention at the next gc.
	Unprotected *Unprotected `json:"-"`
}

// DeleteBranch deletes a branch (refs.Manager.DeleteBranch: logged, a
// compare-and-swap to the tombstone). The versions stay in the repository;
// those the retention policy lets go are in the result. It refuses the
// branch HEAD names (refs.ErrDeleteHead).
func (r *Repo) DeleteBranch(ctx context.Context, name string) (*DeletedBranch, error) {
	n, err := refs.Branch(name)
	if err != nil {
		return nil, err
	}
	ref, err := r.refs.DeleteBranch(ctx, n)
	if err != nil {
		return nil, err
	}
	out := &DeletedBranch{Branch: ref.Name.Short(), Ref: ref.Name, ID: ref.ID}
	if ids, err := r.OnlyReachedFrom(ctx, ref.ID); err == nil {
		out.Unprotected = r.unprotected(ctx, ids)
	}
	return out, nil
}

// MoveOptions are the inputs of MoveBranch.
type MoveOptions struct {
	// Backwards allows moving to a version that is not a descendant of the
	// one the branch holds (docs/spec.md §10.4: moving back is explicit).
	Backwards bool
	// Why is recorded in the ref log entry.
	Why string
	// AllowFormatChange lets the move change the set of DuckDB releases
	// that read the branch (PushOptions.AllowFormatChange).
	AllowFormatChange bool
}

// BranchMove is what MoveBranch did. Its JSON is 'fdl branch -f --json'.
type BranchMove struct {
	refs.MoveResult
	Abbrev refs.Abbrev `json:"-"`
	// Unprotected, if not nil, are the undone versions that may leave
	// retention at the next gc.
	Unprotected *Unprotected `json:"-"`
}

// MoveBranch moves an existing branch to rev's version
// (refs.Manager.MoveBranch: forward, back only with o.Backwards, or the
// repair of a damaged ref), refusing a version out of retention
// (*RetiredError). Errors as refs.Manager.MoveBranch.
func (r *Repo) MoveBranch(ctx context.Context, name, rev string, o MoveOptions) (*BranchMove, error) {
	check := func(ctx context.Context, from version.ID, to *version.Record) error {
		if err := r.RefuseRetired(ctx, to); err != nil {
			return err
		}
		if from == "" || o.AllowFormatChange {
			return nil
		}
		cur, err := r.Record(ctx, from)
		if err != nil {
			return nil // a branch naming a missing version: refs says so
		}
		if change, _ := formatChange(cur, to); change != nil {
			n, _ := refs.Branch(name)
			return &FormatChangeError{Branch: n, Change: *change, Move: true, Backwards: o.Backwards}
		}
		return nil
	}
	res, err := r.refs.MoveBranch(ctx, name, rev, refs.MoveOptions{Backwards: o.Backwards, Why: o.Why, Check: check})
	out := &BranchMove{MoveResult: res}
	if err != nil {
		return out, err
	}
	if res.Backwards && res.Old != "" {
		if ids, err := r.OnlyReachedFrom(ctx, res.Old); err == nil {
			out.Unprotected = r.unprotected(ctx, ids)
		}
	}
	out.Abbrev, _ = r.Abbrev(ctx, append([]version.ID{res.Old, res.New}, res.Undone...)...)
	return out, nil
}

// unprotected is Unprotected's result for the versions ids now (nil when
// none leaves, or when the policy cannot be read: a warning, not a
// failure).
func (r *Repo) unprotected(ctx context.Context, ids []version.ID) *Unprotected {
	leaving, p, err := r.Unprotected(ctx, ids, time.Now())
	if err != nil || len(leaving) == 0 {
		return nil
	}
	return &Unprotected{IDs: leaving, Policy: p}
}

// RefLogEntry is one ref log entry with short ids, as 'fdl reflog --json'
// prints it.
type RefLogEntry struct {
	refs.LogEntry
	OldShort string `json:"old_short,omitempty"`
	NewShort string `json:"new_short,omitempty"`
}

// RefLogView is the ref log of one ref, or of all, newest first.
type RefLogView struct {
	Entries []RefLogEntry
	// Bad are the entries that do not parse (*refs.BadLogError).
	Bad []error
}

// RefLogOf returns the ref log of name as a person gives it
// (refs.Manager.LogOf: a full ref name, else the branch, tag or request of
// that name; every ref's when name is ""). Errors: refs.ErrInvalidName,
// *refs.NoLogError, the store's.
func (r *Repo) RefLogOf(ctx context.Context, name string) (*RefLogView, error) {
	entries, bad, err := r.refs.LogOf(ctx, name)
	if err != nil {
		return nil, err
	}
	shown := make([]version.ID, 0, 2*len(entries))
	for _, e := range entries {
		shown = append(shown, e.Old, e.New)
	}
	abbrev, err := r.Abbrev(ctx, shown...)
	if err != nil {
		return nil, err
	}
	out := &RefLogView{Entries: make([]RefLogEntry, len(entries)), Bad: bad}
	for i, e := range entries {
		out.Entries[i] = RefLogEntry{e, abbrev.Short(e.Old), abbrev.Short(e.New)}
	}
	return out, nil
}

// Unprotected returns those of ids — versions no branch holds any more
// (undone by a move back, or on a deleted branch), reached only by the ref
// log — that the retention policy lets leave retention at the next gc,
// with the policy read: none when the policy keeps everything a ref log
// reaches (no rule set); else those created keep_within or longer before
// now (all of them without keep_within). Versions a tag or another branch
// keeps are not looked for (docs/spec.md §13).
func (r *Repo) Unprotected(ctx context.Context, ids []version.ID, now time.Time) ([]version.ID, retention.Policy, error) {
	p, _, err := r.Policy(ctx)
	if err != nil || p.KeepsEverything() {
		return nil, p, err
	}
	var out []version.ID
	for _, id := range ids {
		rec, err := r.Record(ctx, id)
		if err != nil {
			return nil, p, err
		}
		if p.KeepWithin == 0 || now.Sub(rec.CreatedAt) >= time.Duration(p.KeepWithin) {
			out = append(out, id)
		}
	}
	return out, p, nil
}

// OnlyReachedFrom returns the versions of id's first-parent history that
// no branch's first-parent history holds (newest first): after a branch
// holding id was deleted, those only the ref log reaches. It walks id's
// history down to the first version a branch holds, and each branch's
// down to the same seq (history packs), not the whole history.
func (r *Repo) OnlyReachedFrom(ctx context.Context, id version.ID) ([]version.ID, error) {
	branches, _, err := r.refs.List(ctx, refs.HeadsPrefix)
	if err != nil {
		return nil, err
	}
	lines := make([]*firstParents, len(branches))
	for i, b := range branches {
		lines[i] = &firstParents{r: r, low: b.ID, bySeq: map[int64]version.ID{}}
	}
	var out []version.ID
	err = r.Walk(ctx, id, func(rec *version.Record) (bool, error) {
		for _, l := range lines {
			at, err := l.at(ctx, rec.Seq)
			if err != nil {
				return false, err
			}
			if at == rec.ID {
				return false, nil // held: so is everything below it
			}
		}
		out = append(out, rec.ID)
		return true, nil
	})
	return out, err
}

// firstParents is one first-parent history, walked lazily from its head
// down to the lowest seq asked for so far.
type firstParents struct {
	r     *Repo
	low   version.ID // the oldest version walked to ("" below the first)
	seq   int64      // its seq (0 before the first walk)
	bySeq map[int64]version.ID
}

// at returns the version with seq on the history ("" when there is none).
func (l *firstParents) at(ctx context.Context, seq int64) (version.ID, error) {
	if l.seq == 0 || seq < l.seq {
		if l.low == "" {
			return "", nil
		}
		err := l.r.Walk(ctx, l.low, func(rec *version.Record) (bool, error) {
			l.bySeq[rec.Seq] = rec.ID
			l.low, l.seq = rec.Parent(), rec.Seq
			return rec.Seq > seq, nil
		})
		if err != nil {
			return "", err
		}
	}
	return l.bySeq[seq], nil
}

// RefNames returns the short names of the refs under prefix
// (refs.HeadsPrefix, refs.TagsPrefix, refs.RequestsPrefix) that exist,
// sorted; refs that cannot be read are left out. It reads no record (shell
// completion uses it).
func (r *Repo) RefNames(ctx context.Context, prefix string) ([]string, error) {
	good, _, err := r.refs.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(good))
	for i, ref := range good {
		out[i] = ref.Name.Short()
	}
	return out, nil
}
