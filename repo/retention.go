package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/retention"
)

// PolicyChange is a change of the retention policy: only the rules given
// (non-nil) change.
type PolicyChange struct {
	// Reset starts from retention.DefaultPolicy instead of the stored
	// policy, which may be one that does not parse.
	Reset bool
	// KeepAll turns both rules off (keep every version a ref or ref log
	// reaches); it does not go with KeepLast or KeepWithin.
	KeepAll    bool
	KeepLast   *int
	KeepWithin *retention.Duration
	Grace      *retention.Duration
}

// RetentionState is the repository's retention policy and floor. Its JSON
// is 'fdl retention --json'.
type RetentionState struct {
	Policy retention.Policy `json:"policy"`
	// Stored is false while the repository has no policy object (the
	// default policy applies).
	Stored  bool             `json:"stored"`
	Floor   *retention.Floor `json:"floor"`
	Changed bool             `json:"changed"`
	// FloorBad is true when the floor does not parse (the policy can
	// still be read and set); the reason is in Warnings.
	FloorBad bool    `json:"-"`
	Warnings []error `json:"-"`
}

// Retention returns the retention policy and floor, after applying change
// when it is not nil (UpdatePolicy, or ResetPolicy with change.Reset: one
// compare-and-swap). Errors: ErrInvalidArguments for KeepAll with a rule
// or a negative KeepLast; retention.ErrInvalid; ErrRetentionConflict;
// the store's.
func (r *Repo) Retention(ctx context.Context, change *PolicyChange) (*RetentionState, error) {
	out := &RetentionState{}
	var err error
	if change != nil {
		if out.Policy, err = r.changePolicy(ctx, *change); err != nil {
			return nil, err
		}
		out.Stored, out.Changed = true, true
	} else {
		p, tok, err := r.Policy(ctx)
		if err != nil {
			return nil, err
		}
		out.Policy, out.Stored = p, tok != ""
	}
	if out.Floor, _, err = r.Floor(ctx); errors.Is(err, retention.ErrInvalid) {
		out.FloorBad = true
		out.Warnings = append(out.Warnings, err)
	} else if err != nil {
		return nil, err
	}
	return out, nil
}

func (r *Repo) changePolicy(ctx context.Context, c PolicyChange) (retention.Policy, error) {
	if c.KeepAll && (c.KeepLast != nil || c.KeepWithin != nil) {
		return retention.Policy{}, fmt.Errorf("keep-all turns the rules off: it does not go with keep-last or keep-within: %w", ErrInvalidArguments)
	}
	if c.KeepLast != nil && *c.KeepLast < 0 {
		return retention.Policy{}, fmt.Errorf("keep-last %d: give 0 (off) or a positive number of versions: %w", *c.KeepLast, ErrInvalidArguments)
	}
	update := r.UpdatePolicy
	if c.Reset {
		update = r.ResetPolicy
	}
	return update(ctx, func(p *retention.Policy) error {
		switch {
		case c.KeepAll:
			p.KeepLast, p.KeepWithin = 0, 0
		default:
			if c.KeepLast != nil {
				p.KeepLast = *c.KeepLast
			}
			if c.KeepWithin != nil {
				p.KeepWithin = *c.KeepWithin
			}
		}
		if c.Grace != nil {
			p.Grace = *c.Grace
		}
		return nil
	})
}
