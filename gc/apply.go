package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// gc's apply: the plan carried out in five resumable steps — the floor
// moves, retiring versions lose their catalogs, data files go, abandoned
// uploads and temporary files go, history packs are written and deleted
// (packs.go) — after the checks that stop it when the repository changed
// while it planned (recheck.go).

// Result says what Apply did.
type Result struct {
	FloorMoved bool  `json:"floor_moved"`
	Floor      int64 `json:"floor_generation"`
	Marked     int   `json:"markers_written"`
	Excised    int   `json:"excised"` // catalogs and dataset.json files deleted
	DataFiles  int   `json:"data_files_deleted"`
	Abandoned  int   `json:"abandoned_deleted"` // version folders deleted whole
	Temps      int   `json:"temps_deleted"`     // temporary files of interrupted writes deleted
	// PacksWritten counts the history packs written, PacksDeleted those
	// deleted (of versions gone).
	PacksWritten int `json:"packs_written"`
	PacksDeleted int `json:"packs_deleted"`
	// Protected counts planned data deletions called off because a version
	// that appeared while gc ran (a push) lists the file.
	Protected int   `json:"protected"`
	Bytes     int64 `json:"bytes"`
	// Skipped are data files kept because a version listing them was not
	// marked (never expected; reported for audits).
	Skipped int `json:"skipped"`
}

