package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	Versions  int   `json:"versions"`
	Objects   int   `json:"objects"`
	DataFiles int   `json:"data_files"`
	Bytes     int64 `json:"bytes"`
	RefsMoved int   `json:"refs_moved"`
	Refs      []struct {
		Ref    string `json:"ref"`
		Action string `json:"action"`
	} `json:"refs"`
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
