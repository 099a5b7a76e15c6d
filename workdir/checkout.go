package workdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/repo"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/filelock"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Checkout: a new working directory with a writable catalog.

// CheckoutOptions are the inputs of Checkout.
type CheckoutOptions struct {
	Dir  string // the working directory to make; must not exist or be empty
	Rev  string // revision to check out; default: HEAD's branch
	From string // start from this existing DuckLake catalog file instead
	// Branch is the branch push moves; default: the branch Rev names (or
	// walks back along: dev~2, dev@5), else HEAD's. A branch that does not
	// exist yet starts from Rev, else from the head of HEAD's branch.
	Branch string
	// Orphan starts a new empty catalog (or From's) with no parent: a
	// history of its own, for a branch that does not exist yet.
	Orphan bool
	// Format is the DuckLake format of a new catalog made for a repository
	// without versions ("1.0", "0.4" or "1.1"; default "1.0", which DuckDB
	// 1.5.2 and later attach; "1.1" only DuckDB 2.0 does). Another value,
	// or a Format for a checkout that starts from a version or From (whose
	// catalog keeps its format), is refused with ErrInvalidArguments.
	Format string
	// CatalogFormat is the database the working catalog is stored in:
	// ducklake.BackendDuckDB (DIR/ducklake.duckdb, the version's frozen
	// file itself; the default when empty) or ducklake.BackendSQLite
	// (DIR/ducklake.sqlite, converted by ducklake.ConvertToSQLite, which
	// several DuckDB processes can attach at once). Any other value is
	// refused (ErrInvalidArguments). The CLI's default is SQLite
	// (docs/cli.md).
	CatalogFormat ducklake.Backend
	// Migrate, with From, migrates the imported lake to
	// ducklake.CurrentFormat (ducklake.Migrate) when it is older, so that
	// its versions are readable by the DuckDB releases that read only that
	// format. A lake already in that format is checked out as it is.
	// Without From it is refused (MigrateNeedsFileError).
	Migrate bool
}

// Origin says where a working catalog came from.
type Origin string

// The origins of a working catalog.
const (
	OriginVersion Origin = "version" // a version fetched from the store
	OriginFile    Origin = "file"    // an existing catalog file (From)
	OriginNew     Origin = "new"     // an empty catalog made by fdl
)

// CheckoutResult says what Checkout made.
type CheckoutResult struct {
	Dir      string     `json:"dir"`
	Catalog  string     `json:"catalog_path"`
	Branch   string     `json:"branch"`
	Base     version.ID `json:"base,omitempty"`
	Seq      int64      `json:"seq,omitempty"`
	Origin   Origin     `json:"origin"`
	DataPath string     `json:"data_path"`
	// Attach is the DuckDB statement that attaches the working catalog.
	Attach        string           `json:"attach"`
	CatalogFormat ducklake.Backend `json:"catalog_format"`
	// ResolvedDataPath is the imported lake's own data_path when it was
	// relative ("./bla/"): the working catalog's data_path is it resolved
	// against the folder fdl ran in, as DuckDB run there reads it
	// (DataPath). "" otherwise.
	ResolvedDataPath string `json:"resolved_data_path,omitempty"`
	// Tracking compares the base with the head of the branch: anything
	// but up-to-date, ahead or no-branch means a version committed here
	// will not be a fast-forward of the branch (nil when the branch could
	// not be read).
	Tracking *repo.Tracking `json:"tracking"`
	// Format is the working catalog's DuckLake format.
	Format string `json:"ducklake_format"`
	// Readers says which DuckDB releases read the working catalog as it is
	// (meta.ReadersOf its format and storage version; a SQLite one's is that
	// of the DuckDB file it was converted from, which Freeze writes again).
	Readers meta.Readers `json:"readers"`
	// NeedsMigration is true when Format is older than
	// ducklake.CurrentFormat: DuckDB 1.5.2 and newer refuse it until it is
	// migrated (CheckoutOptions.Migrate at import, MigrateBranch for a
	// branch).
	NeedsMigration bool `json:"needs_migration"`
	// Migration says what CheckoutOptions.Migrate did (nil when nothing).
	Migration *ducklake.MigrateInfo `json:"migration,omitempty"`
}

