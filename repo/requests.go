package repo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Requests: versions published under refs/requests/<name> for review,
// without moving the branch they are meant for (docs/spec.md §4.1). A
// request names its target branch in its ref log; approving it is a
// fast-forward of the target, refused as any push is.

// RequestOptions are the inputs of a request's creation or update.
type RequestOptions struct {
	// Rev is the version offered; "" with a working directory: its base,
	// whose unpushed versions are uploaded.
	Rev string
	// Into is the target branch's short name (creation only); default:
	// the working directory's branch, else HEAD's.
	Into string
	// Title says what the request is for (its ref log's why); default:
	// the offered version's message, first line.
	Title string
	// Local is the working directory the command runs in (nil: none):
	// Rev and Into default to its upstream and branch.
	Local *Local
}

// RequestState says whether approving a request is a fast-forward.
type RequestState string

// The states of a request.
const (
	// RequestOpen: the target's head is an ancestor of the request's
	// version; approve moves the target forward.
	RequestOpen RequestState = "open"
	// RequestStale: the target moved on and does not lead to the
	// request's version; approve is refused until the request is
	// rebuilt on the target's head and updated.
	RequestStale RequestState = "stale"
	// RequestMerged: the target already holds the request's version;
	// approve only removes the request.
	RequestMerged RequestState = "merged"
	// RequestNoTarget: the target branch does not exist (deleted).
	RequestNoTarget RequestState = "no-target"
)

// Request is one request as listed and shown. Its JSON is an item of
// 'fdl request list --json' and the "request" of 'fdl request show --json'.
type Request struct {
	Name string     `json:"name"` // short name
	Ref  refs.Name  `json:"ref"`  // refs/requests/<name>
	ID   version.ID `json:"id"`   // the version offered
	Seq  int64      `json:"seq"`
	// Into is the target branch's short name; IntoRef its full name.
	Into    string    `json:"into"`
	IntoRef refs.Name `json:"into_ref"`
	Title   string    `json:"title"`
	// Author and Opened are who created the request and when (its ref
	// log's create entry).
	Author string       `json:"author"`
	Opened time.Time    `json:"opened"`
	State  RequestState `json:"state"`
	// Ahead counts the versions approving it would add to the target;
	// Behind those the target has that the request lacks (stale when
	// both are above 0).
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
	// TargetHead is the version the target holds ("" when it does not
	// exist).
	TargetHead version.ID `json:"target_head,omitempty"`
}

// RequestView is one request with the versions it would add to its
// target, newest first. Its JSON is 'fdl request show --json'.
type RequestView struct {
	Request
	Versions []LogEntry      `json:"versions"`
	Log      []refs.LogEntry `json:"log"`
	Abbrev   refs.Abbrev     `json:"-"`
	Warnings []error         `json:"-"`
}

// CreateRequest publishes rev's version as request name for branch
// o.Into (default HEAD's), create-only. It is refused when the version
// adds nothing to the target (*NothingToRequestError), when approving it
// would not be a fast-forward (*RequestRefusedError, wrapping
// refs.ErrRefused), when the target does not exist, when a request of that
// name holds another version (refs.ErrExists; one holding the same version
// is no error: UpToDate), and for a version out of retention.
func (r *Repo) CreateRequest(ctx context.Context, name string, o RequestOptions) (PushResult, error) {
	n, err := refs.Request(name)
	if err != nil {
		return PushResult{}, err
	}
	head, pending, err := r.requestHead(ctx, o)
	if err != nil {
		return PushResult{}, err
	}
	into := o.Into
	if into == "" {
		into = r.defaultBranch(ctx, o.Local)
	}
	res, err := r.publishRequest(ctx, n, into, head, pending, o.Title, true)
	markByRev(err, o)
	return res, err
}

// markByRev notes on a *NothingToRequestError that the version was named
// by a revision (--from REV), not taken from a working directory.
func markByRev(err error, o RequestOptions) {
	if nt := (*NothingToRequestError)(nil); errors.As(err, &nt) && o.Rev != "" {
		nt.ByRev = true
	}
}

// requestHead is the version a request offers: o.Rev's, else the working
// directory's base with its unpushed versions (uploaded with it), else
// the default revision's.
func (r *Repo) requestHead(ctx context.Context, o RequestOptions) (version.ID, []Pending, error) {
	if o.Rev == "" && o.Local != nil && o.Local.Base != nil {
		return o.Local.Base.ID, o.Local.Pending, nil
	}
	rev := o.Rev
	if rev == "" {
		rev = o.Local.DefaultRev()
	}
	res, err := r.refs.Resolve(ctx, rev)
	return res.ID, nil, o.Local.unknownHere(rev, err)
}

