package store

import (
	"errors"
	"strings"
)

// ErrAuth: the store refused the request's credentials, or no credentials
// were found where the store's SDK looks for them: missing, invalid (an
// unknown key, a bad signature, a malformed token), expired, or valid but
// without permission for what was asked (AccessDenied, HTTP 401/403).
// Every such error is an *AuthError, which matches ErrAuth.
var ErrAuth = errors.New("credentials missing, expired or refused")

// AuthReason says how credentials failed.
type AuthReason string

// The reasons an AuthError gives.
const (
	// AuthMissing: no credentials were found (every source of the SDK's
	// chain was empty), or a credential source could not give any (a
	// token exchange refused, a metadata service that is not there).
	AuthMissing AuthReason = "missing"
	// AuthInvalid: the store does not accept the credentials (an unknown
	// key id, a signature made with another secret, a malformed token).
	AuthInvalid AuthReason = "invalid"
	// AuthExpired: the credentials were accepted once but have expired (a
	// session token, a SAS).
	AuthExpired AuthReason = "expired"
	// AuthDenied: the credentials are valid but lack the permission asked
	// for (S3 AccessDenied, Azure AuthorizationPermissionMismatch, GCS 403,
	// HTTP 401/403).
	AuthDenied AuthReason = "denied"
)

// Credentials says where a store's credentials came from, as the store's
// SDK decided (a driver reads the SDK's own choice; where the SDK does not
// tell, Source names its chain in order).
type Credentials struct {
	// Source is the credential source used or tried, in words:
	// "environment variables", "shared profile \"ci\"", "web identity",
	// "instance role (IMDS)", "workload identity", "connection string",
	// "anonymous", ….
	Source string
	// Vars are the environment variables (or URL options) that select or
	// feed Source, e.g. AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE.
	Vars []string
	// Set says, in one clause, what to set or check to give the store
	// working credentials ("set AWS_ACCESS_KEY_ID and …").
	Set string
}

// AuthError is a request a store refused for its credentials, or could not
// make for want of any (see ErrAuth). Its message is one line that names
// the object by its location (never a credential), the operation, what
// failed, the credential source tried and what to set; the SDK's own text
// is only wrapped (Err), for a debugging view. errors.Is(err, ErrAuth)
// holds; errors.As reaches the SDK's error through Unwrap.
type AuthError struct {
	Store    string     // kind of store: "s3", "gs", "azblob", "http"
	Location string     // the object's location, or the store's root; no credentials
	Key      string     // the key asked for; "" for the whole store
	Op       string     // "open", "read", "stat", "write", "list", "delete"
	Reason   AuthReason // how the credentials failed
	Code     string     // the service's own code or HTTP status, e.g. "SignatureDoesNotMatch", "403"; may be empty
	Creds    Credentials
	// MaybeMissing is set on a refused read of a key the store could not
	// tell from a missing one: S3 answers 403 instead of 404 for a missing
	// key when the credentials may not list the bucket (s3:ListBucket).
	MaybeMissing bool
	Err          error // the SDK's own error, credentials removed; may be nil
}

// Error is the one-line message: "LOCATION: OP: WHAT (CODE); credentials
// from SOURCE (VARS): SET".
func (e *AuthError) Error() string {
	var b strings.Builder
	b.WriteString(e.Location)
	if e.Op != "" {
		b.WriteString(": " + e.Op)
	}
	b.WriteString(": ")
	switch e.Reason {
	case AuthMissing:
		b.WriteString("no credentials")
	case AuthInvalid:
		b.WriteString("credentials not accepted")
	case AuthExpired:
		b.WriteString("credentials expired")
	default:
		b.WriteString("access denied")
	}
	if e.Code != "" {
		b.WriteString(" (" + e.Code + ")")
	}
	if e.MaybeMissing {
		b.WriteString(", or the object does not exist: S3 answers 403 for a missing key when the credentials may not list the bucket (s3:ListBucket)")
	}
	if e.Creds.Source != "" {
		b.WriteString("; credentials from " + e.Creds.Source)
		if len(e.Creds.Vars) > 0 {
			b.WriteString(" (" + strings.Join(e.Creds.Vars, ", ") + ")")
		}
	}
	if e.Creds.Set != "" {
		b.WriteString(": " + e.Creds.Set)
	}
	return oneLine(b.String())
}

// Is makes an AuthError match ErrAuth.
func (e *AuthError) Is(target error) bool { return target == ErrAuth }

// Unwrap returns the SDK's own error.
func (e *AuthError) Unwrap() error { return e.Err }

// oneLine joins the lines of s with "; " (an SDK's text never reaches the
// message, but a location or a variable's name could hold a newline).
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
}

// WitnessKey is the key of an object every repository holds at its root:
// its settings, fdl.json (docs/spec.md §1, §2). A store that cannot tell a
// refused read from a missing key (S3 without s3:ListBucket answers 403
// for both) reads it to decide: when the same credentials read it, the
// 403 meant "no such key".
const WitnessKey = "fdl.json"
