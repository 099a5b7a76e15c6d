// Package cloudtest gives tests object-store repositories to run against:
// in-process emulators (gofakes3 for S3, fake-gcs-server for GCS) started
// inside the test process, and the real servers .ci/run starts on
// 127.0.0.1 (versitygw for S3, Azurite for Azure), named by environment
// variables:
//
//	FDL_TEST_S3_URL     e.g. s3://fdl-test?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true
//	                    (credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)
//	FDL_TEST_AZURE_URL  e.g. azblob://fdl-test (credentials in AZURE_STORAGE_CONNECTION_STRING)
//
// A test that needs a server whose variable is unset is skipped, except
// when CI is set: then it fails, so CI never passes without running it.
// Every URL returned has a fresh prefix, so tests never see each other's
// objects; buckets and containers are made if missing.
package cloudtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Environment variables naming the real servers.
const (
	EnvS3    = "FDL_TEST_S3_URL"
	EnvAzure = "FDL_TEST_AZURE_URL"
)

var seq atomic.Int64

// WithEndpoint returns the s3:// URL s3url with its endpoint query
// parameter set to endpoint (an http://host:port), e.g. to go through a
// proxy.
func WithEndpoint(t testing.TB, s3url, endpoint string) string {
	t.Helper()
	u, err := url.Parse(s3url)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("endpoint", endpoint)
	u.RawQuery = q.Encode()
	return u.String()
}

// WithPrefix returns base (a store URL, possibly with a query) with a fresh
// prefix made from name appended to its path.
func WithPrefix(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	p := fmt.Sprintf("%s-%x-%d", strings.Trim(b.String(), "-"), time.Now().UnixNano(), seq.Add(1))
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + p
	return u.String()
}

// need returns the value of env, or skips t (fails it when CI is set).
func need(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI must run the %s tests (.ci/run starts the server)", env, what)
		}
		t.Skipf("%s not set: start the %s server (scripts/test-servers.sh) to run this test", env, what)
	}
	return v
}

// S3 returns a fresh repository URL on the real S3-compatible server named
// by FDL_TEST_S3_URL, making its bucket if missing.
//
// The prefix gets a folder marker (an empty object named "<prefix>/", which
// fdl's listings skip), so that tests may put several repositories under it
// (WithPrefix): versitygw's posix backend removes a folder when a delete
// leaves it empty, and a put under the same folder at that moment fails
// with 409 ExistingObjectIsDirectory; a folder made by a put of its marker
// is never removed. Real S3 has no folders and no such race.
func S3(t testing.TB) string {
	t.Helper()
	base := need(t, EnvS3, "S3 (versitygw)")
	client, bucket := ensureS3Bucket(t, base)
	u := WithPrefix(base, t.Name())
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := strings.TrimPrefix(pu.Path, "/") + "/"
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("")}); err != nil {
		t.Fatalf("put folder marker %s on %s: %v", key, bucket, err)
	}
	return u
}

// Azure returns a fresh repository URL on the Azure server named by
// FDL_TEST_AZURE_URL (Azurite), making its container if missing.
func Azure(t testing.TB) string {
	t.Helper()
	base := need(t, EnvAzure, "Azure (Azurite)")
	ensureAzureContainer(t, base)
	return WithPrefix(base, t.Name())
}

// Gofakes3 starts an in-process gofakes3 server (in memory) for the life of
// t and returns the URL of one bucket on it, without a prefix. Requests are
// unsigned (anonymous=true): gofakes3 does not check signatures.
func Gofakes3(t testing.TB) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("fdl"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return S3URL("fdl", srv.URL)
}

// S3URL returns the s3:// URL of bucket on an S3-compatible server at
// endpoint (http://host:port), path-style, unsigned.
func S3URL(bucket, endpoint string) string {
	return "s3://" + bucket + "?" + url.Values{
		"endpoint": {endpoint}, "region": {"us-east-1"}, "use_path_style": {"true"}, "anonymous": {"true"},
	}.Encode()
}

// FakeGCS starts an in-process fake-gcs-server on 127.0.0.1 for the life of
// t, points STORAGE_EMULATOR_HOST at it (with t.Setenv) and returns the URL
// of one bucket on it, without a prefix.
func FakeGCS(t testing.TB) string {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucket("fdl")
	u, _ := url.Parse(srv.URL())
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv("STORAGE_EMULATOR_HOST", u.Host)
	} else {
		os.Setenv("STORAGE_EMULATOR_HOST", u.Host)
	}
	return "gs://fdl"
}

// StripProxy starts a reverse proxy on 127.0.0.1 in front of target (an
// http://host:port) that removes the conditional-write headers (and GCS's
// ifGenerationMatch query parameters) from every request, like a broken
// proxy or an old server would; with onlyIfMatch it removes If-Match and
// ifGenerationMatch but keeps If-None-Match. It returns the proxy's URL.
func StripProxy(t testing.TB, target string, onlyIfMatch bool) string {
	t.Helper()
	tu, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(tu)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		r.Header.Del("If-Match")
		if !onlyIfMatch {
			r.Header.Del("If-None-Match")
		}
		q := r.URL.Query()
		if q.Has("ifGenerationMatch") {
			if g := q.Get("ifGenerationMatch"); g != "0" || !onlyIfMatch {
				q.Del("ifGenerationMatch")
				r.URL.RawQuery = q.Encode()
			}
		}
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Endpoint returns the endpoint query parameter of an s3:// URL.
func Endpoint(s3url string) string {
	u, err := url.Parse(s3url)
	if err != nil {
		return ""
	}
	return u.Query().Get("endpoint")
}

// ensureS3Bucket makes the bucket of base if missing and returns a client
// of its server and the bucket's name.
func ensureS3Bucket(t testing.TB, base string) (*s3.Client, string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvS3, err)
	}
	q := u.Query()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(q.Get("region")))
	if err != nil {
		t.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if e := q.Get("endpoint"); e != "" {
			o.BaseEndpoint = aws.String(e)
		}
		o.UsePathStyle = q.Get("use_path_style") == "true"
	})
	_, err = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(u.Host)})
	if err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") && !strings.Contains(err.Error(), "BucketAlreadyExists") {
		t.Fatalf("make bucket %s on %s: %v", u.Host, q.Get("endpoint"), err)
	}
	return client, u.Host
}

func ensureAzureContainer(t testing.TB, base string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvAzure, err)
	}
	conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if conn == "" {
		t.Fatalf("%s is set but AZURE_STORAGE_CONNECTION_STRING is not", EnvAzure)
	}
	c, err := container.NewClientFromConnectionString(conn, u.Host, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatalf("make container %s: %v", u.Host, err)
	}
}
