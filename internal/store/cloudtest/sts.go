package cloudtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// STS is a stand-in for AWS STS that answers the AssumeRoleWithWebIdentity
// query API (a POST of the form-encoded Action, Version, RoleArn,
// RoleSessionName and WebIdentityToken) as STS does: for the one token it
// accepts, an XML answer carrying the keys it was given; for any other
// token, 403 AccessDenied ("Not authorized to perform
// sts:AssumeRoleWithWebIdentity"), what STS answers when the role's trust
// policy does not accept the token; any other action, 400. It records
// every request. It gives no session token (the local S3 server,
// versitygw, refuses one it did not issue) and an expiry an hour away,
// which nothing enforces. Handler serves it; StartSTS starts it on
// loopback.
type STS struct {
	keyID, secret, goodToken string

	mu    sync.Mutex
	calls []STSCall
}

// STSCall is one request the stand-in received.
type STSCall struct {
	Method, Action, RoleARN, SessionName, Token string
}

// NewSTS returns a stand-in that accepts goodToken and answers it with
// keyID and secret.
func NewSTS(keyID, secret, goodToken string) *STS {
	return &STS{keyID: keyID, secret: secret, goodToken: goodToken}
}

// StartSTS starts NewSTS's stand-in on 127.0.0.1 for the life of t and
// returns it with its URL (http://127.0.0.1:PORT), the value for
// AWS_ENDPOINT_URL_STS.
func StartSTS(t testing.TB, keyID, secret, goodToken string) (*STS, string) {
	t.Helper()
	s := NewSTS(keyID, secret, goodToken)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// Calls returns the requests received so far.
func (s *STS) Calls() []STSCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// ServeHTTP answers one STS request.
func (s *STS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := STSCall{Method: r.Method, Action: r.Form.Get("Action"), RoleARN: r.Form.Get("RoleArn"),
		SessionName: r.Form.Get("RoleSessionName"), Token: r.Form.Get("WebIdentityToken")}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	status, body := http.StatusOK, ""
	switch {
	case c.Action != "AssumeRoleWithWebIdentity" || r.Method != http.MethodPost:
		status, body = http.StatusBadRequest, stsError("InvalidAction", "the stand-in answers only POST Action=AssumeRoleWithWebIdentity")
	case c.Token != s.goodToken:
		status, body = http.StatusForbidden, stsError("AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
	default:
		body = fmt.Sprintf(`<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>repo:example/pipeline:ref:refs/heads/main</SubjectFromWebIdentityToken>
    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/ci/%s</Arn><AssumedRoleId>AROASTANDIN:%s</AssumedRoleId></AssumedRoleUser>
    <Credentials>
      <AccessKeyId>%s</AccessKeyId>
      <SecretAccessKey>%s</SecretAccessKey>
      <Expiration>%s</Expiration>
    </Credentials>
    <Audience>sts.amazonaws.com</Audience>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>standin</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`, c.SessionName, c.SessionName, s.keyID, s.secret, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}
	// A Content-Length: the AWS C++ SDK's client (DuckDB's aws
	// extension) does not read a body that ends with the connection.
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

func stsError(code, msg string) string {
	return `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>` + code +
		`</Code><Message>` + msg + `</Message></Error><RequestId>standin</RequestId></ErrorResponse>`
}
