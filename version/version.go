// Package version defines a version's record (version.json) and its dataset
// description (dataset.json), as docs/spec.md lays them out (docs/spec.md §6).
package version

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
)

// RecordFormat is the format number of version.json and dataset.json this
// package writes. A reader refuses a higher number.
const RecordFormat = 1

// Object names inside versions/<id>/ (docs/spec.md §2).
const (
	CatalogFile = "ducklake.duckdb"
	DatasetFile = "dataset.json"
	RecordFile  = "version.json"
	// SignatureFile is the SSH signature of version.json's bytes
	// (docs/spec.md §20), present only for a signed version.
	SignatureFile = "version.json.sig"
)

// ID is a version id: a UUIDv7 in canonical lower-case form
// ("0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f"). Ids sort by creation time.
type ID string

// ErrInvalidID: a string is not a canonical UUIDv7.
var ErrInvalidID = errors.New("not a version id (UUIDv7)")

// NewID returns a fresh UUIDv7 id (RFC 9562 §5.7; millisecond timestamp
// first, so ids sort by creation time and two writers never make the same).
func NewID() (ID, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("make version id: %w", err)
	}
	return ID(u.String()), nil
}

// NewIDAfter returns a fresh UUIDv7 id that sorts after parent, even when
// this machine's clock is behind the one that made parent: its timestamp is
// then parent's millisecond + 1 (RFC 9562 §6.2 allows a monotonic counter in
// place of the clock). docs/spec.md §10.6: ids only grow along a branch.
// Errors: ErrInvalidID for a parent that is not a version id, or whose
// timestamp is the largest a UUIDv7 holds (nothing sorts after it).
func NewIDAfter(parent ID) (ID, error) {
	id, err := NewID()
	if err != nil || parent == "" || id > parent {
		return id, err
	}
	u, err := uuid.Parse(string(id))
	if err != nil {
		return "", err
	}
	p, err := uuid.Parse(string(parent))
	if err != nil {
		return "", fmt.Errorf("parent id %q: %w", parent, ErrInvalidID)
	}
	ms := uint64(p[0])<<40 | uint64(p[1])<<32 | uint64(p[2])<<24 | uint64(p[3])<<16 | uint64(p[4])<<8 | uint64(p[5])
	ms++
	if ms >= 1<<48 {
		// Parent's millisecond is the last a UUIDv7 holds (year 10889):
		// ms+1 would wrap around to 1970 and sort first.
		return "", fmt.Errorf("parent id %q carries the largest timestamp a version id holds, so no id sorts after it: %w", parent, ErrInvalidID)
	}
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return ID(u.String()), nil
}

// ParseID checks that s is a canonical UUIDv7 string and returns it as an ID.
// Errors: ErrInvalidID wrapped with s.
// Canonical means what uuid.UUID.String writes: 36 characters, lower-case
// hex digits with dashes after the 8th, 12th, 16th and 20th, and version
// digit 7 (a listing of versions/ checks thousands of names: no parse, no
// allocation).
func ParseID(s string) (ID, error) {
	if !canonicalV7(s) {
		return "", fmt.Errorf("%q: %w", s, ErrInvalidID)
	}
	return ID(s), nil
}

// canonicalV7 reports whether s is a UUIDv7 in canonical form.
func canonicalV7(s string) bool {
	if len(s) != 36 || s[14] != '7' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// Hex returns the id's 32 hex digits without dashes.
func (id ID) Hex() string {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' || strings.Count(string(id), "-") != 4 {
		return strings.ReplaceAll(string(id), "-", "")
	}
	var b [32]byte
	n := copy(b[:], id[:8])
	n += copy(b[n:], id[9:13])
	n += copy(b[n:], id[14:18])
	n += copy(b[n:], id[19:23])
	copy(b[n:], id[24:])
	return string(b[:])
}

// String returns the canonical form.
func (id ID) String() string { return string(id) }

