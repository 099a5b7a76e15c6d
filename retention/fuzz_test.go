package retention

import (
	"bytes"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/version"
)

// fuzzRoots are the data-folder locations the normaliser targets try
// paths against: local folders (one moved: two locations), object
// stores, and prefixes holding the characters URLs treat specially.
var fuzzRoots = [][]string{
	{"/r/data/", "/old/r/data/"},
	{"s3://bucket/repo/data/", "gs://b2/r/data"},
	{"az://cont/r/data/"},
	{"s3://bucket/q?x/data/"},
	{"s3://bucket/p#x/data/", "file:///srv/a%20b/data/"},
}

// fuzzNormaliser returns a fresh Normaliser of fuzzRoots[which], without
// symbolic links unless links is set, when it also gets dir (a folder
// holding a link) as a location.
func fuzzNormaliser(t testing.TB, which uint8, links bool, dir string) *Normaliser {
	roots := fuzzRoots[int(which)%len(fuzzRoots)]
	if links {
		roots = append(slices.Clone(roots), dir+"/repo/data/")
	}
	n, err := NewNormaliser(roots, links)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// linkTree makes dir/repo/data/main/t, dir/link -> dir/repo and
// dir/repo/data/main/out -> dir/outside, for the targets with links.
func linkTree(f *testing.F) string {
	dir := f.TempDir()
	for _, d := range []string{"repo/data/main/t", "outside/p"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "repo"), filepath.Join(dir, "link")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "outside"), filepath.Join(dir, "repo/data/main/out")); err != nil {
		f.Fatal(err)
	}
	return dir
}

// normaliserSeeds are data-file paths from the spellings the normaliser
// tests cover; "DIR" stands for linkTree's folder.
var normaliserSeeds = []string{
	"/r/data/main/t/f.parquet", "file:///r/data/main/t/f.parquet", "file:/r/data/x", "file://localhost/r/data/x", "FILE:///r/data/x",
	"/r/data//main/./x/../t/f.parquet/", "/r/data", "/r/datax/f", "/old/r/data/a", "file:///r/data/a%20b.parquet", "main/t/f.parquet",
	"./f", "file://host/x", "file:x", "s3:bucket/x", "s3:///x", "s3://b/a/../x", "/a/\x01b", "",
	"s3://bucket/repo/data/main/f.parquet", "S3://bucket/repo//data/main/f.parquet/", "s3a://BUCKET/repo/data/x",
	"s3://bucket/repo/data/main/f.parquet?s3_region=eu-west-1", "https://bucket.s3.eu-west-1.amazonaws.com/repo/data/x",
	"https://s3.amazonaws.com/bucket/repo/data/x", "https://storage.googleapis.com/b2/r/data/x.parquet",
	"https://b2.storage.googleapis.com/r/data/x", "gcs://b2/r/data/x", "az://acct.blob.core.windows.net/cont/r/data/x",
	"abfss://cont@acct.dfs.core.windows.net/r/data/x", "https://acct.blob.core.windows.net/cont/r/data/x?sig=1#f",
	"s3://bucket/q?x/data/main/t/f.parquet", "s3://bucket/p#x/data/main/a#b.parquet", "s3://bucket/p%23x/data/y",
	"file:///srv/a%20b/data/f", "file:///srv/a b/data/f", "C:/x/data/f", "c:\\x\\data", "DIR/repo/data/main/t/f.parquet",
	"DIR/link/data/main/t/f.parquet", "DIR/repo/data/main/out/p/f.parquet", "DIR/link/data/../data/main/f",
}

