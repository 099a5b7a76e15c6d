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
	if err := os.WriteFile(filepath.Join(folder, "data", "young.parquet"), []byte("PAR1 young"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := serveFolder(t, folder)
	out := mustFdl(t, "--repo", u, "gc")
	if strings.Contains(out, "young.parquet") || strings.Contains(out, "-1 B") || strings.Contains(out, "0001-01-01") {
		t.Errorf("gc plan over http deletes an undated file or prints -1 B:\n%s", out)
	}
	code, out := fdlProc(t, nil, "--repo", u, "gc", "--yes")
	if code != 1 || !strings.Contains(out, "store is read-only") || !strings.Contains(out, u) || strings.Contains(out, "Total to delete") {
		t.Errorf("gc --yes over http: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(folder, "data", "young.parquet")); err != nil {
		t.Error(err)
	}
}
