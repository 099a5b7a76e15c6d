package retention

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Object names inside versions/<id>/ that gc handles.
const (
	catalogFile = version.CatalogFile
	datasetFile = version.DatasetFile
	recordFile  = version.RecordFile
)

// InconsistentError: the repository holds something gc must not plan
// over (a dangling ref, a record or catalog missing where one is needed);
// a full check (verify) names every such problem. Why says what and that
// gc refuses; RepairRef says the way out is repairing a ref.
type InconsistentError struct {
	Why       string
	RepairRef bool
}

func (e *InconsistentError) Error() string {
	if e.RepairRef {
		return e.Why + "; repair the ref"
	}
	return e.Why
}

// Ref is a readable ref and the version it holds.
type Ref struct {
	Name refs.Name
	ID   version.ID
}

// VersionState is what the store holds of one version folder.
type VersionState struct {
	ID version.ID
	// Record is version.json; nil when the folder has none (incomplete).
	Record *version.Record
	// Marker is retired.json; nil when the version is not retired.
	Marker *Marker
	// Objects are every object under versions/<id>/ (List order).
	Objects []store.ObjectInfo
}

// Has reports whether versions/<id>/<file> exists.
func (v *VersionState) Has(file string) bool {
	for _, o := range v.Objects {
		if strings.HasSuffix(o.Key, "/"+file) {
			return true
		}
	}
	return false
}

// Newest returns the latest modification time of the folder's objects.
func (v *VersionState) Newest() time.Time {
	var t time.Time
	for _, o := range v.Objects {
		if o.ModTime.After(t) {
			t = o.ModTime
		}
	}
	return t
}

// Input is what the planner decides from, read by package repo.
type Input struct {
	Now    time.Time
	Policy Policy
	// Floor is the floor as stored (nil: it never moved).
	Floor *Floor
	// Refs are every readable ref: branches, tags, requests.
	Refs []Ref
	// Logged are the version ids ref log entries name (old and new).
	Logged []version.ID
	// LogEntries are the ref log entries themselves (gc looks at them
	// again before deleting: moves in progress); Decide does not read them.
	LogEntries []refs.LogEntry
	// Versions are every version folder, by id.
	Versions map[version.ID]*VersionState
}

// Kept is a version in retention and the rules that keep it.
type Kept struct {
	ID  version.ID `json:"id"`
	Seq int64      `json:"seq"`
	Why []string   `json:"reasons"`
}

// Retire is a version out of retention whose bytes gc deletes: its catalog
// and dataset.json, after writing its marker (gc step 2).
type Retire struct {
	ID        version.ID `json:"id"`
	Seq       int64      `json:"seq"`
	CreatedAt time.Time  `json:"created_at"`
	Reason    string     `json:"reason"`
	// Marked is true when its marker exists already (a gc that stopped
	// half way); Pending when the stored floor lists it already.
	Marked  bool `json:"marked"`
	Pending bool `json:"pending"`
	// Keys are the objects to delete (catalog, dataset.json) and Bytes
	// their size.
	Keys  []string `json:"keys"`
	Bytes int64    `json:"bytes"`
	// Frees are the data-file keys its marker records (no catalog in
	// retention lists them); filled by DataPlanner.AddRetiring.
	Frees []string `json:"-"`
	// FreesCount is len(Frees) (or the marker's count), for output.
	FreesCount int `json:"frees"`
}

// Abandoned is a version folder gc deletes whole (step 4): incomplete (no
// version.json) or complete but reached by no ref and no ref log, and older
// than the grace period by the store's modification time.
type Abandoned struct {
	ID       version.ID `json:"id"`
	Complete bool       `json:"complete"`
	Newest   time.Time  `json:"newest"`
	Reason   string     `json:"reason"`
	Keys     []string   `json:"keys"`
	Bytes    int64      `json:"bytes"`
}

// Decision is the version side of a plan.
type Decision struct {
	Kept      []Kept      `json:"kept"`
	Retire    []Retire    `json:"retire"`
	Abandoned []Abandoned `json:"abandoned"`
	// Young are versions no ref or ref log reaches, younger than the grace
	// period: left alone (an in-flight push).
	Young []version.ID `json:"young"`
	// Branches is each branch's retention window.
	Branches []BranchFloor `json:"branches"`
	// Live maps every version whose catalog stays in retention to the
	// snapshot from which its catalog's data files are kept (its floor).
	Live map[version.ID]int64 `json:"-"`
	// FloorMoves is true when the floor must move (step 1); NewFloor is
	// the floor to write then. Unretire lists versions the stored floor
	// retired that are back in retention (nothing of them was deleted).
	FloorMoves bool         `json:"floor_moves"`
	NewFloor   *Floor       `json:"new_floor,omitempty"`
	Unretire   []version.ID `json:"unretire"`
	// Warnings are facts worth a look that do not stop gc.
	Warnings []string `json:"warnings"`
}