// FuzzPlace: Place never panics and fails only with ErrPath; a place
// has a canonical form, a Key that is "" or "data/" and a clean relative
// path (no empty, "." or ".." element, no trailing slash), aliases that
// are such keys too, sorted, distinct and other than Key, and is disputed
// only with a Key; a fresh Normaliser gives the same answer (the cache
// changes nothing); and placing the canonical form of an undisputed
// place gives the same canonical form and, without links, the same Key
// (normalising is idempotent).
func FuzzPlace(f *testing.F) {
	dir := linkTree(f)
	for i, s := range normaliserSeeds {
		f.Add(s, uint8(i), strings.HasPrefix(s, "DIR") || i%7 == 0)
	}
	f.Fuzz(func(t *testing.T, p string, which uint8, links bool) {
		p = strings.ReplaceAll(p, "DIR", dir)
		n := fuzzNormaliser(t, which, links, dir)
		pl, err := n.Place(p)
		if err != nil {
			if !errors.Is(err, ErrPath) {
				t.Fatalf("Place(%q): error %v does not wrap ErrPath", p, err)
			}
			return
		}
		if pl.Canonical == "" {
			t.Fatalf("Place(%q): no canonical form", p)
		}
		if why := badDataKey(pl.Key); pl.Key != "" && why != "" {
			t.Fatalf("Place(%q).Key = %q: %s", p, pl.Key, why)
		}
		for _, a := range pl.Aliases {
			if why := badDataKey(a); why != "" || a == pl.Key {
				t.Fatalf("Place(%q) alias %q: %s (key %q)", p, a, why, pl.Key)
			}
		}
		if !slices.IsSorted(pl.Aliases) || len(slices.Compact(slices.Clone(pl.Aliases))) != len(pl.Aliases) {
			t.Fatalf("Place(%q) aliases %q are not sorted and distinct", p, pl.Aliases)
		}
		if pl.Disputed && pl.Key == "" {
			t.Fatalf("Place(%q) is disputed without a key", p)
		}
		again, err := n.Place(p)
		fresh, ferr := fuzzNormaliser(t, which, links, dir).Place(p)
		if err != nil || ferr != nil || !reflect.DeepEqual(again, pl) || !reflect.DeepEqual(fresh, pl) {
			t.Fatalf("Place(%q) = %+v, then %+v %v, fresh %+v %v", p, pl, again, err, fresh, ferr)
		}
		if pl.Disputed {
			return
		}
		// With links, Key may come from the path as written, which the
		// canonical form (links resolved) no longer is: compare keys
		// without links only.
		c, err := fuzzNormaliser(t, which, links, dir).Place(pl.Canonical)
		if err != nil || c.Canonical != pl.Canonical || (!links && c.Key != pl.Key) {
			t.Fatalf("Place(%q) = %+v; its canonical form places as %+v %v", p, pl, c, err)
		}
	})
}

// badDataKey says why k is not "data/" and a clean relative path; "" if
// it is one.
func badDataKey(k string) string {
	rest, ok := strings.CutPrefix(k, "data/")
	if !ok || rest == "" {
		return "not under data/"
	}
	for _, el := range strings.Split(rest, "/") {
		if el == "" || el == "." || el == ".." {
			return "an empty, '.' or '..' element"
		}
	}
	return ""
}

// FuzzPlaceDir: PlaceDir agrees with Place, as its doc promises: for a
// name SimpleName accepts (one without folders where the DirPlace is not
// Nested), Place(dir + name) succeeds, its Key is KeyPrefix + name ("" when
// KeyPrefix is), and it is disputed exactly when the folder is.
func FuzzPlaceDir(f *testing.F) {
	dir := linkTree(f)
	names := []string{"f.parquet", "ducklake-0192-abcd.parquet", "year=2024/f.parquet", "out/p/f.parquet", "a b.parquet", "a%20b.parquet",
		"ts=10:00/f.parquet", "é.parquet", "a#b", "a?b", ".hidden", "../x", "a//b", "a\\b", ""}
	for i, s := range []string{"/r/data/main/t/", "/r/data//main/./t/", "/r/data/main/x/../t/", "file:///r/data/main/t/", "/r/data/main/t",
		"/old/r/data/", "/outside/", "s3://bucket/repo/data/main/t/", "S3://bucket/repo//data/main/t/", "s3://other/repo/data/",
		"az://acct.blob.core.windows.net/cont/r/data/", "s3://bucket/q?x/data/main/t/", "s3://bucket/p#x/data/main/", "s3://bucket/p#",
		"DIR/repo/data/main/t/", "DIR/link/data/main/t/", "DIR/repo/data/main/", "/r/data/main/t/?", "/r/dat"} {
		f.Add(s, names[i%len(names)], uint8(i), strings.HasPrefix(s, "DIR"))
	}
	f.Fuzz(func(t *testing.T, d, name string, which uint8, links bool) {
		d = strings.ReplaceAll(d, "DIR", dir)
		n := fuzzNormaliser(t, which, links, dir)
		dp, err := n.PlaceDir(d)
		if err != nil {
			if !errors.Is(err, ErrPath) {
				t.Fatalf("PlaceDir(%q): error %v does not wrap ErrPath", d, err)
			}
			return
		}
		if !SimpleName(name) || (!dp.Nested && strings.Contains(name, "/")) {
			return
		}
		pl, err := fuzzNormaliser(t, which, links, dir).Place(d + name)
		if err != nil {
			t.Fatalf("PlaceDir(%q) = %+v, but Place(%q): %v", d, dp, d+name, err)
		}
		want := ""
		if dp.KeyPrefix != "" {
			want = dp.KeyPrefix + name
		}
		if pl.Key != want || (want != "" && pl.Disputed != dp.Disputed) {
			t.Fatalf("dir %q name %q: PlaceDir gives %q (disputed %v), Place %q (disputed %v)", d, name, want, dp.Disputed, pl.Key, pl.Disputed)
		}
	})
}

