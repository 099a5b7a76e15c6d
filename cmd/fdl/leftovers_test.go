package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
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

// TestHTTPEscapedPartitionNames: DuckDB's ducklake writer names a
// partition folder by the value, percent-encoded (k=x%20y). Over http(s)
// DuckDB requests that name as it is, and a web server decodes %20, looks
// for "k=x y" and answers 404, while fdl (which escapes the key's '%')
// found the file. verify --data over http(s) now asks for what DuckDB
// asks for (the same request line, which the logging server compares) and
// reports each file a reader over http(s) cannot reach
// (data-http-unreachable), with the real DuckDB reading through the line
// fdl attach prints.
func TestHTTPEscapedPartitionNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	folder := filepath.Join(t.TempDir(), "repo")
	r, err := repo.Init(ctx, folder, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "w")
	co, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite", "httpfs").Start(t)
	d.MustQuery(t, realduck.OnLake(co.Attach, "CREATE TABLE t (k VARCHAR, v INT); ALTER TABLE t SET PARTITIONED BY (k); INSERT INTO t VALUES ('x y', 1), ('plain', 2)", false))
	mustFdl(t, "-C", dir, "commit", "-m", "partitions")
	mustFdl(t, "-C", dir, "push")
	var mu sync.Mutex
	var requested []string
	files := http.FileServer(http.Dir(folder))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/k=") {
			mu.Lock()
			requested = append(requested, req.URL.EscapedPath())
			mu.Unlock()
		}
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(requested)
		requested = nil
		slices.Sort(out)
		return slices.Compact(out)
	}
	attach := strings.TrimSpace(mustFdl(t, "--repo", srv.URL, "attach", "main"))
	alias := attachedAlias(t, attach)
	_, err = d.Query("SET enable_external_file_cache = false; " + attach + "\nSELECT count(*) FROM " + alias + ".t WHERE k = 'x y';")
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("the real DuckDB read k=x%%20y over http: %v", err)
	}
	duck := took()
	if len(duck) != 1 || !strings.Contains(duck[0], "/k=x%20y/") {
		t.Fatalf("DuckDB requested %q, want the raw name k=x%%20y", duck)
	}
	code, out := fdlProc(t, nil, "--repo", srv.URL, "verify", "--data")
	if code != 1 || !strings.Contains(out, "data-http-unreachable") || !strings.Contains(out, srv.URL+duck[0]) || strings.Contains(out, "k=plain") {
		t.Fatalf("verify --data over http: exit %d\n%s", code, out)
	}
	t.Logf("verify --data over http:\n%s", out)
	if got := took(); !slices.Contains(got, duck[0]) {
		t.Errorf("verify requested %q, DuckDB %q", got, duck)
	}
	// show over http warns, naming the URL DuckDB requests.
	code, out = fdlProc(t, nil, "--repo", srv.URL, "show", "main")
	if code != 0 || !strings.Contains(out, "warning: readers over http(s) cannot read 1 data file(s)") || !strings.Contains(out, srv.URL+duck[0]) {
		t.Errorf("show over http: exit %d\n%s", code, out)
	}
	// On the folder itself, DuckDB reads the file by its path: no problem.
	mustFdl(t, "--repo", folder, "verify", "--data")
	if code, out = fdlProc(t, nil, "--repo", folder, "show", "main"); code != 0 || strings.Contains(out, "warning") {
		t.Errorf("show on the folder: exit %d\n%s", code, out)
	}
}

// TestDamagedRecordAdvice: a version.json that does not parse gets the
// record's own advice (restore it, or write back the copy its history
// pack holds), from verify and from a command that reads it, not a
// history pack's ("pack-invalid": delete the pack and run gc).
func TestDamagedRecordAdvice(t *testing.T) {
	t.Parallel()
	folder, base := newRepoWithBase(t)
	path := filepath.Join(folder, "versions", string(base), "version.json")
	os.Chmod(path, 0o644)
	if err := os.WriteFile(path, []byte(`{"id": broken`), 0o644); err != nil {
		t.Fatal(err)
	}
	pack := "index/packs/" + string(base) + ".json"
	code, out := fdlProc(t, nil, "--repo", folder, "verify")
	if code != 1 || !strings.Contains(out, "record-invalid "+string(base)) || strings.Contains(out, "pack-invalid") ||
		!strings.Contains(out, "write back the copy the version's history pack holds ("+pack) {
		t.Errorf("verify with a damaged version.json: exit %d\n%s", code, out)
	}
	code, out = fdlProc(t, nil, "--repo", folder, "show", string(base))
	if code != 1 || !strings.Contains(out, "hint: version.json is the version's record") || !strings.Contains(out, pack) || strings.Contains(out, "fdl gc") {
		t.Errorf("show of a version whose version.json is damaged: exit %d\n%s", code, out)
	}
}

