package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Working directory layout (docs/spec.md §working directory).
const (
	// CatalogName is the working catalog's file name inside DIR when it is
	// a DuckDB file (catalog format "duckdb").
	CatalogName = "ducklake.duckdb"
	// SQLiteCatalogName is the working catalog's file name inside DIR when
	// it is a SQLite file (catalog format "sqlite").
	SQLiteCatalogName = "ducklake.sqlite"
	// StateDir holds fdl's own files inside DIR.
	StateDir = ".fdl"
	// StateFile is DIR/.fdl/state.json.
	StateFile = "state.json"
	// BaseFile is DIR/.fdl/base.json: the record of the base version.
	BaseFile = "base.json"
	// LocalVersions is DIR/.fdl/versions/<id>/: committed, not yet pushed.
	LocalVersions = "versions"
	// StateFormat is the format number of state.json.
	StateFormat = 1
)

// More sentinel errors of the working catalog side.
var (
	ErrNotWorkdir       = errors.New("not an fdl working directory")
	ErrNothingToCommit  = errors.New("nothing to commit")
	ErrNotDescendant    = errors.New("working catalog does not descend from its base")
	ErrDirNotEmpty      = errors.New("directory is not empty")
	ErrNoVersions       = errors.New("branch has no version yet")
	ErrNothingToPush    = errors.New("nothing to push")
	ErrInvalidArguments = errors.New("invalid arguments")
)

// State is DIR/.fdl/state.json: where a working catalog came from.
type State struct {
	Format int `json:"format"`
	// Repository is the repository URL (local paths made absolute).
	Repository string `json:"repository"`
	// Branch is the short name of the branch push moves by default.
	Branch string `json:"branch"`
	// Base is the version the working catalog descends from: the parent of
	// the next commit ("" before the first version).
	Base version.ID `json:"base,omitempty"`
	// Upstream is the newest version of Base's history known to be in the
	// store; the versions from Base back to Upstream are local (unpushed).
	Upstream version.ID `json:"upstream,omitempty"`
	// CatalogFormat is the working catalog's database: "sqlite"
	// (DIR/ducklake.sqlite) or "duckdb" (DIR/ducklake.duckdb; also when
	// absent, as state files written before SQLite support are).
	CatalogFormat string `json:"catalog_format,omitempty"`
}

// Workdir is an open working directory.
type Workdir struct {
	Dir   string
	State State
	// BaseRecord is the record of State.Base (nil when there is none).
	BaseRecord *version.Record
}

// CatalogPath returns the working catalog's path (its name depends on
// State.CatalogFormat).
func (w *Workdir) CatalogPath() string {
	if w.State.CatalogFormat == string(ducklake.BackendSQLite) {
		return filepath.Join(w.Dir, SQLiteCatalogName)
	}
	return filepath.Join(w.Dir, CatalogName)
}

func (w *Workdir) stateDir(parts ...string) string {
	return filepath.Join(append([]string{w.Dir, StateDir}, parts...)...)
}

