// Package repo is a repository over a store: fdl.json, HEAD, refs and
// versions (docs/spec.md §1). It is the library the repository commands
// call, one method per command, each returning a result value: Init,
// History (log), Show, Attach, Diff, ListRefs, CreateTag, CreateBranch,
// DeleteBranch, MoveBranch, RefLogOf, requests, MigrateBranch, Verify and
// Retention; and Publish, the push protocol a working directory's push
// (package workdir) runs. gc is a package of its own (package gc) over
// what repo reads and writes for it: the retention input
// (RetentionInput), catalogs' data files, the floor's compare-and-swap,
// markers, and the one deletion path (DeleteGarbage).
//
// It never holds a working directory: a command run in one gets what it
// needs from it as an input value (Local: branch, upstream, base,
// unpushed versions, working catalog).
//
// Refs move only through the ref manager (package refs); repo adds its own
// checks (a version out of retention gets no new ref) and the uploads of a
// push. Files are named after their one job: push.go, log.go, show.go,
// diff.go, refs.go, requests.go, migrate.go, verify*.go, retention.go
// (policy, floor, markers), retention_input.go, datafiles.go, garbage.go
// and intents.go (what gc reads and writes through). Errors are typed
// (errors.go) and never name a command.
//
// The package never prints and never imports cobra or lipgloss; long
// operations report progress through Options.Progress.
package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// ConfigKey is the store key of the repository's settings file.
const ConfigKey = "fdl.json"

// ConfigFormat is the repository format number this package writes and the
// highest it reads.
const ConfigFormat = 1

// WorkdirStateFile is where a working directory keeps its state, relative
// to its folder (package workdir's StateDir/StateFile): Open names a
// folder holding one as a working directory, not a repository.
const WorkdirStateFile = ".fdl/state.json"

// DataPrefix is the store key prefix of the Parquet files written by DuckDB.
const DataPrefix = "data/"

// VersionsPrefix is the store key prefix of versions.
const VersionsPrefix = "versions/"

// Config is fdl.json (docs/spec.md §fdl.json).
type Config struct {
	Format int `json:"format"`
	// Name is a human-readable name for the repository (defaults to the
	// last element of its location).
	Name string `json:"name"`
	// DataPath is the location of the repository's data/ folder when it was
	// initialised, with a trailing slash, as DuckDB's DATA_PATH takes it.
	// Lakes born in the repository store it as their data_path.
	DataPath string `json:"data_path"`
	// DefaultBranch is the branch HEAD named at init.
	DefaultBranch string    `json:"default_branch"`
	CreatedAt     time.Time `json:"created_at"`
	// ID is the repository's id, which tag signatures cover so that one
	// cannot be replayed into another repository (docs/spec.md §2, §20):
	// a UUID written at init; a repository made before ids gets one when
	// a tag is first signed (RepositoryID).
	ID string `json:"id,omitempty"`
}

// EventOp is what a progress event is about.
type EventOp string

// The operations that report progress.
const (
	OpUpload   EventOp = "upload"
	OpDownload EventOp = "download"
	OpVerify   EventOp = "verify" // a catalog read to check its sha256
)

// Event reports progress of a long operation.
type Event struct {
	Op    EventOp
	Name  string // what is moving, e.g. "versions/<id>/ducklake.duckdb"
	Done  int64  // bytes so far
	Total int64  // bytes in all, or -1 when unknown
}

// Options tune a Repo. The zero value is ready to use.
type Options struct {
	// Progress, if set, receives progress events (from the calling goroutine).
	Progress func(Event)
	// Step, if set, is called with the name of each step of commit and push
	// just before it runs ("push:catalog", …); tests use it to inject crashes.
	Step func(name string)
	// Debug, if set, receives debug lines (--verbose): how a step was
	// carried out, for example whether a commit converted a whole SQLite
	// catalog and why.
	Debug func(line string)
	// AllowLocalData lets push publish, and verify note rather than report,
	// a version whose data files are read by a local path while the
	// repository is not a folder of this machine (an object store): for
	// setups whose readers share the writer's disk, and for tests whose
	// writers cannot write to the store. Off, such a push is refused
	// (*LocalDataError) and verify reports data-local-path (docs/spec.md §8).
	AllowLocalData bool
}

