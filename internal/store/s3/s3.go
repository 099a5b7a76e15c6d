// Package s3 is the store on Amazon S3 and S3-compatible servers (s3://
// URLs): package cloud's store with a driver that reads ETags and writes
// with If-Match, and the URL options of gocloud's S3 opener (Backend).
package s3

import (
	"context"
	"errors"
	"fmt"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloud"
)

// openURL opens s3://BUCKET[/PREFIX][?OPTIONS] (docs/stores.md). The options
// are gocloud's for S3 URLs (gocloud.dev/aws V2ConfigFromURLParams and
// s3blob.URLOpener): region, endpoint, profile, use_path_style (or its
// older name s3ForcePathStyle), disable_https, anonymous, hostname_immutable,
// dualstack, fips, accelerate, ssetype, kmskeyid,
// request_checksum_calculation, response_checksum_validation, role,
// rate_limiter_capacity. Everything else comes from the environment and
// files the AWS SDK reads (AWS_REGION, AWS_PROFILE, AWS_ACCESS_KEY_ID,
// AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL_STS, ~/.aws/config, …). Credential failures are
// *store.AuthError naming the source the SDK picked (auth.go).
//
// With a custom endpoint (URL or AWS_ENDPOINT_URL[_S3]) request checksums
// default to "when_required", as third-party S3 servers expect, unless the
// URL sets request_checksum_calculation.
func openURL(ctx context.Context, u *url.URL, raw string) (store.Store, error) {
	name, prefix, err := cloud.BucketAndPrefix(u, raw, "s3://BUCKET/PREFIX")
	if err != nil {
		return nil, err
	}
	q := u.Query()
	o, err := takeClientOptions(q, raw)
	if err != nil {
		return nil, err
	}
	explicitChecksum := q.Has("request_checksum_calculation")
	endpoint := q.Get("endpoint")
	if endpoint != "" && !strings.Contains(endpoint, "://") {
		return nil, fmt.Errorf("store URL %q: endpoint=%q needs its scheme: endpoint=http://%s (or https://)", raw, endpoint, endpoint)
	}
	anonymous, _ := strconv.ParseBool(q.Get("anonymous"))
	role, profile := q.Get("role"), q.Get("profile")
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, cloud.RedactSecrets(fmt.Errorf("store URL %q: %w", raw, err))
	}
	if endpoint == "" {
		// The SDK's own order: the service's variable, then the general
		// one (which the config loaded as BaseEndpoint).
		if v := os.Getenv("AWS_ENDPOINT_URL_S3"); v != "" {
			endpoint = v
		} else if cfg.BaseEndpoint != nil {
			endpoint = *cfg.BaseEndpoint
		}
	}
	if endpoint != "" && !explicitChecksum {
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("store URL %q: no AWS region: add ?region=REGION to the URL, or set AWS_REGION (any region, e.g. us-east-1, for a server that ignores it)", raw)
	}
	cfg.Logger = logging.Nop{} // the SDK's warnings are not fdl's output
	creds := describeCreds(cfg, anonymous, role, profile)
	if creds.kind == credIMDS {
		// The instance-role provider was made while the config loaded,
		// with the SDK's default logger, which prints "WARN falling back
		// to IMDSv1" on stderr where no metadata server answers: the same
		// SDK provider again, with the silent logger.
		cfg.Credentials = aws.NewCredentialsCache(ec2rolecreds.New(func(o *ec2rolecreds.Options) {
			o.Client = imds.NewFromConfig(cfg)
		}))
	}
	if cfg.Credentials != nil && !anonymous {
		cfg.Credentials = markedProvider{cfg.Credentials}
	}
	if !o.styleSet && ipHost(endpoint) {
		// An endpoint that is an IP address has no host name to put the
		// bucket in: the bucket goes in the path, for the SDK (which
		// otherwise asks DNS for bucket.127.0.0.1) and in DuckDB's secret
		// (whose default is the host name).
		o.pathStyle = true
		o.s3 = append(o.s3, func(so *awss3.Options) { so.UsePathStyle = true })
	}
	cfg.APIOptions = append(cfg.APIOptions, addETagCapture)
	client := awss3.NewFromConfig(cfg, o.s3...)
	o.bucket.RequestChecksumCalculation = cfg.RequestChecksumCalculation
	b, err := s3blob.OpenBucket(ctx, client, name, &o.bucket)
	if err != nil {
		return nil, fmt.Errorf("store URL %q: %w", raw, err)
	}
	d := &driver{secretSQL: secret(cfg.Region, endpoint, o.pathStyle, o.noHTTPS), creds: creds}
	return cloud.New(cloud.Config{Bucket: b, Driver: d, Scheme: "s3", Name: name, Prefix: prefix}), nil
}

// clientOptions are the options of an S3 URL that gocloud's
// V2ConfigFromURLParams does not read: for the S3 client and the bucket.
type clientOptions struct {
	s3        []func(*awss3.Options)
	bucket    s3blob.Options
	pathStyle bool // use_path_style (s3ForcePathStyle)
	styleSet  bool // the URL gave use_path_style (s3ForcePathStyle)
	noHTTPS   bool // disable_https
}