// durationModel matches what ParseDuration reads: sums of a number and a
// unit, with white space around.
var (
	durationModel = regexp.MustCompile(`^([0-9]+[wdhms])+$`)
	durationTerm  = regexp.MustCompile(`([0-9]+)([wdhms])`)
)

// FuzzParseDuration: ParseDuration never panics and fails only with
// ErrInvalid; a duration it reads is whole seconds, not negative, is the
// sum a model computes with unbounded integers (an overflowing sum is
// refused), and its canonical form (String) reads back as the same
// duration and is its own canonical form.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30d", "2w", "1d12h", "90m", "45s", "0", "0s", "24h", "1w1s", " 7d ", "", "d", "5", "5x", "-1d", "1.5h",
		"99999999999999999999d", "3000000w", "15250w", "9223372036s", "9223372037s", "1ms", "1d1d"} {
		f.Add(s)
	}
	units := map[byte]int64{'w': 7 * 86400, 'd': 86400, 'h': 3600, 'm': 60, 's': 1}
	limit := big.NewInt(int64(1<<63 - 1))
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		trimmed := strings.TrimSpace(s)
		var want *big.Int
		if durationModel.MatchString(trimmed) {
			want = new(big.Int)
			for _, m := range durationTerm.FindAllStringSubmatch(trimmed, -1) {
				n, _ := new(big.Int).SetString(m[1], 10)
				want.Add(want, n.Mul(n, big.NewInt(units[m[2][0]]*int64(time.Second))))
			}
		} else if trimmed == "0" {
			want = new(big.Int)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseDuration(%q): error %v does not wrap ErrInvalid", s, err)
			}
			if want != nil && want.Cmp(limit) <= 0 {
				t.Fatalf("ParseDuration(%q) refused a duration of %s ns: %v", s, want, err)
			}
			return
		}
		if want == nil || want.Cmp(big.NewInt(int64(d))) != 0 {
			t.Fatalf("ParseDuration(%q) = %d ns, want %v", s, int64(d), want)
		}
		if d < 0 || time.Duration(d)%time.Second != 0 {
			t.Fatalf("ParseDuration(%q) = %v", s, time.Duration(d))
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d || back.String() != d.String() {
			t.Fatalf("ParseDuration(%q) = %s, which reads back as %v (%v)", s, d, back, err)
		}
	})
}

