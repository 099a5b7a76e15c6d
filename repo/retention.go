package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// The retention state of a repository: retention/policy.json (read and
// changed with a compare-and-swap), retention/floor.json (moved only by
// gc's apply) and the markers of retired versions; and the 'fdl retention'
// view of them.

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
	// AllowShortGrace allows a Grace below retention.MinGrace.
	AllowShortGrace bool
}

// RetentionState is the repository's retention policy and floor. Its JSON
// is 'fdl retention --json'.
type RetentionState struct {
	Policy retention.Policy `json:"policy"`
	// Stored is false while the repository has no policy object (the
	// default policy applies).
	Stored  bool             `json:"stored"`
	Floor   *retention.Floor `json:"retention_floor"`
	Changed bool             `json:"changed"`
	// FloorBad is true when the floor does not parse (the policy can
	// still be read and set); the reason is in Warnings.
	FloorBad bool    `json:"-"`
	Warnings []error `json:"-"`
}

// Retention returns the retention policy and floor, after applying change
// when it is not nil (UpdatePolicy, or ResetPolicy with change.Reset: one
// compare-and-swap). Errors: ErrInvalidArguments for KeepAll with a rule
// or a negative KeepLast; *ShortGraceError for a grace below
// retention.MinGrace without AllowShortGrace; retention.ErrInvalid; ErrRetentionConflict;
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
	if c.Grace != nil && *c.Grace < retention.MinGrace && !c.AllowShortGrace {
		return retention.Policy{}, &ShortGraceError{Grace: *c.Grace}
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

// Policy reads retention/policy.json and the token of the read; a
// repository without one has retention.DefaultPolicy and store.NoToken.
// Errors: retention.ErrInvalid, the store's.
func (r *Repo) Policy(ctx context.Context) (retention.Policy, store.Token, error) {
	b, tok, err := store.ReadAll(ctx, r.st, retention.PolicyKey)
	if errors.Is(err, store.ErrNotExist) {
		return retention.DefaultPolicy(), store.NoToken, nil
	}
	if err != nil {
		return retention.Policy{}, "", fmt.Errorf("read %s: %w", retention.PolicyKey, err)
	}
	p, err := retention.ParsePolicy(b)
	if err != nil {
		return p, tok, &DamagedError{What: DamagedPolicy, Location: r.st.Location(retention.PolicyKey), Err: err}
	}
	return p, tok, nil
}

// UpdatePolicy reads the policy, lets change edit it, and writes it back
// with one compare-and-swap (docs/spec.md §13). Errors: what change
// returns; retention.ErrInvalid; ErrRetentionConflict when another writer
// changed it in between (nothing written: run again).
func (r *Repo) UpdatePolicy(ctx context.Context, change func(*retention.Policy) error) (retention.Policy, error) {
	return r.updatePolicy(ctx, false, change)
}

// ResetPolicy is UpdatePolicy starting from retention.DefaultPolicy instead
// of the stored policy, which may be one that does not parse (the way to
// replace a damaged policy.json); still one compare-and-swap against what
// was read.
func (r *Repo) ResetPolicy(ctx context.Context, change func(*retention.Policy) error) (retention.Policy, error) {
	return r.updatePolicy(ctx, true, change)
}

func (r *Repo) updatePolicy(ctx context.Context, reset bool, change func(*retention.Policy) error) (retention.Policy, error) {
	p, tok, err := r.Policy(ctx)
	switch {
	case reset && (err == nil || errors.Is(err, retention.ErrInvalid)) && tok != "":
		p = retention.DefaultPolicy()
	case reset && errors.Is(err, retention.ErrInvalid):
		return p, err // the read gave no token to swap against
	case err != nil:
		return p, err
	case reset:
		p = retention.DefaultPolicy()
	}
	if err := change(&p); err != nil {
		return p, err
	}
	p.Format = retention.Format
	p.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	p.UpdatedBy = r.Actor()
	if err := p.Validate(); err != nil {
		return p, err
	}
	b, err := p.Marshal()
	if err != nil {
		return p, err
	}
	if _, err := r.st.Swap(ctx, retention.PolicyKey, tok, b); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return p, fmt.Errorf("%s changed while it was being set: %w; nothing was written: run the command again", retention.PolicyKey, ErrRetentionConflict)
		}
		return p, fmt.Errorf("write %s: %w", retention.PolicyKey, err)
	}
	return p, nil
}

// withoutInvalid is err's text without the trailing retention.ErrInvalid,
// which the caller wraps again after adding where and what to do.
func withoutInvalid(err error) string {
	return strings.TrimSuffix(err.Error(), ": "+retention.ErrInvalid.Error())
}

