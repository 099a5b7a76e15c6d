package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// gc's plan: read everything (Repo.RetentionInput), let retention.Decide
// say which versions stay and which leave retention, then which data
// files, abandoned uploads and temporary files go. Nothing is written.

// Totals sums what a plan deletes.
type Totals struct {
	Catalogs       int   `json:"catalogs"` // versions whose catalog or dataset.json go
	CatalogBytes   int64 `json:"catalog_bytes"`
	DataFiles      int   `json:"data_files_count"`
	DataBytes      int64 `json:"data_bytes"`
	Abandoned      int   `json:"abandoned_count"` // version folders deleted whole
	AbandonedBytes int64 `json:"abandoned_bytes"`
	Temps          int   `json:"temps_count"` // temporary files of interrupted writes
	TempBytes      int64 `json:"temp_bytes"`
	Bytes          int64 `json:"bytes"` // all of the above
}

// Timing says where a plan's time went (milliseconds).
type Timing struct {
	TotalMS int64 `json:"total_ms"`
	// FetchMS: checking catalogs against their records' sha256 (and, on
	// object stores, copying them out first), summed over catalogs.
	FetchMS int64 `json:"fetch_ms"`
	// ScanMS: opening catalogs and reading their data-file tables, summed
	// over catalogs (they are read in parallel: the sum may exceed TotalMS).
	ScanMS int64 `json:"scan_ms"`
}

