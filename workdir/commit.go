package workdir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/atomicfile"
	"github.com/fdl-dev/fdl/internal/stamp"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/signature"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/version"
)

// Commit: the working catalog frozen into a new local version.

// CommitOptions are the inputs of Commit.
type CommitOptions struct {
	Message string
	// Author is who made the version (default: DefaultActor).
	Author string
	// Now, if set, is the creation time (tests); default time.Now.
	Now func() time.Time
	// AllowNothing makes a working catalog with no snapshot after its
	// base no error: Commit returns a nil record and changes nothing (a
	// scheduled job commits only when something changed). It is told
	// from the snapshots' ids and times alone, before anything is frozen.
	AllowNothing bool
	// SignKey, if set, names the key that signs the new version's record
	// (repo.LoadSigner: a private key file, or a public key whose private
	// half ssh-agent holds): its signature is written beside it as
	// version.json.sig and pushed with it (docs/spec.md §20). The key is
	// loaded before anything is frozen. Signer, if set, is used instead.
	SignKey string
	Signer  *signature.Signer
}

// Commit freezes the working catalog into a new version held locally in
// DIR/.fdl/versions/<id>/ until pushed (docs/spec.md §6, §12). The working
// catalog is read, never changed. It refuses (ErrNothingToCommit) when the
// catalog has no snapshot after its base, and (ErrNotDescendant) when the
// catalog's snapshots do not continue the base's: the base's last snapshot
// must be there with the same snapshot_time, ids only grow, and the
// catalog read at that snapshot must show what the base published there
// (checkPublished, when DIR/.fdl/base.dataset.json holds the base's
// dataset).
// The working directory's state moves to the new version only after all its
// files are written.
func (w *Workdir) Commit(ctx context.Context, o CommitOptions) (*version.Record, error) {
	unlock, err := w.lock("commit")
	if err != nil {
		return nil, err
	}
	defer unlock()
	_ = w.reload() // under the lock: another process may have committed
	if err := w.settleStoppedPull(ctx); err != nil {
		return nil, w.unusable(err)
	}
	rec, err := w.commit(ctx, o)
	return rec, w.unusable(err)
}

// settleStoppedPull is settlePull for a commit (the caller holds the
// lock): with the repository out of reach the state stays, and the commit
// refuses (*PullInterruptedError). Errors: settlePull's.
func (w *Workdir) settleStoppedPull(ctx context.Context) error {
	if w.State.Pulling == nil {
		return nil
	}
	r, err := w.Repo(ctx)
	if err != nil {
		return nil
	}
	return w.settlePull(ctx, r)
}

