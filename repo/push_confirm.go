package repo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// confirmPush is a push's last check, made after its ref log entry (the
// announcement gc reads) and before its compare-and-swap (docs/spec.md §9
// and §16.1): the branch moves only if, at this point,
//
//  1. no deletion intent of a running gc lists an object the versions need
//     (their version folders' files, the data and delete files they read at
//     their snapshots): a gc that wrote its intent before this read may
//     not have seen the entry, and may be deleting them; one that writes it
//     after sees the entry and keeps them;
//  2. every data file they add is in the store (checkNewData: a gc that
//     finished before may have deleted one) and none is read by a local
//     path a reader of the store cannot reach;
//  3. each version's folder holds its three files at their recorded sizes
//     and nothing else (CheckVersionFolder).
//
// entry is the key of the move's ref log entry: its modification time is
// the store's clock, which decides whether an intent's lease ran out.
// Errors: *GCDeletingError, *DataMissingError, *LocalDataError,
// *ChecksumError, *ExtraFilesError, the store's.
func (r *Repo) confirmPush(ctx context.Context, head version.ID, pending []Pending, entry string) error {
	r.step("push:confirm")
	if err := r.checkIntents(ctx, head, pending, entry); err != nil {
		return err
	}
	if err := r.checkNewData(ctx, pending); err != nil {
		return err
	}
	recs := make([]*version.Record, 0, len(pending)+1)
	for _, p := range pending {
		recs = append(recs, p.Record)
	}
	if len(pending) == 0 {
		rec, err := r.Record(ctx, head)
		if err != nil {
			return fmt.Errorf("push: %w", err)
		}
		recs = append(recs, rec)
	}
	for _, rec := range recs {
		if err := r.CheckVersionFolder(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}

// checkIntents is part 1 of confirmPush: it lists the deletion intents
// (usually none: one listing) and, when some hold, compares what they list
// with the keys the versions need (neededKeys).
func (r *Repo) checkIntents(ctx context.Context, head version.ID, pending []Pending, entry string) error {
	intents, err := r.Intents(ctx)
	if err != nil || len(intents) == 0 {
		return err
	}
	oi, err := r.st.Stat(ctx, entry)
	if err != nil {
		return fmt.Errorf("push: its ref log entry %s: %w", entry, err)
	}
	needed, err := r.neededKeys(ctx, head, pending)
	if err != nil {
		return err
	}
	for _, in := range intents {
		if in.Expired(oi.ModTime) {
			continue
		}
		var hits []string
		for _, k := range needed {
			if in.Holds(k) {
				hits = append(hits, k)
			}
		}
		if len(hits) > 0 {
			return &GCDeletingError{Intent: in.Key, StartedAt: in.StartedAt, By: in.By, Keys: hits[:min(len(hits), 5)], Count: len(hits)}
		}
	}
	return nil
}

// neededKeys returns the store keys the versions of a push need: the
// files of each pending version's folder (or of head's, when nothing is
// pending) and every data and delete file in the repository's data/ that
// a pending version reads at its snapshot (read from head's local
// catalog, which holds all of them), sorted.
func (r *Repo) neededKeys(ctx context.Context, head version.ID, pending []Pending) ([]string, error) {
	var keys []string
	folder := func(id version.ID) {
		for _, f := range []string{version.CatalogFile, version.DatasetFile, version.RecordFile} {
			keys = append(keys, VersionKey(id, f))
		}
	}
	if len(pending) == 0 {
		folder(head)
		return keys, nil
	}
	for _, p := range pending {
		folder(p.Record.ID)
	}
	last := pending[len(pending)-1]
	c, err := ducklake.Open(ctx, filepath.Join(last.Dir, version.CatalogFile))
	if err != nil {
		return nil, fmt.Errorf("local version %s: %w", last.Record.ID, err)
	}
	files, err := c.DataFiles(ctx)
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("local version %s: %w", last.Record.ID, err)
	}
	norm, err := r.Normaliser()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		read := slices.ContainsFunc(pending, func(p Pending) bool {
			s := p.Record.DuckLake.Snapshot
			return f.BeginSnapshot <= s && (f.EndSnapshot == nil || s < *f.EndSnapshot)
		})
		if !read {
			continue
		}
		if pl, err := norm.Place(f.ResolvedPath); err == nil && pl.Key != "" {
			keys = append(keys, pl.Key)
			keys = append(keys, pl.Aliases...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// removeUploads deletes what a push refused after its uploads had put in
// the store: each pending version's folder, version.json first (so no
// reader ever sees a complete version that lacks a part), the catalog
// last. No ref reaches them (the move did not happen and its entry is
// gone). Best effort: what is left is an incomplete or unreached folder,
// which gc deletes once older than the grace period. It returns how many
// deletions failed and the first failure (a job whose credentials may
// write but not delete, S3's AccessDenied: the push still ends as it
// would, and says what is left).
func (r *Repo) removeUploads(ctx context.Context, pending []Pending) (int, error) {
	ctx = context.WithoutCancel(ctx)
	failed := 0
	var first error
	del := func(key string) {
		if err := r.st.Delete(ctx, key); err != nil && !errors.Is(err, store.ErrNotExist) {
			if failed++; first == nil {
				first = err
			}
		}
	}
	for _, p := range pending {
		// The history pack first: a pack never outlives its version's
		// record.
		del(history.PackKey(p.Record.ID))
		for _, f := range []string{version.SignatureFile, version.RecordFile, version.DatasetFile, version.CatalogFile} {
			del(VersionKey(p.Record.ID, f))
		}
		r.mu.Lock()
		delete(r.record, p.Record.ID)
		r.mu.Unlock()
	}
	r.forgetIDs()
	return failed, first
}

// LeftoverError is a refused publish (Err: what refused it) whose cleanup
// could not delete all it had uploaded (Failed objects; First: the first
// failure, often a credential that may write but not delete). Nothing
// reaches the leftovers; gc deletes them once older than the grace period.
// It wraps Err, so the refusal keeps its kind and exit code.
type LeftoverError struct {
	Err    error
	Failed int
	First  error
}

func (e *LeftoverError) Error() string {
	return fmt.Sprintf("%v; %d uploaded object(s) could not be removed (%v): no ref reaches them, and gc deletes them once they are older than the grace period", e.Err, e.Failed, e.First)
}

func (e *LeftoverError) Unwrap() error { return e.Err }
