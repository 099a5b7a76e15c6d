package pins

import (
	"context"
	"errors"
	"strings"

	"github.com/fdl-dev/fdl/cache"
	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// States of a pin after Check.
const (
	StateOK     = "ok"     // readable as pinned, and its ref (if any) still there
	StateBehind = "behind" // readable as pinned; its ref moved on, or is gone
	StateBad    = "bad"    // not readable as pinned: Problem says why
)

// Problems of a bad pin (PinState.Kind).
const (
	ProblemUnreachable = "unreachable" // the repository could not be opened
	ProblemMissing     = "missing"     // the repository has no such (complete) version
	ProblemMismatch    = "mismatch"    // the version's record is not what the pin says
	ProblemRetired     = "retired"     // the version left retention: its catalog is gone
	ProblemChecksum    = "checksum"    // the stored catalog does not match its record
	ProblemError       = "error"       // another error reading it
	ProblemCacheFull   = "cache_full"  // the cache's disk has no room for its catalog (the check stopped there)
	ProblemRefGone     = "ref_gone"    // (behind) the followed ref no longer exists
)

// PinState is one pin as Check found it. Its JSON is an element of 'fdl
// lock check --json'.
type PinState struct {
	Name   string  `json:"name"`
	Pin    PinView `json:"pin"`
	Status string  `json:"state"`
	// Kind and Problem say what is wrong (bad) or that the ref is gone
	// (behind).
	Kind    string `json:"kind,omitempty"`
	Problem string `json:"problem,omitempty"`
	// Head is the followed ref's version, when it is not the pinned one,
	// and HeadSeq its seq.
	Head    version.ID `json:"head,omitempty"`
	HeadSeq int64      `json:"head_seq,omitempty"`
}

// Report is what Check found. Its JSON is 'fdl lock check --json'.
type Report struct {
	Lockfile string     `json:"lockfile"`
	Pins     []PinState `json:"pins"`
}

// Check checks every pin of the lockfile as `npm ci` checks a package
// lock: the repository opens, holds the version (complete), whose record
// is the one pinned (seq, catalog size and sha256), in retention, with a
// stored catalog that matches its record (checkCatalog: through the cache
// when there is one). It also reads each followed ref: a ref that moved on
// (or is gone) makes the pin behind. Every pin is checked, whatever the
// others gave. The report is returned with the error.
// Errors: *CheckError (ErrCheckFailed) naming each bad pin, else, with
// failBehind, *BehindError (ErrBehind) naming each pin behind;
// *NoLockfileError and lockfile's.
func Check(ctx context.Context, env Env, failBehind bool) (*Report, error) {
	lf, err := open(env, false)
	if err != nil {
		return nil, err
	}
	rs := newRepos(env)
	defer rs.close()
	rep := &Report{Lockfile: lf.path, Pins: []PinState{}}
	var bad, behind []PinState
	for _, n := range lf.file.Names() {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		p, _ := lf.file.Pin(n)
		s, err := checkPin(ctx, env, rs, lf, n, p)
		if err != nil {
			// Listed with the cache's trouble, then the check stops.
			s.Status, s.Kind, s.Problem = StateBad, ProblemCacheFull, err.Error()
			rep.Pins = append(rep.Pins, s)
			return rep, err
		}
		rep.Pins = append(rep.Pins, s)
		switch s.Status {
		case StateBad:
			bad = append(bad, s)
		case StateBehind:
			behind = append(behind, s)
		}
	}
	switch {
	case len(bad) > 0:
		return rep, &CheckError{Lockfile: lf.path, Bad: bad}
	case failBehind && len(behind) > 0:
		return rep, &BehindError{Lockfile: lf.path, Behind: behind}
	}
	return rep, nil
}

// checkPin checks one pin. Its error is the reader's machine's, not the
// pin's (the cache's disk is full: *cache.FullError), and stops the check.
func checkPin(ctx context.Context, env Env, rs *repos, lf *opened, name string, p lockfile.Pin) (PinState, error) {
	s := PinState{Name: name, Pin: view(p), Status: StateOK}
	fail := func(kind string, err error) (PinState, error) {
		s.Status, s.Kind, s.Problem = StateBad, kind, strings.TrimPrefix(err.Error(), "pin "+name+": ")
		return s, nil
	}
	url := lockfile.RepositoryURL(lf.dir(), p)
	r, err := rs.get(ctx, name, url)
	if err != nil {
		return fail(ProblemUnreachable, err)
	}
	rec, err := r.Record(ctx, p.Version)
	switch {
	case errors.Is(err, refs.ErrUnknownRev), errors.Is(err, repo.ErrIncomplete):
		return fail(ProblemMissing, err)
	case err != nil:
		return fail(ProblemError, err)
	}
	if err := matches(name, url, p, rec); err != nil {
		return fail(ProblemMismatch, err)
	}
	if err := r.RefuseRetired(ctx, rec); errors.Is(err, repo.ErrRetired) {
		return fail(ProblemRetired, err)
	} else if err != nil {
		return fail(ProblemError, err)
	}
	var full *cache.FullError
	if err := checkCatalog(ctx, env, r, rec); errors.Is(err, repo.ErrChecksum) || errors.Is(err, repo.ErrExtraFiles) {
		return fail(ProblemChecksum, err)
	} else if errors.As(err, &full) {
		return s, err
	} else if err != nil {
		return fail(ProblemError, err)
	}
	if p.Ref == "" {
		return s, nil
	}
	rv, err := r.Resolve(ctx, string(p.Ref))
	switch {
	case errors.Is(err, refs.ErrUnknownRev), errors.Is(err, refs.ErrNotFound):
		s.Status, s.Kind, s.Problem = StateBehind, ProblemRefGone, (&RefGoneError{Name: name, Ref: p.Ref, Err: err}).Error()
	case err != nil:
		return fail(ProblemError, err)
	case rv.ID != p.Version:
		s.Status, s.Head = StateBehind, rv.ID
		if hr, err := r.Record(ctx, rv.ID); err == nil {
			s.HeadSeq = hr.Seq
		}
	}
	return s, nil
}
