package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/atomicfile"
	"github.com/fdl-dev/fdl/internal/scratch"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/signature"
	"github.com/fdl-dev/fdl/version"
)

// CurrentFormatError: the branch's head needs no migration: its format is
// ducklake.CurrentFormat or newer. It wraps ducklake.ErrCurrentFormat.
type CurrentFormatError struct {
	Branch  string
	Version version.ID
	Seq     int64
	Format  string
	Readers string // ducklake.FormatReaders(Format)
}

func (e *CurrentFormatError) Error() string {
	return fmt.Sprintf("branch %s: its head, version %s (seq %d), is DuckLake %s, which %s reads as it is: %v",
		e.Branch, e.Version, e.Seq, e.Format, e.Readers, ducklake.ErrCurrentFormat)
}

func (e *CurrentFormatError) Unwrap() error { return ducklake.ErrCurrentFormat }

// MigrateNeedsFileError: a checkout was asked to migrate without a file to
// import (a branch's versions are migrated with MigrateBranch). It wraps
// ErrInvalidArguments.
type MigrateNeedsFileError struct{}

func (MigrateNeedsFileError) Error() string {
	return "migrating at checkout applies to a lake imported from a file; a branch's head is migrated as a new version of the branch: " + ErrInvalidArguments.Error()
}

func (MigrateNeedsFileError) Unwrap() error { return ErrInvalidArguments }

// MigrateOptions are the inputs of MigrateBranch.
type MigrateOptions struct {
	// Branch is the branch whose head is migrated; default: the working
	// directory's branch when the repository was opened from one
	// (Workdir.OpenRepo), else HEAD's.
	Branch string
	// Message and Author of the new version. Message defaults to
	// "Migrate DuckLake <from> to <to> (readable by <readers>)", Author to
	// DefaultActor().
	Message, Author string
	// Now, if set, is the creation time (tests); default time.Now.
	Now func() time.Time
	// Local is the working directory the command runs in (nil: none):
	// Branch defaults to its branch. The caller (package workdir) holds
	// its lock and has refused local work first.
	Local *Local
	// SignKey, if set, names the key that signs the new version's record
	// (LoadSigner), loaded before anything is fetched; the signature is
	// pushed with it (docs/spec.md §20).
	SignKey string
	signer  *signature.Signer
}

// MigrateResult says what MigrateBranch made.
type MigrateResult struct {
	Branch string `json:"branch"`
	// Parent is the version that was the branch's head: it stays, in its
	// old format, for readers of that format.
	Parent    version.ID           `json:"parent"`
	ParentSeq int64                `json:"parent_seq"`
	Version   *version.Record      `json:"record"` // the new version, now the branch's head
	Migration ducklake.MigrateInfo `json:"migration"`
	// Attach is the DuckDB statement that attaches the new version
	// READ_ONLY.
	Attach string `json:"attach"`
	// ParentAttach attaches the parent, for readers of the old format.
	ParentAttach string `json:"parent_attach"`
	// Readers says which DuckDB releases read the new version (its
	// record's readers); ParentReaders those that read the parent.
	Readers       meta.Readers `json:"readers"`
	ParentReaders meta.Readers `json:"parent_readers"`
	// WorkdirBehind is true when the repository was opened from a working
	// directory of Branch: it still holds the old catalog (checking the
	// branch out again gives the migrated one).
	WorkdirBehind bool `json:"workdir_behind,omitempty"`
	// URL is the repository's URL (to check the branch out again).
	URL string `json:"url"`
	// Abbrev is the short-id length after the migration.
	Abbrev refs.Abbrev `json:"-"`
}

