package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"cloud.google.com/go/auth"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloud"
)

// Google's Application Default Credentials take the first of
// (cloud.google.com/go/auth/credentials.DetectDefault): the JSON file
// GOOGLE_APPLICATION_CREDENTIALS names (its "type" says what it holds:
// service_account, authorized_user, external_account — workload identity
// federation —, impersonated_service_account, …); gcloud's
// application-default file ($HOME/.config/gcloud/application_default_credentials.json);
// the metadata server of a Google Cloud machine. The first two are files
// fdl can see, so describeCreds names the one the chain takes; the last
// is named with the chain's order.

// tokenError marks a failure of the credentials' token provider (a token
// request refused, a workload identity exchange that failed, an unreadable
// subject token), as opposed to a request Cloud Storage refused or a
// network error.
type tokenError struct{ err error }

func (e *tokenError) Error() string { return e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

// markedTokens is the chain's token provider with its failures marked.
type markedTokens struct{ inner auth.TokenProvider }

func (m markedTokens) Token(ctx context.Context) (*auth.Token, error) {
	t, err := m.inner.Token(ctx)
	if err != nil {
		return nil, &tokenError{err}
	}
	return t, nil
}

// gcpCreds is the credential source Google's chain takes, for AuthError.
type gcpCreds struct {
	anonymous bool
	emulator  bool   // STORAGE_EMULATOR_HOST: no credentials at all
	file      string // GOOGLE_APPLICATION_CREDENTIALS
	fileType  string // its "type", if readable
	wellKnown bool   // gcloud's application-default file exists
}

// describeCreds reads which source Google's chain takes, from the
// environment and files it reads (see above).
func describeCreds(anonymous bool) gcpCreds {
	c := gcpCreds{anonymous: anonymous, emulator: os.Getenv("STORAGE_EMULATOR_HOST") != ""}
	if c.file = os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); c.file != "" {
		if b, err := os.ReadFile(c.file); err == nil {
			var f struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(b, &f) == nil {
				c.fileType = f.Type
			}
		}
		return c
	}
	if home := os.Getenv("HOME"); home != "" {
		if _, err := os.Stat(filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")); err == nil {
			c.wellKnown = true
		}
	}
	return c
}

// credentials is what an AuthError says of the source, for reason.
func (c gcpCreds) credentials(reason store.AuthReason) store.Credentials {
	var out store.Credentials
	switch {
	case c.anonymous:
		out.Source, out.Vars = "none: the URL asks for anonymous access", []string{"anonymous=true"}
		out.Set = "remove anonymous=true from the URL and give credentials (GOOGLE_APPLICATION_CREDENTIALS)"
		return out
	case c.emulator:
		out.Source, out.Vars = "none: an emulator", []string{"STORAGE_EMULATOR_HOST"}
	case c.file != "":
		out.Vars = []string{"GOOGLE_APPLICATION_CREDENTIALS"}
		switch c.fileType {
		case "external_account":
			out.Source = "workload identity federation (an external_account file)"
			if reason != store.AuthDenied {
				out.Set = "Google's STS gave no token for the file's subject token: check the file's credential_source (the OIDC token file or URL), its audience (the workload identity provider) and that the provider's attribute conditions accept the token"
			}
		case "service_account":
			out.Source = "a service account key file"
		case "authorized_user":
			out.Source = "a user credentials file"
		case "":
			out.Source = "the file GOOGLE_APPLICATION_CREDENTIALS names"
			if reason == store.AuthMissing {
				out.Set = "GOOGLE_APPLICATION_CREDENTIALS must name a readable JSON credentials file (a service account key, or an external_account file for workload identity federation)"
			}
		default:
			out.Source = "a credentials file of type " + strconv.Quote(c.fileType)
		}
	case c.wellKnown:
		out.Source = "gcloud's application-default credentials (~/.config/gcloud/application_default_credentials.json)"
		if reason != store.AuthDenied {
			out.Set = "log in again: gcloud auth application-default login"
		}
	default:
		out.Source = "the metadata server, the last of Google's chain: GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default file, the metadata server"
		if reason == store.AuthMissing {
			out.Set = "set GOOGLE_APPLICATION_CREDENTIALS to a service account key or a workload identity federation file (docs/ci.md), or add ?anonymous=true to the URL for a public bucket"
		}
	}
	if out.Set == "" {
		switch reason {
		case store.AuthDenied:
			out.Set = "the credentials are valid but not allowed this; grant the permission (docs/ci.md, Least privilege)"
		default:
			out.Set = "check the credentials, or set GOOGLE_APPLICATION_CREDENTIALS to a service account key or a workload identity federation file (docs/ci.md)"
		}
	}
	return out
}

// Auth classifies a GCS error as a credential failure (cloud.Driver):
//   - the token provider failed (tokenError: a workload identity exchange
//     refused, a refresh token or service account key not accepted, the
//     metadata server; also cloud.google.com/go/auth's *auth.Error and
//     golang.org/x/oauth2's *RetrieveError where they reach here
//     unmarked): AuthMissing, with the token endpoint's status if known;
//   - a 401 from Cloud Storage: AuthInvalid (an invalid or expired token);
//   - a 403: AuthDenied. GCS answers 404 for a missing object to anyone
//     who may read it, so no 403 is taken for a missing key.
func (d driver) Auth(err error) (cloud.AuthFailure, bool) {
	var tk *tokenError
	var te *auth.Error
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &tk), errors.As(err, &te):
		af := cloud.AuthFailure{Reason: store.AuthMissing, Creds: d.creds.credentials(store.AuthMissing)}
		if errors.As(err, &te) && te.Response != nil {
			af.Code = "token request: HTTP " + strconv.Itoa(te.Response.StatusCode)
		}
		return af, true
	case errors.As(err, &re):
		af := cloud.AuthFailure{Reason: store.AuthMissing, Creds: d.creds.credentials(store.AuthMissing)}
		if re.ErrorCode != "" {
			af.Code = "token request: " + re.ErrorCode
		} else if re.Response != nil {
			af.Code = "token request: HTTP " + strconv.Itoa(re.Response.StatusCode)
		}
		return af, true
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return cloud.AuthFailure{}, false
	}
	var reason store.AuthReason
	switch ge.Code {
	case http.StatusUnauthorized:
		reason = store.AuthInvalid
	case http.StatusForbidden:
		reason = store.AuthDenied
	default:
		return cloud.AuthFailure{}, false
	}
	return cloud.AuthFailure{Reason: reason, Code: strconv.Itoa(ge.Code), Creds: d.creds.credentials(reason)}, true
}