// Checkout makes a working directory (docs/cli.md): DIR/ducklake.duckdb and
// DIR/.fdl/. The catalog is a checked copy of a version (sha256 verified
// before anything is written into DIR), a frozen copy of an existing catalog
// file (From), or, for a branch with no version yet, a new empty catalog
// whose data_path is the repository's data/ folder. On any error DIR is left
// as it was (removed if Checkout made it).
func Checkout(ctx context.Context, r *repo.Repo, o CheckoutOptions) (res *CheckoutResult, err error) {
	dir, backend, err := checkoutTarget(r, o)
	if err != nil {
		return nil, err
	}
	made, release, err := claimCheckout(dir)
	if err != nil {
		// DIR is not empty, or another checkout is writing into it:
		// nothing there is ours.
		return nil, err
	}
	defer func() {
		if err != nil {
			cleanDir(dir, made)
		}
		release()
	}()
	res = &CheckoutResult{Dir: dir, Catalog: filepath.Join(dir, CatalogName), CatalogFormat: backend}
	// A SQLite working catalog is made as the DuckDB file first (in .fdl/),
	// then converted.
	duckPath := res.Catalog
	if backend == ducklake.BackendSQLite {
		res.Catalog = filepath.Join(dir, SQLiteCatalogName)
		duckPath = filepath.Join(dir, StateDir, "checkout.duckdb")
	}
	base, branch, err := checkoutBase(ctx, r, o)
	if err != nil {
		return nil, err
	}
	if o.Format != "" && o.From == "" && base != nil {
		return nil, fmt.Errorf("DuckLake format %s: the format is chosen only for a new empty catalog; this checkout starts from version %s (seq %d) of branch %s, whose catalog keeps its own format (DuckLake %s): leave the format out, or start a new history (an orphan checkout): %w", o.Format, base.ID, base.Seq, branch.Short(), base.DuckLake.Format, repo.ErrInvalidArguments)
	}
	if err := os.MkdirAll(filepath.Join(dir, StateDir, LocalVersions), 0o755); err != nil {
		return nil, err
	}
	if res.Origin, res.Migration, err = writeWorkingCatalog(ctx, r, o, base, duckPath); err != nil {
		return nil, err
	}
	step(r, "checkout:catalog")
	// New lakes and imports start with DuckLake's delete_older_than set so
	// that CHECKPOINT and cleanup calls without older_than leave deleting
	// files to gc (ducklake.DeleteOlderThan, docs/spec.md §9); versions
	// made from them carry it.
	if res.Origin != OriginVersion {
		if _, err := ducklake.SetOptionIfAbsent(ctx, duckPath, "delete_older_than", ducklake.DeleteOlderThan); err != nil {
			return nil, err
		}
	}
	if res.Origin == OriginFile {
		if res.ResolvedDataPath, err = resolveRelativeDataPath(ctx, duckPath); err != nil {
			return nil, err
		}
	}
	var known *version.Record // a version's record holds its catalog's data path, format and storage (checked by its sha256)
	if res.Origin == OriginVersion {
		known = base
	}
	if res.DataPath, res.Format, res.Readers, err = finishWorkingCatalog(ctx, duckPath, res.Catalog, known); err != nil {
		return nil, err
	}
	keepCheckedOut(dir, duckPath, res.Catalog, known)
	step(r, "checkout:converted")
	res.NeedsMigration = ducklake.NeedsMigration(res.Format)
	if err := saveCheckoutState(ctx, r, res, backend, branch, base); err != nil {
		return nil, err
	}
	res.Branch = branch.Short()
	res.Attach = repo.WithReaderNote(r.AttachStatement(res.Catalog, res.DataPath, "lake", false), res.Format)
	var baseID version.ID
	if base != nil {
		baseID = base.ID
	}
	// Best effort: the checkout is made; tracking only informs (nil when
	// the branch cannot be read).
	res.Tracking, _ = r.Tracking(ctx, res.Branch, baseID, nil)
	return res, nil
}

