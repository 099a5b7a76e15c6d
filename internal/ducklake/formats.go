package ducklake

import (
	"fmt"
	"slices"
	"strings"
)

// formatInfo is what fdl knows about one DuckLake format string
// (ducklake_metadata key 'version').
type formatInfo struct {
	name string
	// extension: the DuckDB releases whose ducklake extension attaches a
	// catalog of this format READ_ONLY without migrating it (nil: no
	// release; only development builds wrote it).
	extension *ReleaseRange
	// storage: the storage version the extension of that format wrote a
	// DuckDB catalog file in; fdl writes a frozen catalog of a SQLite
	// working catalog in it (storageForFormat).
	storage Storage
	// prefixedInlined: inlined-data tables name their first three columns
	// _ducklake_row_id, _ducklake_begin_snapshot, _ducklake_end_snapshot
	// (DuckLake 1.1; duckdb/ducklake DuckLakeInlinedColNames).
	prefixedInlined bool
}

// formats lists every DuckLake format fdl reads, oldest first. The
// extension ranges come from the duckdb/ducklake release branches
// (src/storage/ducklake_initializer.cpp LoadExistingDuckLake,
// src/common/ducklake_version.cpp) and were checked with DuckDB Labs'
// published builds (PyPI duckdb + duckdb-extension-ducklake of the same
// release; scripts/ducklake-readers.sh): each attaches READ_ONLY only the
// format it writes, and refuses the others (an older one needs a
// migration, which READ_ONLY cannot run; a newer one is unknown to it):
//
//	DuckDB 1.3.2: writes 0.2 (1.3.0 wrote 0.1, MANIFEST.md)
//	DuckDB 1.4.4: writes 0.3
//	DuckDB 1.5.0, 1.5.1: write 0.4, refuse 1.0
//	DuckDB 1.5.2, 1.5.5: write 1.0, refuse 0.4
//
// 0.3-dev1 and 0.4-dev1 appear only in development builds (no published
// build writes them; the v1.3-ossivalis branch gained 0.3-dev1 after
// DuckDB 1.3.2). On main (DuckDB 2.0) the extension writes 1.1 (1.1-dev1
// in development builds) and reads a 1.0 catalog as is
// (ResolveTargetVersion keeps a catalog's version when it is 1.0 or newer);
// older formats need AUTOMATIC_MIGRATION there too. No DuckDB 2.0 build is
// published on PyPI, so the 2.0 lines rest on the source alone.
//
// A range that is open at the top (">= 1.5.2") assumes that later releases
// go on reading the format, as DuckDB 2.0 does for 1.0.
var formats = []formatInfo{
	{name: "0.1", extension: &ReleaseRange{Min: "1.3.0", Max: "1.3.0"}, storage: storageDuckDB10},
	{name: "0.2", extension: &ReleaseRange{Min: "1.3.1", Max: "1.3.2"}, storage: storageDuckDB10},
	{name: "0.3-dev1", storage: storageDuckDB10},
	{name: "0.3", extension: &ReleaseRange{Min: "1.4.0", Max: "1.4.x"}, storage: storageDuckDB10},
	{name: "0.4-dev1", storage: storageDuckDB15},
	{name: "0.4", extension: &ReleaseRange{Min: "1.5.0", Max: "1.5.1"}, storage: storageDuckDB15},
	{name: "1.0", extension: &ReleaseRange{Min: "1.5.2"}, storage: storageDuckDB15},
	{name: "1.1-dev1", storage: storageDuckDB20, prefixedInlined: true},
	{name: "1.1", extension: &ReleaseRange{Min: "2.0.0"}, storage: storageDuckDB20, prefixedInlined: true},
}

// supportedFormats are the ducklake_metadata 'version' strings fdl reads,
// oldest first (DuckLakeVersionFromString). Queries never rely on the
// string, only on the tables and columns a catalog has, except for the
// names of the inlined-data metadata columns, which the extension chooses
// by format.
var supportedFormats = func() []string {
	out := make([]string, len(formats))
	for i, f := range formats {
		out[i] = f.name
	}
	return out
}()

// SupportedFormats returns the DuckLake format strings (ducklake_metadata key
// 'version') that Open accepts, oldest first.
func SupportedFormats() []string { return slices.Clone(supportedFormats) }

func formatOf(name string) (formatInfo, bool) {
	i := slices.Index(supportedFormats, name)
	if i < 0 {
		return formatInfo{}, false
	}
	return formats[i], true
}

