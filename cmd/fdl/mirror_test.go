package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/workdir"
)

// mirrorSource makes a folder repository whose main holds two versions
// written by the real DuckDB (table base: ids 0..9, then 1000), tagged
// v1 (the first) and v2 (the second), and returns its path and a working
// directory on main.
func mirrorSource(t *testing.T) (string, string) {
	t.Helper()
	url, _ := newRepoWithBase(t)
	dir := filepath.Join(t.TempDir(), "w")
	mustFdl(t, "checkout", url, dir, "--catalog-format", "sqlite")
	mustFdl(t, "--repo", url, "tag", "v1", "main")
	mirrorWrite(t, dir, "INSERT INTO base VALUES (1000)")
	mustFdl(t, "--repo", url, "tag", "v2", "main")
	return url, dir
}

// mirrorWrite writes sql into the SQLite working directory dir, commits
// and pushes it.
func mirrorWrite(t *testing.T, dir, sql string) {
	t.Helper()
	if err := duckLake(t, duckSession(t), filepath.Join(dir, workdir.SQLiteCatalogName), sql, false); err != nil {
		t.Fatal(err)
	}
	mustFdl(t, "-C", dir, "commit", "-m", sql)
	mustFdl(t, "-C", dir, "push")
}

// mirrorCount reads count(*) of base in REV at the repository url with
// the real DuckDB, through the line fdl attach prints.
func mirrorCount(t *testing.T, url, rev string) any {
	t.Helper()
	line := strings.TrimSpace(mustFdl(t, "--repo", url, "attach", rev, "--as", "m"))
	res, err := duckSession(t).Query(line + "; SELECT count(*) AS n FROM m.base; DETACH m")
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return res[0].Rows[0][0]
}

type mirrorJSON struct {
	Created   bool  `json:"created"`
	Versions  int   `json:"versions_copied"`
	Retired   int   `json:"retired_copied"`
	Objects   int   `json:"objects"`
	DataFiles int   `json:"data_files_copied"`
	Bytes     int64 `json:"bytes"`
	RefsMoved int   `json:"refs_moved"`
	Refs      []struct {
		Ref    string `json:"ref"`
		Action string `json:"action"`
	} `json:"mirrored"`
}

func mirrorRun(t *testing.T, env []string, args ...string) (int, mirrorJSON, string) {
	t.Helper()
	code, out := fdlProc(t, env, append([]string{"mirror", "--json"}, args...)...)
	var res mirrorJSON
	if i := strings.Index(out, "{"); i >= 0 {
		json.NewDecoder(strings.NewReader(out[i:])).Decode(&res)
	}
	return code, res, out
}

// TestMirrorFolder mirrors a folder repository to a folder: refs, tags,
// versions and data files arrive, the real DuckDB reads the mirror
// through the line fdl prints once the source is gone, a second run
// copies nothing, and a new version is copied incrementally.
func TestMirrorFolder(t *testing.T) {
	t.Parallel()
	src, dir := mirrorSource(t)
	dst := filepath.Join(t.TempDir(), "mirror")
	code, res, out := mirrorRun(t, nil, src, dst)
	if code != 0 || !res.Created || res.Versions != 2 || res.RefsMoved != 3 || res.DataFiles != 2 {
		t.Fatalf("first mirror: exit %d, %+v\n%s", code, res, out)
	}
	code, res, out = mirrorRun(t, nil, src, dst)
	if code != 0 || res.Created || res.Objects != 0 || res.RefsMoved != 0 {
		t.Fatalf("second mirror copied something: exit %d, %+v\n%s", code, res, out)
	}
	mirrorWrite(t, dir, "INSERT INTO base VALUES (1001)")
	code, res, out = mirrorRun(t, nil, src, dst)
	if code != 0 || res.Versions != 1 || res.DataFiles != 1 || res.RefsMoved != 1 {
		t.Fatalf("incremental mirror: exit %d, %+v\n%s", code, res, out)
	}
	mustFdl(t, "--repo", dst, "verify")
	// The source goes away: the mirror's readers read its own data/.
	if err := os.Rename(src, src+".gone"); err != nil {
		t.Fatal(err)
	}
	for rev, want := range map[string]float64{"main": 12, "v1": 10, "v2": 11} {
		if got := mirrorCount(t, dst, rev); got != want {
			t.Errorf("count(*) of base at %s in the mirror = %v, want %v", rev, got, want)
		}
	}
}

