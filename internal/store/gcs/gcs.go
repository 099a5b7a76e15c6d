// Package gcs is the store on Google Cloud Storage (gs:// URLs): package
// cloud's store with a driver that uses object generations as Tokens and
// generation-match preconditions (Backend).
package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/option"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloud"
)

// openURL opens gs://BUCKET[/PREFIX][?anonymous=true] (docs/stores.md).
// Credentials are Google's Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS — a service account key, or a workload
// identity federation file of type external_account —, gcloud's
// application-default login, the metadata server); anonymous=true reads a
// public bucket without any. Credential failures are *store.AuthError
// naming the source (auth.go). With
// STORAGE_EMULATOR_HOST set (host:port of an emulator such as
// fake-gcs-server), the Go storage client talks to it without credentials.
//
// The client is made here rather than by gcsblob's URL opener, which prints
// a warning on stdout when no credentials are found.
func openURL(ctx context.Context, u *url.URL, raw string) (store.Store, error) {
	name, prefix, err := cloud.BucketAndPrefix(u, raw, "gs://BUCKET/PREFIX")
	if err != nil {
		return nil, err
	}
	var opts []option.ClientOption
	anonymous := false
	for k, v := range u.Query() {
		switch k {
		case "anonymous":
			b, err := strconv.ParseBool(v[0])
			if err != nil {
				return nil, fmt.Errorf("store URL %q: anonymous=%q is not true or false", raw, v[0])
			}
			if b {
				opts = append(opts, option.WithoutAuthentication())
				anonymous = true
			}
		default:
			return nil, fmt.Errorf("store URL %q: unknown option %q for gs:// (the only one is anonymous=true; the emulator is set with STORAGE_EMULATOR_HOST)", raw, k)
		}
	}
	if os.Getenv("STORAGE_EMULATOR_HOST") != "" {
		// Emulators serve the JSON API on STORAGE_EMULATOR_HOST; the XML
		// API the client reads with by default answers only on their
		// configured public host.
		opts = append(opts, storage.WithJSONReads())
	}
	creds := describeCreds(anonymous)
	authFail := func(err error) error {
		return &store.AuthError{
			Store: "gs", Location: "gs://" + strings.TrimSuffix(name+"/"+prefix, "/"), Op: "open", Reason: store.AuthMissing,
			Creds: creds.credentials(store.AuthMissing), Err: cloud.RedactSecrets(err),
		}
	}
	if !anonymous && !creds.emulator {
		// Google's default chain, as the client would detect it, with its
		// token failures marked (tokenError) so that they are told from
		// the network's.
		c, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{storage.ScopeFullControl, "https://www.googleapis.com/auth/cloud-platform"}})
		if err != nil {
			return nil, authFail(err)
		}
		c.TokenProvider = markedTokens{c.TokenProvider}
		opts = append(opts, option.WithAuthCredentials(c))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, authFail(err)
	}
	b, err := gcsblob.OpenBucket(ctx, nil, name, &gcsblob.Options{Client: client})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("store URL %q: %w", raw, err)
	}
	return cloud.New(cloud.Config{Bucket: b, Driver: driver{creds: creds}, Scheme: "gs", Name: name, Prefix: prefix, Close: client.Close}), nil
}

// driver uses object generations as Tokens and generation-match
// preconditions for compare-and-swap.
type driver struct {
	creds gcpCreds // the credential source Google's chain takes (auth.go)
}

func (driver) ReadToken(r *blob.Reader) (store.Token, error) {
	var sr *storage.Reader
	if !r.As(&sr) || sr == nil {
		return "", errors.New("internal error: not a GCS reader")
	}
	if sr.Attrs.Generation == 0 {
		return "", errors.New("the server sent no object generation")
	}
	return store.Token(strconv.FormatInt(sr.Attrs.Generation, 10)), nil
}

func (driver) Prepare(ctx context.Context, old store.Token) (context.Context, cloud.Prepared, bool) {
	w := &write{}
	if old != store.NoToken {
		g, err := strconv.ParseInt(string(old), 10, 64)
		if err != nil || g <= 0 {
			return ctx, nil, false // not a generation: cannot be current
		}
		w.gen = g
	}
	return ctx, w, true
}

func (driver) WrongToken(cur store.Token) store.Token {
	g, _ := strconv.ParseInt(string(cur), 10, 64)
	return store.Token(strconv.FormatInt(g+7919, 10))
}

func (driver) Secret() string {
	// DuckDB reaches GCS through its S3-compatible XML API, with HMAC keys.
	return "CREATE SECRET (TYPE gcs, KEY_ID '<HMAC key id>', SECRET '<HMAC secret>');"
}

// write is one conditional GCS upload: a generation-match precondition
// (create-only writes get DoesNotExist from gocloud), and the writer, whose
// attributes give the new generation after the upload.
type write struct {
	gen int64
	sw  *storage.Writer
}

func (w *write) BeforeWrite(as func(any) bool) error {
	if w.gen != 0 {
		var obj **storage.ObjectHandle
		if !as(&obj) {
			return errors.New("internal error: gcsblob did not expose its object handle")
		}
		*obj = (*obj).If(storage.Conditions{GenerationMatch: w.gen})
	}
	if !as(&w.sw) {
		return errors.New("internal error: gcsblob did not expose its writer")
	}
	return nil
}

func (w *write) Token() store.Token {
	if w.sw == nil || w.sw.Attrs() == nil {
		return store.NoToken
	}
	return store.Token(strconv.FormatInt(w.sw.Attrs().Generation, 10))
}

// Refused is always false: GCS reports a failed precondition as HTTP 412,
// which gocloud already maps to FailedPrecondition.
func (driver) Refused(error) bool { return false }

// Backend is the gs:// kind of store for store.Register:
// gs://BUCKET[/PREFIX][?anonymous=true] opens a store on Google Cloud
// Storage (see openURL for credentials and the emulator).
func Backend() store.Backend {
	return store.Backend{Schemes: []string{"gs"}, Forms: []string{"gs://"}, Open: openURL}
}
