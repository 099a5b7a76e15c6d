package cloud_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/azure"
	"github.com/fdl-dev/fdl/internal/store/cloud"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/store/gcs"
	"github.com/fdl-dev/fdl/internal/store/s3"
	"github.com/fdl-dev/fdl/internal/store/storetest"
)

// TestMain registers the cloud backends, as cmd/fdl does.
func TestMain(m *testing.M) {
	store.Register(s3.Backend())
	store.Register(gcs.Backend())
	store.Register(azure.Backend())
	m.Run()
}

// openFresh returns a function that opens a fresh prefix of base for each
// conformance subtest.
func openFresh(base string) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store {
		s, err := store.Open(t.Context(), cloudtest.WithPrefix(base, t.Name()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// The conformance suite against every cloud backend: in-process emulators
// always, the real servers (versitygw, Azurite) when .ci/run started them.

func TestCloudGofakes3(t *testing.T) {
	storetest.Run(t, openFresh(cloudtest.Gofakes3(t)))
}

func TestCloudFakeGCS(t *testing.T) {
	storetest.Run(t, openFresh(cloudtest.FakeGCS(t)))
}

func TestCloudVersitygw(t *testing.T) {
	storetest.Run(t, openFresh(cloudtest.S3(t)))
}

// TestCloudIPEndpointPathStyle: an S3 endpoint that is an IP address
// needs no use_path_style: the bucket goes in the path (there is no host
// name to put it in), for the SDK and in DuckDB's secret.
func TestCloudIPEndpointPathStyle(t *testing.T) {
	u, err := url.Parse(cloudtest.Gofakes3(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("use_path_style")
	u.RawQuery = q.Encode()
	s, err := store.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(t.Context(), "k", strings.NewReader("v")); err != nil {
		t.Fatalf("write through %s: %v", u, err)
	}
	if b, _, err := store.ReadAll(t.Context(), s, "k"); err != nil || string(b) != "v" {
		t.Fatalf("read through %s: %q, %v", u, b, err)
	}
	if sec := s.(interface{ DuckDBSecret() string }).DuckDBSecret(); !strings.Contains(sec, "URL_STYLE 'path'") {
		t.Fatalf("secret %s: want URL_STYLE 'path'", sec)
	}
	// The endpoint from the S3 service's own variable, as the SDK reads it.
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:7070")
	s2, err := store.Open(t.Context(), "s3://bkt?region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if sec := s2.(interface{ DuckDBSecret() string }).DuckDBSecret(); !strings.Contains(sec, "ENDPOINT '127.0.0.1:7070', URL_STYLE 'path', USE_SSL false") {
		t.Fatalf("secret with AWS_ENDPOINT_URL_S3: %s", sec)
	}
}

func TestCloudAzurite(t *testing.T) {
	storetest.Run(t, openFresh(cloudtest.Azure(t)))
}

// TestCloudRefusesStoreWithoutConditions: behind a proxy that strips the
// conditional headers (all of them, or only If-Match), the first write of
// each kind is refused with ErrNoConditionalWrites, and nothing the caller
// asked for is written.
func TestCloudRefusesStoreWithoutConditions(t *testing.T) {
	s3url := cloudtest.Gofakes3(t)
	gsurl := cloudtest.FakeGCS(t)
	gcsHost := os.Getenv("STORAGE_EMULATOR_HOST")
	proxyHost := func(onlyIfMatch bool) string {
		u, _ := url.Parse(cloudtest.StripProxy(t, "http://"+gcsHost, onlyIfMatch))
		return u.Host
	}
	cases := []struct {
		name, url string
		gcsHost   string // STORAGE_EMULATOR_HOST for gs:// cases
		wantWhat  string
	}{
		{"s3-strip-all", cloudtest.WithEndpoint(t, s3url, cloudtest.StripProxy(t, cloudtest.Endpoint(s3url), false)), "", "If-None-Match: * ignored"},
		{"s3-strip-if-match", cloudtest.WithEndpoint(t, s3url, cloudtest.StripProxy(t, cloudtest.Endpoint(s3url), true)), "", "If-Match ignored"},
		{"gcs-strip-all", gsurl, proxyHost(false), "If-None-Match: * ignored"},
		{"gcs-strip-generation-match", gsurl, proxyHost(true), "If-Match ignored"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.gcsHost != "" {
				t.Setenv("STORAGE_EMULATOR_HOST", c.gcsHost)
			}
			ctx := t.Context()
			s, err := store.Open(ctx, cloudtest.WithPrefix(c.url, t.Name()))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Swap(ctx, "HEAD", store.NoToken, []byte("ref: refs/heads/main\n"))
			if !errors.Is(err, cloud.ErrNoConditionalWrites) {
				t.Fatalf("Swap through %s = %v, want ErrNoConditionalWrites", c.name, err)
			}
			if !strings.Contains(err.Error(), c.wantWhat) || !strings.Contains(err.Error(), s.Location("")) {
				t.Errorf("error %q does not name the store and say %q", err, c.wantWhat)
			}
			// Refused for good: Create too, and nothing was written.
			err = s.Create(ctx, "fdl.json", strings.NewReader("{}"))
			if !errors.Is(err, cloud.ErrNoConditionalWrites) {
				t.Errorf("Create after a refused probe = %v, want ErrNoConditionalWrites", err)
			}
			n := 0
			if err := s.List(ctx, "", func(store.ObjectInfo) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d objects listed after refused writes, want 0", n)
			}
		})
	}
	// Without the proxy the same servers pass the probe (the proxy is what
	// breaks them, not the test).
	for _, u := range []string{s3url, gsurl} {
		s, err := store.Open(t.Context(), cloudtest.WithPrefix(u, "direct"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Swap(t.Context(), "HEAD", store.NoToken, []byte("x\n")); err != nil {
			t.Errorf("%s: Swap without the proxy: %v", u, err)
		}
		s.Close()
	}
}

// TestCloudTokens: Tokens come from the response of the same read, differ
// between versions, and a Swap from a stale Token never writes, on every
// backend available (a second reader in between changes the object).
func TestCloudTokensFromSameRead(t *testing.T) {
	for name, base := range map[string]string{"gofakes3": cloudtest.Gofakes3(t), "fake-gcs": cloudtest.FakeGCS(t)} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s, err := store.Open(ctx, cloudtest.WithPrefix(base, t.Name()))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			t1, err := s.Swap(ctx, "refs/heads/main", store.NoToken, []byte("a\n"))
			if err != nil {
				t.Fatal(err)
			}
			r, tg, err := s.Get(ctx, "refs/heads/main")
			if err != nil {
				t.Fatal(err)
			}
			// Another writer moves the ref while our reader is open: the
			// Token we hold is the one of the bytes we read.
			t2, err := s.Swap(ctx, "refs/heads/main", t1, []byte("b\n"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			r.Close()
			if string(b) != "a\n" || tg != t1 || t2 == t1 {
				t.Fatalf("read %q with Token %q (swap Tokens %q, %q): the Token is not the read's", b, tg, t1, t2)
			}
			if _, err := s.Swap(ctx, "refs/heads/main", tg, []byte("c\n")); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Swap from the stale Token = %v, want ErrConflict", err)
			}
		})
	}
}

// TestCloudCreateMemoryFlat streams a 256 MiB object into the out-of-process
// S3 server and checks the heap never grows by more than 96 MiB (S3
// multipart parts are 8 MiB, a few in flight).
func TestCloudCreateMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MiB")
	}
	s, err := store.Open(t.Context(), cloudtest.S3(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const size = 256 << 20
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	}()
	h := sha256.New()
	src := io.TeeReader(io.LimitReader(&patternReader{}, size), h)
	err = s.Create(t.Context(), "versions/x/ducklake.duckdb", src)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	growth := int64(peak.Load()) - int64(base)
	t.Logf("heap: %d MiB before, peak %d MiB while uploading 256 MiB (growth %d MiB)", base>>20, peak.Load()>>20, growth>>20)
	if growth > 96<<20 {
		t.Errorf("heap grew by %d MiB while streaming 256 MiB: memory is not flat", growth>>20)
	}
	rc, _, err := s.Get(t.Context(), "versions/x/ducklake.duckdb")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h2 := sha256.New()
	if n, err := io.Copy(h2, rc); err != nil || n != size || !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
		t.Fatalf("read back %d bytes (%v), digest equal %v", n, err, bytes.Equal(h.Sum(nil), h2.Sum(nil)))
	}
}

// patternReader yields a non-repeating-looking byte stream without holding it.
type patternReader struct{ n uint64 }

func (p *patternReader) Read(b []byte) (int, error) {
	for i := range b {
		p.n++
		b[i] = byte(p.n*2654435761>>13) ^ byte(p.n>>20)
	}
	return len(b), nil
}

// TestCloudNoCredentialsInErrors: errors from a store whose server rejects
// the credentials, or cannot be reached, never show the secret.
func TestCloudNoCredentialsInErrors(t *testing.T) {
	const secret = "c2VjcmV0LXNob3VsZC1uZXZlci1wcmludC0x"
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey="+secret+";BlobEndpoint=http://127.0.0.1:1/acct;")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, u := range []string{
		"s3://b/p?endpoint=http://127.0.0.1:1&region=us-east-1&use_path_style=true",
		"azblob://c/p",
	} {
		s, err := store.Open(ctx, u)
		if err == nil {
			_, err = s.Swap(ctx, "HEAD", store.NoToken, []byte("x"))
			s.Close()
		}
		if err == nil {
			t.Fatalf("%s: write to a closed port succeeded", u)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "AKIDTEST") && strings.Contains(err.Error(), "Credential") {
			t.Errorf("%s: error shows credentials: %v", u, err)
		}
		t.Logf("%s: %v", u, err)
	}
	// And RedactString removes what SDKs may echo.
	for _, in := range []string{
		"PUT http://h/c/k?sv=2020&sig=abcdefSECRETsig&se=1: 403",
		"connection string AccountKey=" + secret + "==;BlobEndpoint=x",
		"https://b.s3.amazonaws.com/k?X-Amz-Signature=deadbeefcafe&X-Amz-Credential=AKID/2024",
		"key " + secret,
	} {
		out := cloud.RedactString(in)
		if strings.Contains(out, secret) || strings.Contains(out, "SECRETsig") || strings.Contains(out, "deadbeefcafe") {
			t.Errorf("redact(%q) = %q still shows a secret", in, out)
		}
	}
}

// TestOpenCloudURLs: URL forms, options and their errors.
func TestOpenCloudURLs(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	cases := []struct{ raw, wantErr string }{
		{"s3://", "s3://BUCKET/PREFIX"},
		{"s3://user:secret@bucket/x", "s3://user:xxxxx@bucket/x"},
		{"s3://b/p?region=us-east-1&bogus=1", `unknown query parameter "bogus"`},
		{"s3://b/p", "no AWS region"},
		{"s3://b/a/../x?region=us-east-1", "not a valid prefix"},
		{"s3://b/p?region=us-east-1&use_path_style=maybe", "use_path_style"},
		{"s3://b/p?region=us-east-1&endpoint=127.0.0.1:7070", `needs its scheme: endpoint=http://127.0.0.1:7070`},
		{"gs://b/p?bogus=1", `unknown option "bogus"`},
		{"azblob://c/p?bogus=1", `bogus`},
	}
	for _, c := range cases {
		_, err := store.Open(t.Context(), c.raw)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("Open(%q) = %v, want an error containing %q", c.raw, err, c.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error shows the password: %q", c.raw, err)
		}
	}
	// Locations use DuckDB's URL forms, without the query.
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/acct;")
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
	locs := []struct{ raw, key, want, secret string }{
		{"s3://bkt/some/prefix?region=eu-west-1", "data", "s3://bkt/some/prefix/data", " (TYPE s3, PROVIDER credential_chain, REGION 'eu-west-1', SCOPE 's3://bkt/some/prefix');"},
		{"s3://bkt?region=us-east-1&endpoint=http://127.0.0.1:7070&use_path_style=true", "", "s3://bkt",
			" (TYPE s3, PROVIDER credential_chain, REGION 'us-east-1', ENDPOINT '127.0.0.1:7070', URL_STYLE 'path', USE_SSL false, SCOPE 's3://bkt');"},
		// An endpoint that is an IP address: the SDK addresses the bucket
		// by path, and so does the secret, unless the URL says otherwise.
		{"s3://bkt?region=us-east-1&endpoint=http://127.0.0.1:7070", "", "s3://bkt",
			" (TYPE s3, PROVIDER credential_chain, REGION 'us-east-1', ENDPOINT '127.0.0.1:7070', URL_STYLE 'path', USE_SSL false, SCOPE 's3://bkt');"},
		{"s3://bkt?region=us-east-1&endpoint=http://[::1]:7070", "", "s3://bkt", "ENDPOINT '[::1]:7070', URL_STYLE 'path', USE_SSL false"},
		{"s3://bkt?region=us-east-1&endpoint=http://127.0.0.1:7070&use_path_style=false", "", "s3://bkt",
			" (TYPE s3, PROVIDER credential_chain, REGION 'us-east-1', ENDPOINT '127.0.0.1:7070', USE_SSL false, SCOPE 's3://bkt');"},
		{"s3://bkt?region=us-east-1&endpoint=https://minio.example.com", "", "s3://bkt",
			" (TYPE s3, PROVIDER credential_chain, REGION 'us-east-1', ENDPOINT 'minio.example.com', SCOPE 's3://bkt');"},
		{"gs://bkt/p/", "versions/x", "gs://bkt/p/versions/x", "TYPE gcs"},
		{"azblob://cont/p", "data", "az://cont/p/data", "CONNECTION_STRING '<your connection string>'"},
	}
	for _, c := range locs {
		s, err := store.Open(t.Context(), c.raw)
		if err != nil {
			t.Errorf("Open(%q): %v", c.raw, err)
			continue
		}
		if got := s.Location(c.key); got != c.want {
			t.Errorf("Open(%q).Location(%q) = %q, want %q", c.raw, c.key, got, c.want)
		}
		sec := s.(interface{ DuckDBSecret() string }).DuckDBSecret()
		if !strings.HasPrefix(sec, "CREATE OR REPLACE SECRET fdl_") || !strings.Contains(sec, c.secret) {
			t.Errorf("Open(%q).DuckDBSecret() = %q, want it to contain %q", c.raw, sec, c.secret)
		}
		if strings.Contains(sec, "a2V5") {
			t.Errorf("DuckDBSecret shows the account key: %q", sec)
		}
		s.Close()
	}
	_ = fmt.Sprint()
}
