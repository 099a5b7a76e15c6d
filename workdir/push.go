package workdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// PushOptions are the inputs of Push.
type PushOptions struct {
	// Branch is the branch to move (default: the branch the working
	// directory was checked out for).
	Branch string
	// AllowFormatChange lets the push move the branch to a newer DuckLake
	// format or DuckDB storage version (repo.PushOptions).
	AllowFormatChange bool
}

// Push publishes the working directory's unpushed versions and moves the
// branch to its base (repo.Repo.Publish: fast-forward, compare-and-swap),
// under the working directory's lock, then records the base as upstream
// and removes the pushed local copies. Errors: NothingToPushError before
// the first version; Publish's.
func (w *Workdir) Push(ctx context.Context, o PushOptions) (repo.PushResult, error) {
	if o.Branch == "" {
		o.Branch = w.State.Branch
	}
	name, err := refs.Branch(o.Branch)
	if err != nil {
		return repo.PushResult{}, err
	}
	return w.publish(ctx, "push", func(r *repo.Repo, l *repo.Local) (repo.PushResult, error) {
		return r.Publish(ctx, name, l.Base.ID, l.Pending, repo.PushOptions{AllowFormatChange: o.AllowFormatChange})
	}, repo.PushResult{Ref: name, Branch: name.Short()})
}

// RequestOptions are the inputs of PublishRequest.
type RequestOptions struct {
	// Update moves an existing request (repo.Repo.UpdateRequest); else
	// the request is created (repo.Repo.CreateRequest).
	Update bool
	// Into is the target branch (creation only; default: the working
	// directory's branch); Title what the request is for.
	Into, Title string
}

// PublishRequest offers the working directory's base as request name (its
// unpushed versions are uploaded as a push uploads them), under the
// working directory's lock; the versions then count as pushed here.
// Errors: NothingToPushError before the first version; CreateRequest's
// and UpdateRequest's.
func (w *Workdir) PublishRequest(ctx context.Context, name string, o RequestOptions) (repo.PushResult, error) {
	n, err := refs.Request(name)
	if err != nil {
		return repo.PushResult{}, err
	}
	return w.publish(ctx, "request", func(r *repo.Repo, l *repo.Local) (repo.PushResult, error) {
		ro := repo.RequestOptions{Into: o.Into, Title: o.Title, Local: l}
		if o.Update {
			return r.UpdateRequest(ctx, name, ro)
		}
		return r.CreateRequest(ctx, name, ro)
	}, repo.PushResult{Ref: n, Branch: name})
}

// publish runs a publish of the working directory's base (a push, a
// request) under the working directory's lock, with its pending versions,
// then records the base as upstream and removes the local copies the
// publish uploaded. Errors: NothingToPushError before the first version.
func (w *Workdir) publish(ctx context.Context, what string, do func(*repo.Repo, *repo.Local) (repo.PushResult, error), empty repo.PushResult) (repo.PushResult, error) {
	r, err := w.Repo(ctx)
	if err != nil {
		return repo.PushResult{}, err
	}
	if w.State.Base == "" {
		return empty, NothingToPushError{}
	}
	unlock, err := w.lock(what)
	if err != nil {
		return repo.PushResult{}, err
	}
	defer unlock()
	_ = w.reload() // under the lock: a commit may have just finished
	l, err := w.Local()
	if err != nil {
		return repo.PushResult{}, err
	}
	if err := w.checkLocalVersions(l.Pending); err != nil {
		return repo.PushResult{}, err
	}
	res, err := do(r, l)
	if err != nil {
		return res, w.localDamage(err, l.Pending)
	}
	w.step("push:state")
	w.State.Upstream = w.State.Base
	if err := w.save(w.BaseRecord); err != nil {
		return res, err
	}
	for _, p := range l.Pending {
		if p.Record.ID == w.State.Base && w.State.CatalogFormat == ducklake.BackendSQLite {
			w.keepBase(filepath.Join(p.Dir, version.CatalogFile), p.Record.ID)
		}
		os.RemoveAll(p.Dir)
	}
	w.removeLocalVersions("") // left by a commit --replace-unpushed stopped before its end
	res.Abbrev, _ = r.Abbrev(ctx, res.Old, res.New)
	return res, nil
}

// localDamage returns err as a *LocalVersionError when it is the upload's
// *repo.ChecksumError, or a file system error, of a file of a pending
// version (changed, removed or made unreadable after checkLocalVersions
// looked: older versions may be uploaded, no ref moved), else err as it
// is.
func (w *Workdir) localDamage(err error, pending []repo.Pending) error {
	var ce *repo.ChecksumError
	var pe *fs.PathError
	for _, p := range pending {
		in := func(path string) bool { return strings.HasPrefix(path, p.Dir+string(filepath.Separator)) }
		switch {
		case errors.As(err, &ce) && ce.Version == p.Record.ID && in(ce.Location):
			return &LocalVersionError{Dir: w.Dir, Version: p.Record.ID, Err: err}
		case errors.As(err, &pe) && in(pe.Path) && errors.Is(err, fs.ErrNotExist):
			return &LocalVersionError{Dir: w.Dir, Version: p.Record.ID, Err: fmt.Errorf("%s is missing (%w)", pe.Path, ErrLocalFileMissing)}
		case errors.As(err, &pe) && in(pe.Path):
			return &LocalVersionError{Dir: w.Dir, Version: p.Record.ID, Err: err}
		}
	}
	return err
}
