package pins

import (
	"context"
	"time"

	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// AddOptions are the inputs of Add.
type AddOptions struct {
	// Name is the pin's name (lockfile.CheckName).
	Name string
	// Repository is the repository's URL or folder path as the user gave
	// it (a relative path already made relative to where fdl runs).
	Repository string
	// Rev is the revision pinned (docs/spec.md §11); "" is the
	// repository's HEAD (its default branch's head). A revision that names
	// a branch or tag as it is (main, refs/tags/v1, HEAD) makes the pin
	// follow that ref; any other (an id, main~2, main@12) follows none.
	Rev string
	// Signed, when Require is set, refuses a version whose record has no
	// good signature by a signer the allowed signers file allows.
	Signed Signed
}

// Signed is the signature a pinned version's record must have (docs/spec.md
// §20): with Require, a good one by a signer the allowed signers file
// Signers (ssh-keygen's format, namespace fdl) allows. The zero value
// requires nothing.
type Signed struct {
	Require bool
	Signers string
}

// check refuses rec unless s requires nothing or its record has a good
// signature by an allowed signer, read before its catalog: the record
// judged is the one rec holds (repo.Repo.Show with RequireSigned).
// Errors: *repo.SignatureError, *repo.SignersReadError, the store's.
func (s Signed) check(ctx context.Context, r *repo.Repo, rec *version.Record) error {
	if !s.Require {
		return nil
	}
	_, err := r.Show(ctx, string(rec.ID), repo.ShowOptions{NoVerify: true, RequireSigned: true, Signers: s.Signers})
	return err
}

// Added is what Add did. Its JSON is 'fdl lock add --json'.
type Added struct {
	Lockfile string   `json:"lockfile"`
	Name     string   `json:"name"`
	Pin      PinView  `json:"pin"`
	Previous *PinView `json:"previous,omitempty"`
	// Created is true when Add made the lockfile.
	Created bool `json:"created"`
	// Unchanged is true when the pin was there already, as it is.
	Unchanged bool `json:"unchanged"`
	// LeavesRetention is when the pinned version may leave retention, set
	// when that is within RetentionWarning (retention.Policy.LeavesAt).
	LeavesRetention *time.Time `json:"leaves_retention,omitempty"`
}

// Add pins opts.Rev of the repository at opts.Repository under opts.Name
// in the lockfile (made in env.Dir when none is found; at env.Lockfile
// when given). The version must be in retention and its catalog must
// match its record (checkCatalog). A name already pinned to the same
// repository is moved to the new version; to another repository,
// refused. The repository is stored relative to the lockfile's folder
// when it is a folder beside it (lockfile.StoredRepository).
// Errors: lockfile.CheckName's; *PinExistsError; the repository's
// (opening it, the Resolve errors, *repo.RetiredError,
// *repo.ChecksumError); lockfile's (reading, writing).
func Add(ctx context.Context, env Env, opts AddOptions) (*Added, error) {
	if err := lockfile.CheckName(opts.Name); err != nil {
		return nil, err
	}
	lf, err := openWrite(ctx, env, true)
	if err != nil {
		return nil, err
	}
	defer lf.close()
	stored, err := lockfile.StoredRepository(lf.dir(), opts.Repository)
	if err != nil {
		return nil, err
	}
	prev, had := lf.file.Pin(opts.Name)
	if had && prev.Repository != stored {
		return nil, &PinExistsError{Name: opts.Name, Lockfile: lf.path, Has: prev.Repository, Repository: stored}
	}
	rs := newRepos(env)
	defer rs.close()
	r, err := rs.get(ctx, opts.Name, lockfile.RepositoryURL(lf.dir(), lockfile.Pin{Repository: stored}))
	if err != nil {
		return nil, err
	}
	rev := opts.Rev
	if rev == "" {
		rev = "HEAD"
	}
	rv, err := r.Resolve(ctx, rev)
	if err != nil {
		return nil, err
	}
	rec, err := r.Record(ctx, rv.ID)
	if err != nil {
		return nil, err
	}
	if err := opts.Signed.check(ctx, r, rec); err != nil {
		return nil, err
	}
	if err := r.RefuseRetired(ctx, rec); err != nil {
		return nil, err
	}
	if err := checkCatalog(ctx, env, r, rec); err != nil {
		return nil, err
	}
	p := pinOf(stored, followed(rev, rv), rec)
	out := &Added{Lockfile: lf.path, Name: opts.Name, Pin: view(p), Created: lf.missing}
	if at, ok, err := leaving(ctx, env, r, p, rec); err != nil {
		return nil, err
	} else if ok {
		out.LeavesRetention = &at
	}
	if had {
		v := view(prev)
		out.Previous = &v
		out.Unchanged = prev == p
	}
	if out.Unchanged {
		return out, nil
	}
	if err := lf.file.Set(opts.Name, p); err != nil {
		return nil, err
	}
	return out, lf.file.Save(lf.path)
}

// followed is the ref a pin made from rev follows: the branch or tag rev
// names as it is (HEAD: its branch), else none.
func followed(rev string, rv refs.Resolved) refs.Name {
	if rv.Ref == "" || !(rv.Ref.IsBranch() || rv.Ref.IsTag()) {
		return ""
	}
	if rev != "HEAD" && refs.RevName(rev) != rev {
		return ""
	}
	return rv.Ref
}

// Remove drops pin name from the lockfile and returns what it was.
// Errors: *NoLockfileError, *UnknownPinError, lockfile's (among them
// ctx's while it waits for another writer, lockfile.Lock).
func Remove(ctx context.Context, env Env, name string) (*Removed, error) {
	lf, err := openWrite(ctx, env, false)
	if err != nil {
		return nil, err
	}
	defer lf.close()
	p, err := lf.pin(name)
	if err != nil {
		return nil, err
	}
	lf.file.Delete(name)
	return &Removed{Lockfile: lf.path, Name: name, Pin: view(p)}, lf.file.Save(lf.path)
}

// Removed is what Remove did. Its JSON is 'fdl lock remove --json'.
type Removed struct {
	Lockfile string  `json:"lockfile"`
	Name     string  `json:"name"`
	Pin      PinView `json:"pin"`
}
