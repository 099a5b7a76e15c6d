package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// Writer builds history packs and writes them, create-only. It shares its
// Reader's cache: a pack it writes is what later builds and walks of the
// same command read.
type Writer struct {
	r *Reader
	// Step, if set, is called just before each pack is created with
	// "pack:<id>" (tests inject crashes there).
	Step func(name string)
}

// NewWriter returns a Writer of packs into st whose builds fall back to
// records read from src.
func NewWriter(st store.Store, src Source) *Writer {
	return &Writer{r: NewReader(st, src)}
}

// Writer returns a Writer sharing r's cache and local versions.
func (r *Reader) Writer() *Writer { return &Writer{r: r} }

// NoBudget lets a build read as many records as missing packs take.
const NoBudget = -1

// Build returns the pack of e's version: e, then the Span(seq) − 1
// versions below it, read through the packs below (by the Fenwick
// layout, the packs of the versions just below a version tile its range
// exactly) or, where one is missing, through records — at most budget of
// them (NoBudget: any number). Errors: ErrOverBudget when more records
// would be needed (nothing is built), ErrBadPack when the records do not
// form the run the seq promises (a broken history), the Reader's.
func (w *Writer) Build(ctx context.Context, e Entry, budget int) (*Pack, error) {
	view := *w.r
	if budget >= 0 {
		view.budget = &budget
	}
	entries := []Entry{e}
	need := Span(e.Record.Seq) - 1
	if need > 0 {
		err := view.Walk(ctx, e.Record.Parent(), func(x Entry) (bool, error) {
			entries = append(entries, x)
			need--
			return need > 0, nil
		})
		if errors.Is(err, errOverBudget) {
			return nil, fmt.Errorf("history pack of version %s (seq %d): %w", e.Record.ID, e.Record.Seq, ErrOverBudget)
		}
		if err != nil {
			return nil, err
		}
	}
	return newPack(entries)
}

// ErrOverBudget: a pack could not be built within the records a caller
// allowed in place of missing packs below it.
var ErrOverBudget = errors.New("more records to read than allowed")

// Write builds the pack of e's version (Build) and creates it. A pack that
// exists already is left as it is (any writer builds the same bytes; a
// damaged one is verify's to report). It returns whether it created one.
// Errors: Build's, the store's.
func (w *Writer) Write(ctx context.Context, e Entry, budget int) (bool, error) {
	p, err := w.Build(ctx, e, budget)
	if err != nil {
		return false, err
	}
	return w.Put(ctx, p)
}

// Put creates pack p (create-only) and keeps it in the cache. A pack that
// exists already is left as it is. It returns whether it created it.
// Errors: the store's.
func (w *Writer) Put(ctx context.Context, p *Pack) (bool, error) {
	if w.Step != nil {
		w.Step("pack:" + string(p.ID))
	}
	err := w.r.st.Create(ctx, PackKey(p.ID), bytes.NewReader(p.Marshal()))
	if err != nil && !errors.Is(err, store.ErrExist) {
		return false, fmt.Errorf("write history pack of version %s: %w", p.ID, err)
	}
	w.r.remember(p.ID, p)
	return err == nil, nil
}

// Compare checks pack p against the records: each entry's bytes must be
// the compacted version.json of its version, which rec returns (ok false:
// the version has no readable record). Errors: ErrBadPack naming the
// first entry that has no record; *DiffersError (ErrBadPack) naming the
// first that differs from its record.
func Compare(p *Pack, rec func(id version.ID) (Entry, bool)) error {
	for i, e := range p.Entries {
		want, ok := rec(e.Record.ID)
		if !ok {
			return fmt.Errorf("history pack of version %s, record %d: version %s has no readable version.json: %w", p.ID, i+1, e.Record.ID, ErrBadPack)
		}
		if !bytes.Equal(want.Raw, e.Raw) {
			return &DiffersError{Pack: p.ID, Entry: i + 1, Version: e.Record.ID}
		}
	}
	return nil
}

// DiffersError: entry Entry (from 1) of the history pack of version Pack
// is not the bytes of its version's record, versions/<Version>/version.json.
// The pack copied the record when it was written, so one of the two was
// changed since; which one, the bytes alone do not say. It wraps
// ErrBadPack.
type DiffersError struct {
	Pack    version.ID
	Entry   int
	Version version.ID
}

func (e *DiffersError) Error() string {
	return fmt.Sprintf("history pack of version %s, record %d: it differs from versions/%s/version.json: %v", e.Pack, e.Entry, e.Version, ErrBadPack)
}

func (e *DiffersError) Unwrap() error { return ErrBadPack }
