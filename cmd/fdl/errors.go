package main

import (
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
)

// errorKind names an error for JSON output; the kinds are stable
// (docs/cli.md §errors).
func errorKind(err error, code int) string {
	switch code {
	case exitUsage:
		return "usage"
	case exitRefused:
		return "refused"
	case exitInterrupt:
		return "interrupted"
	}
	kinds := []struct {
		target error
		kind   string
	}{
		{repo.ErrGCRefused, "gc_refused"},
		{repo.ErrAheadOfFloor, "ahead_of_floor"},
		{repo.ErrRetentionConflict, "retention_conflict"},
		{repo.ErrRetired, "retired"},
		{retention.ErrInvalid, "invalid_retention"},
		{repo.ErrBadLog, "invalid_reflog"},
		{repo.ErrChecksum, "checksum"},
		{repo.ErrDataMissing, "data_missing"},
		{repo.ErrFormatUpgrade, "format_upgrade"},
		{ducklake.ErrUnknownStorage, "unknown_storage"},
		{ducklake.ErrLocked, "locked"},
		{ducklake.ErrNotCatalog, "not_catalog"},
		{ducklake.ErrUnsupportedFormat, "unsupported_format"},
		{ducklake.ErrSQLite, "sqlite_catalog"},
		{ducklake.ErrCorrupt, "corrupt_catalog"},
		{repo.ErrNotRepository, "not_repository"},
		{repo.ErrNotWorkdir, "not_workdir"},
		{repo.ErrNothingToCommit, "nothing_to_commit"},
		{repo.ErrNothingToPush, "nothing_to_push"},
		{repo.ErrNotDescendant, "not_descendant"},
		{repo.ErrDirNotEmpty, "dir_not_empty"},
		{repo.ErrNotEmpty, "not_empty"},
		{repo.ErrUnknownRev, "unknown_revision"},
		{repo.ErrAmbiguousRev, "ambiguous_revision"},
		{repo.ErrIncomplete, "incomplete_version"},
		{repo.ErrDeleteHead, "delete_head"},
		{refs.ErrInvalidName, "invalid_ref_name"},
		{refs.ErrExists, "ref_exists"},
		{refs.ErrCorrupt, "corrupt_ref"},
		{refs.ErrNotFound, "ref_not_found"},
		{store.ErrReadOnly, "read_only"},
		{store.ErrNotExist, "not_found"},
	}
	for _, k := range kinds {
		if errors.Is(err, k.target) {
			return k.kind
		}
	}
	if errVerify := (verifyFailed{}); errors.As(err, &errVerify) {
		return "verify_failed"
	}
	return "error"
}

// verifyFailed is returned by 'fdl verify' when it found problems.
type verifyFailed struct{ n int }

func (v verifyFailed) Error() string {
	if v.n == 1 {
		return "verify found 1 problem"
	}
	return fmt.Sprintf("verify found %d problems", v.n)
}
