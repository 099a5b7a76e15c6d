package version

import (
	"errors"
	"testing"
)

// A migrated version adds no snapshot: its adds range is empty
// (snapshot+1..snapshot), allowed only with migrated_from and a parent.
func TestMigratedRecordRules(t *testing.T) {
	parent, _ := NewID()
	migrated := func(t *testing.T) *Record {
		r := validRecord(t)
		r.Seq, r.Parents = 2, []ID{parent}
		r.DuckLake.Format, r.DuckLake.MigratedFrom = "1.0", "0.2"
		r.DuckLake.Adds = SnapshotRange{First: 4, Last: 3}
		return r
	}
	r := migrated(t)
	if err := r.Validate(); err != nil {
		t.Fatalf("a migrated version: %v", err)
	}
	if !r.AddsNothing() {
		t.Fatal("AddsNothing is false for a migration")
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRecord(b, r.ID)
	if err != nil || got.DuckLake.MigratedFrom != "0.2" || !got.AddsNothing() {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	// The first version of an imported, migrated lake: full range.
	first := validRecord(t)
	first.DuckLake.Format, first.DuckLake.MigratedFrom = "1.0", "0.3"
	if err := first.Validate(); err != nil || first.AddsNothing() {
		t.Fatalf("first migrated version: %v, adds nothing %v", err, first.AddsNothing())
	}
	breakers := map[string]func(*Record){
		"empty range without migrated_from": func(r *Record) { r.DuckLake.MigratedFrom = "" },
		"empty range without a parent":      func(r *Record) { r.Seq, r.Parents = 1, []ID{} },
		"migrated from its own format":      func(r *Record) { r.DuckLake.MigratedFrom = "1.0" },
		"range ending before the snapshot":  func(r *Record) { r.DuckLake.Adds = SnapshotRange{First: 3, Last: 2} },
	}
	for name, f := range breakers {
		r := migrated(t)
		f(r)
		if err := r.Validate(); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}
