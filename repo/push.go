package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Push: local versions uploaded and a branch moved, fast-forward only.

// PushOptions are the choices of a push.
type PushOptions struct {
	// AllowFormatUpgrade lets the push move the branch to a version with a
	// newer DuckLake format or DuckDB storage version than the one it holds
	// (readers on the older DuckDB release lose the branch). Without it such
	// a push is refused with a *FormatUpgradeError.
	AllowFormatUpgrade bool
}

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

// Pending is a version committed locally and not yet in the store: its
// record and the folder holding its three files.
type Pending struct {
	Record *version.Record
	Dir    string // holds ducklake.duckdb, dataset.json, version.json
}

// entry reads the local version's version.json as a history entry.
// Errors: the file's, version.ErrBadRecord.
func (p Pending) entry() (history.Entry, error) {
	b, err := os.ReadFile(filepath.Join(p.Dir, version.RecordFile))
	if err != nil {
		return history.Entry{}, fmt.Errorf("local version %s: %w", p.Record.ID, err)
	}
	return history.NewEntry(b, p.Record.ID)
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
	// Abbrev is the short-id length after the push.
	Abbrev refs.Abbrev `json:"-"`
}

// Push uploads pending versions (oldest first; each one's first parent is
// the previous one or already in the store) and moves branch to head, fast-
// forward only (DESIGN.md §4.1–4.3), as one refs.Manager.Update: the
// branch is read, the fast-forward check (refs.IsAncestor, which walks
// head's first parents down to the seq of the version the branch holds,
// and no further) and the uploads run, then its ref log entry and the
// compare-and-swap from what was read. Each version's catalog, then
// dataset.json, then version.json, then its history pack is written
// create-only; the ref moves last. An interrupted push can be run again:
// objects already uploaded with the same bytes are accepted.
//
// Errors: *RefusedError (wrapping refs.ErrRefused) when the branch holds a
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
	local := make([]history.Entry, len(pending))
	for i, p := range pending {
		e, err := p.entry()
		if err != nil {
			return res, err
		}
		local[i] = e
	}
	recs := withLocal{r, r.hist.WithLocal(local), map[version.ID]*version.Record{}}
	for _, e := range local {
		recs.extra[e.Record.ID] = e.Record
	}
	_, err := r.refs.Update(ctx, branch, func(ctx context.Context, cur refs.Ref, err error) (refs.Move, error) {
		switch {
		case errors.Is(err, refs.ErrNotFound):
			if err := r.refs.CheckNewName(ctx, branch); err != nil {
				return refs.Move{}, err
			}
		case err != nil:
			return refs.Move{}, err
		case cur.ID == head:
			res.Old, res.UpToDate = cur.ID, true
			return refs.Move{}, nil
		default:
			res.Old = cur.ID
			ok, err := refs.IsAncestor(ctx, recs, cur.ID, head)
			if err != nil {
				return refs.Move{}, fmt.Errorf("push to %s: %w", branch.Short(), err)
			}
			if !ok {
				return refs.Move{}, &RefusedError{Branch: branch, Current: cur.ID, Proposed: head, URL: r.url}
			}
			if err := r.checkFormatUpgrade(ctx, recs, branch, cur.ID, head, o, &res); err != nil {
				return refs.Move{}, err
			}
		}
		if err := r.upload(ctx, head, pending, recs.h, &res); err != nil {
			return refs.Move{}, err
		}
		return refs.Move{To: head, Action: refs.ActionPush, Why: "push: " + firstLine(r.pushMessage(ctx, head, recs.extra))}, nil
	})
	if ce := (*refs.ConflictError)(nil); errors.As(err, &ce) {
		return res, &RefusedError{Branch: branch, Current: ce.Now, Proposed: head, Race: true, URL: r.url}
	}
	return res, err
}

// packBudget is how many records a push reads, at most, in place of
// missing history packs below a version it adds (a repository made before
// packs, or one a crash left without some): more, and the version's pack
// is left for gc to write, so that a push costs what it adds.
const packBudget = 16

// checkFormatUpgrade refuses (*FormatUpgradeError) a push from the version
// cur to head when head has a newer DuckLake format or storage version and
// o does not allow it; an allowed upgrade is recorded in res.
func (r *Repo) checkFormatUpgrade(ctx context.Context, recs withLocal, branch refs.Name, cur, head version.ID, o PushOptions, res *PushResult) error {
	curRec, err := recs.Record(ctx, cur)
	if err != nil {
		return fmt.Errorf("push to %s: %w", branch.Short(), err)
	}
	nextRec, err := recs.Record(ctx, head)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	change, err := formatUpgrade(curRec, nextRec)
	if err != nil {
		return fmt.Errorf("push to %s: %w", branch.Short(), err)
	}
	if change != nil && !o.AllowFormatUpgrade {
		return &FormatUpgradeError{Branch: branch, Change: *change}
	}
	res.FormatUpgrade = change
	return nil
}

