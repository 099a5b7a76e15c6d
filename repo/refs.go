package repo

import (
	"context"
	"os"
	"os/user"
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

// RefLog returns the ref log entries of ref (every ref when ref is ""),
// newest first, and the entries that do not parse (refs.Manager.Log).
func (r *Repo) RefLog(ctx context.Context, ref refs.Name) ([]refs.LogEntry, []error, error) {
	return r.refs.Log(ctx, ref)
}

// CreateTag makes tag name point at rev's version. Tags never move: an
// existing tag is refused (refs.ErrExists); a version out of retention is
// refused (*RetiredError).
func (r *Repo) CreateTag(ctx context.Context, name, rev string) (refs.Ref, error) {
	n, err := refs.Tag(name)
	if err != nil {
		return refs.Ref{}, err
	}
	return r.createRef(ctx, n, rev)
}

// CreateBranch makes branch name point at rev's version, only where the
// branch does not exist (refs.ErrExists); a version out of retention is
// refused (*RetiredError).
func (r *Repo) CreateBranch(ctx context.Context, name, rev string) (refs.Ref, error) {
	n, err := refs.Branch(name)
	if err != nil {
		return refs.Ref{}, err
	}
	return r.createRef(ctx, n, rev)
}

func (r *Repo) createRef(ctx context.Context, n refs.Name, rev string) (refs.Ref, error) {
	if rev == "" {
		rev = "HEAD"
	}
	rec, _, err := r.refs.ResolveRecord(ctx, rev)
	if err != nil {
		return refs.Ref{}, err
	}
	err = r.refs.Create(ctx, n, rec.ID, "created at "+rev, func(ctx context.Context) error { return r.refuseRetired(ctx, rec) })
	if err != nil {
		return refs.Ref{}, err
	}
	return refs.Ref{Name: n, ID: rec.ID}, nil
}

// DeleteBranch deletes a branch (refs.Manager.DeleteBranch: logged, a
// compare-and-swap to the tombstone). The versions stay in the repository.
// It refuses the branch HEAD names (refs.ErrDeleteHead).
func (r *Repo) DeleteBranch(ctx context.Context, name string) (refs.Ref, error) {
	n, err := refs.Branch(name)
	if err != nil {
		return refs.Ref{}, err
	}
	return r.refs.DeleteBranch(ctx, n)
}

// MoveOptions are the inputs of MoveBranch.
type MoveOptions struct {
	// Backwards allows moving to a version that is not a descendant of the
	// one the branch holds (DESIGN.md §4.4: moving back is explicit).
	Backwards bool
	// Why is recorded in the ref log entry.
	Why string
}

// MoveBranch moves an existing branch to rev's version
// (refs.Manager.MoveBranch: forward, back only with o.Backwards, or the
// repair of a damaged ref), refusing a version out of retention
// (*RetiredError). Errors as refs.Manager.MoveBranch.
func (r *Repo) MoveBranch(ctx context.Context, name, rev string, o MoveOptions) (refs.MoveResult, error) {
	return r.refs.MoveBranch(ctx, name, rev, refs.MoveOptions{Backwards: o.Backwards, Why: o.Why, Check: r.refuseRetired})
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
// holding id was deleted, those only the ref log reaches.
func (r *Repo) OnlyReachedFrom(ctx context.Context, id version.ID) ([]version.ID, error) {
	branches, _, err := r.refs.List(ctx, refs.HeadsPrefix)
	if err != nil {
		return nil, err
	}
	on := map[version.ID]bool{}
	for _, b := range branches {
		log, err := r.Log(ctx, b.ID, 0)
		if err != nil {
			return nil, err
		}
		for _, rec := range log {
			on[rec.ID] = true
		}
	}
	log, err := r.Log(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	var out []version.ID
	for _, rec := range log {
		if !on[rec.ID] {
			out = append(out, rec.ID)
		}
	}
	return out, nil
}

// Head returns the branch HEAD names (refs.Manager.Head).
func (r *Repo) Head(ctx context.Context) (refs.Name, error) { return r.refs.Head(ctx) }

// Refs lists the refs under prefix and those that cannot be read
// (refs.Manager.List).
func (r *Repo) Refs(ctx context.Context, prefix string) ([]refs.Ref, []error, error) {
	return r.refs.List(ctx, prefix)
}
