package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sort"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// LogsPrefix is the store key prefix of ref logs (docs/spec.md §17).
const LogsPrefix = "logs/"

// LogFormat is the format number of a ref log entry.
const LogFormat = 1

// Ref log actions (LogEntry.Action; stable strings).
const (
	ActionPush     = "push"      // a push moved a branch forward
	ActionCreate   = "create"    // a branch or tag was created
	ActionDelete   = "delete"    // a branch was deleted
	ActionForward  = "move"      // fdl branch -f moved a branch forward
	ActionMoveBack = "move-back" // fdl branch -f --backwards moved a branch to a non-descendant
	ActionRepair   = "repair"    // fdl branch -f --backwards replaced a damaged branch ref
)

// LogEntry is one ref log entry: logs/<ref>/<entry id>.json, written
// create-only, never changed (docs/spec.md §17). Old is "" when the ref did
// not exist; New is "" when the move deleted it.
type LogEntry struct {
	Format int `json:"format"`
	// ID is the entry's own UUIDv7: entries sort by it.
	ID     string     `json:"id"`
	Ref    refs.Name  `json:"ref"`
	Old    version.ID `json:"old"`
	New    version.ID `json:"new"`
	Action string     `json:"action"`
	Author string     `json:"author"`
	Time   time.Time  `json:"time"`
	Why    string     `json:"why"`
}

// ErrBadLog is wrapped by the error for a ref log entry that does not parse.
var ErrBadLog = errors.New("invalid ref log entry")

// BadLogError says which ref log entry does not parse and why; it wraps
// ErrBadLog.
type BadLogError struct {
	Key string // logs/<ref>/<entry id>.json
	Why string
}

func (e *BadLogError) Error() string {
	return fmt.Sprintf("ref log entry %s: %s: %v", e.Key, e.Why, ErrBadLog)
}

func (e *BadLogError) Unwrap() error { return ErrBadLog }

// logKey returns the key of an entry: logs/<ref name>/<entry id>.json.
func logKey(ref refs.Name, id string) string { return LogsPrefix + string(ref) + "/" + id + ".json" }

