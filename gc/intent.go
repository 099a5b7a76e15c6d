package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// gc and push exclude each other for the objects at stake (docs/spec.md
// §16.1). Before deleting anything, gc writes a deletion
// intent listing every key it may delete (create-only), then reads what
// pushes announce: the ref logs (a push writes its move's entry before its
// compare-and-swap) and the version folders. A push writes its entry, then
// reads the intents. Each writes, then reads what the other writes: on a
// store whose reads see every write that finished before them, at least
// one of the two sees the other. gc calls off the deletions a push it sees
// needs; a push that sees an intent listing what it needs does not move
// its branch. The intent's format is retention's (retention.Intent) and
// reading the intents is repo's (Repo.Intents), since a push reads them
// too; writing, renewing and dropping gc's own is this file's.

// intent is the deletion intent of the gc this process runs: what it
// wrote, when it began writing it (on this machine's monotonic clock), and
// how many deletions went since it last looked at it.
type intent struct {
	in    *retention.Intent
	key   string
	began time.Time
	since int
}

// plannedKeys returns every key a plan may delete: the catalogs and
// dataset.json of versions leaving retention, the data files, the objects
// of abandoned version folders and their history packs, and the packs of
// versions that are gone.
func plannedKeys(p *Plan) []string {
	var keys []string
	for _, rt := range p.Retire {
		keys = append(keys, rt.Keys...)
	}
	for _, f := range p.DataFiles {
		keys = append(keys, f.Key)
	}
	for _, a := range p.Abandoned {
		keys = append(keys, a.Keys...)
		keys = append(keys, history.PackKey(a.ID))
	}
	for _, o := range p.PackOrphans {
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// checkOtherIntents stops gc (StopAnotherGC) while another gc's intent
// holds, and removes the intents whose lease ran out (the records of gcs
// that stopped: a gc whose lease ran out deletes nothing more). now is the
// store's time.
func checkOtherIntents(ctx context.Context, r *repo.Repo, own string, now time.Time) error {
	all, err := r.Intents(ctx)
	if err != nil {
		return err
	}
	for _, i := range all {
		switch {
		case i.Key == own:
		case i.Expired(now):
			if err := r.Store().Delete(ctx, i.Key); err != nil {
				return fmt.Errorf("remove the expired intent %s: %w", i.Key, err)
			}
		default:
			return &StopError{Why: StopAnotherGC, Key: i.Key, Err: repo.ErrRetentionConflict}
		}
	}
	return nil
}

// clearDeadIntents removes the intents written on this host by processes
// that are gone (a gc killed here).
func clearDeadIntents(ctx context.Context, r *repo.Repo) error {
	all, err := r.Intents(ctx)
	if err != nil {
		return err
	}
	for _, i := range all {
		if i.Expired(i.ModTime) { // by its process only: its lease is not asked
			if err := r.Store().Delete(ctx, i.Key); err != nil {
				return fmt.Errorf("remove the intent %s of a stopped gc: %w", i.Key, err)
			}
		}
	}
	return nil
}

// writeIntent writes this gc's deletion intent for plan p under floor
// generation gen (create-only), then checks that no other gc's intent
// holds (checkOtherIntents, by the store's time of this one). It returns
// nil when the plan deletes nothing.
func writeIntent(ctx context.Context, r *repo.Repo, p *Plan, gen int64) (*intent, error) {
	keys := plannedKeys(p)
	if len(keys) == 0 {
		// Nothing to guard; still clear what gcs killed on this host left.
		return nil, clearDeadIntents(ctx, r)
	}
	g, err := newIntent(ctx, r, keys, gen)
	if err != nil {
		return nil, err
	}
	oi, err := r.Store().Stat(ctx, g.key)
	if err != nil {
		dropIntent(ctx, r, g)
		return nil, fmt.Errorf("gc: %s: %w", g.key, err)
	}
	if err := checkOtherIntents(ctx, r, g.key, oi.ModTime); err != nil {
		dropIntent(ctx, r, g)
		return nil, err
	}
	return g, nil
}

// newIntent writes an intent listing keys, create-only.
func newIntent(ctx context.Context, r *repo.Repo, keys []string, gen int64) (*intent, error) {
	id, err := version.NewID()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	in := &retention.Intent{Format: retention.Format, ID: id, StartedAt: began.UTC().Truncate(time.Millisecond), By: r.Actor(),
		Host: repo.HostName(), PID: os.Getpid(), Floor: gen, Keys: keys}
	b, err := in.Marshal()
	if err != nil {
		return nil, err
	}
	key := retention.IntentKey(id)
	step(r, "gc:intent")
	if err := r.Store().Create(ctx, key, strings.NewReader(string(b))); err != nil {
		return nil, fmt.Errorf("gc: write its deletion intent %s: %w", key, err)
	}
	return &intent{in: in, key: key, began: began}, nil
}

// dropIntent removes g's intent: gc is done, or stopped before deleting.
func dropIntent(ctx context.Context, r *repo.Repo, g *intent) {
	if g != nil {
		_ = r.Store().Delete(context.WithoutCancel(ctx), g.key) // best effort: it expires anyway
	}
}

// before is called before each deletion gc makes: key must be one its
// intent lists (gc never deletes anything else); every 64 deletions, and
// once retention.IntentRenew has passed since the intent was begun, it
// makes sure the intent still holds. A renewed intent is written before
// the old one is removed, so one always holds. Errors: a key not listed
// (a bug: nothing is deleted), *StopError StopIntentLost.
func (g *intent) before(ctx context.Context, r *repo.Repo, key string) error {
	if g == nil {
		return fmt.Errorf("gc: refusing to delete %s: no deletion intent was written for it", key)
	}
	if !g.in.Has(key) {
		return fmt.Errorf("gc: refusing to delete %s: its deletion intent %s does not list it", key, g.key)
	}
	if time.Since(g.began) > retention.IntentRenew {
		return g.renew(ctx, r)
	}
	if g.since++; g.since < 64 {
		return nil
	}
	g.since = 0
	if _, err := r.Store().Stat(ctx, g.key); err != nil {
		if errors.Is(err, store.ErrNotExist) {
			return &StopError{Why: StopIntentLost, Key: g.key, Err: repo.ErrRetentionConflict}
		}
		return err
	}
	return nil
}

// renew replaces g's intent by a new one with the same keys (written
// before the old one is removed), unless the old one is gone (another gc
// took it for a stopped one's) or its lease ran out.
func (g *intent) renew(ctx context.Context, r *repo.Repo) error {
	if time.Since(g.began) > retention.IntentLease/2 {
		return &StopError{Why: StopIntentLost, Key: g.key, Err: repo.ErrRetentionConflict}
	}
	if _, err := r.Store().Stat(ctx, g.key); err != nil {
		if errors.Is(err, store.ErrNotExist) {
			return &StopError{Why: StopIntentLost, Key: g.key, Err: repo.ErrRetentionConflict}
		}
		return err
	}
	next, err := newIntent(ctx, r, g.in.Keys, g.in.Floor)
	if err != nil {
		return err
	}
	dropIntent(ctx, r, g)
	*g = *next
	return nil
}
