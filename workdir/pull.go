package workdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/repo"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/filecopy"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Pull: a working directory brought up to the head of its branch, in place.

// PullOptions are the inputs of Workdir.Pull.
type PullOptions struct {
	// Discard allows replacing a working catalog that holds snapshots not
	// committed yet (they are lost), or whose base is not on the branch's
	// history (nothing is lost: the base is in the repository). Versions
	// committed here and not pushed are never discarded.
	Discard bool
}

// PullResult says what a pull did. Its JSON is 'fdl pull --json'.
type PullResult struct {
	Dir    string     `json:"dir"`
	Branch string     `json:"branch"`
	Old    version.ID `json:"old,omitempty"` // the base before ("" for none)
	New    version.ID `json:"new"`           // the base after: the branch's head
	Seq    int64      `json:"seq"`           // New's seq
	// Pulled counts the versions the base moved forward by.
	Pulled   int  `json:"pulled"`
	UpToDate bool `json:"up_to_date"`
	// Ahead counts versions of the base the branch lacks (up to date, to
	// be pushed).
	Ahead int `json:"ahead"`
	// Discarded counts the snapshots not committed that the replaced
	// working catalog held (only with PullOptions.Discard).
	Discarded int    `json:"discarded"`
	Catalog   string `json:"catalog_path"`
	// Attach is the DuckDB statement that attaches the working catalog;
	// AttachChanged is true when it differs from the one before (the new
	// version's catalog reads its data at another data_path).
	Attach        string `json:"attach"`
	AttachChanged bool   `json:"attach_changed"`
	// Remade: the working catalog was not there or unreadable, and was
	// made anew from the base, a version committed here and not pushed
	// (with Discard; the state stays, and UpToDate is set).
	Remade bool `json:"remade,omitempty"`
}

// Pulling is the intent of a pull, in state.json while the working catalog
// is being replaced: if fdl stops between the replacement and the state
// update, the next pull sees it and finishes.
type Pulling struct {
	From version.ID `json:"from,omitempty"`
	To   version.ID `json:"to"`
}

