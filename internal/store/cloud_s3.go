package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
)

// openS3 opens s3://BUCKET[/PREFIX][?OPTIONS] (docs/stores.md). The options
// are gocloud's for S3 URLs (gocloud.dev/aws V2ConfigFromURLParams and
// s3blob.URLOpener): region, endpoint, profile, use_path_style (or its
// older name s3ForcePathStyle), disable_https, anonymous, hostname_immutable,
// dualstack, fips, accelerate, ssetype, kmskeyid,
// request_checksum_calculation, response_checksum_validation, role,
// rate_limiter_capacity. Everything else comes from the environment and
// files the AWS SDK reads (AWS_REGION, AWS_PROFILE, AWS_ACCESS_KEY_ID,
// AWS_ENDPOINT_URL_S3, ~/.aws/config, …).
//
// With a custom endpoint (URL or AWS_ENDPOINT_URL[_S3]) request checksums
// default to "when_required", as third-party S3 servers expect, unless the
// URL sets request_checksum_calculation.
func openS3(ctx context.Context, u *url.URL, raw string) (Store, error) {
	name, prefix, err := bucketAndPrefix(u, raw, "s3://BUCKET/PREFIX")
	if err != nil {
		return nil, err
	}
	q := u.Query()
	var s3opts []func(*s3.Options)
	var bopts s3blob.Options
	pathStyle := false
	for _, key := range []string{"use_path_style", "s3ForcePathStyle"} {
		if v := q.Get(key); v != "" {
			q.Del(key)
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("store URL %q: %s=%q is not true or false", raw, key, v)
			}
			pathStyle = b
			s3opts = append(s3opts, func(o *s3.Options) { o.UsePathStyle = b })
		}
	}
	noHTTPS := false
	if v := q.Get("disable_https"); v != "" {
		q.Del("disable_https")
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("store URL %q: disable_https=%q is not true or false", raw, v)
		}
		noHTTPS = b
		s3opts = append(s3opts, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = b })
	}
	if v := q.Get("accelerate"); v != "" {
		q.Del("accelerate")
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("store URL %q: accelerate=%q is not true or false", raw, v)
		}
		s3opts = append(s3opts, func(o *s3.Options) { o.UseAccelerate = b })
	}
	if v := q.Get("ssetype"); v != "" {
		q.Del("ssetype")
		for _, t := range s3types.ServerSideEncryptionAes256.Values() {
			if strings.EqualFold(string(t), v) {
				bopts.EncryptionType = t
			}
		}
		if bopts.EncryptionType == "" {
			return nil, fmt.Errorf("store URL %q: ssetype=%q is not one of AES256, aws:kms, aws:kms:dsse", raw, v)
		}
	}
	if v := q.Get("kmskeyid"); v != "" {
		q.Del("kmskeyid")
		bopts.KMSEncryptionID = v
	}
	explicitChecksum := q.Has("request_checksum_calculation")
	endpoint := q.Get("endpoint")
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, redactSecrets(fmt.Errorf("store URL %q: %w", raw, err))
	}
	if endpoint == "" && cfg.BaseEndpoint != nil {
		endpoint = *cfg.BaseEndpoint
	}
	if endpoint != "" && !explicitChecksum {
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("store URL %q: no AWS region: add ?region=REGION to the URL, or set AWS_REGION (any region, e.g. us-east-1, for a server that ignores it)", raw)
	}
	cfg.Logger = logging.Nop{} // the SDK's warnings are not fdl's output
	cfg.APIOptions = append(cfg.APIOptions, addETagCapture)
	client := s3.NewFromConfig(cfg, s3opts...)
	bopts.RequestChecksumCalculation = cfg.RequestChecksumCalculation
	b, err := s3blob.OpenBucket(ctx, client, name, &bopts)
	if err != nil {
		return nil, fmt.Errorf("store URL %q: %w", raw, err)
	}
	be := &s3Backend{secretSQL: s3Secret(cfg.Region, endpoint, pathStyle, noHTTPS)}
	return &Cloud{bucket: b, be: be, scheme: "s3", name: name, prefix: prefix}, nil
}

