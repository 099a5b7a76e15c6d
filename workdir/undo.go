package workdir

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/signature"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Revert and restore: new snapshots in the working catalog that take state
// back (docs/spec.md §19), the way Git's revert and restore do for files.

// UndoKind says whether an undo reverts a version's changes or restores a
// version's state.
type UndoKind string

// The kinds of undo.
const (
	UndoRevert  UndoKind = "revert"
	UndoRestore UndoKind = "restore"
)

// RevertOptions are the inputs of Workdir.Revert.
type RevertOptions struct {
	Rev string // the version whose changes to undo
	// Message is the commit message (default: Revert "<REV's first line>",
	// then "This reverts version <id> (seq N).").
	Message string
	Author  string // default: DefaultActor
	// NoCommit leaves the snapshot in the working catalog for the next
	// commit, which records it (Git's revert --no-commit).
	NoCommit bool
	Now      func() time.Time // tests
	// SignKey, if set, signs the version the revert commits
	// (CommitOptions.SignKey); it is loaded before anything is written.
	SignKey string
}

// RestoreOptions are the inputs of Workdir.Restore.
type RestoreOptions struct {
	Source string // the version whose state to bring back
	Author string // written as the snapshot's author (default: DefaultActor)
}

// UndoResult says what a revert or restore wrote.
type UndoResult struct {
	Kind UndoKind `json:"kind"`
	// Version is the version reverted or restored, with its short id and
	// seq.
	Version version.ID `json:"version"`
	Short   string     `json:"short_id"`
	Seq     int64      `json:"seq"`
	// Snapshot is the snapshot written into the working catalog; Ended and
	// Reopened count the catalog rows it ended and copied back; Changes is
	// its changes_made.
	Snapshot int64  `json:"snapshot"`
	Ended    int64  `json:"ended"`
	Reopened int64  `json:"reopened"`
	Changes  string `json:"changes"`
	// Linked counts the data and delete files that came back as a file of
	// their own (a copy, or a copy-on-write clone, beside the original); Shared
	// those that kept the original's path because it is not a local file
	// (an object store): DuckLake's ducklake_expire_snapshots followed by
	// ducklake_cleanup_old_files would delete such a file while the
	// working catalog still reads it (docs/spec.md §19).
	Linked int64 `json:"linked"`
	Shared int64 `json:"shared"`
	// Unchanged is true when a restore found the working catalog already
	// in the state asked: nothing was written (Snapshot is -1).
	Unchanged bool `json:"unchanged"`
	// Committed is the new local version (a revert without NoCommit); nil
	// otherwise: the next commit records the undo.
	Committed *version.Record `json:"committed_record,omitempty"`
	// Message is the commit message the next commit takes when given none.
	Message string `json:"message"`
}

// Revert undoes the changes of version o.Rev as one new snapshot of the
// working catalog, on top of everything after it (Git's revert), and
// commits it as a local version recording `reverts` (unless o.NoCommit).
// Rev must be in the working directory's history (its base or an
// ancestor) and the working catalog must have nothing uncommitted. What
// comes back and what is refused: lakewriter.Writer.Revert, over the
// snapshots Rev adds (a first version: all but snapshot 0, the new lake).
//
// Errors: *NotInHistoryError, *UndoUncommittedError, *RevertConflictError
// (wrapping refs.ErrRefused: nothing was written), *NotRestorableError,
// *DataMissingError (a file the snapshot would read again is not in the
// store), ErrNothingToUndo, the Resolve errors, ducklake.ErrLocked.
func (w *Workdir) Revert(ctx context.Context, o RevertOptions) (*UndoResult, error) {
	r, err := w.Repo(ctx)
	if err != nil {
		return nil, err
	}
	unlock, err := w.lockFresh("revert")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := w.catalogGone(); err != nil {
		return nil, err
	}
	if err := w.settlePull(ctx, r); err != nil {
		return nil, err
	}
	target, err := w.undoTarget(ctx, r, o.Rev)
	if err != nil {
		return nil, err
	}
	if err := w.requireClean(ctx); err != nil {
		return nil, err
	}
	var signer *signature.Signer
	if o.SignKey != "" && !o.NoCommit {
		if signer, err = repo.LoadSigner(ctx, o.SignKey); err != nil {
			return nil, err
		}
	}
	after := max(target.DuckLake.Adds.First-1, 0)
	msg := o.Message
	if strings.TrimSpace(msg) == "" {
		msg = fmt.Sprintf("Revert %q\n\nThis reverts version %s (seq %d).", version.FirstLine(target.Message), target.ID, target.Seq)
	}
	res, err := w.undo(ctx, r, target, UndoRevert, o.Author, msg, func(lw *lakewriter.Writer) (*lakewriter.UndoResult, error) {
		return lw.Revert(ctx, after, target.DuckLake.Snapshot)
	})
	if err != nil {
		return nil, err
	}
	if !o.NoCommit {
		if res.Committed, err = w.commit(ctx, CommitOptions{Message: msg, Author: o.Author, Now: o.Now, Signer: signer}); err != nil {
			return res, &UndoNotCommittedError{Kind: UndoRevert, Version: target.ID, Seq: target.Seq, Snapshot: res.Snapshot, Dir: w.Dir, Base: w.State.Base, Err: err}
		}
	}
	return res, nil
}

