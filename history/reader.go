package history

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// Source reads what a walk falls back to where a pack is missing: a
// version's version.json as an Entry (NewEntry). Errors are the
// repository's: an unknown or incomplete version, a bad record.
type Source interface {
	Entry(ctx context.Context, id version.ID) (Entry, error)
}

// Reader walks first-parent histories, reading packs where they are and
// records where they are not. It caches what it reads for its life (one
// command) and is safe for concurrent use.
type Reader struct {
	st    store.Store
	src   Source
	c     *cache
	local map[version.ID]Entry
	// budget, if set, is how many records the reader may still read in
	// place of missing packs (a Writer's build).
	budget *int
}

type cache struct {
	mu sync.Mutex
	// packs holds every pack looked up: nil when the store has none (or
	// none this fdl can use).
	packs    map[version.ID]*Pack
	problems []error
}

// NewReader returns a Reader of the packs in st, falling back to src.
func NewReader(st store.Store, src Source) *Reader {
	return &Reader{st: st, src: src, c: &cache{packs: map[version.ID]*Pack{}}}
}

// WithLocal returns a Reader sharing r's cache that knows the versions of
// local (not in the store yet: what a push is about to upload) and reads
// them from there, never from the store.
func (r *Reader) WithLocal(local []Entry) *Reader {
	v := *r
	v.local = make(map[version.ID]Entry, len(r.local)+len(local))
	for id, e := range r.local {
		v.local[id] = e
	}
	for _, e := range local {
		v.local[e.Record.ID] = e
	}
	return &v
}

// Problems returns the damaged packs met so far, each an error wrapping
// ErrBadPack that names the pack.
func (r *Reader) Problems() []error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return append([]error(nil), r.c.problems...)
}

// Pack returns the pack of version id, or nil when the store has none, it
// is of a newer format, or it is damaged (kept in Problems): the caller
// then reads records. A local version's pack is never looked for in the
// store. Errors: the store's, other than a missing object.
func (r *Reader) Pack(ctx context.Context, id version.ID) (*Pack, error) {
	r.c.mu.Lock()
	p, seen := r.c.packs[id]
	r.c.mu.Unlock()
	if seen {
		return p, nil
	}
	if _, ok := r.local[id]; ok {
		return nil, nil
	}
	b, _, err := store.ReadAll(ctx, r.st, PackKey(id))
	switch {
	case errors.Is(err, store.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read history pack of version %s: %w", id, err)
	default:
		p, err = ParsePack(b, id)
		if err != nil {
			p = nil
			if errors.Is(err, ErrBadPack) {
				r.c.mu.Lock()
				r.c.problems = append(r.c.problems, fmt.Errorf("%s: %w", r.st.Location(PackKey(id)), err))
				r.c.mu.Unlock()
			}
		}
	}
	r.remember(id, p)
	return p, nil
}

// Absent tells r that the store has no pack of the versions ids (a
// listing said so): r will not look for them.
func (r *Reader) Absent(ids ...version.ID) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	for _, id := range ids {
		if _, seen := r.c.packs[id]; !seen {
			r.c.packs[id] = nil
		}
	}
}

func (r *Reader) remember(id version.ID, p *Pack) {
	r.c.mu.Lock()
	r.c.packs[id] = p
	r.c.mu.Unlock()
}

// errOverBudget: a Writer's build would read more records than allowed.
var errOverBudget = errors.New("too many records to read in place of missing history packs")

// entry reads id's record: from local, else from the source (counted
// against the budget, if any).
func (r *Reader) entry(ctx context.Context, id version.ID) (Entry, error) {
	if e, ok := r.local[id]; ok {
		return e, nil
	}
	if r.budget != nil {
		if *r.budget <= 0 {
			return Entry{}, errOverBudget
		}
		*r.budget--
	}
	return r.src.Entry(ctx, id)
}

// Walk calls fn with the entry of version id, then of its first parent,
// and so on, newest first, until fn returns false, fn fails, or the first
// version has been passed. At each version it reaches by a jump it reads
// that version's pack (a local version's entry comes from the Reader's
// local versions); where the pack is missing it reads the records of the
// versions the pack would hold, one by one through their parents, and
// tries a pack again below them. Errors: fn's, the store's, the Source's.
func (r *Reader) Walk(ctx context.Context, id version.ID, fn func(Entry) (bool, error)) error {
	for id != "" {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := r.Pack(ctx, id)
		if err != nil {
			return err
		}
		if p != nil {
			for _, e := range p.Entries {
				if more, err := fn(e); err != nil || !more {
					return err
				}
			}
			id = p.Next()
			continue
		}
		next, err := r.walkRecords(ctx, id, fn)
		if err != nil || next == stopped {
			return err
		}
		id = next
	}
	return nil
}

// stopped is what walkRecords returns when fn asked to stop.
const stopped version.ID = "\x00stopped"

// walkRecords reads records from id down through first parents, as many as
// the pack of id would hold (a local version: just that one), calls fn
// with each, and returns the version where the walk goes on.
func (r *Reader) walkRecords(ctx context.Context, id version.ID, fn func(Entry) (bool, error)) (version.ID, error) {
	e, err := r.entry(ctx, id)
	if err != nil {
		return "", err
	}
	n := Span(e.Record.Seq)
	if _, ok := r.local[id]; ok {
		n = 1
	}
	for {
		if more, err := fn(e); err != nil || !more {
			return stopped, err
		}
		id = e.Record.Parent()
		if n--; n <= 0 || id == "" {
			return id, nil
		}
		if _, ok := r.local[id]; ok {
			return id, nil
		}
		if e, err = r.entry(ctx, id); err != nil {
			return "", err
		}
	}
}