// Repo is an open repository.
type Repo struct {
	st     store.Store
	url    string // as given: working directories record it
	where  string // url with its credentials hidden (store.RedactURL): every message names the repository by it
	cfg    Config
	refs   *refs.Manager // the only code that moves refs
	opts   Options
	mu     sync.Mutex                   // guards record and listed
	record map[version.ID]history.Entry // records read (version.json), by id
	listed []*listing                   // listings of versions/ made so far
	names  *listing                     // a folder store's version folder names (listNames)
	// namesMu is held while the names are read.
	namesMu sync.Mutex
	hist    *history.Reader // first-parent walks (history packs)
	actor   string          // who moves refs (refs.go); "" until Actor is called
}

// newRepo returns the Repo of an open store and its settings, with its ref
// manager reading records through it.
func newRepo(st store.Store, url string, cfg Config, opts Options) *Repo {
	r := &Repo{st: st, url: url, where: store.RedactURL(url), cfg: cfg, opts: opts, record: map[version.ID]history.Entry{}}
	r.refs = refs.New(st, r, refs.Options{Where: r.where, Actor: r.Actor, Step: r.step})
	r.hist = history.NewReader(st, r)
	return r
}

// Refs returns the repository's ref manager: the only code that moves a
// ref (package refs); callers pass it their checks.
func (r *Repo) Refs() *refs.Manager { return r.refs }

// HistoryReader returns the repository's reader of history packs
// (docs/spec.md §18), which Walk and Log read through and whose cache
// lives as long as the Repo: gc tells it which packs are absent and
// writes the missing ones with its Writer (history.Reader.Writer).
func (r *Repo) HistoryReader() *history.Reader { return r.hist }

// Store returns the repository's store.
func (r *Repo) Store() store.Store { return r.st }

// URL returns the URL the repository was opened with, as given (it may
// hold credentials: print Where instead).
func (r *Repo) URL() string { return r.url }

// Where returns the repository's URL with any credentials it holds hidden
// (store.RedactURL): how messages and output name the repository.
func (r *Repo) Where() string { return r.where }

// ReadOnly reports whether the repository's store is never written (an
// http(s) URL, store.ReadOnly): every write to it fails with
// store.ErrReadOnly.
func (r *Repo) ReadOnly() bool { return store.IsReadOnly(r.st) }

// Config returns fdl.json.
func (r *Repo) Config() Config { return r.cfg }

// Folder returns the repository's store when its objects are files of
// this machine (store.LocalFiles; the one place that asks), and false on
// an object store or a web server: catalogs are then read where they lie,
// and gc guards its deletions against symbolic and hard links (package
// gc, docs/spec.md §10.7).
func (r *Repo) Folder() (store.LocalFiles, bool) {
	l, ok := r.st.(store.LocalFiles)
	return l, ok
}

// dataOnDisk reports whether the repository's data folder, as reached now,
// is a path of this machine's file system (a folder store, however
// wrapped): then a data file read by a local path is one its readers
// reach, else (an object store, a web server) no reader of the repository
// does.
func (r *Repo) dataOnDisk() bool {
	loc := r.DataLocation()
	return strings.HasPrefix(loc, "/") || filepath.IsAbs(loc)
}

// Options returns the options the repository was opened with (they are
// given once, at Open, Init or OpenStore, and never replaced).
func (r *Repo) Options() Options { return r.opts }

func (r *Repo) step(name string) {
	if r.opts.Step != nil {
		r.opts.Step(name)
	}
}

// Close releases the store.
func (r *Repo) Close() error { return r.st.Close() }

// InitOptions are the settings of a new repository.
type InitOptions struct {
	Name          string // default: last element of the location
	DefaultBranch string // default: "main"
	// Options are the new repository's options (Open's).
	Options Options
}

