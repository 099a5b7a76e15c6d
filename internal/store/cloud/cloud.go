// Package cloud is the store.Store over an object-store bucket reached
// through gocloud.dev/blob, the part Amazon S3, Google Cloud Storage and
// Azure Blob Storage share: conditional uploads, the Token of the same
// read, sorted listings, the probe of conditional writes, and credentials
// kept out of errors. What differs between the services (how a version is
// read and made a write's condition, the DuckDB secret, the service's
// refusal codes) is a Driver, one per package s3, gcs and azure; each of
// those opens its URLs and offers them to store.Register (Backend). This
// package imports no service's SDK, only gocloud.dev's portable blob API.
package cloud

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/store"
)

// ErrNoConditionalWrites: the store accepted a write it should have refused
// (it ignores If-None-Match, If-Match or their GCS and Azure equivalents), or
// refused every conditional write. fdl never writes to such a store: its
// compare-and-swap would silently become last-writer-wins.
var ErrNoConditionalWrites = errors.New("the store does not honour conditional writes")

// contentType is the Content-Type of every object Cloud writes. It is given
// explicitly: blob.Bucket.Upload requires one, and sniffing would put a
// guess into the store.
const contentType = "application/octet-stream"

// unknownToken is returned by a write whose response named no version (an
// S3-compatible server that sends no ETag): a Swap from it is refused.
const unknownToken store.Token = "unknown-version"

// Cloud is a store.Store over an object store bucket reached through
// gocloud.dev/blob: Amazon S3 and S3-compatible servers (s3://), Google
// Cloud Storage (gs://) and Azure Blob Storage (azblob://). store.Open makes
// one from a URL through the backend packages s3, gcs and azure (New);
// docs/stores.md lists the URL options and the environment each SDK reads.
//
// A key "refs/heads/main" is the object "<prefix>/refs/heads/main" of the
// bucket, where prefix is the URL's path. How it keeps the Store guarantees:
//   - Create is one upload with the store's create-only condition (S3 and
//     Azure "If-None-Match: *", GCS generation 0). Objects appear whole when
//     the upload (single request, multipart or block list) completes; a
//     failed or cancelled upload leaves nothing visible. Large objects stream
//     in parts of 8 MiB (S3, Azure) or 16 MiB chunks (GCS), a bounded number
//     at a time, so memory does not grow with the object.
//   - Swap is one upload conditional on the Token: S3 If-Match on the ETag,
//     GCS a generation-match precondition, Azure If-Match on the ETag.
//     gocloud has no If-Match option, so the condition is set on the SDK's
//     own request through WriterOptions.BeforeWrite; every conditional write
//     goes through blob.Bucket.Upload (azureblob's Writer.Write path panics
//     after a failed upload).
//   - Get reads the bytes and takes the Token from the headers of the same
//     response (S3 and Azure ETag, GCS generation): no second request that
//     could see another version.
//   - A refused condition is store.ErrConflict (Swap) or store.ErrExist (Create): HTTP
//     412, Azure 409 BlobAlreadyExists, S3's 404 for If-Match on a missing
//     key, and AWS's 409 ConditionalRequestConflict (a concurrent conditional
//     write to the same key) all count as refusals.
//   - Before its first write, a Cloud tests that the store enforces those
//     conditions (see probe) and refuses to write to one that does not, with
//     ErrNoConditionalWrites.
//   - List collects the keys under the prefix and sorts them in byte order
//     (services list in their own order, and gocloud escapes some characters
//     on Azure), so it holds one ObjectInfo per listed object in memory.
//     Keys that are not valid keys (a "folder/" placeholder made by a web
//     console, a probe) are not listed.
//   - Delete is unconditional (not every service honours a conditional
//     delete); refs are deleted by swapping in a tombstone (package refs).
//
// Error messages name the object by its Location and never contain
// credentials (see RedactSecrets). Missing, invalid, expired or refused
// credentials are a *store.AuthError (store.ErrAuth) with the source the
// SDK used or tried (Driver.Auth); on reads and stats, a 403 that S3 gives
// for a missing key when the credentials may not list the bucket is
// store.ErrNotExist when the repository's store.WitnessKey reads with the
// same credentials (hiddenMissing).
type Cloud struct {
	bucket *blob.Bucket
	be     Driver
	scheme string // of Location: "s3", "gs" or "az"
	name   string // bucket or container
	prefix string // "" or "a/b/" (with the trailing slash)
	// closeFn, if set, releases a client the bucket does not own.
	closeFn func() error

	probeMu  sync.Mutex
	probed   bool
	probeErr error // a permanent refusal (wraps ErrNoConditionalWrites)

	// witnessRead is set once store.WitnessKey was read with these
	// credentials: a later 403 the driver calls Hidden then means "no such
	// key" (see hiddenMissing).
	witnessRead atomic.Bool
}