// mirrorRefs returns the branches and tags of the repository at url, as
// "heads/NAME=ID" and "tags/NAME=ID" lines, sorted.
func mirrorRefs(t *testing.T, url string) string {
	t.Helper()
	var lines []string
	for _, kind := range []string{"branch", "tag"} {
		var list []struct {
			Ref string `json:"ref"`
			ID  string `json:"id"`
		}
		out := mustFdl(t, "--repo", url, kind, "-l", "--json")
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("%s -l --json: %v\n%s", kind, err, out)
		}
		for _, r := range list {
			lines = append(lines, strings.TrimPrefix(r.Ref, "refs/")+"="+r.ID)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// killMirrorSteps are the steps a mirror of mirrorSource's repository
// passes (the "#2" ones for its second version and its second ref).
var killMirrorSteps = []string{"mirror:catalog", "mirror:data", "mirror:file", "mirror:record", "mirror:pack",
	"mirror:catalog#2", "mirror:record#2", "mirror:log", "mirror:reflog", "mirror:ref", "mirror:ref#2"}

// killMirrorFewSteps are the steps the later hops of
// TestKillMirrorAtEveryStep are killed at: one of each kind of write.
var killMirrorFewSteps = []string{"mirror:catalog", "mirror:data", "mirror:record#2", "mirror:log", "mirror:ref#2"}

// killMirrorAtEveryStep mirrors src to a fresh destination (made by
// fresh) killed at each step: the destination's refs are then each
// either absent or where the source's are, verify finds nothing wrong,
// and running the mirror again completes it. It returns the last
// destination.
func killMirrorAtEveryStep(t *testing.T, src string, steps []string, fresh func(t *testing.T) string) string {
	t.Helper()
	want := mirrorRefs(t, src)
	wanted := map[string]bool{}
	for _, l := range strings.Split(want, "\n") {
		wanted[l] = true
	}
	var dst string
	for _, step := range steps {
		dst = fresh(t)
		if code, out := fdlProc(t, []string{"FDL_TEST_KILL_AT=" + step}, "mirror", src, dst); code != -1 {
			t.Fatalf("mirror was not killed at %s: exit %d\n%s", step, code, out)
		}
		for _, l := range strings.Split(mirrorRefs(t, dst), "\n") {
			if l != "" && !wanted[l] {
				t.Errorf("after a kill at %s the destination holds %s, not the source's", step, l)
			}
		}
		if code, out := fdlProc(t, nil, "--repo", dst, "verify"); code != 0 {
			t.Errorf("verify after a kill at %s: exit %d\n%s", step, code, out)
		}
		if code, res, out := mirrorRun(t, nil, src, dst); code != 0 || res.Created {
			t.Fatalf("mirror again after a kill at %s: exit %d\n%s", step, code, out)
		}
		if got := mirrorRefs(t, dst); got != want {
			t.Errorf("after a kill at %s and a rerun, the destination's refs are\n%s\nwant\n%s", step, got, want)
		}
		mustFdl(t, "--repo", dst, "verify")
	}
	return dst
}

// TestKillMirrorAtEveryStep mirrors a folder to S3 killed (SIGKILL) at
// every step and run again, then that S3 mirror to Azure and to a
// folder, killed at one step of each kind of write (on Azure in `make
// test` the first write and the last ref's swap only); the real DuckDB
// then reads the last folder mirror, through the line fdl prints, once
// the first source is gone.
func TestKillMirrorAtEveryStep(t *testing.T) {
	t.Parallel()
	src, _ := mirrorSource(t)
	onS3 := killMirrorAtEveryStep(t, src, killMirrorSteps, func(t *testing.T) string { return cloudtest.S3(t) })
	azureSteps := killMirrorFewSteps
	if !allStores() {
		// The first write and the last ref's compare-and-swap on Azure;
		// every kind of write with FDL_ALL_STORES=1 (the folder hop
		// below and the S3 one above take them all).
		azureSteps = []string{"mirror:catalog", "mirror:ref#2"}
	}
	killMirrorAtEveryStep(t, onS3, azureSteps, func(t *testing.T) string { return cloudtest.Azure(t) })
	folder := killMirrorAtEveryStep(t, onS3, killMirrorFewSteps, func(t *testing.T) string { return filepath.Join(t.TempDir(), "m") })
	if err := os.Rename(src, src+".gone"); err != nil {
		t.Fatal(err)
	}
	if got := mirrorCount(t, folder, "v2"); got != float64(11) {
		t.Errorf("count(*) of base at v2 in the folder mirror of the S3 mirror = %v, want 11", got)
	}
}

// TestMirrorTagsOverHTTP publishes the tags of a repository by mirroring
// them to a folder a web server serves (the README's recipe): the real
// DuckDB with httpfs reads a tag over HTTP through the line fdl attach
// prints there, once the source is gone; the branch was not copied. The
// web host is then a mirror's source itself: without listings it needs
// the refs by name, and with them it is copied to a folder the real
// DuckDB reads.
func TestMirrorTagsOverHTTP(t *testing.T) {
	t.Parallel()
	duck := realduck.Find(t, realduck.V15, "ducklake", "httpfs")
	src, _ := mirrorSource(t)
	www := t.TempDir()
	pub := filepath.Join(www, "sales")
	if code, res, out := mirrorRun(t, nil, src, pub, "--ref", "tags/*"); code != 0 || res.RefsMoved != 2 {
		t.Fatalf("mirror of the tags: exit %d\n%s", code, out)
	}
	var nolist atomic.Bool
	fs := http.FileServer(http.Dir(www))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if nolist.Load() && strings.HasSuffix(r.URL.Path, "/") {
			http.Error(w, "listing is off", http.StatusForbidden)
			return
		}
		fs.ServeHTTP(w, r)
	}))
	defer srv.Close()
	u := srv.URL + "/sales"
	if err := os.Rename(src, src+".gone"); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(mustFdl(t, "--repo", u, "attach", "v2", "--as", "sales"))
	if !strings.Contains(line, "DATA_PATH '"+u+"/data/'") {
		t.Fatalf("the line for the web host does not read its data/: %s", line)
	}
	res, err := duck.Query("LOAD httpfs; " + line + " SELECT count(*) AS n FROM sales.base")
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if got := res[len(res)-1].Rows[0][0]; got != float64(11) {
		t.Errorf("count(*) of base at v2 over HTTP = %v, want 11", got)
	}
	if code, out := fdlProc(t, nil, "--repo", u, "show", "main"); code == 0 {
		t.Errorf("the branch was mirrored with --ref tags/*:\n%s", out)
	}

	nolist.Store(true)
	laptop := filepath.Join(t.TempDir(), "laptop")
	if code, out := fdlProc(t, nil, "mirror", u, laptop); code != 1 || !strings.Contains(out, "cannot list its refs") || !strings.Contains(out, "--ref heads/NAME --ref tags/NAME") {
		t.Errorf("a mirror of a web host without listings and without --ref: exit %d\n%s", code, out)
	}
	if code, res, out := mirrorRun(t, nil, u, laptop, "--ref", "tags/v1", "--ref", "tags/v2"); code != 0 || res.Versions != 2 || res.DataFiles != 2 {
		t.Fatalf("mirror of a web host by name: exit %d\n%s", code, out)
	}
	mustFdl(t, "--repo", laptop, "verify")
	if got := mirrorCount(t, laptop, "v1"); got != float64(10) {
		t.Errorf("count(*) of base at v1 in the mirror of the web host = %v, want 10", got)
	}
}

