package refs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// LogsPrefix is the store key prefix of ref logs (docs/spec.md §17).
const LogsPrefix = "logs/"

// LogFormat is the format number of a ref log entry.
const LogFormat = 1

// Action is what a ref log entry says a move did (LogEntry.Action; the
// strings are stable: scripts read them).
type Action string

// Ref log actions.
const (
	ActionPush     Action = "push"      // a push moved a branch forward (or created it)
	ActionCreate   Action = "create"    // a branch or tag was created
	ActionDelete   Action = "delete"    // a branch was deleted
	ActionForward  Action = "move"      // a branch was moved forward by name
	ActionMoveBack Action = "move-back" // a branch was moved, with Backwards, to a non-descendant
	ActionRepair   Action = "repair"    // a damaged ref was replaced (a branch: Backwards; a tag: RepairTag)
	ActionApprove  Action = "approve"   // a branch was moved forward to a request's version
	ActionReplace  Action = "replace"   // a request was moved to a version that does not descend from the one it held
	ActionMirror   Action = "mirror"    // a mirror created the ref, or moved a branch forward, to what its source holds
)

// LogEntry is one ref log entry: logs/<ref>/<entry id>.json, written
// create-only, never changed (docs/spec.md §17). Old is "" when the ref did
// not exist; New is "" when the move deleted it.
type LogEntry struct {
	Format int `json:"format"`
	// ID is the entry's own UUIDv7: entries sort by it.
	ID     string     `json:"id"`
	Ref    Name       `json:"ref"`
	Old    version.ID `json:"old"`
	New    version.ID `json:"new"`
	Action Action     `json:"action"`
	Author string     `json:"author"`
	Time   time.Time  `json:"time"`
	Why    string     `json:"why"`
	// Target is set on the entries of a request ref: the branch the
	// request asks to move (full name).
	Target Name `json:"target,omitempty"`
}

// logKey returns the key of an entry: logs/<ref name>/<entry id>.json.
func logKey(ref Name, id string) string { return LogsPrefix + string(ref) + "/" + id + ".json" }

// appendLog is step 3 of Update: one ref log entry, create-only; it returns
// its key.
func (m *Manager) appendLog(ctx context.Context, ref Name, old version.ID, mv Move) (string, error) {
	id, err := version.NewID()
	if err != nil {
		return "", err
	}
	e := LogEntry{Format: LogFormat, ID: string(id), Ref: ref, Old: old, New: mv.To, Action: mv.Action, Author: m.actor(),
		Time: time.Now().UTC().Truncate(time.Millisecond), Why: mv.Why, Target: mv.Target}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return "", err
	}
	key := logKey(ref, e.ID)
	if err := m.st.Create(ctx, key, strings.NewReader(string(b)+"\n")); err != nil {
		return "", fmt.Errorf("move %s (%s): write its ref log entry %s first: %w", ref, m.st.Location(string(ref)), key, err)
	}
	return key, nil
}

// Log returns the ref log entries of ref (every ref when ref is ""),
// newest first. Entries that do not parse are returned in bad (each a
// *BadLogError naming the key); the others are still listed. Errors: the
// store's.
func (m *Manager) Log(ctx context.Context, ref Name) (entries []LogEntry, bad []error, err error) {
	prefix := LogsPrefix
	if ref != "" {
		prefix += string(ref) + "/"
	}
	var keys []string
	err = m.st.List(ctx, prefix, func(o store.ObjectInfo) error {
		rest := strings.TrimPrefix(o.Key, prefix)
		if ref != "" && strings.Contains(rest, "/") {
			return nil // the log of a ref whose name continues ref's (main/x)
		}
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list ref logs under %s: %w", prefix, err)
	}
	entries = []LogEntry{}
	for _, k := range keys {
		b, _, err := store.ReadAll(ctx, m.st, k)
		if err != nil {
			return nil, nil, fmt.Errorf("read ref log entry %s: %w", k, err)
		}
		e, err := parseLogEntry(b, k)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		entries = append(entries, e)
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].ID > entries[j].ID })
	return entries, bad, nil
}