var (
	_ store.Store          = (*Cloud)(nil)
	_ store.SecretProvider = (*Cloud)(nil)
	_ store.RootChecker    = (*Cloud)(nil)
	_ store.ForeignFinder  = (*Cloud)(nil)
)

// Driver is what differs between S3, GCS and Azure: how a version Token is
// read and checked, how a new object's Token is learnt, and how the
// service says a condition did not hold.
type Driver interface {
	// ReadToken returns the Token of the object version r reads, from the
	// response that carries r's bytes.
	ReadToken(r *blob.Reader) (store.Token, error)
	// Prepare prepares a conditional write: the context to upload with and
	// the BeforeWrite hook that adds "only if the current version is old" to
	// the SDK's request (for old NoToken, a create-only write, the hook adds
	// nothing: gocloud's IfNotExist sets the condition). ok is false if old
	// cannot be one of this store's Tokens (a conflict).
	Prepare(ctx context.Context, old store.Token) (wctx context.Context, w Prepared, ok bool)
	// WrongToken returns a well-formed Token that is not cur's (for the
	// probe).
	WrongToken(cur store.Token) store.Token
	// Secret returns the DuckDB CREATE SECRET statement a reader needs.
	Secret() string
	// Refused reports whether err, from a failed conditional write, carries
	// the service's own code for a condition that did not hold (beyond
	// gocloud's FailedPrecondition); see IsRefusalCode.
	Refused(err error) bool
	// Auth reports whether err, from a failed request, is a credential
	// failure (store.ErrAuth): none found, not accepted, expired, or
	// refused; and if so how, with the credential source the driver's SDK
	// used or tried.
	Auth(err error) (AuthFailure, bool)
}

// AuthFailure is how a driver classifies a credential failure (Driver.Auth).
type AuthFailure struct {
	Reason store.AuthReason
	Code   string            // the service's code or status, e.g. "SignatureDoesNotMatch"; may be empty
	Creds  store.Credentials // the source used or tried, and what to set
	// Hidden is set on a refusal that may be the service's answer for a
	// missing key: S3's 403 (AccessDenied, or a HEAD's bodiless Forbidden)
	// when the credentials may not list the bucket. Cloud tells the two
	// apart on reads and stats with store.WitnessKey (hiddenMissing).
	Hidden bool
}

// Prepared is one prepared write: its BeforeWrite hook and, after the
// upload succeeded, the new object's Token (NoToken if the response named
// none).
type Prepared interface {
	BeforeWrite(as func(any) bool) error
	Token() store.Token
}

// Config is what New needs for one store.
type Config struct {
	Bucket *blob.Bucket // the bucket or container; Close closes it
	Driver Driver
	Scheme string // of Location: "s3", "gs" or "az"
	Name   string // bucket or container
	Prefix string // "" or "a/b/" (with the trailing slash)
	// Close, if set, releases a client the bucket does not own.
	Close func() error
}

// New returns the Cloud store of cfg. It makes no request: the probe of
// conditional writes runs before the first write.
func New(cfg Config) *Cloud {
	return &Cloud{bucket: cfg.Bucket, be: cfg.Driver, scheme: cfg.Scheme, name: cfg.Name, prefix: cfg.Prefix, closeFn: cfg.Close}
}

