package repo

import (
	"context"
	"errors"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// TrackingState says how a working directory's base relates to the head
// of its branch.
type TrackingState string

// The tracking states.
const (
	// TrackUpToDate: the base is the branch's head.
	TrackUpToDate TrackingState = "up-to-date"
	// TrackAhead: the base descends from the head; push is a fast-forward.
	TrackAhead TrackingState = "ahead"
	// TrackBehind: the head descends from the base; pull is a
	// fast-forward, and a version committed here is not (push refuses it).
	TrackBehind TrackingState = "behind"
	// TrackDiverged: each has versions the other lacks; push refuses.
	TrackDiverged TrackingState = "diverged"
	// TrackNoBranch: the branch does not exist in the repository (yet):
	// push creates it.
	TrackNoBranch TrackingState = "no-branch"
)

// Tracking is the base against the head of the branch, read with one ref
// read and the records between the two (refs.AheadBehind).
type Tracking struct {
	// Ref is the branch's full name (refs/heads/…).
	Ref refs.Name `json:"ref"`
	// Head is the version the branch holds ("" with TrackNoBranch).
	Head    version.ID    `json:"head,omitempty"`
	HeadSeq int64         `json:"head_seq,omitempty"`
	State   TrackingState `json:"state"`
	// Ahead counts versions of the base's first-parent history (local or
	// already in the store) that the branch lacks; Behind those of the
	// branch that the base lacks.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
}

// Tracking compares base (whose unpushed versions are pending) with the
// head of branch, reading its ref once (refs.AheadBehind): status,
// checkout's warning, pull and request states use it. Errors: an invalid
// branch name, a pending version.json's, the store's.
func (r *Repo) Tracking(ctx context.Context, branch string, base version.ID, pending []Pending) (*Tracking, error) {
	n, err := refs.Branch(branch)
	if err != nil {
		return nil, err
	}
	recs, err := r.withLocal(pending)
	if err != nil {
		return nil, err
	}
	tr := &Tracking{Ref: n}
	ref, err := r.refs.Read(ctx, n)
	switch {
	case errors.Is(err, refs.ErrNotFound):
		// Every version of the base's history is ahead: its seq counts them.
		tr.State = TrackNoBranch
		if base != "" {
			rec, err := recs.Record(ctx, base)
			if err != nil {
				return nil, err
			}
			tr.Ahead = int(rec.Seq)
		}
		return tr, nil
	case err != nil:
		return nil, err
	}
	tr.Head = ref.ID
	head, err := recs.Record(ctx, ref.ID)
	if err != nil {
		return nil, refs.DanglingRead(n, ref.ID, err)
	}
	tr.HeadSeq = head.Seq
	d, err := refs.AheadBehind(ctx, recs, base, ref.ID)
	if err != nil {
		return nil, err
	}
	tr.Ahead, tr.Behind = d.Ahead, d.Behind
	switch {
	case d.Ahead == 0 && d.Behind == 0:
		tr.State = TrackUpToDate
	case d.Behind == 0:
		tr.State = TrackAhead
	case d.Ahead == 0:
		tr.State = TrackBehind
	default:
		tr.State = TrackDiverged
	}
	return tr, nil
}
