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
	if errors.Is(err, store.ErrNotExist) || !errors.As(err, &se) || se.StatusCode != 403 ||
		!strings.Contains(err.Error(), base+"/refs/heads/main: HTTP 403 Forbidden") {
		t.Errorf("403: %v (must not read as missing)", err)
	}
	_, err = s.Stat(ctx, "refs/heads/main")
	if errors.Is(err, store.ErrNotExist) || !strings.Contains(err.Error(), "403") {
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