// IsRefusalCode reports whether code is one of the service error codes
// that mean a conditional write's condition did not hold: S3's
// "PreconditionFailed" and "ConditionalRequestConflict" (a concurrent
// conditional write to the same key), Azure's "ConditionNotMet" and
// "BlobAlreadyExists". Drivers use it in Refused.
func IsRefusalCode(code string) bool {
	switch code {
	case "ConditionalRequestConflict", "PreconditionFailed", "ConditionNotMet", "BlobAlreadyExists":
		return true
	}
	return false
}

// Location returns "<scheme>://<bucket>/<prefix><key>" in the URL form DuckDB
// reads: s3:// for S3, gs:// for GCS, az:// for Azure (the account comes from
// the reader's DuckDB secret). Location("") is the root, without a trailing
// slash. It never holds the URL's query (endpoint, region, …).
func (c *Cloud) Location(key string) string {
	root := c.scheme + "://" + c.name
	if c.prefix != "" {
		root += "/" + strings.TrimSuffix(c.prefix, "/")
	}
	if key == "" {
		return root
	}
	return root + "/" + key
}

// DuckDBSecret returns the DuckDB statement that gives a reader access to
// this store's locations (store.SecretProvider; no credentials in it: a
// credential chain provider or placeholders to fill in), named after the
// store and scoped to its root, so that it can run again and beside the
// secret of another repository (another endpoint, other credentials) in
// one session, e.g. "CREATE OR REPLACE SECRET fdl_s3_1a2b3c4d (TYPE s3,
// PROVIDER credential_chain, REGION 'eu-west-1', SCOPE
// 's3://bucket/sales');". DuckDB takes, for a path, the secret whose scope
// is its longest prefix.
func (c *Cloud) DuckDBSecret() string { return ScopedSecret(c.be.Secret(), c.scheme, c.Location("")) }

// ScopedSecret turns a driver's "CREATE SECRET (…);" into "CREATE OR
// REPLACE SECRET <name> (…, SCOPE '<root>');": the name is "fdl_", the
// scheme and 8 hex digits of the SHA-256 of the statement and the root
// (the same store gives the same name; another root, endpoint or
// credential source another). A statement of another shape is returned
// as it is.
func ScopedSecret(stmt, scheme, root string) string {
	body, ok := strings.CutPrefix(stmt, "CREATE SECRET (")
	if !ok {
		return stmt
	}
	body, ok = strings.CutSuffix(body, ");")
	if !ok {
		return stmt
	}
	sum := sha256.Sum256([]byte(stmt + "\x00" + root))
	name := "fdl_" + scheme + "_" + hex.EncodeToString(sum[:4])
	return "CREATE OR REPLACE SECRET " + name + " (" + body + ", SCOPE " + sqlquote.String(root) + ");"
}

// CheckRoot tells whether the bucket (or container) exists, with one
// listing of at most one key (store.RootChecker). Errors: store.ErrNoRoot
// naming the bucket, the store's errors.
func (c *Cloud) CheckRoot(ctx context.Context) error {
	ok, err := c.bucket.IsAccessible(ctx)
	if err != nil {
		if cerr := c.ctxFail(ctx, ""); cerr != nil {
			return cerr
		}
		return c.fail("", "list", err)
	}
	if !ok {
		kind := "bucket"
		if c.scheme == "az" {
			kind = "container"
		}
		return fmt.Errorf("%s %q (%s): %w, or these credentials cannot see it; create it first (fdl makes repositories inside a %s, never the %s itself)", kind, c.name, c.Location(""), store.ErrNoRoot, kind, kind)
	}
	return nil
}

// Close releases the bucket's clients.
func (c *Cloud) Close() error {
	err := c.bucket.Close()
	if c.closeFn != nil {
		if cerr := c.closeFn(); err == nil {
			err = cerr
		}
	}
	return err
}