// TestMirrorRetiredAndConcurrentPushes mirrors a repository whose gc
// retired a version (it arrives retired: record and marker, no catalog)
// while pushes go on at the source: every mirror run succeeds with the
// destination's refs where the source's were when it read them, and a
// last run brings the destination to the source's refs.
func TestMirrorRetiredAndConcurrentPushes(t *testing.T) {
	t.Parallel()
	src, dir := mirrorSource(t)
	mirrorWrite(t, dir, "INSERT INTO base VALUES (1001)")
	mirrorWrite(t, dir, "INSERT INTO base VALUES (1002)")
	mustFdl(t, "--repo", src, "retention", "--keep-last", "1")
	mustFdl(t, "--repo", src, "gc", "--yes")
	dst := filepath.Join(t.TempDir(), "m")
	code, res, out := mirrorRun(t, nil, src, dst)
	if code != 0 || res.Versions != 4 || res.Retired != 1 {
		t.Fatalf("mirror of a repository with a retired version: exit %d\n%s", code, out)
	}
	var log []struct {
		Retired bool `json:"retired"`
		Seq     int  `json:"seq"`
	}
	if err := json.Unmarshal([]byte(mustFdl(t, "--repo", dst, "log", "--json")), &log); err != nil {
		t.Fatal(err)
	}
	if len(log) != 4 || !log[1].Retired || log[0].Retired || log[2].Retired {
		t.Errorf("the mirror's log does not show seq 3 retired, the others kept: %+v", log)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 {
			mirrorWrite(t, dir, fmt.Sprintf("INSERT INTO base VALUES (%d)", 2000+i))
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if code, _, out := mirrorRun(t, nil, src, dst); code != 0 {
			t.Fatalf("mirror during pushes: exit %d\n%s", code, out)
		}
	}
	if code, _, out := mirrorRun(t, nil, src, dst); code != 0 {
		t.Fatalf("mirror after the pushes: exit %d\n%s", code, out)
	}
	if got, want := mirrorRefs(t, dst), mirrorRefs(t, src); got != want {
		t.Errorf("the mirror's refs\n%s\nwant the source's\n%s", got, want)
	}
	mustFdl(t, "--repo", dst, "verify")
	if got := mirrorCount(t, dst, "main"); got != float64(16) {
		t.Errorf("count(*) of base at main in the mirror = %v, want 16", got)
	}
}

// TestMirrorConcurrentFirstRuns: four first mirrors to one new DST at once
// all succeed (the ones that lose the race to write fdl.json take the
// repository the winner made, as a later run does), DST's main is the
// source's and fdl verify passes. Before, the losers failed with
// "init DST: write fdl.json: already exists".
func TestMirrorConcurrentFirstRuns(t *testing.T) {
	t.Parallel()
	src, _ := mirrorSource(t)
	for round := range 2 {
		dst := filepath.Join(t.TempDir(), "mirror")
		codes := make([]int, 4)
		outs := make([]string, 4)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _, outs[i] = mirrorRun(t, nil, src, dst)
			}()
		}
		wg.Wait()
		for i, c := range codes {
			if c != 0 {
				t.Fatalf("round %d: mirror %d of 4 at once exited %d:\n%s", round, i, c, outs[i])
			}
		}
		mustFdl(t, "--repo", dst, "verify")
		if a, b := mustFdl(t, "--repo", src, "log", "-n", "1"), mustFdl(t, "--repo", dst, "log", "-n", "1"); a != b {
			t.Fatalf("round %d: mirror's main differs from the source's:\n%s\n%s", round, b, a)
		}
	}
}