// saveCheckoutState writes the new working directory's state (.fdl/):
// the repository's URL (a folder's made absolute), the branch, the base
// version and its dataset, the catalog's backend and the format a
// migration started from; the base's id and seq go into res too. The
// step checkout:state is reached before the state file is written.
func saveCheckoutState(ctx context.Context, r *repo.Repo, res *CheckoutResult, backend ducklake.Backend, branch refs.Name, base *version.Record) error {
	url := r.URL()
	if !strings.Contains(url, "://") {
		var err error
		if url, err = filepath.Abs(url); err != nil {
			return err
		}
	}
	w := &Workdir{Dir: res.Dir, State: State{Format: StateFormat, Repository: url, Branch: branch.Short()}, opts: r.Options()}
	if backend == ducklake.BackendSQLite {
		w.State.CatalogFormat = backend
	}
	if res.Migration != nil {
		w.State.MigratedFrom = res.Migration.From
	}
	if base != nil {
		w.State.Base, w.State.Upstream = base.ID, base.ID
		res.Base, res.Seq = base.ID, base.Seq
		d, err := r.Dataset(ctx, base.ID)
		if err != nil {
			return err
		}
		b, err := d.Marshal()
		if err != nil {
			return err
		}
		if err := w.saveBaseDataset(b); err != nil {
			return err
		}
	}
	step(r, "checkout:state")
	return w.save(base)
}

// step calls r's step hook (tests kill a checkout at a step).
func step(r *repo.Repo, name string) {
	if s := r.Options().Step; s != nil {
		s(name)
	}
}

