package version

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/google/uuid"
)

func TestParseID(t *testing.T) {
	id, err := NewID()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseID(string(id)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", "x", strings.ToUpper(string(id)), "6ba7b810-9dad-11d1-80b4-00c04fd430c8"} {
		if _, err := ParseID(s); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseID(%q) = %v", s, err)
		}
	}
	if d := time.Since(id.Time()); d < 0 || d > time.Minute {
		t.Errorf("id time %v", id.Time())
	}
	if len(id.Hex()) != 32 {
		t.Errorf("hex %q", id.Hex())
	}
}

func validRecord(t *testing.T) *Record {
	id, _ := NewID()
	return &Record{RecordFormat: 1, ID: id, Seq: 1, Parents: []ID{}, Author: "a", Message: "m",
		CreatedAt: time.Now().UTC(), Catalog: Catalog{Size: 10, SHA256: strings.Repeat("ab", 32)},
		Dataset:  File{Size: 5, SHA256: strings.Repeat("cd", 32)},
		DuckLake: DuckLake{Format: "0.4", Snapshot: 3, Adds: SnapshotRange{0, 3}}}
}

func TestRecordRoundTripAndRules(t *testing.T) {
	r := validRecord(t)
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRecord(b, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || got.Catalog.SHA256 != r.Catalog.SHA256 || got.DuckLake.Adds != r.DuckLake.Adds {
		t.Fatalf("round trip: %+v", got)
	}
	other, _ := NewID()
	if _, err := ParseRecord(b, other); !errors.Is(err, ErrBadRecord) {
		t.Errorf("wrong folder id: %v", err)
	}
	if _, err := ParseRecord([]byte("{"), r.ID); !errors.Is(err, ErrBadRecord) {
		t.Errorf("garbage: %v", err)
	}
	breakers := map[string]func(*Record){
		"seq without parents": func(r *Record) { r.Seq = 2 },
		"parents with seq 1":  func(r *Record) { r.Parents = []ID{other} },
		"bad sha":             func(r *Record) { r.Catalog.SHA256 = "XYZ" },
		"zero size":           func(r *Record) { r.Catalog.Size = 0 },
		"adds past snapshot":  func(r *Record) { r.DuckLake.Adds.Last = 9 },
		"future format":       func(r *Record) { r.RecordFormat = 99 },
		"no created_at":       func(r *Record) { r.CreatedAt = time.Time{} },
		"no dataset digest":   func(r *Record) { r.Dataset = File{} },
		"empty readers":       func(r *Record) { r.Readers = &meta.Readers{DuckDB: ">= 1.5.0"} },
	}
	for name, f := range breakers {
		r := validRecord(t)
		f(r)
		if err := r.Validate(); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}

func TestNewIDAfterSkewedParent(t *testing.T) {
	// A parent made by a machine whose clock is a year ahead.
	future := ID("01b00000-0000-7000-8000-000000000000")
	id, err := NewIDAfter(future)
	if err != nil {
		t.Fatal(err)
	}
	if id <= future {
		t.Fatalf("NewIDAfter(%s) = %s, does not sort after it", future, id)
	}
	if _, err := ParseID(string(id)); err != nil {
		t.Fatal(err)
	}
	if got, want := id.Time().UnixMilli(), future.Time().UnixMilli()+1; got != want {
		t.Fatalf("timestamp %d, want %d", got, want)
	}
	now, _ := NewIDAfter("")
	if now == "" {
		t.Fatal("no id without a parent")
	}
	// A parent at the last millisecond a UUIDv7 holds: ms+1 wrapped around
	// to 1970, an id sorting before its parent (FuzzParseID's seed).
	for _, last := range []ID{"ffffffff-ffff-7fff-bfff-ffffffffffff", "ffffffff-ffff-7000-8000-000000000000"} {
		if id, err := NewIDAfter(last); !errors.Is(err, ErrInvalidID) {
			t.Errorf("NewIDAfter(%s) = %s, %v; want ErrInvalidID", last, id, err)
		}
	}
	if id, err := NewIDAfter("ffffffff-fffe-7000-8000-000000000000"); err != nil || id <= "ffffffff-fffe-7000-8000-000000000000" {
		t.Errorf("NewIDAfter the last millisecond but one = %s, %v", id, err)
	}
}

// TestRecordReaders: a new record carries its readers; a record written
// before fdl recorded them (no "readers" key) still parses, and its readers
// are derived from its storage version and DuckLake format.
func TestRecordReaders(t *testing.T) {
	r := validRecord(t)
	r.DuckLake.Format = "1.0"
	r.Catalog.Storage = meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}
	old, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(old), "readers") {
		t.Fatalf("a record without readers writes the key: %s", old)
	}
	got, err := ParseRecord(old, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := meta.Readers{DuckDB: ">= 1.5.0", DuckLakeExtension: ">= 1.5.2", Attach: ">= 1.5.2"}
	if rd, recorded := got.EffectiveReaders(); recorded || rd != want {
		t.Errorf("old record: %+v recorded=%v, want %+v derived", rd, recorded, want)
	}
	r.Readers = NewReaders(r.DuckLake.Format, r.Catalog.Storage)
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"readers": {
    "duckdb": ">= 1.5.0",
    "ducklake_extension": ">= 1.5.2",
    "attach": ">= 1.5.2"
  }`) {
		t.Errorf("record JSON:\n%s", b)
	}
	got, err = ParseRecord(b, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rd, recorded := got.EffectiveReaders(); !recorded || rd != want {
		t.Errorf("new record: %+v recorded=%v", rd, recorded)
	}
}

// TestParseIDCanonical: ParseID accepts exactly what uuid.Parse reads as a
// version 7 UUID and writes back unchanged, and Hex drops the dashes.
func TestParseIDCanonical(t *testing.T) {
	valid := "01a23301-4fe6-76f6-864a-5014eb7cdc2c"
	cases := []string{valid, strings.ToUpper(valid), "{" + valid + "}", "urn:uuid:" + valid,
		strings.Replace(valid, "-76f6", "-46f6", 1), strings.ReplaceAll(valid, "-", ""),
		valid[:35], valid + "0", "01a23301-4fe6-76f6-864a5-014eb7cdc2c", "01a23301-4fe6-76f6-864a-5014eb7cdc2g",
		"01a23301x4fe6-76f6-864a-5014eb7cdc2c", "", "01a23301-4fe6-76f6-864a-5014eb7cdc-c"}
	for i := 0; i < 256; i++ {
		b := []byte(valid)
		b[i%36] = byte(i)
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		u, err := uuid.Parse(s)
		want := err == nil && u.Version() == 7 && u.String() == s
		id, err := ParseID(s)
		if got := err == nil; got != want {
			t.Errorf("ParseID(%q) ok = %v, want %v", s, got, want)
		}
		if err == nil && id.Hex() != strings.ReplaceAll(s, "-", "") {
			t.Errorf("Hex(%q) = %q", s, id.Hex())
		}
		if h := ID(s).Hex(); h != strings.ReplaceAll(s, "-", "") {
			t.Errorf("ID(%q).Hex() = %q", s, h)
		}
	}
}

// TestParseDatasetFormat: dataset.json of a format this fdl does not read
// (a newer one, or none: "{}", which FuzzParseDataset found accepted) is
// refused, as version.json's is.
func TestParseDatasetFormat(t *testing.T) {
	id, _ := NewID()
	for _, b := range []string{`{}`, `{"format": 0, "version": "` + string(id) + `"}`, `{"format": 2, "version": "` + string(id) + `"}`, `{"format": -1}`} {
		if d, err := ParseDataset([]byte(b), ""); !errors.Is(err, ErrBadRecord) {
			t.Errorf("ParseDataset(%s) = %+v, %v; want ErrBadRecord", b, d, err)
		}
	}
	b, err := NewDataset(id, "1.0", "/d/", &meta.State{}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ParseDataset(b, id); err != nil || d.RecordFormat != RecordFormat {
		t.Fatalf("a dataset.json fdl writes: %+v, %v", d, err)
	}
}
