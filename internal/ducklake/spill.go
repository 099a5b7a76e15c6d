package ducklake

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/filelock"
)

// DuckDB's spill folders. A query whose size grows with the files (push's
// data check, a conversion) lets DuckDB spill to a folder of its own in
// the system's temporary folder, which Catalog.Close removes. A process
// killed before Close (kill -9, a power cut) cannot remove it; the next
// fdl that makes one removes such leftovers: each folder holds an owner
// file its process keeps locked (filelock) while it lives, and the kernel
// lets go of the lock when the process ends however it ends, so a folder
// whose owner file can be locked has no owner left.
const (
	spillPrefix  = "fdl-duckdb-"
	spillPattern = spillPrefix + "*" // os.MkdirTemp's
	spillOwner   = ".fdl-owner"
	// spillLockGrace: an owner file is locked the moment after it is
	// made; one that can be locked is taken for abandoned only once it
	// is this old, so a sweep never takes a folder in that moment.
	spillLockGrace = time.Minute
	// spillOrphanAge: a folder without an owner file (made by an fdl
	// before the owner files, or killed between making the folder and
	// the file) is removed once it is this old.
	spillOrphanAge = time.Hour
)

// newSpillDir makes a spill folder in the system's temporary folder, with
// its owner file locked until release is called (call it before removing
// the folder). It first removes the spill folders no process owns
// (sweepSpill). Where the platform has no file lock, the owner file is
// left unlocked and such folders are never swept.
func newSpillDir() (dir string, release func(), err error) {
	sweepSpill(os.TempDir(), time.Now())
	dir, err = os.MkdirTemp("", spillPattern)
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, spillOwner), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if locked, err := filelock.TryLock(f); err == nil && !locked {
		f.Close()
		os.RemoveAll(dir)
		return "", nil, errors.New("spill folder " + dir + ": its new owner file is locked by another process")
	}
	return dir, func() { f.Close() }, nil
}

// sweepSpill removes the spill folders in tmp that no live process owns:
// those whose owner file this process can lock and which is older than
// spillLockGrace at now, and those without an owner file that are older
// than spillOrphanAge. Errors are ignored: a folder that cannot be
// examined or removed is left for a later sweep.
func sweepSpill(tmp string, now time.Time) {
	// Not filepath.Glob: tmp may hold '[' or '*' itself.
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), spillPrefix) {
			continue
		}
		d := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		f, err := os.Open(filepath.Join(d, spillOwner))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && now.Sub(fi.ModTime()) > spillOrphanAge {
				os.RemoveAll(d)
			}
			continue
		}
		ofi, serr := f.Stat()
		locked, lerr := filelock.TryLock(f)
		f.Close() // lets go of the lock just taken
		if serr == nil && lerr == nil && locked && now.Sub(ofi.ModTime()) > spillLockGrace {
			os.RemoveAll(d)
		}
	}
}