// s3Secret is the DuckDB secret for an S3 store: credentials from DuckDB's
// credential chain (the same environment and files the AWS SDK reads), with
// the region, endpoint and URL style the store uses.
func s3Secret(region, endpoint string, pathStyle, noHTTPS bool) string {
	parts := []string{"TYPE s3", "PROVIDER credential_chain", "REGION " + sqlQuote(region)}
	if endpoint != "" {
		host := endpoint
		if e, err := url.Parse(endpoint); err == nil && e.Host != "" {
			host = e.Host + strings.TrimSuffix(e.Path, "/")
			if e.Scheme == "http" {
				noHTTPS = true
			}
		}
		parts = append(parts, "ENDPOINT "+sqlQuote(host))
	}
	if pathStyle {
		parts = append(parts, "URL_STYLE 'path'")
	}
	if noHTTPS {
		parts = append(parts, "USE_SSL false")
	}
	return "CREATE SECRET (" + strings.Join(parts, ", ") + ");"
}

// sqlQuote quotes s as a DuckDB string literal.
func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// bucketAndPrefix splits SCHEME://BUCKET/PREFIX into the bucket name and the
// key prefix ("" or ending in "/"). The prefix must be a valid key.
func bucketAndPrefix(u *url.URL, raw, form string) (name, prefix string, err error) {
	if u.Host == "" || u.User != nil || u.Fragment != "" {
		return "", "", fmt.Errorf("store URL %q: use %s (no user or fragment)", raw, form)
	}
	p := strings.Trim(u.Path, "/")
	if p == "" {
		return u.Host, "", nil
	}
	if err := CheckKey(p); err != nil {
		return "", "", fmt.Errorf("store URL %q: the path is not a valid prefix: %w", raw, err)
	}
	return u.Host, p + "/", nil
}

// s3Backend reads ETags from GetObject responses and writes with If-Match.
type s3Backend struct{ secretSQL string }

func (s3Backend) readToken(r *blob.Reader) (Token, error) {
	var out s3.GetObjectOutput
	if !r.As(&out) {
		return "", errors.New("internal error: not an S3 reader")
	}
	if aws.ToString(out.ETag) == "" {
		return "", errors.New("the server sent no ETag with the object")
	}
	return Token(aws.ToString(out.ETag)), nil
}

func (s3Backend) write(ctx context.Context, old Token) (context.Context, written, bool) {
	w := &s3Write{old: old}
	return context.WithValue(ctx, etagKey{}, w), w, true
}

func (s3Backend) wrongToken(cur Token) Token {
	t := Token(`"00000000000000000000000000000000"`)
	if cur == t {
		t = `"11111111111111111111111111111111"`
	}
	return t
}

func (b s3Backend) secret() string { return b.secretSQL }

// s3Write is one conditional S3 upload: If-Match on old (create-only writes
// get If-None-Match from gocloud), and the ETag of the response, captured by
// addETagCapture.
type s3Write struct {
	old  Token
	mu   sync.Mutex
	etag string
}

func (w *s3Write) beforeWrite(as func(any) bool) error {
	var in *transfermanager.UploadObjectInput
	if !as(&in) {
		return errors.New("internal error: s3blob did not expose its upload request")
	}
	if w.old != NoToken {
		in.IfMatch = aws.String(string(w.old))
	}
	return nil
}

func (w *s3Write) token() Token {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Token(w.etag)
}

type etagKey struct{}

// addETagCapture adds a middleware to every S3 operation that, when the
// context carries an *s3Write, records the ETag PutObject or
// CompleteMultipartUpload returned: the new object's Token.
func addETagCapture(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("fdlCaptureETag",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if w, ok := ctx.Value(etagKey{}).(*s3Write); ok && err == nil {
				var etag *string
				switch o := out.Result.(type) {
				case *s3.PutObjectOutput:
					etag = o.ETag
				case *s3.CompleteMultipartUploadOutput:
					etag = o.ETag
				}
				if etag != nil {
					w.mu.Lock()
					w.etag = *etag
					w.mu.Unlock()
				}
			}
			return out, md, err
		}), middleware.Before)
}
