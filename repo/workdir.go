package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	if w.State.CatalogFormat == ducklake.BackendSQLite {
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
		return nil, &NotWorkdirError{Dir: abs}
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

// OpenRepo opens the repository the working directory came from. Opened
// this way, the repository's log, show and new refs default to the working
// directory's branch, and log and show include its unpushed versions.
func (w *Workdir) OpenRepo(ctx context.Context) (*Repo, error) {
	r, err := w.openRepository(ctx)
	if err != nil {
		return nil, err
	}
	r.wd = w
	return r, nil
}

// openRepository opens the repository state.json names; when it is not
// there, the error says the working directory's repository is missing
// (NotRepositoryError.Workdir): it may have moved.
func (w *Workdir) openRepository(ctx context.Context) (*Repo, error) {
	r, err := Open(ctx, w.State.Repository)
	if nr := (*NotRepositoryError)(nil); errors.As(err, &nr) {
		nr.Workdir = w.Dir
	}
	return r, err
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

// lock takes DIR/.fdl/lock for a commit or push, so two fdl processes never
// change one working directory's state at once. Errors: *BusyError
// (wrapping filelock.ErrBusy).
func (w *Workdir) lock(what string) (func(), error) {
	unlock, err := filelock.Lock(w.stateDir("lock"))
	if errors.Is(err, filelock.ErrBusy) {
		return nil, &BusyError{Op: what, Dir: w.Dir, Err: err}
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
