package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
)

// authErr returns err's *store.AuthError, failing t when err is none or
// its message is not one line that names want and holds none of secrets.
func authErr(t *testing.T, what string, err error, want []string, secrets ...string) *store.AuthError {
	t.Helper()
	var ae *store.AuthError
	if !errors.Is(err, store.ErrAuth) || !errors.As(err, &ae) {
		t.Fatalf("%s = %v (%T), want a *store.AuthError", what, err, err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Errorf("%s: message is not one line:\n%s", what, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: message lacks %q:\n%s", what, w, msg)
		}
	}
	for _, s := range secrets {
		if strings.Contains(msg, s) || (ae.Err != nil && strings.Contains(ae.Err.Error(), s)) {
			t.Errorf("%s: a credential appears in the message or the wrapped error:\n%s\n%v", what, msg, ae.Err)
		}
	}
	return ae
}

// repoOn makes a store at a fresh prefix of base holding the repository's
// witness, fdl.json, and returns the prefix's URL.
func repoOn(t *testing.T, base string) string {
	t.Helper()
	u := cloudtest.WithPrefix(base, t.Name())
	s, err := store.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(t.Context(), store.WitnessKey, strings.NewReader(`{"format":1}`)); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestAuthS3Versitygw: on the real S3 server, credentials that are wrong
// in each way S3 tells apart, and none at all, are *store.AuthError naming
// the source the AWS SDK picked and what to set, in one line without the
// secret; the SDK's own error stays reachable for --verbose.
func TestAuthS3Versitygw(t *testing.T) {
	u := repoOn(t, cloudtest.S3(t))
	ctx := t.Context()
	open := func(t *testing.T, url string) store.Store {
		t.Helper()
		s, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("wrong secret", func(t *testing.T) {
		const bad = "not-the-secret-4f9d2c"
		t.Setenv("AWS_SECRET_ACCESS_KEY", bad)
		s := open(t, u)
		_, _, err := s.Get(ctx, "fdl.json")
		ae := authErr(t, "Get", err, []string{"/fdl.json: read: credentials not accepted (SignatureDoesNotMatch)", "credentials from environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"}, bad)
		if ae.Reason != store.AuthInvalid || ae.Store != "s3" || ae.Key != "fdl.json" || ae.Op != "read" || ae.MaybeMissing {
			t.Errorf("AuthError = %+v", ae)
		}
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "SignatureDoesNotMatch" {
			t.Errorf("the SDK's error is not wrapped: %v", err)
		}
		// A write fails on the probe's first upload, the same way.
		err = s.Create(ctx, "refs/heads/x", strings.NewReader("x"))
		authErr(t, "Create", err, []string{"write: credentials not accepted (SignatureDoesNotMatch)"}, bad)
		// A HEAD's 403 carries no code: it may be a missing key, and the
		// witness is refused too, so it stays an auth error that says so.
		_, err = s.Stat(ctx, "versions/none/version.json")
		if ae := authErr(t, "Stat", err, []string{"stat: access denied", "s3:ListBucket"}); !ae.MaybeMissing {
			t.Errorf("Stat's 403 should say it may be a missing key: %v", err)
		}
		err = s.List(ctx, "refs/", func(store.ObjectInfo) error { return nil })
		authErr(t, "List", err, []string{"list: credentials not accepted"}, bad)
	})
	t.Run("unknown key", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWNKEY000000")
		_, _, err := open(t, u).Get(ctx, "fdl.json")
		// S3 answers 403 InvalidAccessKeyId; versitygw without its IAM
		// store 404 XAdminUserNotFound, which must not read as missing.
		ae := authErr(t, "Get", err, []string{"read: credentials not accepted (", "check that AWS_SECRET_ACCESS_KEY is the secret of AWS_ACCESS_KEY_ID"})
		if ae.Code != "InvalidAccessKeyId" && ae.Code != "XAdminUserNotFound" {
			t.Errorf("Code = %q", ae.Code)
		}
	})
	t.Run("none", func(t *testing.T) {
		noAWSCredentials(t)
		_, _, err := open(t, u).Get(ctx, "fdl.json")
		ae := authErr(t, "Get", err, []string{"read: no credentials", "the instance role (IMDS), the last of the AWS SDK's chain", "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE"})
		if ae.Reason != store.AuthMissing {
			t.Errorf("Reason = %s, want missing", ae.Reason)
		}
	})
	t.Run("anonymous refused", func(t *testing.T) {
		_, _, err := open(t, u+"&anonymous=true").Get(ctx, "fdl.json")
		authErr(t, "Get", err, []string{"access denied (AccessDenied)", "the URL asks for anonymous access (anonymous=true)", "remove anonymous=true"})
	})
}

// noAWSCredentials empties every source of the AWS SDK's chain for the
// rest of t: no keys, no profile, an empty home, IMDS off.
func noAWSCredentials(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "HOME": home,
		"AWS_CONFIG_FILE": filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "credentials"),
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

// hiding403 starts a proxy in front of an S3 server that answers as S3
// does when the credentials may read but not list the bucket: a GET or
// HEAD of a missing key gets 403 AccessDenied instead of 404 (no body on
// HEAD). With denyAll every object request is refused. It counts the
// requests for fdl.json.
func hiding403(t *testing.T, target string, denyAll *atomic.Bool, witness *atomic.Int32) string {
	tu, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(tu)
	deny := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-amz-request-id", "HIDDEN403")
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		if r.Method != http.MethodHead {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>HIDDEN403</RequestId></Error>`)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/"+store.WitnessKey) {
			witness.Add(1)
		}
		read := r.Method == http.MethodGet || r.Method == http.MethodHead
		object := strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 // path style: /bucket/key
		if denyAll.Load() && object {
			deny(w, r)
			return
		}
		if !read || !object {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		if rec.Code == http.StatusNotFound {
			deny(w, r)
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAuthS3Hidden403: S3 answers 403 instead of 404 for a missing key
// when the credentials may not list the bucket. When the repository's
// fdl.json reads with the same credentials, such a 403 on a read or stat
// is store.ErrNotExist, at the cost of one HEAD of fdl.json per store (none
// once fdl.json was read); when nothing reads it stays an auth error that
// says it may be a missing key. (versitygw answers 404 to a user without
// list permission, so a proxy plays S3 here.)
func TestAuthS3Hidden403(t *testing.T) {
	base := cloudtest.Gofakes3(t)
	u := repoOn(t, base)
	var denyAll atomic.Bool
	var witness atomic.Int32
	proxied := cloudtest.WithEndpoint(t, u, hiding403(t, cloudtest.Endpoint(base), &denyAll, &witness))
	ctx := t.Context()

	s, err := store.Open(ctx, proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Get(ctx, "refs/heads/gone")
	if !errors.Is(err, store.ErrNotExist) || errors.Is(err, store.ErrAuth) || !strings.Contains(err.Error(), "/refs/heads/gone") {
		t.Fatalf("Get of a missing key answered 403 = %v, want ErrNotExist", err)
	}
	if _, err := s.Stat(ctx, "versions/x/version.json"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat of a missing key answered 403 = %v, want ErrNotExist", err)
	}
	if n := witness.Load(); n != 1 {
		t.Errorf("fdl.json was asked %d times for two hidden 403s, want 1", n)
	}
	// A store that read fdl.json first (as opening a repository does)
	// needs no request more.
	witness.Store(0)
	s2, err := store.Open(ctx, proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, _, err := store.ReadAll(ctx, s2, store.WitnessKey); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Stat(ctx, "retention/policy.json"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat after fdl.json was read = %v, want ErrNotExist", err)
	}
	if n := witness.Load(); n != 1 {
		t.Errorf("fdl.json was asked %d times, want 1 (its own read)", n)
	}
	// Writes are not reads: a 403 on a write is an auth error.
	denyAll.Store(true)
	s3, err := store.Open(ctx, proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	for _, key := range []string{"refs/heads/main", store.WitnessKey} {
		_, _, err := s3.Get(ctx, key)
		ae := authErr(t, "Get "+key, err, []string{"read: access denied (AccessDenied), or the object does not exist", "s3:ListBucket"})
		if !ae.MaybeMissing || ae.Reason != store.AuthDenied || errors.Is(err, store.ErrNotExist) {
			t.Errorf("Get %s when nothing reads: %+v", key, ae)
		}
	}
}

// TestAuthAzurite: a connection string with a wrong account key is
// refused by the service (403 AuthenticationFailed): an AuthError naming
// the connection string, without the key.
func TestAuthAzurite(t *testing.T) {
	u := repoOn(t, cloudtest.Azure(t))
	conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	const badKey = "d3JvbmdrZXl3cm9uZ2tleXdyb25na2V5d3JvbmdrZXk="
	var parts []string
	for _, p := range strings.Split(conn, ";") {
		if strings.HasPrefix(p, "AccountKey=") {
			p = "AccountKey=" + badKey
		}
		parts = append(parts, p)
	}
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", strings.Join(parts, ";"))
	s, err := store.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Get(t.Context(), store.WitnessKey)
	// Azure answers 403 AuthenticationFailed; Azurite 403 AuthorizationFailure.
	ae := authErr(t, "Get", err, []string{"/fdl.json: read: ", "credentials from a connection string (AZURE_STORAGE_CONNECTION_STRING)"}, badKey)
	if ae.Store != "azblob" || ae.MaybeMissing || (ae.Code != "AuthenticationFailed" && ae.Code != "AuthorizationFailure") {
		t.Errorf("AuthError = %+v", ae)
	}
}

// TestAuthAzureNoToken: with no storage key, SAS or connection string the
// store takes azidentity's chain; when its credentials give no token (here
// the chain narrowed to workload identity, whose token file is not set),
// every request fails before it is sent: an AuthError naming the chain.
// The service URL is a closed port on loopback, never reached.
func TestAuthAzureNoToken(t *testing.T) {
	for k, v := range map[string]string{
		"AZURE_STORAGE_CONNECTION_STRING": "", "AZURE_STORAGEBLOB_CONNECTIONSTRING": "", "AZURE_STORAGE_KEY": "", "AZURE_STORAGE_SAS_TOKEN": "",
		"AZURE_TOKEN_CREDENTIALS": "WorkloadIdentityCredential", "AZURE_CLIENT_ID": "00000000-0000-0000-0000-000000000001",
		"AZURE_TENANT_ID": "00000000-0000-0000-0000-000000000002", "AZURE_FEDERATED_TOKEN_FILE": "",
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k) // t.Setenv puts it back
		}
	}
	s, err := store.Open(t.Context(), "azblob://fdl?localemu=true&domain=127.0.0.1:1&protocol=https&storage_account=acct")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Get(t.Context(), store.WitnessKey)
	if ae := authErr(t, "Get", err, []string{"read: no credentials", `azidentity's chain narrowed to "WorkloadIdentityCredential"`, "AZURE_FEDERATED_TOKEN_FILE"}); ae.Reason != store.AuthMissing {
		t.Errorf("Reason = %s, want missing", ae.Reason)
	}
}

// TestAuthGCSWorkloadIdentityRefused: a workload identity federation file
// (type external_account) whose token exchange is refused: the request
// fails before it is sent (the exchange goes to a stand-in of Google's STS
// on loopback), and the AuthError names workload identity federation.
func TestAuthGCSWorkloadIdentityRefused(t *testing.T) {
	var exchanges atomic.Int32
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exchanges.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant","error_description":"The audience in ID Token does not match the expected audience."}`)
	}))
	defer sts.Close()
	dir := t.TempDir()
	oidc := filepath.Join(dir, "oidc-token")
	if err := os.WriteFile(oidc, []byte("header.payload.signature"), 0o600); err != nil {
		t.Fatal(err)
	}
	cred := fmt.Sprintf(`{"type":"external_account","audience":"//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/ci/providers/github","subject_token_type":"urn:ietf:params:oauth:token-type:jwt","token_url":%q,"credential_source":{"file":%q}}`, sts.URL+"/v1/token", oidc)
	file := filepath.Join(dir, "wif.json")
	if err := os.WriteFile(file, []byte(cred), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	s, err := store.Open(t.Context(), "gs://fdl-test/repo")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Get(t.Context(), store.WitnessKey)
	authErr(t, "Get", err, []string{"gs://fdl-test/repo/fdl.json: read: no credentials", "workload identity federation (an external_account file) (GOOGLE_APPLICATION_CREDENTIALS)"}, "header.payload.signature")
	if exchanges.Load() == 0 {
		t.Error("the stand-in STS was never asked: the test did not exercise the exchange")
	}

	// A credentials file that is not there fails when the store opens.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(dir, "missing.json"))
	_, err = store.Open(context.Background(), "gs://fdl-test/repo")
	authErr(t, "Open", err, []string{"gs://fdl-test/repo: open: no credentials", "GOOGLE_APPLICATION_CREDENTIALS must name a readable JSON credentials file"})
}
