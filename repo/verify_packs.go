package repo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// verifyPacks checks the history packs (docs/spec.md §18) against the
// records, which Verify has read already: every object under index/packs/
// must be the pack of a version that has a record (else a note), parse,
// hold the first-parent run its name promises and, entry by entry, the
// bytes of each version's version.json (else a problem). Each version a
// walk from a ref jumps to without a pack is noted (gc writes it).
func (r *Repo) verifyPacks(ctx context.Context, rep *VerifyReport, heads []refs.Ref, add func(code Code, obj, format string, a ...any)) error {
	note := func(code Code, obj, format string, a ...any) {
		rep.Notes = append(rep.Notes, problem(code, obj, format, a...))
	}
	var keys []string
	// have: the versions with a pack, good or reported above (an invalid
	// pack is not also "missing").
	have := map[version.ID]bool{}
	err := r.st.List(ctx, history.PacksPrefix, func(o store.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list history packs: %w", err)
	}
	var mu sync.Mutex
	err = parallel(ctx, len(keys), readWorkers, func(i int) error {
		code, obj, msg, ok, err := r.checkPack(ctx, keys[i])
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			return err
		case ok:
			rep.Packs++
			id, _ := history.IDFromKey(keys[i])
			have[id] = true
		case code == "":
		case code == CodePackOrphan:
			note(code, obj, "%s", msg)
		default:
			add(code, obj, "%s", msg)
			if id, named := history.IDFromKey(keys[i]); named {
				have[id] = true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	seen := map[version.ID]bool{}
	for _, ref := range heads {
		for _, id := range r.Jumps(ctx, ref.ID) {
			if have[id] || seen[id] {
				continue
			}
			seen[id] = true
			rec, _ := r.Record(ctx, id)
			note(CodePackMissing, string(id), "version %s (seq %d), on the history of %s, has no history pack (%s): readers read its records instead; fdl gc --yes writes it",
				id, rec.Seq, ref.Name, history.PackKey(id))
		}
	}
	return nil
}

// checkPack checks one object under index/packs/: ok, or the code, object
// and message of what is wrong. Errors: the store's.
func (r *Repo) checkPack(ctx context.Context, key string) (code Code, obj, msg string, ok bool, err error) {
	id, named := history.IDFromKey(key)
	if !named {
		return CodePackInvalid, key, fmt.Sprintf("%s is not named index/packs/<version id>.json: it is no history pack (delete it)", key), false, nil
	}
	if _, rerr := r.Entry(ctx, id); rerr != nil {
		if errors.Is(rerr, version.ErrBadRecord) {
			// The record is what is damaged (record-invalid, with its
			// own advice); the pack, which holds a copy of it, is
			// checked once the record is whole again.
			return "", "", "", true, nil
		}
		return CodePackOrphan, string(id), fmt.Sprintf("%s is the history pack of version %s, which has no version.json (%v): gc deletes it", key, id, rerr), false, nil
	}
	b, _, err := store.ReadAll(ctx, r.st, key)
	if errors.Is(err, store.ErrNotExist) {
		return "", "", "", false, nil // deleted meanwhile
	}
	if err != nil {
		return "", "", "", false, fmt.Errorf("read %s: %w", key, err)
	}
	p, perr := history.ParsePack(b, id)
	if errors.Is(perr, history.ErrNewerPack) {
		return "", "", "", false, nil // a newer fdl's: not this one's to judge
	}
	if perr == nil {
		perr = history.Compare(p, func(id version.ID) (history.Entry, bool) {
			e, err := r.Entry(ctx, id)
			return e, err == nil
		})
	}
	var differs *history.DiffersError
	switch {
	case errors.As(perr, &differs):
		// A record edited after its push also differs from its pack:
		// the pack may be the good copy, so it is not to be deleted
		// blindly (gc would write it again from the edited record).
		rec := r.st.Location(VersionKey(differs.Version, version.RecordFile))
		return CodePackInvalid, string(id), fmt.Sprintf("%v: readers do not use the pack; one of the two changed after it was written. Compare %s with the pack's entry %d (%s, in \"records\"): if the record is the changed one, write the pack's copy back over it; if the pack is, delete it and run fdl gc --yes to write it again", perr, rec, differs.Entry, r.st.Location(key)), false, nil
	case perr != nil:
		return CodePackInvalid, string(id), fmt.Sprintf("%v: readers do not use it; delete %s and run fdl gc --yes to write it again", perr, r.st.Location(key)), false, nil
	}
	return "", "", "", true, nil
}

// Jumps returns the versions a walk from id reads history packs of
// (docs/spec.md §18): id, then the version history.Span(seq) first parents
// below, and so on, newest first, read from the records. It stops at the
// first record it cannot read (returning what it has): verify notes the
// missing packs among them, gc writes them.
func (r *Repo) Jumps(ctx context.Context, id version.ID) []version.ID {
	var out []version.ID
	for id != "" {
		rec, err := r.Record(ctx, id)
		if err != nil {
			return out
		}
		out = append(out, id)
		for n := history.Span(rec.Seq); n > 0 && id != ""; n-- {
			if rec, err = r.Record(ctx, id); err != nil {
				return out
			}
			id = rec.Parent()
		}
	}
	return out
}
