package retention

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// Reasons a data file is deleted (DataDeletion.Reason; stable strings).
const (
	// ReasonEnded: every catalog in retention that lists the file ended it
	// (end_snapshot) at or before that catalog's floor snapshot.
	ReasonEnded = "ended-before-floor"
	// ReasonRetired: only catalogs of versions out of retention list it.
	ReasonRetired = "retired-only"
	// ReasonUnlisted: no catalog lists it and it is older than the grace
	// period by the store's modification time.
	ReasonUnlisted = "unlisted"
)

// ownedName matches the names DuckDB's ducklake extension gives the files
// it writes: "ducklake-<uuid>.parquet" (data files),
// "ducklake-<uuid>-delete.parquet" and, in DuckLake 1.1,
// "ducklake-<uuid>-delete.puffin" (delete files). Its source:
// duckdb/ducklake src/storage/ducklake_delete.cpp and the data writer's
// file name pattern.
var ownedName = regexp.MustCompile(`^ducklake-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\.parquet|-delete\.parquet|-delete\.puffin)$`)

// OwnedName reports whether name (a file name, without folders) is of a
// kind DuckDB's ducklake extension writes. gc deletes a file that no
// catalog lists only when it is (docs/spec.md §16): files a catalog lists
// follow the retention rules whatever their names (ducklake_add_data_files
// registers files under any name).
func OwnedName(name string) bool { return ownedName.MatchString(name) }

