package meta

import (
	"errors"
	"testing"
)

func TestCompareReleases(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"v1.5.0", "1.5.0", 0},
		{"1.4.5", "1.5.0", -1},
		{"1.10.0", "1.9.9", 1},
		{"2.0.0", "1.5.6", 1},
		{"1.4.x", "1.4.99", 1},
		{"1.5.0", "1.4.x", 1},
		{"v2.0.1-dev12", "2.0.1", 0},
		{"bogus", "0.0.1", -1},
	} {
		if got := CompareReleases(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareReleases(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareReleases(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareReleases(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestCompareFormats(t *testing.T) {
	for i, a := range formats {
		for j, b := range formats {
			got, err := CompareFormats(a.Name, b.Name)
			if err != nil || got != cmpInt(i, j) {
				t.Errorf("CompareFormats(%s, %s) = %d, %v", a.Name, b.Name, got, err)
			}
		}
	}
	if _, err := CompareFormats("1.0", "9.9"); !errors.Is(err, ErrUnsupportedFormat) {
		t.Errorf("unknown format: %v", err)
	}
}

// TestReadersOf: the readers fdl records for the formats and storage
// versions seen in the wild.
func TestReadersOf(t *testing.T) {
	for _, tc := range []struct {
		format string
		st     Storage
		want   Readers
	}{
		// A version published from a DuckDB 1.5 lake (68) or a lake fdl
		// created (68): DuckDB 1.5.2 and newer attach it, 2.0 included.
		{"1.0", storage68, Readers{">= 1.5.0", ">= 1.5.2", ">= 1.5.2"}},
		// A 1.0 catalog in storage 64 (copied by DuckDB 1.5 into a plain ATTACH, which writes 64).
		{"1.0", storage64, Readers{">= 0.10.0", ">= 1.5.2", ">= 1.5.2"}},
		// A 1.0 catalog DuckDB 2.0 copied into its own storage: 1.5 loses it.
		{"1.0", storage999, Readers{">= 2.0.0", ">= 1.5.2", ">= 2.0.0"}},
		{"1.1", storage999, Readers{">= 2.0.0", ">= 2.0.0", ">= 2.0.0"}},
		{"0.4", storage68, Readers{">= 1.5.0", "1.5.0 - 1.5.1", "1.5.0 - 1.5.1"}},
		{"0.3", storage64, Readers{">= 0.10.0", "1.4.x", "1.4.x"}},
		// 0.3 in storage 68 cannot be attached by any release: 1.4 cannot
		// open the file, 1.5 refuses the format.
		{"0.3", storage68, Readers{">= 1.5.0", "1.4.x", "none"}},
		{"0.2", storage64, Readers{">= 0.10.0", "1.3.1 - 1.3.2", "1.3.1 - 1.3.2"}},
		{"0.1", storage64, Readers{">= 0.10.0", "1.3.0", "1.3.0"}},
		{"0.4-dev1", storage68, Readers{">= 1.5.0", "none", "none"}},
		{"0.3-dev1", storage64, Readers{">= 0.10.0", "none", "none"}},
		{"1.1-dev1", storage999, Readers{">= 2.0.0", "none", "none"}},
		{"9.9", storage68, Readers{">= 1.5.0", "unknown", "unknown"}},
		{"1.0", Storage{Number: 70}, Readers{"unknown", ">= 1.5.2", "unknown"}},
	} {
		if got := ReadersOf(tc.format, tc.st); got != tc.want {
			t.Errorf("ReadersOf(%s, %d) = %+v, want %+v", tc.format, tc.st.Number, got, tc.want)
		}
	}
}

// TestStorageFor: a catalog file fdl writes without a DuckDB source header
// is in the storage the extension of its format wrote, so every DuckDB
// whose extension reads the format opens it.
func TestStorageFor(t *testing.T) {
	for _, f := range Formats() {
		st := StorageFor(f.Name)
		r := ReadersOf(f.Name, st)
		if r.DuckLakeExtension != "none" && r.Attach != r.DuckLakeExtension {
			t.Errorf("format %s in storage %d: attach %q, extension %q", f.Name, st.Number, r.Attach, r.DuckLakeExtension)
		}
	}
	if st := StorageFor("9.9"); st != storage64 {
		t.Errorf("unknown format: %+v", st)
	}
}
