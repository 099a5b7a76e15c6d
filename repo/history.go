package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// IDs returns every version id that has a folder in the store (complete or
// not), sorted. The result is cached for the life of the Repo.
func (r *Repo) IDs(ctx context.Context) ([]version.ID, error) {
	if r.ids != nil {
		return r.ids, nil
	}
	seen := map[version.ID]bool{}
	ids := []version.ID{}
	err := r.st.List(ctx, VersionsPrefix, func(o store.ObjectInfo) error {
		rest := strings.TrimPrefix(o.Key, VersionsPrefix)
		i := strings.IndexByte(rest, '/')
		if i <= 0 {
			return nil
		}
		id, err := version.ParseID(rest[:i])
		if err != nil || seen[id] {
			return nil
		}
		seen[id] = true
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	r.ids = ids
	return ids, nil
}

func (r *Repo) forgetIDs() { r.ids = nil }

// Record reads and validates versions/<id>/version.json. Errors:
// ErrIncomplete if the version folder exists without a record (an upload
// that never finished), refs.ErrUnknownRev if there is no such version,
// version.ErrBadRecord.
func (r *Repo) Record(ctx context.Context, id version.ID) (*version.Record, error) {
	if rec, ok := r.record[id]; ok {
		return rec, nil
	}
	b, _, err := store.ReadAll(ctx, r.st, VersionKey(id, version.RecordFile))
	if errors.Is(err, store.ErrNotExist) {
		if _, serr := r.st.Stat(ctx, VersionKey(id, version.CatalogFile)); serr == nil {
			return nil, missingVersion{fmt.Errorf("version %s has no %s: %w (an upload that did not finish)", id, version.RecordFile, ErrIncomplete)}
		}
		return nil, missingVersion{fmt.Errorf("version %s: %w: it is not in %s", id, refs.ErrUnknownRev, r.where)}
	}
	if err != nil {
		return nil, fmt.Errorf("read version %s: %w", id, err)
	}
	rec, err := version.ParseRecord(b, id)
	if err != nil {
		return nil, err
	}
	r.record[id] = rec
	return rec, nil
}

// missingVersion is Record's error for an id that names no complete
// version: it also wraps refs.ErrVersionMissing (what makes a ref holding
// it dangling), with the same text.
type missingVersion struct{ err error }

func (e missingVersion) Error() string   { return e.err.Error() }
func (e missingVersion) Unwrap() []error { return []error{e.err, refs.ErrVersionMissing} }

// Dataset reads versions/<id>/dataset.json and checks it against the size
// and sha256 its record gives. Errors: *ChecksumError, refs.ErrUnknownRev,
// version.ErrBadRecord.
func (r *Repo) Dataset(ctx context.Context, id version.ID) (*version.Dataset, error) {
	rec, err := r.Record(ctx, id)
	if err != nil {
		return nil, err
	}
	key := VersionKey(id, version.DatasetFile)
	b, _, err := store.ReadAll(ctx, r.st, key)
	if err != nil {
		return nil, fmt.Errorf("read dataset of version %s: %w", id, err)
	}
	if sum := sha256Hex(b); int64(len(b)) != rec.Dataset.Size || sum != rec.Dataset.SHA256 {
		return nil, &ChecksumError{Version: id, WantSize: rec.Dataset.Size, GotSize: int64(len(b)), WantSHA: rec.Dataset.SHA256, GotSHA: sum, Location: r.st.Location(key)}
	}
	return version.ParseDataset(b, id)
}

// Log returns the first-parent history from id back to the first version
// (newest first), at most max records when max > 0.
func (r *Repo) Log(ctx context.Context, id version.ID, max int) ([]*version.Record, error) {
	var out []*version.Record
	for id != "" && (max <= 0 || len(out) < max) {
		rec, err := r.Record(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, rec)
		id = rec.Parent()
	}
	return out, nil
}

// Resolve turns a revision into a version id: refs.Manager.Resolve, whose
// comment lists the revision forms and the errors.
func (r *Repo) Resolve(ctx context.Context, rev string) (refs.Resolved, error) {
	return r.refs.Resolve(ctx, rev)
}

// Abbrev returns the short-id length that tells every version apart
// (refs.Manager.Abbrev), counting extra ids (local, unpushed versions) too.
func (r *Repo) Abbrev(ctx context.Context, extra ...version.ID) (refs.Abbrev, error) {
	return r.refs.Abbrev(ctx, extra...)
}