// UpdateRequest moves request name to rev's version (with a working
// directory: its base, uploading its unpushed versions). A request is a
// proposal, not a published history: the new version need not descend
// from the one it held (that one stays in the ref log), but it must be a
// fast-forward of the target, as at creation.
func (r *Repo) UpdateRequest(ctx context.Context, name string, o RequestOptions) (PushResult, error) {
	n, err := refs.Request(name)
	if err != nil {
		return PushResult{}, err
	}
	head, pending, err := r.requestHead(ctx, o)
	if err != nil {
		return PushResult{}, err
	}
	res, err := r.publishRequest(ctx, n, "", head, pending, o.Title, false)
	markByRev(err, o)
	if nt := (*NothingToRequestError)(nil); errors.As(err, &nt) {
		nt.Update = true
	}
	return res, err
}

// defaultBranch is the branch a request targets without --into: the
// working directory's, else HEAD's.
func (r *Repo) defaultBranch(ctx context.Context, l *Local) string {
	if l != nil {
		return l.Branch
	}
	if h, err := r.refs.Head(ctx); err == nil {
		return h.Short()
	}
	return ""
}

// publishRequest uploads pending and creates (create) or moves request n
// to head, for target branch into ("" on update: the request's own).
func (r *Repo) publishRequest(ctx context.Context, n refs.Name, into string, head version.ID, pending []Pending, title string, create bool) (PushResult, error) {
	var target refs.Name
	if into != "" {
		t, err := refs.Branch(into)
		if err != nil {
			return PushResult{}, err
		}
		target = t
	}
	rule := func(ctx context.Context, cur refs.Ref, err error, recs withLocal, _ *PushResult) (refs.Move, error) {
		switch {
		case create && err == nil && cur.ID == head:
			return refs.Move{}, nil
		case create && err == nil:
			return refs.Move{}, &refs.ExistsError{Ref: n, Holds: cur.ID, Wanted: head}
		case create && errors.Is(err, refs.ErrNotFound):
			if err := r.refs.CheckNewName(ctx, n); err != nil {
				return refs.Move{}, err
			}
		case !create && errors.Is(err, refs.ErrNotFound):
			return refs.Move{}, &refs.NoSuchRequestError{Request: n, Where: r.where}
		case err != nil:
			return refs.Move{}, err
		case cur.ID == head:
			return refs.Move{}, nil
		}
		if target == "" {
			e, err := r.refs.RequestOpening(ctx, n)
			if err != nil {
				return refs.Move{}, err
			}
			target = e.Target
		}
		if err := r.checkRequestable(ctx, recs, n, target, head); err != nil {
			return refs.Move{}, err
		}
		mv := refs.Move{To: head, Action: refs.ActionCreate, Target: target, Why: title}
		if !create {
			mv.Action = refs.ActionPush
			if ok, err := refs.IsAncestor(ctx, recs, cur.ID, head); err != nil {
				return refs.Move{}, err
			} else if !ok {
				mv.Action = refs.ActionReplace
			}
		}
		return mv, nil
	}
	res, err := r.publish(ctx, n, head, pending, rule)
	if ce := (*refs.ConflictError)(nil); errors.As(err, &ce) {
		return res, fmt.Errorf("%s: another writer moved it to %s first; nothing moved: %w", n, ce.Now, refs.ErrRefused)
	}
	return res, err
}

// checkRequestable refuses a request for target at head that adds
// nothing, or whose approval would not be a fast-forward. (A version out
// of retention is refused by the upload, as for a push.)
func (r *Repo) checkRequestable(ctx context.Context, recs refs.RecordReader, n, target refs.Name, head version.ID) error {
	tref, err := r.refs.Read(ctx, target)
	if errors.Is(err, refs.ErrNotFound) {
		return &refs.MissingBranchError{Branch: target, Err: err, Request: n}
	}
	if err != nil {
		return err
	}
	d, err := refs.AheadBehind(ctx, recs, head, tref.ID)
	if err != nil {
		return err
	}
	switch {
	case d.Ahead == 0:
		return &NothingToRequestError{Request: n, Target: target, Head: tref.ID, ID: head}
	case d.Behind > 0:
		return &RequestRefusedError{Request: n, Target: target, Head: tref.ID, ID: head, Behind: d.Behind}
	}
	return nil
}

// Requests lists every request with its state against its target. Requests
// that cannot be read are returned in bad (each error names the ref).
func (r *Repo) Requests(ctx context.Context) ([]Request, []error, error) {
	good, bad, err := r.refs.List(ctx, refs.RequestsPrefix)
	if err != nil {
		return nil, nil, err
	}
	out := []Request{}
	for _, ref := range good {
		q, err := r.describeRequest(ctx, ref)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, q)
	}
	return out, bad, nil
}