// CompareFormats orders two DuckLake format strings by age (the order of
// SupportedFormats: "0.4" < "1.0" < "1.1-dev1" < "1.1") and returns -1, 0 or
// +1. Errors: ErrUnsupportedFormat naming a string that is not a format fdl
// knows.
func CompareFormats(a, b string) (int, error) {
	ia, ib := slices.Index(supportedFormats, a), slices.Index(supportedFormats, b)
	for _, x := range []struct {
		s string
		i int
	}{{a, ia}, {b, ib}} {
		if x.i < 0 {
			return 0, fmt.Errorf("%w %q (known: %s)", ErrUnsupportedFormat, x.s, strings.Join(supportedFormats, ", "))
		}
	}
	return cmpInt(ia, ib), nil
}

// storageForFormat is the DuckDB storage version fdl writes a new catalog
// file of a DuckLake format in when there is no DuckDB header to keep (a
// new lake; a frozen catalog whose working catalog is SQLite): the one the
// extension of that format wrote for a DuckDB catalog file — 64 up to
// DuckDB 1.4 (DuckLake 0.1-0.3), 68 for DuckDB 1.5 (0.4, 1.0), 999 for
// DuckDB 2.0 (1.1) — so that every DuckDB whose extension reads the format
// also opens the file. An unknown format gets 64, which every DuckDB from
// v0.10.0 on opens.
func storageForFormat(format string) Storage {
	if f, ok := formatOf(format); ok {
		return f.storage
	}
	return storageDuckDB10
}

// ReleaseRange is an inclusive range of DuckDB releases, e.g. Min "1.5.0",
// Max "1.5.1"; Max "1.4.x" includes every 1.4 patch release; an empty Max
// leaves the range open at the top. Release names have no "v".
type ReleaseRange struct {
	Min string `json:"min"`
	Max string `json:"max,omitempty"`
}

// String writes the range as fdl prints and records it: ">= 1.5.2" (open),
// "1.4.x" (one whole release line), "1.3.0" (one release), "1.5.0 - 1.5.1".
func (r ReleaseRange) String() string {
	switch {
	case r.Max == "":
		return ">= " + r.Min
	case r.Min == r.Max:
		return r.Min
	case strings.HasSuffix(r.Max, ".x") && r.Min == strings.TrimSuffix(r.Max, "x")+"0":
		return r.Max
	}
	return r.Min + " - " + r.Max
}

// intersect returns the releases in both r and o, or false when none is.
func (r ReleaseRange) intersect(o ReleaseRange) (ReleaseRange, bool) {
	out := r
	if CompareReleases(o.Min, out.Min) > 0 {
		out.Min = o.Min
	}
	if out.Max == "" || (o.Max != "" && CompareReleases(o.Max, out.Max) < 0) {
		out.Max = o.Max
	}
	if out.Max != "" && CompareReleases(out.Min, out.Max) > 0 {
		return ReleaseRange{}, false
	}
	return out, true
}

// Readers says which DuckDB releases can read a frozen catalog, as
// version.json records it and fdl show prints it. Each field is a release
// range as ReleaseRange.String writes it, or "none".
type Readers struct {
	// DuckDB: the releases that open the catalog file, from its storage
	// version (">= " + the oldest release that reads it, e.g. ">= 1.5.0"
	// for storage 68, ">= 2.0.0" for 999).
	DuckDB string `json:"duckdb"`
	// DuckLakeExtension: the releases whose ducklake extension attaches the
	// catalog's DuckLake format READ_ONLY without migrating it, e.g.
	// ">= 1.5.2" for 1.0, "1.4.x" for 0.3, "none" for a format only
	// development builds wrote.
	DuckLakeExtension string `json:"ducklake_extension"`
	// Attach: the releases in both, which run the READ_ONLY ATTACH line fdl
	// prints for the version; "none" when no release does (the version then
	// needs a migrated copy for current readers).
	Attach string `json:"attach"`
}

// ReadersOf returns the Readers of a catalog of DuckLake format format
// whose file has storage version st (see formats for the sources). A
// format or storage fdl does not know gives "unknown" in the fields that
// depend on it.
func ReadersOf(format string, st Storage) Readers {
	var r Readers
	storage, storageOK := ReleaseRange{}, st.MinDuckDB != ""
	if storageOK {
		storage = ReleaseRange{Min: strings.TrimPrefix(st.MinDuckDB, "v")}
		r.DuckDB = storage.String()
	} else {
		r.DuckDB = "unknown"
	}
	f, ok := formatOf(format)
	switch {
	case !ok:
		r.DuckLakeExtension, r.Attach = "unknown", "unknown"
		return r
	case f.extension == nil:
		r.DuckLakeExtension, r.Attach = "none", "none"
		return r
	}
	r.DuckLakeExtension = f.extension.String()
	if !storageOK {
		r.Attach = "unknown"
	} else if both, ok := f.extension.intersect(storage); ok {
		r.Attach = both.String()
	} else {
		r.Attach = "none"
	}
	return r
}
