package repo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Record reads and validates versions/<id>/version.json. Errors:
// ErrIncomplete if the version folder exists without a record (an upload
// that never finished), refs.ErrUnknownRev if there is no such version,
// version.ErrBadRecord.
func (r *Repo) Record(ctx context.Context, id version.ID) (*version.Record, error) {
	e, err := r.Entry(ctx, id)
	return e.Record, err
}

// Entry reads versions/<id>/version.json as a history entry: the record
// and its compacted bytes (history.Source). Errors as Record.
func (r *Repo) Entry(ctx context.Context, id version.ID) (history.Entry, error) {
	r.mu.Lock()
	e, ok := r.record[id]
	r.mu.Unlock()
	if ok {
		return e, nil
	}
	b, _, err := store.ReadAll(ctx, r.st, VersionKey(id, version.RecordFile))
	if errors.Is(err, store.ErrNotExist) {
		if _, serr := r.st.Stat(ctx, VersionKey(id, version.CatalogFile)); serr == nil {
			return history.Entry{}, missingVersion{fmt.Errorf("version %s has no %s: %w (an upload that did not finish)", id, version.RecordFile, ErrIncomplete)}
		}
		return history.Entry{}, missingVersion{fmt.Errorf("version %s: %w: it is not in %s", id, refs.ErrUnknownRev, r.where)}
	}
	if err != nil {
		return history.Entry{}, fmt.Errorf("read version %s: %w", id, err)
	}
	if e, err = history.NewEntry(b, id); err != nil {
		return history.Entry{}, &DamagedRecordError{Version: id, Location: r.st.Location(VersionKey(id, version.RecordFile)), Pack: history.PackKey(id), Err: err}
	}
	r.remember(e)
	return e, nil
}

// remember caches a record read from version.json (or about to be
// uploaded from a local copy with the same bytes).
func (r *Repo) remember(e history.Entry) {
	r.mu.Lock()
	r.record[e.Record.ID] = e
	r.mu.Unlock()
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

// Walk calls fn with the record of version id, then of its first parent,
// and so on, newest first, until fn returns false or an error, or the
// first version has been passed (refs.Walker). It reads history packs
// where the store has them (one read per run of up to
// history.MaxSpan versions) and records where it does not (docs/spec.md
// §18). Errors: fn's, the store's, Record's.
func (r *Repo) Walk(ctx context.Context, id version.ID, fn func(*version.Record) (bool, error)) error {
	return r.hist.Walk(ctx, id, func(e history.Entry) (bool, error) { return fn(e.Record) })
}

// Log returns the first-parent history from id back to the first version
// (newest first), at most max records when max > 0, read with Walk.
func (r *Repo) Log(ctx context.Context, id version.ID, max int) ([]*version.Record, error) {
	var out []*version.Record
	if id == "" {
		return out, nil
	}
	err := r.Walk(ctx, id, func(rec *version.Record) (bool, error) {
		out = append(out, rec)
		return max <= 0 || len(out) < max, nil
	})
	return out, err
}

// PackProblems returns the history packs found damaged so far by this
// Repo's walks (each error names the pack): they were not used, the
// records were read instead.
func (r *Repo) PackProblems() []error { return r.hist.Problems() }

// Resolve turns a revision into a version id: refs.Manager.Resolve, whose
// comment lists the revision forms and the errors.
func (r *Repo) Resolve(ctx context.Context, rev string) (refs.Resolved, error) {
	return r.refs.Resolve(ctx, rev)
}

// Abbrev returns the short ids of ids, the versions a command is about to
// show, local unpushed ones included (refs.Manager.Abbrev: 12 hex digits,
// more where two versions share a millisecond; a few listings of the
// versions made near them). Abbrev.Short of an id not given here returns
// the full id: pass every id that will be printed.
func (r *Repo) Abbrev(ctx context.Context, ids ...version.ID) (refs.Abbrev, error) {
	return r.refs.Abbrev(ctx, ids...)
}

// readWorkers is how many reads of small objects (records, packs) go out
// at once where a command needs many whose names it knows.
const readWorkers = 16

// prefetch reads the records of ids into the Repo's cache, readWorkers at
// a time. Errors are not kept: a later Record of that id reads again and
// returns its error.
func (r *Repo) prefetch(ctx context.Context, ids []version.ID) {
	parallel(ctx, len(ids), readWorkers, func(i int) error {
		r.Entry(ctx, ids[i])
		return nil
	})
}

// recordChain returns id's first-parent history read from the records
// alone (version.json), newest first, up to the first version or the
// first record it cannot read (whose error it returns with what it has).
func (r *Repo) recordChain(ctx context.Context, id version.ID) ([]*version.Record, error) {
	var out []*version.Record
	for id != "" {
		rec, err := r.Record(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, rec)
		id = rec.Parent()
	}
	return out, nil
}

// parallel runs fn(0..n-1), workers at a time, and returns the first
// error (the others still run to the end of the ones started).
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
