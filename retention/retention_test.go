package retention

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

func TestDuration(t *testing.T) {
	for in, want := range map[string]string{"30d": "30d", "2w": "14d", "1d12h": "36h", "90m": "90m", "45s": "45s", "0": "0s", "0s": "0s", "24h": "1d", "1w1s": "604801s"} {
		d, err := ParseDuration(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if d.String() != want {
			t.Errorf("%s: String %q, want %q", in, d, want)
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Errorf("%s: round trip %v %v", in, back, err)
		}
	}
	for _, in := range []string{"", "d", "5", "5x", "-1d", "1.5h", "99999999999999999999d", "3000000w"} {
		if _, err := ParseDuration(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: err %v, want ErrInvalid", in, err)
		}
	}
	for in, why := range map[string]string{"1ms": `unknown unit "ms"`, "5x": `unknown unit "x"`, "5": "expected a unit after 5", "d": "expected a number"} {
		if _, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: err %v, want %q", in, err, why)
		}
	}
}

func TestPolicyParse(t *testing.T) {
	p := DefaultPolicy()
	p.KeepLast, p.KeepWithin = 5, Duration(30*24*time.Hour)
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"keep_within": "30d"`) || !strings.Contains(string(b), `"grace": "7d"`) {
		t.Fatalf("policy JSON:\n%s", b)
	}
	back, err := ParsePolicy(b)
	if err != nil || back.KeepLast != 5 || back.KeepWithin != p.KeepWithin || back.Grace != DefaultGrace {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	for _, bad := range []string{`{`, `{"format": 2}`, `{"format": 1, "keep_last": -1}`, `{"format": 1, "grace": "x"}`, `{"format": 1, "grace": 5}`} {
		if _, err := ParsePolicy([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", bad, err)
		}
	}
	if !DefaultPolicy().KeepsEverything() || p.KeepsEverything() {
		t.Fatal("KeepsEverything")
	}
	// A field left out has its default: no grace means 7 days, never 0.
	if q, err := ParsePolicy([]byte(`{"format": 1, "keep_last": 1}`)); err != nil || q.Grace != DefaultGrace || q.KeepLast != 1 {
		t.Fatalf("policy without grace: %+v %v", q, err)
	}
	if q, err := ParsePolicy([]byte(`{"format": 1, "grace": "0s"}`)); err != nil || q.Grace != 0 {
		t.Fatalf("explicit grace 0: %+v %v", q, err)
	}
}

// TestNormaliserSpellings: one file spelled as DuckLake catalogs spell it —
// plain path, file:// URL in three forms, trailing slash, doubled slashes,
// "." and "..", relative parts resolved against a data_path — gives one key
// (docs/spec.md §16).
func TestNormaliserSpellings(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "repo", "data")
	if err := os.MkdirAll(filepath.Join(data, "main", "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := NewNormaliser([]string{data + "/"}, true)
	if err != nil {
		t.Fatal(err)
	}
	abs := data + "/main/t/f.parquet"
	want := "data/main/t/f.parquet"
	for _, p := range []string{
		abs,
		"file://" + abs,
		"file:" + abs,
		"file://localhost" + abs,
		"FILE://" + abs,
		abs + "/",
		strings.Replace(abs, "/main/", "//main//", 1),
		strings.Replace(abs, "/main/", "/main/./x/../", 1),
		data + "/" + "main/" + "t/" + "f.parquet", // data_path + schema path + table path + file
	} {
		pl, err := n.Place(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if pl.Key != want {
			t.Errorf("%s: key %q, want %q", p, pl.Key, want)
		}
	}
	// A repository reached through a symbolic link is the same folder.
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(root, "repo"), link); err != nil {
		t.Fatal(err)
	}
	if pl, err := n.Place(link + "/data/main/t/f.parquet"); err != nil || pl.Key != want {
		t.Errorf("through a link: %+v %v", pl, err)
	}
	nl, err := NewNormaliser([]string{link + "/data/"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if pl, _ := nl.Place(abs); pl.Key != want {
		t.Errorf("root given through a link: %+v", pl)
	}
	// Outside the repository: no key.
	for _, p := range []string{root + "/elsewhere/f.parquet", data + "x/f.parquet", data, "s3://bucket/data/f.parquet"} {
		pl, err := n.Place(p)
		if err != nil || pl.Key != "" {
			t.Errorf("%s: %+v %v, want outside", p, pl, err)
		}
	}
	// Percent escapes in a file:// URL: DuckDB reads them literally; the
	// decoded reading is an alias.
	pl, err := n.Place("file://" + data + "/main/t/a%20b.parquet")
	if err != nil || pl.Key != "data/main/t/a%20b.parquet" || !slices.Equal(pl.Aliases, []string{"data/main/t/a b.parquet"}) {
		t.Errorf("percent: %+v %v", pl, err)
	}
	// Refused.
	for _, p := range []string{"", "main/t/f.parquet", "./f.parquet", "file://host/x", "file:x", "s3:bucket/x", "s3:///x", "s3://b/a/../x", "/a/\x01b"} {
		if _, err := n.Place(p); !errors.Is(err, ErrPath) {
			t.Errorf("%q: err %v, want ErrPath", p, err)
		}
	}
}

func TestNormaliserObjectStores(t *testing.T) {
	n, err := NewNormaliser([]string{"s3://bucket/repo/data/", "gs://b2/r/data"}, false)
	if err != nil {
		t.Fatal(err)
	}
	az, err := NewNormaliser([]string{"az://cont/r/data/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	// Every spelling DuckDB reads as the same object has the same key.
	for p, want := range map[string]string{
		"azure://cont/r/data/x.parquet":                              "data/x.parquet",
		"az://CONT//r/data/x.parquet":                                "data/x.parquet",
		"az://acct.blob.core.windows.net/cont/r/data/x.parquet":      "data/x.parquet",
		"abfss://cont@acct.dfs.core.windows.net/r/data/x.parquet":    "data/x.parquet",
		"https://acct.blob.core.windows.net/cont/r/data/x.parquet":   "data/x.parquet",
		"https://acct.blob.core.windows.net/CONT/r/data/x.parquet":   "data/x.parquet",
		"az://other/r/data/x.parquet":                                "",
		"abfss://other@acct.dfs.core.windows.net/r/data/x.parquet":   "",
		"https://acct.blob.core.windows.net/other/r/data/x.parquet":  "",
		"https://example.com/cont/r/data/x.parquet":                  "",
		"az://cont/r/data/x.parquet?foo=1":                           "data/x.parquet",
		"az://acct.blob.core.windows.net//cont//r/data//x.parquet//": "data/x.parquet",
	} {
		pl, err := az.Place(p)
		if err != nil || pl.Key != want {
			t.Errorf("%s: %+v %v, want key %q", p, pl, err, want)
		}
	}
	for p, want := range map[string]string{
		"s3://bucket/repo/data/main/f.parquet":                               "data/main/f.parquet",
		"S3://bucket/repo//data/main/f.parquet/":                             "data/main/f.parquet",
		"s3://bucket//repo/data/main/f.parquet":                              "data/main/f.parquet",
		"s3://bucket///repo//data///main/f.parquet":                          "data/main/f.parquet",
		"s3://BUCKET/repo/data/main/f.parquet":                               "data/main/f.parquet",
		"s3a://bucket/repo/data/main/f.parquet":                              "data/main/f.parquet",
		"S3N://bucket/repo/data/main/f.parquet":                              "data/main/f.parquet",
		"s3://bucket/repo/data/main/f.parquet?s3_region=eu-west-1":           "data/main/f.parquet",
		"https://bucket.s3.amazonaws.com/repo/data/main/f.parquet":           "data/main/f.parquet",
		"https://bucket.s3.eu-west-1.amazonaws.com/repo/data/main/f.parquet": "data/main/f.parquet",
		"https://s3.eu-west-1.amazonaws.com/bucket/repo/data/main/f.parquet": "data/main/f.parquet",
		"http://s3.amazonaws.com/bucket//repo/data/main/f.parquet":           "data/main/f.parquet",
		"gcs://b2/r/data/x.parquet":                                          "data/x.parquet",
		"GS://B2//r/data/x.parquet":                                          "data/x.parquet",
		"https://storage.googleapis.com/b2/r/data/x.parquet":                 "data/x.parquet",
		// A bucket in the path is in any case, as one in the host (FuzzPlace
		// found "http://s3.amazonaws.com/A" canonical as s3://A, s3://A as s3://a).
		"https://s3.eu-west-1.amazonaws.com/BUCKET/repo/data/main/f.parquet": "data/main/f.parquet",
		"https://storage.googleapis.com/B2/r/data/x.parquet":                 "data/x.parquet",
		"https://b2.storage.googleapis.com/r/data/x.parquet":                 "data/x.parquet",
		"s3://bucket/repo/data2/x.parquet":                                   "",
		"s3://other/repo/data/main/f.parquet":                                "",
		"/bucket/repo/data/main/f.parquet":                                   "",
		"https://bucket/repo/data/main/f.parquet":                            "",
	} {
		pl, err := n.Place(p)
		if err != nil || pl.Key != want {
			t.Errorf("%s: %+v %v, want key %q", p, pl, err, want)
		}
	}
}

// ids makes n version ids that sort in order.
func ids(n int) []version.ID {
	out := make([]version.ID, n)
	for i := range out {
		out[i] = version.ID(fmt.Sprintf("01900000-0000-7000-8000-%012d", i+1))
	}
	return out
}

type fixture struct {
	t   *testing.T
	in  *Input
	ids []version.ID
}

// chain makes versions id[from..to] a first-parent chain (from's parent is
// parent), created a day apart ending now, each with a catalog.
func (f *fixture) chain(parent version.ID, from, to int) {
	for i := from; i <= to; i++ {
		id := f.ids[i]
		r := &version.Record{ID: id, Seq: int64(i + 1), Parents: []version.ID{}, CreatedAt: f.in.Now.Add(-time.Duration(len(f.ids)-i) * 24 * time.Hour)}
		r.DuckLake.Snapshot = int64(i * 10)
		if parent != "" {
			r.Parents = []version.ID{parent}
		}
		f.in.Versions[id] = &VersionState{ID: id, Record: r, Objects: objects(id, f.in.Now.Add(-30*24*time.Hour), "ducklake.duckdb", "dataset.json", "version.json")}
		parent = id
	}
}

func objects(id version.ID, mod time.Time, files ...string) []store.ObjectInfo {
	var out []store.ObjectInfo
	for _, f := range files {
		out = append(out, store.ObjectInfo{Key: "versions/" + string(id) + "/" + f, Size: 10, ModTime: mod})
	}
	return out
}

func newFixture(t *testing.T, n int) *fixture {
	return &fixture{t: t, ids: ids(n), in: &Input{Now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Policy: DefaultPolicy(), Versions: map[version.ID]*VersionState{}}}
}

func retired(d *Decision) []version.ID {
	var out []version.ID
	for _, r := range d.Retire {
		out = append(out, r.ID)
	}
	return out
}

func kept(d *Decision) []version.ID {
	var out []version.ID
	for _, k := range d.Kept {
		out = append(out, k.ID)
	}
	return out
}

func TestDecideKeepLastTagsRequestsLogs(t *testing.T) {
	f := newFixture(t, 14)
	v := f.ids
	f.chain("", 0, 9)     // main: v0..v9
	f.chain(v[3], 10, 11) // dev: v10, v11 branch off v3
	f.chain(v[5], 12, 12) // v12: undone (only the ref log reaches it)
	f.chain(v[9], 13, 13) // v13: nothing reaches it (a push that lost), old
	f.in.Refs = []Ref{{"refs/heads/main", v[9]}, {"refs/heads/dev", v[11]}, {"refs/tags/t1", v[1]}, {"refs/requests/r1", v[6]}}
	f.in.Logged = []version.ID{v[12], v[9]}
	f.in.Policy.KeepLast = 3
	d, err := Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	// dev's first parents are v11, v10, v3: keep-last 3 keeps v3 too.
	wantKept := []version.ID{v[1], v[3], v[6], v[7], v[8], v[9], v[10], v[11]}
	if got := kept(d); !slices.Equal(got, wantKept) {
		t.Errorf("kept %v, want %v", got, wantKept)
	}
	wantRetire := []version.ID{v[0], v[2], v[4], v[5], v[12]}
	if got := retired(d); !slices.Equal(got, wantRetire) {
		t.Errorf("retire %v, want %v (kept %v)", got, wantRetire, kept(d))
	}
	if len(d.Abandoned) != 1 || d.Abandoned[0].ID != v[13] || !d.Abandoned[0].Complete {
		t.Errorf("abandoned %+v", d.Abandoned)
	}
	if !strings.HasSuffix(d.Abandoned[0].Keys[0], "/version.json") {
		t.Errorf("abandoned keys %v: version.json must go first", d.Abandoned[0].Keys)
	}
	if !d.FloorMoves || d.NewFloor.Generation != 1 || len(d.NewFloor.Retired) != 5 {
		t.Errorf("floor %+v", d.NewFloor)
	}
	// Floors: main's run of versions in retention ends at v6 (v5 retires).
	for _, b := range d.Branches {
		if b.Branch == "refs/heads/main" && b.Floor != v[6] {
			t.Errorf("main's floor %s, want %s", b.Floor, v[6])
		}
	}
	// v11 -> v10 -> v3 (kept) -> v2 (retired): dev's floor is v3's snapshot.
	if d.Live[v[9]] != 60 || d.Live[v[1]] != 10 || d.Live[v[11]] != 30 {
		t.Errorf("floor snapshots %v: want main's head 60, the tag's 10, dev's head 30", d.Live)
	}

	// Keep within 2.5 days also keeps the newest by time, and the undone v12
	// if young enough; the reflog-only version is subject to it.
	f.in.Policy.KeepLast, f.in.Policy.KeepWithin = 0, Duration(60*time.Hour)
	d, err = Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(retired(d), v[12]) {
		t.Errorf("v12 (2 days old, reached by a ref log) retired under keep-within 60h: %v", retired(d))
	}
	if !slices.Contains(retired(d), v[0]) || slices.Contains(retired(d), v[9]) {
		t.Errorf("keep-within: retire %v", retired(d))
	}

	// The default policy keeps everything reachable.
	f.in.Policy = DefaultPolicy()
	d, err = Decide(f.in)
	if err != nil || len(d.Retire) != 0 || d.FloorMoves {
		t.Fatalf("default policy: retire %v, moves %v, %v", retired(d), d.FloorMoves, err)
	}
}

func TestDecideFloorResumeAndUnretire(t *testing.T) {
	f := newFixture(t, 6)
	v := f.ids
	f.chain("", 0, 5)
	f.in.Refs = []Ref{{"refs/heads/main", v[5]}}
	f.in.Policy.KeepLast = 2
	d, err := Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	floor := d.NewFloor
	if !slices.Equal(retired(d), v[:4]) || floor == nil {
		t.Fatalf("retire %v", retired(d))
	}
	// After the move, a gc that stopped: v0 marked and excised, v1 marked
	// with its catalog still there, v2 and v3 only listed by the floor.
	f.in.Floor = floor
	f.in.Versions[v[0]].Marker = &Marker{Format: 1, Version: v[0], RetiredAt: f.in.Now, DataFiles: []string{"data/x"}}
	f.in.Versions[v[0]].Objects = objects(v[0], f.in.Now, "version.json", "retired.json")
	f.in.Versions[v[1]].Marker = &Marker{Format: 1, Version: v[1], RetiredAt: f.in.Now}
	d, err = Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	if d.FloorMoves {
		t.Errorf("resume moved the floor again: %+v", d.NewFloor)
	}
	if got := retired(d); !slices.Equal(got, v[1:4]) {
		t.Errorf("resume retires %v, want %v", got, v[1:4])
	}
	// A tag on v3 (no marker yet) takes it back; v1 (marked) stays retired
	// with a warning when a tag points at it.
	f.in.Refs = append(f.in.Refs, Ref{"refs/tags/x", v[3]}, Ref{"refs/tags/y", v[1]})
	d, err = Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	if !d.FloorMoves || !slices.Equal(d.Unretire, []version.ID{v[3]}) || d.NewFloor.Has(v[3]) || !d.NewFloor.Has(v[2]) || d.NewFloor.Has(v[0]) {
		t.Errorf("unretire %v, new floor %+v", d.Unretire, d.NewFloor)
	}
	if d.NewFloor.Generation != floor.Generation+1 {
		t.Errorf("generation %d", d.NewFloor.Generation)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], string(v[1])) {
		t.Errorf("warnings %v", d.Warnings)
	}
}

// TestDecideFloorCap: a floor move lists at most maxFloorRetired versions;
// the newest of the others stay in retention until the next gc, whose move
// takes them once the first ones are excised.
func TestDecideFloorCap(t *testing.T) {
	defer func(n int) { maxFloorRetired = n }(maxFloorRetired)
	maxFloorRetired = 3
	f := newFixture(t, 8)
	v := f.ids
	f.chain("", 0, 7)
	f.in.Refs = []Ref{{"refs/heads/main", v[7]}}
	f.in.Policy.KeepLast = 1
	d, err := Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	if got := retired(d); !slices.Equal(got, v[:3]) || len(d.NewFloor.Retired) != 3 || len(d.Warnings) != 1 {
		t.Fatalf("retire %v, floor %d entries, warnings %v", got, len(d.NewFloor.Retired), d.Warnings)
	}
	if got := kept(d); !slices.Equal(got, v[3:]) {
		t.Fatalf("kept %v", got)
	}
	// The deferred versions are in retention: their catalogs protect files,
	// and the head's floor run reaches back to v3.
	if _, ok := d.Live[v[3]]; !ok || d.Live[v[7]] != 30 {
		t.Errorf("live %v", d.Live)
	}
	// After the first three are excised, the next move takes three more.
	f.in.Floor = d.NewFloor
	for _, id := range v[:3] {
		f.in.Versions[id].Marker = &Marker{Format: 1, Version: id, RetiredAt: f.in.Now}
		f.in.Versions[id].Objects = objects(id, f.in.Now, "version.json", "retired.json")
	}
	d, err = Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	if got := retired(d); !slices.Equal(got, v[3:6]) || d.NewFloor.Generation != 2 || len(d.NewFloor.Retired) != 3 {
		t.Fatalf("second move: retire %v, floor %+v", got, d.NewFloor)
	}
}

func TestDecideRefusals(t *testing.T) {
	f := newFixture(t, 3)
	v := f.ids
	f.chain("", 0, 1)
	f.in.Refs = []Ref{{"refs/heads/main", v[2]}}
	if _, err := Decide(f.in); err == nil || !strings.Contains(err.Error(), "not a complete version") {
		t.Errorf("dangling ref: %v", err)
	}
	f.in.Refs = []Ref{{"refs/heads/main", v[1]}}
	f.in.Versions[v[1]].Objects = objects(v[1], f.in.Now, "version.json", "dataset.json")
	if _, err := Decide(f.in); err == nil || !strings.Contains(err.Error(), "catalog ducklake.duckdb is missing") {
		t.Errorf("kept version without catalog: %v", err)
	}
}

func TestDecideYoungAndIncomplete(t *testing.T) {
	f := newFixture(t, 4)
	v := f.ids
	f.chain("", 0, 1)
	f.in.Refs = []Ref{{"refs/heads/main", v[1]}}
	// v2: an in-flight push (complete, no ref yet), uploaded an hour ago.
	f.chain(v[1], 2, 2)
	for i := range f.in.Versions[v[2]].Objects {
		f.in.Versions[v[2]].Objects[i].ModTime = f.in.Now.Add(-time.Hour)
	}
	// v3: incomplete, 8 days old.
	f.in.Versions[v[3]] = &VersionState{ID: v[3], Objects: objects(v[3], f.in.Now.Add(-8*24*time.Hour), "ducklake.duckdb")}
	d, err := Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Young, []version.ID{v[2]}) || len(d.Abandoned) != 1 || d.Abandoned[0].ID != v[3] || d.Abandoned[0].Complete {
		t.Fatalf("young %v abandoned %+v", d.Young, d.Abandoned)
	}
	if _, ok := d.Live[v[2]]; !ok || d.Live[v[2]] != 0 {
		t.Errorf("the in-flight version's catalog must protect its files from its parent's run: live %v", d.Live)
	}
	// Nine days later both go.
	f.in.Now = f.in.Now.Add(9 * 24 * time.Hour)
	d, _ = Decide(f.in)
	if len(d.Abandoned) != 2 || len(d.Young) != 0 {
		t.Errorf("later: abandoned %+v young %v", d.Abandoned, d.Young)
	}
}

func df(id int64, path string, begin int64, end ...int64) meta.DataFile {
	f := meta.DataFile{ID: id, Path: path, ResolvedPath: path, BeginSnapshot: begin}
	if len(end) > 0 {
		e := end[0]
		f.EndSnapshot = &e
	}
	return f
}

func TestDataPlanner(t *testing.T) {
	n, err := NewNormaliser([]string{"/r/data/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	p := NewDataPlanner(n)
	v := ids(3)
	// Live catalog with floor 10.
	p.AddLive(v[2], 10, []meta.DataFile{
		df(1, "/r/data/a.parquet", 1),              // open: kept
		df(2, "/r/data/b.parquet", 1, 10),          // ended at the floor: deleted
		df(3, "/r/data/c.parquet", 1, 11),          // visible at 10: kept
		df(4, "file:///r/data/d.parquet/", 12, 12), // end <= begin: broken, kept
		df(5, "/elsewhere/e.parquet", 1),           // outside
		df(6, "file:///r/data/p%20q.parquet", 1),   // alias p q.parquet protected
		df(7, "/r/data/shared.parquet", 1, 5),      // ended here...
		df(8, "/r/data//shared.parquet", 1),        // ...but open in another row spelling
		df(9, "/r/data/missing.parquet", 1),        // needed, not in the store
	})
	frees := p.AddRetiring(v[0], []meta.DataFile{df(1, "/r/data/a.parquet", 1), df(2, "/r/data/old.parquet", 0, 1), df(3, "/r/data/old.parquet", 0, 1)})
	if !slices.Equal(frees, []string{"data/old.parquet"}) {
		t.Errorf("frees %v", frees)
	}
	p.AddMarker(v[1], []string{"data/gone.parquet", "data/marked.parquet"})
	old, young := now.Add(-8*24*time.Hour), now.Add(-time.Hour)
	listing := []store.ObjectInfo{}
	for _, k := range []string{"a", "b", "c", "d", "p q", "p%20q", "shared", "old", "marked"} {
		listing = append(listing, store.ObjectInfo{Key: "data/" + k + ".parquet", Size: 1, ModTime: young})
	}
	const strayOld, strayYoung = "data/main/t/ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet", "data/main/t/ducklake-01a23784-9317-7442-aa55-b1a2089a1831-delete.parquet"
	listing = append(listing, store.ObjectInfo{Key: strayOld, ModTime: old}, store.ObjectInfo{Key: strayYoung, ModTime: young}, store.ObjectInfo{Key: "other/x", ModTime: old})
	// Files gc does not own (no catalog lists them, and DuckDB's ducklake
	// never names a file so) stay, however old.
	foreign := []string{"data/README.txt", "data/main/t/ducklake-notauuid.parquet", "data/main/t/part-0001.parquet", "data/main/t/ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet.bak"}
	for _, k := range foreign {
		listing = append(listing, store.ObjectInfo{Key: k, ModTime: old})
	}
	slices.SortFunc(listing, func(a, b store.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	dels := p.Plan(listing, now, DefaultGrace)
	got := map[string]string{}
	for _, d := range dels {
		got[d.Key] = d.Reason
	}
	want := map[string]string{"data/b.parquet": ReasonEnded, "data/old.parquet": ReasonRetired, "data/marked.parquet": ReasonRetired, strayOld: ReasonUnlisted}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deletions %v, want %v", got, want)
	}
	st := p.Stats()
	slices.Sort(foreign)
	if st.Outside != 1 || st.Young != 1 || st.Missing != 1 || !slices.Equal(p.Missing(), []string{"data/missing.parquet"}) || st.Foreign != len(foreign) || !slices.Equal(st.ForeignSample, foreign) {
		t.Errorf("stats %+v missing %v", st, p.Missing())
	}
	// A path that cannot be placed stops the planner, naming the version.
	if len(p.Unplaced()) != 0 {
		t.Errorf("unplaced %+v", p.Unplaced())
	}
}

// TestDataPlannerUnplaced: a path that cannot be placed (a relative
// data_path, which DuckDB resolves against each reader's working
// directory) never blocks gc: a catalog in retention keeps every object
// under data/ with its file name, one leaving retention frees none of its
// files, and both are reported.
func TestDataPlannerUnplaced(t *testing.T) {
	n, err := NewNormaliser([]string{"/r/data/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	p := NewDataPlanner(n)
	v := ids(3)
	const kept, freed = "ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet", "ducklake-01a23784-9317-7442-aa55-b1a2089a1831.parquet"
	p.AddLive(v[2], 0, []meta.DataFile{{ID: 7, Path: kept, ResolvedPath: "bla/main/t/" + kept}, {ID: 8, Path: "y", ResolvedPath: "bla/main/t/y"}})
	frees := p.AddRetiring(v[0], []meta.DataFile{{ID: 1, Path: freed, ResolvedPath: "./old/" + freed}, df(2, "/r/data/old.parquet", 0, 1)})
	if !slices.Equal(frees, []string{"data/old.parquet"}) {
		t.Errorf("frees %v", frees)
	}
	old := now.Add(-30 * 24 * time.Hour)
	dels := p.Plan([]store.ObjectInfo{{Key: "data/main/t/" + kept, ModTime: old}, {Key: "data/main/t/" + freed, ModTime: old}, {Key: "data/old.parquet", ModTime: old}}, now, DefaultGrace)
	got := map[string]string{}
	for _, d := range dels {
		got[d.Key] = d.Reason
	}
	if want := map[string]string{"data/main/t/" + freed: ReasonUnlisted, "data/old.parquet": ReasonRetired}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deletions %v, want %v", got, want)
	}
	u := p.Unplaced()
	if len(u) != 2 || u[0].Version != v[2] || !u[0].Live || u[0].Count != 2 || u[1].Version != v[0] || u[1].Live || u[1].Count != 1 ||
		!errors.Is(u[0].First, ErrPath) || !strings.Contains(u[0].First.Error(), string(v[2])) || !strings.Contains(u[0].First.Error(), "relative") {
		t.Errorf("unplaced %+v", u)
	}
}

func TestFloorAndMarkerFormats(t *testing.T) {
	v := ids(3)
	f := &Floor{Format: 1, Generation: 2, MovedAt: time.Now().UTC(), Retired: []Retirement{{ID: v[0]}, {ID: v[2]}}}
	b, _ := f.Marshal()
	back, err := ParseFloor(b)
	if err != nil || !back.Has(v[2]) || back.Has(v[1]) {
		t.Fatalf("floor: %v %v", back, err)
	}
	var nilFloor *Floor
	if nilFloor.Has(v[0]) || nilFloor.RetiredList() != nil {
		t.Fatal("nil floor")
	}
	for _, bad := range []string{`{"format":1,"generation":0}`, `{"format":1,"generation":1,"retired":[{"id":"x"}]}`,
		fmt.Sprintf(`{"format":1,"generation":1,"retired":[{"id":%q},{"id":%q}]}`, v[2], v[0])} {
		if _, err := ParseFloor([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	m := &Marker{Format: 1, Version: v[0], RetiredAt: time.Now().UTC(), DataFiles: []string{}}
	b, _ = m.Marshal()
	if _, err := ParseMarker(b, v[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMarker(b, v[1]); !errors.Is(err, ErrInvalid) {
		t.Errorf("marker of another version: %v", err)
	}
	_ = refs.Name("")
}

// TestDecideRequestKeepsWhatItAdds: a request keeps every version approving
// it would add to a branch (its first-parent history down to the branch),
// not only its head; keep-last counts branches only; once the request is
// gone (only its ref log reaches them) keep-last lets them go.
func TestDecideRequestKeepsWhatItAdds(t *testing.T) {
	f := newFixture(t, 9)
	v := f.ids
	f.chain("", 0, 5)   // main: v0..v5
	f.chain(v[4], 6, 8) // the request's versions v6..v8 on top of v4
	f.in.Refs = []Ref{{"refs/heads/main", v[5]}, {"refs/requests/fix", v[8]}}
	f.in.Policy.KeepLast = 1
	d, err := Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	wantKept := []version.ID{v[5], v[6], v[7], v[8]}
	if got := kept(d); !slices.Equal(got, wantKept) {
		t.Errorf("kept %v, want main's head and the request's three versions %v", got, wantKept)
	}
	for _, k := range d.Kept {
		if k.ID == v[6] && !strings.Contains(strings.Join(k.Why, ";"), "request fix offers it") {
			t.Errorf("v6 kept for %v, want the request rule named", k.Why)
		}
	}
	// Dropped: the ref log reaches them; keep-last lets them go.
	f.in.Refs = f.in.Refs[:1]
	f.in.Logged = []version.ID{v[8]}
	d, err = Decide(f.in)
	if err != nil {
		t.Fatal(err)
	}
	if got := retired(d); !slices.Contains(got, v[6]) || !slices.Contains(got, v[8]) {
		t.Errorf("after the drop, retire %v: want the request's versions among them", got)
	}
}

// TestNormaliserPrefixCharacters: a repository whose prefix holds a
// character URLs treat specially keeps its files inside the repository,
// spelled as DuckDB reads them. DuckDB's S3 reader takes '#' as part of
// the key (a file written through s3://b/p#x/data/ lands at the key
// "p#x/data/…"), so '#' must not cut the key: it did, and gc counted every
// file of such a repository as outside it and deleted them as unlisted. A
// '?' starts DuckDB's query parameters: the reading without them is
// outside the repository while the path as written is inside it, which is
// a disputed place (gc keeps the file; verify reports it).
func TestNormaliserPrefixCharacters(t *testing.T) {
	for _, prefix := range []string{"p#x", "p x", "p%41", "p+x", "p=x", "p&x", "p'x", `p"x`, "p;x", "p@x", "p:x", "p,x", "p[x]", "p*x", "café", "p~x", "p$x", "p!x", "p<x", "p^x", "p|x", "p`x", "p{x}", "#", "p%23x"} {
		for _, scheme := range []string{"s3", "gs", "az"} {
			root := scheme + "://bucket/" + prefix + "/data/"
			n, err := NewNormaliser([]string{root}, false)
			if err != nil {
				t.Fatalf("%s: %v", root, err)
			}
			p := root + "main/t/ducklake-1.parquet"
			pl, err := n.Place(p)
			if err != nil || pl.Key != "data/main/t/ducklake-1.parquet" || pl.Disputed {
				t.Errorf("%s: %+v %v, want key data/main/t/ducklake-1.parquet", p, pl, err)
			}
			dp, err := n.PlaceDir(root + "main/t/")
			if err != nil || dp.KeyPrefix != "data/main/t/" || dp.Disputed {
				t.Errorf("%s: PlaceDir %+v %v", root, dp, err)
			}
			// Outside stays outside.
			if pl, err := n.Place(scheme + "://bucket/other/data/main/t/f.parquet"); err != nil || pl.Key != "" || len(pl.Aliases) != 0 {
				t.Errorf("%s: other prefix: %+v %v", root, pl, err)
			}
		}
	}
	// '?' in the prefix: DuckDB reads query parameters there.
	n, err := NewNormaliser([]string{"s3://bucket/q?x/data/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := n.Place("s3://bucket/q?x/data/main/t/f.parquet")
	if err != nil || pl.Key != "data/main/t/f.parquet" || !pl.Disputed {
		t.Errorf("'?' prefix: %+v %v, want key data/main/t/f.parquet, disputed", pl, err)
	}
	dp, err := n.PlaceDir("s3://bucket/q?x/data/main/t/")
	if err != nil || dp.KeyPrefix != "data/main/t/" || !dp.Disputed {
		t.Errorf("'?' prefix: PlaceDir %+v %v", dp, err)
	}
	// A query after the key is DuckDB's settings, not a dispute; the path
	// with it is an alias.
	n, err = NewNormaliser([]string{"s3://bucket/r/data/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	pl, err = n.Place("s3://bucket/r/data/main/f.parquet?s3_region=eu-west-1")
	if err != nil || pl.Key != "data/main/f.parquet" || pl.Disputed || !slices.Contains(pl.Aliases, "data/main/f.parquet?s3_region=eu-west-1") {
		t.Errorf("query: %+v %v", pl, err)
	}
	// A fragment-looking '#' inside a key: DuckDB's reading keeps it, the
	// reading that cuts it is an alias (gc protects both).
	pl, err = n.Place("s3://bucket/r/data/main/a#b.parquet")
	if err != nil || pl.Key != "data/main/a#b.parquet" || !slices.Contains(pl.Aliases, "data/main/a") {
		t.Errorf("'#' in a name: %+v %v", pl, err)
	}
}

// TestPolicyLeavesAt: the time rule dates a version's leaving at
// created_at + keep_within; without it no date is given.
func TestPolicyLeavesAt(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := DefaultPolicy()
	if at, ok := p.LeavesAt(created); ok {
		t.Errorf("default policy: LeavesAt = %v, true; want no date", at)
	}
	p.KeepLast = 5
	if _, ok := p.LeavesAt(created); ok {
		t.Error("keep_last alone dates a version's leaving")
	}
	p.KeepWithin = Duration(30 * 24 * time.Hour)
	at, ok := p.LeavesAt(created)
	if want := created.AddDate(0, 0, 30); !ok || !at.Equal(want) {
		t.Errorf("keep_within 30d: LeavesAt = %v, %v; want %v, true", at, ok, want)
	}
}