// Time returns the millisecond timestamp the UUIDv7 carries.
func (id ID) Time() time.Time {
	u, err := uuid.Parse(string(id))
	if err != nil {
		return time.Time{}
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec).UTC()
}

// Catalog describes the frozen catalog file ducklake.duckdb.
type Catalog struct {
	Size   int64  `json:"size"`   // bytes
	SHA256 string `json:"sha256"` // lower-case hex of the file's SHA-256
	// Storage is the DuckDB storage format of the file (header number and the
	// oldest DuckDB release that reads it).
	Storage meta.Storage `json:"storage"`
}

// File describes a small file of the version (dataset.json).
type File struct {
	Size   int64  `json:"size"`   // bytes
	SHA256 string `json:"sha256"` // lower-case hex of the file's SHA-256
}

// SnapshotRange is an inclusive range of DuckLake snapshot ids.
type SnapshotRange struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// DuckLake records the catalog's DuckLake side (DuckLake spec:
// ducklake_metadata, ducklake_snapshot).
type DuckLake struct {
	// Format is ducklake_metadata's "version" value, e.g. "0.4".
	Format string `json:"format"`
	// Snapshot is the last snapshot id: the version is frozen at it.
	Snapshot int64 `json:"snapshot"`
	// SnapshotTime is that snapshot's snapshot_time (UTC). With Snapshot it
	// identifies the timeline: a descendant catalog has the same row.
	SnapshotTime time.Time `json:"snapshot_time"`
	// Adds is the range of snapshots this version adds after its first
	// parent (for the first version: all of them, from 0).
	Adds SnapshotRange `json:"adds"`
	// DataPath is ducklake_metadata's "data_path" as stored in the catalog.
	DataPath string `json:"data_path"`
	// MigratedFrom, when set, is the DuckLake format the catalog had before
	// fdl migrated it to Format with the ducklake extension's own migration
	// steps (ducklake.Migrate). A version that migrates its parent's catalog
	// adds no snapshot (nor does the extension's migration): its Adds is the
	// empty range Snapshot+1..Snapshot, and the parent, in the old format,
	// stays for readers of that format. The first version of a lake
	// imported and migrated at checkout carries it too, with its full range.
	MigratedFrom string `json:"migrated_from,omitempty"`
}

// Record is version.json: the record of one version (docs/spec.md §6). It is
// written once, last, and never changed.
type Record struct {
	RecordFormat int       `json:"format"`
	ID           ID        `json:"id"`
	Seq          int64     `json:"seq"`     // first parent's seq + 1; the first version is 1
	Parents      []ID      `json:"parents"` // empty for the first version
	Author       string    `json:"author"`
	Message      string    `json:"message"`
	CreatedAt    time.Time `json:"created_at"` // RFC 3339, UTC
	Catalog      Catalog   `json:"catalog"`
	// Dataset is the size and digest of dataset.json, so that what show
	// prints is as trustworthy as the catalog.
	Dataset  File     `json:"dataset"`
	DuckLake DuckLake `json:"ducklake"`
	// Readers says which DuckDB releases can read the version: open its
	// catalog file (from Catalog.Storage) and attach it READ_ONLY with the
	// ducklake extension (from DuckLake.Format). Records written before
	// fdl recorded it have none; EffectiveReaders derives it for them.
	Readers *meta.Readers `json:"readers,omitempty"`
	// Reverts is the version whose changes this one undoes (fdl revert),
	// Restores the version whose state it brings back (fdl restore); both
	// empty for any other version (docs/spec.md §6).
	Reverts  ID `json:"reverts,omitempty"`
	Restores ID `json:"restores,omitempty"`
}

// NewReaders returns the Readers of a catalog of DuckLake format format in
// a file of storage version st (meta.ReadersOf), for a new record.
func NewReaders(format string, st meta.Storage) *meta.Readers {
	r := meta.ReadersOf(format, st)
	return &r
}