// LogOf returns the ref log of name as a person gives it: a full ref name
// (refs/heads/main), else the first of the branch, the tag and the request
// of that short name that has a log (deleted refs too: their logs stay);
// every ref's when name is "". Errors: ErrInvalidName for a short name that
// breaks the naming rules; *NoLogError when no ref of that name ever moved;
// the store's.
func (m *Manager) LogOf(ctx context.Context, name string) (entries []LogEntry, bad []error, err error) {
	if name == "" {
		return m.Log(ctx, "")
	}
	if !strings.HasPrefix(name, "refs/") {
		if err := CheckShort(name); err != nil {
			return nil, nil, fmt.Errorf("ref name %q: %w", name, err)
		}
	}
	for _, c := range candidates(name) {
		if entries, bad, err = m.Log(ctx, c); err != nil {
			return nil, nil, err
		}
		if len(entries) > 0 || len(bad) > 0 {
			return entries, bad, nil
		}
	}
	return nil, nil, &NoLogError{Name: name, Where: m.o.Where}
}

// parseLogEntry decodes and checks an entry read from key.
func parseLogEntry(b []byte, key string) (LogEntry, error) {
	var e LogEntry
	bad := func(why string) (LogEntry, error) {
		return LogEntry{}, &BadLogError{Key: key, Why: why}
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return bad(fmt.Sprintf("does not parse (%v)", err))
	}
	if e.Format < 1 || e.Format > LogFormat {
		return bad(fmt.Sprintf("format %d is not one this fdl reads", e.Format))
	}
	if _, err := version.ParseID(e.ID); err != nil || key != logKey(e.Ref, e.ID) {
		return bad(fmt.Sprintf("its id %q and ref %q do not match its key", e.ID, e.Ref))
	}
	for _, id := range []version.ID{e.Old, e.New} {
		if id == "" {
			continue
		}
		if _, err := version.ParseID(string(id)); err != nil {
			return bad(err.Error())
		}
	}
	if e.Old == "" && e.New == "" {
		return bad("it names neither an old nor a new version")
	}
	return e, nil
}

// LogIDs returns every version id the ref logs name. Errors: a store error,
// or the first entry that does not parse (a caller deciding what to delete
// must not go on without knowing what the logs reach).
func (m *Manager) LogIDs(ctx context.Context) ([]version.ID, error) {
	entries, bad, err := m.Log(ctx, "")
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, bad[0]
	}
	var ids []version.ID
	for _, e := range entries {
		for _, id := range []version.ID{e.Old, e.New} {
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// LogKey returns the store key of a ref log entry: logs/<ref>/<entry id>.json.
func LogKey(e LogEntry) string { return logKey(e.Ref, e.ID) }

// LogNewer returns the ref log entries whose keys seen does not know: the
// moves made since a caller read the logs (one listing, one read per new
// entry). Entries that do not parse are returned in bad. Errors: the
// store's.
func (m *Manager) LogNewer(ctx context.Context, seen func(key string) bool) (entries []LogEntry, bad []error, err error) {
	var keys []string
	err = m.st.List(ctx, LogsPrefix, func(o store.ObjectInfo) error {
		if !seen(o.Key) {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list ref logs: %w", err)
	}
	for _, k := range keys {
		b, _, err := store.ReadAll(ctx, m.st, k)
		if err != nil {
			if errors.Is(err, store.ErrNotExist) {
				continue // a failed move's entry, removed meanwhile
			}
			return nil, nil, fmt.Errorf("read ref log entry %s: %w", k, err)
		}
		e, err := parseLogEntry(b, k)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		entries = append(entries, e)
	}
	return entries, bad, nil
}

// PendingMoves returns the entries of moves that may still be in
// progress, given every entry and what each ref holds now (absent refs ""):
// Update writes a move's entry before its compare-and-swap, so a move
// whose entry exists while its ref still holds the entry's Old, and that
// is newer than the last entry that put the ref where it is, may happen at
// any moment. (A move that failed and whose entry a crash left behind
// looks the same until the ref moves again: it only keeps a version
// longer.) Entries that delete a ref (New "") are not returned.
func PendingMoves(entries []LogEntry, now map[Name]version.ID) []LogEntry {
	byRef := map[Name][]LogEntry{}
	for _, e := range entries {
		byRef[e.Ref] = append(byRef[e.Ref], e)
	}
	var out []LogEntry
	for ref, es := range byRef {
		sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
		cur := now[ref]
		last := -1 // the newest entry that left the ref as it is
		for i, e := range es {
			if e.New == cur {
				last = i
			}
		}
		for _, e := range es[last+1:] {
			if e.Old == cur && e.New != "" && e.New != cur {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
