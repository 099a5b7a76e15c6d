package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/store/cloudtest"
)

// webIdentityEnv is the environment of a CI job with short-lived AWS
// credentials only: no keys, no profile, an empty home, IMDS off, and web
// identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE) with STS at
// stsURL.
func webIdentityEnv(t *testing.T, role, tokenFile, stsURL string) []string {
	home := t.TempDir()
	return []string{
		"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_DEFAULT_PROFILE=",
		"HOME=" + home, "AWS_CONFIG_FILE=" + filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"),
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=", "AWS_CONTAINER_CREDENTIALS_FULL_URI=", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ROLE_ARN=" + role, "AWS_WEB_IDENTITY_TOKEN_FILE=" + tokenFile, "AWS_ENDPOINT_URL_STS=" + stsURL,
	}
}

// TestWebIdentityS3: fdl publishes to S3 (versitygw) with short-lived
// credentials from web identity alone: init, checkout, push and the
// readers' commands work with AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE
// and no key in the environment, STS being a stand-in on loopback
// (AWS_ENDPOINT_URL_STS) that is asked with the role and the token file's
// token; a token STS refuses ends with exit 5, kind auth, naming web
// identity and what to set, without the token.
func TestWebIdentityS3(t *testing.T) {
	base := cloudtest.S3(t)
	keyID, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if keyID == "" || secret == "" {
		t.Fatal("FDL_TEST_S3_URL is set but AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is not (servers.env)")
	}
	const role = "arn:aws:iam::123456789012:role/fdl-ci"
	good := fmt.Sprintf("eyJhbGciOiJSUzI1NiJ9.good-%d.sig", time.Now().UnixNano())
	sts, stsURL := cloudtest.StartSTS(t, keyID, secret, good)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	env := webIdentityEnv(t, role, tokenFile, stsURL)
	run := func(args ...string) string {
		t.Helper()
		code, out := fdlProc(t, env, args...)
		if code != 0 {
			t.Fatalf("fdl %v with web identity: exit %d\n%s", args, code, out)
		}
		return out
	}

	url := cloudtest.WithPrefix(base, t.Name())
	run("init", url)
	work := filepath.Join(dir, "w")
	run("checkout", url, work, "--catalog-format", "duckdb")
	duckWrite(t, duckSession(t), work, "CREATE TABLE nightly(day DATE, n INTEGER)")
	run("-C", work, "commit", "-m", "first nightly")
	run("-C", work, "push")
	out := run("--repo", url, "log")
	if !strings.Contains(out, "first nightly") {
		t.Errorf("log with web identity:\n%s", out)
	}
	out = run("--repo", url, "show", "main")
	if !strings.Contains(out, "ATTACH OR REPLACE 'ducklake:s3://") || !strings.Contains(out, "PROVIDER credential_chain") {
		t.Errorf("show with web identity prints no ATTACH line with its secret:\n%s", out)
	}
	if head := branchHead(t, url); head == "" {
		t.Error("main holds no version after the push")
	}
	calls := sts.Calls()
	if len(calls) == 0 {
		t.Fatal("the STS stand-in was never asked: fdl did not use web identity")
	}
	for _, c := range calls {
		if c.Action != "AssumeRoleWithWebIdentity" || c.RoleARN != role || c.Token != good || c.SessionName == "" {
			t.Errorf("STS was asked %+v, want AssumeRoleWithWebIdentity of %s with the token file's token", c, role)
		}
	}
	refusedWebIdentity(t, role, stsURL, url, secret)
}

// refusedWebIdentity is TestWebIdentityS3's refused token: with a token
// STS (at stsURL) refuses for role, fdl log of url ends with exit 5, kind
// auth, one line naming web identity and what to set, and neither the
// token nor the key secret in the output; --verbose adds the SDK's words.
func refusedWebIdentity(t *testing.T, role, stsURL, url, secret string) {
	t.Helper()
	bad := filepath.Join(t.TempDir(), "bad-token")
	const badToken = "eyJhbGciOiJSUzI1NiJ9.refused-subject.sig"
	if err := os.WriteFile(bad, []byte(badToken), 0o600); err != nil {
		t.Fatal(err)
	}
	badEnv := webIdentityEnv(t, role, bad, stsURL)
	code, out := fdlProc(t, badEnv, "--json", "--repo", url, "log")
	var doc struct {
		Error struct {
			Message  string `json:"message"`
			ExitCode int    `json:"exit_code"`
			Kind     string `json:"kind"`
			Hint     string `json:"hint"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &doc); err != nil {
		t.Fatalf("refused token: exit %d, stderr is not one JSON document: %v\n%s", code, err, out)
	}
	msg := doc.Error.Message
	if code != 5 || doc.Error.ExitCode != 5 || doc.Error.Kind != "auth" || strings.ContainsAny(msg, "\n") ||
		!strings.Contains(msg, "credentials from web identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ENDPOINT_URL_STS)") ||
		!strings.Contains(msg, "STS AccessDenied") || !strings.Contains(msg, "trust policy") || !strings.Contains(doc.Error.Hint, "--verbose") {
		t.Errorf("refused token: exit %d, error %+v", code, doc.Error)
	}
	if strings.Contains(out, badToken) || strings.Contains(out, secret) {
		t.Errorf("a credential appears in the output:\n%s", out)
	}
	// --verbose adds the SDK's own words.
	code, out = fdlProc(t, badEnv, "--verbose", "--repo", url, "log")
	if code != 5 || !strings.Contains(out, "Not authorized to perform sts:AssumeRoleWithWebIdentity") || !strings.Contains(out, "fdl: ") {
		t.Errorf("refused token with --verbose: exit %d\n%s", code, out)
	}
}
