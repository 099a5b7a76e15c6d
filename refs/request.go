package refs

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/version"
)

// Requests (refs/requests/<name>): a version offered for a target branch
// without moving it. The target is recorded in the request's ref log (the
// Target of its entries); approving moves the target forward to the
// request's version (fast-forward only), then deletes the request.

// RequestOpening returns the newest ActionCreate entry of request n's ref
// log: who opened it, when, why, and its target branch. Errors: *NoLogError
// wrapped when n's log has no such entry (a request ref written by hand: its
// target is unknown), *BadLogError for an entry that does not parse, the
// store's.
func (m *Manager) RequestOpening(ctx context.Context, n Name) (LogEntry, error) {
	entries, bad, err := m.Log(ctx, n)
	if err != nil {
		return LogEntry{}, err
	}
	for _, e := range entries {
		if e.Action == ActionCreate && e.Target != "" {
			return e, nil
		}
	}
	if len(bad) > 0 {
		return LogEntry{}, bad[0]
	}
	return LogEntry{}, fmt.Errorf("request %s has no creation entry naming its target branch: %w", n.Short(), &NoLogError{Name: string(n), Where: m.o.Where})
}

// ApproveResult says what an approval did. Its JSON is 'fdl request
// approve --json'.
type ApproveResult struct {
	Request    string     `json:"request"`     // the request's short name
	RequestRef Name       `json:"request_ref"` // its full name
	Branch     string     `json:"branch"`      // the target's short name
	Ref        Name       `json:"ref"`         // the target's full name
	Old        version.ID `json:"old"`         // what the target held
	New        version.ID `json:"new"`         // the request's version
	// UpToDate is true when the target already held it (nothing moved).
	UpToDate bool `json:"up_to_date"`
	// Removed is true when the request ref was deleted; false when it
	// moved while the target moved (it stays, for another approval).
	Removed bool `json:"removed"`
}

// Approve moves target to the version request n holds, fast-forward only,
// as one Update of target (logged ActionApprove with why; check, if not
// nil, is the caller's rule for the move from the target's version to the
// request's, run after the fast-forward check), then deletes n
// (logged ActionDelete) unless another writer moved it meanwhile. Errors:
// *NoSuchRequestError (wrapping ErrNotFound), *MissingBranchError,
// *ApproveRefusedError when the target does not lead to the request's
// version (the target moved on) and *MoveRaceError when another writer
// moved the target first, both wrapping ErrRefused; what check returns.
func (m *Manager) Approve(ctx context.Context, n, target Name, why string, check func(ctx context.Context, from, to version.ID) error) (ApproveResult, error) {
	res := ApproveResult{Request: n.Short(), RequestRef: n, Branch: target.Short(), Ref: target}
	req, err := m.Read(ctx, n)
	if errors.Is(err, ErrNotFound) {
		return res, &NoSuchRequestError{Request: n, Where: m.o.Where}
	}
	if err != nil {
		return res, err
	}
	res.New = req.ID
	_, err = m.Update(ctx, target, func(ctx context.Context, cur Ref, err error) (Move, error) {
		switch {
		case errors.Is(err, ErrNotFound):
			return Move{}, &MissingBranchError{Branch: target, Err: err}
		case err != nil:
			return Move{}, err
		}
		res.Old = cur.ID
		if cur.ID == req.ID {
			res.UpToDate = true
			return Move{}, nil
		}
		ok, err := IsAncestor(ctx, m.recs, cur.ID, req.ID)
		if err != nil {
			return Move{}, err
		}
		if !ok {
			return Move{}, &ApproveRefusedError{Request: n, Branch: target, Head: cur.ID, ID: req.ID}
		}
		if check != nil {
			if err := check(ctx, cur.ID, req.ID); err != nil {
				return Move{}, err
			}
		}
		return Move{To: req.ID, Action: ActionApprove, Why: why}, nil
	})
	if ce := (*ConflictError)(nil); errors.As(err, &ce) {
		return res, &MoveRaceError{Branch: target, To: req.ID, Now: ce.Now}
	}
	if err != nil {
		return res, err
	}
	_, err = m.Update(ctx, n, func(_ context.Context, cur Ref, err error) (Move, error) {
		if err != nil || cur.ID != req.ID {
			return Move{}, nil // deleted, or moved meanwhile: it stays
		}
		res.Removed = true
		return Move{Action: ActionDelete, Why: "approved into " + target.Short(), Target: target}, nil
	})
	if errors.Is(err, ErrConflict) {
		res.Removed, err = false, nil
	}
	return res, err
}

// DropRequest deletes request n (a compare-and-swap to the tombstone,
// logged ActionDelete with why); its versions stay in the repository and
// its ref log reaches them. It returns the ref as it was. Errors:
// *NoSuchRequestError, *CorruptError, *ConflictError.
func (m *Manager) DropRequest(ctx context.Context, n Name, why string) (Ref, error) {
	var target Name
	if e, err := m.RequestOpening(ctx, n); err == nil {
		target = e.Target
	}
	missing := false
	cur, err := m.Update(ctx, n, func(_ context.Context, cur Ref, err error) (Move, error) {
		if errors.Is(err, ErrNotFound) {
			missing = true
			return Move{}, &NoSuchRequestError{Request: n, Where: m.o.Where}
		}
		if err != nil {
			return Move{}, err
		}
		return Move{Action: ActionDelete, Why: why, Target: target}, nil
	})
	if missing {
		return Ref{}, err
	}
	return cur, err
}

// NoSuchRequestError: no request of that name (absent or deleted). It
// wraps ErrNotFound.
type NoSuchRequestError struct {
	Request Name
	Where   string
}

func (e *NoSuchRequestError) Error() string {
	return fmt.Sprintf("request %s: none of that name in %s: %v", e.Request.Short(), e.Where, ErrNotFound)
}

func (e *NoSuchRequestError) Unwrap() error { return ErrNotFound }

// ApproveRefusedError: the target branch does not lead to the request's
// version (it moved on since the request was made): approving would not be
// a fast-forward. It wraps ErrRefused.
type ApproveRefusedError struct {
	Request Name
	Branch  Name
	Head    version.ID // what the target holds
	ID      version.ID // what the request holds
}

func (e *ApproveRefusedError) Error() string {
	return fmt.Sprintf("approving %s into %s refused: it is not a fast-forward: %s holds %s, which is not an ancestor of %s; nothing moved",
		e.Request.Short(), e.Branch.Short(), e.Branch.Short(), e.Head, e.ID)
}

func (e *ApproveRefusedError) Unwrap() error { return ErrRefused }
