package repo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// listing is what one listing of versions/ under a prefix found.
type listing struct {
	hex string       // the hex digits the listed ids begin with ("" for all)
	ids []version.ID // every version folder (complete or not), sorted
	// marked holds the versions with a retirement marker; nil when the
	// listing read folder names only (markers unknown).
	marked map[version.ID]bool
}

// covers reports whether the listing holds every version whose hex digits
// begin with hex.
func (l *listing) covers(hex string) bool { return strings.HasPrefix(hex, l.hex) }

// listVersions lists versions/ for the versions whose ids begin with the
// hex digits hex ("" for all): their ids and which have a retirement
// marker. A listing made earlier by the same Repo that covers hex is used
// instead (forgetIDs drops them). On a folder store a prefix is answered
// from one read of the versions/ folder's names, kept for the Repo (no
// markers: markedAmong then looks at each shown version's marker), since
// a listing there reads every file of every folder. Errors: the store's.
func (r *Repo) listVersions(ctx context.Context, hex string) (*listing, error) {
	r.mu.Lock()
	for _, l := range r.listed {
		if l.covers(hex) && (hex != "" || l.marked != nil) {
			r.mu.Unlock()
			return l.narrow(hex), nil
		}
	}
	r.mu.Unlock()
	if lf, ok := r.Folder(); ok && hex != "" {
		l, err := r.listNames(lf)
		if err != nil {
			return nil, err
		}
		return l.narrow(hex), nil
	}
	l, err := r.listStore(ctx, hex)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.listed = append(r.listed, l)
	r.mu.Unlock()
	return l.narrow(hex), nil
}

// listStore is one listing of versions/<hex's id prefix>.
func (r *Repo) listStore(ctx context.Context, hex string) (*listing, error) {
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
	return l, nil
}

// listNames reads the names of the folders in a folder store's versions/
// (one read of that folder): the ids of every version, with no markers.
// A folder holding only the temporary file of a write in progress counts.
func (r *Repo) listNames(lf store.LocalFiles) (*listing, error) {
	r.namesMu.Lock() // one read, however many windows ask at once
	defer r.namesMu.Unlock()
	r.mu.Lock()
	l := r.names
	r.mu.Unlock()
	if l != nil {
		return l, nil
	}
	entries, err := os.ReadDir(lf.LocalPath(strings.TrimSuffix(VersionsPrefix, "/")))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	l = &listing{}
	for _, e := range entries {
		if id, err := version.ParseID(e.Name()); err == nil {
			l.ids = append(l.ids, id) // ReadDir sorts by name
		}
	}
	r.mu.Lock()
	r.names = l
	r.mu.Unlock()
	return l, nil
}

// narrow returns the part of l whose ids begin with hex: l.ids is sorted,
// and the canonical ids that begin with hex are those that begin with its
// dashed form, one run of them (a binary search, not a scan).
func (l *listing) narrow(hex string) *listing {
	if hex == l.hex {
		return l
	}
	out := &listing{hex: hex}
	if l.marked != nil {
		out.marked = map[version.ID]bool{}
	}
	dp := refs.DashedPrefix(hex)
	i := sort.Search(len(l.ids), func(i int) bool { return string(l.ids[i]) >= dp })
	for ; i < len(l.ids) && strings.HasPrefix(string(l.ids[i]), dp); i++ {
		id := l.ids[i]
		out.ids = append(out.ids, id)
		if l.marked[id] {
			out.marked[id] = true
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
		if l.marked != nil && l.covers(h) {
			return l.marked[id], true
		}
	}
	return false, false
}

// forgetIDs drops the listings made so far: the next read lists again.
func (r *Repo) forgetIDs() {
	r.mu.Lock()
	r.listed, r.names = nil, nil
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
// of the ids it shows first), else one Stat of the marker each,
// readWorkers at a time (on a folder store, where a Stat costs less than
// handing it to another goroutine, in one run of ids per CPU).
func (r *Repo) markedAmong(ctx context.Context, ids []version.ID) (map[version.ID]bool, error) {
	out := map[version.ID]bool{}
	var ask []version.ID
	for _, id := range ids {
		marked, known := r.listedMarker(id)
		switch {
		case !known:
			ask = append(ask, id)
		case marked:
			out[id] = true
		}
	}
	var mu sync.Mutex
	mark := func(id version.ID) error {
		_, err := r.st.Stat(ctx, VersionKey(id, retention.MarkerFile))
		if errors.Is(err, store.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		mu.Lock()
		out[id] = true
		mu.Unlock()
		return nil
	}
	if lf, local := r.Folder(); local {
		// A stat on a folder costs less than handing it to a goroutine:
		// the ids go in one run per CPU, each relative to versions/.
		dir := lf.LocalPath(strings.TrimSuffix(VersionsPrefix, "/"))
		workers := min(runtime.GOMAXPROCS(0), len(ask)/256+1)
		per := (len(ask) + workers - 1) / max(workers, 1)
		return out, parallel(ctx, workers, workers, func(w int) error {
			return markersIn(dir, ask[w*per:min((w+1)*per, len(ask))], func(id version.ID) {
				mu.Lock()
				out[id] = true
				mu.Unlock()
			})
		})
	}
	err := parallel(ctx, len(ask), readWorkers, func(i int) error { return mark(ask[i]) })
	return out, err
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

// Temps calls fn for each temporary file of an interrupted write anywhere
// in the repository (store.TempCleaner; none on object stores): data/ and
// versions/, and also refs/, logs/, retention/, index/ and the root, where
// a compare-and-swap or create-only write killed before its rename leaves
// one (refs/heads/.tmp-…). verify notes them; gc deletes those older than
// the grace period (docs/spec.md §16). Errors: fn's, the store's.
func (r *Repo) Temps(ctx context.Context, fn func(store.ObjectInfo) error) error {
	tc, ok := r.st.(store.TempCleaner)
	if !ok {
		return nil
	}
	return tc.Temps(ctx, "", fn)
}