// ReplaceUnpushed is Commit in place of every version committed here and
// not pushed (git reset --soft to the upstream, then git commit): the new
// version's parent is the upstream, the newest version of the base's
// history in the repository (none before the first push: the new version
// is then the branch's first), and it holds every snapshot of the working
// catalog after the upstream's, those of the replaced versions among them.
// With nothing unpushed it is Commit. It is the way on when a replaced
// version cannot be pushed as it was committed (*LocalVersionError: a
// file of its folder lost, changed or unparsable), and squashes local
// versions before a push. The upstream's record and dataset are read from
// the repository (the commit checks the working catalog against what it
// published). A pending revert or restore of a replaced version (one that
// will never be published) is committed as plain snapshots: its message
// is taken when o has none, its reverts or restores is not recorded. The
// state moves to the new version in one write, as a commit's does, and
// only then are the replaced versions' folders removed (a command stopped
// before leaves them unused; the next push removes them). Returns the new
// record and the replaced ids (the chain from the base as far as its
// records read, and every other entry of DIR/.fdl/versions; oldest first:
// ids grow with time). Errors: the repository's when the
// upstream's record or dataset cannot be read; Commit's.
func (w *Workdir) ReplaceUnpushed(ctx context.Context, o CommitOptions) (*version.Record, []version.ID, error) {
	unlock, err := w.lock("commit")
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	_ = w.reload()
	if err := w.settleStoppedPull(ctx); err != nil {
		return nil, nil, err
	}
	if w.State.Base == w.State.Upstream || w.State.Pulling != nil {
		rec, err := w.commit(ctx, o) // nothing to replace; commit refuses after a stopped pull
		return rec, nil, err
	}
	// Replaced: the chain from the base back to the upstream as far as
	// its records read, and every other folder of versions/.
	var replaced []version.ID
	for id := w.State.Base; id != "" && id != w.State.Upstream && !slices.Contains(replaced, id); {
		replaced = append(replaced, id)
		b, err := os.ReadFile(w.stateDir(LocalVersions, string(id), version.RecordFile))
		if err != nil {
			break
		}
		rec, err := version.ParseRecord(b, id)
		if err != nil {
			break
		}
		id = rec.Parent()
	}
	ents, _ := os.ReadDir(w.stateDir(LocalVersions))
	for _, e := range ents {
		if id := version.ID(e.Name()); !strings.HasPrefix(e.Name(), ".tmp-") && !slices.Contains(replaced, id) {
			replaced = append(replaced, id)
		}
	}
	slices.Sort(replaced) // oldest first: ids grow with time
	var up *version.Record
	var upDS *version.Dataset
	if w.State.Upstream != "" {
		r, err := w.Repo(ctx)
		if err != nil {
			return nil, nil, err
		}
		if up, err = r.Record(ctx, w.State.Upstream); err != nil {
			return nil, nil, err
		}
		if upDS, err = r.Dataset(ctx, w.State.Upstream); err != nil {
			return nil, nil, err
		}
	}
	if u := w.State.Undo; u != nil && slices.Contains(replaced, u.Version) {
		if strings.TrimSpace(o.Message) == "" {
			o.Message = u.Message
		}
		w.State.Undo = nil
	}
	w.State.Base, w.BaseRecord, w.baseDS = w.State.Upstream, up, upDS
	rec, err := w.commit(ctx, o)
	w.baseDS = nil
	if err != nil || rec == nil {
		_ = w.reload() // back to the state on disk
		return rec, nil, err
	}
	w.removeLocalVersions(rec.ID)
	return rec, replaced, nil
}

// commit is Commit with the working directory's lock held and its state
// read. A pending revert or restore (State.Undo) gives the message when o
// has none, and is recorded in the record and cleared.
func (w *Workdir) commit(ctx context.Context, o CommitOptions) (*version.Record, error) {
	if o.Author == "" {
		o.Author = repo.DefaultActor()
	}
	if strings.TrimSpace(o.Message) == "" && w.State.Undo != nil {
		o.Message = w.State.Undo.Message
	}
	if strings.TrimSpace(o.Message) == "" {
		return nil, NoMessageError{}
	}
	if err := w.catalogGone(); err != nil {
		return nil, err
	}
	if w.State.Pulling != nil {
		return nil, &PullInterruptedError{Dir: w.Dir}
	}
	if o.AllowNothing {
		if nothing, err := w.nothingToCommit(ctx); err != nil || nothing {
			return nil, err
		}
	}
	if o.Signer == nil && o.SignKey != "" {
		s, err := repo.LoadSigner(ctx, o.SignKey)
		if err != nil {
			return nil, err
		}
		o.Signer = s
	}
	w.removeStaleTemps()
	id, err := version.NewIDAfter(w.State.Base)
	if err != nil {
		return nil, err
	}
	tmp := w.stateDir(LocalVersions, ".tmp-"+string(id))
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	w.step("commit:freeze")
	rec, ds, err := w.freeze(ctx, id, filepath.Join(tmp, version.CatalogFile), o)
	if err != nil {
		return nil, err
	}
	w.step("commit:dataset")
	if err := atomicfile.Write(filepath.Join(tmp, version.DatasetFile), ds); err != nil {
		return nil, err
	}
	w.step("commit:record")
	rb, err := rec.Marshal()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(tmp, version.RecordFile), rb); err != nil {
		return nil, err
	}
	if o.Signer != nil {
		w.step("commit:sign")
		if err := repo.SignLocalRecord(ctx, o.Signer, tmp); err != nil {
			return nil, err
		}
	}
	if err := stamp.Seal(filepath.Join(tmp, version.CatalogFile)); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, w.stateDir(LocalVersions, string(id))); err != nil {
		return nil, err
	}
	w.step("commit:state")
	if err := w.saveBaseDataset(ds); err != nil {
		return nil, err
	}
	w.State.Base = id
	w.State.Undo = nil
	if err := w.save(rec); err != nil {
		return nil, err
	}
	w.dropKeptBases("") // the new base is a local version, its catalog kept there
	return rec, nil
}

