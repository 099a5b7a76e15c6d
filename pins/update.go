package pins

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
)

// Change is what Update did to one pin. Its JSON is an element of 'fdl
// lock update --json'.
type Change struct {
	Name string  `json:"name"`
	From PinView `json:"from"`
	// To is the pin now (equal to From when it did not move).
	To PinView `json:"to"`
	// Moved is true when the pin moved to another version.
	Moved bool `json:"moved"`
	// Skipped says why a pin was left as it is without asking its
	// repository: it follows no ref.
	Skipped string `json:"skip_reason,omitempty"`
	// Totals sum what changed from the old version to the new (fdl
	// diff's summary); nil when it did not move, or when the diff could
	// not be read (DiffError says why).
	Totals    *meta.DiffTotals `json:"totals,omitempty"`
	DiffError string           `json:"diff_error,omitempty"`
	// LeavesRetention: as Added's.
	LeavesRetention *time.Time `json:"leaves_retention,omitempty"`
}

// Updated is what Update did. Its JSON is 'fdl lock update --json'.
type Updated struct {
	Lockfile string   `json:"lockfile"`
	Changes  []Change `json:"pins"`
}

// Update moves the pins named (every pin when names is empty) to the
// current version of the ref each follows, and saves the lockfile once,
// when a pin moved. Each new version must be in retention and its catalog
// must match its record (checkCatalog), as for Add. For a pin that moves,
// the change from its old version to the new is read as fdl diff reads it
// (Repo.Diff): the diff's failure (the old version's catalog gone) is
// reported in the Change, not as an error. Pins that follow no ref are
// skipped. With sig.Require, each new version's record must have a good
// signature by an allowed signer (*repo.SignatureError otherwise). Nothing
// is written unless every pin named was brought up to date. Errors: *NoLockfileError, *UnknownPinError (before any
// repository is read), *RefGoneError, the repositories' errors (naming
// the pin), lockfile's.
func Update(ctx context.Context, env Env, names []string, sig Signed) (*Updated, error) {
	lf, err := openWrite(ctx, env, false)
	if err != nil {
		return nil, err
	}
	defer lf.close()
	if len(names) == 0 {
		names = lf.file.Names()
	}
	names = once(names) // "b b": b once
	for _, n := range names {
		if _, err := lf.pin(n); err != nil {
			return nil, err
		}
	}
	rs := newRepos(env)
	defer rs.close()
	out := &Updated{Lockfile: lf.path, Changes: []Change{}}
	moved := false
	for _, n := range names {
		p, _ := lf.file.Pin(n)
		c, err := update(ctx, env, rs, lf, n, p, sig)
		if err != nil {
			return nil, err
		}
		out.Changes = append(out.Changes, c)
		moved = moved || c.Moved
	}
	if !moved {
		return out, nil
	}
	return out, lf.file.Save(lf.path)
}

// update moves one pin in lf's File (not saved).
func update(ctx context.Context, env Env, rs *repos, lf *opened, name string, p lockfile.Pin, sig Signed) (Change, error) {
	c := Change{Name: name, From: view(p), To: view(p)}
	if p.Ref == "" {
		c.Skipped = "it follows no ref (pinned by version id): pin another version with fdl lock add " + name + " REPO REV"
		return c, nil
	}
	r, err := rs.get(ctx, name, lockfile.RepositoryURL(lf.dir(), p))
	if err != nil {
		return c, err
	}
	rv, err := r.Resolve(ctx, string(p.Ref))
	if errors.Is(err, refs.ErrUnknownRev) || errors.Is(err, refs.ErrNotFound) {
		return c, &RefGoneError{Name: name, Ref: p.Ref, Err: err}
	}
	if err != nil {
		return c, err
	}
	if rv.ID == p.Version {
		return c, nil
	}
	rec, err := r.Record(ctx, rv.ID)
	if err == nil {
		err = sig.check(ctx, r, rec)
	}
	if err == nil {
		err = r.RefuseRetired(ctx, rec)
	}
	if err == nil {
		err = checkCatalog(ctx, env, r, rec)
	}
	if err != nil {
		return c, fmt.Errorf("pin %s: %w", name, err) // which pin, of several
	}
	np := pinOf(p.Repository, p.Ref, rec)
	if err := lf.file.Set(name, np); err != nil {
		return c, err
	}
	c.To, c.Moved = view(np), true
	if d, err := r.Diff(ctx, repo.DiffOptions{From: string(p.Version), To: string(rec.ID)}); err != nil {
		c.DiffError = err.Error()
	} else {
		t := d.Totals
		c.Totals = &t
	}
	if at, ok, err := leaving(ctx, env, r, np, rec); err != nil {
		return c, err
	} else if ok {
		c.LeavesRetention = &at
	}
	return c, nil
}

// once returns names without repeats, in the order given.
func once(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
