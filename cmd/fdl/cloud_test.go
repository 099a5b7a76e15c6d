package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// proxy starts a reverse proxy on 127.0.0.1 in front of target
// (http://host:port). hook sees every request first and may answer it
// itself (it can forward with next); it returns false to let the request
// through unchanged. The Host header is kept, so signed requests stay valid.
func proxy(t *testing.T, target string, hook func(w http.ResponseWriter, r *http.Request, next http.Handler) bool) string {
	t.Helper()
	tu, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(tu)
	rp.ErrorLog = log.New(io.Discard, "", 0) // aborted uploads are the point of some tests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hook != nil && hook(w, r, rp) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// commitChange checks out url's main into a new directory, adds a table and
// commits: a working directory with one version to push.
func commitChange(t *testing.T, url, table string) (dir string, id version.ID) {
	t.Helper()
	ctx := context.Background()
	r, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir = filepath.Join(t.TempDir(), "w")
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	duckWrite(t, duckSession(t), dir, "CREATE TABLE "+sqlquote.Ident(table)+"(x INTEGER)")
	wd, err := workdir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "change " + table, Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return dir, rec.ID
}

// TestPushAmbiguousConflict: the store applies the ref move but the client
// is told 412 (what a retried request can see). The push re-reads the ref,
// finds its own version there and reports success (docs/spec.md §4).
func TestPushAmbiguousConflict(t *testing.T) {
	s3url := cloudtest.Gofakes3(t)
	var lies atomic.Int32
	lying := proxy(t, cloudtest.Endpoint(s3url), func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/refs/heads/main") || r.Header.Get("If-Match") == "" {
			return false
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return true
		}
		lies.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`)
		return true
	})
	url := cloudtest.WithEndpoint(t, cloudtest.WithPrefix(s3url, t.Name()), lying)
	url, base := newRepoWithBaseAt(t, url)
	dir, id := commitChange(t, url, "after")
	code, out := fdlProc(t, nil, "-C", dir, "push")
	if code != 0 {
		t.Fatalf("push whose ref move succeeded but was answered 412: exit %d (want 0)\n%s", code, out)
	}
	if lies.Load() != 1 {
		t.Fatalf("the proxy answered %d ref moves with a false 412, want 1: the test did not exercise the rule", lies.Load())
	}
	if head := branchHead(t, url); head != id || head == base {
		t.Fatalf("main holds %s, want the pushed %s", head, id)
	}
	verifyClean(t, url)
}

// TestCloudRefusesStrippingProxy: a repository reached through a proxy that
// strips If-Match / If-None-Match is refused on init and on the first write
// of an existing repository, and nothing is written.
func TestCloudRefusesStrippingProxy(t *testing.T) {
	s3url := cloudtest.Gofakes3(t)
	direct := cloudtest.WithPrefix(s3url, t.Name())
	stripped := cloudtest.WithEndpoint(t, direct, cloudtest.StripProxy(t, cloudtest.Endpoint(s3url), false))
	code, out := fdlProc(t, nil, "init", stripped)
	if code != 1 || !strings.Contains(out, "does not honour conditional writes") || !strings.Contains(out, "If-None-Match") {
		t.Fatalf("init through a stripping proxy: exit %d\n%s", code, out)
	}
	if n := countObjects(t, direct); n != 0 {
		t.Fatalf("refused init left %d objects", n)
	}
	// An existing repository: reads work through the proxy, writes do not.
	_, base := newRepoWithBaseAt(t, direct)
	onlyIfMatch := cloudtest.WithEndpoint(t, direct, cloudtest.StripProxy(t, cloudtest.Endpoint(s3url), true))
	if code, out := fdlProc(t, nil, "log", "--repo", onlyIfMatch); code != 0 {
		t.Fatalf("log through the proxy: exit %d\n%s", code, out)
	}
	code, out = fdlProc(t, nil, "tag", "v1", "--repo", onlyIfMatch)
	if code != 1 || !strings.Contains(out, "If-Match ignored") {
		t.Fatalf("tag through a proxy that strips If-Match: exit %d\n%s", code, out)
	}
	dir, _ := commitChange(t, onlyIfMatch, "t2")
	code, out = fdlProc(t, nil, "-C", dir, "push")
	if code != 1 || !strings.Contains(out, "does not honour conditional writes") {
		t.Fatalf("push through a proxy that strips If-Match: exit %d\n%s", code, out)
	}
	if head := branchHead(t, direct); head != base {
		t.Fatalf("main moved to %s through a refused store", head)
	}
	verifyClean(t, direct)
}

func countObjects(t *testing.T, url string) int {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	if err := st.List(context.Background(), "", func(store.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHTTPRepository: a folder repository served by a static web server is
// read over http://: log, show, checkout and verify work; writes are
// refused; 403 (exit 5, auth), 404 and a short body each give their own error; without
// directory listings, reading by name still works.
//
// It is one piece: one repository served read-only over HTTP and the
// commands run against it in order, each checked against the folder it
// serves.
func TestHTTPRepository(t *testing.T) {
	folder, v1 := newRepoWithBase(t)
	dir, v2 := commitChange(t, folder, "second")
	mustFdl(t, "-C", dir, "push")
	var mode atomic.Value
	mode.Store("")
	fs := http.FileServer(http.Dir(folder))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch m := mode.Load().(string); {
		case m == "nolist" && strings.HasSuffix(p, "/"):
			http.Error(w, "listing is off", http.StatusForbidden)
			return
		case m == "403" && p == "/refs/heads/main":
			http.Error(w, "denied", http.StatusForbidden)
			return
		case m == "404" && strings.HasSuffix(p, "/ducklake.duckdb"):
			http.NotFound(w, r)
			return
		case m == "short" && strings.HasSuffix(p, "/ducklake.duckdb"):
			w.Header().Set("Content-Length", "1000000")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "DUCK")
			return
		}
		fs.ServeHTTP(w, r)
	}))
	defer srv.Close()
	u := srv.URL

	out := mustFdl(t, "--repo", u, "log")
	if !strings.Contains(out, "change second") || !strings.Contains(out, "base") {
		t.Errorf("log over http:\n%s", out)
	}
	out = mustFdl(t, "--repo", u, "show", "main")
	for _, want := range []string{
		"ATTACH OR REPLACE 'ducklake:" + u + "/versions/" + string(v2) + "/ducklake.duckdb' AS repo (DATA_PATH '" + u + "/data/', OVERRIDE_DATA_PATH true, READ_ONLY, METADATA_CATALOG '__ducklake_metadata_repo_",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show over http lacks %q:\n%s", want, out)
		}
	}
	work := filepath.Join(t.TempDir(), "w")
	mustFdl(t, "checkout", u, work, "--rev", "main~1", "--catalog-format", "duckdb")
	if got, want := fileDigest(t, filepath.Join(work, workdir.CatalogName)), recordSHA(t, folder, v1); got != want {
		t.Errorf("checked-out catalog sha256 %s, record says %s", got, want)
	}
	out = mustFdl(t, "--repo", u, "verify")
	if !strings.Contains(out, "2 version(s)") {
		t.Errorf("verify over http:\n%s", out)
	}
	code, out := fdlProc(t, nil, "tag", "v1", "--repo", u)
	if code != 1 || !strings.Contains(out, "store is read-only") || !strings.Contains(out, "repository "+u) || !strings.Contains(out, "refs/tags/v1") {
		t.Errorf("tag over http: exit %d\n%s", code, out)
	}

	mode.Store("nolist")
	out = mustFdl(t, "--repo", u, "show", "--json", "main")
	if !strings.Contains(out, `"short_id": "`+string(v2)+`"`) {
		t.Errorf("show without listings should give the full id:\n%s", out)
	}
	mustFdl(t, "--repo", u, "show", string(v1))
	code, out = fdlProc(t, nil, "--repo", u, "branch", "-l")
	if code != 1 || !strings.Contains(out, "cannot list") {
		t.Errorf("branch -l without listings: exit %d\n%s", code, out)
	}

	mode.Store("403")
	code, out = fdlProc(t, nil, "--repo", u, "log")
	if code != 5 || !strings.Contains(out, u+"/refs/heads/main: read: access denied (HTTP 403 Forbidden)") || strings.Contains(out, "no such ref") {
		t.Errorf("403 on the branch: exit %d (want 5, auth)\n%s", code, out)
	}
	mode.Store("404")
	code, out = fdlProc(t, nil, "checkout", u, filepath.Join(t.TempDir(), "w404"))
	if code != 1 || !strings.Contains(out, u+"/versions/"+string(v2)+"/ducklake.duckdb: HTTP 404 Not Found") {
		t.Errorf("404 on the catalog: exit %d\n%s", code, out)
	}
	mode.Store("short")
	code, out = fdlProc(t, nil, "checkout", u, filepath.Join(t.TempDir(), "wshort"))
	if code != 1 || !strings.Contains(out, "short body: the server sent 4 of the 1000000 bytes") {
		t.Errorf("short catalog body: exit %d\n%s", code, out)
	}
}

func recordSHA(t *testing.T, url string, id version.ID) string {
	t.Helper()
	r, err := repo.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Record(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Catalog.SHA256
}

// TestKillPushMidUploadS3 / …Azure: a push killed with SIGKILL in the middle
// of a large catalog's multipart (block) upload leaves the branch on its
// old version and nothing a reader sees; running push again completes.
func TestKillPushMidUploadS3(t *testing.T) {
	base := cloudtest.S3(t)
	killMidUpload(t, base, func(repoURL, proxyURL string) (string, []string) {
		return cloudtest.WithEndpoint(t, repoURL, proxyURL), nil
	}, cloudtest.Endpoint(base))
}

func TestKillPushMidUploadAzure(t *testing.T) {
	base := cloudtest.Azure(t)
	conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	endpoint := ""
	for _, part := range strings.Split(conn, ";") {
		if k, v, ok := strings.Cut(part, "="); ok && k == "BlobEndpoint" {
			endpoint = v
		}
	}
	eu, err := url.Parse(endpoint)
	if err != nil || eu.Host == "" {
		t.Fatalf("no BlobEndpoint in AZURE_STORAGE_CONNECTION_STRING")
	}
	killMidUpload(t, base, func(repoURL, proxyURL string) (string, []string) {
		return repoURL, []string{"AZURE_STORAGE_CONNECTION_STRING=" + strings.Replace(conn, eu.Scheme+"://"+eu.Host, proxyURL, 1)}
	}, eu.Scheme+"://"+eu.Host)
}

// killMidUpload runs the kill test on base; via returns the repository URL
// and environment that send the push through a proxy in front of target.
//
// It is one piece: one kill scenario on one repository (a large catalog
// committed, the push cut through the proxy, the store and the working
// directory checked, the push run again), each step reading what the one
// before it left.
func killMidUpload(t *testing.T, base string, via func(repoURL, proxyURL string) (string, []string), target string) {
	if testing.Short() {
		t.Skip("uploads a large catalog")
	}
	ctx := context.Background()
	url, oldHead := newRepoWithBaseAt(t, cloudtest.WithPrefix(base, t.Name()))
	// Make the catalog large: inline rows of random-looking text.
	r, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	big := filepath.Join(t.TempDir(), "big")
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: big}); err != nil {
		t.Fatal(err)
	}
	// lakewriter: a very large synthetic catalog — 400,000 inlined rows
	// (34 MB); the real extension inlines about 1 MB a second, minutes here.
	write(t, big, func(w *lakewriter.Writer) error {
		if _, err := w.CreateTable(ctx, "main", "big", []lakewriter.ColumnDef{{Name: "id", Type: "int64", Nullable: true}, {Name: "s", Type: "varchar", Nullable: true}}); err != nil {
			return err
		}
		return w.InsertInlined(ctx, "main", "big", "SELECT i AS id, md5(i::varchar) || md5((i * 7919)::varchar) || md5((i * 104729)::varchar) || md5((i * 15485863)::varchar) AS s FROM range(400000) t(i)")
	})
	wd, err := workdir.Open(big)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "big", Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	size := rec.Catalog.Size
	if size < 24<<20 {
		t.Fatalf("catalog is only %d MiB: too small to be uploaded in parts", size>>20)
	}
	// A proxy that counts the catalog's bytes going up and, past a third of
	// them, holds the upload until the pusher is dead.
	threshold := size / 3
	var sent atomic.Int64
	tripped := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	pu := proxy(t, target, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "ducklake.duckdb") {
			return false
		}
		r.Body = &countingBody{r: r.Body, n: &sent, limit: threshold, trip: func() { once.Do(func() { close(tripped) }) }, release: release}
		return false
	})
	purl, env := via(url, pu)
	// The working directory remembers the URL it came from; point it at
	// the proxy (for S3 the endpoint is part of the URL).
	rewriteState(t, big, url, purl)
	cmd := exec.Command("fdl", "-C", big, "push")
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-tripped:
	case err := <-exited:
		close(release)
		t.Fatalf("the push ended (%v) before a third of the catalog went up:\n%s", err, out.String())
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-exited
		close(release)
		t.Fatalf("the push never sent a third of the catalog:\n%s", out.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	err = <-exited
	close(release)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("push was not killed (%v):\n%s", err, out.String())
	}
	t.Logf("killed the push after %d of %d catalog bytes went up", sent.Load(), size)
	if head := branchHead(t, url); head != oldHead {
		t.Fatalf("after the kill main holds %s, want the old %s", head, oldHead)
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Stat(ctx, repo.VersionKey(rec.ID, version.CatalogFile)); err == nil {
		t.Fatalf("a partial catalog of the killed push is visible")
	}
	verifyClean(t, url)
	// Run again (directly, as the user would after the crash): it completes.
	rewriteState(t, big, purl, url)
	mustFdl(t, "-C", big, "push")
	if head := branchHead(t, url); head != rec.ID {
		t.Fatalf("rerun: main holds %s, want %s", head, rec.ID)
	}
	verifyClean(t, url)
}

// countingBody counts bytes read by the proxy; once limit is passed it
// calls trip and blocks until release is closed.
type countingBody struct {
	r       io.ReadCloser
	n       *atomic.Int64
	limit   int64
	trip    func()
	release chan struct{}
}

func (c *countingBody) Read(p []byte) (int, error) {
	if c.n.Load() >= c.limit {
		c.trip()
		<-c.release
		return 0, io.ErrUnexpectedEOF
	}
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingBody) Close() error { return c.r.Close() }

// rewriteState replaces the repository URL a working directory remembers.
func rewriteState(t *testing.T, dir, from, to string) {
	t.Helper()
	p := filepath.Join(dir, workdir.StateDir, "state.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fromJ, toJ := jsonString(from), jsonString(to)
	if !strings.Contains(string(b), fromJ) {
		t.Fatalf("%s does not hold %s", p, fromJ)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), fromJ, toJ, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func jsonString(s string) string {
	b := strings.Builder{}
	fmt.Fprintf(&b, "%q", s)
	return strings.ReplaceAll(b.String(), "&", `\u0026`)
}