// OpenWorkdir reads DIR/.fdl/state.json. Errors: ErrNotWorkdir naming DIR
// and saying how to make one.
func OpenWorkdir(dir string) (*Workdir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	w := &Workdir{Dir: abs}
	b, err := os.ReadFile(w.stateDir(StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (no %s/%s): run 'fdl checkout URL DIR' to make one, or pass -C DIR", abs, ErrNotWorkdir, StateDir, StateFile)
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &w.State); err != nil {
		return nil, fmt.Errorf("%s: %s/%s does not parse (%v): %w", abs, StateDir, StateFile, err, ErrNotWorkdir)
	}
	if w.State.Format != StateFormat {
		return nil, fmt.Errorf("%s: state format %d is not one this fdl reads: %w", abs, w.State.Format, ErrNotWorkdir)
	}
	if w.State.Base != "" {
		b, err := os.ReadFile(w.stateDir(BaseFile))
		if err != nil {
			return nil, fmt.Errorf("%s: base record: %w", abs, err)
		}
		if w.BaseRecord, err = version.ParseRecord(b, w.State.Base); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// save writes state.json and base.json atomically (temp file, fsync,
// rename): base.json first, state.json last.
func (w *Workdir) save(base *version.Record) error {
	if base != nil {
		b, err := base.Marshal()
		if err != nil {
			return err
		}
		if err := writeFileAtomic(w.stateDir(BaseFile), b); err != nil {
			return err
		}
	}
	b, _ := json.MarshalIndent(w.State, "", "  ")
	if err := writeFileAtomic(w.stateDir(StateFile), append(b, '\n')); err != nil {
		return err
	}
	w.BaseRecord = base
	return nil
}

func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// CheckoutOptions are the inputs of Checkout.
type CheckoutOptions struct {
	Dir    string // the working directory to make; must not exist or be empty
	Rev    string // revision to check out; default: HEAD's branch
	From   string // start from this existing DuckLake catalog file instead
	Branch string // branch push moves; default: the branch Rev names, else HEAD's
	// Format is the DuckLake format of a new catalog made for a repository
	// without versions ("1.0" or "0.4"; default "1.0").
	Format string
	// CatalogFormat is the database the working catalog is stored in:
	// "duckdb" (DIR/ducklake.duckdb, the version's frozen file itself; the
	// default when empty) or "sqlite" (DIR/ducklake.sqlite, converted by
	// ducklake.ConvertToSQLite, which several DuckDB processes can attach at
	// once). The CLI's default is "sqlite" (docs/cli.md).
	CatalogFormat string
}

// CheckoutResult says what Checkout made.
type CheckoutResult struct {
	Dir     string     `json:"dir"`
	Catalog string     `json:"catalog"`
	Branch  string     `json:"branch"`
	Base    version.ID `json:"base,omitempty"`
	Seq     int64      `json:"seq,omitempty"`
	// Origin is "version" (fetched from the store), "file" (--from) or
	// "new" (an empty catalog made by fdl).
	Origin   string `json:"origin"`
	DataPath string `json:"data_path"`
	// Attach is the DuckDB statement that attaches the working catalog.
	Attach string `json:"attach"`
	// CatalogFormat is "sqlite" or "duckdb".
	CatalogFormat string `json:"catalog_format"`
}

// Checkout makes a working directory (DESIGN.md §6): DIR/ducklake.duckdb and
// DIR/.fdl/. The catalog is a checked copy of a version (sha256 verified
// before anything is written into DIR), a frozen copy of an existing catalog
// file (From), or, for a branch with no version yet, a new empty catalog
// whose data_path is the repository's data/ folder. On any error DIR is left
// as it was (removed if Checkout made it).
func (r *Repo) Checkout(ctx context.Context, o CheckoutOptions) (res *CheckoutResult, err error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("checkout needs a directory: %w", ErrInvalidArguments)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	backend := ducklake.BackendDuckDB
	if o.CatalogFormat != "" {
		if backend, err = ducklake.ParseBackend(o.CatalogFormat); err != nil {
			return nil, fmt.Errorf("%v: %w", err, ErrInvalidArguments)
		}
	}
	if root := r.st.Location(""); filepath.IsAbs(root) && (dir == root || strings.HasPrefix(dir, root+string(filepath.Separator))) {
		return nil, fmt.Errorf("checkout into %s: it is inside the repository %s; choose a directory outside it: %w", dir, root, ErrInvalidArguments)
	}
	made, err := prepareDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cleanDir(dir, made)
		}
	}()

	res = &CheckoutResult{Dir: dir, Catalog: filepath.Join(dir, CatalogName), CatalogFormat: string(backend)}
	// A SQLite working catalog is made as the DuckDB file first (in .fdl/),
	// then converted.
	duckPath := res.Catalog
	if backend == ducklake.BackendSQLite {
		res.Catalog = filepath.Join(dir, SQLiteCatalogName)
		duckPath = filepath.Join(dir, StateDir, "checkout.duckdb")
	}
	var base *version.Record
	var branch refs.Name
	if o.Rev != "" {
		rv, err := r.Resolve(ctx, o.Rev)
		if err != nil {
			return nil, err
		}
		if base, err = r.Record(ctx, rv.ID); err != nil {
			return nil, err
		}
		if rv.Ref.IsBranch() {
			branch = rv.Ref
		}
	}
	if o.Branch != "" {
		if branch, err = refs.Branch(o.Branch); err != nil {
			return nil, err
		}
	}
	if branch == "" {
		if branch, err = r.refs.Head(ctx); err != nil {
			return nil, err
		}
	}
	if o.Rev == "" {
		ref, err := r.refs.Read(ctx, branch)
		switch {
		case err == nil:
			if base, err = r.Record(ctx, ref.ID); err != nil {
				return nil, err
			}
		case errors.Is(err, refs.ErrNotFound):
		default:
			return nil, err
		}
	}
	if base != nil {
		if err := r.refuseRetired(ctx, base); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, StateDir, LocalVersions), 0o755); err != nil {
		return nil, err
	}
	switch {
	case o.From != "":
		res.Origin = "file"
		if _, err := ducklake.Freeze(ctx, o.From, duckPath); err != nil {
			return nil, err
		}
	case base != nil:
		res.Origin = "version"
		if err := r.FetchCatalog(ctx, base, duckPath); err != nil {
			return nil, err
		}
	default:
		res.Origin = "new"
		format := o.Format
		if format == "" {
			format = "1.0"
		}
		if err := lakewriter.Create(ctx, duckPath, lakewriter.CreateOptions{Format: format, DataPath: r.DataLocation()}); err != nil {
			return nil, err
		}
	}
	// New lakes and imports start with DuckLake's delete_older_than set so
	// that CHECKPOINT and cleanup calls without older_than leave deleting
	// files to gc (ducklake.DeleteOlderThan, docs/spec.md §9); versions
	// made from them carry it.
	if res.Origin != "version" {
		if _, err := ducklake.SetOptionIfAbsent(ctx, duckPath, "delete_older_than", ducklake.DeleteOlderThan); err != nil {
			return nil, err
		}
	}
	// The data path is read from the DuckDB file: opening the SQLite copy
	// would read all of it into memory (ducklake.Open of a SQLite file).
	cat, err := ducklake.Open(ctx, duckPath)
	if err != nil {
		return nil, err
	}
	res.DataPath = cat.DataPath()
	format := cat.Format()
	cat.Close()
	if duckPath != res.Catalog {
		err := ducklake.ConvertToSQLite(ctx, duckPath, res.Catalog)
		os.Remove(duckPath)
		if err != nil {
			return nil, err
		}
	}
	url := r.url
	if !strings.Contains(url, "://") {
		if url, err = filepath.Abs(url); err != nil {
			return nil, err
		}
	}
	w := &Workdir{Dir: dir, State: State{Format: StateFormat, Repository: url, Branch: branch.Short()}}
	if backend == ducklake.BackendSQLite {
		w.State.CatalogFormat = string(backend)
	}
	if base != nil {
		w.State.Base, w.State.Upstream = base.ID, base.ID
		res.Base, res.Seq = base.ID, base.Seq
	}
	if err := w.save(base); err != nil {
		return nil, err
	}
	res.Branch = branch.Short()
	res.Attach = r.AttachStatement(res.Catalog, res.DataPath, "lake", false)
	if note := ducklake.ReaderNote(format); note != "" {
		res.Attach += " " + note
	}
	return res, nil
}

