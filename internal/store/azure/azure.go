// Package azure is the store on Azure Blob Storage (azblob:// URLs):
// package cloud's store with a driver that reads ETags and writes with
// If-Match, opened with gocloud's azureblob URL opener (Backend).
package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloud"
)

// openURL opens azblob://CONTAINER[/PREFIX][?OPTIONS] (docs/stores.md)
// with gocloud's azureblob URL opener, which reads the environment as the
// Azure SDK documents it: AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (a
// shared key), AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CONNECTION_STRING (or
// AZURE_STORAGEBLOB_CONNECTIONSTRING), else azidentity's default credential
// chain (which takes workload identity: AZURE_TENANT_ID, AZURE_CLIENT_ID,
// AZURE_FEDERATED_TOKEN_FILE; auth.go); AZURE_STORAGE_DOMAIN, AZURE_STORAGE_PROTOCOL,
// AZURE_STORAGE_IS_LOCAL_EMULATOR shape the service URL. URL options:
// storage_account, domain, protocol, localemu, cdn.
func openURL(ctx context.Context, u *url.URL, raw string) (store.Store, error) {
	name, prefix, err := cloud.BucketAndPrefix(u, raw, "azblob://CONTAINER/PREFIX")
	if err != nil {
		return nil, err
	}
	opener := &azureblob.URLOpener{
		MakeClient:        azureblob.NewDefaultClient,
		ServiceURLOptions: *azureblob.NewDefaultServiceURLOptions(),
	}
	bu := &url.URL{Scheme: "azblob", Host: name, RawQuery: u.RawQuery}
	b, err := opener.OpenBucketURL(ctx, bu)
	if err != nil {
		return nil, cloud.RedactSecrets(fmt.Errorf("store URL %q: %w; set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or sign in for azidentity (docs/stores.md)", raw, err))
	}
	account := u.Query().Get("storage_account")
	if account == "" {
		account = os.Getenv("AZURE_STORAGE_ACCOUNT")
	}
	conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING") + os.Getenv("AZURE_STORAGEBLOB_CONNECTIONSTRING")
	usesConn := conn != "" && (os.Getenv("AZURE_STORAGE_KEY") == "" || account == "") && os.Getenv("AZURE_STORAGE_SAS_TOKEN") == ""
	return cloud.New(cloud.Config{Bucket: b, Driver: driver{account: account, connString: usesConn, creds: describeCreds()}, Scheme: "az", Name: name, Prefix: prefix}), nil
}

// driver uses blob ETags as Tokens and If-Match for compare-and-swap.
type driver struct {
	account    string  // storage account, if known
	connString bool    // credentials come from a connection string
	creds      azCreds // the credential source gocloud picked (auth.go)
}

func (driver) ReadToken(r *blob.Reader) (store.Token, error) {
	var resp azblobblob.DownloadStreamResponse
	if !r.As(&resp) {
		return "", errors.New("internal error: not an Azure reader")
	}
	if resp.ETag == nil || *resp.ETag == "" {
		return "", errors.New("the server sent no ETag with the blob")
	}
	return store.Token(*resp.ETag), nil
}

func (driver) Prepare(ctx context.Context, old store.Token) (context.Context, cloud.Prepared, bool) {
	w := &write{old: old}
	// The SDK stores the response of each request made with this context;
	// the last one of an upload (Put Blob or Put Block List) carries the
	// new ETag.
	return policy.WithCaptureResponse(ctx, &w.resp), w, true
}

func (driver) WrongToken(cur store.Token) store.Token {
	t := store.Token(`"0x8D0000000000000"`)
	if cur == t {
		t = `"0x8D0000000000001"`
	}
	return t
}

func (b driver) Secret() string {
	if b.connString || b.account == "" {
		return "CREATE SECRET (TYPE azure, CONNECTION_STRING '<your connection string>');"
	}
	return "CREATE SECRET (TYPE azure, PROVIDER credential_chain, ACCOUNT_NAME " + sqlquote.String(b.account) + ");"
}

// write is one conditional Azure upload: If-Match on old (create-only
// writes get If-None-Match: * from gocloud), and the captured response.
type write struct {
	old  store.Token
	resp *http.Response
}

func (w *write) BeforeWrite(as func(any) bool) error {
	var opts *azblob.UploadStreamOptions
	if !as(&opts) {
		return errors.New("internal error: azureblob did not expose its upload options")
	}
	if w.old != store.NoToken {
		etag := azcore.ETag(w.old)
		opts.AccessConditions = &azblob.AccessConditions{
			ModifiedAccessConditions: &azblobblob.ModifiedAccessConditions{IfMatch: &etag},
		}
	}
	return nil
}

func (w *write) Token() store.Token {
	if w.resp == nil {
		return store.NoToken
	}
	return store.Token(strings.TrimSpace(w.resp.Header.Get("ETag")))
}

// Refused: Azure's ConditionNotMet and BlobAlreadyExists.
func (driver) Refused(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && cloud.IsRefusalCode(re.ErrorCode)
}

// Backend is the azblob:// kind of store for store.Register:
// azblob://CONTAINER[/PREFIX][?OPTIONS] opens a store on Azure Blob Storage
// (see openURL for credentials and options).
func Backend() store.Backend {
	return store.Backend{Schemes: []string{"azblob"}, Forms: []string{"azblob://"}, Open: openURL}
}
