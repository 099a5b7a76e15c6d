package workdir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/fdl-dev/fdl/internal/atomicfile"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// BaseDatasetFile is DIR/.fdl/base.dataset.json: dataset.json of the base
// version (what it published at its last snapshot), written by checkout
// and commit beside base.json. Commit reads the new catalog at that
// snapshot and compares (checkPublished).
const BaseDatasetFile = "base.dataset.json"

// saveBaseDataset writes DIR/.fdl/base.dataset.json atomically.
func (w *Workdir) saveBaseDataset(b []byte) error {
	return atomicfile.Write(w.stateDir(BaseDatasetFile), b)
}

// baseDataset reads DIR/.fdl/base.dataset.json (or takes the base's
// dataset ReplaceUnpushed read from the repository); nil (no error) when it is
// absent (a working directory made before fdl kept it) or describes
// another version than the base.
func (w *Workdir) baseDataset() (*version.Dataset, error) {
	if w.BaseRecord == nil {
		return nil, nil
	}
	if w.baseDS != nil && w.baseDS.Version == w.BaseRecord.ID {
		return w.baseDS, nil
	}
	b, err := os.ReadFile(w.stateDir(BaseDatasetFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := version.ParseDataset(b, "")
	if err != nil || d.Version != w.BaseRecord.ID {
		return nil, nil
	}
	return d, nil
}

// checkPublished checks that the new catalog cat, read at the base's last
// snapshot, shows what the base published there (docs/spec.md §10,
// invariant 6: no split timeline): the same schemas, tables, columns and
// views (ids, names, types), and each table the same row count. A writer
// that rewrote history before the base — deleted a data-file row the base
// reads, changed its record count, back-dated a delete file or removed
// inlined rows — is refused (ErrNotDescendant, naming the table and what
// differs). What DuckLake's maintenance changes without changing what is
// read passes: data files and delete files merged or rewritten
// (ducklake_merge_adjacent_files, ducklake_rewrite_data_files), snapshots
// before the base expired (ducklake_expire_snapshots) and the files only
// they read deleted (ducklake_cleanup_old_files). A table whose count at
// that snapshot is not exact (a merged data file or a rewritten delete
// file spanning it, ducklake.Catalog.InexactAt) has its columns checked,
// not its count.
func (w *Workdir) checkPublished(ctx context.Context, cat *ducklake.Catalog, base *version.Dataset) error {
	b := w.BaseRecord
	st, err := cat.State(ctx, b.DuckLake.Snapshot)
	if err != nil {
		return err
	}
	inexact, err := cat.InexactAt(ctx, b.DuckLake.Snapshot)
	if err != nil {
		return err
	}
	refuse := func(what string) error {
		return fmt.Errorf("%s rewrote what version %s (seq %d) published at snapshot %d: %s; the history a version published is read the same from every later version: check out the branch again and redo the change there: %w",
			w.CatalogPath(), b.ID, b.Seq, b.DuckLake.Snapshot, what, ErrNotDescendant)
	}
	if len(st.Schemas) != len(base.Schemas) {
		return refuse(fmt.Sprintf("it has %d schema(s) there, the version %d", len(st.Schemas), len(base.Schemas)))
	}
	for i, want := range base.Schemas {
		got := st.Schemas[i]
		if got.ID != want.ID || got.Name != want.Name {
			return refuse(fmt.Sprintf("schema %q (id %d) there is %q (id %d)", want.Name, want.ID, got.Name, got.ID))
		}
		if !slices.Equal(got.Views, want.Views) {
			return refuse(fmt.Sprintf("the views of schema %q differ", want.Name))
		}
		if len(got.Tables) != len(want.Tables) {
			return refuse(fmt.Sprintf("schema %q has %d table(s) there, the version %d", want.Name, len(got.Tables), len(want.Tables)))
		}
		for j, wt := range want.Tables {
			gt := got.Tables[j]
			name := want.Name + "." + wt.Name
			switch {
			case gt.ID != wt.ID || gt.Name != wt.Name:
				return refuse(fmt.Sprintf("table %s (id %d) there is %s (id %d)", name, wt.ID, want.Name+"."+gt.Name, gt.ID))
			case !columnsEqual(gt.Columns, wt.Columns):
				return refuse(fmt.Sprintf("the columns of table %s differ", name))
			case !inexact[gt.ID] && gt.RowCount != wt.RowCount:
				return refuse(fmt.Sprintf("table %s reads %d row(s) there, the version %d", name, gt.RowCount, wt.RowCount))
			}
		}
	}
	return nil
}

// checkHistory digests the frozen catalog cat's metadata rows at its last
// snapshot last and, with a base, at the base's last snapshot, in one
// pass (ducklake.Catalog.RowDigests, docs/spec.md §24), and compares the
// latter with what the base published (base.History, when base is known
// and has one). It returns both digests for the new dataset.json (nil for
// a catalog fdl does not digest). Errors: *repo.HistoryRewrittenError
// (wrapping ErrNotDescendant) naming the metadata table, the DuckLake
// table and the base's snapshot.
func (w *Workdir) checkHistory(ctx context.Context, cat *ducklake.Catalog, last int64, base *version.Dataset) (history, baseHistory *meta.RowDigests, err error) {
	at := []int64{last}
	b := w.BaseRecord
	if b != nil {
		at = append(at, b.DuckLake.Snapshot)
	}
	ds, err := cat.RowDigests(ctx, at...)
	if err != nil || ds == nil {
		return nil, nil, err
	}
	if b == nil {
		return ds[0], nil, nil
	}
	if e := repo.CheckHistory(w.CatalogPath(), b, base, ds[1]); e != nil {
		e.Err, e.URL, e.Branch = ErrNotDescendant, w.State.Repository, w.State.Branch
		return nil, nil, e
	}
	return ds[0], ds[1], nil
}

// columnsEqual compares two column trees (ids, names, types, nullability).
func columnsEqual(a, b []meta.Column) bool {
	return slices.EqualFunc(a, b, func(x, y meta.Column) bool {
		return x.ID == y.ID && x.Name == y.Name && x.Type == y.Type && x.Nullable == y.Nullable && columnsEqual(x.Children, y.Children)
	})
}