// EffectiveReaders returns the record's Readers, and whether the record
// carries them; a record written before fdl recorded them gets the ones its
// storage version and DuckLake format give (meta.ReadersOf, with what
// this fdl knows).
func (r *Record) EffectiveReaders() (meta.Readers, bool) {
	if r.Readers != nil {
		return *r.Readers, true
	}
	return meta.ReadersOf(r.DuckLake.Format, r.Catalog.Storage), false
}

// AddsNothing reports whether the version adds no snapshot to its first
// parent: a migration of the parent's catalog (DuckLake.MigratedFrom set,
// a parent, and DuckLake.Adds the empty range Snapshot+1..Snapshot).
func (r *Record) AddsNothing() bool {
	a := r.DuckLake.Adds
	return r.DuckLake.MigratedFrom != "" && len(r.Parents) > 0 && a.First == r.DuckLake.Snapshot+1 && a.Last == r.DuckLake.Snapshot
}

// Parent returns the first parent, or "" for the first version.
func (r *Record) Parent() ID {
	if len(r.Parents) == 0 {
		return ""
	}
	return r.Parents[0]
}

// ErrBadRecord: version.json or dataset.json does not parse or breaks a rule.
var ErrBadRecord = errors.New("invalid version record")

// Validate checks the record's own fields (not its parents): id, seq,
// parents, times, digest shape, snapshot range. Errors: ErrBadRecord wrapped
// with what is wrong.
func (r *Record) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("version %s: %s: %w", r.ID, fmt.Sprintf(format, a...), ErrBadRecord)
	}
	if r.RecordFormat < 1 || r.RecordFormat > RecordFormat {
		return bad("record format %d is not one this fdl reads (1..%d): upgrade fdl", r.RecordFormat, RecordFormat)
	}
	if _, err := ParseID(string(r.ID)); err != nil {
		return bad("id: %v", err)
	}
	for _, p := range r.Parents {
		if _, err := ParseID(string(p)); err != nil {
			return bad("parent: %v", err)
		}
	}
	if r.Reverts != "" {
		if _, err := ParseID(string(r.Reverts)); err != nil {
			return bad("reverts: %v", err)
		}
	}
	if r.Restores != "" {
		if _, err := ParseID(string(r.Restores)); err != nil {
			return bad("restores: %v", err)
		}
	}
	if len(r.Parents) == 0 && r.Seq != 1 {
		return bad("seq is %d but a version without parents has seq 1", r.Seq)
	}
	if len(r.Parents) > 0 && r.Seq < 2 {
		return bad("seq is %d but a version with parents has seq >= 2", r.Seq)
	}
	if r.CreatedAt.IsZero() {
		return bad("created_at is missing")
	}
	if r.Catalog.Size <= 0 {
		return bad("catalog size %d", r.Catalog.Size)
	}
	if len(r.Catalog.SHA256) != 64 || strings.Trim(r.Catalog.SHA256, "0123456789abcdef") != "" {
		return bad("catalog sha256 %q is not 64 lower-case hex digits", r.Catalog.SHA256)
	}
	if r.Dataset.Size <= 0 || len(r.Dataset.SHA256) != 64 || strings.Trim(r.Dataset.SHA256, "0123456789abcdef") != "" {
		return bad("dataset size %d / sha256 %q missing or malformed", r.Dataset.Size, r.Dataset.SHA256)
	}
	if r.DuckLake.Format == "" {
		return bad("ducklake.format is missing")
	}
	if rd := r.Readers; rd != nil && (rd.DuckDB == "" || rd.DuckLakeExtension == "" || rd.Attach == "") {
		return bad("readers %+v: duckdb, ducklake_extension and attach must all be set", *rd)
	}
	a := r.DuckLake.Adds
	if a.First < 0 || a.Last != r.DuckLake.Snapshot {
		return bad("ducklake.adds %d..%d does not end at snapshot %d", a.First, a.Last, r.DuckLake.Snapshot)
	}
	if m := r.DuckLake.MigratedFrom; m != "" && m == r.DuckLake.Format {
		return bad("ducklake.migrated_from %q is its own format", m)
	}
	if a.Last < a.First && !r.AddsNothing() {
		return bad("ducklake.adds %d..%d is empty, which only a migration of its parent's catalog may be", a.First, a.Last)
	}
	return nil
}

