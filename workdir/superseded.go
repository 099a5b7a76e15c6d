package workdir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// checkSuperseded refuses a commit whose working catalog deleted files that
// a version in retention reads (docs/spec.md §9, "Only gc deletes data
// files"). DuckLake's maintenance in a working catalog supersedes files
// (ducklake_merge_adjacent_files, ducklake_rewrite_data_files,
// ducklake_flush_inlined_data, ducklake_expire_snapshots): their rows go
// into ducklake_files_scheduled_for_deletion. That is fine: the versions
// published before keep reading them until gc finds none in retention that
// does. ducklake_cleanup_old_files and ducklake_delete_orphaned_files
// (CHECKPOINT runs both) delete them and drop them from the schedule.
//
// cat is the frozen copy of the working catalog. It returns the number of
// files cat schedules (dataset.json's totals.scheduled_files). When the
// base's dataset.json shows that nothing it read can have gone
// (unchangedSince: one small read), that is all. Otherwise cat is compared
// with the base's catalog (the local copy of a version committed here, the
// store's file on a folder repository, else fetched). Two kinds of file
// may have been deleted, each looked up in the store where it lies in the
// repository's data/ (one Stat each):
//   - a file the base's catalog lists that the working catalog no longer
//     lists nor schedules: missing, the base is damaged when it reads the
//     file at its snapshot, or by time travel to snapshots gc keeps (the
//     version made last before the file's row ended is in retention);
//   - a file the base's schedule lists and the working catalog's no longer
//     does (a cleanup ran): missing, the version that last listed it (the
//     newest first-parent ancestor made before it was scheduled) is damaged
//     if it is in retention and reads it at its snapshot; otherwise gc was
//     free to delete it.
//
// Errors: *DeletedFilesError.
func (w *Workdir) checkSuperseded(ctx context.Context, cat *ducklake.Catalog) (int64, error) {
	sched, err := cat.ScheduledSince(ctx, time.Time{})
	if err != nil {
		return 0, err
	}
	n := int64(len(sched))
	b := w.BaseRecord
	if b == nil {
		return n, nil
	}
	r, err := w.Repo(ctx)
	if err != nil {
		return n, fmt.Errorf("checking the files the working catalog superseded: %w", err)
	}
	if w.unchangedSince(ctx, r, cat, sched) {
		return n, nil
	}
	return n, w.checkLost(ctx, r, cat, sched)
}

// unchangedSince reports whether nothing the base version read can have
// been deleted, from the base's dataset.json alone: the working catalog's
// state at the base's snapshot has the base's data files, data bytes and
// delete files table by table, it still schedules as many files made
// before the base was committed as the base did, and it still lists or
// schedules as many files of the base's time as the base did
// (totals.known_files: the rows ended before the base's snapshot, which
// the base reads by time travel, are in no state).
func (w *Workdir) unchangedSince(ctx context.Context, r *repo.Repo, cat *ducklake.Catalog, sched []ducklake.ScheduledFile) bool {
	b := w.BaseRecord
	ds, err := w.baseDatasetFrom(ctx, r)
	if err != nil {
		return false
	}
	if ds.Totals.ScheduledFiles == nil {
		return false
	}
	var carried int64
	for _, f := range sched {
		if !f.Scheduled.After(b.CreatedAt) {
			carried++
		}
	}
	if carried != *ds.Totals.ScheduledFiles {
		return false
	}
	// Files ended before the base's snapshot are not in its state: an
	// expiry after it drops their rows into the schedule, and a cleanup
	// then deletes them while the versions before the base read them.
	if ds.Totals.KnownFiles == nil {
		return false
	}
	if known, err := cat.FilesKnownAt(ctx, b.DuckLake.Snapshot); err != nil || known != *ds.Totals.KnownFiles {
		return false
	}
	st, err := cat.State(ctx, b.DuckLake.Snapshot)
	return err == nil && sameFiles(ds, st)
}

// baseDatasetFrom reads the base version's dataset.json: the copy the
// working directory keeps (baseDataset), else the local copy of a version
// committed here, else the repository's (one read of the store, for a
// working directory made before fdl kept it). Errors: reading it.
func (w *Workdir) baseDatasetFrom(ctx context.Context, r *repo.Repo) (*version.Dataset, error) {
	if ds, err := w.baseDataset(); err == nil && ds != nil {
		return ds, nil
	}
	id := w.BaseRecord.ID
	if ds, err := w.LocalDataset(id); err == nil {
		return ds, nil
	}
	return r.Dataset(ctx, id)
}

