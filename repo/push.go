package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/stamp"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// Push: local versions uploaded and a branch moved, fast-forward only.

// PushOptions are the choices of a push.
type PushOptions struct {
	// AllowFormatChange lets the move change the set of DuckDB releases
	// that read the branch: a newer DuckLake format or DuckDB storage
	// version (readers on the older release lose the branch), or an older
	// or other one (readers on the newer release lose it). Without it such
	// a move is refused with a *FormatChangeError.
	AllowFormatChange bool
}

// FormatChange describes what readers of a branch need before and after a
// move: the DuckLake format, the storage version and the Readers of the
// version the branch holds (From) and of the one it moves to (To).
type FormatChange struct {
	From FormatInfo `json:"from"`
	To   FormatInfo `json:"to"`
	// Upgrade: To has a newer DuckLake format or needs a newer DuckDB
	// release (readers on the older release lose the branch); else the
	// readers change another way (an older format: readers on the newer
	// release lose it).
	Upgrade bool `json:"upgrade"`
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

// formatChange compares the records of the version a branch holds (cur)
// and of the one a move takes it to (next). It returns the change when the
// set of DuckDB releases that attach them differs (Readers.Attach: up, as
// for a newer DuckLake format, or down, as for a move from 1.0 to a
// development format no release reads), or when next has a newer DuckLake
// format (meta.CompareFormats) or needs a newer DuckDB release to open
// (readerFloor); else nil: a storage version that grows below what the
// format already needs loses no reader (DuckDB 1.5's ducklake extension
// moves a storage-64 catalog to 65 on its first write, and both need
// DuckDB 1.5.2 for DuckLake 1.0). Its error is always nil (kept for the
// callers' shape).
func formatChange(cur, next *version.Record) (*FormatChange, error) {
	byFormat, err := meta.CompareFormats(next.DuckLake.Format, cur.DuckLake.Format)
	if err != nil {
		// A format fdl cannot order changes the readers when they differ.
		byFormat = 0
	}
	byStorage := meta.CompareReleases(readerFloor(next), readerFloor(cur))
	from, to := formatInfo(cur), formatInfo(next)
	upgrade := byFormat > 0 || byStorage > 0
	if !upgrade && from.Readers.Attach == to.Readers.Attach {
		return nil, nil
	}
	return &FormatChange{From: from, To: to, Upgrade: upgrade}, nil
}

// FormatChangeOf compares the records of the version a branch holds (cur)
// and of the one a move takes it to (next), by the push's rule
// (docs/spec.md §9): the change of the DuckDB releases that read the
// branch, or nil when none lose it. A mirror's branch moves follow it.
func FormatChangeOf(cur, next *version.Record) *FormatChange {
	c, _ := formatChange(cur, next)
	return c
}

// readerFloor returns the oldest DuckDB release a reader of rec's catalog
// needs for its storage version (Storage.MinDuckDB, e.g. "v1.2.0" for 65)
// and, when the format has published readers, for its DuckLake format (the
// ducklake extension's oldest release, e.g. "1.5.2" for 1.0): the later of
// the two. An unknown storage release is returned as is ("").
func readerFloor(rec *version.Record) string {
	min := rec.Catalog.Storage.MinDuckDB
	if min == "" {
		return min
	}
	if f, ok := meta.LookupFormat(rec.DuckLake.Format); ok && f.Extension != nil && meta.CompareReleases(f.Extension.Min, min) > 0 {
		return f.Extension.Min
	}
	return min
}

// Pending is a version committed locally and not yet in the store: its
// record and the folder holding its three files.
type Pending struct {
	Record *version.Record
	Dir    string // holds ducklake.duckdb, dataset.json, version.json
	// Raw is the version.json Record was parsed from; nil: read from Dir.
	// A push uploads, signs-checks and packs these bytes, not a later
	// read of the file, so a record changed while it runs is not
	// published unchecked.
	Raw []byte
}

// recordBytes returns the local version's version.json: Raw, else read
// from Dir. Errors: the file's.
func (p Pending) recordBytes() ([]byte, error) {
	if p.Raw != nil {
		return p.Raw, nil
	}
	b, err := os.ReadFile(filepath.Join(p.Dir, version.RecordFile))
	if err != nil {
		return nil, fmt.Errorf("local version %s: %w", p.Record.ID, err)
	}
	return b, nil
}

// entry reads the local version's version.json as a history entry.
// Errors: the file's, version.ErrBadRecord.
func (p Pending) entry() (history.Entry, error) {
	b, err := p.recordBytes()
	if err != nil {
		return history.Entry{}, err
	}
	return history.NewEntry(b, p.Record.ID)
}

// PushResult says what a push did (or a request's creation or update,
// which publish the same way). Its JSON is 'fdl push --json'.
type PushResult struct {
	// Ref is the ref moved (refs/heads/… for a push); Branch its short
	// name.
	Ref      refs.Name  `json:"ref"`
	Branch   string     `json:"branch"`
	Old      version.ID `json:"old,omitempty"` // what the ref held ("" if it did not exist)
	New      version.ID `json:"new"`
	Uploaded int        `json:"uploaded"` // versions uploaded
	UpToDate bool       `json:"up_to_date"`
	// Ahead (with UpToDate): the branch holds New already, with versions
	// after it (Old is its head); a working directory's pull brings
	// them.
	Ahead bool `json:"branch_ahead,omitempty"`
	// FormatUpgrade is set when the push moved the branch to a newer
	// DuckLake format or storage version (PushOptions.AllowFormatChange).
	FormatChange *FormatChange `json:"format_change,omitempty"`
	// Abbrev is the short-id length after the push.
	Abbrev refs.Abbrev `json:"-"`
}

// Publish uploads pending versions (oldest first; each one's first parent is
// the previous one or already in the store) and moves branch to head, fast-
// forward only (docs/spec.md §10.1–10.3), as one refs.Manager.Update: the
// branch is read, the fast-forward check (refs.IsAncestor, which walks
// head's first parents down to the seq of the version the branch holds,
// and no further) and the uploads run, then its ref log entry,
// confirmPush (no running gc may delete what the versions need, every file
// they read is in the store, their folders are whole), and the
// compare-and-swap from what was read. A push refused after its uploads
// removes them. Each version's catalog, then dataset.json, then
// version.json, then its history pack is written
// create-only; the ref moves last. An interrupted push can be run again:
// objects already uploaded with the same bytes are accepted.
//
// A branch that holds head already, as its version or an ancestor of it,
// is up to date (PushResult.UpToDate; Ahead when it moved on from head).
//
// Errors: *RefusedError (wrapping refs.ErrRefused) when the branch holds a
// version that is not an ancestor of head (nor head one of it), or another
// push moved it first;
// *refs.DanglingError when the branch names a version the repository does
// not hold (damage, not a refusal);
// *FormatChangeError (wrapping ErrFormatUpgrade) when head has a newer
// DuckLake format or storage version than the version the branch holds;
// nothing is moved then. With o.AllowFormatChange a push to a newer
// format is made, and PushResult.FormatChange says so. (A working
// directory's push is workdir.Workdir.Push, which calls this with its
// unpushed versions under its lock.)
func (r *Repo) Publish(ctx context.Context, branch refs.Name, head version.ID, pending []Pending, o PushOptions) (PushResult, error) {
	rule := func(ctx context.Context, cur refs.Ref, err error, recs withLocal, res *PushResult) (refs.Move, error) {
		switch {
		case errors.Is(err, refs.ErrNotFound):
			if err := r.refs.CheckNewName(ctx, branch); err != nil {
				return refs.Move{}, err
			}
		case err != nil:
			return refs.Move{}, err
		case cur.ID == head:
			return refs.Move{}, nil
		default:
			if err := refs.CheckHeld(ctx, recs, branch, cur.ID); err != nil {
				return refs.Move{}, err
			}
			ok, err := refs.IsAncestor(ctx, recs, cur.ID, head)
			if err != nil {
				return refs.Move{}, fmt.Errorf("push to %s: %w", branch.Short(), err)
			}
			if !ok {
				// A branch that moved on from head holds it already:
				// nothing to push (a rerun after another writer's
				// push), not a change to redo.
				if held, err := refs.IsAncestor(ctx, recs, head, cur.ID); err == nil && held {
					res.Ahead = true
					return refs.Move{}, nil
				}
				return refs.Move{}, &RefusedError{Branch: branch, Current: cur.ID, Proposed: head, URL: r.where}
			}
			if err := r.checkFormatChange(ctx, recs, branch, cur.ID, head, o, res); err != nil {
				return refs.Move{}, err
			}
		}
		return refs.Move{To: head, Action: refs.ActionPush, Why: "push: "}, nil
	}
	res, err := r.publish(ctx, branch, head, pending, rule)
	if ce := (*refs.ConflictError)(nil); errors.As(err, &ce) {
		return res, &RefusedError{Branch: branch, Current: ce.Now, Proposed: head, Race: true, URL: r.where}
	}
	return res, err
}

// publishRule decides a publish of head onto a ref from what the ref holds
// (cur and the read's error, as refs.Check gets them), reading records
// through recs (which include the pending versions): the move to make (a
// Why that is empty or ends with ": " is completed with head's message,
// first line), the zero Move when the ref holds head already, or an error
// refusing it. It may note what it decided in res.
type publishRule func(ctx context.Context, cur refs.Ref, err error, recs withLocal, res *PushResult) (refs.Move, error)

// publish uploads pending versions and moves ref n to head as rule
// decides, in one refs.Manager.Update: the uploads run inside the check,
// then the ref log entry is written, confirmPush runs (no running gc may
// delete what the versions need, every file they read is in the store,
// their folders are whole), and the compare-and-swap; a publish refused
// after its uploads removes them. The one way versions reach a ref, for a
// push and for a request.
func (r *Repo) publish(ctx context.Context, n refs.Name, head version.ID, pending []Pending, rule publishRule) (PushResult, error) {
	res := PushResult{Ref: n, Branch: n.Short(), New: head}
	recs, err := r.withLocal(pending)
	if err != nil {
		return res, err
	}
	var confirmErr error
	_, err = r.refs.Update(ctx, n, func(ctx context.Context, cur refs.Ref, err error) (refs.Move, error) {
		res.Old = cur.ID
		mv, err := rule(ctx, cur, err, recs, &res)
		if err != nil || mv.Action == "" {
			res.UpToDate = err == nil
			return refs.Move{}, err
		}
		if err := r.upload(ctx, head, pending, recs.h, &res); err != nil {
			return refs.Move{}, err
		}
		if mv.Why == "" || strings.HasSuffix(mv.Why, ": ") {
			mv.Why += version.FirstLine(r.pushMessage(ctx, head, recs.extra))
		}
		mv.Confirm = func(ctx context.Context, entry string) error {
			if err := r.confirmPush(ctx, head, pending, entry); err != nil {
				confirmErr = err
				return err
			}
			return nil
		}
		return mv, nil
	})
	if confirmErr != nil && err == confirmErr {
		// Refused after the uploads: take them back, so a refused publish
		// leaves the repository as it found it.
		if n, first := r.removeUploads(ctx, pending); n > 0 {
			err = &LeftoverError{Err: err, Failed: n, First: first}
		}
		res.Uploaded = 0
	}
	return res, err
}

// packBudget is how many records a push reads, at most, in place of
// missing history packs below a version it adds (a repository made before
// packs, or one a crash left without some): more, and the version's pack
// is left for gc to write, so that a push costs what it adds.
const packBudget = 16

// checkFormatChange refuses (*FormatChangeError) a push from the version
// cur to head when head has a newer DuckLake format or storage version and
// o does not allow it; an allowed upgrade is recorded in res.
func (r *Repo) checkFormatChange(ctx context.Context, recs withLocal, branch refs.Name, cur, head version.ID, o PushOptions, res *PushResult) error {
	curRec, err := recs.Record(ctx, cur)
	if err != nil {
		return fmt.Errorf("push to %s: %w", branch.Short(), err)
	}
	nextRec, err := recs.Record(ctx, head)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	change, err := formatChange(curRec, nextRec)
	if err != nil {
		return fmt.Errorf("push to %s: %w", branch.Short(), err)
	}
	if change != nil && !o.AllowFormatChange {
		return &FormatChangeError{Branch: branch, Change: *change}
	}
	res.FormatChange = change
	return nil
}

// upload checks and uploads the pending versions of a push to head: the
// first one's parent (or head) must be in the store, none may build on a
// version out of retention, each must follow its parent and every local
// file must match its record (nothing damaged leaves this machine:
// docs/spec.md §10.5). Each catalog is read once: hashed as it is copied,
// or, where the working directory and a folder store share a file system,
// hashed and then hard-linked into the store (uploadCatalog). Each
// version's history pack is written after its record (h reads the pending
// versions). That the data files they read are in the store is checked
// after the uploads, once the move is announced, in confirmPush.
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
	if err := r.checkLineage(ctx, pending); err != nil {
		return err
	}
	sigs := make([][]byte, len(pending)) // nil: unsigned
	// Each version's dataset.json and version.json as checked: these
	// bytes are uploaded, not a later read of the files.
	datasets, records := make([][]byte, len(pending)), make([][]byte, len(pending))
	for i, p := range pending {
		var err error
		if datasets[i], err = readLocalFile(p, version.DatasetFile, p.Record.Dataset); err != nil {
			return err
		}
		if err := checkLocalCatalog(p); err != nil {
			return err
		}
		if records[i], err = p.recordBytes(); err != nil {
			return err
		}
		if sigs[i], err = checkLocalSignature(p); err != nil {
			return err
		}
	}
	if err := r.checkPublished(ctx, pending); err != nil {
		return err
	}
	packs := h.Writer()
	packs.Step = func(string) { r.step("push:pack") }
	for i, p := range pending {
		id := p.Record.ID
		r.step("push:" + version.CatalogFile)
		if err := r.uploadCatalog(ctx, p); err != nil {
			return err
		}
		for _, f := range []struct {
			name string
			b    []byte
		}{{version.DatasetFile, datasets[i]}, {version.RecordFile, records[i]}} {
			r.step("push:" + f.name)
			if err := r.uploadBytes(ctx, VersionKey(id, f.name), f.b); err != nil {
				return err
			}
		}
		if sigs[i] != nil {
			// The record's signature, after the record and before its
			// pack and the ref move (docs/spec.md §9, §20).
			r.step("push:" + version.SignatureFile)
			if err := r.uploadBytes(ctx, SignatureKey(id, ""), sigs[i]); err != nil {
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

// LocalRecords reads records and walks histories of the repository and,
// first, of the local versions a push is about to upload (for the
// fast-forward check) or a working directory holds (RecordsWith).
type LocalRecords = withLocal

// withLocal is LocalRecords.
type withLocal struct {
	r     *Repo
	h     *history.Reader
	extra map[version.ID]*version.Record
}

// withLocal returns the record reader and history walker of the
// repository with the pending versions (committed here, not in the store)
// read first. Errors: a pending version.json's.
func (r *Repo) withLocal(pending []Pending) (withLocal, error) {
	local := make([]history.Entry, len(pending))
	for i, p := range pending {
		e, err := p.entry()
		if err != nil {
			return withLocal{}, err
		}
		local[i] = e
	}
	w := withLocal{r, r.hist.WithLocal(local), map[version.ID]*version.Record{}}
	for _, e := range local {
		w.extra[e.Record.ID] = e.Record
	}
	return w, nil
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

// checkLineage checks that each pending version follows its first parent
// (the previous pending version, or the store's record of the first one's
// parent) by the rule verify reports by, version.CheckChild. Errors:
// *LineageError, the store's errors.
func (r *Repo) checkLineage(ctx context.Context, pending []Pending) error {
	for i, p := range pending {
		var parent *version.Record
		switch {
		case i > 0:
			parent = pending[i-1].Record
		case p.Record.Parent() != "":
			var err error
			if parent, err = r.Record(ctx, p.Record.Parent()); err != nil {
				return fmt.Errorf("push: parent of version %s: %w", p.Record.ID, err)
			}
		default:
			continue
		}
		if parent.ID != p.Record.Parent() {
			return &LineageError{Version: p.Record.ID, Parent: parent.ID, Problems: []version.LineageProblem{{Code: string(CodeParentMissing), Message: fmt.Sprintf("its first parent is %s", p.Record.Parent())}}}
		}
		if probs := version.CheckChild(parent, p.Record); len(probs) > 0 {
			return &LineageError{Version: p.Record.ID, Parent: parent.ID, Problems: probs}
		}
	}
	return nil
}

// checkLocal compares a local version's catalog and dataset.json with the
// sizes and digests its record gives (show of an unpushed version).
// Errors: *ChecksumError naming the local file and both digests.
func checkLocal(p Pending) error {
	c := p.Record.Catalog
	if err := checkLocalFile(p, version.CatalogFile, version.File{Size: c.Size, SHA256: c.SHA256}); err != nil {
		return err
	}
	return checkLocalFile(p, version.DatasetFile, p.Record.Dataset)
}

// checkLocalFile compares a local version's file (dataset.json; catalogs
// are checked as they are uploaded) with the size and digest its record
// gives. Errors: *ChecksumError naming the local file and both digests.
func checkLocalFile(p Pending, name string, want version.File) error {
	path := filepath.Join(p.Dir, name)
	size, sum, err := FileDigest(path)
	if err != nil {
		return fmt.Errorf("local version %s: %w", p.Record.ID, err)
	}
	return localMismatch(p, path, want, size, sum)
}

// readLocalFile reads a local version's small file (dataset.json: never
// a catalog, which checkLocalFile streams) before any upload and returns
// its bytes once they match the size and digest its record gives.
// Errors: *ChecksumError naming the local file and both digests; the
// file's.
func readLocalFile(p Pending, name string, want version.File) ([]byte, error) {
	path := filepath.Join(p.Dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("local version %s: %w", p.Record.ID, err)
	}
	sum := sha256.Sum256(b)
	if err := localMismatch(p, path, want, int64(len(b)), hex.EncodeToString(sum[:])); err != nil {
		err.(*ChecksumError).Hint = hintBeforeUpload
		return nil, err
	}
	return b, nil
}

// checkLocalCatalog checks a local version's catalog before any upload:
// without reading it when its stamp is the one commit left
// (stamp.Unchanged: its bytes are the ones commit hashed), else hashed
// (and hashed again as it is uploaded). So a push that meets a changed
// catalog has uploaded nothing, however many versions come before it.
// Errors: *ChecksumError naming the local file and both digests; the
// file's.
func checkLocalCatalog(p Pending) error {
	path := filepath.Join(p.Dir, version.CatalogFile)
	if fi, err := os.Stat(path); err == nil && stamp.Unchanged(p.Dir, fi, p.Record.Catalog.Size) {
		return nil
	}
	err := checkLocalFile(p, version.CatalogFile, version.File{Size: p.Record.Catalog.Size, SHA256: p.Record.Catalog.SHA256})
	var ce *ChecksumError
	if errors.As(err, &ce) {
		ce.Hint = hintBeforeUpload
	}
	return err
}

// The hints of a local file that differs from its record: found before
// the first upload, or by an upload (a file changed meanwhile).
const (
	hintBeforeUpload = "the local copy was changed after commit; nothing was uploaded"
	hintAtUpload     = "the local copy was changed after commit; the push stopped there, no ref moved"
)

// localMismatch returns the *ChecksumError of a local file whose size or
// digest differ from the record's, else nil.
func localMismatch(p Pending, path string, want version.File, size int64, sum string) error {
	if size == want.Size && sum == want.SHA256 {
		return nil
	}
	return &ChecksumError{Version: p.Record.ID, WantSize: want.Size, GotSize: size, WantSHA: want.SHA256, GotSHA: sum, Location: path,
		Hint: hintAtUpload}
}

// checkNewData checks, once the versions are uploaded and the move
// announced (confirmPush), that the data and delete files the pending
// versions add (begin_snapshot at or after the first snapshot they add, or
// written by a merge or flush since) and that one of them can read at its
// snapshot are in the store, where they lie in the repository's data/
// (files elsewhere are out of fdl's reach: docs/spec.md §8). A file a
// working catalog wrote long before the commit may have been deleted by gc
// as a file no catalog lists (older than the grace period); publishing a
// version that names it would hand readers a broken version. On a store
// that is not a folder of this machine, a file read by a local path is
// refused too: no reader of the store reaches it.
//
// Its cost follows the files added, not the repository: the catalog's own
// DuckDB computes their keys (ducklake.AddedKeys; a simple relative path
// takes its table folder's key, retention.Normaliser.PlaceDir, other paths
// are placed one by one). Up to statMaxKeys keys are checked with one Stat
// each, statWorkers at a time; more are checked against one listing per
// folder, limited to the prefix that folder's new keys share (DuckDB file
// names begin with a time-ordered UUID, so new files share a long prefix;
// a folder store lists names without a stat per file), the listings
// running listWorkers at a time on object stores while DuckDB computes
// the keys, and DuckDB compares the two sets. Neither the keys nor a
// listing is held in Go memory.
// Errors: *DataMissingError and *LocalDataError naming the version, the
// files (or the local folders) and what to do.
func (r *Repo) checkNewData(ctx context.Context, pending []Pending) error {
	if len(pending) == 0 {
		return nil
	}
	head := pending[len(pending)-1]
	c, err := ducklake.Open(ctx, filepath.Join(head.Dir, version.CatalogFile))
	if err != nil {
		return fmt.Errorf("local version %s: %w", head.Record.ID, err)
	}
	defer c.Close()
	norm, err := r.Normaliser()
	if err != nil {
		return err
	}
	readAt := make([]int64, len(pending))
	for i, p := range pending {
		readAt[i] = p.Record.DuckLake.Snapshot
	}
	pc := &pathCheck{norm: norm, onDisk: r.dataOnDisk()}
	r.step("push:data-keys")
	keys, err := c.AddedKeys(ctx, pending[0].Record.DuckLake.Adds.First, readAt, pc.folder, pc.place)
	if err != nil {
		return fmt.Errorf("local version %s: %w", head.Record.ID, err)
	}
	defer keys.Close()
	if err := pc.refusal(head.Record, r.where, r.opts.AllowLocalData); err != nil {
		return err
	}
	r.step("push:data-compare")
	missing, count, wrong, err := r.missingData(ctx, keys)
	switch {
	case err != nil:
		return err
	case count > 0:
		return &DataMissingError{Version: head.Record.ID, Seq: head.Record.Seq, Missing: missing, Count: int(count)}
	case len(wrong) > 0:
		return &DataSizeError{Version: head.Record.ID, Seq: head.Record.Seq, Files: wrong[:min(len(wrong), missingShown)], Count: len(wrong)}
	}
	return nil
}

// pathCheck collects, while the data check places the paths a push adds,
// the ones no reader reaches reliably. A path the normaliser cannot place
// (bad): one holding a control character (which DuckDB's own writer never
// makes: it percent-encodes partition values), a relative data_path (which
// DuckDB resolves against each reader's working directory), another host's
// file:// URL. A path DuckDB reads outside the repository while its text
// lies inside (disputed: a location holding '?'). On an object store
// (onDisk false), a local path (local: outside the repository, it gets no
// key). The first five of each are kept, with their counts.
type pathCheck struct {
	norm                    *retention.Normaliser
	onDisk                  bool
	local, bad, disputed    []string
	badCount, disputedCount int
}

// isLocal says whether p is a local path that readers of an object store
// cannot reach.
func (pc *pathCheck) isLocal(p string) bool {
	if pc.onDisk {
		return false
	}
	pl, err := pc.norm.Place(p)
	return err == nil && pl.Key == "" && strings.HasPrefix(pl.Canonical, "/")
}

// refuse collects err when it is a path the normaliser cannot place.
func (pc *pathCheck) refuse(err error) {
	if errors.Is(err, retention.ErrPath) {
		if pc.badCount++; len(pc.bad) < 5 {
			pc.bad = append(pc.bad, err.Error())
		}
	}
}

// dispute collects p when yes (its text and DuckDB's reading disagree).
func (pc *pathCheck) dispute(p string, yes bool) {
	if yes {
		if pc.disputedCount++; len(pc.disputed) < 5 {
			pc.disputed = append(pc.disputed, fmt.Sprintf("%q", p))
		}
	}
}

// folder places a table folder (ducklake.AddedKeys' folder callback).
func (pc *pathCheck) folder(dir string) (ducklake.FolderKey, error) {
	dp, err := pc.norm.PlaceDir(dir)
	if err == nil && dp.KeyPrefix == "" && pc.isLocal(dir+"x") {
		pc.local = append(pc.local, dir)
	}
	pc.refuse(err)
	pc.dispute(dir, dp.Disputed)
	return ducklake.FolderKey{Prefix: dp.KeyPrefix, Nested: dp.Nested}, err
}

// place places one file's path (ducklake.AddedKeys' place callback).
func (pc *pathCheck) place(p string) (string, error) {
	pl, err := pc.norm.Place(p)
	if err == nil && pl.Key == "" && pc.isLocal(p) {
		pc.local = append(pc.local, p)
	}
	pc.refuse(err)
	pc.dispute(p, pl.Disputed)
	return pl.Key, err
}

// refusal is the error for what was collected, for the version head of
// the repository where: *DataPathError for bad then disputed paths,
// *LocalDataError for local ones unless allowLocal; nil when none.
func (pc *pathCheck) refusal(head *version.Record, where string, allowLocal bool) error {
	if pc.badCount > 0 {
		return &DataPathError{Version: head.ID, Seq: head.Seq, Paths: pc.bad, Count: pc.badCount}
	}
	if pc.disputedCount > 0 {
		return &DataPathError{Version: head.ID, Seq: head.Seq, Paths: pc.disputed, Count: pc.disputedCount, Disputed: true}
	}
	if len(pc.local) > 0 && !allowLocal {
		local := slices.Compact(slices.Sorted(slices.Values(pc.local)))
		return &LocalDataError{Version: head.ID, Seq: head.Seq, Where: where, Paths: local[:min(len(local), 5)], Count: len(local)}
	}
	return nil
}

// statMaxKeys is how many added files the data check Stats one by one;
// beyond it, listing is cheaper (an object store lists 1,000 keys a
// request).
var statMaxKeys = 256

// The data check's strategy (checkNewData).
const (
	statWorkers     = 16 // Stats at once
	listWorkers     = 8  // listings at once on an object store
	missingShown    = 5  // missing keys an error names
	listedBatchKeys = 1024
)

// missingData returns the first missingShown keys the store lacks, in byte
// order, and how many it lacks; checked one Stat each (at most
// statMaxKeys files), it also returns the files whose size in the store
// differs from the catalog's file_size_bytes ("key: N bytes in the store,
// M recorded"; docs/spec.md §23). Checked against listings (more files),
// names only are compared: a folder's listing gives no sizes without a
// stat of each file.
func (r *Repo) missingData(ctx context.Context, keys *ducklake.AddedKeys) ([]string, int64, []string, error) {
	switch n := keys.Count(); {
	case n == 0:
		return nil, 0, nil, nil
	case n <= int64(statMaxKeys):
		ks, err := keys.KeySizes(ctx, statMaxKeys)
		if err != nil {
			return nil, 0, nil, err
		}
		if slices.ContainsFunc(ks, func(k ducklake.KeySize) bool { return len(k.Key) > store.MaxKeyLen }) {
			// A folder store holds files whose keys are longer than a
			// Stat takes (store.CheckKey), and lists them: list.
			break
		}
		missing, wrong, err := r.statMissing(ctx, ks)
		if err != nil {
			return nil, 0, nil, err
		}
		return missing[:min(len(missing), missingShown)], int64(len(missing)), wrong, nil
	}
	groups, err := keys.Groups(ctx)
	if err != nil {
		return nil, 0, nil, err
	}
	prefixes := make([]string, len(groups))
	for i, g := range groups {
		prefixes[i] = g.Prefix
	}
	missing, count, err := keys.Missing(ctx, func(emit func([]byte) error) error {
		return r.listKeys(ctx, prefixes, emit)
	}, missingShown)
	return missing, count, nil, err
}

// statMissing returns the keys (sorted) the store does not hold, and the
// files whose size differs from the recorded one (a size of -1 is not
// recorded), one Stat each, statWorkers at a time.
func (r *Repo) statMissing(ctx context.Context, keys []ducklake.KeySize) ([]string, []string, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statWorkers)
	gone := make([]bool, len(keys))
	sizes := make([]int64, len(keys))
	for i, k := range keys {
		g.Go(func() error {
			oi, err := r.st.Stat(gctx, k.Key)
			switch {
			case errors.Is(err, store.ErrNotExist):
				gone[i] = true
			case err != nil:
				return err
			}
			sizes[i] = oi.Size
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var missing, wrong []string
	for i, k := range keys {
		switch {
		case gone[i]:
			missing = append(missing, k.Key)
		case k.Size > 0 && sizes[i] >= 0 && sizes[i] != k.Size:
			wrong = append(wrong, fmt.Sprintf("%s: %d bytes in the store, %d recorded", k.Key, sizes[i], k.Size))
		}
	}
	slices.Sort(missing)
	slices.Sort(wrong)
	return slices.Compact(missing), wrong, nil
}

// listKeys lists the store's keys under each prefix and hands them to
// emit, from the calling goroutine: a folder store one prefix after the
// other (its disk is the limit), another store listWorkers prefixes at
// once, each listing's keys passed on in batches. emit may be given a
// store's buffer (store.KeyLister): it copies what it keeps.
func (r *Repo) listKeys(ctx context.Context, prefixes []string, emit func([]byte) error) error {
	list := func(ctx context.Context, prefix string, fn func([]byte) error) error {
		if kl, ok := r.st.(store.KeyLister); ok {
			return kl.ListKeys(ctx, prefix, fn)
		}
		return r.st.List(ctx, prefix, func(oi store.ObjectInfo) error { return fn([]byte(oi.Key)) })
	}
	if _, local := r.Folder(); local || len(prefixes) == 1 {
		for _, p := range prefixes {
			if err := list(ctx, p, emit); err != nil {
				return err
			}
		}
		return nil
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(lctx)
	g.SetLimit(listWorkers)
	batches := make(chan []string, listWorkers)
	send := func(b []string) error {
		select {
		case batches <- b:
			return nil
		case <-gctx.Done():
			return gctx.Err()
		}
	}
	go func() {
		for _, p := range prefixes {
			g.Go(func() error {
				batch := make([]string, 0, listedBatchKeys)
				err := list(gctx, p, func(k []byte) error {
					if batch = append(batch, string(k)); len(batch) < listedBatchKeys {
						return nil
					}
					b := batch
					batch = make([]string, 0, listedBatchKeys)
					return send(b)
				})
				if err == nil && len(batch) > 0 {
					err = send(batch)
				}
				return err
			})
		}
		g.Wait()
		close(batches)
	}()
	var emitErr error
	for batch := range batches {
		for _, k := range batch {
			if emitErr != nil {
				break // drain: the listings stop
			}
			if emitErr = emit([]byte(k)); emitErr != nil {
				cancel()
			}
		}
	}
	if emitErr != nil {
		return emitErr
	}
	return g.Wait()
}
