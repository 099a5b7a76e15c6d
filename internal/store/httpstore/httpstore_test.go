package httpstore_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/httpstore"
)

func TestMain(m *testing.M) {
	store.Register(httpstore.Backend())
	m.Run()
}

func TestOpenHTTPErrors(t *testing.T) {
	for _, raw := range []string{"https://", "http://host/x#frag", "https://user:secret@/x"} {
		s, err := store.Open(t.Context(), raw)
		if err == nil {
			t.Errorf("Open(%q) = %v, want an error", raw, s)
			continue
		}
		if !strings.Contains(err.Error(), "use http(s)://HOST/PATH") {
			t.Errorf("Open(%q) error = %q, want it to say http(s)://HOST/PATH", raw, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error shows the password: %q", raw, err)
		}
	}
}

// publish writes files into a new folder and serves it with Go's static
// file server (which lists folders), wrapped by mw if set.
func publish(t *testing.T, files map[string]string, mw func(http.Handler) http.Handler) (dir, url string) {
	t.Helper()
	dir = t.TempDir()
	for k, v := range files {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var h http.Handler = http.FileServer(http.Dir(dir))
	if mw != nil {
		h = mw(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return dir, srv.URL + "/pub"
}

var httpFiles = map[string]string{
	"pub/fdl.json":                   `{"format":1}`,
	"pub/HEAD":                       "ref: refs/heads/main\n",
	"pub/refs/heads/main":            "0192\n",
	"pub/refs/heads/main-2":          "0193\n",
	"pub/refs/tags/v 1":              "0192\n",
	"pub/versions/0192/version.json": "{}",
	"pub/versions/0193/version.json": "{}",
	"pub/data/main/t/f ü.parquet":    "PAR1",
	"pub/.tmp-x":                     "hidden",
	"other/secret":                   "not under the root",
}

func TestHTTPReadOnlyStore(t *testing.T) {
	ctx := t.Context()
	_, base := publish(t, httpFiles, nil)
	s, err := store.Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Location("refs/tags/v 1"); got != base+"/refs/tags/v%201" {
		t.Errorf("Location = %q", got)
	}
	if s.Location("") != base {
		t.Errorf("Location(\"\") = %q, want %q", s.Location(""), base)
	}
	b, tok, err := store.ReadAll(ctx, s, "refs/tags/v 1")
	if err != nil || string(b) != "0192\n" || tok == store.NoToken {
		t.Fatalf("ReadAll = %q, %q, %v", b, tok, err)
	}
	info, err := s.Stat(ctx, "data/main/t/f ü.parquet")
	if err != nil || info.Size != 4 || info.ModTime.IsZero() {
		t.Errorf("Stat = %+v, %v", info, err)
	}
	// 404: ErrNotExist, naming the URL and the status.
	_, _, err = s.Get(ctx, "refs/heads/nope")
	if !errors.Is(err, store.ErrNotExist) || !strings.Contains(err.Error(), base+"/refs/heads/nope") || !strings.Contains(err.Error(), "404") {
		t.Errorf("Get missing = %v", err)
	}
	if _, err := s.Stat(ctx, "nope"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("Stat missing = %v", err)
	}
	// List follows the directory listings; internals and invalid keys hidden.
	list := func(prefix string) []string {
		var keys []string
		if err := s.List(ctx, prefix, func(oi store.ObjectInfo) error {
			keys = append(keys, oi.Key)
			return nil
		}); err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		return keys
	}
	want := []string{"HEAD", "data/main/t/f ü.parquet", "fdl.json", "refs/heads/main", "refs/heads/main-2", "refs/tags/v 1", "versions/0192/version.json", "versions/0193/version.json"}
	if got := list(""); !slices.Equal(got, want) {
		t.Errorf("List(\"\") = %q, want %q", got, want)
	}
	if got := list("refs/heads/main"); !slices.Equal(got, []string{"refs/heads/main", "refs/heads/main-2"}) {
		t.Errorf("List(refs/heads/main) = %q", got)
	}
	if got := list("versions/0193"); !slices.Equal(got, []string{"versions/0193/version.json"}) {
		t.Errorf("List(versions/0193) = %q", got)
	}
	if got := list("nope/"); len(got) != 0 {
		t.Errorf("List(nope/) = %q", got)
	}
	// Writes are refused before any request; invalid keys still first.
	if err := s.Create(ctx, "x", strings.NewReader("x")); !errors.Is(err, store.ErrReadOnly) || !strings.Contains(err.Error(), base+"/x") {
		t.Errorf("Create = %v, want ErrReadOnly naming the URL", err)
	}
	if _, err := s.Swap(ctx, "refs/heads/main", tok, []byte("x")); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Swap = %v, want ErrReadOnly", err)
	}
	if err := s.Delete(ctx, "HEAD"); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Delete = %v, want ErrReadOnly", err)
	}
	if err := s.Delete(ctx, "../other/secret"); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Delete(../other/secret) = %v, want ErrInvalidKey", err)
	}
}

func TestHTTPErrors(t *testing.T) {
	ctx := t.Context()
	_, base := publish(t, httpFiles, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/refs/heads/main"):
				http.Error(w, "no", http.StatusForbidden)
			case strings.HasSuffix(r.URL.Path, "/fdl.json"):
				// Announce 1000 bytes, send 12, hang up.
				w.Header().Set("Content-Length", "1000")
				w.WriteHeader(http.StatusOK)
				w.Write([]byte(`{"format":1}`))
			case strings.HasSuffix(r.URL.Path, "/HEAD"):
				http.Error(w, "boom", http.StatusBadGateway)
			default:
				h.ServeHTTP(w, r)
			}
		})
	})
	s, err := store.Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Get(ctx, "refs/heads/main")
	var se *httpstore.StatusError
	var ae *store.AuthError
	if errors.Is(err, store.ErrNotExist) || !errors.Is(err, store.ErrAuth) || !errors.As(err, &se) || se.StatusCode != 403 ||
		!errors.As(err, &ae) || ae.MaybeMissing || ae.Op != "read" ||
		!strings.Contains(err.Error(), base+"/refs/heads/main: read: access denied (HTTP 403 Forbidden); credentials from none") {
		t.Errorf("403: %v (must be auth, not read as missing: a plain web server's 403 is no S3 missing key)", err)
	}
	_, err = s.Stat(ctx, "refs/heads/main")
	if errors.Is(err, store.ErrNotExist) || !errors.Is(err, store.ErrAuth) || !strings.Contains(err.Error(), "403") {
		t.Errorf("Stat 403: %v", err)
	}
	_, _, err = store.ReadAll(ctx, s, "fdl.json")
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "short body") ||
		!strings.Contains(err.Error(), "12 of the 1000 bytes") || !strings.Contains(err.Error(), base+"/fdl.json") {
		t.Errorf("short body: %v", err)
	}
	_, _, err = s.Get(ctx, "HEAD")
	if errors.Is(err, store.ErrNotExist) || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Errorf("502: %v", err)
	}
}