// maxFloorRetired is the most versions a floor lists as awaiting deletion
// (each entry is about 150 bytes; the floor must stay under
// store.MaxSwapSize, 1 MiB). A variable so tests can lower it.
var maxFloorRetired = 4000

// Decide applies the policy to the versions (docs/spec.md §10.7; docs/spec.md
// §16 steps 1, 2 and 4). It does no I/O. Errors name what makes gc refuse:
// a ref holding a version without a complete record, a version in
// retention whose catalog is missing without a marker, a version a ref
// reaches that has no record.
func Decide(in *Input) (*Decision, error) {
	x := &decider{in: in, d: &Decision{Live: map[version.ID]int64{}, Kept: []Kept{}, Retire: []Retire{}, Abandoned: []Abandoned{},
		Young: []version.ID{}, Unretire: []version.ID{}, Warnings: []string{}},
		fromRefs: map[version.ID]bool{}, fromLogs: map[version.ID]bool{}, keep: map[version.ID][]string{}, retiring: map[version.ID]bool{}}
	for id := range in.Versions {
		x.ids = append(x.ids, id)
	}
	slices.Sort(x.ids)
	if err := x.reach(); err != nil {
		return nil, err
	}
	x.rules()
	for _, id := range x.ids {
		if err := x.classify(id); err != nil {
			return nil, err
		}
	}
	x.capRetire()
	x.floors()
	x.moveFloor()
	if x.d.Branches == nil {
		x.d.Branches = []BranchFloor{}
	}
	return x.d, nil
}

// decider is one run of Decide: its input, the decision it builds and what
// the steps hand each other.
type decider struct {
	in *Input
	d  *Decision
	// fromRefs and fromLogs are the versions a ref, or a ref log entry,
	// reaches through parents.
	fromRefs, fromLogs map[version.ID]bool
	// keep lists, per version, the rules that keep it in retention.
	keep map[version.ID][]string
	// retiring are the versions leaving retention in this decision.
	retiring map[version.ID]bool
	ids      []version.ID // every version folder, sorted
}

func (x *decider) rec(id version.ID) *version.Record {
	if v := x.in.Versions[id]; v != nil {
		return v.Record
	}
	return nil
}

func (x *decider) reachable(id version.ID) bool { return x.fromRefs[id] || x.fromLogs[id] }

// reach fills fromRefs and fromLogs, over every parent (docs/spec.md §10.7:
// nothing reachable from a ref's retained versions is deleted). It refuses
// a ref holding a version without a complete record, and an ancestor of a
// ref that has a folder but no record.
func (x *decider) reach() error {
	for _, ref := range x.in.Refs {
		if x.rec(ref.ID) == nil {
			return &InconsistentError{Why: fmt.Sprintf("%s holds version %s, which is not a complete version in the store: gc refuses to run while a ref dangles", ref.Name, ref.ID), RepairRef: true}
		}
	}
	walk := func(starts []version.ID, seen map[version.ID]bool) {
		queue := append([]version.ID(nil), starts...)
		for len(queue) > 0 {
			id := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if seen[id] {
				continue
			}
			seen[id] = true
			if r := x.rec(id); r != nil {
				queue = append(queue, r.Parents...)
			}
		}
	}
	starts := make([]version.ID, 0, len(x.in.Refs))
	for _, ref := range x.in.Refs {
		starts = append(starts, ref.ID)
	}
	walk(starts, x.fromRefs)
	walk(x.in.Logged, x.fromLogs)
	for id := range x.fromRefs {
		if x.in.Versions[id] != nil && x.rec(id) == nil {
			return &InconsistentError{Why: fmt.Sprintf("version %s is an ancestor of a ref but has no %s: gc refuses to run", id, recordFile)}
		}
	}
	return nil
}