// MigrateBranch publishes, on top of branch's head, a new version whose
// catalog is the head's catalog migrated to ducklake.CurrentFormat with the
// ducklake extension's own migration steps (ducklake.Migrate), so that
// DuckDB releases that read only that format (1.5.2 and newer) can attach
// the branch. The head's catalog is fetched (checksum verified) and never
// changed; the head stays, in its format, for readers of that format. The
// new version adds no snapshot (a migration adds none): its record carries
// ducklake.migrated_from = the head's format and the empty adds range
// snapshot+1..snapshot (docs/spec.md). The branch moves to it as a push
// does: fast-forward, compare-and-swap; this move to a newer DuckLake
// format is the explicit purpose of the call. When the repository was
// run from a working directory of the branch (o.Local: workdir's Migrate,
// which first refuses a directory with snapshots not committed or versions
// not pushed, as they could not be pushed on top of the migrated version),
// MigrateResult.WorkdirBehind says that directory still holds the old
// catalog. The working directory is never changed.
//
// Errors: *refs.MissingBranchError (wrapping refs.ErrNotFound) when the
// branch named does not exist, *refs.NoVersionYetError when HEAD's branch
// has no version yet; an error wrapping
// ducklake.ErrCurrentFormat when the head needs no migration (its format
// is CurrentFormat or newer); ducklake.ErrUnsupportedFormat when it has no
// migration path; *RetiredError
// when the head is out of retention; *RefusedError when another push moved
// the branch meanwhile (nothing is moved then); the store's errors.
func (r *Repo) MigrateBranch(ctx context.Context, o MigrateOptions) (*MigrateResult, error) {
	branch, err := r.migrateTarget(ctx, o)
	if err != nil {
		return nil, err
	}
	behind := o.Local != nil && o.Local.Branch == branch.Short()
	if o.SignKey != "" {
		if o.signer, err = LoadSigner(ctx, o.SignKey); err != nil {
			return nil, err
		}
	}
	head, err := r.migrateHead(ctx, branch, o.Branch == "")
	if err != nil {
		return nil, err
	}
	tmp, removeTmp, err := scratch.New(scratch.Migrate)
	if err != nil {
		return nil, err
	}
	defer removeTmp()
	pending, info, err := r.migrateCatalog(ctx, head, tmp, o)
	if err != nil {
		return nil, err
	}
	// A migration moves the branch to a newer DuckLake format on purpose:
	// the explicit permission a push needs for that (PushOptions).
	r.step("migrate:push")
	if _, err := r.Publish(ctx, branch, pending.Record.ID, []Pending{pending}, PushOptions{AllowFormatChange: true}); err != nil {
		return nil, err
	}
	rec := pending.Record
	res := &MigrateResult{Branch: branch.Short(), Parent: head.ID, ParentSeq: head.Seq, Version: rec, Migration: info,
		Attach:        r.AttachStatement(r.CatalogLocation(rec.ID), rec.DuckLake.DataPath, fmt.Sprintf("v%d", rec.Seq), true),
		ParentAttach:  r.AttachStatement(r.CatalogLocation(head.ID), head.DuckLake.DataPath, fmt.Sprintf("v%d", head.Seq), true),
		Readers:       effectiveReaders(rec),
		ParentReaders: effectiveReaders(head),
		WorkdirBehind: behind,
		URL:           r.url,
	}
	res.Abbrev, _ = r.Abbrev(ctx)
	return res, nil
}

// migrateTarget returns the branch a migration moves: o.Branch, else the
// working directory's, else HEAD's.
func (r *Repo) migrateTarget(ctx context.Context, o MigrateOptions) (refs.Name, error) {
	switch {
	case o.Branch != "":
		return refs.Branch(o.Branch)
	case o.Local != nil:
		return refs.Branch(o.Local.Branch)
	}
	return r.refs.Head(ctx)
}

// migrateHead reads the record of branch's head and checks that it needs a
// migration and is in retention. byDefault: the branch was not named (a
// missing one then has no version yet).
func (r *Repo) migrateHead(ctx context.Context, branch refs.Name, byDefault bool) (*version.Record, error) {
	ref, err := r.refs.Read(ctx, branch)
	if errors.Is(err, refs.ErrNotFound) {
		if byDefault {
			return nil, &refs.NoVersionYetError{Branch: branch, Where: r.url}
		}
		return nil, &refs.MissingBranchError{Branch: branch, Err: err}
	}
	if err != nil {
		return nil, err
	}
	head, err := r.Record(ctx, ref.ID)
	if err != nil {
		return nil, err
	}
	if from := head.DuckLake.Format; !ducklake.NeedsMigration(from) {
		if ducklake.IsCurrentFormat(from) {
			return nil, &CurrentFormatError{Branch: branch.Short(), Version: head.ID, Seq: head.Seq, Format: from, Readers: ducklake.FormatReaders(from)}
		}
		return nil, fmt.Errorf("branch %s: version %s (seq %d): %w %q: no migration path to %s",
			branch.Short(), head.ID, head.Seq, ducklake.ErrUnsupportedFormat, from, ducklake.CurrentFormat)
	}
	if err := r.RefuseRetired(ctx, head); err != nil {
		return nil, err
	}
	return head, nil
}

