package s3

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloud"
)

// How fdl tells which credentials the AWS SDK for Go v2 uses: the SDK does
// not try a chain at request time. config.LoadDefaultConfig picks one
// provider when the store is opened (config/resolve_credentials.go,
// resolveCredentialChain): a profile named in the URL or AWS_PROFILE;
// else AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY; else web identity
// (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN; STS at
// AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else the region's); else
// the default profile's entries (keys, a source profile or role, web
// identity, SSO, credential_process); else the container endpoint
// (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI); else the instance
// role (IMDS). The provider it picked names itself through
// aws.CredentialProviderSource (ProviderSources), which is what
// describeCreds reads. A provider that fails to give credentials fails
// every request before it is sent; markedProvider marks that failure so
// that it is told from a refusal by S3.

// credsError marks a failure of the credential provider itself (no
// credentials, a token exchange refused), as opposed to a request S3
// refused.
type credsError struct{ err error }

func (e *credsError) Error() string { return e.err.Error() }
func (e *credsError) Unwrap() error { return e.err }

// markedProvider is the SDK's provider with its failures marked
// (credsError). It passes on the provider's sources and identity, so the
// S3 client treats it as the provider it wraps.
type markedProvider struct{ inner aws.CredentialsProvider }

func (p markedProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := p.inner.Retrieve(ctx)
	if err != nil {
		return c, &credsError{err}
	}
	return c, nil
}

func (p markedProvider) ProviderSources() []aws.CredentialSource {
	if s, ok := p.inner.(aws.CredentialProviderSource); ok {
		return s.ProviderSources()
	}
	return nil
}

func (p markedProvider) IsCredentialsProvider(target aws.CredentialsProvider) bool {
	return aws.IsCredentialsProvider(p.inner, target)
}

// credKind is a credential source as fdl names it.
type credKind int

const (
	credUnknown credKind = iota
	credAnonymous
	credEnv
	credWebIdentity
	credProfileWebIdentity
	credProfile
	credContainer
	credIMDS
	credRoleOption
)

// awsCreds is the source an S3 store's SDK picked, for AuthError.
type awsCreds struct {
	kind    credKind
	profile string // the profile's name, for the profile kinds
}

// describeCreds reads which source the SDK picked for cfg (see the note at
// the top of this file). anonymous is the URL's anonymous=true, role its
// role option, profile its profile option.
func describeCreds(cfg aws.Config, anonymous bool, role, profile string) awsCreds {
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	if profile == "" {
		profile = "default"
	}
	c := awsCreds{profile: profile}
	switch {
	case anonymous:
		c.kind = credAnonymous
		return c
	case role != "":
		c.kind = credRoleOption
		return c
	case cfg.Credentials == nil:
		return c
	}
	var sources []aws.CredentialSource
	if s, ok := cfg.Credentials.(aws.CredentialProviderSource); ok {
		sources = s.ProviderSources()
	}
	// The first source that says how the credentials are obtained: a
	// profile's web identity is web identity, a profile's role assumed
	// with its source profile's keys is the profile.
	for _, k := range []struct {
		src  aws.CredentialSource
		kind credKind
	}{
		{aws.CredentialSourceEnvVarsSTSWebIDToken, credWebIdentity},
		{aws.CredentialSourceProfileSTSWebIDToken, credProfileWebIdentity},
		{aws.CredentialSourceEnvVars, credEnv},
		{aws.CredentialSourceHTTP, credContainer},
		{aws.CredentialSourceIMDS, credIMDS},
	} {
		if slices.Contains(sources, k.src) {
			c.kind = k.kind
			return c
		}
	}
	for _, s := range []aws.CredentialSource{
		aws.CredentialSourceProfile, aws.CredentialSourceProfileSourceProfile, aws.CredentialSourceProfileNamedProvider,
		aws.CredentialSourceProfileSSO, aws.CredentialSourceSSO, aws.CredentialSourceProfileSSOLegacy, aws.CredentialSourceSSOLegacy,
		aws.CredentialSourceProfileProcess, aws.CredentialSourceProcess, aws.CredentialSourceProfileLogin, aws.CredentialSourceLogin,
	} {
		if slices.Contains(sources, s) {
			c.kind = credProfile
			return c
		}
	}
	return c
}

// chainHint names what to set when the SDK found nothing.
const chainHint = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE (docs/ci.md), or add ?anonymous=true to the URL for a public bucket"

