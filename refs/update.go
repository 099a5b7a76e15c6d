package refs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// Move is one move of a ref, as a Check decides it: where the ref goes and
// what its ref log entry says. The zero Move moves nothing (the ref already
// holds what the caller wants).
type Move struct {
	// To is the version the ref holds after the move; "" deletes the ref
	// (Action must then be ActionDelete).
	To     version.ID
	Action Action
	// Why is recorded in the ref log entry.
	Why string
	// Confirm, if not nil, runs after the move's ref log entry is written
	// and before the compare-and-swap, given the entry's key; an error
	// refuses the move (the entry is removed, nothing moves). The entry is
	// the move's announcement: a reader of the logs (gc) that lists them
	// after Confirm began sees the move as pending (PendingMoves), so a
	// check made in Confirm and one made by that reader cannot both miss
	// each other (docs/spec.md §16, gc and push).
	Confirm func(ctx context.Context, entryKey string) error
	// Target, for a request ref, is the branch the request asks to move
	// (recorded in the ref log entry; docs/spec.md §17).
	Target Name
}

// Check is a caller's rule for one move. It gets the ref as Update read it
// and the read's error: nil, an error wrapping ErrNotFound (absent or
// deleted: cur.Token is what a create swaps against) or one wrapping
// ErrCorrupt (cur.Token is the damaged content's, "" when the ref could not
// be read at all). It returns the move, the zero Move for none, or an error
// that refuses it; nothing is written before it returns. It may do work
// the move depends on (a push uploads its versions there), since the
// compare-and-swap still guards against the ref moving meanwhile.
type Check func(ctx context.Context, cur Ref, err error) (Move, error)

// Update is the one place a ref changes (docs/spec.md §17):
//
//  1. read ref n;
//  2. check decides the move from what n holds, and may refuse it;
//  3. write the move's ref log entry, create-only;
//  4. run Move.Confirm, if any (it may still refuse the move);
//  5. compare-and-swap n from what step 1 read to Move.To (or to the
//     tombstone for a delete);
//  6. if 4 or 5 fails, remove the entry; if 5 lost to another writer's
//     same move (the ref holds Move.To and that writer's entry says the
//     same move), remove this one's entry too (dropTwin).
//
// So a move that happened always has its entry, and a version it undoes
// stays reachable from the log even if the process dies right after the
// swap; a crash between 3 and 4 leaves an entry for a move that did not
// happen, which only keeps a version longer. When the store reports a
// conflict for a write that in fact succeeded (a retried request), the ref
// is read once more and holding Move.To counts as success (STORES.md).
//
// It returns the ref as step 1 read it (its ID is "" when it did not exist
// or was damaged). Errors: what check returns (read errors other than
// not-found and corrupt are returned without calling it); *ConflictError
// (wrapping ErrConflict) when another writer moved n between 1 and 4;
// store.ErrReadOnly (nothing written) on a store that is never written;
// the store's.
func (m *Manager) Update(ctx context.Context, n Name, check Check) (Ref, error) {
	cur, rerr := m.Read(ctx, n)
	if rerr != nil && !errors.Is(rerr, ErrNotFound) && !errors.Is(rerr, ErrCorrupt) {
		return cur, rerr
	}
	mv, err := check(ctx, cur, rerr)
	if err != nil || mv.Action == "" {
		return cur, err
	}
	if mv.To == "" && mv.Action != ActionDelete {
		return cur, fmt.Errorf("move %s: %s with no version to move to", n, mv.Action)
	}
	if store.IsReadOnly(m.st) {
		// Said first, before any step of the move: nothing can be written.
		return cur, fmt.Errorf("repository %s: %w over http(s): %s is not written; writes go through the repository's own folder or object-store URL (s3://, gs://, azblob://)", m.st.Location(""), store.ErrReadOnly, n)
	}
	m.step(string(mv.Action) + ":reflog")
	entry, err := m.appendLog(ctx, n, cur.ID, mv)
	if err != nil {
		return cur, err
	}
	if mv.Confirm != nil {
		m.step(string(mv.Action) + ":confirm")
		if err := mv.Confirm(ctx, entry); err != nil {
			m.st.Delete(context.WithoutCancel(ctx), entry)
			return cur, err
		}
	}
	m.step(string(mv.Action) + ":ref")
	raced, err := m.swap(ctx, n, cur.Token, mv.To)
	if err != nil {
		// Best effort: an entry left behind only keeps a version longer.
		m.st.Delete(context.WithoutCancel(ctx), entry)
		return cur, err
	}
	if raced {
		m.dropTwin(ctx, n, entry, cur.ID, mv)
	}
	return cur, nil
}

