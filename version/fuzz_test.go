package version

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
)

// The fuzz targets of this package. Run one with
//
//	go test -run '^$' -fuzz '^FuzzParseRecord$' -fuzztime 60s ./version
//
// (make fuzz runs them all); a plain go test runs their seeds and the
// crashers kept under testdata/fuzz.

const (
	seedID     = ID("0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f")
	seedParent = ID("0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6e")
)

// seedRecords are version.json files as fdl writes them: a first version,
// a child with readers, a migrated version, a revert, and text the
// encoders escape.
func seedRecords(f *testing.F) [][]byte {
	f.Helper()
	sum := strings.Repeat("ab", 32)
	first := &Record{RecordFormat: 1, ID: seedParent, Seq: 1, Parents: []ID{}, Author: "ann", Message: "first",
		CreatedAt: time.Date(2026, 11, 29, 22, 44, 6, 123e6, time.UTC),
		Catalog:   Catalog{Size: 1 << 20, SHA256: sum, Storage: meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}},
		Dataset:   File{Size: 812, SHA256: strings.Repeat("cd", 32)},
		DuckLake: DuckLake{Format: "1.0", Snapshot: 3, SnapshotTime: time.Date(2026, 11, 29, 22, 44, 5, 123456e3, time.UTC),
			Adds: SnapshotRange{First: 0, Last: 3}, DataPath: "s3://bucket/repo/data/"}}
	child := *first
	child.ID, child.Seq, child.Parents = seedID, 2, []ID{seedParent}
	child.Message = "line 1\n\"quoted\" <html> & é \u2028 😀"
	child.DuckLake.Adds, child.DuckLake.Snapshot = SnapshotRange{First: 4, Last: 9}, 9
	child.Readers = NewReaders("1.0", child.Catalog.Storage)
	migrated := child
	migrated.DuckLake.Format, migrated.DuckLake.MigratedFrom = "1.0", "0.4"
	migrated.DuckLake.Adds, migrated.DuckLake.Snapshot = SnapshotRange{First: 4, Last: 3}, 3
	revert := child
	revert.Reverts, revert.Restores = seedParent, seedParent
	var out [][]byte
	for _, r := range []*Record{first, &child, &migrated, &revert} {
		b, err := r.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzParseRecord: ParseRecord never panics, and what it accepts
//   - is strict RFC 8259 text (docs/spec.md: no name given twice, valid
//     UTF-8, no lone surrogate), checked by an independent parser;
//   - took every field from a member of exactly that name (case counts):
//     a field whose name the text lacks is zero;
//   - passes Validate, and carries want when want is given;
//   - marshals to bytes that parse to the same record and marshal to the
//     same bytes again (a round trip, with the same times and offsets).
func FuzzParseRecord(f *testing.F) {
	for _, b := range seedRecords(f) {
		f.Add(b, true)
		f.Add(b, false)
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			f.Fatal(err)
		}
		f.Add(c.Bytes(), false)
	}
	good := seedRecords(f)[1]
	for _, bad := range [][]byte{
		bytes.Replace(good, []byte(`"seq": 2,`), []byte(`"seq": 2, "seq": 3,`), 1),          // a name twice
		bytes.Replace(good, []byte(`"id":`), []byte(`"ID":`), 1),                            // case
		bytes.Replace(good, []byte(`"reverts"`), []byte(`"Reverts"`), 1),                    // case, optional field
		bytes.Replace(good, []byte(`"author": "ann"`), []byte("\"author\": \"a\xffn\""), 1), // invalid UTF-8
		bytes.Replace(good, []byte(`"author": "ann"`), []byte(`"author": "\ud800"`), 1),     // a lone surrogate
		bytes.Replace(good, []byte(`"author": "ann"`), []byte(`"author": "\ud83d\ude00"`), 1),
		bytes.Replace(good, []byte(`"created_at": "2026-11-29T22:44:06.123Z"`), []byte(`"created_at": "2026-11-30T01:44:06.123+03:00"`), 1),
		bytes.Replace(good, []byte(`"parents": [`), []byte(`"parents": null, "x": [`), 1),
		[]byte(`{}`), []byte(`null`), []byte(``), []byte(`{"format":1,"id":"` + string(seedID) + `"}`),
	} {
		f.Add(bad, false)
	}
	f.Fuzz(func(t *testing.T, b []byte, withWant bool) {
		var want ID
		if withWant {
			want = seedID
		}
		r, err := ParseRecord(b, want)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		tree, jerr := strictJSON(b)
		if jerr != nil {
			t.Fatalf("accepted a record that is not strict RFC 8259 JSON (%v):\n%q", jerr, b)
		}
		if tree.kind != '{' {
			t.Fatalf("accepted a record that is not an object: %q", b)
		}
		exactNames(t, reflect.ValueOf(*r), tree, "")
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted a record that fails Validate: %v", err)
		}
		if want != "" && r.ID != want {
			t.Fatalf("accepted id %s, want %s", r.ID, want)
		}
		if want == "" {
			if _, err := ParseRecord(b, r.ID); err != nil {
				t.Fatalf("parses without want but not with its own id: %v", err)
			}
		}
		m, err := r.Marshal()
		if err != nil {
			t.Fatalf("accepted record does not marshal: %v", err)
		}
		r2, err := ParseRecord(m, r.ID)
		if err != nil {
			t.Fatalf("marshalled record does not parse: %v\n%s", err, m)
		}
		m2, err := r2.Marshal()
		if err != nil || !bytes.Equal(m, m2) {
			t.Fatalf("round trip changed the record (%v):\n%s\n%s", err, m, m2)
		}
		if !r2.CreatedAt.Equal(r.CreatedAt) || !r2.DuckLake.SnapshotTime.Equal(r.DuckLake.SnapshotTime) {
			t.Fatalf("round trip changed a time: %v %v -> %v %v", r.CreatedAt, r.DuckLake.SnapshotTime, r2.CreatedAt, r2.DuckLake.SnapshotTime)
		}
		a, b2 := *r, *r2
		a.CreatedAt, b2.CreatedAt = time.Time{}, time.Time{}
		a.DuckLake.SnapshotTime, b2.DuckLake.SnapshotTime = time.Time{}, time.Time{}
		if !reflect.DeepEqual(a, b2) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", a, b2)
		}
	})
}