// rules records which rules keep what: a ref pointing at it, keep_last
// along each branch, keep_within or no rule at all for what a ref or ref
// log reaches.
func (x *decider) rules() {
	add := func(id version.ID, why string) {
		if !slices.Contains(x.keep[id], why) {
			x.keep[id] = append(x.keep[id], why)
		}
	}
	for _, ref := range x.in.Refs {
		add(ref.ID, fmt.Sprintf("%s %s points at it", ref.Name.Kind(), ref.Name.Short()))
	}
	x.requestRule(add)
	p := x.in.Policy
	for _, ref := range x.in.Refs {
		if p.KeepLast == 0 || !ref.Name.IsBranch() {
			continue
		}
		id := ref.ID
		for i := 0; i < p.KeepLast && id != ""; i++ {
			add(id, fmt.Sprintf("one of the last %d versions of branch %s", p.KeepLast, ref.Name.Short()))
			r := x.rec(id)
			if r == nil {
				break
			}
			id = r.Parent()
		}
	}
	for _, id := range x.ids {
		r := x.rec(id)
		if r == nil || !x.reachable(id) {
			continue
		}
		if p.KeepsEverything() {
			add(id, "the policy keeps every version")
		} else if p.KeepWithin > 0 && x.in.Now.Sub(r.CreatedAt) < time.Duration(p.KeepWithin) {
			add(id, fmt.Sprintf("created less than %s ago", p.KeepWithin))
		}
	}
}

// requestRule keeps what each request holds: the versions approving it
// would add to a branch — its first-parent history back to the first
// version some branch's first-parent history holds (docs/spec.md §13).
func (x *decider) requestRule(add func(version.ID, string)) {
	var onBranch map[version.ID]bool
	for _, ref := range x.in.Refs {
		if k := ref.Name.Kind(); k == refs.KindBranch || k == refs.KindTag {
			continue // a ref of another kind (refs/custom/x) is kept as a request is
		}
		if onBranch == nil {
			onBranch = map[version.ID]bool{}
			for _, b := range x.in.Refs {
				for id := b.ID; b.Name.IsBranch() && id != "" && !onBranch[id]; {
					onBranch[id] = true
					r := x.rec(id)
					if r == nil {
						break
					}
					id = r.Parent()
				}
			}
		}
		why := fmt.Sprintf("request %s offers it", ref.Name.Short())
		if !ref.Name.IsRequest() {
			why = fmt.Sprintf("ref %s reaches it", ref.Name)
		}
		for id := ref.ID; id != "" && !onBranch[id]; {
			add(id, why)
			r := x.rec(id)
			if r == nil {
				break
			}
			id = r.Parent()
		}
	}
}

// classify sorts one version folder: retired before (marked), kept, leaving
// retention now, or unreached (young, or abandoned).
func (x *decider) classify(id version.ID) error {
	in, d, p := x.in, x.d, x.in.Policy
	v := in.Versions[id]
	r := v.Record
	switch {
	case r != nil && v.Marker != nil:
		if len(x.keep[id]) > 0 {
			d.Warnings = append(d.Warnings, fmt.Sprintf("version %s (seq %d) is kept by the policy (%s) but left retention on %s: its catalog is gone for good", id, r.Seq, strings.Join(x.keep[id], "; "), v.Marker.RetiredAt.Format(time.RFC3339)))
		}
		if keys, n := excisable(v); len(keys) > 0 {
			d.Retire = append(d.Retire, Retire{ID: id, Seq: r.Seq, CreatedAt: r.CreatedAt, Reason: v.Marker.Reason,
				Marked: true, Pending: in.Floor.Has(id), Keys: keys, Bytes: n, FreesCount: len(v.Marker.DataFiles)})
		}
	case r != nil && x.reachable(id) && len(x.keep[id]) > 0:
		if !v.Has(catalogFile) {
			return &InconsistentError{Why: fmt.Sprintf("version %s (seq %d) is in retention (%s) but its catalog %s is missing and it has no %s: gc refuses to run, since it cannot tell which data files that version reads", id, r.Seq, strings.Join(x.keep[id], "; "), catalogFile, MarkerFile)}
		}
		d.Kept = append(d.Kept, Kept{ID: id, Seq: r.Seq, Why: x.keep[id]})
	case r != nil && x.reachable(id):
		if !v.Has(catalogFile) && !in.Floor.Has(id) {
			// Lost outside gc; it leaves retention now anyway. Its own
			// files cannot be learnt: no catalog lists them any more, so
			// they go as unlisted files, after the grace period.
			d.Warnings = append(d.Warnings, fmt.Sprintf("version %s (seq %d) leaves retention with its catalog %s already missing (deleted outside gc): the data files only it listed are deleted as files no catalog lists, once older than the grace period", id, r.Seq, catalogFile))
		}
		keys, n := excisable(v)
		d.Retire = append(d.Retire, Retire{ID: id, Seq: r.Seq, CreatedAt: r.CreatedAt, Reason: retireReason(p, r, x.fromRefs[id], in.Now),
			Pending: in.Floor.Has(id), Keys: keys, Bytes: n})
		x.retiring[id] = true
	case x.reachable(id):
		return &InconsistentError{Why: fmt.Sprintf("version %s has no %s but a ref log reaches it: gc refuses to run", id, recordFile)}
	default:
		x.unreached(id, v)
	}
	return nil
}

