// Package refs is the ref manager of a repository (the model of lakeFS's
// graveler ref manager): it reads refs — small files under refs/ that each
// hold one version id and a newline (docs/spec.md §1) — and is the only code
// that moves them. It owns creating, moving (forward, backwards with a
// reason, repairing a damaged ref) and deleting refs, the ref log that
// records every move, revision parsing and resolution (main~2, main@12, id
// prefixes), and the short ids shown to people.
//
// Every move goes through Manager.Update: the ref log entry, then one
// compare-and-swap on the store (docs/spec.md §10.3), then, if the swap failed,
// the entry is removed. The caller's rule for the move (the fast-forward
// check of a push, the retention check of a new ref) is passed in as a
// Check. Records reach the manager through the Records interface, which the
// repository satisfies: this package never imports repo.
//
// Deleting a ref is portable across stores that ignore conditional deletes:
// it is a compare-and-swap to the tombstone line "deleted", which readers
// treat as absent (docs/spec.md §refs).
package refs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// RecordReader reads version records: the ancestry rules need parents and
// seq numbers.
type RecordReader interface {
	// Record returns the validated record of version id (its
	// version.json). Errors wrap ErrUnknownRev when there is no such
	// version.
	Record(ctx context.Context, id version.ID) (*version.Record, error)
}

// Walker walks first-parent histories.
type Walker interface {
	// Walk calls fn with the record of version id, then of its first
	// parent, and so on, newest first, until fn returns false or an
	// error, or the first version has been passed. Records may come from
	// history packs (package history), which hold them verbatim. Errors:
	// fn's, and Record's for a version it cannot read.
	Walk(ctx context.Context, id version.ID, fn func(*version.Record) (bool, error)) error
}

// Ancestry is what the fast-forward rule reads: records and first-parent
// walks.
type Ancestry interface {
	RecordReader
	Walker
}

// Records is what the manager reads of versions: records, first-parent
// walks, and the ids of the versions whose ids begin with given hex digits
// (id prefixes, short ids).
type Records interface {
	Ancestry
	// IDsWithPrefix returns the ids of the versions in the store (complete
	// or not) whose hex digits begin with hex (1 to 32 lower-case hex
	// digits, no dashes), sorted: one listing of the store. Errors:
	// store.ErrCannotList on a store that cannot list (plain HTTP).
	IDsWithPrefix(ctx context.Context, hex string) ([]version.ID, error)
}

// Ref is one ref as read: its name, the version it holds and the store token
// of the read (for a later compare-and-swap).
type Ref struct {
	Name  Name        `json:"name"`
	ID    version.ID  `json:"id"`
	Token store.Token `json:"-"`
}

// Options configure a Manager. The zero value works (actor "unknown", no
// step hook, an empty Where).
type Options struct {
	// Where names the repository in errors (its URL).
	Where string
	// Actor returns who moves refs: its name goes into every ref log entry.
	Actor func() string
	// Step, if set, is called just before each write of a move:
	// "<action>:reflog" before the ref log entry, "<action>:ref" before the
	// compare-and-swap. Tests inject crashes there.
	Step func(name string)
}

// Manager reads and moves the refs of one repository store.
type Manager struct {
	st   store.Store
	recs Records
	o    Options
}

// New returns the ref manager of a store whose versions recs reads.
func New(st store.Store, recs Records, o Options) *Manager {
	return &Manager{st: st, recs: recs, o: o}
}

func (m *Manager) step(name string) {
	if m.o.Step != nil {
		m.o.Step(name)
	}
}

func (m *Manager) actor() string {
	if m.o.Actor != nil {
		return m.o.Actor()
	}
	return "unknown"
}

// Read returns the ref n. A missing or deleted ref returns ErrNotFound (with
// the token of the tombstone in Ref.Token, so a create can replace it); an
// empty or garbage ref returns *CorruptError (with the token of what it
// holds, so a repair can replace it).
func (m *Manager) Read(ctx context.Context, n Name) (Ref, error) {
	b, tok, err := store.ReadAll(ctx, m.st, string(n))
	if errors.Is(err, store.ErrNotExist) {
		return Ref{Name: n}, fmt.Errorf("%s: %w", n, ErrNotFound)
	}
	if err != nil {
		return Ref{}, fmt.Errorf("read ref %s: %w", n, err)
	}
	ref := Ref{Name: n, Token: tok}
	if string(b) == Tombstone {
		return ref, fmt.Errorf("%s: %w", n, ErrNotFound)
	}
	id, err := parseContent(b)
	if err != nil {
		return ref, &CorruptError{Ref: n, Location: m.st.Location(string(n)), Why: err.Error()}
	}
	ref.ID = id
	return ref, nil
}

func parseContent(b []byte) (version.ID, error) {
	if len(b) == 0 {
		return "", errors.New("it is empty")
	}
	if !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 {
		return "", fmt.Errorf("it holds %q, not one version id and a newline", truncate(b))
	}
	id, err := version.ParseID(string(b[:len(b)-1]))
	if err != nil {
		return "", fmt.Errorf("it holds %q, not a version id", truncate(b))
	}
	return id, nil
}

func truncate(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// List returns the refs under prefix ("refs/heads/", "refs/tags/", "refs/")
// sorted by name, skipping deleted ones. Refs that cannot be read are
// returned in bad (each error names the ref); good ones are still listed.
func (m *Manager) List(ctx context.Context, prefix string) (good []Ref, bad []error, err error) {
	var names []Name
	err = m.st.List(ctx, prefix, func(o store.ObjectInfo) error {
		names = append(names, Name(o.Key))
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list refs under %s: %w", prefix, err)
	}
	for _, n := range names {
		ref, rerr := m.Read(ctx, n)
		switch {
		case rerr == nil:
			good = append(good, ref)
		case errors.Is(rerr, ErrNotFound):
		default:
			bad = append(bad, rerr)
		}
	}
	return good, bad, nil
}

// Head returns the branch HEAD names. Errors: ErrCorrupt if HEAD is not
// "ref: refs/heads/<name>\n".
func (m *Manager) Head(ctx context.Context) (Name, error) {
	b, _, err := store.ReadAll(ctx, m.st, HeadKey)
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "ref: "+HeadsPrefix) || !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		return "", fmt.Errorf("HEAD holds %q, not \"ref: refs/heads/<branch>\": %w", truncate(b), ErrCorrupt)
	}
	n := Name(strings.TrimSuffix(strings.TrimPrefix(s, "ref: "), "\n"))
	if err := CheckShort(n.Short()); err != nil {
		return "", fmt.Errorf("HEAD names %q: %v: %w", n, err, ErrCorrupt)
	}
	return n, nil
}
