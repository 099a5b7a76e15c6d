package repo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// ErrRefused is wrapped by every refused push: not a fast-forward, or lost
// a race with a concurrent push. The CLI maps it to its own exit code.
var ErrRefused = errors.New("push refused")

// RefusedError says why a push did not move a branch (DESIGN.md §4.2, §4.3).
type RefusedError struct {
	Branch   refs.Name
	Current  version.ID // what the branch holds now
	Proposed version.ID // what the push wanted it to hold
	// Race is true when the branch moved between the read and the
	// compare-and-swap (another push won).
	Race bool
	// URL is the repository's URL, for the hint.
	URL string
}

func (e *RefusedError) Error() string {
	why := "it is not a fast-forward: the branch holds %s, which is not an ancestor of %s"
	if e.Race {
		why = "another push moved it to %s first (lost the race for %s)"
	}
	url := e.URL
	if url == "" {
		url = "URL"
	}
	return fmt.Sprintf("push to %s refused: "+why+"; nothing was moved: check out %s again (fdl checkout %s NEWDIR) and redo the change on top of it",
		e.Branch.Short(), e.Current, e.Proposed, e.Branch.Short(), ShellQuote(url))
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// ErrFormatUpgrade is wrapped by the error of a push that would move a
// branch to a version with a newer DuckLake format or a newer DuckDB storage
// version than the one it holds, without PushOptions.AllowFormatUpgrade.
var ErrFormatUpgrade = errors.New("push would move the branch to a newer catalog format")

// FormatChange describes what readers of a branch need before and after a
// push: the DuckLake format, the storage version and the Readers of the
// version the branch holds (From) and of the one pushed (To).
type FormatChange struct {
	From FormatInfo `json:"from"`
	To   FormatInfo `json:"to"`
}

// FormatInfo is the format side of one version.
type FormatInfo struct {
	Version  version.ID   `json:"version"`
	DuckLake string       `json:"ducklake_format"`
	Storage  meta.Storage `json:"storage"`
	Readers  meta.Readers `json:"readers"`
}

func formatInfo(rec *version.Record) FormatInfo {
	rd, _ := rec.EffectiveReaders()
	return FormatInfo{Version: rec.ID, DuckLake: rec.DuckLake.Format, Storage: rec.Catalog.Storage, Readers: rd}
}

// String says it as fdl prints it: "DuckLake 1.0 in DuckDB storage 68
// (DuckDB >= 1.5.2 attaches it)".
func (f FormatInfo) String() string {
	return fmt.Sprintf("DuckLake %s in DuckDB storage %d (DuckDB %s attaches it)", f.DuckLake, f.Storage.Number, f.Readers.Attach)
}

// FormatUpgradeError is the refusal of a push that would move a branch to
// a newer catalog format or storage version (readers on the older DuckDB
// release would lose the branch). It wraps ErrFormatUpgrade.
type FormatUpgradeError struct {
	Branch refs.Name
	Change FormatChange
}

func (e *FormatUpgradeError) Error() string {
	return fmt.Sprintf("push to %s refused: it would move the branch from %s (version %s) to %s (version %s): readers on the older DuckDB release lose the branch; nothing was moved. To publish it anyway, push again with --allow-format-upgrade (keep the older version under a tag or branch for those readers)",
		e.Branch.Short(), e.Change.From, e.Change.From.Version, e.Change.To, e.Change.To.Version)
}

func (e *FormatUpgradeError) Unwrap() error { return ErrFormatUpgrade }

// formatUpgrade compares the records of the version a branch holds (cur)
// and of the one a push moves it to (next). It returns the change when
// next has a newer DuckLake format (meta.CompareFormats) or a storage
// version a newer DuckDB release is needed for (min_duckdb), else nil.
func formatUpgrade(cur, next *version.Record) (*FormatChange, error) {
	byFormat, err := meta.CompareFormats(next.DuckLake.Format, cur.DuckLake.Format)
	if err != nil {
		return nil, fmt.Errorf("compare the formats of versions %s and %s: %w", cur.ID, next.ID, err)
	}
	byStorage := meta.CompareReleases(next.Catalog.Storage.MinDuckDB, cur.Catalog.Storage.MinDuckDB)
	if byFormat <= 0 && byStorage <= 0 {
		return nil, nil
	}
	return &FormatChange{From: formatInfo(cur), To: formatInfo(next)}, nil
}

// PushOptions are the choices of a push.
type PushOptions struct {
	// AllowFormatUpgrade lets the push move the branch to a version with a
	// newer DuckLake format or DuckDB storage version than the one it holds
	// (readers on the older DuckDB release lose the branch). Without it such
	// a push is refused with a *FormatUpgradeError.
	AllowFormatUpgrade bool
}

// Pending is a version committed locally and not yet in the store: its
// record and the folder holding its three files.
type Pending struct {
	Record *version.Record
	Dir    string // holds ducklake.duckdb, dataset.json, version.json
}

// PushResult says what a push did.
type PushResult struct {
	Branch   refs.Name  `json:"branch"`
	Old      version.ID `json:"old,omitempty"` // what the branch held ("" if it did not exist)
	New      version.ID `json:"new"`
	Uploaded int        `json:"uploaded"` // versions uploaded
	UpToDate bool       `json:"up_to_date"`
	// FormatUpgrade is set when the push moved the branch to a newer
	// DuckLake format or storage version (PushOptions.AllowFormatUpgrade).
	FormatUpgrade *FormatChange `json:"format_upgrade,omitempty"`
}

// Push uploads pending versions (oldest first; each one's first parent is
// the previous one or already in the store) and moves branch to head with a
// compare-and-swap, fast-forward only (DESIGN.md §4.1–4.3). Each version's
// catalog, then dataset.json, then version.json is written create-only; the
// ref moves last. An interrupted push can be run again: objects already
// uploaded with the same bytes are accepted.
//
// Errors: *RefusedError (wrapping ErrRefused) when the branch holds a
// version that is not an ancestor of head, or another push moved it first;
// *FormatUpgradeError (wrapping ErrFormatUpgrade) when head has a newer
// DuckLake format or storage version than the version the branch holds;
// nothing is moved then.
func (r *Repo) Push(ctx context.Context, branch refs.Name, head version.ID, pending []Pending) (PushResult, error) {
	return r.PushWith(ctx, branch, head, pending, PushOptions{})
}

// PushWith is Push with options: with o.AllowFormatUpgrade a push to a
// newer format is made, and PushResult.FormatUpgrade says so.
func (r *Repo) PushWith(ctx context.Context, branch refs.Name, head version.ID, pending []Pending, o PushOptions) (PushResult, error) {
	res := PushResult{Branch: branch, New: head}
	extra := map[version.ID]*version.Record{}
	for _, p := range pending {
		extra[p.Record.ID] = p.Record
	}
	cur, err := r.refs.Read(ctx, branch)
	exists := err == nil
	if err != nil && !errors.Is(err, refs.ErrNotFound) {
		return res, err
	}
	if !exists {
		if err := r.checkNewName(ctx, branch); err != nil {
			return res, err
		}
	}
	if exists {
		res.Old = cur.ID
		if cur.ID == head {
			res.UpToDate = true
			return res, nil
		}
		ok, err := r.IsAncestor(ctx, cur.ID, head, extra)
		if err != nil {
			return res, fmt.Errorf("push to %s: %w", branch.Short(), err)
		}
		if !ok {
			return res, &RefusedError{Branch: branch, Current: cur.ID, Proposed: head, URL: r.url}
		}
		curRec, err := r.Record(ctx, cur.ID)
		if err != nil {
			return res, fmt.Errorf("push to %s: %w", branch.Short(), err)
		}
		nextRec := extra[head]
		if nextRec == nil {
			if nextRec, err = r.Record(ctx, head); err != nil {
				return res, fmt.Errorf("push: %w", err)
			}
		}
		change, err := formatUpgrade(curRec, nextRec)
		if err != nil {
			return res, fmt.Errorf("push to %s: %w", branch.Short(), err)
		}
		if change != nil && !o.AllowFormatUpgrade {
			return res, &FormatUpgradeError{Branch: branch, Change: *change}
		}
		res.FormatUpgrade = change
	}
	if len(pending) > 0 {
		first := pending[0].Record
		if p := first.Parent(); p != "" {
			if _, err := r.Record(ctx, p); err != nil {
				return res, fmt.Errorf("push: parent of version %s: %w", first.ID, err)
			}
		}
	} else if _, err := r.Record(ctx, head); err != nil {
		return res, fmt.Errorf("push: %w", err)
	}
	if err := r.refusePushOnRetired(ctx, head, pending); err != nil {
		return res, err
	}
	// Nothing damaged leaves this machine (DESIGN.md §4.5): check every local
	// file against its record before the first upload.
	for _, p := range pending {
		if err := checkLocal(p); err != nil {
			return res, err
		}
	}
	if err := r.checkNewData(ctx, pending); err != nil {
		return res, err
	}
	for _, p := range pending {
		id := p.Record.ID
		for _, f := range []string{version.CatalogFile, version.DatasetFile, version.RecordFile} {
			r.step("push:" + f)
			if err := r.uploadFile(ctx, VersionKey(id, f), filepath.Join(p.Dir, f)); err != nil {
				return res, err
			}
		}
		r.record[id] = p.Record
		res.Uploaded++
	}
	r.forgetIDs()
	r.step("push:ref")
	// The ref log entry just before the move; removed if the move fails.
	entry, err := r.appendLog(ctx, branch, res.Old, head, ActionPush, "push: "+firstLine(r.pushMessage(ctx, head, extra)))
	if err != nil {
		return res, err
	}
	if err := r.refs.Update(ctx, branch, cur.Token, head); err != nil {
		r.dropLog(ctx, entry)
		if errors.Is(err, refs.ErrConflict) {
			now, _ := r.refs.Read(ctx, branch)
			return res, &RefusedError{Branch: branch, Current: now.ID, Proposed: head, Race: true, URL: r.url}
		}
		return res, err
	}
	return res, nil
}

// checkLocal compares a local version's catalog and dataset.json with the
// sizes and digests its record gives. Errors: *ChecksumError naming the
// local file and both digests.
func checkLocal(p Pending) error {
	rec := p.Record
	for _, f := range []struct {
		name   string
		size   int64
		sha256 string
	}{{version.CatalogFile, rec.Catalog.Size, rec.Catalog.SHA256}, {version.DatasetFile, rec.Dataset.Size, rec.Dataset.SHA256}} {
		path := filepath.Join(p.Dir, f.name)
		size, sum, err := FileDigest(path)
		if err != nil {
			return fmt.Errorf("local version %s: %w", rec.ID, err)
		}
		if size != f.size || sum != f.sha256 {
			return &ChecksumError{Version: rec.ID, WantSize: f.size, GotSize: size, WantSHA: f.sha256, GotSHA: sum, Location: path,
				Hint: "the local copy was changed after commit; nothing was uploaded: commit again from the working catalog"}
		}
	}
	return nil
}

// ErrDataMissing is wrapped by the error of a push whose versions list a
// data file of the repository that the store does not hold.
var ErrDataMissing = errors.New("a data file the version lists is not in the store")

// checkNewData checks, before anything is uploaded, that the data and
// delete files the pending versions add (begin_snapshot at or after the
// first snapshot they add) and that one of them can read at its snapshot
// are in the store, where they lie in the repository's data/ (files
// elsewhere are out of fdl's reach: DESIGN.md §5a). A file a working
// catalog wrote long before the commit may have been deleted by gc as a
// file no catalog lists (older than the grace period); publishing a version
// that names it would hand readers a broken version. One Stat per file.
// Errors: ErrDataMissing naming the version, the files and what to do.
func (r *Repo) checkNewData(ctx context.Context, pending []Pending) error {
	if len(pending) == 0 {
		return nil
	}
	head := pending[len(pending)-1]
	c, err := ducklake.Open(ctx, filepath.Join(head.Dir, version.CatalogFile))
	if err != nil {
		return fmt.Errorf("local version %s: %w", head.Record.ID, err)
	}
	files, err := c.DataFilesSince(ctx, pending[0].Record.DuckLake.Adds.First)
	c.Close()
	if err != nil {
		return fmt.Errorf("local version %s: %w", head.Record.ID, err)
	}
	norm, err := r.normaliser()
	if err != nil {
		return err
	}
	var missing []string
	seen := map[string]bool{}
	for _, f := range files {
		read := slices.ContainsFunc(pending, func(p Pending) bool {
			s := p.Record.DuckLake.Snapshot
			return f.BeginSnapshot <= s && (f.EndSnapshot == nil || s < *f.EndSnapshot)
		})
		if !read {
			continue
		}
		pl, err := norm.Place(f.ResolvedPath)
		if err != nil || pl.Key == "" || seen[pl.Key] {
			continue // not placeable or outside the repository: gc reports, never deletes
		}
		seen[pl.Key] = true
		if _, err := r.st.Stat(ctx, pl.Key); errors.Is(err, store.ErrNotExist) {
			missing = append(missing, pl.Key)
		} else if err != nil {
			return err
		}
	}
	if len(missing) == 0 {
		return nil
	}
	shown := missing
	if len(shown) > 5 {
		shown = shown[:5]
	}
	return fmt.Errorf("version %s (seq %d) lists %d data file(s) the store does not hold (%s): %w; nothing was pushed. Was the working catalog written long ago? gc deletes files no catalog lists once older than the grace period (fdl retention). Check out the branch again and redo the change",
		head.Record.ID, head.Record.Seq, len(missing), strings.Join(shown, ", "), ErrDataMissing)
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