// TestRevertInterruptedAfterSnapshot: a revert interrupted after its
// snapshot was written (during its commit) does not say "nothing was
// changed": it says the snapshot stays in the working catalog, and how to
// go on (commit it) or take it back (restore the base). The next commit
// records the revert.
func TestRevertInterruptedAfterSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	folder, _ := newRepoWithBase(t)
	dir := filepath.Join(t.TempDir(), "w")
	if code, out := fdlProc(t, []string{"FDL_CATALOG_FORMAT=duckdb"}, "checkout", folder, dir); code != 0 {
		t.Fatalf("checkout: exit %d\n%s", code, out)
	}
	duckWrite(t, duckSession(t), dir, "INSERT INTO base SELECT 100 AS id")
	mustFdl(t, "-C", dir, "commit", "-m", "add 100")
	mustFdl(t, "-C", dir, "push")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := workdir.Open(dir, repo.Options{Step: func(step string) {
		if step == "revert:written" {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Revert(cctx, workdir.RevertOptions{Rev: "main"})
	w.Close()
	code := exitCode(cctx, err)
	ios, _, errOut := term.Test()
	printError(ios, &globals{}, nil, err, code)
	msg := errOut.String()
	if code != exitInterrupt || strings.Contains(msg, "nothing was changed") || !strings.Contains(msg, "stays in the working catalog") ||
		!strings.Contains(msg, "hint: record the revert as prepared (its message is kept): fdl -C "+dir+" commit") || !strings.Contains(msg, " restore --source ") {
		t.Fatalf("revert interrupted in its commit: exit %d\n%s", code, msg)
	}
	// Going on as the message says: the commit records the revert.
	out := mustFdl(t, "-C", dir, "commit")
	if !strings.Contains(out, "Revert") {
		t.Errorf("commit after the interrupted revert:\n%s", out)
	}
}

// TestPushRefusesWrongSize: a push's data check, which Stats each file a
// version adds, compares its size with the catalog's file_size_bytes: a
// data file cut short after DuckDB wrote it is refused (data_size), not
// published. Before, the push checked existence only.
func TestPushRefusesWrongSize(t *testing.T) {
	t.Parallel()
	folder, _ := newRepoWithBase(t)
	dir := filepath.Join(t.TempDir(), "w")
	if code, out := fdlProc(t, []string{"FDL_CATALOG_FORMAT=duckdb"}, "checkout", folder, dir); code != 0 {
		t.Fatalf("checkout: exit %d\n%s", code, out)
	}
	before := map[string]bool{}
	filepath.WalkDir(filepath.Join(folder, "data"), func(p string, _ os.DirEntry, _ error) error { before[p] = true; return nil })
	duckWrite(t, duckSession(t), dir, "CREATE TABLE more AS SELECT i AS id, 'v' || i AS s FROM range(5000) t(i)")
	var added []string
	filepath.WalkDir(filepath.Join(folder, "data"), func(p string, d os.DirEntry, _ error) error {
		if !before[p] && !d.IsDir() {
			added = append(added, p)
		}
		return nil
	})
	if len(added) != 1 {
		t.Fatalf("the write added %v, want one data file", added)
	}
	b, err := os.ReadFile(added[0])
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(added[0], 0o644)
	if err := os.WriteFile(added[0], b[:len(b)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	mustFdl(t, "-C", dir, "commit", "-m", "more")
	code, out := fdlProc(t, nil, "-C", dir, "--json", "push")
	if code != 1 || !strings.Contains(out, `"kind":"data_size"`) || !strings.Contains(out, fmt.Sprintf("%d bytes in the store, %d recorded", len(b)-100, len(b))) {
		t.Fatalf("push of a version whose data file was cut short: exit %d\n%s", code, out)
	}
}

// TestUnknownFormatNamesUserCatalog: a catalog in a DuckLake format fdl
// does not know is refused naming the user's catalog, never the temporary
// copy a freeze or a fetch works on (both catalog forms; status, commit,
// checkout --from).
func TestUnknownFormatNamesUserCatalog(t *testing.T) {
	t.Parallel()
	folder, _ := newRepoWithBase(t)
	for _, form := range []string{"duckdb", "sqlite"} {
		dir := filepath.Join(t.TempDir(), "w")
		if code, out := fdlProc(t, []string{"FDL_CATALOG_FORMAT=" + form}, "checkout", folder, dir, "--orphan", "--branch", "new-"+form); code != 0 {
			t.Fatalf("checkout: exit %d\n%s", code, out)
		}
		cat := filepath.Join(dir, "ducklake."+form)
		driver, dsn, update := "duckdb", "", "ATTACH "+sqlquote.String(cat)+" AS c; UPDATE c.ducklake_metadata SET value = '1.2' WHERE key = 'version'; DETACH c"
		if form == "sqlite" {
			driver, dsn, update = "sqlite3", cat, "UPDATE ducklake_metadata SET value = '1.2' WHERE key = 'version'"
		}
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(update); err != nil {
			t.Fatal(err)
		}
		db.Close()
		for _, args := range [][]string{{"-C", dir, "status"}, {"-C", dir, "commit", "-m", "x", "--allow-nothing"}, {"checkout", folder, filepath.Join(t.TempDir(), "x"), "--from", cat, "--branch", "from-" + form}} {
			code, out := fdlProc(t, nil, args...)
			if code != 1 || !strings.Contains(out, `unsupported DuckLake format "1.2" in `+cat) || strings.Contains(out, "fdl-freeze") || strings.Contains(out, os.TempDir()+"/fdl-") {
				t.Errorf("%s catalog, fdl %v: exit %d\n%s", form, args, code, out)
			}
		}
	}
}