// Init makes an empty repository at url: fdl.json (create-only) and HEAD.
// It refuses a location that already holds any object (ErrNotEmpty, naming
// what it found), and one that lies inside another repository or holds one
// (*NestedError: repositories never nest). Errors from the store are
// wrapped with the URL.
func Init(ctx context.Context, url string, o InitOptions) (*Repo, error) {
	st, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	where := store.RedactURL(url)
	if err := checkInitPlace(ctx, st, url, nil); err != nil {
		st.Close()
		return nil, err
	}
	if o.DefaultBranch == "" {
		o.DefaultBranch = "main"
	}
	branch, err := refs.Branch(o.DefaultBranch)
	if err != nil {
		st.Close()
		return nil, err
	}
	name := o.Name
	if name == "" {
		loc := strings.TrimRight(st.Location(""), "/\\")
		name = loc[strings.LastIndexAny(loc, "/\\")+1:]
	}
	rid, err := version.NewID()
	if err != nil {
		st.Close()
		return nil, err
	}
	cfg := Config{Format: ConfigFormat, Name: name, DataPath: dataLocation(st), DefaultBranch: o.DefaultBranch, CreatedAt: time.Now().UTC().Truncate(time.Second), ID: string(rid)}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if _, err := st.Swap(ctx, refs.HeadKey, store.NoToken, refs.HeadContent(branch)); err != nil {
		st.Close()
		return nil, fmt.Errorf("init %s: write HEAD: %w", where, err)
	}
	// fdl.json last: its presence marks the repository complete.
	if err := st.Create(ctx, ConfigKey, strings.NewReader(string(b)+"\n")); err != nil {
		st.Close()
		return nil, fmt.Errorf("init %s: write %s: %w", where, ConfigKey, err)
	}
	return newRepo(st, url, cfg, o.Options), nil
}