// twinWindow bounds how far before its own entry dropTwin looks for
// another writer's entry of the same move: that entry was written after
// the other writer read the ref and before its swap, which came before
// this writer's; a Confirm (push's data check) may take minutes.
const twinWindow = time.Hour

// dropTwin is called when the swap of the move logged at entry met a
// conflict but found the ref holding mv.To: either this writer's own
// write succeeded and the store reported a conflict (a retried request),
// or another writer made the same move (old to mv.To) at the same time
// and this one did not move the ref. In the second case the other
// writer's entry records the move, and this one's is removed, so the log
// holds one entry for one move. Entries are read only from the hour
// before this one's (by their UUIDv7 ids); nothing is removed when no
// such entry is found or the log cannot be read (a duplicate entry only
// keeps a version longer).
func (m *Manager) dropTwin(ctx context.Context, n Name, entry string, old version.ID, mv Move) {
	ctx = context.WithoutCancel(ctx)
	prefix := LogsPrefix + string(n) + "/"
	own := strings.TrimSuffix(strings.TrimPrefix(entry, prefix), ".json")
	ownTime := version.ID(own).Time()
	var near []string
	err := m.st.List(ctx, prefix, func(o store.ObjectInfo) error {
		id := strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), ".json")
		if o.Key == entry || strings.Contains(id, "/") {
			return nil
		}
		if t := version.ID(id).Time(); !t.IsZero() && !t.Before(ownTime.Add(-twinWindow)) {
			near = append(near, o.Key)
		}
		return nil
	})
	if err != nil {
		return
	}
	for _, k := range near {
		b, _, err := store.ReadAll(ctx, m.st, k)
		if err != nil {
			continue
		}
		if e, err := parseLogEntry(b, k); err == nil && e.Old == old && e.New == mv.To && e.Action == mv.Action {
			m.st.Delete(ctx, entry)
			return
		}
	}
}

// swap is step 5 of Update: ref n from the content read with token old
// (store.NoToken: only if it does not exist) to id, or to the tombstone when
// id is "". raced is true when the store reported a conflict but the ref
// holds id (a retried write, or another writer's same move).
func (m *Manager) swap(ctx context.Context, n Name, old store.Token, id version.ID) (raced bool, err error) {
	content := []byte(Tombstone)
	if id != "" {
		content = []byte(string(id) + "\n")
	}
	_, err = m.st.Swap(ctx, string(n), old, content)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, store.ErrConflict) {
		if id == "" {
			return false, fmt.Errorf("delete ref %s: %w", n, err)
		}
		return false, fmt.Errorf("move ref %s: %w", n, err)
	}
	now, rerr := m.Read(ctx, n)
	if id != "" && rerr == nil && now.ID == id {
		return true, nil
	}
	return false, &ConflictError{Ref: n, Now: now.ID}
}

