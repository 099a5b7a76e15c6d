package workdir

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/repo"
)

// refuseLocalWork returns ErrLocalWork when the working directory has
// versions not pushed or snapshots not committed.
func (w *Workdir) refuseLocalWork(ctx context.Context) error {
	pending, err := w.PendingVersions()
	if err != nil {
		return err
	}
	if n := len(pending); n > 0 {
		return &LocalWorkError{Dir: w.Dir, Branch: w.State.Branch, Unpushed: n}
	}
	st, err := w.Status(ctx, StatusOptions{Offline: true})
	if err != nil {
		return err
	}
	if n := len(st.Snapshots); n > 0 {
		return &LocalWorkError{Dir: w.Dir, Branch: w.State.Branch, Uncommitted: n}
	}
	return nil
}

// ErrLocalWork: a working directory of the branch holds snapshots not
// committed, or versions not pushed, which a migration of the branch would
// strand (they could no longer be pushed as a fast-forward).
// *LocalWorkError wraps it.
var ErrLocalWork = errors.New("working directory has work that is not pushed")

// LocalWorkError: the working directory Dir of Branch has Unpushed
// versions committed and not pushed, or Uncommitted snapshots after its
// base. It wraps ErrLocalWork.
type LocalWorkError struct {
	Dir, Branch string
	Unpushed    int
	Uncommitted int
}

func (e *LocalWorkError) Error() string {
	what := fmt.Sprintf("%d snapshot(s) not committed", e.Uncommitted)
	if e.Unpushed > 0 {
		what = fmt.Sprintf("%d version(s) committed and not pushed to %s", e.Unpushed, e.Branch)
	}
	return fmt.Sprintf("%s has %s, which could no longer be pushed once %s is migrated: %v", e.Dir, what, e.Branch, ErrLocalWork)
}

func (e *LocalWorkError) Unwrap() error { return ErrLocalWork }

// Migrate is repo.Repo.MigrateBranch run from the working directory: the
// branch defaults to its own, and when it is that branch, the directory
// must have no snapshot not committed and no version not pushed
// (*LocalWorkError), checked under its lock. The directory is never
// changed (MigrateResult.WorkdirBehind says it holds the old catalog).
func (w *Workdir) Migrate(ctx context.Context, o repo.MigrateOptions) (*repo.MigrateResult, error) {
	r, err := w.Repo(ctx)
	if err != nil {
		return nil, err
	}
	if o.Local, err = w.Local(); err != nil {
		return nil, err
	}
	if o.Branch == "" || o.Branch == w.State.Branch {
		unlock, err := w.lock("migrate")
		if err != nil {
			return nil, err
		}
		defer unlock()
		if err := w.refuseLocalWork(ctx); err != nil {
			return nil, err
		}
	}
	return r.MigrateBranch(ctx, o)
}