// SQLiteAttachOptions are the ATTACH options fdl prints for a SQLite working
// catalog: WAL journal mode and a busy timeout (milliseconds), passed by the
// ducklake extension to DuckDB's sqlite extension (META_ prefix), so several
// DuckDB processes can attach and write at once.
var SQLiteAttachOptions = []string{"META_JOURNAL_MODE 'WAL'", fmt.Sprintf("META_BUSY_TIMEOUT %d", ducklake.SQLiteBusyTimeout)}

// prepareDir makes dir or checks it is empty; made reports whether it made it.
func prepareDir(dir string) (made bool, err error) {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("checkout into %s: %w", dir, err)
	case len(ents) > 0:
		return false, fmt.Errorf("checkout into %s: %w (it holds %s): choose a new or empty directory", dir, ErrDirNotEmpty, ents[0].Name())
	}
	return false, nil
}

func cleanDir(dir string, made bool) {
	if made {
		os.RemoveAll(dir)
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// AttachStatement returns the DuckDB statement that attaches a catalog file
// as a DuckLake database named alias. When the catalog's data_path is the
// repository's data path as recorded at init but the repository is now
// reached at another location, DATA_PATH and OVERRIDE_DATA_PATH point
// DuckDB at the data/ folder as reached now (DESIGN.md §5a). When the
// catalog or the data it reads lives in the repository's object store (S3,
// GCS, Azure), the statement is preceded, on the same line, by the DuckDB
// CREATE SECRET the reader needs (without credentials: a credential chain
// or placeholders; docs/stores.md).
func (r *Repo) AttachStatement(catalogPath, dataPath, alias string, readOnly bool) string {
	var opts []string
	if dataPath == r.cfg.DataPath && r.DataLocation() != r.cfg.DataPath {
		opts = append(opts, "DATA_PATH "+SQLString(r.DataLocation()), "OVERRIDE_DATA_PATH true")
		dataPath = r.DataLocation()
	}
	secret := ""
	if sh, ok := r.st.(interface{ DuckDBSecret() string }); ok {
		root := r.st.Location("")
		if strings.HasPrefix(catalogPath, root) || strings.HasPrefix(dataPath, root) {
			secret = sh.DuckDBSecret() + " "
		}
	}
	if readOnly {
		opts = append(opts, "READ_ONLY")
	}
	prefix := "ducklake:"
	if b, err := ducklake.DetectBackend(catalogPath); err == nil && b == ducklake.BackendSQLite {
		prefix = "ducklake:sqlite:"
		opts = append(slices.Clone(SQLiteAttachOptions), opts...)
	}
	s := secret + "ATTACH " + SQLString(prefix+catalogPath) + " AS " + SQLIdent(alias)
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	return s + ";"
}

// SQLString quotes s as a DuckDB string literal (” doubles a quote).
func SQLString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// SQLIdent quotes s as a DuckDB identifier when it is not a plain one.
func SQLIdent(s string) string {
	plain := s != ""
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// CommitOptions are the inputs of Commit.
type CommitOptions struct {
	Message string
	Author  string
	// Now, if set, is the creation time (tests); default time.Now.
	Now func() time.Time
}

// Commit freezes the working catalog into a new version held locally in
// DIR/.fdl/versions/<id>/ until pushed (DESIGN.md §1, §3). The working
// catalog is read, never changed. It refuses (ErrNothingToCommit) when the
// catalog has no snapshot after its base, and (ErrNotDescendant) when the
// catalog's snapshots do not continue the base's: the base's last snapshot
// must be there with the same snapshot_time, and ids must have no gaps.
// The working directory's state moves to the new version only after all its
// files are written.
func (w *Workdir) Commit(ctx context.Context, o CommitOptions, step func(string)) (*version.Record, error) {
	if step == nil {
		step = func(string) {}
	}
	if strings.TrimSpace(o.Message) == "" {
		return nil, fmt.Errorf("a commit needs a message (-m MSG): %w", ErrInvalidArguments)
	}
	unlock, err := w.lock("commit")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if cur, err := OpenWorkdir(w.Dir); err == nil {
		w.State, w.BaseRecord = cur.State, cur.BaseRecord
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
	step("commit:freeze")
	frozen := filepath.Join(tmp, version.CatalogFile)
	if _, err := ducklake.Freeze(ctx, w.CatalogPath(), frozen); err != nil {
		return nil, err
	}
	cat, err := ducklake.Open(ctx, frozen)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	snaps, err := cat.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	first, err := w.checkLineage(snaps)
	if err != nil {
		return nil, err
	}
	scheduled, err := w.checkSuperseded(ctx, cat)
	if err != nil {
		return nil, err
	}
	last := snaps[len(snaps)-1]
	st, err := cat.State(ctx, last.ID)
	if err != nil {
		return nil, err
	}
	storage, err := ducklake.ReadStorage(frozen)
	if err != nil {
		return nil, err
	}
	cat.Close()
	size, sum, err := FileDigest(frozen)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	rec := &version.Record{
		RecordFormat: version.RecordFormat, ID: id, Seq: 1, Parents: []version.ID{},
		Author: o.Author, Message: o.Message, CreatedAt: now().UTC().Truncate(time.Millisecond),
		Catalog: version.Catalog{Size: size, SHA256: sum, Storage: storage},
		DuckLake: version.DuckLake{Format: cat.Format(), Snapshot: last.ID, SnapshotTime: last.Time,
			Adds: version.SnapshotRange{First: first, Last: last.ID}, DataPath: cat.DataPath()},
	}
	if w.BaseRecord != nil {
		rec.Seq = w.BaseRecord.Seq + 1
		rec.Parents = []version.ID{w.BaseRecord.ID}
	}
	dataset := version.NewDataset(id, cat.Format(), cat.DataPath(), st)
	dataset.Totals.ScheduledFiles = &scheduled
	ds, err := dataset.Marshal()
	if err != nil {
		return nil, err
	}
	rec.Dataset = version.File{Size: int64(len(ds)), SHA256: sha256Hex(ds)}
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	step("commit:dataset")
	if err := writeFileAtomic(filepath.Join(tmp, version.DatasetFile), ds); err != nil {
		return nil, err
	}
	step("commit:record")
	rb, err := rec.Marshal()
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(tmp, version.RecordFile), rb); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, w.stateDir(LocalVersions, string(id))); err != nil {
		return nil, err
	}
	step("commit:state")
	w.State.Base = id
	if err := w.save(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// checkLineage checks that snaps (sorted by id) continue the base version's
// timeline and returns the first snapshot id the new version adds
// (DESIGN.md §4.6).
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

// PendingVersions returns the versions committed locally and not pushed,
// oldest first (Base back to Upstream).
func (w *Workdir) PendingVersions() ([]Pending, error) {
	var out []Pending
	id := w.State.Base
	for id != "" && id != w.State.Upstream {
		dir := w.stateDir(LocalVersions, string(id))
		b, err := os.ReadFile(filepath.Join(dir, version.RecordFile))
		if err != nil {
			return nil, fmt.Errorf("local version %s: %w", id, err)
		}
		rec, err := version.ParseRecord(b, id)
		if err != nil {
			return nil, err
		}
		out = append(out, Pending{Record: rec, Dir: dir})
		id = rec.Parent()
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// LocalCatalog returns the path of the frozen catalog of a version committed
// here and not pushed yet.
func (w *Workdir) LocalCatalog(id version.ID) string {
	return w.stateDir(LocalVersions, string(id), version.CatalogFile)
}

// LocalDataset reads dataset.json of a version committed in this working
// directory and not pushed yet. Errors: os.ErrNotExist when it is not local.
func (w *Workdir) LocalDataset(id version.ID) (*version.Dataset, error) {
	b, err := os.ReadFile(w.stateDir(LocalVersions, string(id), version.DatasetFile))
	if err != nil {
		return nil, err
	}
	return version.ParseDataset(b, id)
}

// Push pushes the working directory's local versions to branch (default:
// the branch it was checked out from) with Repo.Push, then records the
// branch's new version as upstream and removes the pushed local copies.
func (w *Workdir) Push(ctx context.Context, r *Repo, branch string) (PushResult, error) {
	if branch == "" {
		branch = w.State.Branch
	}
	name, err := refs.Branch(branch)
	if err != nil {
		return PushResult{}, err
	}
	if w.State.Base == "" {
		return PushResult{Branch: name}, fmt.Errorf("there is no version to push: commit first (fdl commit -m MSG): %w", ErrNothingToPush)
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
	res, err := r.Push(ctx, name, w.State.Base, pending)
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
	return res, nil
}

// Status is the working catalog compared with its base version.
type Status struct {
	Dir        string     `json:"dir"`
	Repository string     `json:"repository"`
	Branch     string     `json:"branch"`
	Base       version.ID `json:"base,omitempty"`
	BaseSeq    int64      `json:"base_seq,omitempty"`
	// BaseSnapshot is the base's last snapshot (-1 without a base).
	BaseSnapshot int64 `json:"base_snapshot"`
	// Unpushed counts local versions not in the store yet.
	Unpushed int `json:"unpushed"`
	// Snapshots are the working catalog's snapshots after the base.
	Snapshots []ducklake.Snapshot `json:"snapshots"`
	// Tables lists the tables the new snapshots touched, by the
	// changes_made items naming them.
	Tables []string `json:"tables_touched"`
	// Descends is false when the catalog does not continue its base.
	Descends bool   `json:"descends"`
	Problem  string `json:"problem,omitempty"`
}

// Status reads the working catalog (read-only) and compares it with the base.
// Errors: ducklake.ErrLocked while another process holds the catalog.
func (w *Workdir) Status(ctx context.Context) (*Status, error) {
	st := &Status{Dir: w.Dir, Repository: w.State.Repository, Branch: w.State.Branch, Base: w.State.Base, BaseSnapshot: -1, Descends: true}
	if w.BaseRecord != nil {
		st.BaseSeq = w.BaseRecord.Seq
		st.BaseSnapshot = w.BaseRecord.DuckLake.Snapshot
	}
	pending, err := w.PendingVersions()
	if err != nil {
		return nil, err
	}
	st.Unpushed = len(pending)
	cat, err := ducklake.Open(ctx, w.CatalogPath())
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	snaps, err := cat.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := w.checkLineage(snaps); err != nil && !errors.Is(err, ErrNothingToCommit) {
		st.Descends = false
		st.Problem = err.Error()
		return st, nil
	}
	names := map[string]string{} // table id -> "schema"."table"
	for _, at := range []int64{st.BaseSnapshot, snaps[len(snaps)-1].ID} {
		if at < 0 {
			continue
		}
		state, err := cat.State(ctx, at)
		if err != nil {
			return nil, err
		}
		for _, sc := range state.Schemas {
			for _, t := range sc.Tables {
				names[fmt.Sprint(t.ID)] = SQLIdent(sc.Name) + "." + SQLIdent(t.Name)
			}
		}
	}
	touched := map[string]bool{}
	for _, s := range snaps {
		if s.ID <= st.BaseSnapshot {
			continue
		}
		st.Snapshots = append(st.Snapshots, s)
		for _, c := range ducklake.ParseChanges(s.Changes) {
			if strings.Contains(c.Kind, "table") || strings.Contains(c.Kind, "inlined") {
				if n, ok := names[c.Value]; ok {
					touched[n] = true
				} else {
					touched[qualifiedName(c.Value)] = true
				}
			}
		}
	}
	if st.Snapshots == nil {
		st.Snapshots = []ducklake.Snapshot{}
	}
	st.Tables = []string{}
	for t := range touched {
		st.Tables = append(st.Tables, t)
	}
	sort.Strings(st.Tables)
	return st, nil
}

// qualifiedName turns a changes_made value such as "main"."my ""t""" into
// the form people type (main."my ""t""").
func qualifiedName(v string) string {
	var parts []string
	var cur strings.Builder
	inQuote := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"' && inQuote && i+1 < len(v) && v[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			inQuote = !inQuote
		case c == '.' && !inQuote:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	for i, p := range parts {
		parts[i] = SQLIdent(p)
	}
	return strings.Join(parts, ".")
}

// lock takes DIR/.fdl/lock for a commit or push, so two fdl processes never
// change one working directory's state at once. Errors: store.ErrBusy with
// a hint.
func (w *Workdir) lock(what string) (func(), error) {
	unlock, err := store.LockFile(w.stateDir("lock"))
	if errors.Is(err, store.ErrBusy) {
		return nil, fmt.Errorf("cannot %s in %s: another fdl commit or push is running in this working directory; wait for it to finish: %w", what, w.Dir, err)
	}
	return unlock, err
}

// removeStaleTemps removes .fdl/versions/.tmp-* folders left by a commit that
// was killed (the caller holds the working directory lock).
func (w *Workdir) removeStaleTemps() {
	ents, _ := os.ReadDir(w.stateDir(LocalVersions))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			os.RemoveAll(w.stateDir(LocalVersions, e.Name()))
		}
	}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
