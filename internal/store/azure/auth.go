package azure

import (
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloud"
)

// Which credentials an azblob:// store uses is decided when it is opened,
// by gocloud's azureblob (newCredInfoFromEnv, the same order openURL
// documents): AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (a shared key);
// else AZURE_STORAGE_SAS_TOKEN; else AZURE_STORAGE_CONNECTION_STRING (or
// AZURE_STORAGEBLOB_CONNECTIONSTRING); else azidentity's
// DefaultAzureCredential, which tries in order (azidentity v1.14,
// NewDefaultAzureCredential): EnvironmentCredential (AZURE_TENANT_ID,
// AZURE_CLIENT_ID with AZURE_CLIENT_SECRET or a certificate),
// WorkloadIdentityCredential (AZURE_TENANT_ID, AZURE_CLIENT_ID,
// AZURE_FEDERATED_TOKEN_FILE), ManagedIdentityCredential, then the Azure
// CLI, the Azure Developer CLI and Azure PowerShell; AZURE_TOKEN_CREDENTIALS
// narrows the chain ("prod", "dev", or one credential's name).
// describeCreds repeats gocloud's test of the environment; within the
// chain it names the first credential whose variables are set, as the
// chain takes it, and otherwise the chain in order.

// credKind is a credential source as fdl names it.
type credKind int

const (
	credSharedKey credKind = iota
	credSAS
	credConnString
	credChainEnv       // EnvironmentCredential: a service principal
	credChainWorkload  // WorkloadIdentityCredential
	credChainNarrowed  // AZURE_TOKEN_CREDENTIALS names the part of the chain
	credChainUntouched // the whole chain, no variable of its first two set
)

// azCreds is the source an Azure store uses, for AuthError.
type azCreds struct {
	kind   credKind
	narrow string // AZURE_TOKEN_CREDENTIALS
}

func describeCreds() azCreds {
	env := os.Getenv
	switch {
	case env("AZURE_STORAGE_ACCOUNT") != "" && env("AZURE_STORAGE_KEY") != "":
		return azCreds{kind: credSharedKey}
	case env("AZURE_STORAGE_SAS_TOKEN") != "":
		return azCreds{kind: credSAS}
	case env("AZURE_STORAGE_CONNECTION_STRING") != "" || env("AZURE_STORAGEBLOB_CONNECTIONSTRING") != "":
		return azCreds{kind: credConnString}
	}
	narrow := env("AZURE_TOKEN_CREDENTIALS")
	envCred := env("AZURE_TENANT_ID") != "" && env("AZURE_CLIENT_ID") != "" && (env("AZURE_CLIENT_SECRET") != "" || env("AZURE_CLIENT_CERTIFICATE_PATH") != "" || env("AZURE_USERNAME") != "")
	workload := env("AZURE_FEDERATED_TOKEN_FILE") != ""
	switch {
	case narrow != "" && !strings.EqualFold(narrow, "prod"):
		return azCreds{kind: credChainNarrowed, narrow: narrow}
	case envCred:
		return azCreds{kind: credChainEnv}
	case workload:
		return azCreds{kind: credChainWorkload}
	}
	return azCreds{kind: credChainUntouched, narrow: narrow}
}

// chainHint names what to set when the Azure chain found nothing.
const chainHint = "set AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or for workload identity AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_FEDERATED_TOKEN_FILE (docs/ci.md)"