// fail wraps err, from request what ("read", "stat", "write", "list",
// "delete") on key, with the key's location: a credential failure becomes
// a *store.AuthError (its one-line message names the source tried; the
// SDK's text only wrapped), anything else keeps the SDK's text, credentials
// removed.
func (c *Cloud) fail(key, what string, err error) error {
	if af, ok := c.be.Auth(err); ok {
		return &store.AuthError{
			Store: c.Kind(), Location: c.Location(key), Key: key, Op: what,
			Reason: af.Reason, Code: af.Code, Creds: af.Creds,
			MaybeMissing: af.Hidden && (what == "read" || what == "stat"),
			Err:          RedactSecrets(err),
		}
	}
	return RedactSecrets(fmt.Errorf("%s: %s: %w", c.Location(key), what, err))
}

// Kind is the store's kind as its URLs name it: "s3", "gs" or "azblob".
func (c *Cloud) Kind() string {
	if c.scheme == "az" {
		return "azblob"
	}
	return c.scheme
}

// hiddenMissing tells whether a refused read or stat of key (a failure
// the driver calls Hidden) means that key does not exist. S3 answers 403
// instead of 404 for a missing key when the credentials lack s3:ListBucket;
// whether reads are refused or the key is missing shows on an object every
// repository holds, store.WitnessKey: if the same credentials read it, the
// 403 meant "no such key". It costs one HEAD request, once per store: a
// successful read of the witness (repositories read it first when opened)
// is remembered, and so is a successful HEAD. It is false for the witness
// itself, which has no witness.
func (c *Cloud) hiddenMissing(ctx context.Context, key string) bool {
	if key == store.WitnessKey {
		return false
	}
	if c.witnessRead.Load() {
		return true
	}
	if _, err := c.bucket.Attributes(ctx, c.prefix+store.WitnessKey); err != nil {
		return false
	}
	c.witnessRead.Store(true)
	return true
}

// missing is store.ErrNotExist for key, told from a 403 by hiddenMissing.
func (c *Cloud) missing(key string) error {
	return fmt.Errorf("%s: %w (the store answered 403, as S3 does for a missing key when the credentials may not list the bucket; %s reads with the same credentials)", c.Location(key), store.ErrNotExist, store.WitnessKey)
}

// notFound reports whether err says the key holds no object. A credential
// failure never does, whatever code gocloud gives it (a token file that
// is not there would otherwise read as a missing object).
func (c *Cloud) notFound(err error) bool {
	if _, auth := c.be.Auth(err); auth {
		return false
	}
	return gcerrors.Code(err) == gcerrors.NotFound
}

// readFail is fail for a read or stat: a Hidden refusal that hiddenMissing
// shows to be a missing key is store.ErrNotExist.
func (c *Cloud) readFail(ctx context.Context, key, what string, err error) error {
	if af, ok := c.be.Auth(err); ok && af.Hidden && c.hiddenMissing(ctx, key) {
		return c.missing(key)
	}
	return c.fail(key, what, err)
}

// ctxFail returns ctx's error (wrapped with the location) if ctx is done.
func (c *Cloud) ctxFail(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", c.Location(key), err)
	}
	return nil
}

// Get opens key for reading; the Token comes from the same response.
// Errors: store.ErrNotExist, store.ErrInvalidKey, the store's errors naming the location.
func (c *Cloud) Get(ctx context.Context, key string) (io.ReadCloser, store.Token, error) {
	if err := store.Begin(ctx, key); err != nil {
		return nil, "", err
	}
	return c.get(ctx, key)
}

// get is Get without the key check (the probe's key is not a valid key).
func (c *Cloud) get(ctx context.Context, key string) (io.ReadCloser, store.Token, error) {
	r, err := c.bucket.NewReader(ctx, c.prefix+key, nil)
	if err != nil {
		if cerr := c.ctxFail(ctx, key); cerr != nil {
			return nil, "", cerr
		}
		if c.notFound(err) {
			return nil, "", fmt.Errorf("%s: %w", c.Location(key), store.ErrNotExist)
		}
		return nil, "", c.readFail(ctx, key, "read", err)
	}
	tok, err := c.be.ReadToken(r)
	if err != nil {
		r.Close()
		return nil, "", c.fail(key, "read", err)
	}
	if key == store.WitnessKey {
		c.witnessRead.Store(true)
	}
	return r, tok, nil
}

