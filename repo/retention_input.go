package repo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// RetentionInput reads what gc decides from (retention.Decide), the
// consistent reading of the repository gc's plan starts with (docs/spec.md
// §16): the policy (§13), the floor (§14), HEAD and every ref, every ref
// log entry (§17), and every version folder — its objects, its record
// (version.json) and its marker (§15). now is the time the policy and the
// grace period are measured from. It also returns the tokens of the floor
// and the policy as read: gc's compare-and-swap of the floor, and its
// recheck of the policy, go from them. The listings of versions/ the Repo
// kept are dropped (IDs, MarkedIDs and the short ids list again).
//
// It refuses, with the thing named, what gc must not run over. Errors:
// HEAD that cannot be read; a ref that cannot be read (refs.List's bad
// refs, joined); a ref log entry that does not parse; a policy or floor
// that does not parse (*DamagedError wrapping retention.ErrInvalid); a
// record that does not parse (version.ErrBadRecord) or a marker that does
// not (*DamagedError); the store's.
func (r *Repo) RetentionInput(ctx context.Context, now time.Time) (in *retention.Input, floorTok, policyTok store.Token, err error) {
	in = &retention.Input{Now: now, Versions: map[version.ID]*retention.VersionState{}}
	if in.Policy, policyTok, err = r.Policy(ctx); err != nil {
		return nil, "", "", err
	}
	if in.Floor, floorTok, err = r.Floor(ctx); err != nil {
		return nil, "", "", err
	}
	if err := r.refsInput(ctx, in); err != nil {
		return nil, "", "", err
	}
	if err := r.versionFolders(ctx, in); err != nil {
		return nil, "", "", err
	}
	if err := r.versionStates(ctx, in); err != nil {
		return nil, "", "", err
	}
	return in, floorTok, policyTok, nil
}

// refsInput reads HEAD (which must read), every ref (none may be
// unreadable: it may protect versions) and every ref log entry (none may
// fail to parse) into in: in.Refs, in.LogEntries, and in.Logged, every
// version an entry names.
func (r *Repo) refsInput(ctx context.Context, in *retention.Input) error {
	if _, err := r.refs.Head(ctx); err != nil {
		return err
	}
	good, bad, err := r.refs.List(ctx, "refs/")
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("gc refuses to run while a ref cannot be read, since it may protect versions: %w", errors.Join(bad...))
	}
	for _, ref := range good {
		in.Refs = append(in.Refs, retention.Ref{Name: ref.Name, ID: ref.ID})
	}
	entries, badLogs, err := r.refs.Log(ctx, "")
	if err == nil && len(badLogs) > 0 {
		err = fmt.Errorf("%w; gc refuses to run without knowing every version the ref logs reach: restore the entry or remove it", badLogs[0])
	}
	if err != nil {
		return err
	}
	in.LogEntries = entries
	for _, e := range entries {
		for _, id := range []version.ID{e.Old, e.New} {
			if id != "" {
				in.Logged = append(in.Logged, id)
			}
		}
	}
	return nil
}

// versionFolders lists versions/ once into in.Versions: each version
// folder with its objects (a key whose folder name is not a version id is
// not gc's, and left out). The Repo's listings are dropped, as older than
// this one.
func (r *Repo) versionFolders(ctx context.Context, in *retention.Input) error {
	err := r.st.List(ctx, VersionsPrefix, func(o store.ObjectInfo) error {
		rest := strings.TrimPrefix(o.Key, VersionsPrefix)
		i := strings.IndexByte(rest, '/')
		if i <= 0 {
			return nil
		}
		id, err := version.ParseID(rest[:i])
		if err != nil {
			return nil // not a version folder: gc leaves it alone
		}
		v := in.Versions[id]
		if v == nil {
			v = &retention.VersionState{ID: id}
			in.Versions[id] = v
		}
		v.Objects = append(v.Objects, o)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list versions: %w", err)
	}
	r.forgetIDs()
	return nil
}

// versionStates reads the record of every folder of in.Versions that has
// one (readWorkers at a time), and the marker of every folder that has
// one.
func (r *Repo) versionStates(ctx context.Context, in *retention.Input) error {
	var complete []version.ID
	for id, v := range in.Versions {
		if v.Has(version.RecordFile) {
			complete = append(complete, id)
		}
	}
	r.prefetch(ctx, complete)
	var err error
	for id, v := range in.Versions {
		if v.Has(version.RecordFile) {
			if v.Record, err = r.Record(ctx, id); err != nil {
				if errors.Is(err, version.ErrBadRecord) {
					err = fmt.Errorf("%w; gc will not guess what a version folder it cannot read protects: repair the record, or, if %s is not a version fdl wrote (a copy, a hand edit) and no ref reaches it, move it out of versions/", err, r.st.Location(VersionKey(id, "")))
				}
				return err
			}
		}
		if v.Has(retention.MarkerFile) {
			if v.Marker, err = r.Marker(ctx, id); err != nil {
				return err
			}
		}
	}
	return nil
}
