package store

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
)

// openAzure opens azblob://CONTAINER[/PREFIX][?OPTIONS] (docs/stores.md)
// with gocloud's azureblob URL opener, which reads the environment as the
// Azure SDK documents it: AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (a
// shared key), AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CONNECTION_STRING (or
// AZURE_STORAGEBLOB_CONNECTIONSTRING), else azidentity's default credential
// chain; AZURE_STORAGE_DOMAIN, AZURE_STORAGE_PROTOCOL,
// AZURE_STORAGE_IS_LOCAL_EMULATOR shape the service URL. URL options:
// storage_account, domain, protocol, localemu, cdn.
func openAzure(ctx context.Context, u *url.URL, raw string) (Store, error) {
	name, prefix, err := bucketAndPrefix(u, raw, "azblob://CONTAINER/PREFIX")
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
		return nil, redactSecrets(fmt.Errorf("store URL %q: %w; set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or sign in for azidentity (docs/stores.md)", raw, err))
	}
	account := u.Query().Get("storage_account")
	if account == "" {
		account = os.Getenv("AZURE_STORAGE_ACCOUNT")
	}
	conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING") + os.Getenv("AZURE_STORAGEBLOB_CONNECTIONSTRING")
	usesConn := conn != "" && (os.Getenv("AZURE_STORAGE_KEY") == "" || account == "") && os.Getenv("AZURE_STORAGE_SAS_TOKEN") == ""
	return &Cloud{bucket: b, be: azureBackend{account: account, connString: usesConn}, scheme: "az", name: name, prefix: prefix}, nil
}

// azureBackend uses blob ETags as Tokens and If-Match for compare-and-swap.
type azureBackend struct {
	account    string // storage account, if known
	connString bool   // credentials come from a connection string
}

func (azureBackend) readToken(r *blob.Reader) (Token, error) {
	var resp azblobblob.DownloadStreamResponse
	if !r.As(&resp) {
		return "", errors.New("internal error: not an Azure reader")
	}
	if resp.ETag == nil || *resp.ETag == "" {
		return "", errors.New("the server sent no ETag with the blob")
	}
	return Token(*resp.ETag), nil
}

func (azureBackend) write(ctx context.Context, old Token) (context.Context, written, bool) {
	w := &azureWrite{old: old}
	// The SDK stores the response of each request made with this context;
	// the last one of an upload (Put Blob or Put Block List) carries the
	// new ETag.
	return policy.WithCaptureResponse(ctx, &w.resp), w, true
}

func (azureBackend) wrongToken(cur Token) Token {
	t := Token(`"0x8D0000000000000"`)
	if cur == t {
		t = `"0x8D0000000000001"`
	}
	return t
}

func (b azureBackend) secret() string {
	if b.connString || b.account == "" {
		return "CREATE SECRET (TYPE azure, CONNECTION_STRING '<your connection string>');"
	}
	return "CREATE SECRET (TYPE azure, PROVIDER credential_chain, ACCOUNT_NAME " + sqlQuote(b.account) + ");"
}

// azureWrite is one conditional Azure upload: If-Match on old (create-only
// writes get If-None-Match: * from gocloud), and the captured response.
type azureWrite struct {
	old  Token
	resp *http.Response
}

func (w *azureWrite) beforeWrite(as func(any) bool) error {
	var opts *azblob.UploadStreamOptions
	if !as(&opts) {
		return errors.New("internal error: azureblob did not expose its upload options")
	}
	if w.old != NoToken {
		etag := azcore.ETag(w.old)
		opts.AccessConditions = &azblob.AccessConditions{
			ModifiedAccessConditions: &azblobblob.ModifiedAccessConditions{IfMatch: &etag},
		}
	}
	return nil
}

func (w *azureWrite) token() Token {
	if w.resp == nil {
		return NoToken
	}
	return Token(strings.TrimSpace(w.resp.Header.Get("ETag")))
}