// freeze freezes the working catalog into the file frozen and describes
// it as version id: its record and its dataset.json. What the freeze
// itself reports (format, last snapshot, storage version, size and
// sha256, hashed as it was written) is used as it is; the frozen copy is
// opened once, for its snapshots (the lineage check), its state at the
// last one (the dataset) and its data path.
func (w *Workdir) freeze(ctx context.Context, id version.ID, frozen string, o CommitOptions) (*version.Record, []byte, error) {
	info, err := w.freezeCatalog(ctx, frozen)
	if err != nil {
		return nil, nil, err
	}
	cat, err := ducklake.Open(ctx, frozen)
	if err != nil {
		return nil, nil, err
	}
	defer cat.Close()
	snaps, err := cat.Snapshots(ctx)
	if err != nil {
		return nil, nil, err
	}
	first, err := w.checkLineage(snaps)
	if err != nil {
		return nil, nil, err
	}
	scheduled, err := w.checkSuperseded(ctx, cat)
	if err != nil {
		return nil, nil, err
	}
	based, err := w.baseDataset()
	if err != nil {
		return nil, nil, err
	} else if based != nil {
		if err := w.checkPublished(ctx, cat, based); err != nil {
			return nil, nil, err
		}
	}
	last := info.Snapshot
	if got := snaps[len(snaps)-1].ID; got != last.ID {
		return nil, nil, fmt.Errorf("freeze of %s: it ended at snapshot %d but the frozen copy ends at %d", w.CatalogPath(), last.ID, got)
	}
	history, baseHistory, err := w.checkHistory(ctx, cat, last.ID, based)
	if err != nil {
		return nil, nil, err
	}
	st, err := cat.State(ctx, last.ID)
	if err != nil {
		return nil, nil, err
	}
	known, err := cat.FilesKnownAt(ctx, last.ID)
	if err != nil {
		return nil, nil, err
	}
	dataPath := cat.DataPath()
	cat.Close()
	rec := w.newRecord(id, info, first, dataPath, o)
	dataset := version.NewDataset(id, info.Format, dataPath, st)
	dataset.Totals.ScheduledFiles, dataset.Totals.KnownFiles = &scheduled, &known
	dataset.History, dataset.BaseHistory = history, baseHistory
	ds, err := dataset.Marshal()
	if err != nil {
		return nil, nil, err
	}
	rec.Dataset = version.File{Size: int64(len(ds)), SHA256: digest(ds)}
	if err := rec.Validate(); err != nil {
		return nil, nil, err
	}
	return rec, ds, nil
}

// newRecord is the record of the version id that freeze made: info is what
// the freeze reported (format, last snapshot, storage, size and sha256),
// first the first snapshot the version adds (checkLineage), dataPath the
// frozen catalog's. Seq and parents follow the base record; created_at is
// now (o.Now in tests), never before the parent's (version.CheckChild);
// an undo in progress is recorded as what the version reverts or restores.
// Its dataset field is filled in by freeze.
func (w *Workdir) newRecord(id version.ID, info ducklake.FreezeInfo, first int64, dataPath string, o CommitOptions) *version.Record {
	size, sum := info.Size, info.SHA256 // hashed while Freeze wrote it
	last := info.Snapshot
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	created := now().UTC().Truncate(time.Millisecond)
	if w.BaseRecord != nil && created.Before(w.BaseRecord.CreatedAt) {
		// This machine's clock is behind the one that made the parent:
		// created_at never goes back along parents (version.CheckChild).
		created = w.BaseRecord.CreatedAt.UTC()
	}
	rec := &version.Record{
		RecordFormat: version.RecordFormat, ID: id, Seq: 1, Parents: []version.ID{},
		Author: o.Author, Message: o.Message, CreatedAt: created,
		Catalog: version.Catalog{Size: size, SHA256: sum, Storage: info.Storage},
		DuckLake: version.DuckLake{Format: info.Format, Snapshot: last.ID, SnapshotTime: last.Time,
			Adds: version.SnapshotRange{First: first, Last: last.ID}, DataPath: dataPath},
		Readers: version.NewReaders(info.Format, info.Storage),
	}
	if w.BaseRecord != nil {
		rec.Seq = w.BaseRecord.Seq + 1
		rec.Parents = []version.ID{w.BaseRecord.ID}
	} else if w.State.MigratedFrom != "" && w.State.MigratedFrom != rec.DuckLake.Format {
		rec.DuckLake.MigratedFrom = w.State.MigratedFrom // imported with Migrate
	}
	if u := w.State.Undo; u != nil {
		if u.Kind == UndoRevert {
			rec.Reverts = u.Version
		} else {
			rec.Restores = u.Version
		}
	}
	return rec
}