// credentials is what an AuthError says of the source, for reason.
func (c azCreds) credentials(reason store.AuthReason) store.Credentials {
	var out store.Credentials
	switch c.kind {
	case credSharedKey:
		out.Source, out.Vars = "a shared key", []string{"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY"}
		if reason != store.AuthDenied {
			out.Set = "check that AZURE_STORAGE_KEY is a current key of the account AZURE_STORAGE_ACCOUNT"
		}
	case credSAS:
		out.Source, out.Vars = "a SAS token", []string{"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_SAS_TOKEN"}
		if reason != store.AuthDenied {
			out.Set = "check that AZURE_STORAGE_SAS_TOKEN is current (its se= expiry) and signed for this account"
		} else {
			out.Set = "the SAS does not grant this: sign one with read, write, delete and list permissions (sp=rwdl) on the container"
		}
	case credConnString:
		out.Source, out.Vars = "a connection string", []string{"AZURE_STORAGE_CONNECTION_STRING"}
		if reason != store.AuthDenied {
			out.Set = "check the connection string's AccountName and AccountKey (or SharedAccessSignature)"
		}
	case credChainEnv:
		out.Source, out.Vars = "azidentity's environment credential (a service principal)", []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"}
	case credChainWorkload:
		out.Source, out.Vars = "workload identity", []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_FEDERATED_TOKEN_FILE"}
		if reason == store.AuthMissing {
			out.Set = "Microsoft Entra gave no token: check that AZURE_FEDERATED_TOKEN_FILE holds a current token and that the app's federated credential accepts its issuer, subject and audience"
		}
	case credChainNarrowed:
		out.Source, out.Vars = "azidentity's chain narrowed to "+strconv.Quote(c.narrow), []string{"AZURE_TOKEN_CREDENTIALS"}
	default:
		out.Source = "azidentity's default chain: environment (AZURE_CLIENT_SECRET), workload identity (AZURE_FEDERATED_TOKEN_FILE), managed identity, Azure CLI, Azure Developer CLI, Azure PowerShell"
		if reason == store.AuthMissing {
			out.Set = chainHint
		}
	}
	if out.Set == "" {
		switch reason {
		case store.AuthDenied:
			out.Set = "the service refused this request with these credentials: check the key or SAS, and that the role, SAS or network rules allow it (docs/ci.md, Least privilege)"
		default:
			out.Set = chainHint
		}
	}
	return out
}

// nonRetriable is how azcore marks an error no retry can mend, among them
// a token its credential could not get (runtime.BearerTokenPolicy).
type nonRetriable interface{ NonRetriable() }

// Auth classifies an Azure error as a credential failure (cloud.Driver):
//   - azidentity's *AuthenticationFailedError (Microsoft Entra refused the
//     token request: a federated token not accepted, a wrong secret):
//     AuthMissing, with the response's status;
//   - with a token credential, a request that failed before any answer
//     because azcore could not get a token (every credential of the chain
//     unavailable): AuthMissing;
//   - the service's AuthenticationFailed, InvalidAuthenticationInfo,
//     NoAuthenticationInformation (a key, SAS or token not accepted):
//     AuthInvalid;
//   - AuthorizationFailure, AuthorizationPermissionMismatch and the other
//     Authorization* codes, InsufficientAccountPermissions, and any other
//     401 or 403: AuthDenied. Azure answers 404 for a missing blob to
//     anyone who may read it, so no 403 is taken for a missing key.
func (d driver) Auth(err error) (cloud.AuthFailure, bool) {
	var afe *azidentity.AuthenticationFailedError
	if errors.As(err, &afe) {
		af := cloud.AuthFailure{Reason: store.AuthMissing, Creds: d.creds.credentials(store.AuthMissing)}
		if afe.RawResponse != nil {
			af.Code = "token request: HTTP " + strconv.Itoa(afe.RawResponse.StatusCode)
		}
		return af, true
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		var nr nonRetriable
		if d.creds.kind >= credChainEnv && errors.As(err, &nr) {
			return cloud.AuthFailure{Reason: store.AuthMissing, Creds: d.creds.credentials(store.AuthMissing)}, true
		}
		return cloud.AuthFailure{}, false
	}
	var reason store.AuthReason
	switch code := re.ErrorCode; {
	case code == "AuthenticationFailed" || code == "InvalidAuthenticationInfo" || code == "NoAuthenticationInformation":
		reason = store.AuthInvalid
	case strings.HasPrefix(code, "Authorization") || code == "InsufficientAccountPermissions":
		reason = store.AuthDenied
	case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
		reason = store.AuthDenied
	default:
		return cloud.AuthFailure{}, false
	}
	code := re.ErrorCode
	if code == "" {
		code = strconv.Itoa(re.StatusCode)
	}
	return cloud.AuthFailure{Reason: reason, Code: code, Creds: d.creds.credentials(reason)}, true
}