// DataDeletion is one data file gc deletes (step 3).
type DataDeletion struct {
	Key     string    `json:"key"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
	Reason  string    `json:"reason"`
	// RetiredBy are the retired versions whose catalogs list the file
	// (ReasonRetired): it is deleted only once all of them are marked.
	RetiredBy []version.ID `json:"retired_by,omitempty"`
}

// DataStats counts what the data step saw.
type DataStats struct {
	Objects   int   `json:"objects"`     // objects under data/
	Bytes     int64 `json:"bytes"`       // their size
	Kept      int   `json:"kept_count"`  // kept: a catalog in retention can read them
	KeptBytes int64 `json:"kept_bytes"`  //
	Young     int   `json:"young_count"` // kept: no catalog lists them, younger than the grace period
	// Foreign counts the files kept because no catalog lists them and
	// their names are not of the kinds DuckDB's ducklake extension writes
	// (OwnedName): gc never deletes a file it does not own.
	Foreign int `json:"foreign_count"`
	// ForeignSample names up to five of them.
	ForeignSample []string `json:"foreign_sample,omitempty"`
	Listed        int      `json:"listed"` // distinct files the catalogs read list inside data/
	// Needed counts those of them a catalog in retention can read at or
	// after its floor: the files verify --data checks are in the store
	// (the others were gc's to delete).
	Needed       int `json:"needed"`
	Outside      int `json:"outside"`       // rows naming files outside the repository (never deleted)
	Missing      int `json:"missing"`       // files a catalog in retention can read that are not in the store
	CatalogsRead int `json:"catalogs_read"` // catalogs whose data-file tables were scanned
}

type fileState struct {
	needed     bool // a catalog in retention can read it at or after its floor
	listedLive bool // a catalog in retention lists it
	primary    bool // a catalog in retention names it (not only as an alias)
	aliases    []string
	retiredBy  []version.ID
}

// DataPlanner computes gc's data step (docs/spec.md §16 step 3) from the
// data-file tables of the catalogs it reads. Add every catalog in
// retention (AddLive) before any retiring one (AddRetiring); add markers
// of versions already retired (AddMarker); then Plan over the listing of
// data/. Not safe for concurrent use.
type DataPlanner struct {
	norm  *Normaliser
	files map[string]*fileState
	stats DataStats
	// missing lists, after Plan, the keys a catalog in retention can read
	// that the data/ listing lacks (verify --data reports them).
	missing []string
	// protected are the canonical local paths of files a catalog in
	// retention can read at or after its floor, or names outside the
	// repository (see Protected).
	protected map[string]bool
	// disputed are the files of catalogs in retention that DuckDB reads
	// outside the repository by a path whose text lies inside it.
	disputed []DisputedFile
	// unplaced are the catalogs that list paths that do not normalise;
	// keepNames the file names of those a catalog in retention lists.
	unplaced  []Unplaced
	keepNames map[string]bool
}

// DisputedFile is a data or delete file of a catalog in retention whose
// path DuckDB reads outside the repository, while the same text read
// another way lies inside it (Place.Disputed): gc keeps the file at Key,
// and verify reports it, since no DuckDB reader reaches it by that path.
type DisputedFile struct {
	Version version.ID
	Path    string // the resolved path, as the catalog spells it
	Reads   string // where DuckDB reads it (Place.Canonical)
	Key     string // the store key the text names inside the repository
}

// NewDataPlanner returns a planner that places paths with norm.
func NewDataPlanner(norm *Normaliser) *DataPlanner {
	return &DataPlanner{norm: norm, files: map[string]*fileState{}, protected: map[string]bool{}, keepNames: map[string]bool{}}
}

func (p *DataPlanner) state(key string) *fileState {
	s := p.files[key]
	if s == nil {
		s = &fileState{}
		p.files[key] = s
	}
	return s
}

// AddLive records the data and delete files of a catalog in retention whose
// floor snapshot is floor. A row visible at a snapshot >= floor (VisibleFrom)
// makes its file needed. A path that does not normalise (a relative
// data_path, which DuckDB resolves against each reader's working
// directory; a control character) cannot be placed: it is recorded
// (Unplaced) and every object under data/ with the same file name is kept,
// so that a published version never blocks gc and never loses a file gc
// could not tell apart (docs/spec.md §16).
func (p *DataPlanner) AddLive(id version.ID, floor int64, files []meta.DataFile) {
	p.stats.CatalogsRead++
	for _, f := range files {
		pl, err := p.norm.Place(f.ResolvedPath)
		if err != nil {
			p.unplace(id, f, err, true)
			continue
		}
		need := VisibleFrom(f, floor)
		if pl.Disputed {
			p.disputed = append(p.disputed, DisputedFile{Version: id, Path: f.ResolvedPath, Reads: pl.Canonical, Key: pl.Key})
		}
		if (pl.Key == "" || need) && strings.HasPrefix(pl.Canonical, "/") {
			p.protected[pl.Canonical] = true
		}
		if pl.Key == "" {
			p.stats.Outside++
			continue
		}
		s := p.state(pl.Key)
		s.listedLive, s.primary = true, true
		s.needed = s.needed || need
		for _, alias := range pl.Aliases {
			a := p.state(alias)
			a.listedLive, a.needed = true, true
			if !slices.Contains(s.aliases, alias) {
				s.aliases = append(s.aliases, alias)
			}
		}
	}
}

// AddRetiring records the files of the catalog of a version leaving
// retention and returns the keys no catalog in retention lists, sorted: its
// marker's DataFiles. Call it after every AddLive. A path that does not
// normalise frees nothing (it is recorded in Unplaced): a version leaving
// retention never blocks gc.
func (p *DataPlanner) AddRetiring(id version.ID, files []meta.DataFile) []string {
	p.stats.CatalogsRead++
	var frees []string
	for _, f := range files {
		pl, err := p.norm.Place(f.ResolvedPath)
		if err != nil {
			p.unplace(id, f, err, false)
			continue
		}
		if pl.Key == "" || p.state(pl.Key).listedLive {
			continue
		}
		frees = append(frees, pl.Key)
	}
	slices.Sort(frees)
	frees = slices.Compact(frees)
	p.AddMarker(id, frees)
	return frees
}

// Unplaced is what one catalog lists by paths that do not normalise.
type Unplaced struct {
	Version version.ID
	// Live: the catalog is in retention (gc keeps every object under data/
	// with one of its names); else it is leaving (it frees none of them).
	Live  bool
	Count int   // files (rows) of the catalog
	First error // the first one's error (ErrPath, naming the version, file id and path)
}

func (p *DataPlanner) unplace(id version.ID, f meta.DataFile, err error, live bool) {
	if live {
		name := f.ResolvedPath
		if i := strings.LastIndexAny(name, "/\\"); i >= 0 {
			name = name[i+1:]
		}
		p.keepNames[name] = true
	}
	if n := len(p.unplaced); n > 0 && p.unplaced[n-1].Version == id && p.unplaced[n-1].Live == live {
		p.unplaced[n-1].Count++
		return
	}
	p.unplaced = append(p.unplaced, Unplaced{Version: id, Live: live, Count: 1, First: pathError(id, f, err)})
}

// Unplaced returns, in the order met, the catalogs that list files by paths
// that do not normalise.
func (p *DataPlanner) Unplaced() []Unplaced { return slices.Clone(p.unplaced) }

// AddMarker records the data files a retired version's marker names.
func (p *DataPlanner) AddMarker(id version.ID, keys []string) {
	for _, k := range keys {
		s := p.state(k)
		if !slices.Contains(s.retiredBy, id) {
			s.retiredBy = append(s.retiredBy, id)
		}
	}
}

func pathError(id version.ID, f meta.DataFile, err error) error {
	kind := "data file"
	if f.Delete {
		kind = "delete file"
	}
	return fmt.Errorf("version %s: catalog lists %s %d at %q (stored as %q): %w", id, kind, f.ID, f.ResolvedPath, f.Path, err)
}

// Plan decides, for every object under data/ in listing, whether gc deletes
// it, in key order:
//   - kept when a catalog in retention can read it at or after its floor;
//   - deleted (ReasonEnded) when catalogs in retention list it but every
//     one ended it at or before its floor;
//   - deleted (ReasonRetired) when only retired versions' catalogs list it;
//   - deleted (ReasonUnlisted) when no catalog lists it, its name is of a
//     kind DuckDB's ducklake extension writes (OwnedName) and it is older
//     than grace by its ModTime; kept when younger, and kept for good
//     (DataStats.Foreign) when its name is of another kind: gc deletes no
//     file it does not own (a README.txt put under data/ by hand).
//
// Objects outside data/ are ignored: gc never deletes them.
func (p *DataPlanner) Plan(listing []store.ObjectInfo, now time.Time, grace Duration) []DataDeletion {
	out := []DataDeletion{}
	present := make(map[string]bool, len(listing))
	for _, o := range listing {
		if !strings.HasPrefix(o.Key, "data/") {
			continue
		}
		present[o.Key] = true
		p.stats.Objects++
		p.stats.Bytes = store.AddSize(p.stats.Bytes, o.Size)
		s := p.files[o.Key]
		d := DataDeletion{Key: o.Key, Size: o.Size, ModTime: o.ModTime}
		switch {
		case s != nil && s.needed, len(p.keepNames) > 0 && p.keepNames[path.Base(o.Key)]:
			p.stats.Kept++
			p.stats.KeptBytes = store.AddSize(p.stats.KeptBytes, o.Size)
			continue
		case s != nil && s.listedLive:
			d.Reason = ReasonEnded
		case s != nil && len(s.retiredBy) > 0:
			d.Reason = ReasonRetired
			d.RetiredBy = slices.Clone(s.retiredBy)
			slices.Sort(d.RetiredBy)
		case !OwnedName(path.Base(o.Key)):
			p.stats.Foreign++
			if len(p.stats.ForeignSample) < 5 {
				p.stats.ForeignSample = append(p.stats.ForeignSample, o.Key)
			}
			continue
		case !Young(now, o.ModTime, grace):
			d.Reason = ReasonUnlisted
		default:
			p.stats.Young++
			continue
		}
		out = append(out, d)
	}
	p.missing = p.missing[:0]
	for k, s := range p.files {
		if !s.primary {
			continue
		}
		p.stats.Listed++
		if s.needed {
			p.stats.Needed++
		}
		if !s.needed || present[k] || slices.ContainsFunc(s.aliases, func(a string) bool { return present[a] }) {
			continue
		}
		p.missing = append(p.missing, k)
	}
	sort.Strings(p.missing)
	p.stats.Missing = len(p.missing)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Protected returns the canonical local paths ("/abs/path") of the files
// catalogs in retention need (readable at or after their floor) and of the
// files they name outside the repository, sorted. On a folder store gc
// checks every deletion against them by file identity (device and inode),
// whatever the spelling or the symbolic links between them.
func (p *DataPlanner) Protected() []string {
	out := make([]string, 0, len(p.protected))
	for k := range p.protected {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Missing returns, after Plan, the keys a catalog in retention can read
// that the listing lacks, sorted.
func (p *DataPlanner) Missing() []string { return slices.Clone(p.missing) }

// Disputed returns the disputed files AddLive met, in the order met.
func (p *DataPlanner) Disputed() []DisputedFile { return slices.Clone(p.disputed) }

// Stats returns the counts gathered so far.
func (p *DataPlanner) Stats() DataStats { return p.stats }
