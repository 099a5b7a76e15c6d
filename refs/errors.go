package refs

import (
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/version"
)

// Sentinel errors, wrapped with the ref name or the revision. The typed
// errors below wrap them and carry the fields a caller (the CLI) needs to
// say what to do; this package never names a command.
var (
	// ErrNotFound: no such ref (absent or deleted).
	ErrNotFound = errors.New("no such ref")
	// ErrExists: a ref that may only be created already exists.
	ErrExists = errors.New("ref already exists")
	// ErrCorrupt: the ref file is empty or does not hold a version id.
	ErrCorrupt = errors.New("ref is corrupt")
	// ErrInvalidName: the name breaks the naming rules.
	ErrInvalidName = errors.New("invalid ref name")
	// ErrConflict: the ref moved since it was read (lost a compare-and-swap).
	ErrConflict = errors.New("ref moved concurrently")
	// ErrRefused is wrapped by every refused branch move: not a
	// fast-forward (a push), not a descendant without Backwards (a move),
	// or lost a race with a concurrent writer. Its text is the one a push
	// refusal has always ended with.
	ErrRefused = errors.New("push refused")
	// ErrUnknownRev: a revision names no version.
	ErrUnknownRev = errors.New("unknown revision")
	// ErrAmbiguousRev: an id prefix matches several versions.
	ErrAmbiguousRev = errors.New("ambiguous revision")
	// ErrDeleteHead: the branch HEAD names cannot be deleted.
	ErrDeleteHead = errors.New("cannot delete the branch HEAD names")
	// ErrBadLog is wrapped by the error for a ref log entry that does not
	// parse.
	ErrBadLog = errors.New("invalid ref log entry")
	// ErrVersionMissing is wrapped by a RecordReader's error when the id
	// names no complete version (no folder, no version.json): what a ref
	// holding it makes a dangling ref.
	ErrVersionMissing = errors.New("no such complete version")
	// ErrDangling: a ref names a version that is not a complete version of
	// the repository (or whose record cannot be read): the ref is damaged.
	ErrDangling = errors.New("ref names a missing version")
)

// DanglingError: a ref names a version the repository does not hold whole
// (Err says why: no such version, no version.json, a record that does not
// parse). It is damage, not a refusal: nothing was compared or moved, and
// the way out is to point the ref at a version again (a branch: MoveBranch
// with Backwards; a tag: RepairTag) or to restore the version. Read is true
// when it comes from resolving a revision (nothing was to be moved). It
// wraps ErrDangling.
type DanglingError struct {
	Ref  Name
	ID   version.ID
	Err  error
	Read bool
}

func (e *DanglingError) Error() string {
	s := fmt.Sprintf("%s %s names version %s, which the repository does not hold (%v): %v",
		kindWord(e.Ref), e.Ref.Short(), e.ID, e.Err, ErrDangling)
	if !e.Read {
		s += "; nothing was moved"
	}
	return s + "; point the " + kindWord(e.Ref) + " at a version again, or restore that version"
}

// kindWord is the word for n's kind in a sentence: branch, tag, request
// or ref.
func kindWord(n Name) string {
	switch {
	case n.IsBranch():
		return "branch"
	case n.IsTag():
		return "tag"
	case n.IsRequest():
		return "request"
	}
	return "ref"
}

// TagIntactError: a tag repair was asked for a tag that names a version
// the repository holds whole. Tags never move: only a damaged tag (see
// RepairTag) is pointed at a version again. It wraps ErrExists.
type TagIntactError struct {
	Ref   Name
	Holds version.ID
}

func (e *TagIntactError) Error() string {
	return fmt.Sprintf("tag %s holds version %s, which the repository holds whole: only a damaged tag (one whose file holds no version id, or that names a version the repository does not hold) can be repaired, and tags never move: %v",
		e.Ref.Short(), e.Holds, ErrExists)
}

func (e *TagIntactError) Unwrap() error { return ErrExists }

func (e *DanglingError) Unwrap() error { return ErrDangling }