// Pull brings the working directory up to the head of its branch in place
// (git pull --ff-only): the working catalog keeps its path and form
// (DuckDB or SQLite), so the ATTACH statement stays the same, and only
// when the branch's head descends from the base (a fast-forward) and the
// working directory has nothing that is not in the repository. It reads
// the branch's ref once; the head's catalog is fetched and checked against
// its record, converted (SQLite), then replaces the working catalog
// (ducklake.ReplaceSQLite: one SQLite write transaction that first checks,
// inside it, that no snapshot was added meanwhile; ducklake.ReplaceDuckDB:
// a rename while holding DuckDB's own lock on the file, refused while a
// process has it attached), and the state moves to the head last.
//
// Errors: *UnpushedError (versions committed here and not pushed: never
// replaced), *UncommittedError (snapshots not committed, without Discard),
// *PullNotFastForwardError (the branch does not descend from the base; it
// wraps refs.ErrRefused), *NoBranchToPullError, ducklake.ErrLocked (a
// process holds the catalog), *RetiredError (the head left retention),
// *ChecksumError, *BusyError (another fdl in this directory). On any error
// the working directory is left as it was.
func (w *Workdir) Pull(ctx context.Context, o PullOptions) (*PullResult, error) {
	r, err := w.Repo(ctx)
	if err != nil {
		return nil, err
	}
	unlock, err := w.lock("pull")
	if err != nil {
		return nil, err
	}
	defer unlock()
	_ = w.reload() // under the lock: another process may have committed
	remake, err := w.remakeCatalog(ctx, o)
	if err != nil {
		return nil, err
	}
	if remake {
		w.State.Pulling = nil // the catalog is made anew from the head
	} else if err := w.settlePull(ctx, r); err != nil {
		return nil, err
	}
	res := &PullResult{Dir: w.Dir, Branch: w.State.Branch, Old: w.State.Base, Catalog: w.CatalogPath()}
	format := ""
	if w.BaseRecord != nil {
		format = w.BaseRecord.DuckLake.Format
	}
	res.Attach = repo.WithReaderNote(r.AttachStatement(res.Catalog, w.dataPath(), "lake", false), format)
	pending, err := w.PendingVersions()
	if err != nil {
		return nil, err
	}
	tr, err := r.Tracking(ctx, w.State.Branch, w.State.Base, pending)
	if err != nil {
		return nil, err
	}
	res.New, res.Seq, res.Ahead = tr.Head, tr.HeadSeq, tr.Ahead
	if remake && len(pending) > 0 {
		// Versions committed here are never discarded: the catalog is
		// made anew from the base, the newest of them, and stays there.
		return res, w.remakeFromBase(ctx, res)
	}
	if len(pending) > 0 && tr.State != repo.TrackUpToDate && tr.State != repo.TrackAhead {
		e := &UnpushedError{Branch: tr.Ref, Unpushed: len(pending), Tracking: *tr}
		if up := w.State.Upstream; up != "" {
			if ret, err := r.Retirement(ctx, up); err == nil && ret != nil {
				e.Retired = up
			}
		}
		return nil, e
	}
	switch tr.State {
	case repo.TrackNoBranch:
		return nil, &NoBranchToPullError{Branch: tr.Ref}
	case repo.TrackUpToDate, repo.TrackAhead:
		if w.State.Pulling == nil && !remake {
			return res, w.nothingToPull(ctx, r, o, len(pending), res)
		}
	case repo.TrackDiverged:
		if !o.Discard {
			return nil, &PullNotFastForwardError{Branch: tr.Ref, Base: w.State.Base, Head: tr.Head, Ahead: tr.Ahead, Behind: tr.Behind}
		}
	}
	res.Pulled = tr.Behind
	head, err := r.Record(ctx, tr.Head)
	if err != nil {
		return nil, refs.DanglingRead(tr.Ref, tr.Head, err)
	}
	if err := r.RefuseRetired(ctx, head); err != nil {
		return nil, err
	}
	if remake {
		return res, w.makeCatalog(ctx, r, head, res)
	}
	return res, w.unusable(w.replaceWith(ctx, r, head, o, res))
}

// nothingToPull ends a pull that has nothing to bring: up to date, or,
// with o.Discard over snapshots not committed, the catalog goes back to
// the base (git reset --hard), never to the branch's head: a base ahead of
// it (versions committed here, pushed to a request or another branch, or
// not pushed: pending of them) stays the base.
func (w *Workdir) nothingToPull(ctx context.Context, r *repo.Repo, o PullOptions, pending int, res *PullResult) error {
	n, err := w.toDiscard(ctx, o)
	if err != nil || n == 0 {
		res.New, res.Seq, res.UpToDate = w.State.Base, baseSeq(w.BaseRecord), true
		return err
	}
	if pending > 0 {
		res.Discarded = n
		return w.remakeFromBase(ctx, res)
	}
	res.New, res.Seq = w.BaseRecord.ID, w.BaseRecord.Seq
	return w.unusable(w.replaceWith(ctx, r, w.BaseRecord, o, res))
}

// toDiscard counts the snapshots not committed that o.Discard throws away
// when there is nothing to pull; 0 without o.Discard.
func (w *Workdir) toDiscard(ctx context.Context, o PullOptions) (int, error) {
	if !o.Discard || w.BaseRecord == nil {
		return 0, nil
	}
	marks, err := ducklake.SnapshotMarks(ctx, w.CatalogPath())
	if err != nil {
		return 0, err
	}
	return w.uncommitted(marks, nil)
}