// takeClientOptions reads use_path_style (or s3ForcePathStyle),
// disable_https, accelerate, ssetype and kmskeyid from q and deletes them
// from it, so what is left is gocloud's; a value that does not parse is an
// error naming the URL raw.
func takeClientOptions(q url.Values, raw string) (clientOptions, error) {
	var o clientOptions
	for _, key := range []string{"use_path_style", "s3ForcePathStyle"} {
		if v := q.Get(key); v != "" {
			q.Del(key)
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, fmt.Errorf("store URL %q: %s=%q is not true or false", raw, key, v)
			}
			o.pathStyle, o.styleSet = b, true
			o.s3 = append(o.s3, func(so *awss3.Options) { so.UsePathStyle = b })
		}
	}
	if v := q.Get("disable_https"); v != "" {
		q.Del("disable_https")
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("store URL %q: disable_https=%q is not true or false", raw, v)
		}
		o.noHTTPS = b
		o.s3 = append(o.s3, func(so *awss3.Options) { so.EndpointOptions.DisableHTTPS = b })
	}
	if v := q.Get("accelerate"); v != "" {
		q.Del("accelerate")
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("store URL %q: accelerate=%q is not true or false", raw, v)
		}
		o.s3 = append(o.s3, func(so *awss3.Options) { so.UseAccelerate = b })
	}
	if v := q.Get("ssetype"); v != "" {
		q.Del("ssetype")
		for _, t := range s3types.ServerSideEncryptionAes256.Values() {
			if strings.EqualFold(string(t), v) {
				o.bucket.EncryptionType = t
			}
		}
		if o.bucket.EncryptionType == "" {
			return o, fmt.Errorf("store URL %q: ssetype=%q is not one of AES256, aws:kms, aws:kms:dsse", raw, v)
		}
	}
	if v := q.Get("kmskeyid"); v != "" {
		q.Del("kmskeyid")
		o.bucket.KMSEncryptionID = v
	}
	return o, nil
}

// ipHost reports whether endpoint (a URL, or a host with an optional
// port) names its host by an IPv4 or IPv6 address.
func ipHost(endpoint string) bool {
	if endpoint == "" {
		return false
	}
	host := endpoint
	if e, err := url.Parse(endpoint); err == nil && e.Host != "" {
		host = e.Hostname()
	} else if h, _, err := net.SplitHostPort(endpoint); err == nil {
		host = h
	}
	return net.ParseIP(strings.Trim(host, "[]")) != nil
}

// secret is the DuckDB secret for an S3 store: credentials from DuckDB's
// credential chain (the same environment and files the AWS SDK reads), with
// the region, endpoint and URL style the store uses.
func secret(region, endpoint string, pathStyle, noHTTPS bool) string {
	parts := []string{"TYPE s3", "PROVIDER credential_chain", "REGION " + sqlquote.String(region)}
	if endpoint != "" {
		host := endpoint
		if e, err := url.Parse(endpoint); err == nil && e.Host != "" {
			host = e.Host + strings.TrimSuffix(e.Path, "/")
			if e.Scheme == "http" {
				noHTTPS = true
			}
		}
		parts = append(parts, "ENDPOINT "+sqlquote.String(host))
	}
	if pathStyle {
		parts = append(parts, "URL_STYLE 'path'")
	}
	if noHTTPS {
		parts = append(parts, "USE_SSL false")
	}
	return "CREATE SECRET (" + strings.Join(parts, ", ") + ");"
}

// driver reads ETags from GetObject responses and writes with If-Match.
type driver struct {
	secretSQL string
	creds     awsCreds // the credential source the SDK picked (auth.go)
}

func (driver) ReadToken(r *blob.Reader) (store.Token, error) {
	var out awss3.GetObjectOutput
	if !r.As(&out) {
		return "", errors.New("internal error: not an S3 reader")
	}
	if aws.ToString(out.ETag) == "" {
		return "", errors.New("the server sent no ETag with the object")
	}
	return store.Token(aws.ToString(out.ETag)), nil
}

func (driver) Prepare(ctx context.Context, old store.Token) (context.Context, cloud.Prepared, bool) {
	w := &write{old: old}
	return context.WithValue(ctx, etagKey{}, w), w, true
}

func (driver) WrongToken(cur store.Token) store.Token {
	t := store.Token(`"00000000000000000000000000000000"`)
	if cur == t {
		t = `"11111111111111111111111111111111"`
	}
	return t
}

func (d driver) Secret() string { return d.secretSQL }

// Refused: S3's PreconditionFailed and ConditionalRequestConflict.
func (driver) Refused(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && cloud.IsRefusalCode(ae.ErrorCode())
}

// write is one conditional S3 upload: If-Match on old (create-only writes
// get If-None-Match from gocloud), and the ETag of the response, captured by
// addETagCapture.
type write struct {
	old  store.Token
	mu   sync.Mutex
	etag string
}

func (w *write) BeforeWrite(as func(any) bool) error {
	var in *transfermanager.UploadObjectInput
	if !as(&in) {
		return errors.New("internal error: s3blob did not expose its upload request")
	}
	if w.old != store.NoToken {
		in.IfMatch = aws.String(string(w.old))
	}
	return nil
}

func (w *write) Token() store.Token {
	w.mu.Lock()
	defer w.mu.Unlock()
	return store.Token(w.etag)
}

type etagKey struct{}

// addETagCapture adds a middleware to every S3 operation that, when the
// context carries a *write, records the ETag PutObject or
// CompleteMultipartUpload returned: the new object's Token.
func addETagCapture(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("fdlCaptureETag",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if w, ok := ctx.Value(etagKey{}).(*write); ok && err == nil {
				var etag *string
				switch o := out.Result.(type) {
				case *awss3.PutObjectOutput:
					etag = o.ETag
				case *awss3.CompleteMultipartUploadOutput:
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

// Backend is the s3:// kind of store for store.Register:
// s3://BUCKET[/PREFIX][?OPTIONS] opens a store on Amazon S3 or an
// S3-compatible server (see openURL for the options).
func Backend() store.Backend {
	return store.Backend{Schemes: []string{"s3"}, Forms: []string{"s3://"}, Open: openURL}
}
