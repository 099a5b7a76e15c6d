package refs

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/version"
)

// MoveOptions are the inputs of MoveBranch.
type MoveOptions struct {
	// Backwards allows moving to a version that is not a descendant of the
	// one the branch holds, and replacing a branch ref that does not parse
	// (docs/spec.md §10.4: moving back is explicit).
	Backwards bool
	// Why is recorded in the ref log entry (a default says what happened).
	Why string
	// Check, if not nil, is the caller's rule for the move from the version
	// the branch holds (from: "" when a damaged ref is replaced) to the
	// version it moves to, run before anything is written (a repository
	// refuses a version out of retention, and a change of the DuckDB
	// releases that read the branch).
	Check func(ctx context.Context, from version.ID, to *version.Record) error
}

// MoveResult says what MoveBranch did.
type MoveResult struct {
	Ref    Name       `json:"ref"`    // the branch's full name
	Branch string     `json:"branch"` // its short name
	Old    version.ID `json:"old"`
	New    version.ID `json:"new"`
	// Undone are the versions on Old's first-parent history that New does
	// not reach (newest first): they stay in the repository and the log.
	Undone    []version.ID `json:"undone"`
	Backwards bool         `json:"backwards"`
	UpToDate  bool         `json:"up_to_date"`
}

// MoveBranch moves the existing branch name to rev's version with Update. A
// forward move (the branch's version is an ancestor of rev's: IsAncestor)
// always goes, logged as ActionForward; any other move only with
// o.Backwards, logged as ActionMoveBack (docs/spec.md §10.4). A branch ref that
// does not parse is replaced only with o.Backwards (what it held cannot be
// compared), logged as ActionRepair with Old "".
//
// A branch naming a version the repository does not hold (CheckHeld) is
// damaged too: replaced only with o.Backwards, logged as ActionRepair with
// Old the id it named.
//
// Errors: *MissingBranchError (no such branch), *CorruptError and
// *DanglingError (damaged, without Backwards), the Resolve errors, what o.Check returns,
// *MoveRefusedError (not a descendant, without Backwards), *MoveRaceError
// when another writer moved the branch first; the last two wrap ErrRefused.
func (m *Manager) MoveBranch(ctx context.Context, name, rev string, o MoveOptions) (MoveResult, error) {
	n, err := Branch(name)
	if err != nil {
		return MoveResult{}, err
	}
	res := MoveResult{Ref: n, Branch: n.Short(), Undone: []version.ID{}}
	_, err = m.Update(ctx, n, func(ctx context.Context, cur Ref, err error) (Move, error) {
		repair := errors.Is(err, ErrCorrupt) && o.Backwards && cur.Token != ""
		switch {
		case errors.Is(err, ErrNotFound):
			return Move{}, &MissingBranchError{Branch: n, Err: err}
		case err != nil && !repair:
			return Move{}, err
		}
		res.Old = cur.ID
		to, _, err := m.ResolveRecord(ctx, rev)
		if err != nil {
			return Move{}, err
		}
		res.New = to.ID
		if !repair && cur.ID == to.ID {
			res.UpToDate = true
			return Move{}, nil
		}
		if o.Check != nil {
			from := cur.ID
			if repair {
				from = ""
			}
			if err := o.Check(ctx, from, to); err != nil {
				return Move{}, err
			}
		}
		if !repair {
			// A branch naming a missing version is damaged like one that
			// does not parse: replaced only with Backwards.
			if herr := CheckHeld(ctx, m.recs, n, cur.ID); herr != nil {
				if !errors.Is(herr, ErrDangling) || !o.Backwards {
					return Move{}, herr
				}
				repair = true
			}
		}
		if repair {
			res.Backwards = true
			return Move{To: to.ID, Action: ActionRepair, Why: orDefault(o.Why, "replaced a damaged ref")}, nil
		}
		return m.forwardOrBack(ctx, &res, n, cur.ID, to.ID, o)
	})
	var ce *ConflictError
	if errors.As(err, &ce) && res.Old != "" { // a lost repair stays a plain conflict
		return res, &MoveRaceError{Branch: n, To: res.New, Now: ce.Now}
	}
	return res, err
}

// forwardOrBack decides a move of branch n from old to new: forward, or
// back (undoing versions) only with o.Backwards.
func (m *Manager) forwardOrBack(ctx context.Context, res *MoveResult, n Name, old, new version.ID, o MoveOptions) (Move, error) {
	forward, err := IsAncestor(ctx, m.recs, old, new)
	if err != nil {
		return Move{}, err
	}
	if forward {
		return Move{To: new, Action: ActionForward, Why: orDefault(o.Why, "moved forward")}, nil
	}
	if res.Undone, err = Undone(ctx, m.recs, old, new); err != nil {
		return Move{}, err
	}
	if !o.Backwards {
		return Move{}, &MoveRefusedError{Branch: n, Old: old, New: new, Undone: len(res.Undone)}
	}
	res.Backwards = true
	return Move{To: new, Action: ActionMoveBack, Why: orDefault(o.Why, fmt.Sprintf("moved back, undoing %d version(s)", len(res.Undone)))}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