// remakeCatalog tells whether a pull makes the working catalog anew rather
// than replacing it: with o.Discard, when it is not there or is no
// readable catalog (ducklake.ErrNotCatalog, ducklake.ErrCorrupt; its
// snapshots are read), or does not hold its base's last snapshot (another
// catalog in its place). Errors: *CatalogUnusableError without o.Discard.
func (w *Workdir) remakeCatalog(ctx context.Context, o PullOptions) (bool, error) {
	if gone := w.catalogGone(); gone != nil {
		if !o.Discard {
			return false, gone
		}
		return true, nil
	}
	marks, err := ducklake.SnapshotMarks(ctx, w.CatalogPath())
	bad := errors.Is(err, ducklake.ErrNotCatalog) || errors.Is(err, ducklake.ErrCorrupt)
	if bad && !o.Discard {
		return false, w.unusable(err) // not "up to date"
	}
	if b := w.BaseRecord; err == nil && b != nil && w.State.Pulling == nil && !holdsSnapshot(marks, b) {
		// Another catalog in its place (a backup, another lake's), or
		// one whose base snapshot DuckLake's expiry removed: nothing
		// here tells that it continues its base.
		if !o.Discard {
			return false, w.unusableError(fmt.Errorf("%s does not hold its base's last snapshot (%d, %s): another catalog, or its base expired: %w",
				w.CatalogPath(), b.DuckLake.Snapshot, b.DuckLake.SnapshotTime.Format(time.RFC3339Nano), ErrNotDescendant))
		}
		return true, nil
	}
	return bad, nil
}

// makeCatalog makes the working catalog anew from head's (a pull that
// discards, when it is not there or unreadable): fetched and checked, for
// a SQLite working catalog converted in DIR/.fdl first, then renamed into
// place once whole (the old file's -wal, -shm or .wal removed before: they
// belong to it), and the state moves to head.
func (w *Workdir) makeCatalog(ctx context.Context, r *repo.Repo, head *version.Record, res *PullResult) error {
	newCat, err := w.fetchForPull(ctx, r, head)
	if err != nil {
		return err
	}
	defer os.Remove(newCat) // kept as the base, or renamed into place
	cat := w.CatalogPath()
	// As a replacing pull records it: stopped after the rename, the next
	// command finds head's snapshots there and settles the state on head
	// (settlePull); stopped before, the catalog is still missing.
	w.State.Pulling = &Pulling{From: w.State.Base, To: head.ID}
	if err := w.save(w.BaseRecord); err != nil {
		return err
	}
	w.step("pull:replace")
	if err := w.placeCatalog(ctx, newCat); err != nil {
		return err
	}
	if w.State.CatalogFormat == ducklake.BackendSQLite {
		w.keepBase(newCat, head.ID)
	}
	if w.BaseRecord != nil {
		// The line before, as it was with the file there (the form of a
		// missing file cannot be read from it).
		res.Attach = repo.WithReaderNote(r.AttachStatement(cat, w.dataPath(), "lake", false), w.BaseRecord.DuckLake.Format)
	}
	w.step("pull:state")
	return w.finishPull(r, head, res)
}

// replaceWith replaces the working catalog with head's, then moves the
// state to head.
func (w *Workdir) replaceWith(ctx context.Context, r *repo.Repo, head *version.Record, o PullOptions, res *PullResult) error {
	cat := w.CatalogPath()
	marks, err := ducklake.SnapshotMarks(ctx, cat)
	if err != nil {
		return err
	}
	var pulledTo *version.Record // what an interrupted pull replaced the catalog with
	if w.State.Pulling != nil {
		if pulledTo, err = r.Record(ctx, w.State.Pulling.To); err != nil {
			return err
		}
		if atSnapshot(marks, head) {
			return w.finishPull(r, head, res) // the interrupted pull had replaced it
		}
	}
	stamp, err := ducklake.Stamp(cat)
	if err != nil {
		return err
	}
	check := func(marks []ducklake.SnapshotMark) error {
		n, err := w.uncommitted(marks, pulledTo)
		if err != nil || o.Discard {
			res.Discarded = n
			return nil
		}
		if n > 0 {
			return &UncommittedError{Dir: w.Dir, Branch: w.State.Branch, Snapshots: n}
		}
		return nil
	}
	if err := check(marks); err != nil {
		return err
	}
	newCat, err := w.fetchChecked(ctx, r, head)
	if err != nil {
		return err
	}
	defer os.Remove(newCat) // moved into place or kept as the base when it went well
	// After the fetch: a SQLite catalog's quick_check beside it has read
	// every page, so the count reads from memory.
	if w.State.Pulling == nil && !o.Discard {
		if err := w.checkKnownFiles(ctx, r); err != nil {
			return err
		}
	}
	w.State.Pulling = &Pulling{From: w.State.Base, To: head.ID}
	if err := w.save(w.BaseRecord); err != nil {
		return err
	}
	w.step("pull:replace")
	if w.State.CatalogFormat == ducklake.BackendSQLite {
		err = w.pullSQLite(ctx, newCat, head, check)
	} else {
		err = ducklake.ReplaceDuckDB(cat, newCat, func() error {
			now, err := ducklake.Stamp(cat)
			if err == nil && now != stamp {
				err = fmt.Errorf("%s changed while fdl pull ran (a process wrote to it): %w", cat, ErrPullRace)
			}
			return err
		})
	}
	if err != nil {
		w.State.Pulling = nil
		if serr := w.save(w.BaseRecord); serr != nil {
			return errors.Join(err, serr)
		}
		return err
	}
	w.step("pull:state")
	return w.finishPull(r, head, res)
}