// unreached sorts a folder no ref or ref log reaches: young (left alone,
// its catalog in retention: an in-flight push) or abandoned (deleted
// whole, version.json first: from then on readers see the folder as
// incomplete, never as a version with missing parts).
func (x *decider) unreached(id version.ID, v *VersionState) {
	d, r := x.d, v.Record
	newest := v.Newest()
	if Young(x.in.Now, newest, x.in.Policy.Grace) {
		d.Young = append(d.Young, id)
		if r != nil && v.Has(catalogFile) {
			d.Live[id] = 0 // floor filled by floors
		}
		return
	}
	why := "no version.json (an upload that never finished)"
	if r != nil {
		why = "no ref and no ref log reaches it (a push that lost its race or never moved its branch)"
	}
	a := Abandoned{ID: id, Complete: r != nil, Newest: newest, Reason: fmt.Sprintf("%s; last written %s, older than the grace period %s", why, newest.UTC().Format(time.RFC3339), x.in.Policy.Grace)}
	for _, o := range v.Objects {
		a.Keys = append(a.Keys, o.Key)
		a.Bytes = store.AddSize(a.Bytes, o.Size)
	}
	sort.SliceStable(a.Keys, func(i, j int) bool {
		return strings.HasSuffix(a.Keys[i], "/"+recordFile) && !strings.HasSuffix(a.Keys[j], "/"+recordFile)
	})
	d.Abandoned = append(d.Abandoned, a)
}

// capRetire keeps the floor one compare-and-swap object
// (store.MaxSwapSize): a move lists at most maxFloorRetired versions
// awaiting deletion. The newest of the versions beyond that stay in
// retention until the next gc.
func (x *decider) capRetire() {
	d := x.d
	var fresh []int
	pendingOld := 0
	for i, rt := range d.Retire {
		switch {
		case rt.Marked:
		case x.in.Floor.Has(rt.ID):
			pendingOld++
		default:
			fresh = append(fresh, i)
		}
	}
	room := max(maxFloorRetired-pendingOld, 0)
	if len(fresh) <= room {
		return
	}
	deferred := map[int]bool{}
	for _, i := range fresh[room:] {
		deferred[i] = true
		rt := d.Retire[i]
		d.Kept = append(d.Kept, Kept{ID: rt.ID, Seq: rt.Seq, Why: []string{fmt.Sprintf("deferred to the next gc: a floor move retires at most %d versions", maxFloorRetired)}})
		delete(x.retiring, rt.ID)
	}
	d.Warnings = append(d.Warnings, fmt.Sprintf("%d version(s) leave retention at the next gc: a floor move retires at most %d", len(deferred), maxFloorRetired))
	kept := d.Retire[:0]
	for i, rt := range d.Retire {
		if !deferred[i] {
			kept = append(kept, rt)
		}
	}
	d.Retire = kept
	slices.SortFunc(d.Kept, func(a, b Kept) int { return strings.Compare(string(a.ID), string(b.ID)) })
}

// floors fills Live with each catalog in retention's floor snapshot and
// Branches with each branch's retention window. In retention: kept, or
// young and unreachable; never retiring or marked.
func (x *decider) floors() {
	d := x.d
	for _, k := range d.Kept {
		d.Live[k.ID] = 0
	}
	inRetention := func(id version.ID) bool {
		_, ok := d.Live[id]
		return ok
	}
	for id := range d.Live {
		d.Live[id] = FloorSnapshot(id, x.rec, inRetention)
	}
	for _, ref := range x.in.Refs {
		if !ref.Name.IsBranch() {
			continue
		}
		f := floorVersion(ref.ID, x.rec, inRetention)
		fr := x.rec(f)
		d.Branches = append(d.Branches, BranchFloor{Branch: string(ref.Name), Head: ref.ID, Floor: f, Seq: fr.Seq, Snapshot: fr.DuckLake.Snapshot})
	}
}