// UndoNotCommittedError: a revert wrote its snapshot into the working
// catalog, but the commit that records it failed or was interrupted. The
// snapshot stays, with the revert's message prepared (state.json's undo):
// a commit records it, or a restore of the base takes it back. It wraps
// Err (context.Canceled when interrupted).
type UndoNotCommittedError struct {
	Kind     UndoKind
	Version  version.ID // the version reverted
	Seq      int64
	Snapshot int64  // the snapshot written
	Dir      string // the working directory
	Base     version.ID
	Err      error
}

func (e *UndoNotCommittedError) Error() string {
	return fmt.Sprintf("%s of version %s (seq %d): its snapshot %d was written and stays in the working catalog of %s, but the commit that records it did not finish: %v",
		e.Kind, e.Version, e.Seq, e.Snapshot, e.Dir, e.Err)
}

func (e *UndoNotCommittedError) Unwrap() error { return e.Err }

// Restore writes the state of version o.Source into the working catalog
// as one new snapshot (Git's restore --source): everything after it is
// ended, everything it had is back. It does not commit: the next commit
// records `restores`. Source must be in the working directory's history;
// uncommitted snapshots are allowed (restoring the base discards them, as
// new snapshots: they stay in the catalog's history).
//
// When the working catalog already has Source's state, nothing is written
// and the result says so (Unchanged, Snapshot -1): no error.
//
// Errors: *NotInHistoryError, *NotRestorableError, *DataMissingError, the
// Resolve errors, ducklake.ErrLocked.
func (w *Workdir) Restore(ctx context.Context, o RestoreOptions) (*UndoResult, error) {
	r, err := w.Repo(ctx)
	if err != nil {
		return nil, err
	}
	unlock, err := w.lockFresh("restore")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := w.catalogGone(); err != nil {
		return nil, err
	}
	if err := w.settlePull(ctx, r); err != nil {
		return nil, err
	}
	target, err := w.undoTarget(ctx, r, o.Source)
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("Restore the state of version %s (seq %d)\n\nIts message: %s", target.ID, target.Seq, version.FirstLine(target.Message))
	res, err := w.undo(ctx, r, target, UndoRestore, o.Author, msg, func(lw *lakewriter.Writer) (*lakewriter.UndoResult, error) {
		return lw.Restore(ctx, target.DuckLake.Snapshot)
	})
	if errors.Is(err, ErrNothingToUndo) {
		// Asking for the state the catalog has is no error (as git
		// restore of an unchanged file): nothing is written.
		out := &UndoResult{Kind: UndoRestore, Version: target.ID, Short: string(target.ID), Seq: target.Seq, Snapshot: -1, Unchanged: true, Changes: ""}
		if ab, aerr := r.Abbrev(ctx); aerr == nil {
			out.Short = ab.Short(target.ID)
		}
		return out, nil
	}
	return res, err
}

// lockFresh takes the working directory's lock and reads its state again.
func (w *Workdir) lockFresh(what string) (func(), error) {
	unlock, err := w.lock(what)
	if err != nil {
		return nil, err
	}
	_ = w.reload() // under the lock: another process may have committed
	return unlock, nil
}

// undoTarget resolves rev and checks that the working catalog holds its
// snapshots: rev is the base or an ancestor of it, and the catalog still
// has rev's last snapshot with its snapshot_time.
func (w *Workdir) undoTarget(ctx context.Context, r *repo.Repo, rev string) (*version.Record, error) {
	if w.BaseRecord == nil {
		return nil, &NotInHistoryError{Rev: rev, Dir: w.Dir}
	}
	l, err := w.Local()
	if err != nil {
		return nil, err
	}
	side, err := r.Side(ctx, l, rev)
	if err != nil {
		return nil, err
	}
	target := side.Record()
	ok, err := refs.IsAncestor(ctx, r.RecordsWith(l), target.ID, w.BaseRecord.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &NotInHistoryError{Rev: rev, ID: target.ID, Seq: target.Seq, Dir: w.Dir, Base: w.BaseRecord.ID}
	}
	cat, err := ducklake.Open(ctx, w.CatalogPath())
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	holds, err := repo.HoldsSnapshot(ctx, cat, target)
	if err != nil {
		return nil, err
	}
	if !holds {
		return nil, &NotInHistoryError{Rev: rev, ID: target.ID, Seq: target.Seq, Dir: w.Dir, Base: w.BaseRecord.ID, Expired: true}
	}
	return target, nil
}