// checkLineage checks that snaps (sorted by id) continue the base version's
// timeline and returns the first snapshot id the new version adds
// (docs/spec.md §10.6).
func (w *Workdir) checkLineage(snaps []ducklake.Snapshot) (int64, error) {
	if len(snaps) == 0 {
		return 0, fmt.Errorf("%s has no snapshot: %w", w.CatalogPath(), ErrNotDescendant)
	}
	// Snapshot ids only grow. Gaps are allowed: DuckLake's
	// ducklake_expire_snapshots removes snapshot rows.
	var baseSnap *ducklake.Snapshot
	b := w.BaseRecord
	for i := range snaps {
		if i > 0 && snaps[i].ID <= snaps[i-1].ID {
			return 0, fmt.Errorf("%s: snapshot ids do not grow (%d after %d): the catalog is damaged", w.CatalogPath(), snaps[i].ID, snaps[i-1].ID)
		}
		if b != nil && snaps[i].ID == b.DuckLake.Snapshot {
			baseSnap = &snaps[i]
		}
	}
	if b == nil {
		return snaps[0].ID, nil
	}
	last := snaps[len(snaps)-1]
	if baseSnap == nil && last.ID > b.DuckLake.Snapshot {
		return 0, fmt.Errorf("%s no longer holds snapshot %d, where version %s (seq %d) ends (did ducklake_expire_snapshots remove it?), so fdl cannot tell that it continues that version: %w; check out the branch again and redo the change. In a working catalog, expire only the snapshots before the base's: SET VARIABLE old = (SELECT list(snapshot_id) FROM lake.snapshots() WHERE snapshot_id < %d); CALL ducklake_expire_snapshots('lake', versions => getvariable('old')); (older_than expires newer snapshots too in SQLite catalogs with DuckDB 1.5.5)",
			w.CatalogPath(), b.DuckLake.Snapshot, b.ID, b.Seq, ErrNotDescendant, b.DuckLake.Snapshot)
	}
	if last.ID < b.DuckLake.Snapshot || !baseSnap.Time.Equal(b.DuckLake.SnapshotTime) {
		return 0, fmt.Errorf("%s does not continue version %s (seq %d): that version ends at snapshot %d made %s, and this catalog's snapshot %d is not that one; it was replaced by another catalog: check out the branch again and redo the change there: %w",
			w.CatalogPath(), b.ID, b.Seq, b.DuckLake.Snapshot, b.DuckLake.SnapshotTime.Format(time.RFC3339Nano), b.DuckLake.Snapshot, ErrNotDescendant)
	}
	if last.ID == b.DuckLake.Snapshot {
		return 0, fmt.Errorf("the working catalog has no snapshot after version %s (seq %d, snapshot %d): %w; write to it with DuckDB first", b.ID, b.Seq, b.DuckLake.Snapshot, ErrNothingToCommit)
	}
	return b.DuckLake.Snapshot + 1, nil
}

// nothingToCommit reports whether the working catalog's last snapshot is
// its base's (same id and snapshot_time) and no revert or restore waits
// for its commit: reading the snapshots' ids and times only
// (ducklake.SnapshotMarks), not freezing the catalog.
func (w *Workdir) nothingToCommit(ctx context.Context) (bool, error) {
	b := w.BaseRecord
	if b == nil || w.State.Undo != nil {
		return false, nil
	}
	marks, err := ducklake.SnapshotMarks(ctx, w.CatalogPath())
	if err != nil || len(marks) == 0 {
		return false, err
	}
	last := marks[len(marks)-1]
	return last.ID == b.DuckLake.Snapshot && last.Time.Equal(b.DuckLake.SnapshotTime), nil
}

// digest is the lower-case hex SHA-256 of b (a file a version is made of).
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