// describeRequest reads what a request ref's log and its target say.
func (r *Repo) describeRequest(ctx context.Context, ref refs.Ref) (Request, error) {
	q := Request{Name: ref.Name.Short(), Ref: ref.Name, ID: ref.ID}
	rec, err := r.Record(ctx, ref.ID)
	if err != nil {
		return q, fmt.Errorf("%s points at %s: %w", ref.Name, ref.ID, err)
	}
	q.Seq = rec.Seq
	open, err := r.refs.RequestOpening(ctx, ref.Name)
	if err != nil {
		return q, err
	}
	q.IntoRef, q.Into, q.Author, q.Opened = open.Target, open.Target.Short(), open.Author, open.Time
	q.Title = version.FirstLine(open.Why)
	if q.Title == "" {
		q.Title = version.FirstLine(rec.Message)
	}
	tref, err := r.refs.Read(ctx, open.Target)
	if errors.Is(err, refs.ErrNotFound) {
		q.State = RequestNoTarget
		return q, nil
	}
	if err != nil {
		return q, err
	}
	q.TargetHead = tref.ID
	d, err := refs.AheadBehind(ctx, r, ref.ID, tref.ID)
	if err != nil {
		return q, err
	}
	q.Ahead, q.Behind = d.Ahead, d.Behind
	switch {
	case d.Ahead == 0:
		q.State = RequestMerged
	case d.Behind > 0:
		q.State = RequestStale
	default:
		q.State = RequestOpen
	}
	return q, nil
}

// readRequest reads request name: its ref name, the ref and its
// description. Errors: refs.Request's for a bad name,
// *refs.NoSuchRequestError, the store's.
func (r *Repo) readRequest(ctx context.Context, name string) (refs.Name, refs.Ref, Request, error) {
	n, err := refs.Request(name)
	if err != nil {
		return "", refs.Ref{}, Request{}, err
	}
	ref, err := r.refs.Read(ctx, n)
	if errors.Is(err, refs.ErrNotFound) {
		return "", refs.Ref{}, Request{}, &refs.NoSuchRequestError{Request: n, Where: r.where}
	}
	if err != nil {
		return "", refs.Ref{}, Request{}, err
	}
	q, err := r.describeRequest(ctx, ref)
	if err != nil {
		return "", refs.Ref{}, Request{}, err
	}
	return n, ref, q, nil
}

// ShowRequest returns request name with the versions it would add to its
// target (newest first) and its ref log. Errors: *refs.NoSuchRequestError,
// the store's.
func (r *Repo) ShowRequest(ctx context.Context, name string) (*RequestView, error) {
	n, ref, q, err := r.readRequest(ctx, name)
	if err != nil {
		return nil, err
	}
	v := &RequestView{Request: q, Versions: []LogEntry{}}
	show := q.Ahead // the versions approving it adds; only its own when none
	if show == 0 || q.State == RequestNoTarget {
		show = 1
	}
	recs, err := r.Log(ctx, ref.ID, show)
	if err != nil {
		return nil, err
	}
	if v.Abbrev, err = r.Abbrev(ctx); err != nil {
		return nil, err
	}
	for _, rec := range recs {
		v.Versions = append(v.Versions, LogEntry{Record: rec, Short: v.Abbrev.Short(rec.ID)})
	}
	entries, bad, err := r.refs.Log(ctx, n)
	if err != nil {
		return nil, err
	}
	v.Log, v.Warnings = entries, bad
	return v, nil
}

// DiffRequest returns what approving request name would change on its
// target branch: the request's version against the last version it shares
// with the target's head (Diff with MergeBase, as 'git diff
// target...request'), so a target that moved on since does not show its
// own changes as undone. Errors: *refs.NoSuchRequestError,
// *NoSuchTargetError (the target branch is gone), Diff's.
func (r *Repo) DiffRequest(ctx context.Context, name string) (*DiffResult, error) {
	n, ref, q, err := r.readRequest(ctx, name)
	if err != nil {
		return nil, err
	}
	if q.TargetHead == "" {
		return nil, &NoSuchTargetError{Request: n, Target: q.IntoRef}
	}
	return r.Diff(ctx, DiffOptions{From: string(q.TargetHead), To: string(ref.ID), MergeBase: true})
}

// NoSuchTargetError: a request's target branch does not exist (deleted
// since the request was made), so there is nothing to compare it with or
// approve it onto. It wraps refs.ErrNotFound.
type NoSuchTargetError struct {
	Request refs.Name
	Target  refs.Name
}

func (e *NoSuchTargetError) Error() string {
	return fmt.Sprintf("request %s is for branch %s, which does not exist: %v", e.Request.Short(), e.Target.Short(), refs.ErrNotFound)
}

func (e *NoSuchTargetError) Unwrap() error { return refs.ErrNotFound }

