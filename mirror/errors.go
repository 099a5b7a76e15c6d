package mirror

import (
	"fmt"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// OtherRepositoryError: the destination holds another repository than
// the source (fdl.json's name, data_path, creation time or default
// branch differ). Nothing was written.
type OtherRepositoryError struct {
	Source, Dest             string
	SourceConfig, DestConfig repo.Config
}

func (e *OtherRepositoryError) Error() string {
	s, d := e.SourceConfig, e.DestConfig
	return fmt.Sprintf("mirror to %s refused: it holds another repository (%q, made %s, data path %s) than %s (%q, made %s, data path %s); a mirror only copies a repository to an empty place or to an earlier mirror of it; nothing was written",
		e.Dest, d.Name, d.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), d.DataPath, e.Source, s.Name, s.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), s.DataPath)
}

func (e *OtherRepositoryError) Unwrap() error { return repo.ErrNotEmpty }

// SameRepositoryError: the destination is the source's own location.
type SameRepositoryError struct{ Where string }

func (e *SameRepositoryError) Error() string {
	return fmt.Sprintf("mirror refused: the source and the destination are the same repository (%s); give another folder or prefix", e.Where)
}

func (e *SameRepositoryError) Unwrap() error { return repo.ErrInvalidArguments }

// CannotListError: the source cannot list its refs (a web server without
// listings) and the refs to mirror were given by pattern or not at all.
type CannotListError struct {
	Source   string
	Patterns []string
}

func (e *CannotListError) Error() string {
	what := "every branch and tag"
	if len(e.Patterns) > 0 {
		what = "the refs matching " + strings.Join(e.Patterns, ", ")
	}
	return fmt.Sprintf("mirror from %s: it cannot list its refs (a web server without listings), so %s cannot be found: name each ref to mirror (heads/NAME, tags/NAME)", e.Source, what)
}

// DivergedError: a destination branch holds a version the source's
// branch does not descend from (it moved at the destination on its own,
// or another writer moved it during the mirror: Race). It wraps
// refs.ErrRefused; nothing moved for it.
type DivergedError struct {
	Ref           refs.Name
	Source, Dest  string
	Holds, Wanted version.ID // the destination's, the source's
	NotInSource   bool       // the source does not hold the destination's version
	Race          bool
}

func (e *DivergedError) Error() string {
	why := "which is not an ancestor of"
	if e.NotInSource {
		why = "which the source does not hold, not an ancestor of"
	}
	if e.Race {
		return fmt.Sprintf("mirror of %s refused: another writer moved it at %s during the mirror (it holds %s now); nothing was moved for it: run the mirror again", e.Ref, e.Dest, e.Holds)
	}
	return fmt.Sprintf("mirror of %s refused: at %s it holds %s, %s %s, what %s holds (the branch moved at the destination on its own, or was moved back at the source); nothing was moved for it", e.Ref, e.Dest, e.Holds, why, e.Wanted, e.Source)
}

func (e *DivergedError) Unwrap() error { return refs.ErrRefused }

// RefusedError: some refs of a mirror were not moved (each error says
// why); the others were. It wraps each one's error.
type RefusedError struct {
	Source, Dest string
	Refused      []error
}

func (e *RefusedError) Error() string {
	if len(e.Refused) == 1 {
		return e.Refused[0].Error()
	}
	parts := make([]string, len(e.Refused))
	for i, err := range e.Refused {
		parts[i] = err.Error()
	}
	return fmt.Sprintf("mirror to %s: %d refs were not moved: %s", e.Dest, len(e.Refused), strings.Join(parts, "; "))
}

func (e *RefusedError) Unwrap() []error { return e.Refused }

// SizeError: an object read from the source has another size than the
// source says it has (its listing, or the catalog's record of a data
// file). Nothing was written for it. It wraps repo.ErrChecksum.
type SizeError struct {
	Location  string
	Want, Got int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("mirror: %s has %d bytes, %d expected (the source's listing or the catalog's record of it); it is damaged or changed while it was read; nothing was written at the destination for it", e.Location, e.Got, e.Want)
}

func (e *SizeError) Unwrap() error { return repo.ErrChecksum }

// SourceDataMissingError: a version being mirrored reads, at or after its
// floor snapshot, data files the source does not hold (they were deleted
// outside gc, or lost): the source is damaged, and the copy would be.
// Nothing moved; the version's record was not written at the
// destination. It wraps repo.ErrDataMissing.
type SourceDataMissingError struct {
	Source  string
	Version version.ID
	Seq     int64
	Missing []string // keys, at most 5 of them
	Count   int      // all that are missing
}

func (e *SourceDataMissingError) Error() string {
	return fmt.Sprintf("mirror from %s: version %s (seq %d) reads %d data file(s) the source does not hold (%s): %v; the source is damaged, so nothing was mirrored for it and no ref moved",
		e.Source, e.Version, e.Seq, e.Count, strings.Join(e.Missing, ", "), repo.ErrDataMissing)
}

func (e *SourceDataMissingError) Unwrap() error { return repo.ErrDataMissing }

// TagClashError: a destination tag holds another version than the
// source's tag of the same name; tags never move, so it stays. It wraps
// the *refs.ExistsError (exit 4).
type TagClashError struct {
	Source, Dest string
	Exists       *refs.ExistsError
}

func (e *TagClashError) Error() string {
	return fmt.Sprintf("mirror %s to %s: the tag there holds version %s, and %s's holds %s; tags never move, so it was left as it is",
		strings.TrimPrefix(string(e.Exists.Ref), "refs/"), e.Dest, e.Exists.Holds, e.Source, e.Exists.Wanted)
}

// Unwrap gives refs.ErrExists, not Exists: its hints name the source's
// repository, which the hints of TagClashError itself do with --repo.
func (e *TagClashError) Unwrap() error { return refs.ErrExists }

// RetiredAtDestinationError: a ref would point, at the destination, at a
// version the destination's gc retired (its catalog is gone there, while
// the source keeps it): readers there could not read it, and a retired
// version never comes back (docs/spec.md §15). The ref was not moved. It
// wraps repo.ErrRetired.
type RetiredAtDestinationError struct {
	Ref          refs.Name
	Source, Dest string
	Retired      *repo.RetiredError
}

func (e *RetiredAtDestinationError) Error() string {
	return fmt.Sprintf("mirror %s to %s: version %s (seq %d) left retention there on %s (%s), though %s keeps it: a ref there cannot point at it, so %s was not mirrored",
		strings.TrimPrefix(string(e.Ref), "refs/"), e.Dest, e.Retired.ID, e.Retired.Seq, e.Retired.At.UTC().Format(time.RFC3339), e.Retired.Reason, e.Source, e.Ref)
}

func (e *RetiredAtDestinationError) Unwrap() error { return repo.ErrRetired }