// Plan is what gc would do (docs/spec.md §16), computed without writing
// anything: MakePlan makes it, Apply carries it out.
type Plan struct {
	Now    time.Time        `json:"now"`
	Policy retention.Policy `json:"policy"`
	// FloorGeneration is the stored floor's generation (0: never moved).
	FloorGeneration int64 `json:"floor_generation"`
	*retention.Decision
	// Branches is each branch's retention window as the JSON shows it
	// (the decision's, with the branch's short and full names).
	Branches []Branch `json:"branches"`
	// DataFiles are the data files step 3 deletes, by key.
	DataFiles []retention.DataDeletion `json:"data_files"`
	Data      retention.DataStats      `json:"data"`
	// Temps are temporary files of writes interrupted by a crash (a folder
	// store's ".tmp-*" under data/ and versions/, store.TempCleaner) older
	// than the grace period: step 4 deletes them. YoungTemps counts those
	// left alone, which may be writes in progress.
	Temps      []store.ObjectInfo `json:"temps"`
	YoungTemps int                `json:"young_temps"`
	Totals     Totals             `json:"totals"`
	Timing     Timing             `json:"timing"`
	// Packs are the versions on a ref's history whose history pack is
	// missing (the versions a walk from the ref jumps to): the last step
	// writes them, oldest first. PackOrphans are packs of versions whose
	// folder is gone, older than the grace period: it deletes them.
	Packs       []version.ID       `json:"packs"`
	PackOrphans []store.ObjectInfo `json:"pack_orphans"`
	// Abbrev shortens the ids the plan shows.
	Abbrev refs.Abbrev `json:"-"`

	floorTok  store.Token
	policyTok store.Token
	refs      map[refs.Name]version.ID // every ref as the plan read it
	known     map[version.ID]bool      // every version folder the plan saw
	marked    map[version.ID]bool
	logs      map[string]refs.LogEntry // every ref log entry the plan read, by key
	protected int                      // data deletions recheck called off
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool {
	return !p.FloorMoves && len(p.Retire) == 0 && len(p.DataFiles) == 0 && len(p.Abandoned) == 0 && len(p.Temps) == 0 &&
		len(p.Packs) == 0 && len(p.PackOrphans) == 0
}

// MakePlan computes what gc does on repository r, writing nothing to it
// (on object stores catalogs are copied to a temporary folder to be read;
// docs/spec.md §10.7; docs/spec.md §16). It reads the policy, the floor,
// every ref, every ref log entry, every version folder (records and
// markers; Repo.RetentionInput), the data-file table of every catalog it
// keeps or retires (each checked against its record's sha256 first), the
// listing of data/, the temporary files of interrupted writes and the
// listing of index/packs/.
//
// Errors wrap ErrRefused and name the thing when gc must not run: a ref
// that is empty, garbage or names a missing version; HEAD unreadable; a
// record, marker, ref log entry, policy or floor that does not parse; a
// catalog in retention that is missing or fails its checksum; a data-file
// path that cannot be normalised. A catalog that appeared without a
// record (a push uploading) and cannot be read stops it with a *StopError
// (StopNewCatalogUnreadable); the store's errors come as they are.
func MakePlan(ctx context.Context, r *repo.Repo, o Options) (*Plan, error) {
	start := time.Now()
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	in, floorTok, policyTok, err := r.RetentionInput(ctx, now)
	if err != nil {
		return nil, refuse(err)
	}
	d, err := retention.Decide(in)
	if err != nil {
		return nil, refuse(err)
	}
	plan := newPlan(now, in, d, floorTok, policyTok)
	if err := planData(ctx, r, plan, in, o.Workers); err != nil {
		return nil, err
	}
	if err := planTemps(ctx, r, plan, in.Policy.Grace); err != nil {
		return nil, err
	}
	if err := planPacks(ctx, r, plan, in); err != nil {
		return nil, err
	}
	plan.total()
	if all, err := r.IDs(ctx); err == nil {
		plan.Abbrev, _ = r.Abbrev(ctx, all...) // the listing gc made: no more reads
	}
	plan.Timing.TotalMS = time.Since(start).Milliseconds()
	return plan, nil
}

// newPlan is the plan of decision d over in, before its data step: what
// the plan read (refs, version folders, markers, the tokens of the floor
// and the policy) is kept for Apply's checks.
func newPlan(now time.Time, in *retention.Input, d *retention.Decision, floorTok, policyTok store.Token) *Plan {
	plan := &Plan{Now: now.UTC(), Policy: in.Policy, Decision: d, floorTok: floorTok, policyTok: policyTok,
		refs: map[refs.Name]version.ID{}, known: map[version.ID]bool{}, marked: map[version.ID]bool{}, DataFiles: []retention.DataDeletion{},
		logs: map[string]refs.LogEntry{}}
	for _, e := range in.LogEntries {
		plan.logs[refs.LogKey(e)] = e
	}
	for _, ref := range in.Refs {
		plan.refs[ref.Name] = ref.ID
	}
	for id, v := range in.Versions {
		plan.known[id] = true
		if v.Marker != nil {
			plan.marked[id] = true
		}
	}
	if in.Floor != nil {
		plan.FloorGeneration = in.Floor.Generation
	}
	plan.Branches = []Branch{}
	for _, b := range d.Branches {
		n := refs.Name(b.Branch)
		plan.Branches = append(plan.Branches, Branch{Ref: n, Branch: n.Short(), Head: b.Head, Floor: b.Floor, Seq: b.Seq, Snapshot: b.Snapshot})
	}
	return plan
}

// Branch is one branch's retention window in 'fdl gc --json': the
// floor.json entry (docs/spec.md §14) with the branch's short name in
// branch and its full name in ref.
type Branch struct {
	Ref      refs.Name  `json:"ref"`
	Branch   string     `json:"branch"`
	Head     version.ID `json:"head"`
	Floor    version.ID `json:"floor"`
	Seq      int64      `json:"seq"`
	Snapshot int64      `json:"snapshot"`
}

// planData is gc's step 3 in the plan: which data files go. Its inputs are
// the data-file tables of every catalog in retention, then of every
// catalog leaving it, then the markers of versions retired before, and one
// listing of data/; on a folder store guardFolderStore checks the result.
func planData(ctx context.Context, r *repo.Repo, plan *Plan, in *retention.Input, workers int) error {
	norm, err := r.Normaliser()
	if err != nil {
		return refuse(err)
	}
	dp := retention.NewDataPlanner(norm)
	tmp, removeTmp, err := scratch.New(scratch.GC)
	if err != nil {
		return err
	}
	defer removeTmp()
	if err := scanLive(ctx, r, plan, in, dp, tmp, workers); err != nil {
		return refuse(fmt.Errorf("a version in retention: %w", err))
	}
	if err := scanUploading(ctx, r, plan, in, dp, tmp); err != nil {
		return err
	}
	if err := scanLeaving(ctx, r, plan, in, dp, tmp, workers); err != nil {
		return refuse(fmt.Errorf("a version leaving retention: %w", err))
	}
	for id, v := range in.Versions {
		if v.Marker != nil && !slices.ContainsFunc(plan.Retire, func(rt retention.Retire) bool { return rt.ID == id }) {
			dp.AddMarker(id, v.Marker.DataFiles)
		}
	}
	var listing []store.ObjectInfo
	if err := r.Store().List(ctx, repo.DataPrefix, func(oi store.ObjectInfo) error {
		listing = append(listing, oi)
		return nil
	}); err != nil {
		return fmt.Errorf("list %s: %w", repo.DataPrefix, err)
	}
	listing = keepOutNested(listing, &plan.Warnings)
	plan.DataFiles = dp.Plan(listing, plan.Now, in.Policy.Grace)
	plan.Data = dp.Stats()
	for _, u := range dp.Unplaced() {
		if u.Live {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("version %s reads %d file(s) by a path gc cannot place (%v): gc keeps every file under data/ with one of their names; readers cannot rely on such a path (fdl verify --data reports it)", u.Version, u.Count, u.First))
		} else {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("version %s leaves retention listing %d file(s) by a path gc cannot place (%v): it frees none of them", u.Version, u.Count, u.First))
		}
	}
	if local, ok := r.Folder(); ok {
		plan.DataFiles = guardFolderStore(local, norm, dp, plan.DataFiles, &plan.Warnings)
	}
	return nil
}

