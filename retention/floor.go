package retention

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/fdl-dev/fdl/version"
)

// Floor is retention/floor.json (docs/spec.md §14): the versions taken out
// of retention whose bytes may not be deleted yet, and where each branch's
// retention ends. Moving the floor is gc's first step: one compare-and-swap
// of this object, after which readers treat the listed versions as retired
// (checkout and ATTACH printing refuse them) although their catalogs may
// still be in the store. Deleting bytes (gc's later steps) is refused for
// any version neither listed here nor already marked (ErrAheadOfFloor in
// package repo).
//
// A version listed here whose marker does not exist yet may leave the list
// at a later move (the policy changed, or a tag now holds it): until its
// marker is written nothing of it has been deleted, so taking it back into
// retention is safe. Once its marker exists it is retired for good.
type Floor struct {
	Format int `json:"format"`
	// Generation counts floor moves: 1 for the first, +1 each move.
	Generation int64     `json:"generation"`
	MovedAt    time.Time `json:"moved_at"`
	MovedBy    string    `json:"moved_by"`
	// Policy is the policy the move applied.
	Policy Policy `json:"policy"`
	// Branches says, per branch, where its retention ends: informative.
	Branches []BranchFloor `json:"branches"`
	// Retired lists the versions out of retention whose marker, catalog or
	// dataset.json deletion may still be pending, sorted by id. Versions
	// fully excised (marker written, catalog and dataset.json gone) are
	// dropped from the list at the next move: their marker records them.
	Retired []Retirement `json:"retired"`
}

// BranchFloor is one branch's retention window at a floor move.
type BranchFloor struct {
	Branch string     `json:"branch"` // full ref name, refs/heads/…
	Head   version.ID `json:"head"`
	// Floor is the oldest version of the unbroken run of versions in
	// retention that ends at the head, following first parents.
	Floor version.ID `json:"floor"`
	Seq   int64      `json:"seq"` // Floor's seq
	// Snapshot is Floor's DuckLake snapshot: the branch's catalogs keep
	// every data file visible at this snapshot or later (docs/spec.md §5.1).
	Snapshot int64 `json:"snapshot"`
}

// Retirement is one version leaving retention, with the rule that let it go.
type Retirement struct {
	ID     version.ID `json:"id"`
	Reason string     `json:"reason"`
}

// RetiredList returns the retired list; nil for a nil floor.
func (f *Floor) RetiredList() []Retirement {
	if f == nil {
		return nil
	}
	return f.Retired
}

// Has reports whether the floor lists id as retired. A nil floor lists
// nothing.
func (f *Floor) Has(id version.ID) bool {
	if f == nil {
		return false
	}
	_, ok := slices.BinarySearchFunc(f.Retired, id, func(r Retirement, id version.ID) int {
		switch {
		case r.ID < id:
			return -1
		case r.ID > id:
			return 1
		}
		return 0
	})
	return ok
}

// Validate checks the floor's fields: format, generation, ids, order.
// Errors: ErrInvalid.
func (f *Floor) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s: %w", FloorKey, fmt.Sprintf(format, a...), ErrInvalid)
	}
	if f.Format < 1 || f.Format > Format {
		return bad("format %d is not one this fdl reads (1..%d): upgrade fdl", f.Format, Format)
	}
	if f.Generation < 1 {
		return bad("generation %d; the first floor has generation 1", f.Generation)
	}
	for i, r := range f.Retired {
		if _, err := version.ParseID(string(r.ID)); err != nil {
			return bad("retired[%d]: %v", i, err)
		}
		if i > 0 && f.Retired[i-1].ID >= r.ID {
			return bad("retired ids are not sorted and unique at %s", r.ID)
		}
	}
	return nil
}

// Marshal encodes the floor as indented JSON with a trailing newline.
func (f *Floor) Marshal() ([]byte, error) { return marshal(f) }

// ParseFloor decodes and validates retention/floor.json. Errors: ErrInvalid.
func ParseFloor(b []byte) (*Floor, error) {
	var f Floor
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s does not parse: %v: %w", FloorKey, err, ErrInvalid)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Marker is versions/<id>/retired.json (docs/spec.md §15), written
// create-only when a version leaves retention, before its catalog and
// dataset.json are deleted. version.json is never deleted: the version
// stays in the history, marked retired.
type Marker struct {
	Format  int        `json:"format"`
	Version version.ID `json:"version"`
	// RetiredAt is when the version left retention: the floor move's time.
	RetiredAt time.Time `json:"retired_at"`
	// Floor is the generation of the floor move that retired it.
	Floor  int64  `json:"floor"`
	Reason string `json:"reason"`
	// DataFiles are the store keys ("data/…") of the data and delete files
	// this version's catalog lists and no catalog in retention listed when
	// it was retired: gc deletes them in its data step. Recorded so that a
	// gc interrupted after deleting the catalog still knows them.
	DataFiles []string `json:"data_files"`
}

// Validate checks the marker's fields; want, if set, is the version folder
// it was read from. Errors: ErrInvalid.
func (m *Marker) Validate(want version.ID) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("version %s: %s: %s: %w", want, MarkerFile, fmt.Sprintf(format, a...), ErrInvalid)
	}
	if m.Format < 1 || m.Format > Format {
		return bad("format %d is not one this fdl reads (1..%d): upgrade fdl", m.Format, Format)
	}
	if want != "" && m.Version != want {
		return bad("it names version %q", m.Version)
	}
	if m.RetiredAt.IsZero() {
		return bad("retired_at is missing")
	}
	return nil
}

// Marshal encodes the marker as indented JSON with a trailing newline.
func (m *Marker) Marshal() ([]byte, error) { return marshal(m) }

// ParseMarker decodes and validates a marker read from versions/<want>/.
// Errors: ErrInvalid.
func ParseMarker(b []byte, want version.ID) (*Marker, error) {
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("version %s: %s does not parse: %v: %w", want, MarkerFile, err, ErrInvalid)
	}
	if err := m.Validate(want); err != nil {
		return nil, err
	}
	return &m, nil
}
