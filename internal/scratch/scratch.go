// Package scratch makes the folders fdl works in inside the system's
// temporary folder (os.TempDir: $TMPDIR on Unix), and removes the ones a
// killed fdl left behind.
//
// A command that fetches catalogs to compare or check them (diff, show,
// verify, migrate, gc, mirror), converts a catalog (the SQLite
// conversion's CSV files) or lets DuckDB spill a large query works in a
// folder of its own named "fdl-KIND-*" and removes it when it ends. A
// process killed before that (kill -9, a CI runner's timeout, a power cut)
// cannot remove it, and such folders may hold whole catalogs. So each
// folder holds an owner file its process keeps locked (internal/filelock)
// while it lives; the kernel lets go of the lock when the process ends,
// however it ends. The first folder a process makes first sweeps the
// temporary folder: a folder of a known kind whose owner file can be
// locked has no owner left and is removed.
package scratch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fdl-dev/fdl/internal/filelock"
)

// The kinds of folder, each a part of fdl that makes one: the folder is
// named "fdl-" + kind + "-" and os.MkdirTemp's random digits. Only folders
// of these kinds are ever swept.
const (
	Spill   = "duckdb"  // DuckDB's spill folder for a query whose size grows with the files
	Diff    = "diff"    // fdl diff's fetched catalogs
	Show    = "show"    // fdl show's fetched catalog
	Verify  = "verify"  // fdl verify's fetched catalogs
	Migrate = "migrate" // fdl migrate's converted catalog
	GC      = "gc"      // fdl gc's fetched catalogs
	Mirror  = "mirror"  // fdl mirror's catalogs fetched from an object store
	SQLite  = "sqlite"  // the CSV files of a conversion into a SQLite file
)

var kinds = map[string]bool{Spill: true, Diff: true, Show: true, Verify: true,
	Migrate: true, GC: true, Mirror: true, SQLite: true}

const (
	// OwnerFile is the file in each folder its process keeps locked.
	OwnerFile = ".fdl-owner"
	// LockGrace: an owner file is locked the moment after it is made; one
	// that can be locked is taken for abandoned only once it is this old,
	// so a sweep never takes a folder in that moment.
	LockGrace = time.Minute
	// OrphanAge: a folder without an owner file (made by an fdl before
	// the owner files, or killed between making the folder and the file)
	// is removed once it is this old (its modification time: a folder a
	// process writes in stays young).
	OrphanAge = time.Hour
)

var sweepOnce sync.Once

// New makes a folder of the given kind (one of the constants above) in
// the system's temporary folder, with its owner file locked. remove
// lets go of the lock and removes the folder and everything in it (its
// error is os.RemoveAll's; later calls do nothing and return the same). The first call in a
// process first sweeps the temporary folder (Sweep). Where the platform
// has no file lock the owner file stays unlocked and such folders are
// never swept. Errors are the file system's, or a kind not listed here.
func New(kind string) (dir string, remove func() error, err error) {
	if !kinds[kind] {
		return "", nil, errors.New("scratch: unknown kind of folder " + kind)
	}
	sweepOnce.Do(func() { Sweep(os.TempDir(), time.Now()) })
	dir, err = os.MkdirTemp("", "fdl-"+kind+"-*")
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, OwnerFile), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if locked, err := filelock.TryLock(f); err == nil && !locked {
		f.Close()
		os.RemoveAll(dir)
		return "", nil, errors.New("temporary folder " + dir + ": its new owner file is locked by another process")
	}
	var once sync.Once
	var rerr error
	return dir, func() error {
		once.Do(func() {
			f.Close() // lets go of the lock (Windows removes no open file)
			rerr = os.RemoveAll(dir)
		})
		return rerr
	}, nil
}

// Sweep removes the folders of known kinds in tmp that no live process
// owns: those whose owner file this process can lock and which is older
// than LockGrace at now, and those without an owner file that are older
// than OrphanAge. Errors are ignored: a folder that cannot be examined or
// removed is left for a later sweep.
func Sweep(tmp string, now time.Time) {
	// Not filepath.Glob: tmp may hold '[' or '*' itself.
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "fdl-")
		kind, _, dash := strings.Cut(rest, "-")
		if !ok || !dash || !kinds[kind] || !e.IsDir() {
			continue
		}
		d := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		f, err := os.Open(filepath.Join(d, OwnerFile))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && now.Sub(fi.ModTime()) > OrphanAge {
				os.RemoveAll(d)
			}
			continue
		}
		ofi, serr := f.Stat()
		locked, lerr := filelock.TryLock(f)
		f.Close() // lets go of the lock just taken
		if serr == nil && lerr == nil && locked && now.Sub(ofi.ModTime()) > LockGrace {
			os.RemoveAll(d)
		}
	}
}
