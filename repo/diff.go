package repo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Diff: what changed between two versions, or between a version and the
// working catalog.

// DiffOptions are the inputs of Diff. The revisions take every form of
// docs/spec.md §11; see Diff for what empty ones mean.
type DiffOptions struct {
	From, To string
	// MergeBase compares To with the last version From and To share
	// (Git's A...B), not with From itself.
	MergeBase bool
	// Local is the working directory the command runs in (nil: none):
	// without To, it compares with the working catalog; its unpushed
	// versions are sides too.
	Local *Local
}

// ParseDiffArgs turns a command line's revisions into DiffOptions: none,
// one (REV, or the ranges A..B and A...B), or two (A B).
func ParseDiffArgs(args []string) (DiffOptions, error) {
	switch len(args) {
	case 0:
		return DiffOptions{}, nil
	case 1:
		if a, b, ok := strings.Cut(args[0], "..."); ok {
			return DiffOptions{From: a, To: b, MergeBase: true}, checkRangeEnds(args[0], a, b)
		}
		if a, b, ok := strings.Cut(args[0], ".."); ok {
			return DiffOptions{From: a, To: b}, checkRangeEnds(args[0], a, b)
		}
		return DiffOptions{From: args[0]}, nil
	case 2:
		return DiffOptions{From: args[0], To: args[1]}, nil
	}
	return DiffOptions{}, fmt.Errorf("a diff takes at most two revisions, got %d: %w", len(args), ErrInvalidArguments)
}

func checkRangeEnds(arg, a, b string) error {
	if a == "" || b == "" {
		return fmt.Errorf("range %q needs a revision on each side (A..B or A...B): %w", arg, ErrInvalidArguments)
	}
	return nil
}

// DiffSide is one side of a diff: a version, the working catalog, or
// nothing (the empty lake before a first version).
type DiffSide struct {
	// Rev is the revision as given, or the one a default chose (the
	// base's id, HEAD, REV~ for a parent; "" for the working catalog and
	// for nothing).
	Rev     string     `json:"rev"`
	Version version.ID `json:"version,omitempty"`
	Short   string     `json:"short_id,omitempty"`
	Seq     int64      `json:"seq,omitempty"`
	// Snapshot is the DuckLake snapshot compared; -1 for nothing.
	Snapshot int64 `json:"snapshot"`
	// Working is true for the working catalog (its last snapshot).
	Working bool `json:"working,omitempty"`
	// Local is true for a version committed in the working directory and
	// not pushed yet.
	Local bool `json:"local,omitempty"`

	rec *version.Record
}

// Record returns the side's version record (nil for the working catalog
// and for nothing).
func (s DiffSide) Record() *version.Record { return s.rec }

// Timelines of a diff.
const (
	// OneCatalog: both states were read from the newer side's catalog,
	// which holds the older side's snapshot (the MVCC rule, docs/spec.md
	// §7); rows inserted and deleted are known.
	OneCatalog = "one"
	// TwoCatalogs: the sides are on two timelines (branches that parted,
	// or a catalog that no longer holds the other's snapshot): each state
	// was read from its own catalog; rows are known only before and after.
	TwoCatalogs = "two"
)

// DiffResult is what Diff found: the two sides, how they were read, and
// the changes (schemas, tables, views, totals). Its JSON is 'fdl diff
// --json' (docs/cli.md).
type DiffResult struct {
	From DiffSide `json:"from"`
	To   DiffSide `json:"to"`
	// Catalogs is OneCatalog or TwoCatalogs.
	Catalogs string `json:"catalogs"`
	// MergeBase is the last version both sides share, when two timelines
	// were compared or MergeBase was asked ("" when they share none).
	MergeBase version.ID `json:"merge_base,omitempty"`
	*meta.Diff
}

