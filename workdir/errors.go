package workdir

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// The errors of the working directory: sentinels, wrapped with names, and
// typed errors carrying the fields a caller needs to say what to do next.
// The package never names a command in an error: the CLI adds that
// (cmd/fdl/errors.go). Errors of the repository itself are repo's.

// Sentinel errors of the working directory.
var (
	ErrNotWorkdir      = errors.New("not an fdl working directory")
	ErrNothingToCommit = errors.New("nothing to commit")
	ErrNotDescendant   = errors.New("working catalog does not descend from its base")
	ErrDirNotEmpty     = errors.New("directory is not empty")
	// ErrLocalFileMissing: a file of a version committed here and not
	// pushed (DIR/.fdl/versions/<id>/) is gone.
	ErrLocalFileMissing = errors.New("lost after commit")
)

// LocalVersionError: a version committed in Dir and not pushed cannot be
// published as it was committed: a file of DIR/.fdl/versions/<id>/ is
// missing (Err wraps ErrLocalFileMissing), its version.json does not parse
// (version.ErrBadRecord), or its catalog or dataset.json differ from the
// record (Err is a *repo.ChecksumError). The working catalog still holds
// every snapshot the unpushed versions hold, so one new version of it
// replaces them (Workdir.ReplaceUnpushed).
type LocalVersionError struct {
	Dir     string
	Version version.ID
	Err     error
	// NothingUploaded: a push or request found it before uploading
	// anything (checkLocalVersions).
	NothingUploaded bool
}

func (e *LocalVersionError) Error() string {
	msg := fmt.Sprintf("local version %s (committed in %s, not pushed): %v", e.Version, e.Dir, e.Err)
	if e.NothingUploaded {
		msg += "; nothing was uploaded"
	}
	return msg
}

func (e *LocalVersionError) Unwrap() error { return e.Err }

// NotWorkdirError: Dir has no .fdl/state.json. It wraps ErrNotWorkdir.
type NotWorkdirError struct {
	Dir string
	// Interrupted: Dir holds what a checkout that was stopped before its
	// end left (a .fdl folder without state.json); checking out into Dir
	// again clears it and completes.
	Interrupted bool
}

func (e *NotWorkdirError) Error() string {
	if e.Interrupted {
		return fmt.Sprintf("%s: %v: a checkout into it was interrupted (%s has no %s); check out into it again, which clears what it left", e.Dir, ErrNotWorkdir, StateDir, StateFile)
	}
	return fmt.Sprintf("%s: %v (no %s/%s)", e.Dir, ErrNotWorkdir, StateDir, StateFile)
}

func (e *NotWorkdirError) Unwrap() error { return ErrNotWorkdir }

// BusyError: another process holds the working directory's lock (a commit
// or push). It wraps the lock's error (filelock.ErrBusy).
type BusyError struct {
	Op      string // what was refused: "commit", "push"
	Dir     string
	Holders []string // "pid N (command)" holding the lock, where known (filelock.Holders)
	Err     error
}

func (e *BusyError) Error() string {
	who := ""
	if len(e.Holders) > 0 {
		who = " (" + strings.Join(e.Holders, ", ") + ")"
	}
	return fmt.Sprintf("cannot %s in %s: another commit or push is running in this working directory%s; wait for it to finish: %v", e.Op, e.Dir, who, e.Err)
}

func (e *BusyError) Unwrap() error { return e.Err }

// NoMessageError: a commit was asked without a message. It wraps
// ErrInvalidArguments.
type NoMessageError struct{}

func (NoMessageError) Error() string {
	return "a commit needs a message: " + repo.ErrInvalidArguments.Error()
}

func (NoMessageError) Unwrap() error { return repo.ErrInvalidArguments }

// NothingToPushError: the working directory has no version yet (commit
// first). It wraps ErrNothingToPush.
type NothingToPushError struct{}

func (NothingToPushError) Error() string {
	return repo.ErrNothingToPush.Error() + ": this working directory has no version yet"
}

func (NothingToPushError) Unwrap() error { return repo.ErrNothingToPush }

// Sentinel errors of revert and restore.
var (
	// ErrNotInHistory: the version to revert or restore is not one the
	// working catalog descends from.
	ErrNotInHistory = errors.New("version is not in the working directory's history")
	// ErrRevertConflict: a later version changed what the revert would
	// undo. *RevertConflictError wraps it (and refs.ErrRefused).
	ErrRevertConflict = errors.New("revert conflicts with a later version")
	// ErrNotRestorable: the state cannot be taken back without rewriting a
	// Parquet file, fdl does not know a table that changed, or a table
	// would come back inside a schema dropped since (docs/spec.md §19).
	ErrNotRestorable = errors.New("state cannot be taken back")
	// ErrNothingToUndo: the revert or restore would change nothing.
	ErrNothingToUndo = errors.New("nothing to revert or restore")
)

// NotInHistoryError: a revert or restore named a version the working
// catalog does not descend from (another branch), or whose snapshot the
// catalog no longer holds (expired). It wraps ErrNotInHistory.
type NotInHistoryError struct {
	Rev     string
	ID      version.ID
	Seq     int64
	Dir     string
	Base    version.ID // "" when the working directory has no version yet
	Expired bool
}

