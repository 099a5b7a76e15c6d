package repo

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// LogEntry is one version of a history, as 'fdl log --json' prints it.
type LogEntry struct {
	*version.Record
	Short string `json:"short_id"`
	// Local is true for a version committed in the working directory the
	// repository was opened from and not pushed yet.
	Local bool `json:"local,omitempty"`
	// Retired is true for a version out of retention: its record stays,
	// its catalog is deleted (gc).
	Retired bool `json:"retired"`
	// Refs are the full names of the refs that point at it (branches,
	// then tags, then requests, each sorted), [] for none.
	Refs []refs.Name `json:"refs"`
	// Signature says who signed the record (SignedHistory only).
	Signature *SignatureCheck `json:"signature,omitempty"`
}

// History is a first-parent history, newest first.
type History struct {
	Entries []LogEntry
	// Warnings are problems that did not stop the history: a retention
	// floor that does not parse (markers still say which catalogs are
	// gone).
	Warnings []error
}

// History returns the first-parent history of rev (default: defaultRev),
// newest first, at most max versions when max > 0. Opened from a working
// directory and without rev, it starts with the versions committed there
// and not pushed. Short ids are unique among the store's versions and the
// local ones; versions out of retention are marked.
//
// It reads what it shows: the versions walked through history packs (a
// full history of n versions is about n/1024 + 10 reads, the newest 20 at
// most 6), then the store's versions made near the shown ones (short ids
// and retirement markers: at most 16 listings, all at once; see
// refs.Manager.Abbrev), and the floor. A damaged history pack is not used
// (its records are read instead) and comes back as a warning. Errors: the
// Resolve errors (an unknown default revision is no error while there are
// local versions), the store's.
func (r *Repo) History(ctx context.Context, l *Local, rev string, max int) (*History, error) {
	local := l.newestFirst(rev)
	byDefault, named := rev == "", rev
	if byDefault || len(local) > 0 {
		// Versions committed here come first, then the stored history.
		rev = l.DefaultRev()
	}
	if max > 0 && len(local) > max {
		local = local[:max]
	}
	recs, err := r.storedAfter(ctx, local, rev, max)
	if err != nil {
		if byDefault {
			err = l.noVersionYet(err)
		} else {
			err = l.unknownHere(named, err)
		}
		return nil, err
	}
	shown := ids(recs)
	abbrev, retired, aerr, err := r.shortAndRetired(ctx, shown)
	if aerr != nil {
		return nil, aerr
	}
	h := &History{Entries: make([]LogEntry, len(recs)), Warnings: r.PackProblems()}
	if errors.Is(err, retention.ErrInvalid) {
		// A damaged floor must not hide the history: markers still say
		// which catalogs are gone.
		h.Warnings = append(h.Warnings, err)
		retired, err = r.markedAmong(ctx, shown)
	}
	if err != nil {
		return nil, err
	}
	isLocal := map[version.ID]bool{}
	for _, rec := range local {
		isLocal[rec.ID] = true
	}
	pointing, bad, err := r.refs.List(ctx, "refs/")
	if err != nil {
		return nil, err
	}
	h.Warnings = append(h.Warnings, bad...)
	at := map[version.ID][]refs.Name{}
	for _, ref := range pointing { // sorted by name: heads, requests, tags
		at[ref.ID] = append(at[ref.ID], ref.Name)
	}
	for i, rec := range recs {
		h.Entries[i] = LogEntry{Record: rec, Short: abbrev.Short(rec.ID), Local: isLocal[rec.ID], Retired: retired[rec.ID], Refs: decorationOrder(at[rec.ID])}
	}
	return h, nil
}

// storedAfter returns local (the working directory's versions to show,
// newest first) followed by the stored history of rev, up to max versions
// in all (0: no limit). The store is not read when local already fills max
// or ends at a version with no parent. An unknown rev is no error while
// there are local versions; a ref whose version cannot be read is
// refs.DanglingRead.
func (r *Repo) storedAfter(ctx context.Context, local []*version.Record, rev string, max int) ([]*version.Record, error) {
	recs := local
	if (max > 0 && len(recs) >= max) || (len(local) > 0 && local[len(local)-1].Parent() == "") {
		return recs, nil
	}
	res, err := r.Resolve(ctx, rev)
	if err != nil {
		if len(local) > 0 && errors.Is(err, refs.ErrUnknownRev) {
			return recs, nil
		}
		return nil, err
	}
	left := 0
	if max > 0 {
		left = max - len(local)
	}
	stored, err := r.Log(ctx, res.ID, left)
	if err != nil {
		if res.Ref != "" {
			if _, rerr := r.Record(ctx, res.ID); rerr != nil {
				return nil, refs.DanglingRead(res.Ref, res.ID, rerr)
			}
		}
		return nil, err
	}
	return append(recs, stored...), nil
}

// shortAndRetired returns the short ids of shown and which of them are
// retired, with the error of each reading (abbreviating, markers) apart:
// on a folder both run at once (markers are looked at one by one); on an
// object store the short ids' listings come first and tell which have a
// marker.
func (r *Repo) shortAndRetired(ctx context.Context, shown []version.ID) (abbrev refs.Abbrev, retired map[version.ID]bool, aerr, err error) {
	if _, local := r.Folder(); local {
		done := make(chan struct{})
		go func() {
			defer close(done)
			retired, err = r.retiredAmong(ctx, shown)
		}()
		abbrev, aerr = r.Abbrev(ctx, shown...)
		<-done
		return abbrev, retired, aerr, err
	}
	if abbrev, aerr = r.Abbrev(ctx, shown...); aerr == nil {
		retired, err = r.retiredAmong(ctx, shown)
	}
	return abbrev, retired, aerr, err
}

// decorationOrder sorts ref names as log shows them: branches, tags, then
// requests ([] for none).
func decorationOrder(names []refs.Name) []refs.Name {
	out := make([]refs.Name, 0, len(names))
	for _, k := range []refs.Kind{refs.KindBranch, refs.KindTag, refs.KindRequest, refs.KindOther} {
		for _, n := range names {
			if n.Kind() == k {
				out = append(out, n)
			}
		}
	}
	return out
}

func ids(recs []*version.Record) []version.ID {
	out := make([]version.ID, len(recs))
	for i, rec := range recs {
		out[i] = rec.ID
	}
	return out
}

// SignedHistory is History with each version's signature checked
// (VersionSignature; by the allowed signers file signers, or only to
// verify when it is ""), at most 8 read at once: two reads per signed
// version, one per unsigned one. Errors: History's, LoadSigners', the
// store's.
func (r *Repo) SignedHistory(ctx context.Context, l *Local, rev string, max int, signers string) (*History, error) {
	allowed, err := LoadSigners(signers)
	if err != nil {
		return nil, err
	}
	h, err := r.History(ctx, l, rev, max)
	if err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range h.Entries {
		e := &h.Entries[i]
		g.Go(func() error {
			c, err := r.VersionSignature(gctx, l, e.ID, allowed)
			e.Signature = &c
			return err
		})
	}
	return h, g.Wait()
}