// InitCopy makes, at url, another place of the repository whose fdl.json
// is settings (its exact bytes): HEAD naming head, then fdl.json,
// create-only, with Init's checks of the place (empty, not nested, no
// '?' in an object-store location). A place that holds only a HEAD with
// that content (a first mirror stopped between its two writes) is taken
// as it is. The copy keeps the source's data_path, so its readers are
// given lines that read its own data/ (DATA_PATH with
// OVERRIDE_DATA_PATH, docs/spec.md §8), as for a moved repository.
// Errors: Init's; settings that do not parse or have a newer format.
func InitCopy(ctx context.Context, url string, settings []byte, head refs.Name, opts Options) (*Repo, error) {
	where := store.RedactURL(url)
	var cfg Config
	if err := json.Unmarshal(settings, &cfg); err != nil {
		return nil, fmt.Errorf("init %s: the source's %s does not parse (%v): %w", where, ConfigKey, err, ErrNotRepository)
	}
	if cfg.Format < 1 || cfg.Format > ConfigFormat {
		return nil, fmt.Errorf("init %s: repository format %d is newer than this fdl reads (%d): upgrade fdl", where, cfg.Format, ConfigFormat)
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	content := refs.HeadContent(head)
	if err := checkInitPlace(ctx, st, url, content); err != nil {
		st.Close()
		return nil, err
	}
	if _, err := st.Swap(ctx, refs.HeadKey, store.NoToken, content); err != nil {
		b, _, rerr := store.ReadAll(ctx, st, refs.HeadKey)
		if rerr != nil || string(b) != string(content) {
			st.Close()
			return nil, fmt.Errorf("init %s: write HEAD: %w", where, err)
		}
	}
	if err := st.Create(ctx, ConfigKey, strings.NewReader(string(settings))); err != nil {
		st.Close()
		return nil, fmt.Errorf("init %s: write %s: %w", where, ConfigKey, err)
	}
	return newRepo(st, url, cfg, opts), nil
}

// checkInitPlace refuses a place where no repository may be made: an
// object-store location holding '?', a missing bucket, a place that
// already holds a repository or any object (except a HEAD holding
// exactly head, when head is not nil) or any file a listing of objects
// leaves out (store.ForeignFinder: a consumer's fdl.lock), or one
// inside or around another repository (*NestedError).
func checkInitPlace(ctx context.Context, st store.Store, url string, head []byte) error {
	where := store.RedactURL(url)
	if loc := st.Location(""); strings.Contains(loc, "://") && strings.Contains(loc, "?") {
		// DuckDB reads '?' in an object-store path as the start of query
		// parameters ("Invalid query parameters found"): every line fdl
		// printed for such a repository would fail (docs/spec.md §8).
		return fmt.Errorf("init %s: its location %s holds '?', which DuckDB reads as the start of query parameters in an object-store path, so no DuckDB reader or writer could reach the repository's files; choose a prefix without '?': %w", where, loc, ErrInvalidArguments)
	}
	if rc, ok := st.(store.RootChecker); ok {
		if err := rc.CheckRoot(ctx); err != nil {
			return fmt.Errorf("init %s: %w", where, err)
		}
	}
	if _, err := st.Stat(ctx, ConfigKey); err == nil {
		return fmt.Errorf("init %s: it is already an fdl repository: %w", where, ErrNotEmpty)
	}
	found, inner := "", ""
	n := 0
	err := st.List(ctx, "", func(oi store.ObjectInfo) error {
		if head != nil && oi.Key == refs.HeadKey {
			if b, _, err := store.ReadAll(ctx, st, refs.HeadKey); err == nil && string(b) == string(head) {
				return nil
			}
		}
		if found == "" {
			found = oi.Key
		}
		if path.Base(oi.Key) == ConfigKey {
			inner = st.Location(strings.TrimSuffix(oi.Key, "/"+ConfigKey))
			return errStop
		}
		if n++; n >= 10000 {
			return errStop // enough to refuse; a repository deeper goes unnamed
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("init %s: %w", where, err)
	}
	if inner != "" {
		return &NestedError{Location: where, Other: inner, Inside: false}
	}
	if ff, ok := st.(store.ForeignFinder); ok && found == "" {
		// Files that are not objects (a consumer's fdl.lock) hold a
		// folder as much as objects do.
		if found, err = ff.FirstForeign(ctx); err != nil {
			return fmt.Errorf("init %s: %w", where, err)
		}
	}
	if found != "" {
		return fmt.Errorf("init %s: it already holds files (%s): %w; choose an empty folder or a new prefix", where, found, ErrNotEmpty)
	}
	if outer, err := ancestorRepository(ctx, url); err != nil {
		return fmt.Errorf("init %s: %w", where, err)
	} else if outer != "" {
		return &NestedError{Location: where, Other: outer, Inside: true}
	}
	return nil
}

var errStop = errors.New("stop")

// dataLocation is the DuckDB DATA_PATH of the store's data/ folder, with a
// trailing separator.
func dataLocation(st store.Store) string {
	loc := st.Location(strings.TrimSuffix(DataPrefix, "/"))
	if strings.HasSuffix(loc, "/") {
		return loc
	}
	return loc + "/"
}

// DataLocation returns where the repository's data/ folder is reached through
// the URL it was opened with (trailing slash included).
func (r *Repo) DataLocation() string { return dataLocation(r.st) }

// Open opens the repository at url and reads fdl.json. Errors:
// ErrNotRepository (naming the URL and saying how to make one), an error
// wrapping store.ErrNoRoot when the bucket or container itself is missing,
// a newer format than this fdl reads, or the store's error.
//
// The options (progress, the step hook, AllowLocalData) are given once,
// here: at most one Options value.
func Open(ctx context.Context, url string, opts ...Options) (*Repo, error) {
	st, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return OpenStore(ctx, st, url, opts...)
}

// OpenStore opens the repository held by an already open store (tests wrap
// stores to inject faults); url is how the repository is named in messages.
// The Repo owns st and closes it. Errors as Open.
func OpenStore(ctx context.Context, st store.Store, url string, opts ...Options) (*Repo, error) {
	where := store.RedactURL(url)
	b, _, err := store.ReadAll(ctx, st, ConfigKey)
	if errors.Is(err, store.ErrNotExist) {
		defer st.Close()
		// A missing bucket is not a missing repository: say which.
		if rc, ok := st.(store.RootChecker); ok {
			if err := rc.CheckRoot(ctx); err != nil {
				return nil, fmt.Errorf("open %s: %w", where, err)
			}
		}
		e := &NotRepositoryError{URL: where, ReadOnly: store.IsReadOnly(st), HTML: errors.As(err, new(*store.HTMLAnswerError))}
		if !strings.Contains(url, "://") {
			_, err := os.Stat(filepath.Join(url, WorkdirStateFile))
			e.IsWorkdir = err == nil
			_, err = os.Stat(url)
			e.NoFolder = errors.Is(err, fs.ErrNotExist)
		}
		return nil, e
	}
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("open %s: %w", where, err)
	}
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		st.Close()
		return nil, fmt.Errorf("%s: %s does not parse (%v): %w", where, ConfigKey, err, ErrNotRepository)
	}
	if cfg.Format < 1 || cfg.Format > ConfigFormat {
		st.Close()
		return nil, fmt.Errorf("%s: repository format %d is newer than this fdl reads (%d): upgrade fdl", where, cfg.Format, ConfigFormat)
	}
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	return newRepo(st, url, cfg, o), nil
}

// VersionKey returns the store key of a file inside versions/<id>/.
func VersionKey(id version.ID, file string) string {
	return VersionsPrefix + string(id) + "/" + file
}

// CatalogLocation returns the location of a version's frozen catalog, as a
// reader's DuckDB ATTACH takes it.
func (r *Repo) CatalogLocation(id version.ID) string {
	return r.st.Location(VersionKey(id, version.CatalogFile))
}