// nestedRoots returns the folders under data/ in listing that look like
// another repository: each folder ("data/x/") holding an fdl.json or a HEAD
// object directly (repositories never nest: docs/spec.md §2). gc deletes
// nothing under them.
func nestedRoots(listing []store.ObjectInfo) []string {
	var roots []string
	for _, oi := range listing {
		dir, name := path.Split(oi.Key)
		if (name == repo.ConfigKey || name == "HEAD") && strings.HasPrefix(dir, repo.DataPrefix) {
			if len(roots) == 0 || roots[len(roots)-1] != dir {
				roots = append(roots, dir)
			}
		}
	}
	return roots
}

// keepOutNested drops from a listing of data/ every object under a folder
// that looks like another repository (nestedRoots: it holds an fdl.json or
// a HEAD), with a warning each: gc never deletes what may be another
// repository's, whatever the grace period (repositories never nest).
func keepOutNested(listing []store.ObjectInfo, warnings *[]string) []store.ObjectInfo {
	roots := nestedRoots(listing)
	if len(roots) == 0 {
		return listing
	}
	out := listing[:0:0]
	kept := map[string]int{}
	for _, oi := range listing {
		i := slices.IndexFunc(roots, func(r string) bool { return strings.HasPrefix(oi.Key, r) })
		if i >= 0 {
			kept[roots[i]]++
			continue
		}
		out = append(out, oi)
	}
	for _, r := range roots {
		*warnings = append(*warnings, fmt.Sprintf("%s looks like another repository (it holds %s or HEAD): gc deletes none of its %d object(s); move that repository out of this one's data folder", r, repo.ConfigKey, kept[r]))
	}
	return out
}

