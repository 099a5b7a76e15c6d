package repo

import (
	"context"
	"fmt"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Shown is one version as 'fdl show' presents it: its record and dataset,
// its short id and the DuckDB statement a reader attaches it with; for a
// version out of retention, when and why it left instead of the dataset
// and with no statement (DESIGN.md §4.7: the record stays, the catalog
// goes). Its JSON is 'fdl show --json'.
type Shown struct {
	Record  *version.Record  `json:"record"`
	Dataset *version.Dataset `json:"dataset,omitempty"`
	Short   string           `json:"short_id"`
	Retired *ShownRetired    `json:"retired,omitempty"`
	// Attach is "" for a retired version: it cannot be attached.
	Attach string `json:"attach"`
	// Readers say which DuckDB releases read the version: the record's, or
	// for a record written before fdl recorded them, derived from its
	// storage version and format (ReadersDerived true).
	Readers        meta.Readers `json:"readers"`
	ReadersDerived bool         `json:"readers_derived,omitempty"`
	// NeedsMigration is true when the version's DuckLake format is older
	// than ducklake.CurrentFormat: DuckDB 1.5.2 and newer refuse it, and
	// MigrateBranch publishes a version they read.
	NeedsMigration bool `json:"needs_migration"`
	// Branch is the branch rev named (or the working directory's, for a
	// local version); "" otherwise.
	Branch string `json:"branch,omitempty"`
	// Abbrev shortens the other ids shown (parents).
	Abbrev refs.Abbrev `json:"-"`
}

// ShownRetired says when and why a shown version left retention.
type ShownRetired struct {
	At     time.Time `json:"at"`
	Floor  int64     `json:"floor"`
	Reason string    `json:"reason"`
	Marked bool      `json:"marked"`
}

// Show returns rev's version (default: defaultRev). Opened from a working
// directory with unpushed versions and without rev, it shows the newest
// of those, from the local copy. The stored catalog's size is checked
// against the record before its ATTACH statement is given (one Stat).
// Errors: the Resolve errors, *ChecksumError, the store's.
func (r *Repo) Show(ctx context.Context, rev string) (*Shown, error) {
	s, err := r.show(ctx, rev)
	if err == nil {
		var recorded bool
		s.Readers, recorded = s.Record.EffectiveReaders()
		s.ReadersDerived = !recorded
		s.NeedsMigration = ducklake.NeedsMigration(s.Record.DuckLake.Format)
	}
	return s, err
}

func (r *Repo) show(ctx context.Context, rev string) (*Shown, error) {
	local := r.localVersions(rev)
	if len(local) > 0 {
		rec := local[0]
		abbrev, err := r.Abbrev(ctx, append(ids(local), rec.Parents...)...)
		if err != nil {
			return nil, err
		}
		ds, err := r.wd.LocalDataset(rec.ID)
		if err != nil {
			return nil, err
		}
		return &Shown{Record: rec, Dataset: ds, Short: abbrev.Short(rec.ID), Abbrev: abbrev, Branch: r.wd.State.Branch,
			Attach: withReaderNote(r.AttachStatement(r.wd.LocalCatalog(rec.ID), rec.DuckLake.DataPath, fmt.Sprint("v", rec.Seq), true), rec.DuckLake.Format)}, nil
	}
	if rev == "" {
		rev = r.defaultRev()
	}
	rec, rv, err := r.refs.ResolveRecord(ctx, rev)
	if err != nil {
		return nil, err
	}
	abbrev, err := r.Abbrev(ctx, append([]version.ID{rec.ID}, rec.Parents...)...)
	if err != nil {
		return nil, err
	}
	out := &Shown{Record: rec, Short: abbrev.Short(rec.ID), Abbrev: abbrev}
	if rv.Ref.IsBranch() {
		out.Branch = rv.Ref.Short()
	}
	if ret, err := r.Retirement(ctx, rec.ID); err != nil {
		return nil, err
	} else if ret != nil {
		out.Retired = &ShownRetired{At: ret.At, Floor: ret.Floor, Reason: ret.Reason, Marked: ret.Marked}
		return out, nil
	}
	if out.Dataset, err = r.Dataset(ctx, rec.ID); err != nil {
		return nil, err
	}
	if err := r.CheckCatalogSize(ctx, rec); err != nil {
		return nil, err
	}
	out.Attach = withReaderNote(r.AttachStatement(r.CatalogLocation(rec.ID), rec.DuckLake.DataPath, fmt.Sprint("v", rec.Seq), true), rec.DuckLake.Format)
	return out, nil
}