// DefaultActor is who moves refs when the caller does not say (SetActor):
// $FDL_AUTHOR, else the login name, else "unknown".
func DefaultActor() string {
	if a := os.Getenv("FDL_AUTHOR"); a != "" {
		return a
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

// SetActor sets who ref log entries and floor moves name as author.
func (r *Repo) SetActor(name string) { r.actor = name }

// Actor returns who this Repo names as author of ref moves.
func (r *Repo) Actor() string {
	if r.actor == "" {
		r.actor = DefaultActor()
	}
	return r.actor
}

// appendLog writes one ref log entry create-only and returns its key.
// Every ref move writes its entry just before the compare-and-swap and
// removes it (dropLog) when the move fails, so a move that happened always
// has its entry (docs/spec.md §17); a crash between the two can leave an
// entry for a move that did not happen, which only keeps a version longer.
func (r *Repo) appendLog(ctx context.Context, ref refs.Name, old, new version.ID, action, why string) (string, error) {
	id, err := version.NewID()
	if err != nil {
		return "", err
	}
	e := LogEntry{Format: LogFormat, ID: string(id), Ref: ref, Old: old, New: new, Action: action, Author: r.Actor(),
		Time: time.Now().UTC().Truncate(time.Millisecond), Why: why}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return "", err
	}
	key := logKey(ref, e.ID)
	if err := r.st.Create(ctx, key, strings.NewReader(string(b)+"\n")); err != nil {
		return "", fmt.Errorf("move %s (%s): write its ref log entry %s first: %w", ref, r.st.Location(string(ref)), key, err)
	}
	return key, nil
}

// RefLog returns the ref log entries of ref (every ref when ref is ""),
// newest first. Entries that do not parse are returned in bad (each error
// names the key); the others are still listed. Errors: the store's.
func (r *Repo) RefLog(ctx context.Context, ref refs.Name) (entries []LogEntry, bad []error, err error) {
	prefix := LogsPrefix
	if ref != "" {
		prefix += string(ref) + "/"
	}
	var keys []string
	err = r.st.List(ctx, prefix, func(o store.ObjectInfo) error {
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
		b, _, err := store.ReadAll(ctx, r.st, k)
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

// logIDs returns every version id the ref logs name. Errors: a store error,
// or the first entry that does not parse (gc must not run without knowing
// what the logs reach).
func (r *Repo) logIDs(ctx context.Context) ([]version.ID, error) {
	entries, bad, err := r.RefLog(ctx, "")
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w; gc refuses to run without knowing every version the ref logs reach: restore the entry or remove it", bad[0])
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

// MoveOptions are the inputs of MoveBranch.
type MoveOptions struct {
	// Backwards allows moving to a version that is not a descendant of the
	// one the branch holds (DESIGN.md §4.4: moving back is explicit).
	Backwards bool
	// Why is recorded in the ref log entry.
	Why string
}

// MoveResult says what MoveBranch did.
type MoveResult struct {
	Branch refs.Name  `json:"branch"`
	Old    version.ID `json:"old"`
	New    version.ID `json:"new"`
	// Undone are the versions on Old's first-parent history that New does
	// not reach (newest first): they stay in the repository and the log.
	Undone    []version.ID `json:"undone"`
	Backwards bool         `json:"backwards"`
	UpToDate  bool         `json:"up_to_date"`
}

// MoveRefusedError is returned when a branch would move to a version that
// does not descend from the one it holds, without MoveOptions.Backwards. It
// wraps ErrRefused (exit code 3).
type MoveRefusedError struct {
	Branch refs.Name
	Old    version.ID
	New    version.ID
	Undone int
}

func (e *MoveRefusedError) Error() string {
	return fmt.Sprintf("moving %s from %s to %s refused: %s is not a descendant of %s, so the move would undo %d version(s); nothing moved; to move the branch back on purpose pass --backwards (the undone versions stay in the repository and in the ref log, fdl reflog %s)",
		e.Branch.Short(), e.Old, e.New, e.New, e.Old, e.Undone, e.Branch.Short())
}

func (e *MoveRefusedError) Unwrap() error { return ErrRefused }

// MoveBranch moves an existing branch to rev's version with a
// compare-and-swap. A forward move (the branch's version is an ancestor of
// rev's) always goes; any other move only with o.Backwards (DESIGN.md
// §4.4). Like every ref move, its ref log entry is written just before the
// move, so that a crash never leaves an undone version that neither a ref
// nor a ref log reaches; if the move fails, the entry is removed. Errors:
// refs.ErrNotFound (no such branch), *MoveRefusedError, *RetiredError
// (rev's version left retention), ErrRefused when another writer moved
// the branch first. A branch ref that does not parse (refs.ErrCorrupt) is
// replaced only with o.Backwards (what it held cannot be compared), logged
// as ActionRepair.
func (r *Repo) MoveBranch(ctx context.Context, name, rev string, o MoveOptions) (MoveResult, error) {
	n, err := refs.Branch(name)
	if err != nil {
		return MoveResult{}, err
	}
	res := MoveResult{Branch: n, Undone: []version.ID{}}
	cur, err := r.refs.Read(ctx, n)
	if errors.Is(err, refs.ErrCorrupt) && o.Backwards && cur.Token != "" {
		return r.repairBranch(ctx, n, cur.Token, rev, o.Why)
	}
	if err != nil {
		if errors.Is(err, refs.ErrNotFound) {
			return res, fmt.Errorf("branch %s does not exist (create it with fdl branch %s REV): %w", name, name, err)
		}
		return res, err
	}
	res.Old = cur.ID
	rec, err := r.resolveRecord(ctx, rev)
	if err != nil {
		return res, err
	}
	to := rec
	res.New = to.ID
	if cur.ID == to.ID {
		res.UpToDate = true
		return res, nil
	}
	if err := r.refuseRetired(ctx, rec); err != nil {
		return res, err
	}
	forward, err := r.IsAncestor(ctx, cur.ID, to.ID, nil)
	if err != nil {
		return res, err
	}
	action, why := ActionForward, o.Why
	if why == "" {
		why = "moved forward"
	}
	if !forward {
		// The undone versions: cur's first parents that to does not reach.
		for id := cur.ID; id != ""; {
			if ok, err := r.IsAncestor(ctx, id, to.ID, nil); err != nil {
				return res, err
			} else if ok {
				break
			}
			res.Undone = append(res.Undone, id)
			prec, err := r.Record(ctx, id)
			if err != nil {
				return res, err
			}
			id = prec.Parent()
		}
		if !o.Backwards {
			return res, &MoveRefusedError{Branch: n, Old: cur.ID, New: to.ID, Undone: len(res.Undone)}
		}
		res.Backwards = true
		action = ActionMoveBack
		if o.Why == "" {
			why = fmt.Sprintf("moved back, undoing %d version(s)", len(res.Undone))
		}
	}
	r.step("move:reflog")
	entry, err := r.appendLog(ctx, n, cur.ID, to.ID, action, why)
	if err != nil {
		return res, err
	}
	r.step("move:ref")
	if err := r.refs.Update(ctx, n, cur.Token, to.ID); err != nil {
		r.dropLog(ctx, entry)
		if errors.Is(err, refs.ErrConflict) {
			now, _ := r.refs.Read(ctx, n)
			return res, fmt.Errorf("moving %s to %s refused: another writer moved it to %s first; nothing moved: look at it (fdl reflog %s) and run again: %w", name, to.ID, now.ID, name, ErrRefused)
		}
		return res, err
	}
	return res, nil
}

// dropLog removes the ref log entry of a move that did not happen (best
// effort: an entry left behind by a crash only keeps a version longer).
func (r *Repo) dropLog(ctx context.Context, key string) {
	r.st.Delete(context.WithoutCancel(ctx), key)
}

// firstLine returns s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// pushMessage returns the message of the version a push moves a branch to.
func (r *Repo) pushMessage(ctx context.Context, head version.ID, extra map[version.ID]*version.Record) string {
	if rec := extra[head]; rec != nil {
		return rec.Message
	}
	if rec, err := r.Record(ctx, head); err == nil {
		return rec.Message
	}
	return ""
}

// refusePushOnRetired refuses a push whose versions build on a version out
// of retention: the data files only that version's catalog listed may be
// gone, so the new catalog could name files that no longer exist.
func (r *Repo) refusePushOnRetired(ctx context.Context, head version.ID, pending []Pending) error {
	base := head
	if len(pending) > 0 {
		base = pending[0].Record.Parent()
	}
	if base == "" {
		return nil
	}
	ret, err := r.Retirement(ctx, base)
	if err != nil || ret == nil {
		return err
	}
	return fmt.Errorf("push refused: it builds on %w; check out a version in retention (fdl checkout URL NEWDIR) and redo the change there", ret)
}

// repairBranch points a branch whose ref does not parse at rev's version:
// one compare-and-swap against the damaged bytes, its ref log entry first.
func (r *Repo) repairBranch(ctx context.Context, n refs.Name, tok store.Token, rev, why string) (MoveResult, error) {
	res := MoveResult{Branch: n, Undone: []version.ID{}, Backwards: true}
	rec, err := r.resolveRecord(ctx, rev)
	if err != nil {
		return res, err
	}
	to := rec
	res.New = to.ID
	if err := r.refuseRetired(ctx, rec); err != nil {
		return res, err
	}
	if why == "" {
		why = "replaced a damaged ref"
	}
	entry, err := r.appendLog(ctx, n, "", to.ID, ActionRepair, why)
	if err != nil {
		return res, err
	}
	if err := r.refs.Update(ctx, n, tok, to.ID); err != nil {
		r.dropLog(ctx, entry)
		return res, err
	}
	return res, nil
}

// resolveRecord resolves rev and reads its version's record.
func (r *Repo) resolveRecord(ctx context.Context, rev string) (*version.Record, error) {
	to, err := r.Resolve(ctx, rev)
	if err != nil {
		return nil, err
	}
	return r.Record(ctx, to.ID)
}

// Unprotected returns those of ids — versions no branch holds any more
// (undone by a move back, or on a deleted branch), reached only by the ref
// log — that the retention policy lets leave retention at the next gc,
// with the policy read: none when the policy keeps everything a ref log
// reaches (no rule set); else those created keep_within or longer before
// now (all of them without keep_within). Versions a tag or another branch
// keeps are not looked for (docs/spec.md §13).
func (r *Repo) Unprotected(ctx context.Context, ids []version.ID, now time.Time) ([]version.ID, retention.Policy, error) {
	p, _, err := r.Policy(ctx)
	if err != nil || p.KeepsEverything() {
		return nil, p, err
	}
	var out []version.ID
	for _, id := range ids {
		rec, err := r.Record(ctx, id)
		if err != nil {
			return nil, p, err
		}
		if p.KeepWithin == 0 || now.Sub(rec.CreatedAt) >= time.Duration(p.KeepWithin) {
			out = append(out, id)
		}
	}
	return out, p, nil
}

// OnlyReachedFrom returns the versions of id's first-parent history that
// no branch's first-parent history holds (newest first): after a branch
// holding id was deleted, those only the ref log reaches.
func (r *Repo) OnlyReachedFrom(ctx context.Context, id version.ID) ([]version.ID, error) {
	branches, _, err := r.refs.List(ctx, refs.HeadsPrefix)
	if err != nil {
		return nil, err
	}
	on := map[version.ID]bool{}
	for _, b := range branches {
		log, err := r.Log(ctx, b.ID, 0)
		if err != nil {
			return nil, err
		}
		for _, rec := range log {
			on[rec.ID] = true
		}
	}
	log, err := r.Log(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	var out []version.ID
	for _, rec := range log {
		if !on[rec.ID] {
			out = append(out, rec.ID)
		}
	}
	return out, nil
}