// Diff compares two sides (docs/cli.md: fdl diff). With both revisions it
// compares From with To. Opened from a working directory: no revision
// compares the base version with the working catalog (its last snapshot),
// From alone compares that revision with the working catalog (git diff
// REV). Elsewhere: no revision compares HEAD's first parent with HEAD,
// From alone compares that revision's first parent with it (git show); a
// first version is compared with nothing.
//
// Both states are read from the newer side's catalog when it holds the
// older side's snapshot with the same snapshot_time (one timeline:
// OneCatalog), so a retired older version needs no catalog. Otherwise each
// is read from its own catalog (TwoCatalogs), objects both inherited from
// their merge base matched by id. Catalogs are checked against their
// records before they are read.
//
// Errors: the Resolve errors, *RetiredError when a catalog that must be
// read is out of retention, *ChecksumError, ducklake.ErrLocked (a
// DuckDB-format working catalog attached for writing elsewhere),
// ErrInvalidArguments (To without From; MergeBase with the working
// catalog).
func (r *Repo) Diff(ctx context.Context, o DiffOptions) (*DiffResult, error) {
	from, to, err := r.diffSides(ctx, o)
	if err != nil {
		return nil, err
	}
	res := &DiffResult{From: from, To: to}
	if o.MergeBase {
		base, err := r.mergeBase(ctx, o.Local, from.rec, to.rec)
		if err != nil {
			return nil, err
		}
		res.MergeBase = base.ID
		if res.From, err = r.versionSide(ctx, o.Local, string(base.ID), base); err != nil {
			return nil, err
		}
	}
	tmp, removeTmp, err := scratch.New(scratch.Diff)
	if err != nil {
		return nil, err
	}
	defer removeTmp()
	cats := &catalogCache{r: r, local: o.Local, tmp: tmp, open: map[string]*ducklake.Catalog{}}
	defer cats.close()
	if err := r.diff(ctx, res, cats); err != nil {
		return nil, err
	}
	if err := r.shortIDs(ctx, o.Local, res); err != nil {
		return nil, err
	}
	return res, nil
}

// diffSides resolves the two sides of a diff with their defaults.
func (r *Repo) diffSides(ctx context.Context, o DiffOptions) (from, to DiffSide, err error) {
	if o.From == "" && o.To != "" {
		return from, to, fmt.Errorf("a diff with a second revision needs a first: %w", ErrInvalidArguments)
	}
	l := o.Local
	if l != nil && o.To == "" {
		if o.MergeBase {
			return from, to, fmt.Errorf("A...B compares two versions, not the working catalog: %w", ErrInvalidArguments)
		}
		to = DiffSide{Working: true}
		if o.From == "" {
			from = DiffSide{Snapshot: -1}
			if b := l.Base; b != nil {
				from, err = r.versionSide(ctx, l, string(b.ID), b) // the base, by its id
			}
			return from, to, err
		}
		from, err = r.side(ctx, l, o.From)
		return from, to, err
	}
	if o.To != "" {
		if from, err = r.side(ctx, l, o.From); err != nil {
			return from, to, err
		}
		to, err = r.side(ctx, l, o.To)
		return from, to, err
	}
	rev := o.From
	if rev == "" {
		rev = "HEAD"
	}
	if to, err = r.side(ctx, l, rev); err != nil {
		return from, to, err
	}
	from = DiffSide{Snapshot: -1}
	if p := to.rec.Parent(); p != "" {
		from, err = r.side(ctx, l, string(p))
		from.Rev = rev + "~"
	}
	return from, to, err
}

// Side resolves a revision as a side of a diff (or a revert's or
// restore's target): a version committed in the working directory l and
// not pushed (by id prefix), else the repository's. Errors: the Resolve
// errors.
func (r *Repo) Side(ctx context.Context, l *Local, rev string) (DiffSide, error) {
	return r.side(ctx, l, rev)
}

func (r *Repo) side(ctx context.Context, l *Local, rev string) (DiffSide, error) {
	if rec := l.byPrefix(rev); rec != nil {
		s, err := r.versionSide(ctx, l, rev, rec)
		s.Local = true
		return s, err
	}
	rec, _, err := r.refs.ResolveRecord(ctx, rev)
	if err != nil {
		return DiffSide{}, l.unknownHere(rev, err)
	}
	return r.versionSide(ctx, l, rev, rec)
}

func (r *Repo) versionSide(ctx context.Context, l *Local, rev string, rec *version.Record) (DiffSide, error) {
	s := DiffSide{Rev: rev, Version: rec.ID, Seq: rec.Seq, Snapshot: rec.DuckLake.Snapshot, rec: rec}
	if l.pending(rec.ID) != nil {
		s.Local = true
	}
	return s, nil
}