// migrateCatalog fetches head's catalog into tmp (checksum verified),
// migrates it (ducklake.Migrate) and writes the new version's three files
// into tmp/<id>, ready to push.
func (r *Repo) migrateCatalog(ctx context.Context, head *version.Record, tmp string, o MigrateOptions) (Pending, ducklake.MigrateInfo, error) {
	var info ducklake.MigrateInfo
	r.step("migrate:fetch")
	src := filepath.Join(tmp, "source.duckdb")
	if err := r.FetchCatalog(ctx, head, src); err != nil {
		return Pending{}, info, err
	}
	id, err := version.NewIDAfter(head.ID)
	if err != nil {
		return Pending{}, info, err
	}
	dir := filepath.Join(tmp, string(id))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return Pending{}, info, err
	}
	r.step("migrate:catalog")
	if info, err = ducklake.Migrate(ctx, src, filepath.Join(dir, version.CatalogFile)); err != nil {
		return Pending{}, info, fmt.Errorf("version %s (seq %d): %w", head.ID, head.Seq, err)
	}
	if info.Snapshot.ID != head.DuckLake.Snapshot || !info.Snapshot.Time.Equal(head.DuckLake.SnapshotTime) {
		return Pending{}, info, fmt.Errorf("version %s (seq %d): its catalog ends at snapshot %d, its record says %d", head.ID, head.Seq, info.Snapshot.ID, head.DuckLake.Snapshot)
	}
	if o.Author == "" {
		o.Author = DefaultActor()
	}
	rec, err := r.migratedRecord(ctx, head, id, dir, info, o)
	if err != nil {
		return Pending{}, info, err
	}
	if o.signer != nil {
		if err := SignLocalRecord(ctx, o.signer, dir); err != nil {
			return Pending{}, info, err
		}
	}
	return Pending{Record: rec, Dir: dir}, info, nil
}

// migratedRecord writes dataset.json and version.json of the migrated
// version into dir (which holds its catalog) and returns the record.
func (r *Repo) migratedRecord(ctx context.Context, head *version.Record, id version.ID, dir string, info ducklake.MigrateInfo, o MigrateOptions) (*version.Record, error) {
	frozen := filepath.Join(dir, version.CatalogFile)
	cat, err := ducklake.Open(ctx, frozen)
	if err != nil {
		return nil, err
	}
	st, err := cat.State(ctx, info.Snapshot.ID)
	var sched []ducklake.ScheduledFile
	if err == nil {
		// Counted as commit counts them (docs/spec.md §9), so a commit on
		// top compares with the same figure.
		sched, err = cat.ScheduledSince(ctx, time.Time{})
	}
	var known int64
	if err == nil {
		known, err = cat.FilesKnownAt(ctx, info.Snapshot.ID)
	}
	var history []*meta.RowDigests
	if err == nil {
		// What the migrated version publishes, for the commits on top
		// (docs/spec.md §24; its parent's, of the older format, is not
		// compared).
		history, err = cat.RowDigests(ctx, info.Snapshot.ID)
	}
	format, dataPath := cat.Format(), cat.DataPath()
	cat.Close()
	if err != nil {
		return nil, err
	}
	size, sum, err := FileDigest(frozen)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	msg := o.Message
	if strings.TrimSpace(msg) == "" {
		msg = fmt.Sprintf("Migrate DuckLake %s to %s (readable by %s)", info.From, info.To, ducklake.FormatReaders(info.To))
	}
	s := info.Snapshot.ID
	rec := &version.Record{
		RecordFormat: version.RecordFormat, ID: id, Seq: head.Seq + 1, Parents: []version.ID{head.ID},
		Author: o.Author, Message: msg, CreatedAt: now().UTC().Truncate(time.Millisecond),
		Catalog: version.Catalog{Size: size, SHA256: sum, Storage: info.Storage},
		Readers: version.NewReaders(format, info.Storage),
		DuckLake: version.DuckLake{Format: format, Snapshot: s, SnapshotTime: info.Snapshot.Time,
			Adds: version.SnapshotRange{First: s + 1, Last: s}, DataPath: dataPath, MigratedFrom: info.From},
	}
	dataset := version.NewDataset(id, format, dataPath, st)
	scheduled := int64(len(sched))
	dataset.Totals.ScheduledFiles, dataset.Totals.KnownFiles = &scheduled, &known
	if history != nil {
		dataset.History = history[0]
	}
	ds, err := dataset.Marshal()
	if err != nil {
		return nil, err
	}
	rec.Dataset = version.File{Size: int64(len(ds)), SHA256: sha256Hex(ds)}
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, version.DatasetFile), ds); err != nil {
		return nil, err
	}
	rb, err := rec.Marshal()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, version.RecordFile), rb); err != nil {
		return nil, err
	}
	return rec, nil
}

// effectiveReaders returns the readers a record gives (or derives).
func effectiveReaders(rec *version.Record) meta.Readers {
	rd, _ := rec.EffectiveReaders()
	return rd
}
