package pins

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// AttachOptions are the inputs of Attach, one field per option of 'fdl
// attach', so that a reader's new requirement is one more field.
type AttachOptions struct {
	// Rev is the revision attached when Locked is "" (default: as fdl
	// show).
	Rev string
	// Alias is the database name (default: repo.Show's, or for a pin its
	// name made a database name, repo.ReaderAlias).
	Alias string
	// Locked is the name of the lockfile's pin to attach ("": Rev of the
	// repository the command opened).
	Locked string
	// Local is the working directory the command runs in (nil: none).
	Local *repo.Local
	// RequireSigned and Signers are repo.ShowOptions': a version without
	// a good signature by a signer the allowed signers file Signers
	// allows is refused (*repo.SignatureError) before its catalog is read.
	// With Locked, an unreachable repository is then its error, not the
	// cached catalog (the signature cannot be checked offline).
	RequireSigned bool
	Signers       string
}

// Attached is what Attach gives. Its JSON is 'fdl attach --json'.
type Attached struct {
	ID     version.ID `json:"id"`
	Seq    int64      `json:"seq"`
	Attach string     `json:"attach"`
	// Pin is the pin attached (--locked).
	Pin string `json:"locked,omitempty"`
	// Offline is true when the repository could not be read and the line
	// attaches the pinned catalog from the cache (Warning says why).
	Offline bool   `json:"offline,omitempty"`
	Warning string `json:"warning,omitempty"`
}

// Attach returns the DuckDB statement that attaches a version read-only,
// after checking it. Without o.Locked it is r's Attach of o.Rev (r is the
// repository the command opened), through env.Cache when set. With
// o.Locked, r is not used: the pin's repository is opened, the pinned
// version's record must be the one pinned (*MismatchError otherwise), in
// retention, with a catalog that matches it (repo.Repo.Attach: streamed,
// or through the cache). With a cache, a repository that cannot be opened
// is not an error when the pinned catalog is in the cache: the statement
// then attaches that copy (repo.OfflineAttach), Offline is set and Warning
// names the repository's error; DuckDB reads the catalog's metadata, and
// needs the store for data. Errors: *NoLockfileError, *UnknownPinError,
// *MismatchError, *OfflineError (unreachable, not cached), the
// repository's (Show's).
func Attach(ctx context.Context, env Env, r *repo.Repo, o AttachOptions) (*Attached, error) {
	so := repo.ShowOptions{Alias: o.Alias, Local: o.Local, Cache: env.Cache, RequireSigned: o.RequireSigned, Signers: o.Signers}
	if err := repo.CheckAlias(o.Alias); err != nil {
		return nil, err // before the offline path, which makes no Show
	}
	if o.Locked == "" {
		a, err := r.Attach(ctx, o.Rev, so)
		if err != nil {
			return nil, err
		}
		return &Attached{ID: a.ID, Seq: a.Seq, Attach: a.Attach}, nil
	}
	lf, err := open(env, false)
	if err != nil {
		return nil, err
	}
	p, err := lf.pin(o.Locked)
	if err != nil {
		return nil, err
	}
	if so.Alias == "" {
		so.Alias = repo.ReaderAlias(o.Locked)
	}
	url := lockfile.RepositoryURL(lf.dir(), p)
	pr, err := env.Open(ctx, url)
	var nre *repo.NotRepositoryError
	if o.RequireSigned && errors.As(err, &nre) {
		nre.NoCache = "--require-signed checks the version's signature against the repository (without it, --cache attaches the cached catalog, checked against the pin's sha256)"
	}
	if err != nil && (o.RequireSigned || errors.Is(err, store.ErrAuth)) {
		// Refused credentials are the reader's to mend (exit 5), not a
		// repository out of reach: no cached line hides them.
		return nil, fmt.Errorf("pin %s: %w", o.Locked, err)
	} else if err != nil {
		return offline(ctx, env, o.Locked, p, url, so.Alias, err)
	}
	defer pr.Close()
	rec, err := pr.Record(ctx, p.Version)
	if err != nil {
		return nil, fmt.Errorf("pin %s: %w", o.Locked, err)
	}
	if err := matches(o.Locked, url, p, rec); err != nil {
		return nil, err
	}
	a, err := pr.Attach(ctx, string(p.Version), so)
	if err != nil {
		return nil, fmt.Errorf("pin %s: %w", o.Locked, err)
	}
	return &Attached{ID: a.ID, Seq: a.Seq, Attach: a.Attach, Pin: o.Locked}, nil
}

// offline is Attach of pin name when its repository at url could not be
// opened (openErr): from the cache, or *OfflineError.
func offline(ctx context.Context, env Env, name string, p lockfile.Pin, url, alias string, openErr error) (*Attached, error) {
	if env.Cache == nil {
		return nil, fmt.Errorf("pin %s: %w", name, openErr)
	}
	path, ok, err := env.Cache.Get(ctx, p.CatalogSHA256)
	if err != nil {
		return nil, err
	}
	if !ok {
		var nre *repo.NotRepositoryError
		if errors.As(openErr, &nre) {
			nre.NoCache = "its catalog is not in the cache"
		}
		return nil, &OfflineError{Name: name, Version: p.Version, Cache: env.Cache.Dir(), Err: openErr}
	}
	origin, _ := env.Cache.Origin(p.CatalogSHA256)
	stmt, moved, err := repo.OfflineAttach(ctx, url, path, origin, alias)
	if err != nil {
		return nil, fmt.Errorf("pin %s: %w", name, err)
	}
	w := fmt.Sprintf("the repository of pin %s could not be read (%v): this line attaches its catalog from the cache (checked against the pin's sha256 when it was cached); the version's retention and its ref were not checked, and DuckDB needs the store to read table data", name, openErr)
	if moved {
		w += "; the catalog's data path is not the repository's data/ folder as the lockfile names it, so data is read where the catalog says"
	}
	return &Attached{ID: p.Version, Seq: p.Seq, Attach: stmt, Pin: name, Offline: true, Warning: w}, nil
}