// FuzzRetentionFiles: ParsePolicy, ParseFloor, ParseMarker and
// ParseIntent (kind 0..3) never panic and fail only with ErrInvalid; what
// they accept passes its own checks (Validate; the floor's retired list
// sorted and each id found by Has; the intent's key and sorted keys), and
// marshals to bytes that parse to the same value and marshal to the same
// bytes again.
//
// It is one piece: one fuzz target, its seeds (a value of each kind of
// retention file, then malformed texts) and the one function that parses,
// checks and round-trips whatever it is given.
func FuzzRetentionFiles(f *testing.F) {
	ids := []version.ID{"01900000-0000-7000-8000-000000000001", "01900000-0000-7000-8000-000000000002"}
	at := time.Date(2026, 11, 29, 22, 44, 6, 123e6, time.UTC)
	pol := DefaultPolicy()
	pol.KeepLast, pol.KeepWithin, pol.UpdatedAt, pol.UpdatedBy = 5, Duration(30*24*time.Hour), at, "ann"
	seeds := []any{
		DefaultPolicy(), pol,
		&Floor{Format: 1, Generation: 2, MovedAt: at, MovedBy: "ann", Policy: pol,
			Branches: []BranchFloor{{Branch: "refs/heads/main", Head: ids[1], Floor: ids[0], Seq: 1, Snapshot: 3}},
			Retired:  []Retirement{{ID: ids[0], Reason: "keep_last"}, {ID: ids[1]}}},
		&Marker{Format: 1, Version: ids[0], RetiredAt: at, Floor: 2, Reason: "keep_last", DataFiles: []string{"data/main/t/f.parquet"}},
		&Intent{Format: 1, ID: ids[1], StartedAt: at, By: "ann", Host: "h", PID: 42, Floor: 2, Keys: []string{"versions/x/ducklake.duckdb", "data/a"}},
	}
	for i, v := range seeds {
		b, err := marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		kind := []uint8{0, 0, 1, 2, 3}[i]
		f.Add(b, kind)
	}
	for _, s := range []string{`{"format": 1, "keep_last": 1}`, `{"format": 1, "grace": "0s"}`, `{"format": 1, "grace": null}`, `{"format": 2}`,
		`{"format":1,"generation":1,"retired":[{"id":"x"}]}`, `{}`, `null`} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, kind uint8) {
		switch kind % 4 {
		case 0:
			p, err := ParsePolicy(b)
			if !checkErr(t, err) {
				return
			}
			if err := p.Validate(); err != nil {
				t.Fatalf("accepted policy fails Validate: %v", err)
			}
			m, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			p2, err := ParsePolicy(m)
			if err != nil || !p2.UpdatedAt.Equal(p.UpdatedAt) {
				t.Fatalf("round trip: %+v %v\n%s", p2, err, m)
			}
			p.UpdatedAt, p2.UpdatedAt = time.Time{}, time.Time{}
			if p != p2 {
				t.Fatalf("round trip changed the policy:\n%+v\n%+v", p, p2)
			}
		case 1:
			fl, err := ParseFloor(b)
			if !checkErr(t, err) {
				return
			}
			if err := fl.Validate(); err != nil {
				t.Fatalf("accepted floor fails Validate: %v", err)
			}
			for _, r := range fl.Retired {
				if !fl.Has(r.ID) {
					t.Fatalf("the floor lists %s, Has says no", r.ID)
				}
			}
			roundTrip(t, b, fl, func(m []byte) (any, error) { return ParseFloor(m) })
		case 2:
			want := version.ID("01900000-0000-7000-8000-000000000001")
			mk, err := ParseMarker(b, want)
			if !checkErr(t, err) {
				return
			}
			if err := mk.Validate(want); err != nil || mk.Version != want {
				t.Fatalf("accepted marker of %q fails Validate: %v", mk.Version, err)
			}
			roundTrip(t, b, mk, func(m []byte) (any, error) { return ParseMarker(m, want) })
		case 3:
			key := IntentKey("01900000-0000-7000-8000-000000000002")
			in, err := ParseIntent(b, key)
			if !checkErr(t, err) {
				return
			}
			if IntentKey(in.ID) != key || !IsIntentKey(key) || !slices.IsSorted(in.Keys) {
				t.Fatalf("accepted intent %q with keys %q from %s", in.ID, in.Keys, key)
			}
			for _, k := range in.Keys {
				if !in.Has(k) {
					t.Fatalf("the intent lists %q, Has says no", k)
				}
			}
			roundTrip(t, b, in, func(m []byte) (any, error) { return ParseIntent(m, key) })
		}
	})
}

// checkErr reports whether err is nil, failing t if it is an error that
// does not wrap ErrInvalid.
func checkErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v does not wrap ErrInvalid", err)
	}
	return err == nil
}

// roundTrip checks that v (parsed from b) marshals to bytes that parse to
// a value that marshals to the same bytes, with the same times.
func roundTrip(t *testing.T, b []byte, v any, parse func([]byte) (any, error)) {
	t.Helper()
	m, err := marshal(v)
	if err != nil {
		t.Fatalf("accepted %q does not marshal: %v", b, err)
	}
	v2, err := parse(m)
	if err != nil {
		t.Fatalf("marshalled value does not parse: %v\n%s", err, m)
	}
	m2, err := marshal(v2)
	if err != nil || !bytes.Equal(m, m2) {
		t.Fatalf("round trip changed the value (%v):\n%s\n%s", err, m, m2)
	}
}
