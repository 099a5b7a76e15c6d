package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// Errors of retention and gc.
var (
	// ErrRetired: the version left retention; its catalog is (or is about
	// to be) deleted, its record stays. *RetiredError wraps it.
	ErrRetired = errors.New("version is out of retention")
	// ErrAheadOfFloor: a deletion of a version's bytes was asked before the
	// floor took it out of retention (DESIGN.md §4.7).
	ErrAheadOfFloor = errors.New("refused: ahead of the retention floor")
	// ErrRetentionConflict: the policy or the floor changed between read and
	// write (another gc or fdl retention); nothing was written.
	ErrRetentionConflict = errors.New("retention settings changed concurrently")
	// ErrGCRefused: gc will not run on this repository as it is (a corrupt
	// or dangling ref, an unreadable catalog or record, a path it cannot
	// place); the message names the thing.
	ErrGCRefused = errors.New("gc refused")
)

// RetiredError says a version is out of retention and since when.
type RetiredError struct {
	ID  version.ID
	Seq int64
	// At is when it left retention (the floor move), Floor that move's
	// generation; Marked is false while only the floor retires it.
	At     time.Time
	Floor  int64
	Reason string
	Marked bool
}

func (e *RetiredError) Error() string {
	return fmt.Sprintf("version %s (seq %d) left retention on %s (floor %d: %s): its catalog is deleted or about to be, its record stays (fdl show %s); use a version in retention: a branch head, a tag, or a recent one (fdl log)",
		e.ID, e.Seq, e.At.UTC().Format(time.RFC3339), e.Floor, e.Reason, e.ID)
}

func (e *RetiredError) Unwrap() error { return ErrRetired }

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
		return p, tok, fmt.Errorf("%s (%s): %w; correct the file, or replace it with the default plus the rules you give: fdl retention --reset [--keep-last N] [--keep-within D]", withoutInvalid(err), r.st.Location(retention.PolicyKey), retention.ErrInvalid)
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
		return nil, tok, fmt.Errorf("%s (%s): %w; restore it from a backup, or delete it: every version whose catalog gc deleted keeps its marker (versions/<id>/retired.json), and the next fdl gc moves the floor again", withoutInvalid(err), r.st.Location(retention.FloorKey), retention.ErrInvalid)
	}
	return f, tok, nil
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
		return nil, fmt.Errorf("%s (%s): %w; restore it from a backup, or delete it and run fdl gc: a version whose catalog is gone is retired again with a new marker (if the policy keeps that version, gc says so: lower the policy, or restore the catalog)", withoutInvalid(err), r.st.Location(VersionKey(id, retention.MarkerFile)), retention.ErrInvalid)
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

