package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serveWithHTMLFallback serves a folder over http:// as a web app's server
// does: a path with no file gets 200 and an HTML page (the app's
// index.html), not 404.
func serveWithHTMLFallback(t *testing.T, folder string) string {
	t.Helper()
	files := http.FileServer(http.Dir(folder))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(filepath.Join(folder, filepath.FromSlash(r.URL.Path))); err != nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("<!DOCTYPE html>\n<html><head><title>App</title></head><body><div id=root></div></body></html>\n"))
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHTTPHTMLFallback: a server that answers 200 with an HTML page for
// paths it has no file for (a single-page app's fallback) is not taken
// for a damaged repository ("restore it from a backup"): fdl says the
// server answered with an HTML page instead of the object, likely a wrong
// URL or a web app's fallback, naming the URL. A missing object read that
// way is missing (a ref that does not exist, a version folder's file), and
// the repository's own objects still read.
func TestHTTPHTMLFallback(t *testing.T) {
	t.Parallel()
	folder, base := newRepoWithBase(t)
	u := serveWithHTMLFallback(t, folder)
	// The repository reads: its missing optional files (retention policy,
	// packs) are missing, not damaged.
	if out := mustFdl(t, "--repo", u, "log"); !strings.Contains(out, string(base)[:8]) {
		t.Errorf("log over a server with an HTML fallback:\n%s", out)
	}
	mustFdl(t, "--repo", u, "verify")
	// A ref that does not exist is named as such.
	code, out := fdlProc(t, nil, "--repo", u, "show", "nope")
	if code != 1 || strings.Contains(out, "backup") || !strings.Contains(out, "nope") {
		t.Errorf("show of a missing ref: exit %d\n%s", code, out)
	}
	// A wrong URL (a site's page, no repository): the HTML answer is named.
	code, out = fdlProc(t, nil, "--repo", u+"/app", "log")
	if code != 1 || strings.Contains(out, "backup") || !strings.Contains(out, "HTML page") || !strings.Contains(out, u+"/app") {
		t.Errorf("log at a URL the server answers with an HTML page: exit %d\n%s", code, out)
	}
	// A version whose catalog the server does not have (its folder's
	// listing lacks it): missing, not a checksum mismatch to restore
	// from a backup.
	if err := os.Rename(filepath.Join(folder, "versions", string(base), "ducklake.duckdb"), filepath.Join(folder, "moved.duckdb")); err != nil {
		t.Fatal(err)
	}
	code, out = fdlProc(t, nil, "--repo", u, "show", "main")
	if code != 1 || strings.Contains(out, "backup") || strings.Contains(out, "CHECKSUM") || !strings.Contains(out, u+"/versions/"+string(base)+"/ducklake.duckdb: does not exist") {
		t.Errorf("show with the catalog answered by an HTML page: exit %d\n%s", code, out)
	}
}