// scanLive reads the data-file table of every catalog in retention into
// dp, in id order.
func scanLive(ctx context.Context, r *repo.Repo, plan *Plan, in *retention.Input, dp *retention.DataPlanner, tmp string, workers int) error {
	live := make([]*version.Record, 0, len(plan.Live))
	for id := range plan.Live {
		live = append(live, in.Versions[id].Record)
	}
	slices.SortFunc(live, func(a, b *version.Record) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return scanCatalogs(ctx, r, live, tmp, workers, &plan.Timing, nil, func(rec *version.Record, files []ducklake.DataFile) error {
		dp.AddLive(rec.ID, plan.Live[rec.ID], files)
		return nil
	})
}

// scanUploading reads into dp, as catalogs in retention read at every
// snapshot, the catalogs of the young folders without version.json: pushes
// uploading now (the catalog is written first, the record last), whose
// versions read files no other catalog lists yet. A catalog gone meanwhile
// (its push removed its uploads) protects nothing; one that cannot be read
// stops gc: what it protects is unknown.
func scanUploading(ctx context.Context, r *repo.Repo, plan *Plan, in *retention.Input, dp *retention.DataPlanner, tmp string) error {
	for _, id := range plan.Young {
		v := in.Versions[id]
		if v.Record != nil || !v.Has(version.CatalogFile) {
			continue
		}
		files, err := r.CatalogDataFilesUnchecked(ctx, id, tmp)
		if errors.Is(err, store.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return &StopError{Why: StopNewCatalogUnreadable, Version: id, Detail: err, Err: repo.ErrRetentionConflict}
		}
		dp.AddLive(id, 0, files)
	}
	return nil
}

// scanLeaving reads the data-file table of every catalog leaving retention
// into dp and records in the plan which files only it lists (Retire.Frees);
// a version retired before adds its marker's list instead. A damaged
// catalog leaving retention is deleted unread, with a warning: it is going
// anyway, and the files only it lists go as unlisted files after the grace
// period (a catalog in retention that is damaged stops gc).
func scanLeaving(ctx context.Context, r *repo.Repo, plan *Plan, in *retention.Input, dp *retention.DataPlanner, tmp string, workers int) error {
	var leaving []*version.Record
	index := map[version.ID]int{}
	for i := range plan.Retire {
		rt := &plan.Retire[i]
		v := in.Versions[rt.ID]
		switch {
		case v.Marker != nil:
			dp.AddMarker(rt.ID, v.Marker.DataFiles)
		case v.Has(version.CatalogFile):
			leaving = append(leaving, v.Record)
			index[rt.ID] = i
		}
	}
	unreadable := func(rec *version.Record, err error) bool {
		if !errors.Is(err, repo.ErrChecksum) && !errors.Is(err, ducklake.ErrCorrupt) && !errors.Is(err, ducklake.ErrNotCatalog) {
			return false
		}
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("version %s (seq %d) leaves retention with a catalog that cannot be read (%v): it is deleted unread, and the data files only it listed are deleted as files no catalog lists, once older than the grace period", rec.ID, rec.Seq, err))
		return true
	}
	return scanCatalogs(ctx, r, leaving, tmp, workers, &plan.Timing, unreadable, func(rec *version.Record, files []ducklake.DataFile) error {
		rt := &plan.Retire[index[rec.ID]]
		rt.Frees = dp.AddRetiring(rec.ID, files)
		rt.FreesCount = len(rt.Frees)
		return nil
	})
}

// planTemps is gc's step 4 for temporary files of interrupted writes: those
// older than the grace period go; younger ones may be writes in progress.
func planTemps(ctx context.Context, r *repo.Repo, plan *Plan, grace retention.Duration) error {
	plan.Temps = []store.ObjectInfo{}
	return r.Temps(ctx, func(oi store.ObjectInfo) error {
		if !retention.Young(plan.Now, oi.ModTime, grace) {
			plan.Temps = append(plan.Temps, oi)
		} else {
			plan.YoungTemps++
		}
		return nil
	})
}

// total sums what the plan deletes.
func (plan *Plan) total() {
	t := &plan.Totals
	for _, rt := range plan.Retire {
		if len(rt.Keys) > 0 {
			t.Catalogs++
			t.CatalogBytes = store.AddSize(t.CatalogBytes, rt.Bytes)
		}
	}
	for _, f := range plan.DataFiles {
		t.DataFiles++
		t.DataBytes = store.AddSize(t.DataBytes, f.Size)
	}
	for _, a := range plan.Abandoned {
		t.Abandoned++
		t.AbandonedBytes = store.AddSize(t.AbandonedBytes, a.Bytes)
	}
	for _, f := range plan.Temps {
		t.Temps++
		t.TempBytes = store.AddSize(t.TempBytes, f.Size)
	}
	t.Bytes = store.AddSize(store.AddSize(t.CatalogBytes, t.DataBytes), store.AddSize(t.AbandonedBytes, t.TempBytes))
}