// Apply carries plan p out on repository r in five steps, each
// resumable: a crash at any point leaves a repository that verify accepts
// and that the next gc finishes (docs/spec.md §10.7; docs/spec.md §16):
//
//  1. move the floor: one compare-and-swap of retention/floor.json from the
//     version the plan read (repo.ErrRetentionConflict if it changed:
//     nothing is deleted, plan again); then write the deletion intent
//     (every key the plan may delete, create-only; writeIntent) and look
//     again at what changed while gc planned (recheck): a ref, or a ref
//     move in progress (its ref log entry written), on a version the floor
//     retires stops gc and puts the floor back; the versions of moves in
//     progress, and of folders that appeared, keep their objects and every
//     data file their catalogs list;
//  2. for each version leaving retention: write its marker (create-only),
//     then delete its catalog and dataset.json — never version.json;
//     refused (ErrAheadOfFloor) for a version the stored floor does
//     not retire;
//  3. delete the plan's data files (only keys under data/; a file freed by
//     retirement only once every retired version listing it is marked);
//  4. delete abandoned version folders (their history pack, then
//     version.json, the catalog last), unless a ref now points at one;
//     then the temporary files of interrupted writes older than the grace
//     period (folder stores);
//  5. delete the history packs of versions that are gone, and write the
//     missing ones on every ref's history (docs/spec.md §18).
//
// It deletes nothing outside data/, versions/ and index/packs/, and
// nothing its intent does not list (Repo.DeleteGarbage, with the intent's
// check); the intent is removed at the end. The result says what was done,
// also when an error stopped it. Errors: *StopError (wrapping
// repo.ErrRetentionConflict or ErrAheadOfFloor) when the repository
// changed so that gc must stop; ErrRefused when a ref or ref log entry
// cannot be read at the recheck; the store's.
func Apply(ctx context.Context, r *repo.Repo, p *Plan) (*Result, error) {
	c := &collector{r: r}
	res := &Result{Floor: p.FloorGeneration}
	floor, err := c.moveFloor(ctx, p, res)
	if err != nil {
		return res, err
	}
	defer func() {
		// Done, stopped or interrupted, this gc deletes nothing more: its
		// intent goes (a process killed leaves it; the next gc on this
		// host, or its lease, clears it).
		dropIntent(ctx, r, c.intent)
		c.intent = nil
	}()
	for _, step := range []func(context.Context, *Plan, *retention.Floor, *Result) error{
		c.retire, c.unrecordAbandoned, c.deleteData, c.deleteAbandoned, c.deleteTemps, c.updatePacks,
	} {
		if err := step(ctx, p, floor, res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// collector is one gc carrying a plan out (Apply, Excise): the repository
// and the deletion intent it deletes under (nil until step 1 wrote it;
// docs/spec.md §16.1). It is the only state a running gc keeps: the
// repository holds none.
type collector struct {
	r      *repo.Repo
	intent *intent
	// unrecorded are the abandoned versions whose pack and record
	// unrecordAbandoned deleted.
	unrecorded map[version.ID]bool
}

// step calls the repository's step hook (repo.Options.Step; tests stop or
// kill gc there) with name.
func (c *collector) step(name string) { step(c.r, name) }

// step calls r's step hook, if it has one, with name ("gc:floor", …).
func step(r *repo.Repo, name string) {
	if f := r.Options().Step; f != nil {
		f(name)
	}
}

// moveFloor is step 1: the floor's compare-and-swap, the deletion intent,
// then recheck; if either of the last two stops gc, the intent is removed
// and gc's own floor move is put back (restoreFloor). It returns the floor
// the later steps go by, with c.intent the intent they delete under.
func (c *collector) moveFloor(ctx context.Context, p *Plan, res *Result) (*retention.Floor, error) {
	floor, _, err := c.r.Floor(ctx)
	if err != nil {
		return nil, err
	}
	if !p.FloorMoves {
		g, err := writeIntent(ctx, c.r, p, p.FloorGeneration)
		if err != nil {
			return nil, err
		}
		if err := recheck(ctx, c.r, p, floor); err != nil {
			dropIntent(ctx, c.r, g)
			return nil, err
		}
		c.intent = g
		return floor, nil
	}
	f := *p.NewFloor
	f.MovedBy = c.r.Actor()
	c.step("gc:floor")
	movedTok, err := c.r.SwapFloor(ctx, p.floorTok, &f)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, &StopError{Why: StopFloorMoved, Key: retention.FloorKey, Err: repo.ErrRetentionConflict}
		}
		return nil, fmt.Errorf("move the floor: %w", err)
	}
	res.FloorMoved, res.Floor = true, f.Generation
	g, err := writeIntent(ctx, c.r, p, f.Generation)
	if err == nil {
		if err = recheck(ctx, c.r, p, &f); err != nil {
			dropIntent(ctx, c.r, g)
		}
	}
	if err != nil {
		if restoreFloor(ctx, c.r, &f, movedTok, floor) {
			res.FloorMoved, res.Floor = false, f.Generation+1
			return nil, fmt.Errorf("%w (the floor was put back: nothing changed for readers)", err)
		}
		return nil, err
	}
	c.intent = g
	return &f, nil
}

// retire is step 2: each version leaving retention gets its marker,
// then loses its catalog and dataset.json (excise).
func (c *collector) retire(ctx context.Context, p *Plan, floor *retention.Floor, res *Result) error {
	for _, rt := range p.Retire {
		if err := ctx.Err(); err != nil {
			return err
		}
		wrote, n, err := c.excise(ctx, floor, rt.ID, rt.Frees, rt.Marked, res)
		if err != nil {
			return err
		}
		if wrote {
			res.Marked++
		}
		p.marked[rt.ID] = true
		res.Bytes += n
	}
	return nil
}

// deleteData is step 3: the plan's data files (less those recheck called
// off: a version pushed meanwhile lists them); a file freed by retirement
// goes only once every retired version listing it is marked.
func (c *collector) deleteData(ctx context.Context, p *Plan, _ *retention.Floor, res *Result) error {
	res.Protected += p.protected
	for _, f := range p.DataFiles {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.Reason == retention.ReasonRetired && slices.ContainsFunc(f.RetiredBy, func(id version.ID) bool { return !p.marked[id] }) {
			res.Skipped++
			continue
		}
		c.step("gc:data")
		if err := c.delete(ctx, f.Key); err != nil {
			return err
		}
		res.DataFiles++
		res.Bytes += f.Size
	}
	return nil
}

// unrecordAbandoned is the first part of step 4, run before the data
// step: each abandoned complete version that no ref now points at loses
// its history pack, then its version.json, and is from then on an
// incomplete folder. So a gc stopped after the data step deleted its
// files leaves no complete version whose files are gone: a mirror or a
// push run again trusts a record it finds (docs/spec.md §16, step 4).
func (c *collector) unrecordAbandoned(ctx context.Context, p *Plan, _ *retention.Floor, _ *Result) error {
	held, err := c.heldNow(ctx, p)
	if err != nil {
		return err
	}
	c.unrecorded = map[version.ID]bool{}
	for _, a := range p.Abandoned {
		if err := ctx.Err(); err != nil {
			return err
		}
		if held[a.ID] || !a.Complete {
			continue
		}
		// The pack first: a pack never outlives its version's record.
		c.step("gc:abandoned")
		if err := c.delete(ctx, history.PackKey(a.ID)); err != nil {
			return err
		}
		c.step("gc:abandoned")
		if err := c.delete(ctx, repo.VersionKey(a.ID, version.RecordFile)); err != nil {
			return err
		}
		c.unrecorded[a.ID] = true
	}
	return nil
}

// heldNow returns the versions the repository's refs point at now (nil
// when the plan abandons nothing).
func (c *collector) heldNow(ctx context.Context, p *Plan) (map[version.ID]bool, error) {
	if len(p.Abandoned) == 0 {
		return nil, nil
	}
	good, _, err := c.r.Refs().List(ctx, "refs/")
	if err != nil {
		return nil, err
	}
	held := map[version.ID]bool{}
	for _, ref := range good {
		held[ref.ID] = true
	}
	return held, nil
}

// deleteAbandoned is step 4 for abandoned version folders: each goes whole,
// version.json first (unrecordAbandoned deleted it, with the pack, before
// the data step) and the catalog last (while the catalog is there,
// readers see an incomplete version, never an unknown folder), unless a
// ref now points at it.
func (c *collector) deleteAbandoned(ctx context.Context, p *Plan, _ *retention.Floor, res *Result) error {
	held, err := c.heldNow(ctx, p)
	if err != nil {
		return err
	}
	for _, a := range p.Abandoned {
		if err := ctx.Err(); err != nil {
			return err
		}
		if held[a.ID] {
			continue
		}
		done := c.unrecorded[a.ID]
		if !done {
			// The pack first: a pack never outlives its version's record.
			c.step("gc:abandoned")
			if err := c.delete(ctx, history.PackKey(a.ID)); err != nil {
				return err
			}
		}
		for _, k := range deletionOrder(a.Keys) {
			if !strings.HasPrefix(k, repo.VersionKey(a.ID, "")) {
				return fmt.Errorf("gc: %s is not inside version folder %s", k, a.ID)
			}
			if done && k == repo.VersionKey(a.ID, version.RecordFile) {
				continue
			}
			c.step("gc:abandoned")
			if err := c.delete(ctx, k); err != nil {
				return err
			}
		}
		res.Abandoned++
		res.Bytes += a.Bytes
	}
	return nil
}

// deletionOrder returns the keys of a version folder in the order gc
// deletes them: version.json first, the catalog last, the rest between in
// their order.
func deletionOrder(keys []string) []string {
	rank := func(k string) int {
		switch {
		case strings.HasSuffix(k, "/"+version.RecordFile):
			return 0
		case strings.HasSuffix(k, "/"+version.CatalogFile):
			return 2
		}
		return 1
	}
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(x, y string) int { return rank(x) - rank(y) })
	return out
}

