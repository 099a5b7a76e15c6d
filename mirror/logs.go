package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// SignaturesPrefix is the folder of signature objects outside version
// folders, copied as they are.
const SignaturesPrefix = "signatures/"

// logEntry is a source ref log entry the destination lacks: its key, its
// bytes (copied as they are) and what it says.
type logEntry struct {
	key   string
	b     []byte
	entry refs.LogEntry
}

// newLogEntries returns the entries of the ref logs of the refs moving
// that the source holds and the destination lacks (one listing of each
// log at each end, one read per new entry). A source that cannot list
// (a web server) gives none. Entries that do not parse are not copied.
func (m *mirror) newLogEntries(ctx context.Context, moving []*plannedRef) ([]logEntry, error) {
	var out []logEntry
	for _, p := range moving {
		prefix := refs.LogsPrefix + string(p.name) + "/"
		at := func(st store.Store) (map[string]bool, error) {
			keys := map[string]bool{}
			err := st.List(ctx, prefix, func(oi store.ObjectInfo) error {
				if rest := strings.TrimPrefix(oi.Key, prefix); !strings.Contains(rest, "/") && strings.HasSuffix(rest, ".json") {
					keys[oi.Key] = true
				}
				return nil
			})
			return keys, err
		}
		have, err := at(m.src.Store())
		if errors.Is(err, store.ErrCannotList) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("mirror from %s: ref log of %s: %w", m.src.Where(), p.name, err)
		}
		there, err := at(m.dst.Store())
		if err != nil {
			return nil, fmt.Errorf("mirror to %s: ref log of %s: %w", m.dst.Where(), p.name, err)
		}
		keys := make([]string, 0, len(have))
		for k := range have {
			if !there[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			b, _, err := store.ReadAll(ctx, m.src.Store(), k)
			if err != nil {
				return nil, fmt.Errorf("mirror from %s: %w", m.src.Where(), err)
			}
			var e refs.LogEntry
			if json.Unmarshal(b, &e) != nil || refs.LogKey(e) != k {
				continue
			}
			out = append(out, logEntry{key: k, b: b, entry: e})
		}
	}
	return out, nil
}

// copyLogEntries writes the new entries whose versions (old and new) the
// destination now holds, create-only, as the source has them. An entry
// naming a version the source does not hold whole (a push that never
// finished) waits for a later run.
func (m *mirror) copyLogEntries(ctx context.Context, entries []logEntry) error {
	for _, e := range entries {
		if !m.held(e.entry.Old) || !m.held(e.entry.New) {
			continue
		}
		m.step("mirror:log")
		if err := m.create(ctx, e.key, strings.NewReader(string(e.b)), nil, ""); err != nil {
			return err
		}
		m.res.LogEntries++
	}
	return nil
}

// held reports whether id is "" or a version the destination holds
// (known to this run: looked up or copied).
func (m *mirror) held(id version.ID) bool {
	if id == "" || m.known[id] {
		return true
	}
	if m.dstIDs != nil {
		return m.dstIDs[id]
	}
	return false
}

// copySignatures copies the objects under signatures/ the destination
// lacks (one listing at each end); a source that cannot list has none to
// copy.
func (m *mirror) copySignatures(ctx context.Context) error {
	there := map[string]bool{}
	if err := m.dst.Store().List(ctx, SignaturesPrefix, func(oi store.ObjectInfo) error {
		there[oi.Key] = true
		return nil
	}); err != nil {
		return fmt.Errorf("mirror to %s: %w", m.dst.Where(), err)
	}
	var todo []store.ObjectInfo
	err := m.src.Store().List(ctx, SignaturesPrefix, func(oi store.ObjectInfo) error {
		if !there[oi.Key] {
			todo = append(todo, oi)
		}
		return nil
	})
	if errors.Is(err, store.ErrCannotList) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mirror from %s: %w", m.src.Where(), err)
	}
	for _, oi := range todo {
		m.step("mirror:signatures")
		if err := m.copyObject(ctx, oi.Key, oi.Size, nil); err != nil {
			return err
		}
	}
	return nil
}

// copyLaterSignatures copies the record signature of each planned ref's
// version when the source has one and the destination lacks it: a
// version signed (fdl sign, fdl tag --sign) after a mirror copied it. A
// version copied by this run has its signature already; one its ref's
// refusal keeps out is skipped. It costs a Stat at each end per version
// the refs name; a signature added to a version no ref names at its head
// is copied with that version only (docs/spec.md, "Mirrors").
func (m *mirror) copyLaterSignatures(ctx context.Context, planned []*plannedRef) error {
	seen := map[version.ID]bool{}
	for _, p := range planned {
		if p.err != nil || p.src == "" || seen[p.src] {
			continue
		}
		seen[p.src] = true
		key := repo.SignatureKey(p.src, "")
		oi, err := m.src.Store().Stat(ctx, key)
		if errors.Is(err, store.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("mirror from %s: %s: %w", m.src.Where(), key, err)
		}
		if _, err := m.dst.Store().Stat(ctx, key); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotExist) {
			return fmt.Errorf("mirror to %s: %s: %w", m.dst.Where(), key, err)
		}
		if has, err := m.dstHas(ctx, p.src); err != nil {
			return err
		} else if !has {
			continue // its version is not there: it comes with the version
		}
		m.step("mirror:signatures")
		if err := m.copyObject(ctx, key, oi.Size, nil); err != nil {
			return err
		}
	}
	return nil
}