// credentials is what an AuthError says of the source, for reason.
func (c awsCreds) credentials(reason store.AuthReason) store.Credentials {
	var out store.Credentials
	switch c.kind {
	case credAnonymous:
		out.Source, out.Vars = "none: the URL asks for anonymous access", []string{"anonymous=true"}
		out.Set = "remove anonymous=true from the URL and give credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE)"
	case credEnv:
		out.Source, out.Vars = "environment variables", []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
		if os.Getenv("AWS_SESSION_TOKEN") != "" {
			out.Vars = append(out.Vars, "AWS_SESSION_TOKEN")
		}
		switch reason {
		case store.AuthInvalid:
			out.Set = "check that AWS_SECRET_ACCESS_KEY is the secret of AWS_ACCESS_KEY_ID, that the key is active, and that AWS_SESSION_TOKEN is set exactly for session keys"
		case store.AuthExpired:
			out.Set = "the session has expired: get new session keys (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), or use web identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE), which the SDK renews"
		}
	case credWebIdentity:
		out.Source, out.Vars = "web identity", []string{"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"}
		if os.Getenv("AWS_ENDPOINT_URL_STS") != "" {
			out.Vars = append(out.Vars, "AWS_ENDPOINT_URL_STS")
		}
		switch reason {
		case store.AuthMissing:
			out.Set = "STS gave no credentials for the token: check that AWS_WEB_IDENTITY_TOKEN_FILE holds a current token and that the trust policy of AWS_ROLE_ARN accepts its issuer, audience and subject"
		case store.AuthInvalid, store.AuthExpired:
			out.Set = "the session keys STS gave were not accepted: check that the role is in this store's account and region"
		}
	case credProfileWebIdentity:
		out.Source, out.Vars = "web identity of shared profile "+quote(c.profile), []string{"AWS_PROFILE", "AWS_CONFIG_FILE"}
		if reason == store.AuthMissing {
			out.Set = "STS gave no credentials for the token: check the profile's web_identity_token_file and role_arn"
		}
	case credProfile:
		out.Source, out.Vars = "shared profile "+quote(c.profile), []string{"AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"}
		switch reason {
		case store.AuthMissing:
			out.Set = "the profile gave no credentials: check its entries in ~/.aws/config and ~/.aws/credentials (an SSO profile needs a current login)"
		case store.AuthInvalid, store.AuthExpired:
			out.Set = "check the profile's keys (an SSO or session profile needs a current login)"
		}
	case credContainer:
		out.Source, out.Vars = "the container credentials endpoint", []string{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"}
		if reason != store.AuthDenied {
			out.Set = "the endpoint gave no usable credentials: check the task or pod role"
		}
	case credIMDS:
		out.Source = "the instance role (IMDS), the last of the AWS SDK's chain: environment variables, shared profile, web identity, container, instance role"
		if reason == store.AuthMissing {
			out.Set = chainHint
		}
	case credRoleOption:
		out.Source, out.Vars = "the role of the URL's role option, assumed with the AWS SDK's default credentials", []string{"role"}
		if reason == store.AuthMissing {
			out.Set = "check that the default credentials may assume the role (sts:AssumeRole)"
		}
	default:
		out.Source = "the AWS SDK's chain: environment variables, shared profile, web identity, container, instance role"
		if reason == store.AuthMissing {
			out.Set = chainHint
		}
	}
	if out.Set == "" && reason == store.AuthDenied {
		out.Set = "the credentials are valid but not allowed this; grant the permission (docs/ci.md, Least privilege)"
	}
	if out.Set == "" {
		out.Set = chainHint
	}
	return out
}

func quote(s string) string { return `"` + s + `"` }

// Auth classifies an S3 error as a credential failure (cloud.Driver):
//   - the credential provider failed (credsError): no credentials found, or
//     STS, SSO, the container endpoint or IMDS gave none: AuthMissing, with
//     the code of the service that refused (e.g. STS AccessDenied);
//   - S3's InvalidAccessKeyId, SignatureDoesNotMatch, InvalidToken,
//     InvalidSecurity, AuthorizationHeaderMalformed, and versitygw's
//     XAdminUserNotFound (its 404 for an unknown key id): AuthInvalid;
//   - ExpiredToken, TokenRefreshRequired: AuthExpired;
//   - AccessDenied, AllAccessDisabled, AccountProblem, and any other 403
//     but RequestTimeTooSkewed (a HEAD's 403 has no body, so the SDK
//     names it "Forbidden"):
//     AuthDenied; AccessDenied and a bodiless 403 are Hidden, since S3
//     answers so for a missing key when the credentials lack s3:ListBucket.
func (d *driver) Auth(err error) (cloud.AuthFailure, bool) {
	var ce *credsError
	if errors.As(err, &ce) {
		af := cloud.AuthFailure{Reason: store.AuthMissing, Creds: d.creds.credentials(store.AuthMissing)}
		var ae smithy.APIError
		if errors.As(ce.err, &ae) {
			af.Code = ae.ErrorCode()
			if oe := new(smithy.OperationError); errors.As(ce.err, &oe) {
				af.Code = oe.ServiceID + " " + af.Code
			}
		}
		return af, true
	}
	var reason store.AuthReason
	code, status := "", 0
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	hidden := false
	switch code {
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "InvalidSecurity", "AuthorizationHeaderMalformed",
		"XAdminUserNotFound": // versitygw's answer (404) for an unknown access key id
		reason = store.AuthInvalid
	case "ExpiredToken", "TokenRefreshRequired":
		reason = store.AuthExpired
	case "AccessDenied":
		reason, hidden = store.AuthDenied, true
	case "AllAccessDisabled", "AccountProblem":
		reason = store.AuthDenied
	case "RequestTimeTooSkewed":
		return cloud.AuthFailure{}, false // a 403 about the clock, not the credentials
	default:
		if status != http.StatusForbidden {
			return cloud.AuthFailure{}, false
		}
		reason = store.AuthDenied
		hidden = code == "" || code == "Forbidden"
		if code == "" {
			code = "403"
		}
	}
	return cloud.AuthFailure{Reason: reason, Code: code, Creds: d.creds.credentials(reason), Hidden: hidden}, true
}
