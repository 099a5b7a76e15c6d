package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/fdl-dev/fdl/internal/store"
)

// s3Error is an S3 operation's error as the SDK shapes it: an
// OperationError around an HTTP ResponseError around the API error.
func s3Error(status int, code string) error {
	var api error
	if code != "" {
		api = &smithy.GenericAPIError{Code: code, Message: code + " message"}
	} else {
		api = errors.New("no body")
	}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: api},
	}}
}

// sourced is a credentials provider that names its sources, as the SDK's do.
type sourced []aws.CredentialSource

func (sourced) Retrieve(context.Context) (aws.Credentials, error) { return aws.Credentials{}, nil }
func (s sourced) ProviderSources() []aws.CredentialSource         { return s }

// TestAuthClassify: how S3's answers map to AuthReason, what is not a
// credential failure, and which 403s may be a missing key.
func TestAuthClassify(t *testing.T) {
	d := &driver{creds: awsCreds{kind: credEnv}}
	for _, c := range []struct {
		err    error
		ok     bool
		reason store.AuthReason
		code   string
		hidden bool
	}{
		{s3Error(403, "SignatureDoesNotMatch"), true, store.AuthInvalid, "SignatureDoesNotMatch", false},
		{s3Error(403, "InvalidAccessKeyId"), true, store.AuthInvalid, "InvalidAccessKeyId", false},
		{s3Error(400, "InvalidToken"), true, store.AuthInvalid, "InvalidToken", false},
		{s3Error(400, "ExpiredToken"), true, store.AuthExpired, "ExpiredToken", false},
		{s3Error(403, "AccessDenied"), true, store.AuthDenied, "AccessDenied", true},
		{s3Error(403, "Forbidden"), true, store.AuthDenied, "Forbidden", true},
		{s3Error(403, ""), true, store.AuthDenied, "403", true},
		{s3Error(403, "AllAccessDisabled"), true, store.AuthDenied, "AllAccessDisabled", false},
		{s3Error(403, "RequestTimeTooSkewed"), false, "", "", false},
		{s3Error(404, "NoSuchKey"), false, "", "", false},
		{s3Error(412, "PreconditionFailed"), false, "", "", false},
		{s3Error(500, "InternalError"), false, "", "", false},
		{errors.New("dial tcp 127.0.0.1:1: connection refused"), false, "", "", false},
		{fmt.Errorf("get identity: %w", &credsError{&smithy.OperationError{ServiceID: "STS", OperationName: "AssumeRoleWithWebIdentity",
			Err: &smithy.GenericAPIError{Code: "InvalidIdentityToken"}}}), true, store.AuthMissing, "STS InvalidIdentityToken", false},
		{&credsError{errors.New("no EC2 IMDS role found")}, true, store.AuthMissing, "", false},
	} {
		af, ok := d.Auth(c.err)
		if ok != c.ok || af.Reason != c.reason || af.Code != c.code || af.Hidden != c.hidden {
			t.Errorf("Auth(%v) = %+v, %v; want %v %s %q hidden=%v", c.err, af, ok, c.ok, c.reason, c.code, c.hidden)
		}
		if ok && (af.Creds.Source != "environment variables" || af.Creds.Set == "") {
			t.Errorf("Auth(%v): creds %+v", c.err, af.Creds)
		}
	}
}

// TestDescribeCreds: the source is the one the SDK's provider names.
func TestDescribeCreds(t *testing.T) {
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ENDPOINT_URL_STS", "")
	for _, c := range []struct {
		cfg       aws.Config
		anonymous bool
		role      string
		want      string
	}{
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceEnvVarsSTSWebIDToken})}, false, "", "web identity"},
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceEnvVars})}, false, "", "environment variables"},
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceProfileSTSWebIDToken})}, false, "", `web identity of shared profile "default"`},
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceProfileSourceProfile, aws.CredentialSourceProfile, aws.CredentialSourceSTSAssumeRole})}, false, "", `shared profile "default"`},
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceProfileSSO, aws.CredentialSourceSSO})}, false, "", `shared profile "default"`},
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceHTTP})}, false, "", "container credentials endpoint"},
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceIMDS})}, false, "", "instance role (IMDS)"},
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceIMDS})}, true, "", "anonymous"},
		{aws.Config{Credentials: aws.NewCredentialsCache(sourced{aws.CredentialSourceEnvVars})}, false, "arn:aws:iam::1:role/r", "role option"},
	} {
		got := describeCreds(c.cfg, c.anonymous, c.role, "").credentials(store.AuthMissing)
		if !strings.Contains(got.Source, c.want) || got.Set == "" {
			t.Errorf("%+v: source %q set %q, want %q", c, got.Source, got.Set, c.want)
		}
	}
}

// TestInstanceRoleSaysNothingOnStderr: with no credentials but the
// instance role, where the metadata server refuses the IMDSv2 token (as
// outside EC2 behind a proxy), the SDK's provider falls back to IMDSv1;
// its "WARN falling back to IMDSv1" line never reaches fdl's stderr, and
// the read fails as a missing credential naming the instance role.
func TestInstanceRoleSaysNothingOnStderr(t *testing.T) {
	imdsCalls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		imdsCalls++
		if r.Method == http.MethodPut {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_V1_DISABLED"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)

	stderr := os.Stderr
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	os.Stderr = wr
	defer func() { os.Stderr = stderr }()
	raw := "s3://bucket/p?endpoint=http://127.0.0.1:1&region=us-east-1&use_path_style=true"
	u, _ := url.Parse(raw)
	s, err := openURL(context.Background(), u, raw)
	if err == nil {
		_, _, err = store.ReadAll(context.Background(), s, "fdl.json")
	}
	os.Stderr = stderr
	wr.Close()
	printed, _ := io.ReadAll(rd)
	if len(printed) != 0 {
		t.Errorf("the SDK printed on stderr: %q", printed)
	}
	var ae *store.AuthError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "instance role") {
		t.Errorf("read with no credentials: %v; want an auth error naming the instance role", err)
	}
	if imdsCalls == 0 {
		t.Error("the metadata server was never asked: the test did not reach the instance role")
	}
}
