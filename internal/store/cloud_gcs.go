package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/option"
)

// openGCS opens gs://BUCKET[/PREFIX][?anonymous=true] (docs/stores.md).
// Credentials are Google's Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default login, the
// metadata server); anonymous=true reads a public bucket without any. With
// STORAGE_EMULATOR_HOST set (host:port of an emulator such as
// fake-gcs-server), the Go storage client talks to it without credentials.
//
// The client is made here rather than by gcsblob's URL opener, which prints
// a warning on stdout when no credentials are found.
func openGCS(ctx context.Context, u *url.URL, raw string) (Store, error) {
	name, prefix, err := bucketAndPrefix(u, raw, "gs://BUCKET/PREFIX")
	if err != nil {
		return nil, err
	}
	var opts []option.ClientOption
	for k, v := range u.Query() {
		switch k {
		case "anonymous":
			b, err := strconv.ParseBool(v[0])
			if err != nil {
				return nil, fmt.Errorf("store URL %q: anonymous=%q is not true or false", raw, v[0])
			}
			if b {
				opts = append(opts, option.WithoutAuthentication())
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
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, redactSecrets(fmt.Errorf("store URL %q: Google Cloud Storage client: %w; set GOOGLE_APPLICATION_CREDENTIALS, run 'gcloud auth application-default login', or add ?anonymous=true to read a public bucket", raw, err))
	}
	b, err := gcsblob.OpenBucket(ctx, nil, name, &gcsblob.Options{Client: client})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("store URL %q: %w", raw, err)
	}
	return &Cloud{bucket: b, be: gcsBackend{}, scheme: "gs", name: name, prefix: prefix, closeFn: client.Close}, nil
}

// gcsBackend uses object generations as Tokens and generation-match
// preconditions for compare-and-swap.
type gcsBackend struct{}

func (gcsBackend) readToken(r *blob.Reader) (Token, error) {
	var sr *storage.Reader
	if !r.As(&sr) || sr == nil {
		return "", errors.New("internal error: not a GCS reader")
	}
	if sr.Attrs.Generation == 0 {
		return "", errors.New("the server sent no object generation")
	}
	return Token(strconv.FormatInt(sr.Attrs.Generation, 10)), nil
}

func (gcsBackend) write(ctx context.Context, old Token) (context.Context, written, bool) {
	w := &gcsWrite{}
	if old != NoToken {
		g, err := strconv.ParseInt(string(old), 10, 64)
		if err != nil || g <= 0 {
			return ctx, nil, false // not a generation: cannot be current
		}
		w.gen = g
	}
	return ctx, w, true
}

func (gcsBackend) wrongToken(cur Token) Token {
	g, _ := strconv.ParseInt(string(cur), 10, 64)
	return Token(strconv.FormatInt(g+7919, 10))
}

func (gcsBackend) secret() string {
	// DuckDB reaches GCS through its S3-compatible XML API, with HMAC keys.
	return "CREATE SECRET (TYPE gcs, KEY_ID '<HMAC key id>', SECRET '<HMAC secret>');"
}

// gcsWrite is one conditional GCS upload: a generation-match precondition
// (create-only writes get DoesNotExist from gocloud), and the writer, whose
// attributes give the new generation after the upload.
type gcsWrite struct {
	gen int64
	sw  *storage.Writer
}

func (w *gcsWrite) beforeWrite(as func(any) bool) error {
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

func (w *gcsWrite) token() Token {
	if w.sw == nil || w.sw.Attrs() == nil {
		return NoToken
	}
	return Token(strconv.FormatInt(w.sw.Attrs().Generation, 10))
}