// upload checks and uploads the pending versions of a push to head: the
// first one's parent (or head) must be in the store, none may build on a
// version out of retention, every local file must match its record and
// every data file they add must be in the store (nothing damaged or
// dangling leaves this machine: DESIGN.md §4.5). Each version's history
// pack is written after its record (h reads the pending versions).
func (r *Repo) upload(ctx context.Context, head version.ID, pending []Pending, h *history.Reader, res *PushResult) error {
	if len(pending) > 0 {
		first := pending[0].Record
		if p := first.Parent(); p != "" {
			if _, err := r.Record(ctx, p); err != nil {
				return fmt.Errorf("push: parent of version %s: %w", first.ID, err)
			}
		}
	} else if _, err := r.Record(ctx, head); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	if err := r.refusePushOnRetired(ctx, head, pending); err != nil {
		return err
	}
	for _, p := range pending {
		if err := checkLocal(p); err != nil {
			return err
		}
	}
	if err := r.checkNewData(ctx, pending); err != nil {
		return err
	}
	packs := h.Writer()
	packs.Step = func(string) { r.step("push:pack") }
	for _, p := range pending {
		id := p.Record.ID
		for _, f := range []string{version.CatalogFile, version.DatasetFile, version.RecordFile} {
			r.step("push:" + f)
			if err := r.uploadFile(ctx, VersionKey(id, f), filepath.Join(p.Dir, f)); err != nil {
				return err
			}
		}
		e, err := p.entry()
		if err != nil {
			return err
		}
		r.remember(e)
		if err := writePack(ctx, packs, e); err != nil {
			return err
		}
		res.Uploaded++
	}
	r.forgetIDs()
	return nil
}

// writePack writes the history pack of e's version, built within
// packBudget; a pack that cannot be built so (records missing below, or a
// history whose seq numbers do not link) is left out: readers fall back to
// the records, and gc writes it.
func writePack(ctx context.Context, w *history.Writer, e history.Entry) error {
	_, err := w.Write(ctx, e, packBudget)
	if errors.Is(err, history.ErrOverBudget) || errors.Is(err, history.ErrBadPack) {
		return nil
	}
	return err
}

// withLocal reads records and walks histories of the repository and, first,
// of the local versions a push is about to upload (for the fast-forward
// check).
type withLocal struct {
	r     *Repo
	h     *history.Reader
	extra map[version.ID]*version.Record
}

func (w withLocal) Record(ctx context.Context, id version.ID) (*version.Record, error) {
	if rec := w.extra[id]; rec != nil {
		return rec, nil
	}
	return w.r.Record(ctx, id)
}

func (w withLocal) Walk(ctx context.Context, id version.ID, fn func(*version.Record) (bool, error)) error {
	return w.h.Walk(ctx, id, func(e history.Entry) (bool, error) { return fn(e.Record) })
}

// firstLine returns s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// pushMessage returns the message of the version a push moves a branch to.
func (r *Repo) pushMessage(ctx context.Context, head version.ID, extra map[version.ID]*version.Record) string {
	if rec := extra[head]; rec != nil {
		return rec.Message
	}
	if rec, err := r.Record(ctx, head); err == nil {
		return rec.Message
	}
	return ""
}

// refusePushOnRetired refuses a push whose versions build on a version out
// of retention: the data files only that version's catalog listed may be
// gone, so the new catalog could name files that no longer exist.
func (r *Repo) refusePushOnRetired(ctx context.Context, head version.ID, pending []Pending) error {
	base := head
	if len(pending) > 0 {
		base = pending[0].Record.Parent()
	}
	if base == "" {
		return nil
	}
	ret, err := r.Retirement(ctx, base)
	if err != nil || ret == nil {
		return err
	}
	return &RetiredBaseError{Base: ret}
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
	return &DataMissingError{Version: head.Record.ID, Seq: head.Record.Seq, Missing: shown, Count: len(missing)}
}

// Push pushes the working directory's local versions to branch (default:
// the branch it was checked out from) with Repo.Push, then records the
// branch's new version as upstream and removes the pushed local copies.
func (w *Workdir) Push(ctx context.Context, r *Repo, branch string) (PushResult, error) {
	return w.PushWith(ctx, r, branch, PushOptions{})
}

// PushWith is Push with options (PushOptions: AllowFormatUpgrade).
func (w *Workdir) PushWith(ctx context.Context, r *Repo, branch string, o PushOptions) (PushResult, error) {
	if branch == "" {
		branch = w.State.Branch
	}
	name, err := refs.Branch(branch)
	if err != nil {
		return PushResult{}, err
	}
	if w.State.Base == "" {
		return PushResult{Branch: name}, NothingToPushError{}
	}
	unlock, err := w.lock("push")
	if err != nil {
		return PushResult{}, err
	}
	defer unlock()
	// Re-read the state under the lock: a commit may have just finished.
	if cur, err := OpenWorkdir(w.Dir); err == nil {
		w.State, w.BaseRecord = cur.State, cur.BaseRecord
	}
	pending, err := w.PendingVersions()
	if err != nil {
		return PushResult{}, err
	}
	res, err := r.PushWith(ctx, name, w.State.Base, pending, o)
	if err != nil {
		return res, err
	}
	r.step("push:state")
	w.State.Upstream = w.State.Base
	if err := w.save(w.BaseRecord); err != nil {
		return res, err
	}
	for _, p := range pending {
		os.RemoveAll(p.Dir)
	}
	res.Abbrev, _ = r.Abbrev(ctx, res.Old, res.New)
	return res, nil
}
