package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// Code names a kind of verify finding; the strings are stable (scripts
// read them; docs/cli.md lists every one).
type Code string

// Verify's findings, by code.
const (
	CodeHeadInvalid       Code = "head-invalid"        // HEAD does not parse
	CodeRefCorrupt        Code = "ref-corrupt"         // a ref does not parse
	CodeRefDangling       Code = "ref-dangling"        // a ref points at no complete version
	CodeVersionIncomplete Code = "version-incomplete"  // a version a ref reaches has no version.json
	CodeRecordInvalid     Code = "record-invalid"      // version.json does not parse
	CodeDatasetInvalid    Code = "dataset-invalid"     // dataset.json does not parse or match its record
	CodeParentMissing     Code = "parent-missing"      // a parent is not a complete version
	CodeSeqMismatch       Code = "seq-mismatch"        // seq is not the first parent's + 1, or not above another parent's
	CodeIDOrder           Code = "id-order"            // the id does not sort after the first parent's
	CodeSnapshotOrder     Code = "snapshot-order"      // the snapshots added do not follow the first parent's
	CodeCreatedOrder      Code = "created-order"       // created_at is before the first parent's
	CodeVersionExtraFile  Code = "version-extra-file"  // a version folder holds a file that is not one of the version's
	CodeCatalogUnreadable Code = "catalog-unreadable"  // the catalog cannot be read
	CodeChecksumMismatch  Code = "checksum-mismatch"   // the catalog's size or sha256 differs from its record
	CodePolicyInvalid     Code = "policy-invalid"      // retention/policy.json does not parse
	CodeFloorInvalid      Code = "floor-invalid"       // retention/floor.json does not parse
	CodeReflogInvalid     Code = "reflog-invalid"      // a ref log entry does not parse
	CodeRefRetired        Code = "ref-retired"         // a ref points at a version out of retention
	CodeMarkerInvalid     Code = "marker-invalid"      // retired.json does not parse
	CodeRetiredCatalog    Code = "retired-has-catalog" // a marked version still has its catalog or dataset.json
	CodeRetiredNoMarker   Code = "retired-no-marker"   // the floor retires a version whose catalog is gone without a marker
	CodeDataMissing       Code = "data-missing"        // --data: a file a catalog in retention can read is not in the store
	CodeDataPathInvalid   Code = "data-path-invalid"   // --data: a data-file path cannot be normalised
	// CodeDataPathDisputed: --data: DuckDB reads a data file's path
	// outside the repository while the same text names a file inside it
	// (a prefix holding '?', which DuckDB reads as query parameters): gc
	// keeps the file, but no DuckDB reader reaches it by that path.
	CodeDataPathDisputed Code = "data-path-disputed"
	// CodeDataSize: --data: a file's size in the store differs from the
	// file_size_bytes a catalog in retention records (docs/spec.md §23).
	CodeDataSize Code = "data-size"
	// CodeDataFooter: --data --deep: a file's Parquet footer does not
	// parse, or its length or row count differs from the footer_size or
	// record_count (delete_count) a catalog in retention records.
	CodeDataFooter Code = "data-footer"
	// CodeDataHTTPUnreachable: --data over http(s): DuckDB requests a
	// data file by its name as the catalog spells it (with %XX escapes,
	// which the server decodes) and the server answers 404 or another
	// file (store.ReaderPaths; docs/spec.md §23).
	CodeDataHTTPUnreachable Code = "data-http-unreachable"
	// CodeDataLocalPath: in a repository that is not a folder of this
	// machine, a version reads data files by a local path (its data_path
	// or a file's path is one), which no reader of the repository reaches.
	CodeDataLocalPath Code = "data-local-path"
	// CodeCatalogRecord: the catalog's last snapshot is not the one its
	// record says it is frozen at (id and snapshot_time).
	CodeCatalogRecord Code = "catalog-record-snapshot"
	// CodeCatalogTimeline: the catalog no longer holds its first parent's
	// last snapshot with the same snapshot_time, so it does not continue
	// the parent's timeline (docs/spec.md §10.6).
	CodeCatalogTimeline Code = "catalog-timeline"
	// CodeTempLeftover (a note): a folder store's temporary file of an
	// interrupted write anywhere in the repository (store.TempCleaner).
	CodeTempLeftover Code = "temp-leftover"
	// CodePackInvalid: a history pack does not parse, its records do not
	// form the first-parent run its name promises, or one differs from the
	// version's version.json (docs/spec.md §18).
	CodePackInvalid Code = "pack-invalid"
	// CodePackMissing (a note): a version a walk from a ref jumps to has
	// no history pack (readers read its records instead; gc writes it).
	CodePackMissing Code = "pack-missing"
	// CodePackOrphan (a note): a history pack of a version that has no
	// version.json (gc deletes it).
	CodePackOrphan Code = "pack-orphan"
	// CodeSignatureBad: a version's or a tag's signature object does not
	// verify over what it signs (docs/spec.md §20): the record or the tag
	// changed after signing, the signature is damaged, or it was made for
	// another namespace or repository.
	CodeSignatureBad Code = "signature-bad"
	// CodeSignerNotAllowed (with --signers): a signature verifies, but the
	// allowed signers file does not allow its key (not listed, another
	// namespace, outside its validity).
	CodeSignerNotAllowed Code = "signer-not-allowed"
	// CodeVersionUnsigned (a note, with --signers): a version's record has
	// no signature.
	CodeVersionUnsigned Code = "version-unsigned"
	// CodeTagUnsigned (a note, with --signers): a tag has no signature.
	CodeTagUnsigned Code = "tag-unsigned"
	// codeCatalogInvariant prefixes a ducklake.Violation code.
	codeCatalogInvariant Code = "catalog-"
)

