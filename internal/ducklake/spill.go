package ducklake

import (
	"os"
	"path/filepath"
	"time"
)

// DuckDB's spill folders. A query whose size grows with the files (push's
// data check, a conversion) lets DuckDB spill to a folder of its own in
// the system's temporary folder, which Catalog.Close removes. A process
// killed before Close (kill -9, a power cut) cannot remove it; the next
// fdl that makes one removes such leftovers: each folder holds a lock file
// (spillOwner) that its process holds locked (flock) while it lives, and
// the kernel lets go of when the process ends however it ends, so a folder
// whose lock can be taken has no owner left.
const (
	spillPattern = "fdl-duckdb-*"
	spillOwner   = ".fdl-owner"
	// spillOrphanAge: a folder without an owner file (made by an fdl
	// before the owner files, or killed between making it and locking
	// it) is removed once it is this old.
	spillOrphanAge = time.Hour
)

// newSpillDir makes a spill folder in the system's temporary folder, with
// its owner file locked for as long as this process holds the returned
// release (call it after removing the folder). It first removes the spill
// folders no process owns (sweepSpill).
func newSpillDir() (dir string, release func(), err error) {
	sweepSpill(os.TempDir(), time.Now())
	dir, err = os.MkdirTemp("", spillPattern)
	if err != nil {
		return "", nil, err
	}
	release, err = lockOwner(filepath.Join(dir, spillOwner))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, release, nil
}

// sweepSpill removes the spill folders in tmp that no live process owns:
// those whose owner file this process can lock, and those without one
// that are older than spillOrphanAge at now. Errors are ignored: a
// folder that cannot be examined or removed is left for a later sweep.
func sweepSpill(tmp string, now time.Time) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, spillPattern))
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		owned, err := ownerAlive(filepath.Join(d, spillOwner))
		switch {
		case err == nil && !owned:
			os.RemoveAll(d)
		case os.IsNotExist(err) && now.Sub(fi.ModTime()) > spillOrphanAge:
			os.RemoveAll(d)
		}
	}
}