// Stat returns key's size and modification time. Errors: store.ErrNotExist,
// store.ErrInvalidKey.
func (c *Cloud) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if err := store.Begin(ctx, key); err != nil {
		return store.ObjectInfo{}, err
	}
	a, err := c.bucket.Attributes(ctx, c.prefix+key)
	if err != nil {
		if cerr := c.ctxFail(ctx, key); cerr != nil {
			return store.ObjectInfo{}, cerr
		}
		if c.notFound(err) {
			return store.ObjectInfo{}, fmt.Errorf("%s: %w", c.Location(key), store.ErrNotExist)
		}
		return store.ObjectInfo{}, c.readFail(ctx, key, "stat", err)
	}
	return store.ObjectInfo{Key: key, Size: a.Size, ModTime: a.ModTime}, nil
}

// Create uploads r to key only if key holds no object (streaming; see Cloud).
// Errors: store.ErrExist (nothing written), ErrNoConditionalWrites, store.ErrInvalidKey,
// r's error or ctx's error (nothing written), the store's errors.
func (c *Cloud) Create(ctx context.Context, key string, r io.Reader) error {
	if err := store.Begin(ctx, key); err != nil {
		return err
	}
	if err := c.probe(ctx); err != nil {
		return err
	}
	_, err := c.upload(ctx, key, r, store.NoToken)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errRefused):
		return fmt.Errorf("%s: %w", c.Location(key), store.ErrExist)
	}
	return err
}

// Swap writes data to key if key still holds the version old (or, for
// NoToken, holds nothing), and returns the new version's Token, learnt from
// the write's own response. Errors: store.ErrConflict (nothing written),
// ErrNoConditionalWrites, store.ErrInvalidKey, an error for data larger than
// store.MaxSwapSize, the store's errors.
func (c *Cloud) Swap(ctx context.Context, key string, old store.Token, data []byte) (store.Token, error) {
	if err := store.Begin(ctx, key); err != nil {
		return "", err
	}
	if len(data) > store.MaxSwapSize {
		return "", fmt.Errorf("%s: swap of %d bytes: larger than %d", c.Location(key), len(data), store.MaxSwapSize)
	}
	if err := c.probe(ctx); err != nil {
		return "", err
	}
	tok, err := c.upload(ctx, key, bytes.NewReader(data), old)
	if errors.Is(err, errRefused) {
		return "", fmt.Errorf("%s: %w", c.Location(key), store.ErrConflict)
	}
	return tok, err
}

// errRefused marks an upload the store refused because its condition did
// not hold; Create turns it into store.ErrExist, Swap into store.ErrConflict.
var errRefused = errors.New("condition not met")

// upload writes r to key, create-only if old is NoToken, else only if key
// holds version old. It returns the new Token, or an error wrapping
// errRefused when the condition did not hold.
func (c *Cloud) upload(ctx context.Context, key string, r io.Reader, old store.Token) (store.Token, error) {
	uctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := &blob.WriterOptions{ContentType: contentType}
	var w Prepared
	if old == store.NoToken {
		opts.IfNotExist = true
		uctx, w, _ = c.be.Prepare(uctx, store.NoToken)
	} else {
		var ok bool
		uctx, w, ok = c.be.Prepare(uctx, old)
		if !ok {
			return "", errRefused
		}
	}
	if w != nil {
		opts.BeforeWrite = w.BeforeWrite
	}
	// A failing reader cancels the upload before the SDK sees the error, so
	// no driver finishes an upload with the bytes read so far.
	sr := &stopReader{r: r, cancel: cancel}
	err := c.bucket.Upload(uctx, c.prefix+key, sr, opts)
	if err == nil {
		if w == nil {
			return "", nil
		}
		if tok := w.Token(); tok != store.NoToken {
			return tok, nil
		}
		// The response carried no version: a Token that never matches, so
		// a Swap from it is refused rather than unconditional.
		return unknownToken, nil
	}
	if sr.err != nil {
		return "", fmt.Errorf("%s: %w", c.Location(key), sr.err)
	}
	if cerr := c.ctxFail(ctx, key); cerr != nil {
		return "", cerr
	}
	if c.isRefusal(err, old != store.NoToken) {
		return "", fmt.Errorf("%s: %w", c.Location(key), errRefused)
	}
	return "", c.fail(key, "write", err)
}