// CorruptError is a ref file that does not hold one version id and a
// newline. It wraps ErrCorrupt. The way out is to point the branch at a
// version again (Manager.MoveBranch with Backwards repairs it), to restore
// the file, or to delete it.
type CorruptError struct {
	Ref      Name
	Location string // where the file is, as the store names it
	Why      string // what it holds instead ("it is empty", …)
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("ref %s (%s): %v; %s: a ref must hold one version id and a newline; restore it from a backup, point a branch at a version again, or delete that file if the ref is not needed",
		e.Ref, e.Location, ErrCorrupt, e.Why)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// ConflictError says a compare-and-swap of Ref lost: another writer moved
// it first. Now is what it holds after ("" when it is absent). It wraps
// ErrConflict.
type ConflictError struct {
	Ref Name
	Now version.ID
}

func (e *ConflictError) Error() string { return fmt.Sprintf("%s: %v", e.Ref, ErrConflict) }

func (e *ConflictError) Unwrap() error { return ErrConflict }

// MissingBranchError: a branch to move does not exist. It wraps the read
// error (ErrNotFound).
type MissingBranchError struct {
	Branch Name
	Err    error
	// Request is set when a request was to target the branch: naming
	// another target (--into) is the likelier remedy than making it.
	Request Name
}

func (e *MissingBranchError) Error() string {
	return fmt.Sprintf("branch %s does not exist: %v", e.Branch.Short(), e.Err)
}

func (e *MissingBranchError) Unwrap() error { return e.Err }

// MoveRefusedError is returned when a branch would move to a version that
// does not descend from the one it holds, without MoveOptions.Backwards
// (docs/spec.md §10.4: moving back is explicit). It wraps ErrRefused.
type MoveRefusedError struct {
	Branch Name
	Old    version.ID
	New    version.ID
	Undone int // versions of Old's first-parent history New does not reach
}

func (e *MoveRefusedError) Error() string {
	return fmt.Sprintf("moving %s from %s to %s refused: %s is not a descendant of %s, so the move would undo %d version(s); nothing moved",
		e.Branch.Short(), e.Old, e.New, e.New, e.Old, e.Undone)
}

func (e *MoveRefusedError) Unwrap() error { return ErrRefused }

// MoveRaceError: another writer moved the branch between the read and the
// compare-and-swap of a move; nothing moved. It wraps ErrRefused.
type MoveRaceError struct {
	Branch Name
	To     version.ID // where the move wanted it
	Now    version.ID // where the other writer put it
}

func (e *MoveRaceError) Error() string {
	return fmt.Sprintf("moving %s to %s refused: another writer moved it to %s first; nothing moved: look at it and run again: %v", e.Branch.Short(), e.To, e.Now, ErrRefused)
}

func (e *MoveRaceError) Unwrap() error { return ErrRefused }

// NoVersionYetError: HEAD names a branch that does not exist yet (a new
// repository). Where is the repository's URL. It wraps ErrUnknownRev.
type NoVersionYetError struct {
	Branch Name
	Where  string
	// Tags counts the repository's tags (a mirror of tags alone has
	// versions and no branch).
	Tags int
}

func (e *NoVersionYetError) Error() string {
	if e.Tags > 0 {
		return fmt.Sprintf("HEAD names branch %s, which this repository does not have (it holds %d tag(s), no branch: a mirror of tags): name a tag: %v", e.Branch.Short(), e.Tags, ErrUnknownRev)
	}
	return fmt.Sprintf("HEAD names branch %s, which has no version yet: %v", e.Branch.Short(), ErrUnknownRev)
}

func (e *NoVersionYetError) Unwrap() error { return ErrUnknownRev }

// NoSeqError: branch@seq names a seq the branch's first-parent history
// does not hold. It wraps ErrUnknownRev.
type NoSeqError struct {
	Rev    string
	Branch Name
	Seq    int64
}

func (e *NoSeqError) Error() string {
	return fmt.Sprintf("revision %q: %s has no version with seq %d on its first-parent history: %v", e.Rev, e.Branch.Short(), e.Seq, ErrUnknownRev)
}

func (e *NoSeqError) Unwrap() error { return ErrUnknownRev }

// NoSuchRevError: a revision is neither a ref name nor an id prefix that
// any version has. Where is the repository's URL. It wraps ErrUnknownRev.
type NoSuchRevError struct {
	Rev   string
	Where string
}

func (e *NoSuchRevError) Error() string {
	return fmt.Sprintf("revision %q: no branch, tag or version id of that name in %s: %v", e.Rev, e.Where, ErrUnknownRev)
}

func (e *NoSuchRevError) Unwrap() error { return ErrUnknownRev }

// NoLogError: no branch, tag or request of a name ever moved, so it has no
// ref log. It wraps ErrNotFound.
type NoLogError struct {
	Name  string // as given
	Where string // the repository's URL
}

func (e *NoLogError) Error() string {
	return fmt.Sprintf("no ref log for %q in %s: no branch, tag or request of that name ever moved: %v", e.Name, e.Where, ErrNotFound)
}

func (e *NoLogError) Unwrap() error { return ErrNotFound }

// BadLogError says which ref log entry does not parse and why; it wraps
// ErrBadLog.
type BadLogError struct {
	Key string // logs/<ref>/<entry id>.json
	Why string
}

func (e *BadLogError) Error() string {
	return fmt.Sprintf("ref log entry %s: %s: %v", e.Key, e.Why, ErrBadLog)
}

func (e *BadLogError) Unwrap() error { return ErrBadLog }

// ExistsError: a ref that is created once (a tag; a branch or request by
// its creation) already holds another version. It wraps ErrExists.
type ExistsError struct {
	Ref    Name
	Holds  version.ID // what it holds
	Wanted version.ID // what the create asked for
	// WantedRetired: Wanted left retention, so no ref can be made at it
	// under any name (set by the caller that knows).
	WantedRetired bool
	// Backwards: (a branch) Wanted does not descend from Holds, so moving
	// the branch there undoes versions (set by the caller that knows).
	Backwards bool
}

func (e *ExistsError) Error() string {
	gone := ""
	if e.WantedRetired {
		gone = " (and version " + string(e.Wanted) + " left retention: no ref can be made at it)"
	}
	return fmt.Sprintf("%s already holds version %s, not %s%s: %v", e.Ref, e.Holds, e.Wanted, gone, ErrExists)
}

func (e *ExistsError) Unwrap() error { return ErrExists }
