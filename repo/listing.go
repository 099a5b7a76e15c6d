package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// listing is what one listing of versions/ under a prefix found.
type listing struct {
	hex    string       // the hex digits the listed ids begin with ("" for all)
	ids    []version.ID // every version folder (complete or not), sorted
	marked map[version.ID]bool
}

// covers reports whether the listing holds every version whose hex digits
// begin with hex.
func (l *listing) covers(hex string) bool { return strings.HasPrefix(hex, l.hex) }

// listVersions lists versions/ for the versions whose ids begin with the
// hex digits hex ("" for all): their ids and which have a retirement
// marker. A listing made earlier by the same Repo that covers hex is used
// instead (forgetIDs drops them). Errors: the store's.
func (r *Repo) listVersions(ctx context.Context, hex string) (*listing, error) {
	r.mu.Lock()
	for _, l := range r.listed {
		if l.covers(hex) {
			r.mu.Unlock()
			return l.narrow(hex), nil
		}
	}
	r.mu.Unlock()
	l := &listing{hex: hex, marked: map[version.ID]bool{}}
	seen := map[version.ID]bool{}
	prefix := VersionsPrefix + refs.DashedPrefix(hex)
	err := r.st.List(ctx, prefix, func(o store.ObjectInfo) error {
		rest := strings.TrimPrefix(o.Key, VersionsPrefix)
		i := strings.IndexByte(rest, '/')
		if i <= 0 {
			return nil
		}
		id, err := version.ParseID(rest[:i])
		if err != nil {
			return nil
		}
		if !seen[id] {
			seen[id] = true
			l.ids = append(l.ids, id)
		}
		if rest[i+1:] == retention.MarkerFile {
			l.marked[id] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	sort.Slice(l.ids, func(i, j int) bool { return l.ids[i] < l.ids[j] })
	r.mu.Lock()
	r.listed = append(r.listed, l)
	r.mu.Unlock()
	return l, nil
}

// narrow returns the part of l whose ids begin with hex.
func (l *listing) narrow(hex string) *listing {
	if hex == l.hex {
		return l
	}
	out := &listing{hex: hex, marked: map[version.ID]bool{}}
	for _, id := range l.ids {
		if strings.HasPrefix(id.Hex(), hex) {
			out.ids = append(out.ids, id)
			if l.marked[id] {
				out.marked[id] = true
			}
		}
	}
	return out
}

// listedMarker reports whether a listing made earlier covers id, and if
// so whether id has a retirement marker.
func (r *Repo) listedMarker(id version.ID) (marked, known bool) {
	h := id.Hex()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.listed {
		if l.covers(h) {
			return l.marked[id], true
		}
	}
	return false, false
}

// forgetIDs drops the listings made so far: the next read lists again.
func (r *Repo) forgetIDs() {
	r.mu.Lock()
	r.listed = nil
	r.mu.Unlock()
}

// IDs returns every version id that has a folder in the store (complete or
// not), sorted: one listing of versions/, kept for the life of the Repo.
func (r *Repo) IDs(ctx context.Context) ([]version.ID, error) {
	l, err := r.listVersions(ctx, "")
	if err != nil {
		return nil, err
	}
	return l.ids, nil
}

// IDsWithPrefix returns the ids of the versions whose hex digits begin
// with hex (lower-case, no dashes), sorted (refs.Records): one listing of
// versions/<the id's start>. Errors: store.ErrCannotList, the store's.
func (r *Repo) IDsWithPrefix(ctx context.Context, hex string) ([]version.ID, error) {
	l, err := r.listVersions(ctx, hex)
	if err != nil {
		return nil, err
	}
	return l.ids, nil
}

// MarkedIDs returns the versions with a marker (versions/<id>/retired.json):
// those whose catalog gc deleted or is deleting. One listing of versions/.
func (r *Repo) MarkedIDs(ctx context.Context) (map[version.ID]bool, error) {
	l, err := r.listVersions(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make(map[version.ID]bool, len(l.marked))
	for id := range l.marked {
		out[id] = true
	}
	return out, nil
}

// markedAmong returns which of ids have a retirement marker: from the
// listings made so far where they cover an id (History lists the windows
// of the ids it shows first), else one Stat of the marker each.
func (r *Repo) markedAmong(ctx context.Context, ids []version.ID) (map[version.ID]bool, error) {
	out := map[version.ID]bool{}
	for _, id := range ids {
		marked, known := r.listedMarker(id)
		if !known {
			_, err := r.st.Stat(ctx, VersionKey(id, retention.MarkerFile))
			if err != nil && !errors.Is(err, store.ErrNotExist) {
				return nil, err
			}
			marked = err == nil
		}
		if marked {
			out[id] = true
		}
	}
	return out, nil
}

// retiredAmong returns which of ids are out of retention: those with a
// marker (markedAmong) and those the stored floor lists. Errors:
// retention.ErrInvalid when the floor does not parse, the store's.
func (r *Repo) retiredAmong(ctx context.Context, ids []version.ID) (map[version.ID]bool, error) {
	out, err := r.markedAmong(ctx, ids)
	if err != nil {
		return nil, err
	}
	f, _, err := r.Floor(ctx)
	if err != nil {
		return nil, err
	}
	for _, rt := range f.RetiredList() {
		out[rt.ID] = true
	}
	return out, nil
}
