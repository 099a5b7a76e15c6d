package workdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/internal/atomicfile"
	"github.com/fdl-dev/fdl/repo"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/filelock"
	"github.com/fdl-dev/fdl/version"
)

// The working directory's own state: DIR/.fdl/state.json and base.json, its
// lock, and the versions committed there and not pushed yet.

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
	// CatalogFormat is the working catalog's database:
	// ducklake.BackendSQLite (DIR/ducklake.sqlite) or ducklake.BackendDuckDB
	// (DIR/ducklake.duckdb; also when absent, as state files written before
	// SQLite support are).
	CatalogFormat ducklake.Backend `json:"catalog_format,omitempty"`
	// Pulling is set while a pull replaces the working catalog (from the
	// base to the branch's head); a pull that was interrupted leaves it,
	// and commit refuses until the next pull finishes.
	Pulling *Pulling `json:"pulling,omitempty"`
	// MigratedFrom is the DuckLake format of a lake imported with
	// CheckoutOptions.Migrate before it was migrated; the first commit
	// records it (version.DuckLake.MigratedFrom).
	MigratedFrom string `json:"migrated_from,omitempty"`
	// BaseRecord is the base's version.json, held here so that the base
	// and its record change in one atomic write of state.json (a process
	// killed between two files once left a base.json of another version,
	// and every later command failed). State files written before it
	// existed have their record in base.json only.
	BaseRecord json.RawMessage `json:"base_record,omitempty"`
	// Undo is a revert or restore written into the working catalog and not
	// committed yet (fdl revert --no-commit, fdl restore): the next commit
	// records it (version.json reverts or restores) and takes its message
	// when given none.
	Undo *PendingUndo `json:"undo,omitempty"`
}

// PendingUndo is a revert or restore waiting for its commit.
type PendingUndo struct {
	Kind     UndoKind   `json:"kind"`
	Version  version.ID `json:"version"`
	Snapshot int64      `json:"snapshot"` // the snapshot it wrote
	Message  string     `json:"message"`  // the commit message it proposes
}

// Workdir is an open working directory. It holds the repository it came
// from, opened on first use with the options given to Open (Repo) and
// closed by Close; the repository never holds a working directory (what a
// command on the repository needs from one is Local's value).
type Workdir struct {
	Dir   string
	State State
	// BaseRecord is the record of State.Base (nil when there is none).
	BaseRecord *version.Record
	// baseDS: the base's dataset as ReplaceUnpushed read it from the
	// repository (baseDataset), nil otherwise.
	baseDS *version.Dataset

	opts repo.Options
	repo *repo.Repo
	// lent: repo was given by OpenWith; Close leaves it open.
	lent bool
}

// CatalogPath returns the working catalog's path (its name depends on
// State.CatalogFormat).
func (w *Workdir) CatalogPath() string {
	if w.State.CatalogFormat == ducklake.BackendSQLite {
		return filepath.Join(w.Dir, SQLiteCatalogName)
	}
	return filepath.Join(w.Dir, CatalogName)
}

// readable refuses a read of the working catalog against its base (fdl
// diff) when it is gone (*CatalogUnusableError) or a pull stopped midway
// may have replaced it (*PullInterruptedError: the next pull settles it).
func (w *Workdir) readable() error {
	if err := w.catalogGone(); err != nil {
		return err
	}
	if w.State.Pulling != nil {
		return &PullInterruptedError{Dir: w.Dir}
	}
	return nil
}

// catalogGone returns *CatalogUnusableError when the working catalog is
// not there, else nil (also when it cannot tell: the read that follows
// names the file system's error).
func (w *Workdir) catalogGone() error {
	if _, err := os.Lstat(w.CatalogPath()); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return w.unusableError(fs.ErrNotExist)
}

// unusable returns err as *CatalogUnusableError when it says that the
// working catalog itself is no catalog fdl can read (it wraps
// ducklake.ErrNotCatalog or ducklake.ErrCorrupt and names the catalog's
// path); any other err as it is.
func (w *Workdir) unusable(err error) error {
	if err == nil || !(errors.Is(err, ducklake.ErrNotCatalog) || errors.Is(err, ducklake.ErrCorrupt)) || !strings.Contains(err.Error(), w.CatalogPath()) {
		return err
	}
	if errors.As(err, new(*CatalogUnusableError)) {
		return err
	}
	return w.unusableError(err)
}

func (w *Workdir) unusableError(err error) *CatalogUnusableError {
	e := &CatalogUnusableError{Dir: w.Dir, Path: w.CatalogPath(), Branch: w.State.Branch, Err: err}
	if pending, perr := w.PendingVersions(); perr == nil {
		e.Unpushed = len(pending)
	}
	return e
}

func (w *Workdir) stateDir(parts ...string) string {
	return filepath.Join(append([]string{w.Dir, StateDir}, parts...)...)
}