// mergeBase returns the newest version both a and b reach through
// parents (nil records: the working catalog is refused before this).
// Errors: *NoMergeBaseError.
func (r *Repo) mergeBase(ctx context.Context, l *Local, a, b *version.Record) (*version.Record, error) {
	recs := r.records(l)
	seen := map[version.ID]bool{}
	for id := a.ID; id != ""; {
		seen[id] = true
		rec, err := recs.Record(ctx, id)
		if err != nil {
			return nil, err
		}
		id = rec.Parent()
	}
	queue := []version.ID{b.ID}
	visited := map[version.ID]bool{}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if visited[id] {
			continue
		}
		visited[id] = true
		rec, err := recs.Record(ctx, id)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			return rec, nil
		}
		queue = append(queue, rec.Parents...)
	}
	return nil, &NoMergeBaseError{A: a.ID, B: b.ID}
}

// diff reads the changes of res's two sides into res.
func (r *Repo) diff(ctx context.Context, res *DiffResult, cats *catalogCache) error {
	from, to := res.From, res.To
	if to.Working {
		cat, err := cats.working(ctx)
		if err != nil {
			return err
		}
		last, err := cat.LastSnapshot(ctx)
		if err != nil {
			return err
		}
		res.To.Snapshot = last.ID
		return r.diffInto(ctx, res, cats, cat, from.rec, nil)
	}
	recs := r.records(cats.local)
	if from.rec == nil {
		cat, err := cats.version(ctx, to.rec)
		if err != nil {
			return err
		}
		return r.diffInto(ctx, res, cats, cat, nil, to.rec)
	}
	if ok, err := refs.IsAncestor(ctx, recs, from.rec.ID, to.rec.ID); err != nil {
		return err
	} else if ok {
		cat, err := cats.version(ctx, to.rec)
		if err != nil {
			return err
		}
		return r.diffInto(ctx, res, cats, cat, from.rec, to.rec)
	}
	if ok, err := refs.IsAncestor(ctx, recs, to.rec.ID, from.rec.ID); err != nil {
		return err
	} else if ok {
		cat, err := cats.version(ctx, from.rec)
		if err != nil {
			return err
		}
		return r.diffInto(ctx, res, cats, cat, to.rec, from.rec)
	}
	return r.diffTwo(ctx, res, cats, nil)
}

// diffInto compares res's sides in cat, the catalog of the newer side
// (newer: nil for the working catalog), when it holds the older side's
// snapshot (older: nil for nothing); otherwise each from its own catalog.
func (r *Repo) diffInto(ctx context.Context, res *DiffResult, cats *catalogCache, cat *ducklake.Catalog, older, newer *version.Record) error {
	if older != nil {
		holds, err := HoldsSnapshot(ctx, cat, older)
		if err != nil {
			return err
		}
		if !holds {
			return r.diffTwo(ctx, res, cats, cat)
		}
	}
	d, err := cat.DiffWith(ctx, res.From.Snapshot, res.To.Snapshot, ducklake.DiffOptions{Fetch: cats.fetchData})
	if err != nil {
		return err
	}
	res.Catalogs, res.Diff = OneCatalog, d
	return nil
}