func (e *NotInHistoryError) Error() string {
	switch {
	case e.Base == "":
		return fmt.Sprintf("%s has no version yet, so %q is not in its history: %v", e.Dir, e.Rev, ErrNotInHistory)
	case e.Expired:
		return fmt.Sprintf("the working catalog of %s no longer holds snapshot of version %s (seq %d) (expired): %v", e.Dir, e.ID, e.Seq, ErrNotInHistory)
	}
	return fmt.Sprintf("version %s (seq %d) is not an ancestor of %s's base %s (another branch?): %v; revert and restore take a version the working catalog descends from", e.ID, e.Seq, e.Dir, e.Base, ErrNotInHistory)
}

func (e *NotInHistoryError) Unwrap() error { return ErrNotInHistory }

// UndoUncommittedError: a revert needs a working catalog with nothing
// uncommitted. It wraps ErrUncommitted.
type UndoUncommittedError struct {
	Dir       string
	Snapshots int
	Base      version.ID // the working directory's base version
}

func (e *UndoUncommittedError) Error() string {
	return fmt.Sprintf("%s has uncommitted snapshots (%d snapshot(s) after its base): commit them first, or discard them: %v", e.Dir, e.Snapshots, ErrUncommitted)
}

func (e *UndoUncommittedError) Unwrap() error { return ErrUncommitted }

// RevertConflictError lists why a revert is refused: what the reverted
// version changed that a later version changed again or built on
// (lakewriter.Writer.Revert gives the rules). Nothing was written. It
// wraps ErrRevertConflict and refs.ErrRefused.
type RevertConflictError struct {
	Version   version.ID
	Seq       int64
	Conflicts []lakewriter.Conflict
	// Later maps each conflict's snapshot to the version that added it
	// (nil when unknown).
	Later map[int64]*version.Record
}

func (e *RevertConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "revert of version %s (seq %d) refused: %v: ", e.Version, e.Seq, ErrRevertConflict)
	for i, c := range e.Conflicts {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.Object + " " + c.Why)
		if later := e.Later[c.Snapshot]; later != nil {
			fmt.Fprintf(&b, " (version %s, seq %d, snapshot %d)", later.ID, later.Seq, c.Snapshot)
		} else if c.Snapshot > 0 {
			fmt.Fprintf(&b, " (snapshot %d)", c.Snapshot)
		}
	}
	b.WriteString("; nothing was written: revert the later versions first, or restore the state you want")
	return b.String()
}

func (e *RevertConflictError) Unwrap() []error { return []error{ErrRevertConflict, refs.ErrRefused} }

// NotRestorableError: the writer cannot express the state (a file of
// several snapshots across the point to go back to, a table fdl does
// not know, or a table inside a schema dropped since). Nothing was written. It wraps ErrNotRestorable and the
// writer's error.
type NotRestorableError struct {
	Kind    UndoKind
	Version version.ID
	Seq     int64
	Err     error
}

func (e *NotRestorableError) Error() string {
	return fmt.Sprintf("%s of version %s (seq %d): %v: %v; nothing was written", e.Kind, e.Version, e.Seq, ErrNotRestorable, e.Err)
}

func (e *NotRestorableError) Unwrap() []error { return []error{ErrNotRestorable, e.Err} }

// NothingToUndoError: the working catalog already has the state asked. It
// wraps ErrNothingToUndo.
type NothingToUndoError struct {
	Kind    UndoKind
	Version version.ID
	Seq     int64
}

func (e *NothingToUndoError) Error() string {
	if e.Kind == UndoRestore {
		return fmt.Sprintf("the working catalog already has the state of version %s (seq %d): %v", e.Version, e.Seq, ErrNothingToUndo)
	}
	return fmt.Sprintf("version %s (seq %d) changed nothing a revert can undo: %v", e.Version, e.Seq, ErrNothingToUndo)
}

func (e *NothingToUndoError) Unwrap() error { return ErrNothingToUndo }

// UndoDataMissingError: a revert or restore would read again data files of
// the repository that the store no longer holds (gc deleted the files only
// retired versions read). Nothing was written. It wraps ErrDataMissing.
type UndoDataMissingError struct {
	Version version.ID
	Seq     int64
	Missing []string // keys, at most 5
	Count   int
}

func (e *UndoDataMissingError) Error() string {
	return fmt.Sprintf("taking back the state of version %s (seq %d) needs %d data file(s) the store no longer holds (%s): %v; nothing was written (gc deleted them when the versions that read them left retention)",
		e.Version, e.Seq, e.Count, strings.Join(e.Missing, ", "), repo.ErrDataMissing)
}

func (e *UndoDataMissingError) Unwrap() error { return repo.ErrDataMissing }

// CatalogUnusableError: the working catalog of Dir, Path, is not there
// (deleted, moved away: Err is fs.ErrNotExist) or is no catalog fdl can
// read (Err wraps ducklake.ErrNotCatalog or ducklake.ErrCorrupt).
// Unpushed counts the versions committed in Dir and not pushed (their
// catalogs are in DIR/.fdl/versions; a pull that discards never discards
// them). Pull with Discard makes the catalog anew from the branch's head
// when Unpushed is 0.
type CatalogUnusableError struct {
	Dir, Path string
	Branch    string
	Unpushed  int
	Err       error
}

func (e *CatalogUnusableError) Error() string {
	if errors.Is(e.Err, fs.ErrNotExist) {
		return fmt.Sprintf("%s: the working catalog %s is not there (deleted or moved away)", e.Dir, e.Path)
	}
	if errors.Is(e.Err, ErrNotDescendant) {
		return fmt.Sprintf("%s: the working catalog is not this directory's: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("%s: the working catalog cannot be read: %v", e.Dir, e.Err)
}

func (e *CatalogUnusableError) Unwrap() error { return e.Err }
