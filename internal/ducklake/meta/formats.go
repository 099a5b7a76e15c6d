package meta

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrUnsupportedFormat: a DuckLake format string fdl does not know (package
// ducklake's ErrUnsupportedFormat is this error).
var ErrUnsupportedFormat = errors.New("unsupported DuckLake format")

// Format is what fdl knows about one DuckLake format string
// (ducklake_metadata key 'version').
type Format struct {
	// Name is the format string, e.g. "1.0".
	Name string
	// Extension: the DuckDB releases whose ducklake extension attaches a
	// catalog of this format READ_ONLY without migrating it; nil when no
	// published release does (only development builds wrote it).
	Extension *ReleaseRange
	// Storage is the storage version the extension of this format wrote a
	// DuckDB catalog file in.
	Storage Storage
}

// Storage versions the ducklake extension wrote its DuckDB catalog files
// in: 64 up to DuckDB 1.4 (the real catalogs up to DuckLake 0.3), 68 with
// DuckDB 1.5, 999 with DuckDB 2.0 (its own format; package ducklake's
// storage table).
var (
	storage64  = Storage{Number: 64, MinDuckDB: "v0.10.0"}
	storage68  = Storage{Number: 68, MinDuckDB: "v1.5.0"}
	storage999 = Storage{Number: 999, MinDuckDB: "v2.0.0"}
)

// formats lists every DuckLake format fdl reads, oldest first. The
// extension ranges come from the duckdb/ducklake release branches
// (src/storage/ducklake_initializer.cpp LoadExistingDuckLake,
// src/common/ducklake_version.cpp) and were checked with DuckDB Labs'
// published builds (PyPI duckdb + duckdb-extension-ducklake of the same
// release; scripts/ducklake-readers.sh): each attaches READ_ONLY only the
// format it writes, and refuses the others (an older one needs a
// migration, which READ_ONLY cannot run; a newer one is unknown to it):
//
//	DuckDB 1.3.2: writes 0.2 (1.3.0 wrote 0.1)
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
var formats = []Format{
	{Name: "0.1", Extension: &ReleaseRange{Min: "1.3.0", Max: "1.3.0"}, Storage: storage64},
	{Name: "0.2", Extension: &ReleaseRange{Min: "1.3.1", Max: "1.3.2"}, Storage: storage64},
	{Name: "0.3-dev1", Storage: storage64},
	{Name: "0.3", Extension: &ReleaseRange{Min: "1.4.0", Max: "1.4.x"}, Storage: storage64},
	{Name: "0.4-dev1", Storage: storage68},
	{Name: "0.4", Extension: &ReleaseRange{Min: "1.5.0", Max: "1.5.1"}, Storage: storage68},
	{Name: "1.0", Extension: &ReleaseRange{Min: "1.5.2"}, Storage: storage68},
	{Name: "1.1-dev1", Storage: storage999},
	{Name: "1.1", Extension: &ReleaseRange{Min: "2.0.0"}, Storage: storage999},
}

// Formats returns every DuckLake format fdl reads, oldest first (a copy).
func Formats() []Format {
	out := slices.Clone(formats)
	for i := range out {
		if out[i].Extension != nil {
			r := *out[i].Extension
			out[i].Extension = &r
		}
	}
	return out
}

// LookupFormat returns the Format named name, or false.
func LookupFormat(name string) (Format, bool) {
	for _, f := range formats {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// CompareFormats orders two DuckLake format strings by age (the order of
// Formats: "0.4" < "1.0" < "1.1-dev1" < "1.1") and returns -1, 0 or +1.
// Errors: ErrUnsupportedFormat naming a string that is not a known format.
func CompareFormats(a, b string) (int, error) {
	index := func(s string) int {
		return slices.IndexFunc(formats, func(f Format) bool { return f.Name == s })
	}
	ia, ib := index(a), index(b)
	for _, x := range []struct {
		s string
		i int
	}{{a, ia}, {b, ib}} {
		if x.i < 0 {
			names := make([]string, len(formats))
			for i, f := range formats {
				names[i] = f.Name
			}
			return 0, fmt.Errorf("%w %q (known: %s)", ErrUnsupportedFormat, x.s, strings.Join(names, ", "))
		}
	}
	return cmpInt(ia, ib), nil
}

// StorageFor returns the storage version the ducklake extension of format
// writes a DuckDB catalog file in (Format.Storage): 64 for DuckLake 0.1 to
// 0.3, 68 for 0.4 and 1.0, 999 for 1.1; 64, which every DuckDB from v0.10.0
// on opens, for a format fdl does not know.
func StorageFor(format string) Storage {
	if f, ok := LookupFormat(format); ok {
		return f.Storage
	}
	return storage64
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
// range as ReleaseRange.String writes it, "none", or "unknown" (a storage
// version or format this fdl does not know).
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
// whose file has storage version st (see formats for the sources).
func ReadersOf(format string, st Storage) Readers {
	var r Readers
	storage, storageOK := ReleaseRange{}, st.MinDuckDB != ""
	if storageOK {
		storage = ReleaseRange{Min: strings.TrimPrefix(st.MinDuckDB, "v")}
		r.DuckDB = storage.String()
	} else {
		r.DuckDB = "unknown"
	}
	f, ok := LookupFormat(format)
	switch {
	case !ok:
		r.DuckLakeExtension, r.Attach = "unknown", "unknown"
		return r
	case f.Extension == nil:
		r.DuckLakeExtension, r.Attach = "none", "none"
		return r
	}
	r.DuckLakeExtension = f.Extension.String()
	if !storageOK {
		r.Attach = "unknown"
	} else if both, ok := f.Extension.intersect(storage); ok {
		r.Attach = both.String()
	} else {
		r.Attach = "none"
	}
	return r
}

// ReleaseLine returns "vMAJOR.MINOR" of a DuckDB release name such as
// "v2.0.0" or "v2.0.1-dev12", or "" when s is not one.
func ReleaseLine(s string) string {
	maj, min, _, ok := parseRelease(s)
	if !ok {
		return ""
	}
	return fmt.Sprintf("v%d.%d", maj, min)
}

// parseRelease parses "vMAJOR.MINOR.PATCH" (the "v" optional; a suffix after
// the patch number such as "-dev12" is ignored; a patch "x" reads as the
// highest patch).
func parseRelease(s string) (maj, min, patch int, ok bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.SplitN(s, ".", 3)
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	var err error
	if maj, err = strconv.Atoi(parts[0]); err != nil {
		return 0, 0, 0, false
	}
	if min, err = strconv.Atoi(parts[1]); err != nil {
		return 0, 0, 0, false
	}
	p := parts[2]
	if p == "x" {
		return maj, min, math.MaxInt32, true
	}
	if i := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		p = p[:i]
	}
	if patch, err = strconv.Atoi(p); err != nil {
		return 0, 0, 0, false
	}
	return maj, min, patch, true
}

// CompareReleases compares two DuckDB release names ("v1.5.0", "1.4.x",
// "2.0.0"; see parseRelease) by number and returns -1, 0 or +1. A name that
// does not parse sorts before every one that does.
func CompareReleases(a, b string) int {
	am, an, ap, aok := parseRelease(a)
	bm, bn, bp, bok := parseRelease(b)
	switch {
	case !aok || !bok:
		return cmpBool(aok, bok)
	case am != bm:
		return cmpInt(am, bm)
	case an != bn:
		return cmpInt(an, bn)
	}
	return cmpInt(ap, bp)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}
