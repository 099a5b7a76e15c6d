// Package pins carries out what a project that reads fdl repositories does
// with its lockfile (docs/spec.md §21): pin a repository's version under a
// name (Add), move pins to their refs' heads (Update), check every pin
// (Check), drop one (Remove), and print the DuckDB line of a pinned
// version (Attach), through the reader's catalog cache when one is given
// (§21.1).
//
// It sits above repo (it opens the repositories the lockfile names, with
// the command's options) and below the command: the lockfile's format is
// package lockfile's, the cache's files package cache's, and which versions
// stay in retention package retention's. Every operation that changes the
// lockfile reads it, changes it in memory and saves it once, atomically
// (lockfile.File.Save): an operation that fails leaves the file as it was.
// It holds the lockfile's writers' lock (lockfile.Lock) from before its
// read to after its save, so two at once never write over each other.
package pins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/fdl-dev/fdl/cache"
	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// RetentionWarning is how close to leaving retention a pinned version may
// be before Add and Update warn (one week).
const RetentionWarning = 7 * 24 * time.Hour

// Env is where an operation runs: which lockfile, how repositories are
// opened, and the catalog cache.
type Env struct {
	// Lockfile is the lockfile's path as the user gave it (--lockfile);
	// "" finds the nearest fdl.lock from Dir up (lockfile.Find).
	Lockfile string
	// Dir is the folder the command runs in (the process's, or -C DIR);
	// "" is the process's working directory.
	Dir string
	// Open opens the repository at a URL or folder path with the
	// command's options (progress, the stores it registered).
	Open func(ctx context.Context, url string) (*repo.Repo, error)
	// Cache, when set, is the reader's catalog cache: catalogs are
	// checked by filling it (once per catalog), not by streaming them.
	Cache *cache.Cache
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// PinView is a pin as operations report it (JSON: the lockfile's fields,
// the repository as the file holds it).
type PinView struct {
	Repository    string     `json:"repository"`
	Ref           string     `json:"ref,omitempty"`
	Version       version.ID `json:"version"`
	Seq           int64      `json:"seq"`
	CatalogSize   int64      `json:"catalog_size"`
	CatalogSHA256 string     `json:"catalog_sha256"`
}

func view(p lockfile.Pin) PinView {
	return PinView{Repository: p.Repository, Ref: string(p.Ref), Version: p.Version, Seq: p.Seq, CatalogSize: p.CatalogSize, CatalogSHA256: p.CatalogSHA256}
}

// pinOf is the pin of rec in the repository stored as repository,
// following ref ("" for none).
func pinOf(repository string, ref refs.Name, rec *version.Record) lockfile.Pin {
	return lockfile.Pin{Repository: repository, Ref: ref, Version: rec.ID, Seq: rec.Seq, CatalogSize: rec.Catalog.Size, CatalogSHA256: rec.Catalog.SHA256}
}

// opened is a lockfile read for an operation.
type opened struct {
	path string // absolute
	file *lockfile.File
	// missing: the file does not exist yet (Add makes it).
	missing bool
	// release releases the writers' lock (openWrite); nil for a reader.
	release func()
}

func (o *opened) dir() string { return filepath.Dir(o.path) }

// close releases the writers' lock, if o holds it.
func (o *opened) close() {
	if o.release != nil {
		o.release()
		o.release = nil
	}
}

// open finds and reads the lockfile: env.Lockfile, else the nearest
// fdl.lock from env.Dir. With create, a missing file is an empty one, at
// env.Lockfile or in env.Dir. Errors: *NoLockfileError; lockfile.Load's.
func open(env Env, create bool) (*opened, error) {
	return openAt(context.Background(), env, create, false)
}

// openWrite is open for an operation that changes the lockfile: it takes
// the lockfile's writers' lock (lockfile.Lock) before it reads the file,
// and holds it until the caller's close, after its Save, so that two
// writers at once never lose each other's change. Errors: open's,
// lockfile.Lock's.
func openWrite(ctx context.Context, env Env, create bool) (*opened, error) {
	return openAt(ctx, env, create, true)
}

func openAt(ctx context.Context, env Env, create, write bool) (*opened, error) {
	dir := env.Dir
	if dir == "" {
		dir = "."
	}
	path := env.Lockfile
	if path == "" {
		found, err := lockfile.Find(dir)
		switch {
		case errors.Is(err, lockfile.ErrNotFound) && create:
			path = filepath.Join(dir, lockfile.FileName)
		case errors.Is(err, lockfile.ErrNotFound):
			abs, _ := filepath.Abs(dir)
			return nil, &NoLockfileError{Dir: abs}
		case err != nil:
			return nil, err
		default:
			path = found
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	var release func()
	if write {
		if release, err = lockfile.Lock(ctx, abs); err != nil {
			return nil, err
		}
	}
	f, err := lockfile.Load(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		return &opened{path: abs, file: lockfile.New(), missing: true, release: release}, nil
	case err == nil:
		return &opened{path: abs, file: f, release: release}, nil
	}
	if release != nil {
		release()
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NoLockfileError{Path: abs}
	}
	return nil, err
}

// pin returns the pin name of o. Errors: lockfile.CheckName's for a name
// no pin can have (so no hint offers to pin it); *UnknownPinError.
func (o *opened) pin(name string) (lockfile.Pin, error) {
	if err := lockfile.CheckName(name); err != nil {
		return lockfile.Pin{}, err
	}
	p, ok := o.file.Pin(name)
	if !ok {
		return lockfile.Pin{}, &UnknownPinError{Name: name, Lockfile: o.path, Names: o.file.Names()}
	}
	return p, nil
}

// repos opens each repository once per operation.
type repos struct {
	env    Env
	open   map[string]*repo.Repo
	failed map[string]error // a repository that did not open: not tried again
}

func newRepos(env Env) *repos {
	return &repos{env: env, open: map[string]*repo.Repo{}, failed: map[string]error{}}
}

// get opens (once) the repository at url; one that failed to open is not
// tried again (an unreachable store costs its retries once, not once per
// pin). Errors: env.Open's, naming the pin.
func (rs *repos) get(ctx context.Context, pinName, url string) (*repo.Repo, error) {
	if r, ok := rs.open[url]; ok {
		return r, nil
	}
	if err, ok := rs.failed[url]; ok {
		return nil, fmt.Errorf("pin %s: %w", pinName, err)
	}
	r, err := rs.env.Open(ctx, url)
	if err != nil {
		rs.failed[url] = err
		return nil, fmt.Errorf("pin %s: %w", pinName, err)
	}
	rs.open[url] = r
	return r, nil
}

func (rs *repos) close() {
	for _, r := range rs.open {
		r.Close()
	}
}

// checkCatalog checks rec's stored catalog against its record: through
// the cache when there is one (a cached catalog was checked when it was
// made, and is not downloaded again), else by the version folder's
// listing and a streamed read. Errors: *repo.ChecksumError,
// *repo.ExtraFilesError, the store's.
func checkCatalog(ctx context.Context, env Env, r *repo.Repo, rec *version.Record) error {
	if env.Cache != nil {
		_, err := r.CachedCatalog(ctx, env.Cache, rec)
		return err
	}
	if err := r.CheckVersionFolder(ctx, rec); err != nil {
		return err
	}
	return r.CheckCatalog(ctx, rec)
}

// matches checks that the repository's record of the pinned version is
// the version the pin describes; url is where the repository was opened. Errors: *MismatchError.
func matches(name, url string, p lockfile.Pin, rec *version.Record) error {
	if rec.Seq != p.Seq || rec.Catalog.Size != p.CatalogSize || rec.Catalog.SHA256 != p.CatalogSHA256 {
		return &MismatchError{Name: name, Version: p.Version, Pin: view(p), URL: url, Seq: rec.Seq, Size: rec.Catalog.Size, SHA256: rec.Catalog.SHA256}
	}
	return nil
}

// leaving returns when rec may leave retention under r's policy, when
// that is within RetentionWarning of now (ok false otherwise, or when the
// policy dates no leaving). A pin following a tag is never warned about:
// the tag keeps its version for good. A version no rule keeps but the
// count rule, and that rule no longer keeps (an older version, main~3 or
// an id, no ref pointing at it, not among any branch's last KeepLast),
// leaves at the next gc: now is returned. That lists the refs once and
// reads each branch's last KeepLast versions (history packs: a few reads
// each).
func leaving(ctx context.Context, env Env, r *repo.Repo, p lockfile.Pin, rec *version.Record) (time.Time, bool, error) {
	if p.Ref.IsTag() {
		return time.Time{}, false, nil
	}
	pol, _, err := r.Policy(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	at, ok := pol.LeavesAt(rec.CreatedAt)
	if ok && at.Sub(env.now()) <= RetentionWarning {
		return at, true, nil
	}
	if ok || pol.KeepLast <= 0 {
		return time.Time{}, false, nil // the time rule keeps it a while, or no count rule
	}
	kept, err := keptByRefs(ctx, r, rec.ID, pol.KeepLast)
	if err != nil || kept {
		return time.Time{}, false, err
	}
	return env.now(), true, nil
}

// keptByRefs reports whether a ref points at id or id is among a
// branch's last keepLast versions (first parents).
func keptByRefs(ctx context.Context, r *repo.Repo, id version.ID, keepLast int) (bool, error) {
	pointing, _, err := r.Refs().List(ctx, "refs/")
	if err != nil {
		return false, err
	}
	for _, ref := range pointing {
		if ref.ID == id {
			return true, nil
		}
	}
	for _, ref := range pointing {
		if !ref.Name.IsBranch() {
			continue
		}
		last, err := r.Log(ctx, ref.ID, keepLast)
		if err != nil {
			return false, err
		}
		for _, k := range last {
			if k.ID == id {
				return true, nil
			}
		}
	}
	return false, nil
}
