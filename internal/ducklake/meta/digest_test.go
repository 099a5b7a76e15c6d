package meta

import "testing"

// TestCompareDigests: the first difference in table-name and table-id
// order is named; file-bound rows of respread tables are not compared,
// other tables' rows of those ids are; empty parts agree however written;
// digests of other hash functions, snapshots or formats are not
// comparable.
func TestCompareDigests(t *testing.T) {
	t.Parallel()
	part := func(n int64, s string) Part { return Part{Rows: n, Sum: s} }
	published := &RowDigests{Encoding: DigestEncoding, HashCheck: "1", Snapshot: 5, Format: "1.0", Tables: map[string]TableDigest{
		"ducklake_column":    {Part: part(3, "0a"), ByTable: map[string]Part{"1": part(2, "08"), "2": part(1, "02")}},
		"ducklake_data_file": {Part: part(3, "0c"), ByTable: map[string]Part{"1": part(2, "04"), "2": part(1, "08")}},
		"ducklake_snapshot":  {Part: part(1, "ff")},
		"ducklake_view":      {Part: part(0, "")},
	}}
	clone := func(edit func(d *RowDigests)) *RowDigests {
		d := &RowDigests{Encoding: published.Encoding, HashCheck: "1", Snapshot: 5, Format: "1.0", Tables: map[string]TableDigest{}}
		for k, v := range published.Tables {
			by := map[string]Part{}
			for g, p := range v.ByTable {
				by[g] = p
			}
			if v.ByTable == nil {
				by = nil
			}
			d.Tables[k] = TableDigest{Part: v.Part, ByTable: by}
		}
		edit(d)
		return d
	}
	for _, c := range []struct {
		name  string
		later *RowDigests
		table string
		id    int64
	}{
		{"same", clone(func(*RowDigests) {}), "", 0},
		{"empty-written-otherwise", clone(func(d *RowDigests) { d.Tables["ducklake_view"] = TableDigest{Part: part(0, "0000000000000000")} }), "", 0},
		{"file-row-changed", clone(func(d *RowDigests) { d.Tables["ducklake_data_file"].ByTable["2"] = part(1, "09") }), "ducklake_data_file", 2},
		{"respread-file-rows-skipped", clone(func(d *RowDigests) {
			d.Tables["ducklake_data_file"].ByTable["2"] = part(5, "09")
			d.Respread = []int64{2}
		}), "", 0},
		{"respread-columns-compared", clone(func(d *RowDigests) {
			d.Tables["ducklake_column"].ByTable["2"] = part(1, "03")
			d.Respread = []int64{2}
		}), "ducklake_column", 2},
		{"group-gone", clone(func(d *RowDigests) { delete(d.Tables["ducklake_column"].ByTable, "1") }), "ducklake_column", 1},
		{"whole-table", clone(func(d *RowDigests) { d.Tables["ducklake_snapshot"] = TableDigest{Part: part(1, "fe")} }), "ducklake_snapshot", -1},
		{"table-added", clone(func(d *RowDigests) { d.Tables["ducklake_tag"] = TableDigest{Part: part(1, "01")} }), "ducklake_tag", -1},
	} {
		ch := CompareDigests(published, c.later)
		switch {
		case c.table == "" && ch != nil:
			t.Errorf("%s: %s; want no difference", c.name, ch)
		case c.table != "" && (ch == nil || ch.Table != c.table || ch.TableID != c.id):
			t.Errorf("%s: %v; want %s id %d", c.name, ch, c.table, c.id)
		}
	}
	for _, edit := range []func(d *RowDigests){
		func(d *RowDigests) { d.HashCheck = "2" }, func(d *RowDigests) { d.Snapshot = 6 }, func(d *RowDigests) { d.Format = "1.1" },
	} {
		if Comparable(published, clone(edit)) {
			t.Errorf("comparable after %+v", clone(edit))
		}
	}
	if got := AddParts(part(1, "ffffffffffffffff"), part(2, "0000000000000002")); got != part(3, "0000000000000001") {
		t.Errorf("AddParts wraps to %+v; want 3 rows, sum 1", got)
	}
}
