package repo

import (
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/version"
)

// TestFormatUpgradeByReaders: a push is a format upgrade only when readers
// of the branch's head lose it — a newer DuckLake format, or a storage
// version that needs a newer DuckDB than the format already does.
func TestFormatUpgradeByReaders(t *testing.T) {
	rec := func(format string, n uint64, min string) *version.Record {
		r := &version.Record{ID: "v"}
		r.DuckLake.Format = format
		r.Catalog.Storage = meta.Storage{Number: n, MinDuckDB: min}
		return r
	}
	cases := []struct {
		name      string
		cur, next *version.Record
		upgrade   bool
	}{
		// fdl migrate writes storage 64; DuckDB 1.5.5's ducklake
		// extension moves the working catalog to 65 on its first write.
		{"1.0 storage 64 to 65", rec("1.0", 64, "v0.10.0"), rec("1.0", 65, "v1.2.0"), false},
		{"1.0 storage 64 to 68", rec("1.0", 64, "v0.10.0"), rec("1.0", 68, "v1.5.0"), false},
		{"1.0 storage 68 to 999", rec("1.0", 68, "v1.5.0"), rec("1.0", 999, "v2.0.0"), true},
		{"0.3 storage 64 to 67", rec("0.3", 64, "v0.10.0"), rec("0.3", 67, "v1.4.0"), false},
		{"0.3 storage 64 to 68", rec("0.3", 64, "v0.10.0"), rec("0.3", 68, "v1.5.0"), true},
		{"format 0.4 to 1.0", rec("0.4", 68, "v1.5.0"), rec("1.0", 68, "v1.5.0"), true},
		{"same", rec("1.0", 68, "v1.5.0"), rec("1.0", 68, "v1.5.0"), false},
		{"storage down", rec("1.0", 68, "v1.5.0"), rec("1.0", 64, "v0.10.0"), false},
	}
	// Any change of the releases that attach the branch is one, down as
	// well as up (not an upgrade).
	for _, c := range []struct {
		name      string
		cur, next *version.Record
	}{
		{"1.0 to 0.4-dev1 (no release reads it)", rec("1.0", 68, "v1.5.0"), rec("0.4-dev1", 68, "v1.5.0")},
		{"1.0 to 0.4", rec("1.0", 68, "v1.5.0"), rec("0.4", 68, "v1.5.0")},
		{"1.0 to an unknown format", rec("1.0", 68, "v1.5.0"), rec("9.9", 68, "v1.5.0")},
	} {
		ch, err := formatChange(c.cur, c.next)
		if err != nil || ch == nil || ch.Upgrade || ch.From.Readers.Attach == ch.To.Readers.Attach {
			t.Errorf("%s: change %+v, %v; want a change that is no upgrade", c.name, ch, err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch, err := formatChange(c.cur, c.next)
			if err != nil {
				t.Fatal(err)
			}
			if (ch != nil) != c.upgrade {
				t.Fatalf("format upgrade = %v, want %v (change %+v)", ch != nil, c.upgrade, ch)
			}
		})
	}
}