// guardFolderStore is the last check of gc's data step on a folder store,
// where symbolic links can give one file several paths (data/ on another
// disk, a folder inside data/ linked elsewhere). It keeps, with a warning,
// every planned deletion whose file
//   - lies, with links resolved, outside every data folder location (a
//     link inside data/ pointing out of the repository: docs/spec.md §8), or
//   - is the same file (device and inode) as one a catalog in retention
//     can read at or after its floor or names outside the repository,
//     however each is spelled (docs/spec.md §10.7: nothing reachable is
//     deleted).
//
// It returns the deletions that pass.
func guardFolderStore(st store.LocalFiles, norm *retention.Normaliser, dp *retention.DataPlanner, dels []retention.DataDeletion, warnings *[]string) []retention.DataDeletion {
	if len(dels) == 0 {
		return dels
	}
	var roots []string
	for _, root := range norm.Roots() {
		if !strings.HasPrefix(root, "/") {
			continue
		}
		roots = append(roots, root)
		if real, err := filepath.EvalSymlinks(filepath.FromSlash(root)); err == nil {
			roots = append(roots, strings.TrimSuffix(filepath.ToSlash(real), "/")+"/")
		}
	}
	protected := map[fileID]string{}
	for _, p := range dp.Protected() {
		if fi, err := os.Stat(filepath.FromSlash(p)); err == nil {
			if id, ok := identify(fi); ok {
				protected[id] = p
			}
		}
	}
	out := dels[:0]
	for _, d := range dels {
		loc := st.LocalPath(d.Key)
		real, err := filepath.EvalSymlinks(loc)
		if err != nil {
			out = append(out, d) // gone meanwhile: deleting it is a no-op
			continue
		}
		real = filepath.ToSlash(real)
		if !slices.ContainsFunc(roots, func(root string) bool { return strings.HasPrefix(real, root) }) {
			*warnings = append(*warnings, fmt.Sprintf("%s is kept: through a symbolic link it is %s, outside the repository's data folder, and gc never deletes outside it", d.Key, real))
			continue
		}
		if fi, err := os.Stat(loc); err == nil {
			if id, ok := identify(fi); ok {
				if p, hit := protected[id]; hit {
					*warnings = append(*warnings, fmt.Sprintf("%s is kept: it is the same file as %s, which a catalog in retention reads (two paths to one file, through a symbolic link or a hard link)", d.Key, p))
					continue
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// scanCatalogs reads the data-file table of each catalog (in parallel,
// workers at a time; 0: scanWorkers) and hands each result to fn in the
// order of recs, from the calling goroutine. It stops at the first error,
// except one that skip (if not nil) accepts: that catalog is left out.
func scanCatalogs(ctx context.Context, r *repo.Repo, recs []*version.Record, tmp string, workers int, t *Timing, skip func(*version.Record, error) bool, fn func(*version.Record, []ducklake.DataFile) error) error {
	type result struct {
		files       []ducklake.DataFile
		fetch, scan time.Duration
		err         error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if workers <= 0 {
		workers = scanWorkers()
	}
	workers = min(workers, max(len(recs), 1))
	results := make([]chan result, len(recs))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range recs {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	// A worker takes a token before it takes an index, and the consumer
	// gives one back per result it consumed: at most 2*workers results (each
	// may hold a large data-file table) exist at once, and the lowest index
	// not yet consumed always has a worker.
	tokens := make(chan struct{}, 2*workers)
	for range workers {
		go func() {
			for {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				}
				i, ok := <-next
				if !ok {
					<-tokens
					return
				}
				var res result
				res.files, res.fetch, res.scan, res.err = r.CatalogDataFiles(ctx, recs[i], tmp)
				results[i] <- res
			}
		}()
	}
	for i, rec := range recs {
		var res result
		select {
		case res = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-tokens
		if res.err != nil {
			if skip != nil && skip(rec, res.err) {
				continue
			}
			return res.err
		}
		t.FetchMS += res.fetch.Milliseconds()
		t.ScanMS += res.scan.Milliseconds()
		if err := fn(rec, res.files); err != nil {
			return err
		}
	}
	return nil
}

// scanWorkers is how many catalogs gc and verify read at once: one per CPU,
// at most 4 (each DuckDB instance uses threads of its own).
func scanWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }
