package gc

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// The errors of gc: sentinels, and StopError, which says why gc stopped.
// Like the rest of the library, they never name a command: the CLI adds
// that (cmd/fdl/errors.go). The conflicts of retention settings
// (repo.ErrRetentionConflict) and the retention state's own errors are
// repo's.

// Sentinel errors of gc.
var (
	// ErrRefused: gc will not run on this repository as it is (a corrupt
	// or dangling ref, an unreadable catalog or record, a path it cannot
	// place); the message names the thing.
	ErrRefused = errors.New("gc refused")
	// ErrAheadOfFloor: a deletion of a version's bytes was asked before the
	// floor took it out of retention (docs/spec.md §10.7).
	ErrAheadOfFloor = errors.New("gc refused to run ahead of the retention floor")
)

// refuse wraps err in ErrRefused, unless the context ended.
func refuse(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrRefused, err)
}

// Stop says why gc stopped, and what it had not done yet.
type Stop int

// Why gc stops while it applies a plan.
const (
	// StopFloorMoved: the floor moved since the plan (another gc, or a
	// policy change); nothing was deleted.
	StopFloorMoved Stop = iota + 1
	// StopPolicyChanged: the policy changed while gc ran; nothing was
	// deleted: gc again applies the new policy.
	StopPolicyChanged
	// StopRefOnRetired: a ref was pointed at a version the floor retires;
	// nothing was deleted: gc again takes it back into retention.
	StopRefOnRetired
	// StopBranchKeepsRetired: a branch created or moved meanwhile keeps a
	// retired version among its last keep_last; as above.
	StopBranchKeepsRetired
	// StopNewCatalogUnreadable: a version that appeared while gc ran has a
	// catalog gc cannot read; no data file was deleted.
	StopNewCatalogUnreadable
	// StopAheadOfFloor: a version's bytes were to be deleted before the
	// floor retired it: move the floor first.
	StopAheadOfFloor
	// StopMoveToRetired: a ref move in progress (its ref log entry written,
	// its compare-and-swap not yet) goes to a version the floor retires;
	// nothing was deleted: gc again takes it back into retention.
	StopMoveToRetired
	// StopAnotherGC: another gc's deletion intent holds (a gc deleting
	// now); nothing was deleted: run one gc at a time.
	StopAnotherGC
	// StopIntentLost: this gc's deletion intent is gone or ran out of its
	// lease (another gc took it for the record of a stopped one, or this
	// process was paused): it deleted nothing after that; run gc again.
	StopIntentLost
)

// StopError says why gc stopped before deleting (part of) its plan. Err
// is the sentinel (repo.ErrRetentionConflict, ErrAheadOfFloor); running gc
// again goes on, except after StopAheadOfFloor (move the floor first).
type StopError struct {
	Why        Stop
	Key        string     // the retention file that changed (floor, policy)
	Ref        refs.Name  // the ref that moved
	Version    version.ID // the version concerned
	Generation int64      // the floor's
	KeepLast   int
	Detail     error // why a new catalog cannot be read
	Err        error
}

func (e *StopError) Error() string {
	const nothing = "nothing was deleted"
	switch e.Why {
	case StopFloorMoved:
		return fmt.Sprintf("%s moved since gc planned: %v; %s", e.Key, e.Err, nothing)
	case StopPolicyChanged:
		return fmt.Sprintf("%s changed while gc ran: %v; %s", e.Key, e.Err, nothing)
	case StopRefOnRetired:
		return fmt.Sprintf("%s was pointed at version %s while gc ran, and the floor (generation %d) takes that version out of retention: %v; %s", e.Ref, e.Version, e.Generation, e.Err, nothing)
	case StopBranchKeepsRetired:
		return fmt.Sprintf("%s was created or moved while gc ran and keeps version %s among its last %d, which the floor (generation %d) takes out of retention: %v; %s", e.Ref, e.Version, e.KeepLast, e.Generation, e.Err, nothing)
	case StopNewCatalogUnreadable:
		return fmt.Sprintf("version %s appeared while gc ran and its catalog cannot be read (%v): %v; no data file was deleted", e.Version, e.Detail, e.Err)
	case StopAheadOfFloor:
		return fmt.Sprintf("version %s: deleting its catalog is refused: the retention floor (generation %d) does not take it out of retention and it has no %s: %v; move the floor first", e.Version, e.Generation, e.Key, e.Err)
	case StopMoveToRetired:
		return fmt.Sprintf("%s is being moved to version %s (its ref log entry is written), and the floor (generation %d) takes that version out of retention: %v; %s", e.Ref, e.Version, e.Generation, e.Err, nothing)
	case StopAnotherGC:
		return fmt.Sprintf("another gc is deleting (its intent %s holds): %v; %s: run one gc at a time", e.Key, e.Err, nothing)
	case StopIntentLost:
		return fmt.Sprintf("gc's deletion intent %s is gone or its lease ran out (another gc took it for the record of a stopped one, or this process was paused): %v; gc deleted nothing after that", e.Key, e.Err)
	}
	return fmt.Sprintf("gc stopped: %v", e.Err)
}

func (e *StopError) Unwrap() error { return e.Err }
