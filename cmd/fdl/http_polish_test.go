package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serveFolder serves a folder repository read-only over http:// (with
// directory listings, as a static web server does) and returns its URL.
func serveFolder(t *testing.T, folder string) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(folder)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHTTPGCUnknownTimes: an http(s) listing tells neither sizes nor
// modification times; gc's plan there never deletes a file it cannot date
// (a young data file stays), never prints a size of -1, and gc --yes is
// refused before any step because nothing can be written over http.
func TestHTTPGCUnknownTimes(t *testing.T) {
	folder, _ := newRepoWithBase(t)
	// A name DuckDB's ducklake writes, so that only its unknown age keeps it.
	const young = "ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet"
	if err := os.WriteFile(filepath.Join(folder, "data", young), []byte("PAR1 young"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := serveFolder(t, folder)
	out := mustFdl(t, "--repo", u, "gc")
	if strings.Contains(out, young) || strings.Contains(out, "-1 B") || strings.Contains(out, "0001-01-01") {
		t.Errorf("gc plan over http deletes an undated file or prints -1 B:\n%s", out)
	}
	code, out := fdlProc(t, nil, "--repo", u, "gc", "--yes")
	if code != 1 || !strings.Contains(out, "store is read-only") || !strings.Contains(out, u) || strings.Contains(out, "Total to delete") {
		t.Errorf("gc --yes over http: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(folder, "data", young)); err != nil {
		t.Error(err)
	}
}

// TestHTTPReadOnlyMessages: over http(s) a missing repository is not
// offered 'fdl init' (nothing is created over http), and a tag says first
// that the repository is read-only, before any step of the move.
func TestHTTPReadOnlyMessages(t *testing.T) {
	folder, _ := newRepoWithBase(t)
	u := serveFolder(t, folder)
	code, out := fdlProc(t, nil, "log", "--repo", u+"/nope")
	if code != 1 || !strings.Contains(out, u+"/nope: not an fdl repository") || !strings.Contains(out, "fdl cannot create one there") || strings.Contains(out, "fdl init") {
		t.Errorf("log on a missing repository over http: exit %d\n%s", code, out)
	}
	code, out = fdlProc(t, nil, "tag", "t2", "--repo", u)
	if want := "fdl: repository " + u + ": store is read-only over http(s): refs/tags/t2 is not written; writes go through the repository's own folder or object-store URL"; code != 1 || !strings.HasPrefix(out, want) || strings.Contains(out, "ref log entry") {
		t.Errorf("tag over http: exit %d\n%s\nwant it to start with %q", code, out, want)
	}
}

// TestHTTPCheckoutWarns: a checkout over http(s) is for reading only (its
// data path is an http URL DuckDB cannot write to, and push cannot publish
// there): it succeeds with a warning that says so and what to do instead.
func TestHTTPCheckoutWarns(t *testing.T) {
	folder, _ := newRepoWithBase(t)
	u := serveFolder(t, folder)
	code, out := fdlProc(t, nil, "checkout", u, filepath.Join(t.TempDir(), "w"))
	if code != 0 || !strings.Contains(out, "warning: READ-ONLY CHECKOUT: the repository is read over http(s)") || !strings.Contains(out, "cannot write its data files to "+u+"/data/") || !strings.Contains(out, "check out from the repository's own location") {
		t.Errorf("checkout over http: exit %d\n%s", code, out)
	}
	code, out = fdlProc(t, nil, "checkout", folder, filepath.Join(t.TempDir(), "w2"))
	if code != 0 || strings.Contains(out, "READ-ONLY") {
		t.Errorf("checkout of the folder warns: exit %d\n%s", code, out)
	}
}

// TestHTTPShowStoreFailureIsNoMismatch: a catalog the server does not give
// (500, 403, 404, a body cut short) is not a checksum mismatch: show says
// the catalog could not be checked, not that it differs from its record.
func TestHTTPShowStoreFailureIsNoMismatch(t *testing.T) {
	folder, _ := newRepoWithBase(t)
	fs := http.FileServer(http.Dir(folder))
	for _, c := range []struct {
		name  string
		serve func(w http.ResponseWriter)
	}{
		{"500", func(w http.ResponseWriter) { http.Error(w, "boom", http.StatusInternalServerError) }},
		{"403", func(w http.ResponseWriter) { http.Error(w, "no", http.StatusForbidden) }},
		{"short body", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "100000")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("PAR1 cut short"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/ducklake.duckdb") && r.Method == http.MethodGet && r.Header.Get("Range") == "" {
					c.serve(w)
					return
				}
				fs.ServeHTTP(w, r)
			}))
			defer srv.Close()
			code, out := fdlProc(t, nil, "--repo", srv.URL, "show", "main")
			if code == 0 || strings.Contains(out, "CHECKSUM MISMATCH") || !strings.Contains(out, "CATALOG NOT CHECKED") {
				t.Fatalf("show with the catalog answered %s: exit %d\n%s", c.name, code, out)
			}
		})
	}
}
