// Package mirror copies a repository, or some of its refs and what they
// reach, to another place of the same repository on any store
// (docs/spec.md, "Mirrors"): objects first, each checked, refs last by
// compare-and-swap, fast-forward only. A killed mirror leaves the
// destination's refs as they were; running it again copies what is still
// missing and moves them.
//
// It sits above package repo (which reads and writes each end) and below
// cmd/fdl: Run is the one call 'fdl mirror' makes. Files: mirror.go (the
// front: options, result, Run), dest.go (the destination made or
// recognised), plan.go (which refs, and what each one's move is),
// walk.go (the versions the destination lacks), copy.go (objects and
// data files), logs.go (ref logs and signatures), move.go (the ref
// moves), errors.go.
package mirror

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// OpCopy is the progress operation of a mirror's copies (repo.Event.Op).
const OpCopy repo.EventOp = "copy"

// Options are the choices of a mirror.
type Options struct {
	// Refs are the patterns of the refs to mirror, by their names below
	// refs/ ("heads/main", "tags/*", "tags/v1.*"; path.Match, and a
	// trailing "/*" also matches names with more elements). None: every
	// branch and tag. A source that cannot list (a web server) needs
	// names without patterns.
	Refs []string
	// Backwards lets a destination branch that moved on its own (it
	// holds a version the source's branch does not descend from) be
	// moved back to the source's version; Why is recorded in its ref
	// log entry and is required with it.
	Backwards bool
	Why       string
	// AllowFormatChange lets a branch move change the DuckDB releases that
	// read it, as for a push (repo.PushOptions.AllowFormatChange).
	AllowFormatChange bool
	// Repo are the options both repositories are opened with: progress
	// (OpCopy events, from one goroutine at a time) and the step hook
	// ("mirror:catalog", "mirror:data", "mirror:file", "mirror:record",
	// "mirror:pack", "mirror:log", "mirror:signatures", then the ref
	// manager's "mirror:reflog" and "mirror:ref" for each ref moved).
	Repo repo.Options
}

// Result says what a mirror did. Its JSON is 'fdl mirror --json'.
type Result struct {
	Source      string `json:"source_url"`      // the source, credentials hidden
	Destination string `json:"destination_url"` // the destination, credentials hidden
	// Created: this run made the destination repository.
	Created bool `json:"created"`
	// Versions copied (their records written), Retired of them copied as
	// retired (record and marker, no catalog).
	Versions int `json:"versions_copied"`
	Retired  int `json:"retired_copied"`
	// Objects written at the destination (of every kind) and their
	// bytes; DataFiles of them are data and delete files.
	Objects   int   `json:"objects"`
	DataFiles int   `json:"data_files_copied"`
	Bytes     int64 `json:"bytes"`
	// DataGone counts the data and delete files the copied catalogs list
	// that the source no longer holds and no copied version reads at or
	// after its floor snapshot (gc deleted them there): not copied.
	DataGone int `json:"data_files_gone"`
	// DataAbsolute counts the data and delete files in the source's data/
	// that a copied catalog names by an absolute path: copied, but
	// DuckDB reads an absolute path as written, so the destination's
	// readers read them at the source.
	DataAbsolute int `json:"data_files_absolute,omitempty"`
	// LogEntries copied from the source's ref logs.
	LogEntries int `json:"log_entries_copied"`
	// Refs are the refs mirrored, each with what happened to it;
	// RefsMoved counts those created or moved.
	Refs      []RefResult `json:"mirrored"`
	RefsMoved int         `json:"refs_moved"`
}

// RefResult is one ref of a mirror.
type RefResult struct {
	Ref string     `json:"ref"` // full name: refs/heads/main
	Old version.ID `json:"old,omitempty"`
	New version.ID `json:"new"`
	// Action: "created", "moved" (forward), "moved-back" (Backwards),
	// "up-to-date", or "refused" (Error says why; nothing moved).
	Action string `json:"action"`
	Error  string `json:"refusal,omitempty"`
	// FormatChange is set when an allowed move changed the DuckDB
	// releases that read the branch.
	FormatChange *repo.FormatChange `json:"format_change,omitempty"`
}

// The actions of RefResult.
const (
	ActCreated    = "created"
	ActMoved      = "moved"
	ActMovedBack  = "moved-back"
	ActUpToDate   = "up-to-date"
	ActRefused    = "refused"
	statLimit     = 64  // versions looked up one by one before one listing
	dataStatLimit = 256 // data files looked up one by one before one listing
	dataWorkers   = 4   // data files copied at once, per version
	// versionWorkers is how many versions are copied at once.
	versionWorkers = 32
)