// TestHTTPNoListing: a server that serves files but not folder listings:
// reads work, List says it cannot list, never "empty".
func TestHTTPNoListing(t *testing.T) {
	ctx := t.Context()
	_, base := publish(t, httpFiles, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/") {
				http.Error(w, "listing off", http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	s, err := store.Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := store.ReadAll(ctx, s, "HEAD"); err != nil {
		t.Fatal(err)
	}
	err = s.List(ctx, "versions/", func(store.ObjectInfo) error { return nil })
	if !errors.Is(err, store.ErrCannotList) || !strings.Contains(err.Error(), "403") {
		t.Errorf("List without listings = %v, want ErrCannotList naming the 403", err)
	}
}

// TestHTTPCredentials: user and password in the URL are sent as basic
// authentication and appear in no Location or error.
func TestHTTPCredentials(t *testing.T) {
	ctx := t.Context()
	_, base := publish(t, httpFiles, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "reader" || p != "pa55word" {
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	authed := strings.Replace(base, "http://", "http://reader:pa55word@", 1)
	s, err := store.Open(ctx, authed)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := store.ReadAll(ctx, s, "HEAD"); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	_, _, err = s.Get(ctx, "nope")
	for _, text := range []string{s.Location("x"), err.Error()} {
		if strings.Contains(text, "pa55word") {
			t.Errorf("password shown: %q", text)
		}
	}
	anon, _ := store.Open(ctx, base)
	defer anon.Close()
	if _, _, err := anon.Get(ctx, "HEAD"); errors.Is(err, store.ErrNotExist) || !strings.Contains(err.Error(), "401") {
		t.Errorf("without credentials: %v", err)
	}
}

// s3Like answers like a public S3 bucket without s3:ListBucket: a key it
// holds is served, any other is 403 AccessDenied (an XML body on GET, only
// headers on HEAD), with S3's request-id header. denyAll refuses every
// key, fdl.json included. It counts the requests for fdl.json.
func s3Like(files map[string]string, denyAll *atomic.Bool, witness *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/")
		if key == store.WitnessKey {
			witness.Add(1)
		}
		body, ok := files[key]
		w.Header().Set("x-amz-request-id", "TESTREQUEST")
		if !ok || denyAll.Load() {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			if r.Method != http.MethodHead {
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
			}
			return
		}
		io.WriteString(w, body)
	})
}

// TestHTTPHidden403: a public S3 bucket without s3:ListBucket answers 403
// for a missing key. When the repository's fdl.json reads, such a 403 on a
// read or stat is "does not exist", at the cost of one HEAD of fdl.json
// per store (none when fdl.json was already read); when nothing reads, it
// stays an auth error that says it may be a missing key.
func TestHTTPHidden403(t *testing.T) {
	ctx := t.Context()
	var denyAll atomic.Bool
	var witness atomic.Int32
	srv := httptest.NewServer(s3Like(map[string]string{"fdl.json": `{"format":1}`, "HEAD": "ref: refs/heads/main\n"}, &denyAll, &witness))
	defer srv.Close()

	s, err := store.Open(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Get(ctx, "refs/heads/gone")
	if !errors.Is(err, store.ErrNotExist) || errors.Is(err, store.ErrAuth) || !strings.Contains(err.Error(), srv.URL+"/refs/heads/gone") {
		t.Fatalf("Get of a missing key answered 403 by an S3-style server whose fdl.json reads = %v, want ErrNotExist", err)
	}
	if _, err := s.Stat(ctx, "versions/x/version.json"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat of a missing key answered 403 = %v, want ErrNotExist", err)
	}
	if n := witness.Load(); n != 1 {
		t.Errorf("fdl.json was asked %d times for two hidden 403s, want 1 (the answer is kept)", n)
	}

	// A store whose first read is fdl.json itself needs no extra request.
	witness.Store(0)
	s2, err := store.Open(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, _, err := store.ReadAll(ctx, s2, "fdl.json"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Get(ctx, "refs/tags/none"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Get after fdl.json read = %v, want ErrNotExist", err)
	}
	if n := witness.Load(); n != 1 {
		t.Errorf("fdl.json was asked %d times, want 1 (its own read)", n)
	}

	// Nothing reads: every 403 is an auth error, which says it may also
	// be a missing key; fdl.json's own 403 has no witness.
	denyAll.Store(true)
	s3, err := store.Open(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	for _, key := range []string{"HEAD", "fdl.json"} {
		_, _, err := s3.Get(ctx, key)
		var ae *store.AuthError
		if errors.Is(err, store.ErrNotExist) || !errors.As(err, &ae) || !ae.MaybeMissing || ae.Reason != store.AuthDenied ||
			!strings.Contains(err.Error(), "s3:ListBucket") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Get(%s) when nothing reads = %v, want a one-line auth error that may be a missing key", key, err)
		}
	}
}