// Floor reads retention/floor.json and the token of the read; nil and
// store.NoToken when the floor never moved. Errors: retention.ErrInvalid,
// the store's.
func (r *Repo) Floor(ctx context.Context) (*retention.Floor, store.Token, error) {
	b, tok, err := store.ReadAll(ctx, r.st, retention.FloorKey)
	if errors.Is(err, store.ErrNotExist) {
		return nil, store.NoToken, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", retention.FloorKey, err)
	}
	f, err := retention.ParseFloor(b)
	if err != nil {
		return nil, tok, &DamagedError{What: DamagedFloor, Location: r.st.Location(retention.FloorKey), Err: err}
	}
	return f, tok, nil
}

// SwapFloor moves the floor: one compare-and-swap of retention/floor.json
// (docs/spec.md §14, §9) from the object the token from names (a token
// Floor returned; store.NoToken when there was no floor) to f, and returns
// the token of the new floor. Only gc moves the floor (package gc: its
// first step, and putting the floor back when it stops right after).
// Errors: store.ErrConflict, unwrapped, when the floor is no longer the
// one from names (another gc, a policy change); the store's; f's
// marshalling error.
func (r *Repo) SwapFloor(ctx context.Context, from store.Token, f *retention.Floor) (store.Token, error) {
	b, err := f.Marshal()
	if err != nil {
		return "", err
	}
	return r.st.Swap(ctx, retention.FloorKey, from, b)
}

// WriteMarker writes version m.Version's retirement marker,
// versions/<id>/retired.json, create-only (docs/spec.md §15): gc writes it
// before it deletes the version's catalog and dataset.json. The Repo's
// listings of versions/ are dropped (they hold which versions are
// marked). Errors: one wrapping store.ErrExist when the version has a
// marker already (markers never change; gc takes that one), the store's,
// m's marshalling error.
func (r *Repo) WriteMarker(ctx context.Context, m *retention.Marker) error {
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	err = r.st.Create(ctx, VersionKey(m.Version, retention.MarkerFile), bytes.NewReader(b))
	r.forgetIDs()
	if err != nil {
		return fmt.Errorf("write the marker of version %s: %w", m.Version, err)
	}
	return nil
}

// Marker reads versions/<id>/retired.json; nil when the version has none.
func (r *Repo) Marker(ctx context.Context, id version.ID) (*retention.Marker, error) {
	b, _, err := store.ReadAll(ctx, r.st, VersionKey(id, retention.MarkerFile))
	if errors.Is(err, store.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s of version %s: %w", retention.MarkerFile, id, err)
	}
	m, err := retention.ParseMarker(b, id)
	if err != nil {
		return nil, &DamagedError{What: DamagedMarker, Location: r.st.Location(VersionKey(id, retention.MarkerFile)), Err: err}
	}
	return m, nil
}

// Retirement returns why and since when version id is out of retention
// (its marker, else the stored floor listing it), or nil when it is in
// retention.
func (r *Repo) Retirement(ctx context.Context, id version.ID) (*RetiredError, error) {
	seq := int64(0)
	if rec, err := r.Record(ctx, id); err == nil {
		seq = rec.Seq
	}
	m, err := r.Marker(ctx, id)
	if err != nil {
		return nil, err
	}
	if m != nil {
		return &RetiredError{ID: id, Seq: seq, At: m.RetiredAt, Floor: m.Floor, Reason: m.Reason, Marked: true}, nil
	}
	f, _, err := r.Floor(ctx)
	if err != nil {
		return nil, err
	}
	for _, rt := range f.RetiredList() {
		if rt.ID == id {
			return &RetiredError{ID: id, Seq: seq, At: f.MovedAt, Floor: f.Generation, Reason: rt.Reason}, nil
		}
	}
	return nil, nil
}

// RefuseRetired returns the *RetiredError of rec's version if it is out of
// retention (checkout, ATTACH printing and new refs refuse it).
func (r *Repo) RefuseRetired(ctx context.Context, rec *version.Record) error {
	ret, err := r.Retirement(ctx, rec.ID)
	if err != nil {
		return err
	}
	if ret != nil {
		return ret
	}
	return nil
}

// RetiredIDs returns every version out of retention: those with a marker
// (one listing of versions/) and those the stored floor lists. Errors:
// retention.ErrInvalid when the floor does not parse (MarkedIDs still
// answers), the store's.
func (r *Repo) RetiredIDs(ctx context.Context) (map[version.ID]bool, error) {
	out, err := r.MarkedIDs(ctx)
	if err != nil {
		return nil, err
	}
	f, _, err := r.Floor(ctx)
	if err != nil {
		return nil, err
	}
	for _, rt := range f.RetiredList() {
		out[rt.ID] = true
	}
	return out, nil
}