// moveFloor decides whether the floor moves (a version newly out of
// retention, or one the stored floor retired back in it) and, if so, the
// floor to write: every version out of retention that still awaits its
// marker, catalog or dataset deletion.
func (x *decider) moveFloor() {
	d, in := x.d, x.in
	pending := map[version.ID]string{}
	for _, rt := range d.Retire {
		if !rt.Marked || len(rt.Keys) > 0 {
			pending[rt.ID] = rt.Reason
		}
	}
	if in.Floor != nil {
		for _, old := range in.Floor.Retired {
			if v := in.Versions[old.ID]; v != nil && v.Marker == nil && !x.retiring[old.ID] {
				d.Unretire = append(d.Unretire, old.ID)
			}
		}
	}
	newRetire := slices.ContainsFunc(d.Retire, func(rt Retire) bool { return !rt.Marked && !in.Floor.Has(rt.ID) })
	d.FloorMoves = newRetire || len(d.Unretire) > 0
	if !d.FloorMoves {
		return
	}
	f := &Floor{Format: Format, Generation: 1, MovedAt: in.Now.UTC().Truncate(time.Millisecond), Policy: in.Policy, Branches: d.Branches, Retired: []Retirement{}}
	if in.Floor != nil {
		f.Generation = in.Floor.Generation + 1
	}
	for id, why := range pending {
		f.Retired = append(f.Retired, Retirement{ID: id, Reason: why})
	}
	slices.SortFunc(f.Retired, func(a, b Retirement) int { return strings.Compare(string(a.ID), string(b.ID)) })
	d.NewFloor = f
}

// excisable returns the catalog and dataset.json keys of a version folder
// that are still there, and their size.
func excisable(v *VersionState) ([]string, int64) {
	var keys []string
	var n int64
	for _, o := range v.Objects {
		if strings.HasSuffix(o.Key, "/"+catalogFile) || strings.HasSuffix(o.Key, "/"+datasetFile) {
			keys = append(keys, o.Key)
			n = store.AddSize(n, o.Size)
		}
	}
	return keys, n
}

func retireReason(p Policy, r *version.Record, onRefs bool, now time.Time) string {
	var parts []string
	if !onRefs {
		parts = append(parts, "only ref logs reach it")
	} else if p.KeepLast > 0 {
		parts = append(parts, fmt.Sprintf("not among the last %d versions of any branch", p.KeepLast))
	}
	if p.KeepWithin > 0 {
		parts = append(parts, fmt.Sprintf("created %s, more than %s ago", r.CreatedAt.UTC().Format(time.RFC3339), p.KeepWithin))
	}
	parts = append(parts, "no ref points at it")
	return strings.Join(parts, "; ")
}

// FloorSnapshot returns the snapshot from which the catalog of version id
// keeps its data files: the DuckLake snapshot of the oldest version of the
// unbroken run of versions in retention that ends at id, following first
// parents (docs/spec.md §5.1: a file stays while it is visible at any snapshot
// at or after the floor). rec returns a version's record (nil if unknown);
// in reports whether a version is in retention.
func FloorSnapshot(id version.ID, rec func(version.ID) *version.Record, in func(version.ID) bool) int64 {
	if r := rec(floorVersion(id, rec, in)); r != nil {
		return r.DuckLake.Snapshot
	}
	return 0
}

func floorVersion(id version.ID, rec func(version.ID) *version.Record, in func(version.ID) bool) version.ID {
	floor := id
	seen := map[version.ID]bool{}
	for {
		r := rec(floor)
		if r == nil || seen[floor] {
			return floor
		}
		seen[floor] = true
		p := r.Parent()
		if p == "" || !in(p) || rec(p) == nil {
			return floor
		}
		floor = p
	}
}

// VisibleFrom reports whether a data-file row is visible at some snapshot
// at or after floor (docs/spec.md §5.1: visible at S when begin_snapshot <= S
// and (end_snapshot IS NULL or S < end_snapshot); the catalog reaches every
// snapshot up to its own, which is >= begin_snapshot). A closed row with
// end_snapshot <= begin_snapshot breaks a catalog invariant: it counts as
// visible, so gc never deletes on the strength of a broken row.
func VisibleFrom(f meta.DataFile, floor int64) bool {
	if f.EndSnapshot == nil {
		return true
	}
	end := *f.EndSnapshot
	return end <= f.BeginSnapshot || end > max(f.BeginSnapshot, floor)
}