// HoldsSnapshot reports whether cat still has rec's last snapshot with
// the same snapshot_time (it continues rec's timeline; expired snapshots
// are gone). Errors: the catalog's.
func HoldsSnapshot(ctx context.Context, cat *ducklake.Catalog, rec *version.Record) (bool, error) {
	snaps, err := cat.Snapshots(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range snaps {
		if s.ID == rec.DuckLake.Snapshot {
			return s.Time.Equal(rec.DuckLake.SnapshotTime), nil
		}
	}
	return false, nil
}

// diffTwo compares the sides each from its own catalog (known: the
// catalog of one side, already open, or nil), objects inherited from their
// merge base matched by id.
func (r *Repo) diffTwo(ctx context.Context, res *DiffResult, cats *catalogCache, known *ducklake.Catalog) error {
	open := func(s DiffSide) (*ducklake.Catalog, error) {
		if s.Working {
			return cats.working(ctx)
		}
		return cats.version(ctx, s.rec)
	}
	a, err := open(res.From)
	if err != nil {
		return err
	}
	b, err := open(res.To)
	if err != nil {
		return err
	}
	var base *meta.State
	if res.From.rec != nil && res.To.rec != nil {
		mb, err := r.mergeBase(ctx, cats.local, res.From.rec, res.To.rec)
		var none *NoMergeBaseError
		switch {
		case errors.As(err, &none):
		case err != nil:
			return err
		default:
			res.MergeBase = mb.ID
			if base, err = a.State(ctx, mb.DuckLake.Snapshot); errors.Is(err, ducklake.ErrSnapshotNotFound) {
				base = nil
			} else if err != nil {
				return err
			}
		}
	} else if l := cats.local; res.From.rec != nil && l != nil && l.Base != nil {
		// The working catalog against a version: the base is where the
		// working catalog started.
		if base, err = a.State(ctx, l.Base.DuckLake.Snapshot); err != nil {
			base = nil
		}
	}
	d, err := ducklake.DiffCatalogs(ctx, a, res.From.Snapshot, b, res.To.Snapshot, base)
	if err != nil {
		return err
	}
	res.Catalogs, res.Diff = TwoCatalogs, d
	return nil
}

// shortIDs fills the sides' short ids.
func (r *Repo) shortIDs(ctx context.Context, l *Local, res *DiffResult) error {
	// The sides' ids are the ones shortened; the local versions count
	// as known ids too.
	var ids []version.ID
	for _, s := range []*DiffSide{&res.From, &res.To} {
		if s.Version != "" {
			ids = append(ids, s.Version)
		}
	}
	for _, p := range l.newestFirst("") {
		ids = append(ids, p.ID)
	}
	abbrev, err := r.Abbrev(ctx, ids...)
	if err != nil {
		return err
	}
	for _, s := range []*DiffSide{&res.From, &res.To} {
		if s.Version != "" {
			s.Short = abbrev.Short(s.Version)
		}
	}
	return nil
}

// catalogCache opens each catalog a diff reads once: versions checked
// against their records (in place on a folder store or in the working
// directory, else fetched into tmp), the working catalog read-only.
type catalogCache struct {
	r     *Repo
	local *Local
	tmp   string
	open  map[string]*ducklake.Catalog
}

func (c *catalogCache) close() {
	for _, cat := range c.open {
		cat.Close()
	}
}

func (c *catalogCache) working(ctx context.Context) (*ducklake.Catalog, error) {
	if cat, ok := c.open[""]; ok {
		return cat, nil
	}
	if c.local == nil {
		return nil, fmt.Errorf("no working catalog outside a working directory: %w", ErrInvalidArguments)
	}
	if check := c.local.CheckCatalog; check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	cat, err := ducklake.Open(ctx, c.local.Catalog)
	if err != nil {
		return nil, err
	}
	c.open[""] = cat
	return cat, nil
}

func (c *catalogCache) version(ctx context.Context, rec *version.Record) (*ducklake.Catalog, error) {
	if cat, ok := c.open[string(rec.ID)]; ok {
		return cat, nil
	}
	path, err := c.r.versionCatalog(ctx, c.local, rec, c.tmp)
	if err != nil {
		return nil, err
	}
	cat, err := ducklake.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("version %s: %w", rec.ID, err)
	}
	c.open[string(rec.ID)] = cat
	return cat, nil
}

// versionCatalog returns the path of rec's catalog, checked against its
// record (size and sha256): a version committed in the working directory
// and not pushed, the store's file itself on a folder store, else a copy
// fetched into tmp. Errors: *RetiredError, *ChecksumError, the store's.
func (r *Repo) versionCatalog(ctx context.Context, l *Local, rec *version.Record, tmp string) (string, error) {
	if p := l.catalogOf(rec.ID); p != "" {
		return p, checkFile(p, rec)
	}
	if err := r.RefuseRetired(ctx, rec); err != nil {
		return "", err
	}
	if files, ok := r.Folder(); ok {
		p := files.LocalPath(VersionKey(rec.ID, version.CatalogFile))
		return p, checkFile(p, rec)
	}
	p := filepath.Join(tmp, string(rec.ID)+".duckdb")
	return p, r.FetchCatalog(ctx, rec, p)
}

// checkFile compares a catalog file with its record. Errors: *ChecksumError.
func checkFile(p string, rec *version.Record) error {
	size, sum, err := FileDigest(p)
	if err != nil {
		return fmt.Errorf("version %s: catalog: %w", rec.ID, err)
	}
	if size != rec.Catalog.Size || sum != rec.Catalog.SHA256 {
		return &ChecksumError{Version: rec.ID, WantSize: rec.Catalog.Size, GotSize: size, WantSHA: rec.Catalog.SHA256, GotSHA: sum, Location: p}
	}
	return nil
}
