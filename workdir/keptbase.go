package workdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/version"
)

// The kept base (docs/spec.md §12): a SQLite working directory keeps the
// DuckDB catalog of its base version, so that a commit converts only what
// changed after it (ducklake.FreezeOnto). While the base is a local
// version, its own catalog (DIR/.fdl/versions/<id>/ducklake.duckdb) is
// the kept one; otherwise DIR/.fdl/base-<id>.duckdb, written by checkout
// and pull and by push from the pushed version's catalog. Every use
// checks it against the base's record (size and sha256, while it is
// copied), so a file left by a killed command is never trusted.

// keptBasePrefix and keptBaseSuffix frame the kept base's name in .fdl/.
const (
	keptBasePrefix = "base-"
	keptBaseSuffix = ".duckdb"
)

// keptBasePath is where the catalog of version id is kept when it is not
// a local version.
func (w *Workdir) keptBasePath(id version.ID) string {
	return w.stateDir(keptBasePrefix + string(id) + keptBaseSuffix)
}

// keptBase returns the DuckDB catalog of the base a commit can start from
// ("" when there is none): the local version's own, else the kept file.
func (w *Workdir) keptBase() string {
	if w.BaseRecord == nil {
		return ""
	}
	for _, p := range []string{w.stateDir(LocalVersions, string(w.BaseRecord.ID), version.CatalogFile), w.keptBasePath(w.BaseRecord.ID)} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// keepBase moves the DuckDB file path (version id's checked catalog) to
// where the working directory keeps its base, and removes the kept
// catalogs of other versions. Best effort: a base not kept only means a
// full conversion at the next commit.
func (w *Workdir) keepBase(path string, id version.ID) {
	if err := os.Rename(path, w.keptBasePath(id)); err != nil {
		os.Remove(path)
	}
	w.dropKeptBases(id)
}

// dropKeptBases removes DIR/.fdl/base-*.duckdb but the one of version
// except ("" for none).
func (w *Workdir) dropKeptBases(except version.ID) {
	ents, _ := os.ReadDir(w.stateDir())
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, keptBasePrefix) && strings.HasSuffix(n, keptBaseSuffix) && n != filepath.Base(w.keptBasePath(except)) {
			os.Remove(w.stateDir(n))
		}
	}
}

// freezeCatalog freezes the working catalog into frozen: a SQLite one
// from its kept base and what changed after it (ducklake.FreezeOnto),
// saying under --verbose how, or why the whole catalog was converted.
func (w *Workdir) freezeCatalog(ctx context.Context, frozen string) (ducklake.FreezeInfo, error) {
	b := w.BaseRecord
	if w.State.CatalogFormat != ducklake.BackendSQLite || b == nil {
		return ducklake.Freeze(ctx, w.CatalogPath(), frozen)
	}
	info, d, err := ducklake.FreezeOnto(ctx, w.CatalogPath(), frozen, w.freezeBase())
	if err != nil {
		return info, err
	}
	switch {
	case d.Full != "":
		w.debugf("commit: the whole SQLite catalog converted: %s", d.Full)
	default:
		w.debugf("commit: the base's catalog brought up to date (%d table(s) by their changes: %s)", len(d.Delta), strings.Join(d.Delta, ", "))
		for t, why := range d.Whole {
			w.debugf("commit: table %s written whole: %s", t, why)
		}
		if d.Compacted {
			w.debugf("commit: over half of the file was free space: written again")
		}
	}
	return info, nil
}

// freezeBase is the base version's kept catalog and what its record says
// of it (Path is empty when none is kept). The base must not be nil.
func (w *Workdir) freezeBase() ducklake.FreezeBase {
	b := w.BaseRecord
	return ducklake.FreezeBase{
		Path: w.keptBase(), Size: b.Catalog.Size, SHA256: b.Catalog.SHA256, Format: b.DuckLake.Format, Snapshot: b.DuckLake.Snapshot,
	}
}

// debugf sends a debug line to the options' Debug function (--verbose).
func (w *Workdir) debugf(format string, a ...any) {
	if w.opts.Debug != nil {
		w.opts.Debug(fmt.Sprintf(format, a...))
	}
}