// Run mirrors the repository at srcURL (or the refs o.Refs names) to
// dstURL, which it makes on the first run (repo.InitCopy: the source's
// fdl.json) and otherwise must be the same repository (same name,
// data_path and creation time). The order: the versions the mirrored
// refs (and their new ref log entries) reach that the destination lacks,
// oldest first, each as catalog (its sha256 computed on the stream that
// writes the copy), the data files it reads in the source's data/ (sizes
// checked), its other files, its record, its history pack; then the ref
// log entries and signatures; then each ref by compare-and-swap. Tags
// are created, never moved; branches move fast-forward only.
//
// The refs that cannot move are left as they are and reported: the
// result is returned with a *RefusedError (wrapping refs.ErrRefused for
// a branch that moved at the destination on its own, *TagClashError
// (wrapping *refs.ExistsError) for a tag that holds another version,
// *repo.FormatChangeError, *RetiredAtDestinationError). Other
// errors: *SourceDataMissingError, *OtherRepositoryError, *SameRepositoryError, *CannotListError,
// repo.ErrInvalidArguments (a bad pattern, --backwards without a
// reason), the stores' errors (a copy stopped part way leaves the
// destination's refs as they were; run it again).
func Run(ctx context.Context, srcURL, dstURL string, o Options) (*Result, error) {
	if o.Backwards && strings.TrimSpace(o.Why) == "" {
		return nil, fmt.Errorf("mirror --backwards needs a reason (--why TEXT), kept in the ref log: %w", repo.ErrInvalidArguments)
	}
	pats, err := parsePatterns(o.Refs)
	if err != nil {
		return nil, err
	}
	src, err := repo.Open(ctx, srcURL, o.Repo)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	res := &Result{Source: src.Where(), Refs: []RefResult{}}
	m := &mirror{src: src, o: o, res: res, known: map[version.ID]bool{}, dataDone: map[string]bool{}, dataCopied: map[string]bool{}, dataAbsolute: map[string]bool{}, srcAbsent: map[string]bool{}, srcKept: map[version.ID]bool{}}
	// The source's refs are read before the destination is made, so a
	// --ref naming no ref at SRC leaves no new repository behind.
	srcRefs, err := m.sourceRefs(ctx, pats)
	if err != nil {
		return nil, err
	}
	if m.dst, err = openDest(ctx, src, dstURL, o.Repo, res); err != nil {
		return nil, err
	}
	defer m.dst.Close()
	defer func() {
		if m.rmTmp != nil {
			m.rmTmp()
		}
	}()
	return res, m.run(ctx, srcRefs)
}

// mirror is one run.
type mirror struct {
	// mu guards known, the data fields and res while versions are
	// copied in parallel; dataMu makes the destination's data lookups
	// one at a time.
	mu, dataMu sync.Mutex
	src, dst   *repo.Repo
	o          Options
	res        *Result
	// tmp is a folder for catalogs fetched from an object store, made at
	// the first (tempDir): a source on a folder needs none. rmTmp
	// removes it (scratch.New: what a killed run leaves, the next fdl
	// removes).
	tmp   string
	rmTmp func() error
	// known are the versions the destination holds whole (read or copied).
	known map[version.ID]bool
	// dstIDs, once listed, are the versions whose records the
	// destination holds; dstStats counts the lookups made before.
	dstIDs   map[version.ID]bool
	dstStats int
	// dataDone are the data keys the destination holds (looked up or
	// copied); dataListed: all of them, listed once.
	dataDone   map[string]bool
	dataListed bool
	// dataCopied are the data keys this run wrote (or found written by
	// a version copied beside it): Result.DataFiles.
	dataCopied map[string]bool
	// dataAbsolute are the data keys a copied catalog names by an
	// absolute path: Result.DataAbsolute.
	dataAbsolute map[string]bool
	// srcAbsent are data keys the source does not hold (gc deleted
	// them, or they are lost): each version that lists one tells whether
	// it needed it (copyData).
	srcAbsent map[string]bool
	// srcKept: whether the source keeps each version it was asked about
	// (no retirement marker), for the floors checkAbsent computes.
	srcKept   map[version.ID]bool
	dataStats int
	// srcFiles are the source's version folders, listed once when many
	// versions are copied.
	srcFiles map[version.ID]map[string]int64
}

// tempDir returns the run's folder for fetched catalogs, made on first use.
func (m *mirror) tempDir() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tmp == "" {
		dir, rm, err := scratch.New(scratch.Mirror)
		if err != nil {
			return "", err
		}
		m.tmp, m.rmTmp = dir, rm
	}
	return m.tmp, nil
}

func (m *mirror) step(name string) {
	if m.o.Repo.Step != nil {
		m.o.Repo.Step(name)
	}
}

// run is Run's body: plan the refs, then copy what their moves need,
// then move them.
func (m *mirror) run(ctx context.Context, srcRefs []refs.Ref) error {
	planned, err := m.plan(ctx, srcRefs)
	if err != nil {
		return err
	}
	var moving []*plannedRef
	for _, p := range planned {
		if p.move {
			moving = append(moving, p)
		}
	}
	if len(moving) > 0 {
		if err := m.copyFor(ctx, moving); err != nil {
			return err
		}
	} else if err := m.copySignatures(ctx); err != nil {
		return err // a tag signed after its tag was mirrored
	}
	if err := m.copyLaterSignatures(ctx, planned); err != nil {
		return err
	}
	for _, p := range moving {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.moveRef(ctx, p)
	}
	var refused []error
	for _, p := range planned {
		m.res.Refs = append(m.res.Refs, p.result)
		switch {
		case p.err != nil:
			refused = append(refused, p.err)
		case p.result.Action == ActCreated || p.result.Action == ActMoved || p.result.Action == ActMovedBack:
			m.res.RefsMoved++
		}
	}
	if len(refused) > 0 {
		return &RefusedError{Dest: m.dst.Where(), Source: m.src.Where(), Refused: refused}
	}
	return nil
}

// copyFor copies what the moves of refs need: the versions they (and
// their new ref log entries) reach that the destination lacks, then the
// log entries, then the signatures.
func (m *mirror) copyFor(ctx context.Context, moving []*plannedRef) error {
	entries, err := m.newLogEntries(ctx, moving)
	if err != nil {
		return err
	}
	var starts, optional []version.ID
	for _, p := range moving {
		starts = append(starts, p.src)
	}
	for _, e := range entries {
		for _, id := range []version.ID{e.entry.Old, e.entry.New} {
			if id != "" {
				optional = append(optional, id)
			}
		}
	}
	recs, err := m.versionsToCopy(ctx, starts, optional)
	if err != nil {
		return err
	}
	if err := m.copyVersions(ctx, recs); err != nil {
		return err
	}
	if err := m.copyLogEntries(ctx, entries); err != nil {
		return err
	}
	return m.copySignatures(ctx)
}