// sameFiles reports whether st has, table by table, the data files, data
// bytes and delete files ds records.
func sameFiles(ds *version.Dataset, st *meta.State) bool {
	type files struct{ data, bytes, deletes int64 }
	want := map[int64]files{}
	for _, s := range ds.Schemas {
		for _, t := range s.Tables {
			want[t.ID] = files{t.DataFiles, t.DataBytes, t.DeleteFiles}
		}
	}
	n := 0
	for _, s := range st.Schemas {
		for _, t := range s.Tables {
			if want[t.ID] != (files{t.DataFiles, t.DataBytes, t.DeleteFiles}) {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// checkLost compares the working catalog with its base version's catalog
// (see checkSuperseded).
func (w *Workdir) checkLost(ctx context.Context, r *repo.Repo, cat *ducklake.Catalog, sched []ducklake.ScheduledFile) error {
	b := w.BaseRecord
	norm, err := r.Normaliser()
	if err != nil {
		return err
	}
	files, err := cat.DataFiles(ctx)
	if err != nil {
		return err
	}
	c := &lostCheck{w: w, r: r, norm: norm, base: b, next: b.Parent(), accounted: map[int64]bool{}, lost: map[version.ID][]string{}}
	for _, f := range files {
		c.accounted[f.ID] = true
	}
	for _, f := range sched {
		c.accounted[f.ID] = true
	}
	baseFiles, baseSched, err := w.catalogFiles(ctx, r, b)
	if err != nil {
		return err
	}
	for _, f := range baseFiles {
		if err := c.baseListed(ctx, f); err != nil {
			return err
		}
	}
	for _, f := range baseSched {
		if err := c.baseScheduled(ctx, f); err != nil {
			return err
		}
	}
	if len(c.order) == 0 {
		return nil
	}
	e := &DeletedFilesError{}
	for _, rec := range c.order {
		e.Versions = append(e.Versions, DamagedVersion{ID: rec.ID, Seq: rec.Seq, Files: c.lost[rec.ID]})
	}
	return e
}

// lostCheck is checkLost's state: which files the working catalog still
// lists or schedules, the base's first parents read so far, and the files
// found gone, by the version that reads them.
type lostCheck struct {
	w         *Workdir
	r         *repo.Repo
	norm      *retention.Normaliser
	base      *version.Record
	accounted map[int64]bool // the working catalog still lists or schedules the file
	chain     []*ancestor    // the base's first parents read so far, newest first
	next      version.ID     // the parent of the last one read ("" at the root)
	lost      map[version.ID][]string
	order     []*version.Record // the versions in lost, in the order found
}

// ancestor is one of the base's first parents, with its catalog's data
// files once read.
type ancestor struct {
	rec     *version.Record
	retired bool
	files   map[int64]ducklake.DataFile // read as needed
}

// missing returns the store key of a data-file path and whether the
// store lacks it; a path outside the repository is out of fdl's reach
// (never missing).
func (c *lostCheck) missing(ctx context.Context, path string) (string, bool, error) {
	pl, err := c.norm.Place(path)
	if err != nil || pl.Key == "" {
		return "", false, nil // outside the repository: out of fdl's reach
	}
	_, err = c.r.Store().Stat(ctx, pl.Key)
	if errors.Is(err, store.ErrNotExist) {
		return pl.Key, true, nil
	}
	return pl.Key, false, err
}

// add records key as lost by version rec.
func (c *lostCheck) add(rec *version.Record, key string) {
	if c.lost[rec.ID] == nil {
		c.order = append(c.order, rec)
	}
	c.lost[rec.ID] = append(c.lost[rec.ID], key)
}

// newest returns the newest ancestor of the base for which ok holds, or
// nil, reading the first parents as needed.
func (c *lostCheck) newest(ctx context.Context, ok func(*version.Record) bool) (*ancestor, error) {
	for i := 0; ; i++ {
		if i == len(c.chain) {
			if c.next == "" {
				return nil, nil
			}
			rec, err := c.r.Record(ctx, c.next)
			if err != nil {
				return nil, err
			}
			ret, err := c.r.Retirement(ctx, rec.ID)
			if err != nil {
				return nil, err
			}
			c.chain = append(c.chain, &ancestor{rec: rec, retired: ret != nil})
			c.next = rec.Parent()
		}
		if ok(c.chain[i].rec) {
			return c.chain[i], nil
		}
	}
}

// baseListed checks a file the base lists: read at the base's snapshot,
// or (ended rows) by time travel to the snapshots the row covers, which gc
// keeps while the version made last before the row ended is in retention
// (then the floor is at or below its snapshot).
func (c *lostCheck) baseListed(ctx context.Context, f ducklake.DataFile) error {
	s := c.base.DuckLake.Snapshot
	if c.accounted[f.ID] || f.BeginSnapshot > s {
		return nil
	}
	if f.EndSnapshot != nil && *f.EndSnapshot <= s {
		a, err := c.newest(ctx, func(rec *version.Record) bool { return rec.DuckLake.Snapshot < *f.EndSnapshot })
		if err != nil {
			return err
		}
		if a == nil || a.retired {
			return nil
		}
	}
	key, gone, err := c.missing(ctx, f.ResolvedPath)
	if err != nil {
		return err
	}
	if gone {
		c.add(c.base, key)
	}
	return nil
}

// baseScheduled checks a file the base's schedule lists: read by the
// version that last listed it, the newest ancestor made before it was
// scheduled.
func (c *lostCheck) baseScheduled(ctx context.Context, f ducklake.ScheduledFile) error {
	if c.accounted[f.ID] {
		return nil
	}
	key, isGone, err := c.missing(ctx, f.ResolvedPath)
	if err != nil || !isGone {
		return err
	}
	a, err := c.newest(ctx, func(rec *version.Record) bool { return rec.DuckLake.SnapshotTime.Before(f.Scheduled) })
	if err != nil {
		return err
	}
	if a == nil || a.retired {
		return nil
	}
	if a.files == nil {
		fs, _, err := c.w.catalogFiles(ctx, c.r, a.rec)
		if err != nil {
			return err
		}
		a.files = map[int64]ducklake.DataFile{}
		for _, x := range fs {
			a.files[x.ID] = x
		}
	}
	x, ok := a.files[f.ID]
	as := a.rec.DuckLake.Snapshot
	if ok && x.BeginSnapshot <= as && (x.EndSnapshot == nil || as < *x.EndSnapshot) {
		c.add(a.rec, key)
	}
	return nil
}

// catalogFiles returns the data and delete files version rec's catalog
// lists and the files its schedule (ducklake_files_scheduled_for_deletion)
// lists.
func (w *Workdir) catalogFiles(ctx context.Context, r *repo.Repo, rec *version.Record) ([]ducklake.DataFile, []ducklake.ScheduledFile, error) {
	path, cleanup, err := w.catalogOf(ctx, r, rec)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	files, err := c.DataFiles(ctx)
	if err != nil {
		return nil, nil, err
	}
	sched, err := c.ScheduledSince(ctx, time.Time{})
	return files, sched, err
}

// catalogOf returns a local path of version rec's catalog: the copy of a
// version committed here and not pushed, the store's file on a folder
// repository, the kept base (docs/spec.md §12) when it matches the record
// (hashed: cheaper than a download, and the store's copy may be gone with
// the version's retention), else a fetched copy that cleanup removes. A
// version out of retention whose catalog is gone is *repo.RetiredError.
func (w *Workdir) catalogOf(ctx context.Context, r *repo.Repo, rec *version.Record) (string, func(), error) {
	none := func() {}
	if p := w.LocalCatalog(rec.ID); fileExists(p) {
		return p, none, nil
	}
	if p := r.Store().Location(repo.VersionKey(rec.ID, version.CatalogFile)); filepath.IsAbs(p) && fileExists(p) {
		return p, none, nil
	}
	if p := w.keptBasePath(rec.ID); fileExists(p) {
		if n, sum, err := repo.FileDigest(p); err == nil && n == rec.Catalog.Size && sum == rec.Catalog.SHA256 {
			return p, none, nil
		}
	}
	tmp, err := os.MkdirTemp(w.stateDir(), ".tmp-check-")
	if err != nil {
		return "", none, err
	}
	p := filepath.Join(tmp, version.CatalogFile)
	if err := r.FetchCatalog(ctx, rec, p); err != nil {
		os.RemoveAll(tmp)
		if errors.Is(err, store.ErrNotExist) {
			if rerr := r.RefuseRetired(ctx, rec); rerr != nil {
				return "", none, rerr
			}
		}
		return "", none, err
	}
	return p, func() { os.RemoveAll(tmp) }, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// checkKnownFiles refuses (*FilesGoneError) a working catalog that knows
// fewer files of its base's time than the base's catalog did
// (dataset.json's totals.known_files; ducklake.FilesKnownAtFile): a
// DuckLake cleanup ran on it and deleted files published versions may
// read. A pull would replace the catalog, and with it what tells: the
// next commit could no longer see the loss (docs/spec.md §12.2). A base
// without the count (made before fdl recorded it) is not checked. Errors:
// *FilesGoneError; reading the catalog or the base's dataset.json.
func (w *Workdir) checkKnownFiles(ctx context.Context, r *repo.Repo) error {
	b := w.BaseRecord
	if b == nil {
		return nil
	}
	ds, err := w.baseDatasetFrom(ctx, r)
	if err != nil {
		return err
	}
	if ds.Totals.KnownFiles == nil {
		return nil
	}
	n, err := ducklake.FilesKnownAtFile(ctx, w.CatalogPath(), b.DuckLake.Snapshot)
	if err != nil {
		return err
	}
	if n < *ds.Totals.KnownFiles {
		return &FilesGoneError{Dir: w.Dir, Base: b.ID, Seq: b.Seq, Gone: *ds.Totals.KnownFiles - n}
	}
	return nil
}

// FilesGoneError: the working catalog no longer lists, nor schedules,
// files its base version's catalog listed (a DuckLake cleanup deleted
// them, and published versions may read them); a pull would hide it. It
// wraps ErrDataMissing.
type FilesGoneError struct {
	Dir  string
	Base version.ID
	Seq  int64
	Gone int64 // how many files of the base's time it no longer knows
}

func (e *FilesGoneError) Error() string {
	return fmt.Sprintf("the working catalog in %s no longer knows %d data or delete file(s) its base version %s (seq %d) listed: DuckLake's ducklake_cleanup_old_files or ducklake_delete_orphaned_files ran on it and deleted them, and published versions may read them: %v. A pull would replace the catalog and hide that; nothing was changed",
		e.Dir, e.Gone, e.Base, e.Seq, repo.ErrDataMissing)
}

func (e *FilesGoneError) Unwrap() error { return repo.ErrDataMissing }

// DeletedFilesError: a working catalog deleted data files that published
// versions read (DuckLake's cleanup ran on it; docs/spec.md §9). Commit
// refuses it. It wraps ErrDataMissing.
type DeletedFilesError struct {
	Versions []DamagedVersion // newest first
}

// DamagedVersion is a published version and the store keys of the files
// it reads that are gone.
type DamagedVersion struct {
	ID    version.ID
	Seq   int64
	Files []string
}

func (e *DeletedFilesError) Error() string {
	var parts []string
	n := 0
	for _, v := range e.Versions {
		n += len(v.Files)
		shown := v.Files
		if len(shown) > 5 {
			shown = append(shown[:5:5], "…")
		}
		parts = append(parts, fmt.Sprintf("version %s (seq %d) reads %s", v.ID, v.Seq, strings.Join(shown, ", ")))
	}
	return fmt.Sprintf("the working catalog deleted %d data file(s) that published versions read: %s: %v. DuckLake's ducklake_cleanup_old_files or ducklake_delete_orphaned_files (CHECKPOINT runs both) ran on it; in a working catalog only gc deletes superseded files, once no version in retention reads them. Those versions are damaged. Restore the files (from a backup, or your bucket's object versions) and commit again, or check out the branch again and redo the change without deleting files",
		n, strings.Join(parts, "; "), repo.ErrDataMissing)
}

func (e *DeletedFilesError) Unwrap() error { return repo.ErrDataMissing }