// finishPull moves the state to head once the working catalog is head's.
func (w *Workdir) finishPull(r *repo.Repo, head *version.Record, res *PullResult) error {
	w.State.Base, w.State.Upstream, w.State.Pulling = head.ID, head.ID, nil
	if err := w.save(head); err != nil {
		return err
	}
	res.New, res.Seq = head.ID, head.Seq
	// The reader note is part of the line: a pull across a migration
	// (DuckLake 0.4 to 1.0) changes the DuckDB releases that can attach
	// the working catalog, though not its path.
	attach := repo.WithReaderNote(r.AttachStatement(w.CatalogPath(), head.DuckLake.DataPath, "lake", false), head.DuckLake.Format)
	res.AttachChanged, res.Attach = attach != res.Attach, attach
	return nil
}

// placeCatalog puts the DuckDB catalog duck in the working catalog's
// place, which holds no usable catalog: for a SQLite working catalog
// converted in DIR/.fdl first and renamed into place once whole, duck
// left as it is; for a DuckDB one renamed into place. The old file's
// -wal and -shm (SQLite) or .wal (DuckDB) are removed first: they belong
// to it. Errors: the conversion's and the file system's.
func (w *Workdir) placeCatalog(ctx context.Context, duck string) error {
	cat := w.CatalogPath()
	if w.State.CatalogFormat == ducklake.BackendSQLite {
		lite := w.stateDir("pull.sqlite")
		if err := ducklake.ConvertToSQLite(ctx, duck, lite); err != nil {
			return err
		}
		defer ducklake.RemoveSQLite(lite) // its -wal and -shm, if any
		if err := ducklake.RemoveSQLite(cat); err != nil {
			return err
		}
		return os.Rename(lite, cat)
	}
	if err := os.Remove(cat + ".wal"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(duck, cat)
}

// remakeFromBase makes a missing or unreadable working catalog anew from
// its base, a version committed here and not pushed: a copy of its catalog
// in DIR/.fdl/versions, checked against its record as it is copied, put in
// place (placeCatalog); the state stays. Errors: *LocalVersionError when
// that catalog is missing or does not match its record; placeCatalog's.
func (w *Workdir) remakeFromBase(ctx context.Context, res *PullResult) error {
	b := w.BaseRecord
	src := w.LocalCatalog(b.ID)
	tmp := w.stateDir("pull.duckdb")
	os.Remove(tmp)
	defer os.Remove(tmp)
	in, err := os.Open(src)
	if err != nil {
		return &LocalVersionError{Dir: w.Dir, Version: b.ID, Err: fmt.Errorf("%s: %w (%v)", src, ErrLocalFileMissing, err)}
	}
	defer in.Close()
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, sum, err := filecopy.Copy(ctx, out, in, nil)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != b.Catalog.Size || sum != b.Catalog.SHA256 {
		return &LocalVersionError{Dir: w.Dir, Version: b.ID, Err: &repo.ChecksumError{Version: b.ID, WantSize: b.Catalog.Size, GotSize: n, WantSHA: b.Catalog.SHA256, GotSHA: sum, Location: src}}
	}
	w.step("pull:replace")
	if err := w.placeCatalog(ctx, tmp); err != nil {
		return err
	}
	res.New, res.Seq, res.UpToDate, res.Remade = b.ID, b.Seq, true, true
	return nil
}

// settlePull ends what an interrupted pull left in the state (Pulling)
// from what the working catalog holds, so that the next command goes on
// (the caller holds the working directory's lock): the last snapshot (id
// and time) of the version the pull was bringing — the catalog was
// replaced: the state moves to that version; else its base's (or, with no
// base, not that version's) — nothing was replaced: the state stays at its
// base. Snapshots written after either are the user's and stay, as
// uncommitted work. A catalog that holds neither is left as it is (fdl
// pull --discard replaces it). Errors: reading the catalog's snapshots,
// the record of the version the pull was bringing, saving the state.
func (w *Workdir) settlePull(ctx context.Context, r *repo.Repo) error {
	if w.State.Pulling == nil || w.catalogGone() != nil {
		return nil // a missing catalog is the command's to report
	}
	to, replaced, known, err := w.stoppedPull(ctx, r)
	switch {
	case err != nil || !known:
		return err
	case replaced:
		w.debugf("pull: the interrupted pull had replaced the working catalog with %s: the state moves there", to.ID)
		w.State.Base, w.State.Upstream, w.State.Pulling = to.ID, to.ID, nil
		return w.save(to)
	}
	w.debugf("pull: the interrupted pull had not replaced the working catalog: the state stays at its base")
	w.State.Pulling = nil
	return w.save(w.BaseRecord)
}

// stoppedPull tells what the interrupted pull in the state did to the
// working catalog (settlePull's rule), reading nothing but the catalog's
// snapshots and the record of the version it was bringing (to): replaced,
// or not (known false: the catalog holds neither that version's last
// snapshot nor its base's). Errors: reading them.
func (w *Workdir) stoppedPull(ctx context.Context, r *repo.Repo) (to *version.Record, replaced, known bool, err error) {
	marks, err := ducklake.SnapshotMarks(ctx, w.CatalogPath())
	if err != nil {
		return nil, false, false, err
	}
	if to, err = r.Record(ctx, w.State.Pulling.To); err != nil {
		return nil, false, false, err
	}
	switch {
	case holdsSnapshot(marks, to):
		return to, true, true, nil
	case w.BaseRecord == nil || holdsSnapshot(marks, w.BaseRecord):
		return to, false, true, nil
	}
	return to, false, false, nil
}

// holdsSnapshot reports whether a catalog's snapshots (marks) include
// rec's last snapshot, with its time.
func holdsSnapshot(marks []ducklake.SnapshotMark, rec *version.Record) bool {
	if rec == nil {
		return false
	}
	for _, m := range marks {
		if m.ID == rec.DuckLake.Snapshot {
			return m.Time.Equal(rec.DuckLake.SnapshotTime)
		}
	}
	return false
}

// atSnapshot reports whether a catalog's snapshots (marks) end at rec's
// last snapshot, with its time.
func atSnapshot(marks []ducklake.SnapshotMark, rec *version.Record) bool {
	if rec == nil || len(marks) == 0 {
		return false
	}
	last := marks[len(marks)-1]
	return last.ID == rec.DuckLake.Snapshot && last.Time.Equal(rec.DuckLake.SnapshotTime)
}

// uncommitted counts the snapshots of a working catalog (marks) that are
// not in its base: 0 when it ends at the base's last snapshot with the
// base's time, or at pulledTo's (what an interrupted pull put there). A
// catalog that does not hold its base's last snapshot (replaced by another
// lake) counts all its snapshots. Without a base, a catalog that holds
// more than the one snapshot of a new catalog has uncommitted work.
func (w *Workdir) uncommitted(marks []ducklake.SnapshotMark, pulledTo *version.Record) (int, error) {
	if len(marks) == 0 {
		return 0, fmt.Errorf("%s has no snapshot: %w", w.CatalogPath(), ErrNotDescendant)
	}
	if atSnapshot(marks, w.BaseRecord) || atSnapshot(marks, pulledTo) {
		return 0, nil
	}
	b := w.BaseRecord
	if b == nil {
		return len(marks) - 1, nil
	}
	n := 0
	for _, m := range marks {
		if m.ID > b.DuckLake.Snapshot {
			n++
		}
		if m.ID == b.DuckLake.Snapshot && !m.Time.Equal(b.DuckLake.SnapshotTime) {
			return len(marks), nil
		}
	}
	if n == 0 {
		return len(marks), nil // it ends before its base: another lake
	}
	return n, nil
}

// fetchForPull fetches head's catalog, checked against its record, into
// DIR/.fdl (the working catalog's file system, so the replacement of a
// DuckDB working catalog is a rename) and returns its path.
func (w *Workdir) fetchForPull(ctx context.Context, r *repo.Repo, head *version.Record) (string, error) {
	duck := w.stateDir("pull.duckdb")
	// Left by an interrupted pull.
	os.Remove(duck)
	_ = ducklake.RemoveSQLite(w.stateDir("pull.sqlite"))
	if err := r.FetchCatalog(ctx, head, duck); err != nil {
		return "", err
	}
	return duck, nil
}

// fetchChecked is fetchForPull; for a SQLite working catalog, which an
// incremental pull writes into in place (ducklake.PullSQLite keeps the
// pages it does not change), SQLite's quick_check of it
// (ducklake.CheckSQLite, a read of every page) runs beside the download,
// and a damaged catalog stops the pull before anything is written.
func (w *Workdir) fetchChecked(ctx context.Context, r *repo.Repo, head *version.Record) (string, error) {
	if w.State.CatalogFormat != ducklake.BackendSQLite {
		return w.fetchForPull(ctx, r, head)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	checked := make(chan error, 1)
	go func() { checked <- ducklake.CheckSQLite(ctx, w.CatalogPath()) }()
	duck, err := w.fetchForPull(ctx, r, head)
	if err != nil {
		cancel()
		<-checked
		return "", err
	}
	if err := <-checked; err != nil {
		os.Remove(duck)
		return "", err
	}
	return duck, nil
}

// pullSQLite brings the SQLite working catalog up to head, whose checked
// catalog is duck: by what head changed after the base, from the kept
// base (ducklake.PullSQLite), or else by converting head whole and
// replacing the working catalog's tables with it (ducklake.ReplaceSQLite),
// saying under --verbose which and why. Then duck is kept as the new
// base's catalog for the next commit (keptbase.go): named by its version,
// so a pull that stops before this leaves nothing that passes for it.
func (w *Workdir) pullSQLite(ctx context.Context, duck string, head *version.Record, check func([]ducklake.SnapshotMark) error) error {
	cat := w.CatalogPath()
	d := ducklake.DeltaInfo{Full: "the working directory has no base version"}
	if w.BaseRecord != nil {
		var err error
		if d, err = ducklake.PullSQLite(ctx, cat, duck, w.freezeBase(), check); err != nil {
			return err
		}
	}
	if d.Full == "" {
		w.debugf("pull: the working catalog brought up to date by what changed (%d table(s) by their changes: %s)", len(d.Delta), strings.Join(d.Delta, ", "))
		for t, why := range d.Whole {
			w.debugf("pull: table %s written whole: %s", t, why)
		}
	} else {
		w.debugf("pull: the whole catalog converted: %s", d.Full)
		lite := w.stateDir("pull.sqlite")
		if err := ducklake.ConvertToSQLite(ctx, duck, lite); err != nil {
			return err
		}
		defer ducklake.RemoveSQLite(lite) // and the -shm and -wal a SQLite read made
		if err := ducklake.ReplaceSQLite(ctx, cat, lite, check); err != nil {
			return err
		}
	}
	w.keepBase(duck, head.ID)
	return nil
}

// dataPath is the data_path of the working catalog as its base records it
// (the repository's data path before the first version).
func (w *Workdir) dataPath() string {
	if w.BaseRecord != nil {
		return w.BaseRecord.DuckLake.DataPath
	}
	if dp, err := readDataPath(w.CatalogPath()); err == nil {
		return dp
	}
	return ""
}

// readDataPath reads a catalog's data_path.
func readDataPath(path string) (string, error) {
	c, err := ducklake.Open(context.Background(), path)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.DataPath(), nil
}

func baseSeq(rec *version.Record) int64 {
	if rec == nil {
		return 0
	}
	return rec.Seq
}

// ErrPullRace: the working catalog changed while a pull ran.
var ErrPullRace = errors.New("the working catalog changed during the pull; nothing was replaced")

// UncommittedError: the working catalog holds snapshots not committed yet;
// a pull would lose them.
type UncommittedError struct {
	Dir       string
	Branch    string // the working directory's branch
	Snapshots int
}

func (e *UncommittedError) Error() string {
	return fmt.Sprintf("%s holds %d snapshot(s) not committed yet, which replacing the working catalog would lose; nothing was changed: %v", e.Dir, e.Snapshots, ErrUncommitted)
}

func (e *UncommittedError) Unwrap() error { return ErrUncommitted }

// ErrUncommitted is wrapped by *UncommittedError.
var ErrUncommitted = errors.New("uncommitted work")

// UnpushedError: versions committed in the working directory are not in
// the repository, and the branch moved on: a pull would have to merge
// them. It wraps ErrUnpushed.
type UnpushedError struct {
	Branch   refs.Name
	Unpushed int
	Tracking repo.Tracking
	// Retired is the version they build on when it left retention (no
	// push can publish them then, on any branch); "" otherwise.
	Retired version.ID
}

func (e *UnpushedError) Error() string {
	gone := ""
	if e.Retired != "" {
		gone = fmt.Sprintf("; they build on version %s, which left retention, so no branch can take them", e.Retired)
	}
	return fmt.Sprintf("%d version(s) committed here are not pushed, and %s has %d version(s) they lack (diverged)%s; fdl never merges versions, and nothing was changed: %v",
		e.Unpushed, e.Branch.Short(), e.Tracking.Behind, gone, ErrUnpushed)
}

func (e *UnpushedError) Unwrap() error { return ErrUnpushed }

// ErrUnpushed is wrapped by *UnpushedError.
var ErrUnpushed = errors.New("unpushed versions")

// PullNotFastForwardError: the branch's head does not descend from the
// base (the branch was moved back, or the base is on another history). It
// wraps refs.ErrRefused.
type PullNotFastForwardError struct {
	Branch        refs.Name
	Base, Head    version.ID
	Ahead, Behind int
}

func (e *PullNotFastForwardError) Error() string {
	return fmt.Sprintf("pull from %s refused: it is not a fast-forward: %s holds %s, which does not descend from the base %s (%d version(s) of the base are not on %s); nothing was changed",
		e.Branch.Short(), e.Branch.Short(), e.Head, e.Base, e.Ahead, e.Branch.Short())
}

func (e *PullNotFastForwardError) Unwrap() error { return refs.ErrRefused }

// NoBranchToPullError: the working directory's branch does not exist in
// the repository. It wraps refs.ErrNotFound.
type NoBranchToPullError struct{ Branch refs.Name }

func (e *NoBranchToPullError) Error() string {
	return fmt.Sprintf("branch %s does not exist in the repository, so there is nothing to pull: %v", e.Branch.Short(), refs.ErrNotFound)
}

func (e *NoBranchToPullError) Unwrap() error { return refs.ErrNotFound }

// PullInterruptedError: a pull stopped while it replaced the working
// catalog; the next pull finishes it. It wraps ErrPullInterrupted.
type PullInterruptedError struct{ Dir string }

func (e *PullInterruptedError) Error() string {
	return fmt.Sprintf("%s: a pull was interrupted while it replaced the working catalog: %v", e.Dir, ErrPullInterrupted)
}

func (e *PullInterruptedError) Unwrap() error { return ErrPullInterrupted }

// ErrPullInterrupted is wrapped by *PullInterruptedError.
var ErrPullInterrupted = errors.New("pull interrupted")