// refuseRetired returns the *RetiredError of rec's version if it is out of
// retention (checkout, ATTACH printing and new refs refuse it).
func (r *Repo) refuseRetired(ctx context.Context, rec *version.Record) error {
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

// MarkedIDs returns the versions with a marker (versions/<id>/retired.json):
// those whose catalog gc deleted or is deleting. One listing of versions/.
func (r *Repo) MarkedIDs(ctx context.Context) (map[version.ID]bool, error) {
	out := map[version.ID]bool{}
	err := r.st.List(ctx, VersionsPrefix, func(o store.ObjectInfo) error {
		if rest, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, VersionsPrefix), "/"+retention.MarkerFile); ok && !strings.Contains(rest, "/") {
			out[version.ID(rest)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	return out, nil
}

// GCOptions tune PlanGC.
type GCOptions struct {
	// Now is the time the policy and grace period are measured from
	// (default: time.Now).
	Now time.Time
	// Workers is how many catalogs are read at once (default: one per CPU,
	// at most 4).
	Workers int
}

// GCTotals sums what a plan deletes.
type GCTotals struct {
	Catalogs       int   `json:"catalogs"` // versions whose catalog or dataset.json go
	CatalogBytes   int64 `json:"catalog_bytes"`
	DataFiles      int   `json:"data_files"`
	DataBytes      int64 `json:"data_bytes"`
	Abandoned      int   `json:"abandoned"` // version folders deleted whole
	AbandonedBytes int64 `json:"abandoned_bytes"`
	Temps          int   `json:"temps"` // temporary files of interrupted writes
	TempBytes      int64 `json:"temp_bytes"`
	Bytes          int64 `json:"bytes"` // all of the above
}

// GCTiming says where a plan's time went (milliseconds).
type GCTiming struct {
	TotalMS int64 `json:"total_ms"`
	// FetchMS: checking catalogs against their records' sha256 (and, on
	// object stores, copying them out first), summed over catalogs.
	FetchMS int64 `json:"fetch_ms"`
	// ScanMS: opening catalogs and reading their data-file tables, summed
	// over catalogs (they are read in parallel: the sum may exceed TotalMS).
	ScanMS int64 `json:"scan_ms"`
}

// GCPlan is what gc would do (docs/spec.md §16), computed without writing
// anything: PlanGC makes it, ApplyGC carries it out.
type GCPlan struct {
	Now    time.Time        `json:"now"`
	Policy retention.Policy `json:"policy"`
	// FloorGeneration is the stored floor's generation (0: never moved).
	FloorGeneration int64 `json:"floor_generation"`
	*retention.Decision
	// DataFiles are the data files step 3 deletes, by key.
	DataFiles []retention.DataDeletion `json:"data_files"`
	Data      retention.DataStats      `json:"data"`
	// Temps are temporary files of writes interrupted by a crash (a folder
	// store's ".tmp-*" under data/ and versions/, store.TempCleaner) older
	// than the grace period: step 4 deletes them. YoungTemps counts those
	// left alone, which may be writes in progress.
	Temps      []store.ObjectInfo `json:"temps"`
	YoungTemps int                `json:"young_temps"`
	Totals     GCTotals           `json:"totals"`
	Timing     GCTiming           `json:"timing"`

	floorTok  store.Token
	policyTok store.Token
	refs      map[refs.Name]version.ID // every ref as the plan read it
	known     map[version.ID]bool      // every version folder the plan saw
	marked    map[version.ID]bool
}

// Empty reports whether the plan changes nothing.
func (p *GCPlan) Empty() bool {
	return !p.FloorMoves && len(p.Retire) == 0 && len(p.DataFiles) == 0 && len(p.Abandoned) == 0 && len(p.Temps) == 0
}

// PlanGC computes what gc does, writing nothing to the repository (on
// object stores catalogs are copied to a temporary folder to be read;
// DESIGN.md §4.7; docs/spec.md §16). It reads the
// policy, the floor, every ref, every ref log entry, every version folder
// (records and markers), the data-file table of every catalog it keeps or
// retires (each checked against its record's sha256 first), and the listing
// of data/.
//
// Errors wrap ErrGCRefused and name the thing when gc must not run: a ref
// that is empty, garbage or names a missing version; HEAD unreadable; a
// record, marker, ref log entry, policy or floor that does not parse; a
// catalog in retention that is missing or fails its checksum; a data-file
// path that cannot be normalised.
func (r *Repo) PlanGC(ctx context.Context, o GCOptions) (*GCPlan, error) {
	start := time.Now()
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	refuse := func(err error) (*GCPlan, error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrGCRefused, err)
	}
	in, floorTok, policyTok, err := r.gcInput(ctx, now)
	if err != nil {
		return refuse(err)
	}
	d, err := retention.Decide(in)
	if err != nil {
		return refuse(err)
	}
	plan := &GCPlan{Now: now.UTC(), Policy: in.Policy, Decision: d, floorTok: floorTok, policyTok: policyTok, refs: map[refs.Name]version.ID{}, marked: map[version.ID]bool{}, DataFiles: []retention.DataDeletion{}}
	for _, ref := range in.Refs {
		plan.refs[ref.Name] = ref.ID
	}
	plan.known = map[version.ID]bool{}
	for id := range in.Versions {
		plan.known[id] = true
	}
	if in.Floor != nil {
		plan.FloorGeneration = in.Floor.Generation
	}
	for id, v := range in.Versions {
		if v.Marker != nil {
			plan.marked[id] = true
		}
	}

	// Step 3's inputs: every catalog in retention, then every catalog
	// leaving it, then the markers of versions retired before.
	norm, err := r.normaliser()
	if err != nil {
		return refuse(err)
	}
	dp := retention.NewDataPlanner(norm)
	tmp, err := os.MkdirTemp("", "fdl-gc-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	live := make([]*version.Record, 0, len(d.Live))
	for id := range d.Live {
		live = append(live, in.Versions[id].Record)
	}
	slices.SortFunc(live, func(a, b *version.Record) int { return strings.Compare(string(a.ID), string(b.ID)) })
	err = r.scanCatalogs(ctx, live, tmp, o.Workers, &plan.Timing, nil, func(rec *version.Record, files []ducklake.DataFile) error {
		return dp.AddLive(rec.ID, d.Live[rec.ID], files)
	})
	if err != nil {
		return refuse(fmt.Errorf("a version in retention: %w", err))
	}
	var leaving []*version.Record
	index := map[version.ID]int{}
	for i := range d.Retire {
		rt := &d.Retire[i]
		v := in.Versions[rt.ID]
		switch {
		case v.Marker != nil:
			dp.AddMarker(rt.ID, v.Marker.DataFiles)
		case v.Has(version.CatalogFile):
			leaving = append(leaving, v.Record)
			index[rt.ID] = i
		}
	}
	// A damaged catalog leaving retention is deleted unread: it is going
	// anyway, and the files only it lists go as unlisted files after the
	// grace period (a catalog in retention that is damaged stops gc).
	unreadable := func(rec *version.Record, err error) bool {
		if !errors.Is(err, ErrChecksum) && !errors.Is(err, ducklake.ErrCorrupt) && !errors.Is(err, ducklake.ErrNotCatalog) {
			return false
		}
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("version %s (seq %d) leaves retention with a catalog that cannot be read (%v): it is deleted unread, and the data files only it listed are deleted as files no catalog lists, once older than the grace period", rec.ID, rec.Seq, err))
		return true
	}
	err = r.scanCatalogs(ctx, leaving, tmp, o.Workers, &plan.Timing, unreadable, func(rec *version.Record, files []ducklake.DataFile) error {
		rt := &d.Retire[index[rec.ID]]
		var err error
		rt.Frees, err = dp.AddRetiring(rec.ID, files)
		rt.FreesCount = len(rt.Frees)
		return err
	})
	if err != nil {
		return refuse(fmt.Errorf("a version leaving retention: %w", err))
	}
	for id, v := range in.Versions {
		if v.Marker != nil && !slices.ContainsFunc(d.Retire, func(rt retention.Retire) bool { return rt.ID == id }) {
			dp.AddMarker(id, v.Marker.DataFiles)
		}
	}
	var listing []store.ObjectInfo
	if err := r.st.List(ctx, DataPrefix, func(oi store.ObjectInfo) error {
		listing = append(listing, oi)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list %s: %w", DataPrefix, err)
	}
	plan.DataFiles = dp.Plan(listing, now, in.Policy.Grace)
	plan.Data = dp.Stats()
	if files, ok := r.st.(store.LocalFiles); ok {
		plan.DataFiles = guardFolderStore(files, norm, dp, plan.DataFiles, &plan.Warnings)
	}
	plan.Temps = []store.ObjectInfo{}
	if err := r.temps(ctx, func(oi store.ObjectInfo) error {
		if now.Sub(oi.ModTime) > time.Duration(in.Policy.Grace) {
			plan.Temps = append(plan.Temps, oi)
		} else {
			plan.YoungTemps++
		}
		return nil
	}); err != nil {
		return nil, err
	}

	t := &plan.Totals
	for _, rt := range d.Retire {
		if len(rt.Keys) > 0 {
			t.Catalogs++
			t.CatalogBytes += rt.Bytes
		}
	}
	for _, f := range plan.DataFiles {
		t.DataFiles++
		t.DataBytes += f.Size
	}
	for _, a := range d.Abandoned {
		t.Abandoned++
		t.AbandonedBytes += a.Bytes
	}
	for _, f := range plan.Temps {
		t.Temps++
		t.TempBytes += f.Size
	}
	t.Bytes = t.CatalogBytes + t.DataBytes + t.AbandonedBytes + t.TempBytes
	plan.Timing.TotalMS = time.Since(start).Milliseconds()
	return plan, nil
}

// guardFolderStore is the last check of gc's data step on a folder store,
// where symbolic links can give one file several paths (data/ on another
// disk, a folder inside data/ linked elsewhere). It keeps, with a warning,
// every planned deletion whose file
//   - lies, with links resolved, outside every data folder location (a
//     link inside data/ pointing out of the repository: DESIGN.md §5a), or
//   - is the same file (device and inode) as one a catalog in retention
//     can read at or after its floor or names outside the repository,
//     however each is spelled (DESIGN.md §4.7: nothing reachable is
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

// gcInput reads what the planner decides from, refusing (with the thing
// named) what gc must not run over; it returns the tokens of the floor and
// the policy it read.
func (r *Repo) gcInput(ctx context.Context, now time.Time) (in *retention.Input, floorTok, policyTok store.Token, err error) {
	in = &retention.Input{Now: now, Versions: map[version.ID]*retention.VersionState{}}
	if in.Policy, policyTok, err = r.Policy(ctx); err != nil {
		return nil, "", "", err
	}
	if in.Floor, floorTok, err = r.Floor(ctx); err != nil {
		return nil, "", "", err
	}
	if _, err := r.refs.Head(ctx); err != nil {
		return nil, "", "", err
	}
	good, bad, err := r.refs.List(ctx, "refs/")
	if err != nil {
		return nil, "", "", err
	}
	if len(bad) > 0 {
		return nil, "", "", fmt.Errorf("gc refuses to run while a ref cannot be read, since it may protect versions: %w", errors.Join(bad...))
	}
	for _, ref := range good {
		in.Refs = append(in.Refs, retention.Ref{Name: ref.Name, ID: ref.ID})
	}
	if in.Logged, err = r.logIDs(ctx); err != nil {
		return nil, "", "", err
	}
	err = r.st.List(ctx, VersionsPrefix, func(o store.ObjectInfo) error {
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
		return nil, "", "", fmt.Errorf("list versions: %w", err)
	}
	r.forgetIDs()
	for id, v := range in.Versions {
		if v.Has(version.RecordFile) {
			if v.Record, err = r.Record(ctx, id); err != nil {
				if errors.Is(err, version.ErrBadRecord) {
					err = fmt.Errorf("%w; gc will not guess what a version folder it cannot read protects: repair the record, or, if %s is not a version fdl wrote (a copy, a hand edit) and no ref reaches it, move it out of versions/", err, r.st.Location(VersionKey(id, "")))
				}
				return nil, "", "", err
			}
		}
		if v.Has(retention.MarkerFile) {
			if v.Marker, err = r.Marker(ctx, id); err != nil {
				return nil, "", "", err
			}
		}
	}
	return in, floorTok, policyTok, nil
}

// normaliser places data-file paths for this repository: its data/ folder
// as reached now and as recorded in fdl.json at init (DESIGN.md §5a).
func (r *Repo) normaliser() (*retention.Normaliser, error) {
	_, local := r.st.(store.LocalFiles)
	return retention.NewNormaliser([]string{r.DataLocation(), r.cfg.DataPath}, local)
}

// scanCatalogs reads the data-file table of each catalog (in parallel,
// workers at a time; 0: scanWorkers) and hands each result to fn in the
// order of recs, from the calling goroutine. It stops at the first error,
// except one that skip (if not nil) accepts: that catalog is left out.
func (r *Repo) scanCatalogs(ctx context.Context, recs []*version.Record, tmp string, workers int, t *GCTiming, skip func(*version.Record, error) bool, fn func(*version.Record, []ducklake.DataFile) error) error {
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
				res.files, res.fetch, res.scan, res.err = r.scanCatalog(ctx, recs[i], tmp)
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

// scanCatalog checks a version's catalog against its record (size and
// sha256) and reads its data-file table (ducklake.Catalog.DataFiles: data
// and delete files, every row). On a folder store the file is checked and
// opened where it lies (frozen catalogs never change); elsewhere it is
// copied into tmp first (FetchCatalog). It returns the time spent checking
// (fetch) and opening and reading (scan).
func (r *Repo) scanCatalog(ctx context.Context, rec *version.Record, tmp string) ([]ducklake.DataFile, time.Duration, time.Duration, error) {
	t0 := time.Now()
	path := ""
	if files, ok := r.st.(store.LocalFiles); ok {
		path = files.LocalPath(VersionKey(rec.ID, version.CatalogFile))
		size, sum, err := FileDigest(path)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("version %s: catalog: %w", rec.ID, err)
		}
		if size != rec.Catalog.Size || sum != rec.Catalog.SHA256 {
			return nil, 0, 0, &ChecksumError{Version: rec.ID, WantSize: rec.Catalog.Size, GotSize: size, WantSHA: rec.Catalog.SHA256, GotSHA: sum, Location: path}
		}
	} else {
		path = filepath.Join(tmp, string(rec.ID)+".duckdb")
		if err := r.FetchCatalog(ctx, rec, path); err != nil {
			return nil, 0, 0, err
		}
		defer os.Remove(path)
	}
	t1 := time.Now()
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("version %s: %w", rec.ID, err)
	}
	files, err := c.DataFiles(ctx)
	c.Close()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("version %s: %w", rec.ID, err)
	}
	return files, t1.Sub(t0), time.Since(t1), nil
}

// GCResult says what ApplyGC did.
type GCResult struct {
	FloorMoved bool  `json:"floor_moved"`
	Floor      int64 `json:"floor_generation"`
	Marked     int   `json:"marked"`  // markers written
	Excised    int   `json:"excised"` // catalogs and dataset.json files deleted
	DataFiles  int   `json:"data_files"`
	Abandoned  int   `json:"abandoned"` // version folders deleted whole
	Temps      int   `json:"temps"`     // temporary files of interrupted writes deleted
	// Protected counts planned data deletions called off because a version
	// that appeared while gc ran (a push) lists the file.
	Protected int   `json:"protected"`
	Bytes     int64 `json:"bytes"`
	// Skipped are data files kept because a version listing them was not
	// marked (never expected; reported for audits).
	Skipped int `json:"skipped"`
}

// ApplyGC carries a plan out in four steps, each resumable: a crash at any
// point leaves a repository that verify accepts and that the next gc
// finishes (DESIGN.md §4.7; docs/spec.md §16):
//
//  1. move the floor: one compare-and-swap of retention/floor.json from the
//     version the plan read (ErrRetentionConflict if it changed: nothing
//     is deleted, plan again); then re-read the refs, and stop if one now
//     points at a version the floor retires (a tag made meanwhile);
//  2. for each version leaving retention: write its marker (create-only),
//     then delete its catalog and dataset.json — never version.json;
//     refused (ErrAheadOfFloor) for a version the stored floor does not
//     retire;
//  3. delete the plan's data files (only keys under data/; a file freed by
//     retirement only once every retired version listing it is marked);
//  4. delete abandoned version folders (version.json first, the catalog
//     last), unless a ref now points at one; then the temporary files of
//     interrupted writes older than the grace period (folder stores).
//
// It deletes nothing outside data/ and versions/.
func (r *Repo) ApplyGC(ctx context.Context, p *GCPlan) (*GCResult, error) {
	res := &GCResult{Floor: p.FloorGeneration}
	floor, _, err := r.Floor(ctx)
	if err != nil {
		return res, err
	}
	// Step 1.
	if p.FloorMoves {
		f := *p.NewFloor
		f.MovedBy = r.Actor()
		b, err := f.Marshal()
		if err != nil {
			return res, err
		}
		r.step("gc:floor")
		movedTok, err := r.st.Swap(ctx, retention.FloorKey, p.floorTok, b)
		if err != nil {
			if errors.Is(err, store.ErrConflict) {
				return res, fmt.Errorf("%s moved since gc planned (another gc or fdl retention ran): %w; nothing was deleted: run fdl gc again", retention.FloorKey, ErrRetentionConflict)
			}
			return res, fmt.Errorf("move the floor: %w", err)
		}
		old := floor
		floor = &f
		res.FloorMoved, res.Floor = true, f.Generation
		if err := r.recheckAfterFloor(ctx, p, floor); err != nil {
			if r.restoreFloor(ctx, &f, movedTok, old) {
				res.FloorMoved, res.Floor = false, f.Generation+1
				return res, fmt.Errorf("%w (the floor was put back: nothing changed for readers)", err)
			}
			return res, err
		}
	} else if err := r.recheckAfterFloor(ctx, p, floor); err != nil {
		return res, err
	}
	// Step 2.
	for _, rt := range p.Retire {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		wrote, n, err := r.excise(ctx, floor, rt.ID, rt.Frees, rt.Marked, res)
		if err != nil {
			return res, err
		}
		if wrote {
			res.Marked++
		}
		p.marked[rt.ID] = true
		res.Bytes += n
	}
	// Step 3.
	if err := r.protectNewVersions(ctx, p, res); err != nil {
		return res, err
	}
	for _, f := range p.DataFiles {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if f.Reason == retention.ReasonRetired && slices.ContainsFunc(f.RetiredBy, func(id version.ID) bool { return !p.marked[id] }) {
			res.Skipped++
			continue
		}
		r.step("gc:data")
		if err := r.gcDelete(ctx, f.Key); err != nil {
			return res, err
		}
		res.DataFiles++
		res.Bytes += f.Size
	}
	// Step 4.
	if len(p.Abandoned) > 0 {
		good, _, err := r.refs.List(ctx, "refs/")
		if err != nil {
			return res, err
		}
		held := map[version.ID]bool{}
		for _, ref := range good {
			held[ref.ID] = true
		}
		for _, a := range p.Abandoned {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if held[a.ID] {
				continue
			}
			keys := slices.Clone(a.Keys)
			// The catalog last: while it is there, readers see an
			// incomplete version, never an unknown folder.
			slices.SortStableFunc(keys, func(x, y string) int {
				cx, cy := strings.HasSuffix(x, "/"+version.CatalogFile), strings.HasSuffix(y, "/"+version.CatalogFile)
				switch {
				case cx == cy:
					return 0
				case cx:
					return 1
				}
				return -1
			})
			slices.SortStableFunc(keys, func(x, y string) int {
				rx, ry := strings.HasSuffix(x, "/"+version.RecordFile), strings.HasSuffix(y, "/"+version.RecordFile)
				switch {
				case rx == ry:
					return 0
				case rx:
					return -1
				}
				return 1
			})
			for _, k := range keys {
				if !strings.HasPrefix(k, VersionKey(a.ID, "")) {
					return res, fmt.Errorf("gc: %s is not inside version folder %s", k, a.ID)
				}
				r.step("gc:abandoned")
				if err := r.gcDelete(ctx, k); err != nil {
					return res, err
				}
			}
			res.Abandoned++
			res.Bytes += a.Bytes
		}
	}
	if tc, ok := r.st.(store.TempCleaner); ok {
		for _, f := range p.Temps {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			r.step("gc:temp")
			if err := tc.RemoveTemp(ctx, f.Key); err != nil {
				return res, err
			}
			res.Temps++
			res.Bytes += f.Size
		}
	}
	r.forgetIDs()
	return res, nil
}

// temps calls fn for each temporary file of an interrupted write under
// data/ and versions/ (store.TempCleaner; none on object stores).
func (r *Repo) temps(ctx context.Context, fn func(store.ObjectInfo) error) error {
	tc, ok := r.st.(store.TempCleaner)
	if !ok {
		return nil
	}
	for _, prefix := range []string{DataPrefix, VersionsPrefix} {
		if err := tc.Temps(ctx, prefix, fn); err != nil {
			return err
		}
	}
	return nil
}

// recheckAfterFloor runs once the floor holds what the plan wrote, before
// anything is deleted: what changed while gc planned must not lose a
// version the repository now keeps. It stops gc (ErrRetentionConflict,
// nothing deleted; the next gc takes such versions back into retention)
// when retention/policy.json changed since the plan read it, when a ref
// points at a version the floor retires, or when a branch created or moved
// since the plan keeps a retired version among its last keep_last versions.
func (r *Repo) recheckAfterFloor(ctx context.Context, p *GCPlan, floor *retention.Floor) error {
	if _, tok, err := r.Policy(ctx); err != nil {
		return err
	} else if tok != p.policyTok {
		return fmt.Errorf("%s changed while gc ran (fdl retention): %w; nothing was deleted: run fdl gc again, which applies the new policy", retention.PolicyKey, ErrRetentionConflict)
	}
	if len(floor.RetiredList()) == 0 {
		return nil
	}
	again := "nothing was deleted: run fdl gc again, which takes it back into retention"
	good, bad, err := r.refs.List(ctx, "refs/")
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: a ref cannot be read, and it may protect versions: %w", ErrGCRefused, errors.Join(bad...))
	}
	for _, ref := range good {
		if floor.Has(ref.ID) && !p.marked[ref.ID] {
			return fmt.Errorf("%s was pointed at version %s while gc ran, and the floor (generation %d) takes that version out of retention: %w; %s", ref.Name, ref.ID, floor.Generation, ErrAheadOfFloor, again)
		}
		if !ref.Name.IsBranch() || p.refs[ref.Name] == ref.ID {
			continue
		}
		id := ref.ID
		for range p.Policy.KeepLast {
			if id == "" {
				break
			}
			if floor.Has(id) && !p.marked[id] {
				return fmt.Errorf("%s was created or moved while gc ran and keeps version %s among its last %d, which the floor (generation %d) takes out of retention: %w; %s", ref.Name, id, p.Policy.KeepLast, floor.Generation, ErrRetentionConflict, again)
			}
			rec, err := r.Record(ctx, id)
			if err != nil {
				return err
			}
			id = rec.Parent()
		}
	}
	return nil
}

// restoreFloor undoes gc's own floor move when gc stops right after it
// (recheckAfterFloor): nothing is marked or deleted yet, so a new floor
// with old's retirements (none when there was no floor) is safe, and it
// spares readers a window where versions gc will keep are refused. One
// compare-and-swap from the token of gc's move; false when another writer
// moved the floor since (then the next gc sorts it out).
func (r *Repo) restoreFloor(ctx context.Context, moved *retention.Floor, movedTok store.Token, old *retention.Floor) bool {
	back := retention.Floor{Format: retention.Format, Generation: moved.Generation + 1, MovedAt: time.Now().UTC().Truncate(time.Second),
		MovedBy: r.Actor(), Policy: moved.Policy, Branches: []retention.BranchFloor{}, Retired: []retention.Retirement{}}
	if old != nil {
		back.Policy, back.Branches, back.Retired = old.Policy, old.Branches, old.Retired
	}
	b, err := back.Marshal()
	if err != nil {
		return false
	}
	_, err = r.st.Swap(ctx, retention.FloorKey, movedTok, b)
	return err == nil
}

// protectNewVersions runs before gc deletes data files: a version folder
// that appeared since the plan (a push, complete or still uploading) may
// list a file the plan deletes — a file no catalog listed then, written by
// a working catalog long before its commit. It reads each new catalog's
// data-file table and calls off the planned deletion of every file it
// lists. A new catalog that cannot be read stops gc before any data file is
// deleted (ErrRetentionConflict: run gc again).
func (r *Repo) protectNewVersions(ctx context.Context, p *GCPlan, res *GCResult) error {
	if len(p.DataFiles) == 0 {
		return nil
	}
	var fresh []version.ID
	err := r.st.List(ctx, VersionsPrefix, func(o store.ObjectInfo) error {
		if id, file, ok := splitVersionKey(o.Key); ok && file == version.CatalogFile && !p.known[id] {
			if _, err := version.ParseID(string(id)); err == nil {
				fresh = append(fresh, id)
			}
		}
		return nil
	})
	if err != nil || len(fresh) == 0 {
		return err
	}
	norm, err := r.normaliser()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "fdl-gc-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	listed := map[string]bool{}
	for _, id := range fresh {
		files, err := r.readCatalogUnchecked(ctx, id, tmp)
		if err != nil {
			return fmt.Errorf("version %s appeared while gc ran and its catalog cannot be read (%v): %w; no data file was deleted: run fdl gc again", id, err, ErrRetentionConflict)
		}
		for _, f := range files {
			if pl, err := norm.Place(f.ResolvedPath); err == nil && pl.Key != "" {
				listed[pl.Key] = true
			}
		}
	}
	kept := p.DataFiles[:0]
	for _, f := range p.DataFiles {
		if listed[f.Key] {
			res.Protected++
			continue
		}
		kept = append(kept, f)
	}
	p.DataFiles = kept
	return nil
}

// readCatalogUnchecked reads the data-file table of version id's catalog as
// the store holds it now, with no record to check it against (the version
// may still be uploading): in place on a folder store, else copied into
// tmp.
func (r *Repo) readCatalogUnchecked(ctx context.Context, id version.ID, tmp string) ([]ducklake.DataFile, error) {
	key := VersionKey(id, version.CatalogFile)
	path := ""
	if files, ok := r.st.(store.LocalFiles); ok {
		path = files.LocalPath(key)
	} else {
		rc, _, err := r.st.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		f, err := os.CreateTemp(tmp, "new-*.duckdb")
		if err != nil {
			return nil, err
		}
		path = f.Name()
		defer os.Remove(path)
		_, err = io.Copy(f, rc)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.DataFiles(ctx)
}

// Excise takes one version's bytes out of the store after the floor
// retired it: it writes the version's marker (create-only; frees are the
// data-file keys only its catalog listed, see retention.Marker) and deletes
// its catalog and dataset.json, never version.json. Errors:
// ErrAheadOfFloor when neither the stored floor nor an existing marker
// retires the version: move the floor first (fdl gc --yes does both).
func (r *Repo) Excise(ctx context.Context, id version.ID, frees []string) error {
	floor, _, err := r.Floor(ctx)
	if err != nil {
		return err
	}
	_, _, err = r.excise(ctx, floor, id, frees, false, &GCResult{})
	return err
}

// excise is gc step 2 for one version; marked says its marker is known to
// exist. It returns whether it wrote the marker and the bytes deleted.
func (r *Repo) excise(ctx context.Context, floor *retention.Floor, id version.ID, frees []string, marked bool, res *GCResult) (bool, int64, error) {
	wrote := false
	if !marked {
		m, err := r.Marker(ctx, id)
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
				return false, 0, fmt.Errorf("version %s: deleting its catalog is refused: the retention floor (generation %d) does not take it out of retention and it has no %s: %w; move the floor first (fdl gc --yes plans and moves it)", id, gen, retention.MarkerFile, ErrAheadOfFloor)
			}
			if frees == nil {
				frees = []string{}
			}
			mk := &retention.Marker{Format: retention.Format, Version: id, RetiredAt: floor.MovedAt, Floor: floor.Generation, Reason: rt.Reason, DataFiles: frees}
			b, err := mk.Marshal()
			if err != nil {
				return false, 0, err
			}
			r.step("gc:marker")
			if err := r.st.Create(ctx, VersionKey(id, retention.MarkerFile), strings.NewReader(string(b))); err != nil && !errors.Is(err, store.ErrExist) {
				return false, 0, fmt.Errorf("write the marker of version %s: %w", id, err)
			}
			wrote = true
		}
	}
	var n int64
	for _, f := range [][2]string{{version.CatalogFile, "gc:catalog"}, {version.DatasetFile, "gc:dataset"}} {
		key := VersionKey(id, f[0])
		oi, err := r.st.Stat(ctx, key)
		if errors.Is(err, store.ErrNotExist) {
			continue
		}
		if err != nil {
			return wrote, n, err
		}
		r.step(f[1])
		if err := r.gcDelete(ctx, key); err != nil {
			return wrote, n, err
		}
		res.Excised++
		n += oi.Size
	}
	return wrote, n, nil
}

// gcDelete deletes one object, refusing any key outside data/ and versions/
// (DESIGN.md §5a: gc never deletes anything else).
func (r *Repo) gcDelete(ctx context.Context, key string) error {
	if !strings.HasPrefix(key, DataPrefix) && !strings.HasPrefix(key, VersionsPrefix) {
		return fmt.Errorf("gc: refusing to delete %s: gc deletes only under %s and %s", key, DataPrefix, VersionsPrefix)
	}
	if err := r.st.Delete(ctx, key); err != nil {
		return fmt.Errorf("gc: delete %s: %w", key, err)
	}
	return nil
}