// LineageProblem is one way a record does not follow its first parent:
// Code is stable (verify reports it as is; docs/cli.md lists the codes),
// Message says what and with which values.
type LineageProblem struct {
	Code    string
	Message string
}

// CheckChild returns the ways child does not follow parent, its first
// parent (docs/spec.md §6): seq is the parent's + 1 (seq-mismatch); the id
// sorts after the parent's (id-order); the snapshots it adds start right
// after the parent's last (snapshot-order); created_at is not before the
// parent's (created-order: commit never makes one, a record edited by hand
// or a version made elsewhere can be). Verify reports them and push
// refuses them, with this one rule. Nil when child follows.
func CheckChild(parent, child *Record) []LineageProblem {
	var out []LineageProblem
	add := func(code, format string, a ...any) {
		out = append(out, LineageProblem{Code: code, Message: fmt.Sprintf(format, a...)})
	}
	p := parent.ID
	if child.Seq != parent.Seq+1 {
		add("seq-mismatch", "seq %d, but its first parent %s has seq %d (want %d)", child.Seq, p, parent.Seq, parent.Seq+1)
	}
	if child.ID <= parent.ID {
		add("id-order", "id does not sort after its first parent %s", p)
	}
	if child.DuckLake.Adds.First != parent.DuckLake.Snapshot+1 {
		add("snapshot-order", "adds snapshots from %d, but its first parent %s ends at snapshot %d", child.DuckLake.Adds.First, p, parent.DuckLake.Snapshot)
	}
	if child.CreatedAt.Before(parent.CreatedAt) {
		add("created-order", "created_at %s is before its first parent %s's %s", child.CreatedAt.UTC().Format(time.RFC3339Nano), p, parent.CreatedAt.UTC().Format(time.RFC3339Nano))
	}
	return out
}

