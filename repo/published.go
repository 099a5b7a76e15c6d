package repo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/version"
)

// What a version published is read the same from every later version
// (docs/spec.md §10 invariant 6, §24): the digests of its metadata rows at
// its last snapshot, compared by commit (workdir) and push.

// CheckHistory compares what version base published (its dataset's
// History) with later, the digest of a newer catalog at base's snapshot,
// and returns *HistoryRewrittenError (where names the newer catalog) at
// the first difference; nil when they agree or cannot be compared (either
// absent, another encoding or DuckLake format: the row-count check stands
// alone then).
func CheckHistory(where string, base *version.Record, published *version.Dataset, later *meta.RowDigests) *HistoryRewrittenError {
	if published == nil || !meta.Comparable(published.History, later) {
		return nil
	}
	ch := meta.CompareDigests(published.History, later)
	if ch == nil {
		return nil
	}
	e := &HistoryRewrittenError{Where: where, Version: base.ID, Seq: base.Seq, Snapshot: later.Snapshot, Change: *ch}
	for _, s := range published.Schemas {
		for _, t := range s.Tables {
			if t.ID == ch.TableID {
				e.Table = s.Name + "." + t.Name
			}
		}
	}
	return e
}

// checkPublished checks, before anything is uploaded, that each pending
// version's catalog still shows what its first parent published at the
// parent's last snapshot (docs/spec.md §24): the pending version's
// base_history (taken at commit) against the parent's history; where the
// pending version has none (committed by an fdl before it was recorded,
// or of another encoding), its catalog is digested at that snapshot here.
// Parents without a history are checked by nothing more (their children
// were checked by row counts at commit). Errors: *HistoryRewrittenError,
// the store's and the files' errors.
func (r *Repo) checkPublished(ctx context.Context, pending []Pending) error {
	var parentDS *version.Dataset
	var parent *version.Record
	for i, p := range pending {
		ds, err := localDataset(p)
		if err != nil {
			return err
		}
		switch {
		case i > 0:
			parent = pending[i-1].Record
		case p.Record.Parent() != "":
			if parent, err = r.Record(ctx, p.Record.Parent()); err != nil {
				return fmt.Errorf("push: parent of version %s: %w", p.Record.ID, err)
			}
			if parentDS, err = r.Dataset(ctx, parent.ID); err != nil {
				return fmt.Errorf("push: parent of version %s: %w", p.Record.ID, err)
			}
		}
		if parent != nil && parentDS != nil && parentDS.History != nil {
			later := ds.BaseHistory
			if !meta.Comparable(parentDS.History, later) {
				if later, err = digestAt(ctx, p, parentDS.History.Snapshot); err != nil {
					return err
				}
			}
			if e := CheckHistory("local version "+string(p.Record.ID), parent, parentDS, later); e != nil {
				e.Push, e.URL = true, r.where
				return e
			}
		}
		parentDS = ds
	}
	return nil
}

// localDataset reads a pending version's dataset.json (checked against its
// record by the caller first).
func localDataset(p Pending) (*version.Dataset, error) {
	b, err := os.ReadFile(filepath.Join(p.Dir, version.DatasetFile))
	if err != nil {
		return nil, fmt.Errorf("local version %s: %w", p.Record.ID, err)
	}
	return version.ParseDataset(b, p.Record.ID)
}

// digestAt digests a pending version's catalog at snapshot s; nil when the
// catalog is not digested (ducklake.Catalog.RowDigests).
func digestAt(ctx context.Context, p Pending, s int64) (*meta.RowDigests, error) {
	c, err := ducklake.Open(ctx, filepath.Join(p.Dir, version.CatalogFile))
	if err != nil {
		return nil, fmt.Errorf("local version %s: %w", p.Record.ID, err)
	}
	defer c.Close()
	ds, err := c.RowDigests(ctx, s)
	if err != nil || ds == nil {
		return nil, err
	}
	return ds[0], nil
}