// deleteTemps is step 4 for the temporary files of interrupted writes
// (folder stores: store.TempCleaner).
func (c *collector) deleteTemps(ctx context.Context, p *Plan, _ *retention.Floor, res *Result) error {
	tc, ok := c.r.Store().(store.TempCleaner)
	if !ok {
		return nil
	}
	for _, f := range p.Temps {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.step("gc:temp")
		if err := tc.RemoveTemp(ctx, f.Key); err != nil {
			return err
		}
		res.Temps++
		res.Bytes += f.Size
	}
	return nil
}

// Excise takes one version's bytes out of repository r after the floor
// retired it (gc's step 2 for one version, under a deletion intent of its
// own that lists the two keys): it writes the version's marker (create-only; frees are the
// data-file keys only its catalog listed, see retention.Marker) and deletes
// its catalog and dataset.json, never version.json. Errors:
// ErrAheadOfFloor when neither the stored floor nor an existing marker
// retires the version: move the floor first (fdl gc --yes does both).
func Excise(ctx context.Context, r *repo.Repo, id version.ID, frees []string) error {
	floor, _, err := r.Floor(ctx)
	if err != nil {
		return err
	}
	gen := int64(0)
	if floor != nil {
		gen = floor.Generation
	}
	g, err := newIntent(ctx, r, []string{repo.VersionKey(id, version.CatalogFile), repo.VersionKey(id, version.DatasetFile)}, gen)
	if err != nil {
		return err
	}
	c := &collector{r: r, intent: g}
	defer dropIntent(ctx, r, g)
	_, _, err = c.excise(ctx, floor, id, frees, false, &Result{})
	return err
}

// excise is gc step 2 for one version; marked says its marker is known to
// exist. It returns whether it wrote the marker and the bytes deleted.
func (c *collector) excise(ctx context.Context, floor *retention.Floor, id version.ID, frees []string, marked bool, res *Result) (bool, int64, error) {
	wrote := false
	if !marked {
		m, err := c.r.Marker(ctx, id)
		if err != nil {
			return false, 0, err
		}
		if m == nil {
			var rt *retention.Retirement
			for _, x := range floor.RetiredList() {
				if x.ID == id {
					rt = &x
					break
				}
			}
			if rt == nil {
				gen := int64(0)
				if floor != nil {
					gen = floor.Generation
				}
				return false, 0, &StopError{Why: StopAheadOfFloor, Version: id, Generation: gen, Key: retention.MarkerFile, Err: ErrAheadOfFloor}
			}
			if frees == nil {
				frees = []string{}
			}
			mk := &retention.Marker{Format: retention.Format, Version: id, RetiredAt: floor.MovedAt, Floor: floor.Generation, Reason: rt.Reason, DataFiles: frees}
			c.step("gc:marker")
			if err := c.r.WriteMarker(ctx, mk); err != nil && !errors.Is(err, store.ErrExist) {
				return false, 0, err
			}
			wrote = true
		}
	}
	var n int64
	for _, f := range [][2]string{{version.CatalogFile, "gc:catalog"}, {version.DatasetFile, "gc:dataset"}} {
		key := repo.VersionKey(id, f[0])
		oi, err := c.r.Store().Stat(ctx, key)
		if errors.Is(err, store.ErrNotExist) {
			continue
		}
		if err != nil {
			return wrote, n, err
		}
		c.step(f[1])
		if err := c.delete(ctx, key); err != nil {
			return wrote, n, err
		}
		res.Excised++
		n += oi.Size
	}
	return wrote, n, nil
}

// delete deletes one object through Repo.DeleteGarbage, guarded by the
// running gc's deletion intent (intent.before, which also renews the
// intent and stops gc when it lost it).
func (c *collector) delete(ctx context.Context, key string) error {
	return c.r.DeleteGarbage(ctx, key, func(key string) error { return c.intent.before(ctx, c.r, key) })
}