// Marshal encodes the record as indented JSON with a trailing newline;
// "<", ">" and "&" are written as they are (readers: ">= 1.5.0"), not as
// \u escapes.
func (r *Record) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParseRecord decodes and validates version.json. want, if not empty, is the
// id the record must carry (the folder it was read from). The JSON is read
// as RFC 8259 strictly says (github.com/go-json-experiment/json, the
// encoding/json v2 design, about twice as fast as encoding/json: a log of
// 10,000 versions parses 10,000 records): member names match exactly, a
// repeated name or invalid UTF-8 makes the record invalid, unknown members
// are ignored. Errors: ErrBadRecord.
func ParseRecord(b []byte, want ID) (*Record, error) {
	var r Record
	if err := jsonv2.Unmarshal(b, &r); err != nil {
		name := string(want)
		if name == "" {
			name = "(unknown)"
		}
		return nil, fmt.Errorf("version %s: version.json does not parse: %v: %w", name, err, ErrBadRecord)
	}
	if want != "" && r.ID != want {
		return nil, fmt.Errorf("version %s: version.json carries id %q: %w", want, r.ID, ErrBadRecord)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Dataset is dataset.json: what a version holds at its frozen snapshot.
type Dataset struct {
	RecordFormat int    `json:"format"`
	Version      ID     `json:"version"`
	Snapshot     int64  `json:"snapshot"`
	DuckLake     string `json:"ducklake_format"`
	DataPath     string `json:"data_path"`
	// License is free text (an SPDX id or a URL); empty when not set.
	License string        `json:"license,omitempty"`
	Totals  Totals        `json:"totals"`
	Schemas []meta.Schema `json:"schemas"`
	// History is the digest of the catalog's metadata rows visible at
	// Snapshot (docs/spec.md §24): what the version published, which a
	// later commit and push compare with the new catalog read at Snapshot.
	// Absent in versions made before fdl recorded it (their children are
	// checked by row counts only).
	History *meta.RowDigests `json:"history,omitempty"`
	// BaseHistory is the digest of this version's catalog at its first
	// parent's snapshot, taken at commit, so that a push compares it with
	// the parent's History without reading the catalog. Absent in first
	// versions and in versions made before fdl recorded it.
	BaseHistory *meta.RowDigests `json:"base_history,omitempty"`
}

// Totals sums the dataset's tables.
type Totals struct {
	Schemas   int   `json:"schemas"`
	Tables    int   `json:"tables"`
	Views     int   `json:"views"`
	Rows      int64 `json:"rows"`
	DataFiles int64 `json:"data_files"`
	DataBytes int64 `json:"data_bytes"` // bytes
	// ScheduledFiles counts the rows of the catalog's
	// ducklake_files_scheduled_for_deletion: files DuckLake's maintenance
	// superseded, which versions before still read. A commit compares it
	// with its working catalog to tell that no DuckLake cleanup deleted
	// them (docs/spec.md §9). Absent in versions made before it was
	// recorded.
	ScheduledFiles *int64 `json:"scheduled_files,omitempty"`
	// KnownFiles counts the data and delete files the catalog lists
	// (ended rows too) or schedules for deletion: rows of
	// ducklake_data_file, ducklake_delete_file and
	// ducklake_files_scheduled_for_deletion. A commit compares it with its
	// working catalog's count at this version's snapshot: fewer means a
	// DuckLake cleanup deleted files that older versions read by time
	// travel (docs/spec.md §9). Absent in versions made before it was
	// recorded (their children are checked against their catalog).
	KnownFiles *int64 `json:"known_files,omitempty"`
}

// NewDataset builds dataset.json from a catalog state.
func NewDataset(id ID, format, dataPath string, st *meta.State) *Dataset {
	d := &Dataset{RecordFormat: RecordFormat, Version: id, Snapshot: st.Snapshot, DuckLake: format, DataPath: dataPath, Schemas: st.Schemas}
	if d.Schemas == nil {
		d.Schemas = []meta.Schema{}
	}
	for _, s := range st.Schemas {
		d.Totals.Schemas++
		d.Totals.Views += len(s.Views)
		for _, t := range s.Tables {
			d.Totals.Tables++
			d.Totals.Rows += t.RowCount
			d.Totals.DataFiles += t.DataFiles
			d.Totals.DataBytes += t.DataBytes
		}
	}
	return d
}

// Marshal encodes the dataset as indented JSON with a trailing newline.
func (d *Dataset) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseDataset decodes dataset.json. want, if not empty, is the version
// it must describe. A format other than 1..RecordFormat is refused: a
// higher one is a newer fdl's (docs/spec.md §7), a missing one (0) is not
// a dataset.json fdl wrote. Errors: ErrBadRecord.
func ParseDataset(b []byte, want ID) (*Dataset, error) {
	name := string(want)
	if name == "" {
		name = "(unknown)"
	}
	var d Dataset
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("version %s: dataset.json does not parse: %v: %w", name, err, ErrBadRecord)
	}
	switch {
	case d.RecordFormat > RecordFormat:
		return nil, fmt.Errorf("version %s: dataset.json has format %d, which this fdl does not read (1..%d): upgrade fdl: %w", name, d.RecordFormat, RecordFormat, ErrBadRecord)
	case d.RecordFormat < 1:
		return nil, fmt.Errorf("version %s: dataset.json has format %d (missing or not a number from 1): %w", name, d.RecordFormat, ErrBadRecord)
	}
	if want != "" && d.Version != want {
		return nil, fmt.Errorf("version %s: dataset.json carries version %q: %w", want, d.Version, ErrBadRecord)
	}
	return &d, nil
}

// FirstLine returns s up to its first line break: a message's subject, as
// Git's one-line forms show it.
func FirstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}