// Open reads DIR/.fdl/state.json; opts (at most one) are the options the
// repository is opened with when a command needs it (Repo). Errors:
// ErrNotWorkdir naming DIR and saying how to make one.
func Open(dir string, opts ...repo.Options) (*Workdir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	w := &Workdir{Dir: abs}
	if len(opts) > 0 {
		w.opts = opts[0]
	}
	if err := w.reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// OpenWith is Open with its repository already open: r (which must be the
// one the working directory came from) serves every command, with r's
// options, and stays open at Close. Tests hand in a repository over a
// wrapped store (fault injection). Errors: Open's.
func OpenWith(dir string, r *repo.Repo) (*Workdir, error) {
	w, err := Open(dir, r.Options())
	if err != nil {
		return nil, err
	}
	w.repo, w.lent = r, true
	return w, nil
}

// reload reads state.json and base.json again (a commit or pull in another
// process may have changed them).
func (w *Workdir) reload() error {
	b, err := os.ReadFile(w.stateDir(StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return &NotWorkdirError{Dir: w.Dir, Interrupted: interruptedCheckout(w.Dir)}
	}
	if err != nil {
		return err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %s/%s does not parse (%v): %w", w.Dir, StateDir, StateFile, err, ErrNotWorkdir)
	}
	if st.Format != StateFormat {
		return fmt.Errorf("%s: state format %d is not one this fdl reads: %w", w.Dir, st.Format, ErrNotWorkdir)
	}
	base, err := w.readBase(st)
	if err != nil {
		return err
	}
	w.State, w.BaseRecord = st, base
	return nil
}

// readBase returns the record of st's base (nil before the first
// version): the one state.json holds, else (a state file written before
// it held one) base.json when it is that version's, else the local
// version's own version.json (a commit killed between its files).
// Errors: a record that does not parse or names another version,
// wrapping version.ErrBadRecord.
func (w *Workdir) readBase(st State) (*version.Record, error) {
	if st.Base == "" {
		return nil, nil
	}
	if len(st.BaseRecord) > 0 {
		return version.ParseRecord(st.BaseRecord, st.Base)
	}
	b, err := os.ReadFile(w.stateDir(BaseFile))
	if err == nil {
		if rec, perr := version.ParseRecord(b, st.Base); perr == nil {
			return rec, nil
		}
	}
	local, lerr := os.ReadFile(w.stateDir(LocalVersions, string(st.Base), version.RecordFile))
	if lerr == nil {
		return version.ParseRecord(local, st.Base)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: base record: %w", w.Dir, err)
	}
	return version.ParseRecord(b, st.Base)
}

// Repo returns the repository the working directory came from, opened
// once with the options given to Open. When it is not there, the error
// says the working directory's repository is missing
// (repo.NotRepositoryError.Workdir): it may have moved.
func (w *Workdir) Repo(ctx context.Context) (*repo.Repo, error) {
	if w.repo != nil {
		return w.repo, nil
	}
	r, err := repo.Open(ctx, w.State.Repository, w.opts)
	if nr := (*repo.NotRepositoryError)(nil); errors.As(err, &nr) {
		nr.Workdir = w.Dir
	}
	if err != nil {
		return nil, err
	}
	w.repo = r
	return r, nil
}

// Close closes the repository Repo opened, if any.
func (w *Workdir) Close() error {
	if w.repo == nil || w.lent {
		return nil
	}
	err := w.repo.Close()
	w.repo = nil
	return err
}

// Local returns what a command on the repository needs from the working
// directory (repo.Local): its branch, upstream, base, unpushed versions
// and working catalog. Errors: a local version.json's.
func (w *Workdir) Local() (*repo.Local, error) {
	pending, err := w.PendingVersions()
	if err != nil {
		return nil, err
	}
	return &repo.Local{Dir: w.Dir, Branch: w.State.Branch, Upstream: w.State.Upstream, Base: w.BaseRecord, Pending: pending, Catalog: w.CatalogPath(), CheckCatalog: w.readable}, nil
}

// step calls the options' step hook (tests inject crashes at a step).
func (w *Workdir) step(name string) {
	if w.opts.Step != nil {
		w.opts.Step(name)
	}
}

// save writes state.json atomically (temp file, fsync, rename), with the
// base's record in it: one write moves the base and its record together,
// so a process killed at any point leaves the old state or the new one.
// base.json follows, a copy for readers of the layout (docs/spec.md §12);
// state.json's record wins over it.
func (w *Workdir) save(base *version.Record) error {
	w.State.BaseRecord = nil
	var rb []byte
	if base != nil {
		var err error
		if rb, err = base.Marshal(); err != nil {
			return err
		}
		w.State.BaseRecord = json.RawMessage(rb)
	}
	b, _ := json.MarshalIndent(w.State, "", "  ")
	if err := atomicfile.Write(w.stateDir(StateFile), append(b, '\n')); err != nil {
		return err
	}
	w.BaseRecord = base
	w.step("state:saved")
	if rb != nil {
		return atomicfile.Write(w.stateDir(BaseFile), rb)
	}
	return nil
}

// PendingVersions returns the versions committed locally and not pushed,
// oldest first (Base back to Upstream).
func (w *Workdir) PendingVersions() ([]repo.Pending, error) {
	var out []repo.Pending
	id := w.State.Base
	for id != "" && id != w.State.Upstream {
		dir := w.stateDir(LocalVersions, string(id))
		b, err := os.ReadFile(filepath.Join(dir, version.RecordFile))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &LocalVersionError{Dir: w.Dir, Version: id, Err: fmt.Errorf("%s is missing (%w)", filepath.Join(dir, version.RecordFile), ErrLocalFileMissing)}
		}
		if err != nil {
			return nil, fmt.Errorf("local version %s: %w", id, err)
		}
		rec, err := version.ParseRecord(b, id)
		if err != nil {
			return nil, &LocalVersionError{Dir: w.Dir, Version: id, Err: err}
		}
		out = append(out, repo.Pending{Record: rec, Dir: dir, Raw: b})
		id = rec.Parent()
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// checkLocalVersions checks, before a push or request uploads anything,
// that every pending version's folder is the folder commit wrote and
// holds its catalog, dataset.json and version.json as regular files (a
// symbolic link would be linked into a folder store as a link to a file
// fdl does not own): a stat of each. Their bytes are checked against the
// record by the push itself, also before the first upload
// (repo.Repo.Publish). Errors: *LocalVersionError (NothingUploaded)
// wrapping ErrLocalFileMissing or the file system's error.
func (w *Workdir) checkLocalVersions(pending []repo.Pending) error {
	for _, p := range pending {
		for _, path := range []string{p.Dir, filepath.Join(p.Dir, version.CatalogFile), filepath.Join(p.Dir, version.DatasetFile), filepath.Join(p.Dir, version.RecordFile)} {
			fi, err := os.Lstat(path)
			switch dir := path == p.Dir; {
			case errors.Is(err, fs.ErrNotExist):
				err = fmt.Errorf("%s is missing (%w)", path, ErrLocalFileMissing)
			case err != nil:
			case dir && !fi.IsDir():
				err = fmt.Errorf("%s is not the folder commit wrote (%v) (%w)", path, fi.Mode().Type(), ErrLocalFileMissing)
			case !dir && !fi.Mode().IsRegular():
				err = fmt.Errorf("%s is not the regular file commit wrote (%v) (%w)", path, fi.Mode().Type(), ErrLocalFileMissing)
			}
			if err != nil {
				return &LocalVersionError{Dir: w.Dir, Version: p.Record.ID, Err: err, NothingUploaded: true}
			}
		}
	}
	return nil
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

// lock takes DIR/.fdl/lock for a commit or push, so two fdl processes never
// change one working directory's state at once. Errors: *BusyError
// (wrapping filelock.ErrBusy).
func (w *Workdir) lock(what string) (func(), error) {
	unlock, err := filelock.Lock(w.stateDir("lock"))
	if errors.Is(err, filelock.ErrBusy) {
		return nil, &BusyError{Op: what, Dir: w.Dir, Holders: filelock.Holders(w.stateDir("lock")), Err: err}
	}
	if err == nil {
		w.removeStaleWork()
	}
	return unlock, err
}

// staleWork are the prefixes of the work folders the conversions fdl runs
// in a working directory make beside their output (ConvertToSQLite,
// Freeze, Migrate: each removes its own unless it is killed).
var staleWork = []string{".fdl-sqlite-", ".fdl-freeze-", ".fdl-migrate-"}

// removeStaleWork removes, in DIR and DIR/.fdl, the work folders of a
// conversion that was killed (a checkout or a pull into SQLite can leave a
// partial catalog and its pipes or CSV files there). Only the lock's
// holder converts in a working directory, so none of them is in use.
func (w *Workdir) removeStaleWork() {
	for _, dir := range []string{w.Dir, w.stateDir()} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.IsDir() && slices.ContainsFunc(staleWork, func(p string) bool { return strings.HasPrefix(e.Name(), p) }) {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// removeLocalVersions removes everything in DIR/.fdl/versions but keep's
// folder (a stopped commit's .tmp-* folders too, as removeStaleTemps), once the
// state names none of them but keep: after a push every local version is in
// the repository, after ReplaceUnpushed none but the new one is reachable
// (the caller holds the working directory lock).
func (w *Workdir) removeLocalVersions(keep version.ID) {
	ents, _ := os.ReadDir(w.stateDir(LocalVersions))
	for _, e := range ents {
		if e.Name() != string(keep) {
			os.RemoveAll(w.stateDir(LocalVersions, e.Name())) // a symbolic link: the link only
		}
	}
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