// Create makes ref n point at id only where it does not exist (or was
// deleted), logged as ActionCreate with why. check, if not nil, is the
// caller's rule run first (a repository refuses a version out of
// retention); then CheckNewName refuses a name that would hide another ref
// or a version id. A ref that already holds id is no error: nothing is
// written and existed is true (a retried create, as CI retries a release
// tag). Errors: what check returns; *ExistsError (wrapping ErrExists)
// when n holds another version (also when another writer created it at the
// same time); *CorruptError when n holds garbage; the CheckNewName errors.
func (m *Manager) Create(ctx context.Context, n Name, id version.ID, why string, check func(context.Context) error) (existed bool, err error) {
	_, err = m.Update(ctx, n, func(ctx context.Context, cur Ref, err error) (Move, error) {
		switch {
		case err == nil && cur.ID == id:
			existed = true
			return Move{}, nil
		case err == nil:
			return Move{}, &ExistsError{Ref: n, Holds: cur.ID, Wanted: id}
		case !errors.Is(err, ErrNotFound):
			return Move{}, err
		}
		if check != nil {
			if err := check(ctx); err != nil {
				return Move{}, err
			}
		}
		if err := m.CheckNewName(ctx, n); err != nil {
			return Move{}, err
		}
		return Move{To: id, Action: ActionCreate, Why: why}, nil
	})
	if ce := (*ConflictError)(nil); errors.As(err, &ce) && ce.Now != "" {
		if ce.Now == id {
			return true, nil
		}
		return false, &ExistsError{Ref: n, Holds: ce.Now, Wanted: id}
	}
	return existed, err
}

// RepairTag points tag n at id when n is damaged: its file holds no version
// id (*CorruptError), or it names a version the repository does not hold
// whole (a dangling tag, CheckHeld). The move is logged as ActionRepair
// with why, so the ref log keeps what the tag held. check, if not nil, is
// the caller's rule for id (a version out of retention is refused). Tags
// never move: a tag that holds a readable version is refused with
// *TagIntactError, unless it already holds id (a retried repair: nothing is
// written). It returns the ref as it was (its ID is "" when the file was
// corrupt). Errors: ErrNotFound (there is nothing to repair: create it),
// *TagIntactError, what check returns, *ConflictError, the store's.
func (m *Manager) RepairTag(ctx context.Context, n Name, id version.ID, why string, check func(context.Context) error) (Ref, error) {
	if !n.IsTag() {
		return Ref{}, fmt.Errorf("repair %s: not a tag: %w", n, ErrInvalidName)
	}
	return m.Update(ctx, n, func(ctx context.Context, cur Ref, err error) (Move, error) {
		switch {
		case err != nil && !errors.Is(err, ErrCorrupt):
			return Move{}, err
		case err == nil && cur.ID == id:
			return Move{}, nil
		case err == nil:
			held := CheckHeld(ctx, m.recs, n, cur.ID)
			if held == nil {
				return Move{}, &TagIntactError{Ref: n, Holds: cur.ID}
			}
			if !errors.Is(held, ErrDangling) {
				return Move{}, held
			}
		}
		if check != nil {
			if err := check(ctx); err != nil {
				return Move{}, err
			}
		}
		return Move{To: id, Action: ActionRepair, Why: why}, nil
	})
}

// DeleteBranch deletes branch n (a compare-and-swap to the tombstone),
// logged as ActionDelete; the versions stay in the repository and the ref
// log reaches them. It refuses the branch HEAD names (ErrDeleteHead).
// It returns the ref as it was. Errors: ErrNotFound, *CorruptError,
// *ConflictError.
func (m *Manager) DeleteBranch(ctx context.Context, n Name) (Ref, error) {
	if head, err := m.Head(ctx); err == nil && head == n {
		return Ref{}, fmt.Errorf("branch %s: %w", n.Short(), ErrDeleteHead)
	}
	unread := false
	cur, err := m.Update(ctx, n, func(_ context.Context, cur Ref, err error) (Move, error) {
		if err != nil {
			unread = true
			return Move{}, err
		}
		return Move{Action: ActionDelete, Why: "deleted"}, nil
	})
	if unread {
		return Ref{}, err
	}
	return cur, err
}