// requireClean refuses a working catalog with snapshots after its base.
func (w *Workdir) requireClean(ctx context.Context) error {
	cat, err := ducklake.Open(ctx, w.CatalogPath())
	if err != nil {
		return err
	}
	snaps, err := cat.Snapshots(ctx)
	cat.Close()
	if err != nil {
		return err
	}
	if _, err := w.checkLineage(snaps); errors.Is(err, ErrNothingToCommit) {
		return nil
	} else if err != nil {
		return err
	}
	n := 0
	for _, s := range snaps {
		if s.ID > w.BaseRecord.DuckLake.Snapshot {
			n++
		}
	}
	return &UndoUncommittedError{Dir: w.Dir, Snapshots: n, Base: w.BaseRecord.ID}
}

// undo writes one revert or restore snapshot into the working catalog with
// write, after checking that every file it reads again is in the store,
// and records it in the working directory's state for the next commit.
func (w *Workdir) undo(ctx context.Context, r *repo.Repo, target *version.Record, kind UndoKind, author, msg string,
	write func(*lakewriter.Writer) (*lakewriter.UndoResult, error)) (*UndoResult, error) {
	lw, err := lakewriter.Open(ctx, w.CatalogPath())
	if err != nil {
		return nil, fmt.Errorf("open %s for writing: %w", w.CatalogPath(), err)
	}
	if author == "" {
		author = repo.DefaultActor()
	}
	lw.Author = author
	lw.Message = fmt.Sprintf("fdl %s of version %s (seq %d)", kind, target.ID, target.Seq)
	lw.CheckFiles = func(paths []string) error { return checkStored(ctx, r, target, paths) }
	res, err := write(lw)
	if cerr := lw.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, w.undoError(ctx, r, target, kind, err)
	}
	w.step(string(kind) + ":written")
	out := &UndoResult{Kind: kind, Version: target.ID, Seq: target.Seq, Snapshot: res.Snapshot, Ended: res.Ended, Reopened: res.Reopened, Changes: res.Changes,
		Linked: res.Linked, Shared: res.Shared, Message: msg}
	var local []version.ID
	if l, err := w.Local(); err == nil {
		for _, p := range l.Pending {
			local = append(local, p.Record.ID)
		}
	}
	if ab, err := r.Abbrev(ctx, local...); err == nil {
		out.Short = ab.Short(target.ID)
	}
	w.State.Undo = &PendingUndo{Kind: kind, Version: target.ID, Snapshot: res.Snapshot, Message: msg}
	if err := w.save(w.BaseRecord); err != nil {
		return nil, err
	}
	return out, nil
}

// checkStored refuses files of the repository's data folder that the store
// does not hold (gc deletes the files only retired versions read).
func checkStored(ctx context.Context, r *repo.Repo, target *version.Record, paths []string) error {
	norm, err := r.Normaliser()
	if err != nil {
		return err
	}
	var missing []string
	seen := map[string]bool{}
	for _, p := range paths {
		pl, err := norm.Place(p)
		if err != nil || pl.Key == "" || seen[pl.Key] {
			continue // outside the repository: fdl cannot tell
		}
		seen[pl.Key] = true
		if _, err := r.Store().Stat(ctx, pl.Key); errors.Is(err, store.ErrNotExist) {
			missing = append(missing, pl.Key)
		} else if err != nil {
			return err
		}
	}
	if len(missing) == 0 {
		return nil
	}
	shown := missing[:min(len(missing), 5)]
	return &UndoDataMissingError{Version: target.ID, Seq: target.Seq, Missing: shown, Count: len(missing)}
}

// undoError turns the writer's refusals into the package's errors.
func (w *Workdir) undoError(ctx context.Context, r *repo.Repo, target *version.Record, kind UndoKind, err error) error {
	var ce *lakewriter.ConflictError
	switch {
	case errors.As(err, &ce):
		e := &RevertConflictError{Version: target.ID, Seq: target.Seq, Conflicts: ce.Conflicts, Later: map[int64]*version.Record{}}
		for _, c := range ce.Conflicts {
			if c.Snapshot > 0 {
				e.Later[c.Snapshot] = w.versionOfSnapshot(ctx, r, w.BaseRecord, c.Snapshot)
			}
		}
		return e
	case errors.Is(err, lakewriter.ErrCannotRestore), errors.Is(err, lakewriter.ErrSchemaDropped), errors.Is(err, lakewriter.ErrUnsupportedFormat):
		return &NotRestorableError{Kind: kind, Version: target.ID, Seq: target.Seq, Err: err}
	case errors.Is(err, lakewriter.ErrNoChange):
		return &NothingToUndoError{Kind: kind, Version: target.ID, Seq: target.Seq}
	}
	return err
}

// versionOfSnapshot returns the version of base's first-parent history
// that added snapshot s, or nil.
func (w *Workdir) versionOfSnapshot(ctx context.Context, r *repo.Repo, base *version.Record, s int64) *version.Record {
	l, _ := w.Local()
	recs := r.RecordsWith(l)
	for rec := base; rec != nil; {
		if a := rec.DuckLake.Adds; a.First <= s && s <= a.Last {
			return rec
		}
		p := rec.Parent()
		if p == "" {
			return nil
		}
		next, err := recs.Record(ctx, p)
		if err != nil {
			return nil
		}
		rec = next
	}
	return nil
}