// isRefusal tells whether a failed conditional write was refused because its
// condition did not hold (STORES.md): a precondition failure (HTTP 412,
// Azure 409 BlobAlreadyExists), a 404 for If-Match on a missing key (S3),
// or AWS's 409 ConditionalRequestConflict.
func (c *Cloud) isRefusal(err error, ifMatch bool) bool {
	if _, auth := c.be.Auth(err); auth {
		return false
	}
	switch gcerrors.Code(err) {
	case gcerrors.FailedPrecondition:
		return true
	case gcerrors.NotFound:
		return ifMatch
	}
	return c.be.Refused(err)
}

// stopReader passes reads through; on the first error other than io.EOF it
// records the error and cancels the upload.
type stopReader struct {
	r      io.Reader
	cancel context.CancelFunc
	err    error
}

func (s *stopReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
		s.cancel()
	}
	return n, err
}

// FirstForeign returns the first object under the store's prefix whose
// name is not a valid key (List leaves it out: a "fdl.lock" copied into a
// bucket, a name with a control character), or "". Folder markers
// (zero-byte "…/" objects a console makes) are not files. It reads at most
// 10,000 listing entries (a prefix that large already holds keys).
func (c *Cloud) FirstForeign(ctx context.Context) (string, error) {
	it := c.bucket.List(&blob.ListOptions{Prefix: c.prefix})
	for n := 0; n < 10000; n++ {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return "", nil
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return "", cerr
			}
			return "", c.fail("", "list", err)
		}
		key := strings.TrimPrefix(o.Key, c.prefix)
		if o.IsDir || key == "" || strings.HasSuffix(key, "/") {
			continue // a folder marker ("prefix/", as consoles make them) is not a file
		}
		if store.CheckKey(key) != nil {
			return key, nil
		}
	}
	return "", nil
}

// List calls fn in byte order of the keys for every object under prefix, as
// listed when List began (see Cloud for memory). Errors: store.ErrInvalidKey for a
// bad prefix, fn's error, ctx's error, the store's errors.
func (c *Cloud) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.CheckPrefix(prefix); err != nil {
		return err
	}
	var infos []store.ObjectInfo
	it := c.bucket.List(&blob.ListOptions{Prefix: c.prefix + prefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return c.fail(prefix, "list", err)
		}
		key := strings.TrimPrefix(o.Key, c.prefix)
		if o.IsDir || store.CheckKey(key) != nil {
			continue
		}
		infos = append(infos, store.ObjectInfo{Key: key, Size: o.Size, ModTime: o.ModTime})
	}
	return store.EmitSorted(ctx, infos, fn)
}

// Delete removes key; a missing key is not an error. Errors: store.ErrInvalidKey,
// the store's errors.
func (c *Cloud) Delete(ctx context.Context, key string) error {
	if err := store.Begin(ctx, key); err != nil {
		return err
	}
	err := c.bucket.Delete(ctx, c.prefix+key)
	if err == nil || c.notFound(err) {
		return nil
	}
	if cerr := c.ctxFail(ctx, key); cerr != nil {
		return cerr
	}
	return c.fail(key, "delete", err)
}