// verifyState is what the retention-aware checks of Verify share.
type verifyState struct {
	retired map[version.ID]bool
	floor   *retention.Floor
	markers map[version.ID]bool     // versions with a retired.json object
	reached map[version.ID]bool     // every parent of every ref and ref log id
	extra   map[version.ID][]string // keys in a version folder that are not the version's files
	signed  map[version.ID]bool     // versions with a version.json.sig object
	dp      *retention.DataPlanner
	tmp     string       // a folder for fetched catalogs (scratch.New)
	rmTmp   func() error // removes tmp
	// With --data: the normaliser, and what the catalogs in retention
	// record of each file they can read at or after their floors, by key.
	norm   *retention.Normaliser
	expect map[string][]expectedFile
}

// verifyRetention starts the retention side of Verify: the policy, the
// floor and the ref logs parse; it returns what the later checks need.
func (r *Repo) verifyRetention(ctx context.Context, o VerifyOptions, add func(code Code, obj, format string, a ...any)) (*verifyState, error) {
	vs := &verifyState{retired: map[version.ID]bool{}, markers: map[version.ID]bool{}, reached: map[version.ID]bool{}, extra: map[version.ID][]string{}, signed: map[version.ID]bool{}}
	if _, _, err := r.Policy(ctx); err != nil {
		if !errors.Is(err, retention.ErrInvalid) {
			return nil, err
		}
		add(CodePolicyInvalid, retention.PolicyKey, "%v", err)
	}
	f, _, err := r.Floor(ctx)
	if err != nil {
		if !errors.Is(err, retention.ErrInvalid) {
			return nil, err
		}
		add(CodeFloorInvalid, retention.FloorKey, "%v", err)
	}
	vs.floor = f
	for _, rt := range f.RetiredList() {
		vs.retired[rt.ID] = true
	}
	err = r.st.List(ctx, VersionsPrefix, func(oi store.ObjectInfo) error {
		id, file, ok := SplitVersionKey(oi.Key)
		switch {
		case !ok:
		case file == retention.MarkerFile:
			vs.markers[id] = true
			vs.retired[id] = true
		case file == version.SignatureFile:
			vs.signed[id] = true
		case !versionFiles[file]:
			vs.extra[id] = append(vs.extra[id], oi.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	if err := r.verifyReach(ctx, vs, add); err != nil {
		return nil, err
	}
	if o.Data {
		norm, err := r.Normaliser()
		if err != nil {
			return nil, err
		}
		vs.dp = retention.NewDataPlanner(norm)
		vs.norm, vs.expect = norm, map[string][]expectedFile{}
	}
	if !o.SkipCatalogs {
		if vs.tmp, vs.rmTmp, err = scratch.New(scratch.Verify); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// verifyReach checks that the ref log entries parse and that no ref points
// at a retired version, and fills vs.reached with every version a ref or a
// ref log entry reaches through parents.
func (r *Repo) verifyReach(ctx context.Context, vs *verifyState, add func(code Code, obj, format string, a ...any)) error {
	entries, bad, err := r.RefLog(ctx, "")
	if err != nil {
		return err
	}
	for _, e := range bad {
		key := ""
		if be := (*refs.BadLogError)(nil); errors.As(e, &be) {
			key = be.Key
		}
		add(CodeReflogInvalid, key, "%v", e)
	}
	good, _, err := r.refs.List(ctx, "refs/")
	if err != nil {
		return err
	}
	var starts []version.ID
	for _, ref := range good {
		starts = append(starts, ref.ID)
		if vs.retired[ref.ID] {
			add(CodeRefRetired, string(ref.Name), "%s points at version %s, which is out of retention: readers cannot check it out", ref.Name, ref.ID)
		}
	}
	for _, e := range entries {
		for _, id := range []version.ID{e.Old, e.New} {
			if id != "" {
				starts = append(starts, id)
			}
		}
	}
	for len(starts) > 0 {
		id := starts[len(starts)-1]
		starts = starts[:len(starts)-1]
		if vs.reached[id] {
			continue
		}
		vs.reached[id] = true
		if rec, err := r.Record(ctx, id); err == nil {
			starts = append(starts, rec.Parents...)
		}
	}
	return nil
}

func (vs *verifyState) close() {
	if vs != nil && vs.rmTmp != nil {
		vs.rmTmp()
	}
}

// SplitVersionKey splits a key of a version folder, "versions/<id>/<file>"
// (docs/spec.md §1; VersionKey's inverse), into the id as written and the
// file's name (which may hold further slashes); false for a key outside
// versions/ or with no id. The id is not checked: version.ParseID does.
func SplitVersionKey(key string) (version.ID, string, bool) {
	rest, ok := strings.CutPrefix(key, VersionsPrefix)
	if !ok {
		return "", "", false
	}
	id, file, ok := strings.Cut(rest, "/")
	return version.ID(id), file, ok && id != ""
}

// verifyRetired checks a version out of retention: a marked one has a
// marker that parses and neither catalog nor dataset.json; one only the
// floor retires may still have them, but not lack its catalog without a
// marker.
func (r *Repo) verifyRetired(ctx context.Context, vs *verifyState, id version.ID, add func(code Code, obj, format string, a ...any)) error {
	has := func(file string) (bool, error) {
		_, err := r.st.Stat(ctx, VersionKey(id, file))
		if errors.Is(err, store.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	cat, err := has(version.CatalogFile)
	if err != nil {
		return err
	}
	ds, err := has(version.DatasetFile)
	if err != nil {
		return err
	}
	if !vs.markers[id] {
		if !cat {
			add(CodeRetiredNoMarker, string(id), "the floor takes version %s out of retention and its catalog is gone, but it has no %s", id, retention.MarkerFile)
		}
		return nil
	}
	if _, err := r.Marker(ctx, id); err != nil {
		if !errors.Is(err, retention.ErrInvalid) {
			return err
		}
		add(CodeMarkerInvalid, string(id), "%v", err)
	}
	if cat || ds {
		add(CodeRetiredCatalog, string(id), "version %s is retired (it has %s) but its catalog or dataset.json is still there: a gc stopped half way", id, retention.MarkerFile)
	}
	return nil
}

// verifyCatalog fetches a version's catalog (checking its size and sha256),
// checks the DuckLake catalog invariants inside it (docs/spec.md §5.1; a gap in
// snapshot ids goes to note, not add), that its last snapshot is the one
// its record names and that it still holds its first parent's last snapshot
// (docs/spec.md §10.6) and, with --data, records the data files it can read at
// or after its floor.
func (r *Repo) verifyCatalog(ctx context.Context, vs *verifyState, rec *version.Record, add, note func(code Code, obj, format string, a ...any)) error {
	dst := filepath.Join(vs.tmp, string(rec.ID)+".duckdb")
	if err := r.FetchCatalog(ctx, rec, dst); err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		code := CodeCatalogUnreadable
		if errors.Is(err, ErrChecksum) {
			code = CodeChecksumMismatch
		}
		add(code, string(rec.ID), "%v", err)
		return nil
	}
	defer os.Remove(dst)
	c, err := ducklake.Open(ctx, dst)
	if err != nil {
		add(CodeCatalogUnreadable, string(rec.ID), "%v", err)
		return nil
	}
	defer c.Close()
	vio, err := c.CheckInvariants(ctx)
	if err != nil {
		add(CodeCatalogUnreadable, string(rec.ID), "%v", err)
		return nil
	}
	for _, v := range vio {
		if v.Note {
			note(codeCatalogInvariant+Code(v.Code), string(rec.ID), "version %s: %s", rec.ID, v.Message)
			continue
		}
		add(codeCatalogInvariant+Code(v.Code), string(rec.ID), "version %s: %s", rec.ID, v.Message)
	}
	if err := r.verifyLineage(ctx, c, rec, add); err != nil {
		add(CodeCatalogUnreadable, string(rec.ID), "%v", err)
		return nil
	}
	onDisk := r.dataOnDisk()
	if onDisk && (vs.dp == nil || !vs.reached[rec.ID]) {
		return nil
	}
	files, err := c.DataFiles(ctx)
	if err != nil {
		add(CodeCatalogUnreadable, string(rec.ID), "%v", err)
		return nil
	}
	if !onDisk {
		if r.opts.AllowLocalData {
			r.verifyReachable(rec, files, note)
		} else {
			r.verifyReachable(rec, files, add)
		}
	}
	if vs.dp == nil || !vs.reached[rec.ID] {
		return nil
	}
	recOf := func(id version.ID) *version.Record {
		x, err := r.Record(ctx, id)
		if err != nil {
			return nil
		}
		return x
	}
	floor := retention.FloorSnapshot(rec.ID, recOf, func(id version.ID) bool { return !vs.retired[id] })
	before := len(vs.dp.Unplaced())
	vs.dp.AddLive(rec.ID, floor, files)
	vs.expectFiles(vs.norm, rec.ID, floor, files)
	for _, u := range vs.dp.Unplaced()[before:] {
		add(CodeDataPathInvalid, string(rec.ID), "%v (and %d more path(s) of the catalog that cannot be placed: no reader can rely on them; gc keeps every file under data/ with one of their names)", u.First, u.Count-1)
	}
	return nil
}

// verifyReachable reports (CodeDataLocalPath) a version of a repository
// that is not a folder of this machine whose data_path, or a data or
// delete file it reads at its snapshot, is a local path: no reader of the
// repository reaches it (fdl push refuses to publish one: LocalDataError).
func (r *Repo) verifyReachable(rec *version.Record, files []ducklake.DataFile, add func(code Code, obj, format string, a ...any)) {
	norm, err := r.Normaliser()
	if err != nil {
		return
	}
	// A local path inside fdl.json's data_path is the repository's own data
	// (readers attach with DATA_PATH at the location they reach it by,
	// OVERRIDE_DATA_PATH true), as when a folder repository is served over
	// HTTP; any other local path is out of readers' reach.
	isLocal := func(p string) bool {
		pl, err := norm.Place(p)
		return err == nil && strings.HasPrefix(pl.Canonical, "/") && pl.Key == ""
	}
	ownDataPath := strings.TrimSuffix(rec.DuckLake.DataPath, "/") == strings.TrimSuffix(r.cfg.DataPath, "/")
	var local []string
	s := rec.DuckLake.Snapshot
	for _, f := range files {
		if f.BeginSnapshot <= s && (f.EndSnapshot == nil || s < *f.EndSnapshot) && isLocal(f.ResolvedPath) {
			local = append(local, f.ResolvedPath)
		}
	}
	if len(local) == 0 && (ownDataPath || !isLocal(rec.DuckLake.DataPath)) {
		return
	}
	shown := local[:min(len(local), 3)]
	add(CodeDataLocalPath, string(rec.ID), "version %s (seq %d) has data_path %q and reads %d data file(s) by a local path %v: readers of %s cannot reach them",
		rec.ID, rec.Seq, rec.DuckLake.DataPath, len(local), shown, r.where)
}

// verifyLineage checks a catalog against its record: its last snapshot is
// rec.DuckLake.Snapshot made at rec.DuckLake.SnapshotTime, and it holds its
// first parent's last snapshot with the parent record's snapshot_time (the
// rule commit enforces, docs/spec.md §10.6; older snapshots may be expired).
func (r *Repo) verifyLineage(ctx context.Context, c *ducklake.Catalog, rec *version.Record, add func(code Code, obj, format string, a ...any)) error {
	snaps, err := c.Snapshots(ctx)
	if err != nil {
		return err
	}
	if len(snaps) == 0 {
		add(CodeCatalogRecord, string(rec.ID), "version %s: the catalog has no snapshot, its record says it is frozen at snapshot %d", rec.ID, rec.DuckLake.Snapshot)
		return nil
	}
	last := snaps[len(snaps)-1]
	if last.ID != rec.DuckLake.Snapshot || !last.Time.Equal(rec.DuckLake.SnapshotTime) {
		add(CodeCatalogRecord, string(rec.ID), "version %s: the catalog's last snapshot is %d made %s, its record says %d made %s",
			rec.ID, last.ID, last.Time.Format(time.RFC3339Nano), rec.DuckLake.Snapshot, rec.DuckLake.SnapshotTime.Format(time.RFC3339Nano))
	}
	if len(rec.Parents) == 0 {
		return nil
	}
	prec, err := r.Record(ctx, rec.Parents[0])
	if err != nil {
		return nil // parent-missing is reported with the records
	}
	for _, s := range snaps {
		if s.ID == prec.DuckLake.Snapshot {
			if !s.Time.Equal(prec.DuckLake.SnapshotTime) {
				add(CodeCatalogTimeline, string(rec.ID), "version %s: its snapshot %d was made %s, but its parent %s (seq %d) ends at snapshot %d made %s: the catalog does not continue its parent's timeline",
					rec.ID, s.ID, s.Time.Format(time.RFC3339Nano), prec.ID, prec.Seq, prec.DuckLake.Snapshot, prec.DuckLake.SnapshotTime.Format(time.RFC3339Nano))
			}
			return nil
		}
	}
	add(CodeCatalogTimeline, string(rec.ID), "version %s: the catalog does not hold snapshot %d, where its parent %s (seq %d) ends: it does not continue its parent's timeline",
		rec.ID, prec.DuckLake.Snapshot, prec.ID, prec.Seq)
	return nil
}

// verifyData lists data/ once and reports every file a catalog in
// retention can read at or after its floor that the store lacks, or whose
// size (and, with o.Deep, Parquet footer) differs from what the catalogs
// record (verifyFiles).
func (r *Repo) verifyData(ctx context.Context, o VerifyOptions, vs *verifyState, rep *VerifyReport, add func(code Code, obj, format string, a ...any)) error {
	var listing []store.ObjectInfo
	if err := r.st.List(ctx, DataPrefix, func(oi store.ObjectInfo) error {
		listing = append(listing, oi)
		return nil
	}); err != nil {
		return fmt.Errorf("list %s: %w", DataPrefix, err)
	}
	vs.dp.Plan(listing, time.Time{}, 0) // only Missing is used
	for _, k := range vs.dp.Missing() {
		add(CodeDataMissing, k, "%s is not in the store, but a catalog in retention can read it (at or after its floor snapshot)", r.st.Location(k))
	}
	for _, d := range vs.dp.Disputed() {
		add(CodeDataPathDisputed, d.Key, "version %s reads %q, which DuckDB reads as %s, outside the repository, while the repository holds it at %s: no DuckDB reader reaches that file by this path", d.Version, d.Path, d.Reads, r.st.Location(d.Key))
	}
	st := vs.dp.Stats()
	rep.DataFiles, rep.DataOutside = st.Needed, st.Outside
	n, err := r.verifyFiles(ctx, vs, listing, o.Deep, add)
	rep.DataFooters = n
	return err
}