// resolveRelativeDataPath gives the imported catalog at path an absolute
// data_path when its own is relative: DuckDB resolves a relative data_path
// against each reader's working directory, so a version published with one
// reads its files only from the folder it was written in, and a push
// refuses it (docs/spec.md §8). The import resolves it against the folder
// fdl runs in, as DuckDB run there would, and returns what it was ("" when
// it was not relative).
func resolveRelativeDataPath(ctx context.Context, path string) (string, error) {
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return "", err
	}
	dp := c.DataPath()
	c.Close()
	if dp == "" || strings.Contains(dp, ":") || filepath.IsAbs(dp) || strings.HasPrefix(dp, "/") {
		return "", nil
	}
	abs, err := filepath.Abs(dp)
	if err != nil {
		return "", err
	}
	abs = filepath.ToSlash(abs)
	if strings.HasSuffix(dp, "/") || strings.HasSuffix(dp, `\`) {
		abs += "/"
	}
	if _, err := ducklake.SetOption(ctx, path, "data_path", abs); err != nil {
		return "", err
	}
	return dp, nil
}

// creatableFormats are the DuckLake formats a new empty catalog is made in
// (lakewriter.Create).
var creatableFormats = []string{lakewriter.Format10, lakewriter.Format04, lakewriter.Format11}

// checkoutTarget checks a checkout's directory (absolute, outside the
// repository) and catalog format. Errors: ErrInvalidArguments.
func checkoutTarget(r *repo.Repo, o CheckoutOptions) (string, ducklake.Backend, error) {
	if o.Dir == "" {
		return "", "", fmt.Errorf("checkout needs a directory: %w", repo.ErrInvalidArguments)
	}
	if o.Migrate && o.From == "" {
		return "", "", repo.MigrateNeedsFileError{}
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return "", "", err
	}
	backend := ducklake.BackendDuckDB
	if o.CatalogFormat != "" {
		if backend, err = ducklake.ParseBackend(string(o.CatalogFormat)); err != nil {
			return "", "", fmt.Errorf("%v: %w", err, repo.ErrInvalidArguments)
		}
	}
	if o.Format != "" && !slices.Contains(creatableFormats, o.Format) {
		return "", "", fmt.Errorf("DuckLake format %q: fdl creates new catalogs in DuckLake %s (DuckDB 1.5.2 and later), %s (DuckDB 1.5.0 and 1.5.1) or %s (DuckDB 2.0); choose one of them: %w", o.Format, lakewriter.Format10, lakewriter.Format04, lakewriter.Format11, repo.ErrInvalidArguments)
	}
	if o.Format != "" && o.From != "" {
		return "", "", fmt.Errorf("DuckLake format %s: the format is chosen only for a new empty catalog; a catalog copied from %s keeps its own format (migrated to %s when asked to): leave the format out: %w", o.Format, o.From, ducklake.CurrentFormat, repo.ErrInvalidArguments)
	}
	if root := r.Store().Location(""); filepath.IsAbs(root) && (dir == root || strings.HasPrefix(dir, root+string(filepath.Separator))) {
		return "", "", fmt.Errorf("checkout into %s: it is inside the repository %s; choose a directory outside it: %w", dir, root, repo.ErrInvalidArguments)
	}
	return dir, backend, nil
}

// checkoutBase returns the version a checkout starts from (nil for a new,
// empty history) and the branch its pushes move. The branch is o.Branch,
// else the branch Rev names or walks back along (dev, dev~2, dev@5), else
// HEAD's. The version is Rev's; without Rev, the branch's head, or, for a
// branch that does not exist yet, the head of HEAD's branch (a new branch
// starts where HEAD's is, as git checkout -b does); none with o.Orphan. A
// version out of retention is refused (*RetiredError); an orphan for a
// branch that exists is refused (*OrphanExistsError).
func checkoutBase(ctx context.Context, r *repo.Repo, o CheckoutOptions) (*version.Record, refs.Name, error) {
	if o.Orphan && o.Rev != "" {
		return nil, "", fmt.Errorf("an orphan checkout starts a new history: it takes no revision: %w", repo.ErrInvalidArguments)
	}
	branch, err := checkoutBranch(ctx, r, o)
	if err != nil {
		return nil, "", err
	}
	var base *version.Record
	switch {
	case o.Rev != "":
		if base, _, err = r.Refs().ResolveRecord(ctx, o.Rev); err != nil {
			return nil, "", err
		}
	default:
		ref, err := r.Refs().Read(ctx, branch)
		switch {
		case err == nil && o.Orphan:
			return nil, "", &repo.OrphanExistsError{Branch: branch, Head: ref.ID}
		case err == nil:
			if base, err = r.Record(ctx, ref.ID); err != nil {
				return nil, "", refs.DanglingRead(branch, ref.ID, err)
			}
		case !errors.Is(err, refs.ErrNotFound):
			return nil, "", err
		case o.Orphan:
		default:
			if base, err = headOfHEAD(ctx, r, branch); err != nil {
				return nil, "", err
			}
		}
	}
	if base != nil {
		if err := r.RefuseRetired(ctx, base); err != nil {
			return nil, "", err
		}
	}
	return base, branch, nil
}

// checkoutBranch is the branch a checkout's pushes move: o.Branch, else
// the branch o.Rev names or walks back along, else HEAD's.
func checkoutBranch(ctx context.Context, r *repo.Repo, o CheckoutOptions) (refs.Name, error) {
	if o.Branch != "" {
		return refs.Branch(o.Branch)
	}
	if name := refs.RevName(o.Rev); name != "" && name != "HEAD" {
		if n, err := refs.Branch(strings.TrimPrefix(name, refs.HeadsPrefix)); err == nil {
			if _, err := r.Refs().Read(ctx, n); err == nil {
				return n, nil
			}
		}
	}
	return r.Refs().Head(ctx)
}

// headOfHEAD is the record of the head of HEAD's branch, where a new
// branch starts; nil when HEAD's branch is branch itself or has no
// version yet.
func headOfHEAD(ctx context.Context, r *repo.Repo, branch refs.Name) (*version.Record, error) {
	head, err := r.Refs().Head(ctx)
	if err != nil || head == branch {
		return nil, err
	}
	ref, err := r.Refs().Read(ctx, head)
	if errors.Is(err, refs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := r.Record(ctx, ref.ID)
	if err != nil {
		return nil, refs.DanglingRead(head, ref.ID, err)
	}
	return rec, nil
}

// writeWorkingCatalog writes the DuckDB file a working catalog starts as,
// at path: a frozen copy of o.From (migrated with o.Migrate when it is
// older than ducklake.CurrentFormat: then it also returns what the
// migration did), the checked catalog of base, or a new empty catalog of
// o.Format whose data_path is the repository's data/.
func writeWorkingCatalog(ctx context.Context, r *repo.Repo, o CheckoutOptions, base *version.Record, path string) (Origin, *ducklake.MigrateInfo, error) {
	switch {
	case o.From != "" && o.Migrate:
		info, err := ducklake.Migrate(ctx, o.From, path)
		if errors.Is(err, ducklake.ErrCurrentFormat) {
			_, err = ducklake.Freeze(ctx, o.From, path)
			return OriginFile, nil, err
		}
		if err != nil {
			return OriginFile, nil, err
		}
		return OriginFile, &info, nil
	case o.From != "":
		_, err := ducklake.Freeze(ctx, o.From, path)
		return OriginFile, nil, err
	case base != nil:
		return OriginVersion, nil, r.FetchCatalog(ctx, base, path)
	}
	format := o.Format
	if format == "" {
		format = "1.0"
	}
	return OriginNew, nil, lakewriter.Create(ctx, path, lakewriter.CreateOptions{Format: format, DataPath: r.DataLocation()})
}

// finishWorkingCatalog returns the data path, DuckLake format and readers
// of the DuckDB file at duckPath — from known, when not nil (the record of
// the version the file is, checked by its sha256), else read from the file
// (opening a SQLite copy would read all of it into memory) — and, when the
// working catalog is to be a SQLite file at catalog, converts it there and
// leaves the DuckDB file for the caller (kept or removed).
func finishWorkingCatalog(ctx context.Context, duckPath, catalog string, known *version.Record) (dataPath, format string, rd meta.Readers, err error) {
	if known != nil {
		dataPath, format = known.DuckLake.DataPath, known.DuckLake.Format
		rd = meta.ReadersOf(format, known.Catalog.Storage)
	} else {
		cat, err := ducklake.Open(ctx, duckPath)
		if err != nil {
			return "", "", rd, err
		}
		dataPath, format = cat.DataPath(), cat.Format()
		cat.Close()
		st, err := ducklake.ReadStorage(duckPath)
		if err != nil {
			return "", "", rd, err
		}
		rd = meta.ReadersOf(format, st)
	}
	if duckPath != catalog {
		if err := ducklake.ConvertToSQLite(ctx, duckPath, catalog); err != nil {
			return "", "", rd, err
		}
	}
	return dataPath, format, rd, nil
}

// keepCheckedOut keeps the DuckDB file duckPath of a SQLite working
// catalog (catalog) in dir as its base, when it is the checked catalog of
// version known (for the first commit, ducklake.FreezeOnto), and removes
// it otherwise; nothing when duckPath is the working catalog itself.
func keepCheckedOut(dir, duckPath, catalog string, known *version.Record) {
	switch {
	case duckPath == catalog:
	case known != nil:
		(&Workdir{Dir: dir}).keepBase(duckPath, known.ID)
	default:
		os.Remove(duckPath)
	}
}

// makeDir makes dir (its parent folders too) or checks it is a folder;
// made reports whether this call made it. Mkdir, not MkdirAll: of two
// checkouts making DIR at once, one made it (and removes it if it
// fails); the other did not.
func makeDir(dir string) (made bool, err error) {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return false, fmt.Errorf("checkout into %s: %w: it is a file; choose a new or empty directory", dir, ErrDirNotEmpty)
	case err == nil:
		return false, nil
	case !errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("checkout into %s: %w", dir, err)
	}
	if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return false, fmt.Errorf("checkout into %s: it is a symbolic link to %s, which does not exist: %w; remove the link, or make %s an empty directory", dir, target, repo.ErrInvalidArguments, target)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, err
	}
	err = os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// checkoutLock is the file in DIR/.fdl a checkout holds locked while it
// writes DIR (filelock: the kernel lets go of it when the process ends,
// however it ends). Whoever holds it owns DIR until state.json is written:
// only the holder clears what a stopped checkout left or removes what it
// wrote itself, so another checkout into DIR neither takes its unfinished
// files for an interrupted checkout's nor removes them.
const checkoutLock = "checkout.lock"

// claimCheckout claims DIR for a checkout (docs/spec.md §12): it makes DIR
// when it does not exist (made), then DIR/.fdl when it does not exist, and
// locks DIR/.fdl/checkout.lock without waiting. Holding the lock, it
// checks that DIR holds nothing but what a stopped checkout leaves
// (interrupted: .fdl without state.json, the working catalog's files, a
// conversion's work folders) and clears that. release unlocks and removes
// the lock file. Errors: ErrDirNotEmpty when DIR holds anything else or
// another checkout holds the lock (nothing is removed then).
func claimCheckout(dir string) (made bool, release func(), err error) {
	for attempt := 0; ; attempt++ {
		m, rel, retry, err := claimOnce(dir)
		made = made || m
		if !retry || attempt == 20 {
			if err != nil && made && rel == nil {
				os.Remove(dir) // ours, and empty unless another checkout claimed it
			}
			return made, rel, err
		}
	}
}

// claimOnce is one attempt of claimCheckout; retry says that DIR changed
// under it (another checkout removed what it had just made) and it should
// be tried again.
func claimOnce(dir string) (made bool, release func(), retry bool, err error) {
	if made, err = makeDir(dir); err != nil {
		return made, nil, false, err
	}
	state := filepath.Join(dir, StateDir)
	madeState := os.Mkdir(state, 0o755) == nil
	path := filepath.Join(state, checkoutLock)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR, 0o644)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return made, nil, true, nil // DIR or .fdl went meanwhile
	}
	if err != nil {
		if madeState {
			os.Remove(state)
		}
		return made, nil, false, fmt.Errorf("checkout into %s: %w (it holds %s)", dir, ErrDirNotEmpty, StateDir)
	}
	if locked, lerr := filelock.TryLock(f); lerr == nil && !locked {
		f.Close()
		return made, nil, false, fmt.Errorf("checkout into %s: %w (another checkout is writing into it): wait for it, or choose a new or empty directory", dir, ErrDirNotEmpty)
	}
	// The lock is on the file opened: it must still be the one at path.
	if a, aerr := f.Stat(); aerr != nil {
		f.Close()
		return made, nil, true, nil
	} else if b, berr := os.Stat(path); berr != nil || !os.SameFile(a, b) {
		f.Close()
		return made, nil, true, nil
	}
	release = func() {
		os.Remove(path)
		filelock.Unlock(f)
		f.Close()
	}
	if held := heldEntry(dir); held != "" {
		// Not an interrupted checkout: leave everything but what this
		// call made.
		if created {
			os.Remove(path)
		}
		if madeState {
			os.Remove(state)
		}
		filelock.Unlock(f)
		f.Close()
		return made, nil, false, fmt.Errorf("checkout into %s: %w (it holds %s): choose a new or empty directory", dir, ErrDirNotEmpty, held)
	}
	// What a stopped checkout left: cleared under the lock.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != StateDir {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	ents, _ = os.ReadDir(state)
	for _, e := range ents {
		if e.Name() != checkoutLock {
			os.RemoveAll(filepath.Join(state, e.Name()))
		}
	}
	return made, release, false, nil
}

// heldEntry names an entry of dir that is not what a stopped checkout
// leaves ("" when there is none): .fdl with state.json in it (a working
// directory), or anything but .fdl, the working catalog's files and a
// conversion's work folders (staleWork).
func heldEntry(dir string) string {
	if _, err := os.Lstat(filepath.Join(dir, StateDir, StateFile)); !errors.Is(err, os.ErrNotExist) {
		return StateDir
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return dir
	}
	for _, e := range ents {
		stale := e.IsDir() && slices.ContainsFunc(staleWork, func(p string) bool { return strings.HasPrefix(e.Name(), p) })
		if e.Name() != StateDir && !slices.Contains(checkoutLeaves, e.Name()) && !stale {
			return e.Name()
		}
	}
	return ""
}

// checkoutLeaves are the names a checkout writes in its directory, besides
// StateDir: the working catalog in either form and the files DuckDB and
// SQLite keep beside it.
var checkoutLeaves = []string{CatalogName, CatalogName + ".wal", SQLiteCatalogName, SQLiteCatalogName + "-wal", SQLiteCatalogName + "-shm", SQLiteCatalogName + "-journal"}

// interruptedCheckout reports whether dir holds only what a checkout that
// was stopped before its end leaves (heldEntry): a .fdl folder without
// state.json (the last file a checkout writes) whose checkoutLock no
// process holds, the working catalog's files and the work folders of its
// conversion (staleWork: a kill while a SQLite catalog is written leaves
// one). A checkout into dir clears it (claimCheckout).
func interruptedCheckout(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, StateDir)); err != nil || heldEntry(dir) != "" {
		return false
	}
	if lock := filepath.Join(dir, StateDir, checkoutLock); fileExists(lock) {
		unlock, err := filelock.Lock(lock)
		if err != nil {
			return false // a checkout is writing into dir now
		}
		unlock()
	}
	return true
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