// probe checks, once per Cloud before its first write, that the store
// enforces conditional writes, with a probe object ".tmp-probe-<random>" at
// the root (not a valid key, so never listed, and removed afterwards):
//
//  1. create it create-only: must succeed;
//  2. create it create-only again: must be refused (If-None-Match honoured);
//  3. swap it from a made-up Token: must be refused (If-Match honoured);
//  4. swap it from its real Token: must succeed (If-Match understood).
//
// A store that fails 2–4 (a proxy that strips the headers, an S3-compatible
// server without conditional writes) is refused for good with an error
// wrapping ErrNoConditionalWrites; other errors (network, permission,
// cancelled context) are returned and the probe runs again on the next
// write. It costs five requests per process that writes.
func (c *Cloud) probe(ctx context.Context) error {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	if c.probed {
		return c.probeErr
	}
	key := store.TempName("probe-")
	refuse := func(what string) error {
		c.probed = true
		c.probeErr = fmt.Errorf("%s: %w: %s; fdl refuses to write there, because two concurrent pushes could then both \"win\" and one would be lost silently. Use a store that supports conditional writes (AWS S3, Cloudflare R2, Google Cloud Storage, Azure Blob Storage, MinIO, versitygw), or remove the proxy that strips If-Match/If-None-Match headers (docs/stores.md)",
			c.Location(""), ErrNoConditionalWrites, what)
		return c.probeErr
	}
	defer func() {
		// Best effort: a leftover probe is hidden from List anyway.
		_ = c.bucket.Delete(context.WithoutCancel(ctx), c.prefix+key)
	}()
	if _, err := c.upload(ctx, key, strings.NewReader("probe 1\n"), store.NoToken); err != nil {
		if errors.Is(err, errRefused) {
			return refuse("it refused to create a new object create-only (If-None-Match: *)")
		}
		return fmt.Errorf("checking that %s supports conditional writes: %w", c.Location(""), err)
	}
	_, err := c.upload(ctx, key, strings.NewReader("probe 2\n"), store.NoToken)
	switch {
	case err == nil:
		return refuse("it overwrote an existing object although the write was create-only (If-None-Match: * ignored)")
	case !errors.Is(err, errRefused):
		return fmt.Errorf("checking that %s supports conditional writes: %w", c.Location(""), err)
	}
	rc, cur, err := c.get(ctx, key)
	if err == nil {
		rc.Close()
	}
	if err != nil {
		return fmt.Errorf("checking that %s supports conditional writes: %w", c.Location(""), err)
	}
	_, err = c.upload(ctx, key, strings.NewReader("probe 3\n"), c.be.WrongToken(cur))
	switch {
	case err == nil:
		return refuse("it overwrote an object although the write was conditional on another version (If-Match ignored)")
	case !errors.Is(err, errRefused):
		return fmt.Errorf("checking that %s supports conditional writes (If-Match): %w", c.Location(""), err)
	}
	if _, err := c.upload(ctx, key, strings.NewReader("probe 4\n"), cur); err != nil {
		if ctx.Err() != nil || !errors.Is(err, errRefused) {
			return fmt.Errorf("checking that %s supports conditional writes: %w", c.Location(""), err)
		}
		return refuse("it refused a write conditional on the object's current version (If-Match with the ETag it returned)")
	}
	c.probed = true
	return nil
}

// GetRange opens length bytes of key's object from offset, one ranged
// read (store.RangeReader). Errors: store.ErrNotExist, store.ErrInvalidKey,
// store.ErrAuth.
func (c *Cloud) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := store.Begin(ctx, key); err != nil {
		return nil, err
	}
	r, err := c.bucket.NewRangeReader(ctx, c.prefix+key, offset, length, nil)
	if err != nil {
		if cerr := c.ctxFail(ctx, key); cerr != nil {
			return nil, cerr
		}
		if c.notFound(err) {
			return nil, fmt.Errorf("%s: %w", c.Location(key), store.ErrNotExist)
		}
		return nil, c.readFail(ctx, key, "read", err)
	}
	return r, nil
}