// ApproveRequest moves the request's target branch forward to its version
// (refs.Manager.Approve: a fast-forward, refused as any push is when it is
// not one — refs.ErrRefused — or when another writer moved the target
// first) and removes the request. A version out of retention is refused,
// and, as for a push, a version with a newer DuckLake format or storage
// version than the target's head unless o.AllowFormatChange
// (*FormatChangeError).
func (r *Repo) ApproveRequest(ctx context.Context, name string, o PushOptions) (*ApproveResult, error) {
	n, err := refs.Request(name)
	if err != nil {
		return nil, err
	}
	open, err := r.refs.RequestOpening(ctx, n)
	if err != nil {
		if _, rerr := r.refs.Read(ctx, n); errors.Is(rerr, refs.ErrNotFound) {
			return nil, &refs.NoSuchRequestError{Request: n, Where: r.where}
		}
		return nil, err
	}
	why := "approve request " + n.Short()
	if t := version.FirstLine(open.Why); t != "" {
		why += ": " + t
	}
	out := &ApproveResult{}
	check := func(ctx context.Context, from, to version.ID) error {
		rec, err := r.Record(ctx, to)
		if err != nil {
			return err
		}
		if err := r.RefuseRetired(ctx, rec); err != nil {
			return err
		}
		var pr PushResult
		err = r.checkFormatChange(ctx, withLocal{r: r, h: r.hist}, open.Target, from, to, o, &pr)
		if fe := (*FormatChangeError)(nil); errors.As(err, &fe) {
			fe.Request = n
		}
		out.FormatChange = pr.FormatChange
		return err
	}
	res, err := r.refs.Approve(ctx, n, open.Target, why, check)
	out.ApproveResult = res
	if err != nil {
		return out, err
	}
	out.Abbrev, _ = r.Abbrev(ctx)
	return out, nil
}

// ApproveResult is what ApproveRequest did.
type ApproveResult struct {
	refs.ApproveResult
	// FormatUpgrade is set when the approval moved the branch to a newer
	// DuckLake format or storage version (PushOptions.AllowFormatChange).
	FormatChange *FormatChange `json:"format_change,omitempty"`
	Abbrev       refs.Abbrev   `json:"-"`
}

// DroppedRequest is a request just dropped. Its JSON is 'fdl request drop
// --json'.
type DroppedRequest struct {
	Request    string     `json:"request"`     // short name
	RequestRef refs.Name  `json:"request_ref"` // full name
	ID         version.ID `json:"id"`
	// Unprotected, if not nil, are its versions that may leave retention
	// at the next gc.
	Unprotected *Unprotected `json:"-"`
}

// DropRequest deletes request name (logged; its versions stay, reached by
// the ref log, in retention while the policy keeps them). Errors:
// *refs.NoSuchRequestError, the store's.
func (r *Repo) DropRequest(ctx context.Context, name string) (*DroppedRequest, error) {
	n, err := refs.Request(name)
	if err != nil {
		return nil, err
	}
	ref, err := r.refs.DropRequest(ctx, n, "dropped")
	if err != nil {
		return nil, err
	}
	out := &DroppedRequest{Request: n.Short(), RequestRef: n, ID: ref.ID}
	if ids, err := r.OnlyReachedFrom(ctx, ref.ID); err == nil {
		out.Unprotected = r.unprotected(ctx, ids)
	}
	return out, nil
}

// NothingToRequestError: the offered version adds nothing to the target
// (the target holds it already). It wraps ErrNothingToPush.
type NothingToRequestError struct {
	Request, Target refs.Name
	Head, ID        version.ID
	// ByRev: the version was named by a revision (--from REV), not a
	// working directory's: committing there is no remedy. Update: the
	// request existed (fdl request update).
	ByRev, Update bool
}

func (e *NothingToRequestError) Error() string {
	return fmt.Sprintf("request %s: %s already holds version %s (it is at %s), so there is nothing to review", e.Request.Short(), e.Target.Short(), e.ID, e.Head)
}

func (e *NothingToRequestError) Unwrap() error { return ErrNothingToPush }

// RequestRefusedError: approving the request would not be a fast-forward
// of its target (the target has versions the offered one lacks). It wraps
// refs.ErrRefused.
type RequestRefusedError struct {
	Request, Target refs.Name
	Head, ID        version.ID
	Behind          int
}

func (e *RequestRefusedError) Error() string {
	return fmt.Sprintf("request %s refused: %s is not a fast-forward of %s, which holds %s and %d version(s) %s lacks; nothing was published",
		e.Request.Short(), e.ID, e.Target.Short(), e.Head, e.Behind, e.ID)
}

func (e *RequestRefusedError) Unwrap() error { return refs.ErrRefused }