// exactNames checks that each field of v (a struct decoded from the
// object n) that n has no member of exactly its JSON name for is zero:
// the decoder matched no other spelling. It descends into struct fields
// and pointers to structs, time.Time aside.
func exactNames(t *testing.T, v reflect.Value, n *jnode, path string) {
	t.Helper()
	ty := v.Type()
	for i := 0; i < ty.NumField(); i++ {
		sf := ty.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" || !sf.IsExported() {
			continue
		}
		fv := v.Field(i)
		child, ok := n.obj[name]
		if !ok {
			if !fv.IsZero() {
				t.Fatalf("field %s%s is set (%v) but the text has no member named exactly %q", path, name, fv.Interface(), name)
			}
			continue
		}
		if fv.Kind() == reflect.Pointer && !fv.IsNil() {
			fv = fv.Elem()
		}
		if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(time.Time{}) && child.kind == '{' {
			exactNames(t, fv, child, path+name+".")
		}
	}
}

// FuzzParseDataset: ParseDataset never panics; what it accepts has a
// format this package reads (RecordFormat: "a reader refuses a higher
// number"), carries want when given, and marshals to bytes that parse and
// marshal to the same bytes again.
func FuzzParseDataset(f *testing.F) {
	st := &meta.State{Snapshot: 9, Schemas: []meta.Schema{{ID: 0, Name: "main",
		Tables: []meta.Table{{ID: 1, Name: "t", RowCount: 10, DataFiles: 2, DataBytes: 4096, DeleteFiles: 1,
			Columns: []meta.Column{{ID: 1, Name: "a", Type: "int64", Nullable: true},
				{ID: 2, Name: "s", Type: "struct", Children: []meta.Column{{ID: 3, Name: "x", Type: "varchar"}}}}}},
		Views: []meta.View{{ID: 4, Name: "v", Dialect: "duckdb", SQL: "SELECT a FROM t WHERE a < 3 & 1"}}}}}
	d := NewDataset(seedID, "1.0", "s3://bucket/repo/data/", st)
	d.License = "CC-BY-4.0"
	n := int64(3)
	d.Totals.ScheduledFiles = &n
	b, err := d.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, true)
	f.Add(b, false)
	empty, err := NewDataset(seedID, "0.4", "/abs/data/", &meta.State{}).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(empty, false)
	f.Fuzz(func(t *testing.T, b []byte, withWant bool) {
		var want ID
		if withWant {
			want = seedID
		}
		d, err := ParseDataset(b, want)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if d.RecordFormat < 1 || d.RecordFormat > RecordFormat {
			t.Fatalf("accepted dataset.json of format %d (this package reads 1..%d)", d.RecordFormat, RecordFormat)
		}
		if want != "" && d.Version != want {
			t.Fatalf("accepted version %q, want %s", d.Version, want)
		}
		m, err := d.Marshal()
		if err != nil {
			t.Fatalf("accepted dataset does not marshal: %v", err)
		}
		d2, err := ParseDataset(m, d.Version)
		if err != nil {
			t.Fatalf("marshalled dataset does not parse: %v\n%s", err, m)
		}
		if m2, err := d2.Marshal(); err != nil || !bytes.Equal(m, m2) {
			t.Fatalf("round trip changed the dataset (%v):\n%s\n%s", err, m, m2)
		}
	})
}

// FuzzParseID: ParseID accepts exactly what uuid.Parse reads as a version
// 7 UUID and writes back unchanged; Hex drops the dashes; Time is the
// UUID's; NewIDAfter an accepted id gives an id that is valid and sorts
// after it (docs/spec.md §3: ids only grow along a branch), or an error.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{string(seedID), "01a23301-4fe6-76f6-864a-5014eb7cdc2c", "01A23301-4FE6-76F6-864A-5014EB7CDC2C",
		"6ba7b810-9dad-11d1-80b4-00c04fd430c8", "{01a23301-4fe6-76f6-864a-5014eb7cdc2c}", "01a233014fe676f6864a5014eb7cdc2c",
		"00000000-0000-7000-8000-000000000000", "ffffffff-ffff-7fff-bfff-ffffffffffff", "fffffffffffe-7fff", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		u, uerr := uuid.Parse(s)
		want := uerr == nil && u.Version() == 7 && u.String() == s
		if (err == nil) != want {
			t.Fatalf("ParseID(%q) = %v; uuid.Parse reads it as a canonical UUIDv7: %v", s, err, want)
		}
		if h := ID(s).Hex(); h != strings.ReplaceAll(s, "-", "") {
			t.Fatalf("Hex(%q) = %q", s, h)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("error %v does not wrap ErrInvalidID", err)
			}
			return
		}
		sec, nsec := u.Time().UnixTime()
		if got := id.Time(); !got.Equal(time.Unix(sec, nsec)) {
			t.Fatalf("Time(%s) = %v, want %v", id, got, time.Unix(sec, nsec))
		}
		next, err := NewIDAfter(id)
		if err != nil {
			return
		}
		if _, perr := ParseID(string(next)); perr != nil || next <= id {
			t.Fatalf("NewIDAfter(%s) = %s (%v): not a valid id that sorts after it", id, next, perr)
		}
	})
}
