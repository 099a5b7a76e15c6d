package store

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
)

// opener opens the store of a parsed URL. raw is the URL as given, for
// messages (callers redact credentials from it first).
type opener func(ctx context.Context, u *url.URL, raw string) (Store, error)

// openers maps a URL scheme to the function that opens it.
var openers = map[string]opener{
	"file":   openFileURL,
	"mem":    openMemURL,
	"s3":     openS3,
	"gs":     openGCS,
	"azblob": openAzure,
	"http":   openHTTP,
	"https":  openHTTP,
}

// planned are schemes fdl will support but this build does not yet.
var planned = map[string]bool{}

var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// Open returns the Store that rawURL names:
//   - a plain folder path, absolute or relative to the working directory
//     (made absolute), or file:///absolute/path (file://localhost/… too):
//     a Local store. The folder need not exist yet (fdl init makes it on
//     its first write).
//   - mem://NAME: the process-wide in-memory store called NAME; every Open of
//     the same NAME returns the same *Memory, for tests.
//   - s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, azblob://CONTAINER/PREFIX: a
//     *Cloud on Amazon S3 (and S3-compatible servers), Google Cloud Storage
//     or Azure Blob Storage; options in the URL's query and credentials from
//     the environment as each cloud's SDK reads them (docs/stores.md).
//   - http://… or https://…: a read-only *HTTP store on a repository
//     published by a static web server or a public bucket; every write
//     fails with ErrReadOnly.
//
// Errors: an empty URL; an unsupported scheme (the message lists the ones
// that work); a malformed file:// or mem:// URL; a path that exists but is
// not a folder. Messages quote the URL with any password redacted.
func Open(ctx context.Context, rawURL string) (Store, error) {
	if rawURL == "" {
		return nil, fmt.Errorf("empty store URL: use a folder path, file://, s3://, gs://, azblob:// or http(s)://")
	}
	m := schemeRE.FindStringSubmatch(rawURL)
	if m == nil || (runtime.GOOS == "windows" && len(m[1]) == 1) {
		// No scheme: a folder path (on Windows "C://x" is a drive, not a scheme).
		return OpenLocal(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store URL %q: %w", redact(rawURL), err)
	}
	scheme := strings.ToLower(m[1])
	if open, ok := openers[scheme]; ok {
		return open(ctx, u, u.Redacted())
	}
	if planned[scheme] {
		return nil, fmt.Errorf("store URL %q: %s:// stores are not supported yet: use a folder path or file://", u.Redacted(), scheme)
	}
	return nil, fmt.Errorf("unsupported store URL %q: use a folder path, file://, s3://, gs://, azblob:// or http(s)://", u.Redacted())
}

// openFileURL opens file:///abs/path or file://localhost/abs/path.
func openFileURL(_ context.Context, u *url.URL, raw string) (Store, error) {
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return nil, fmt.Errorf("store URL %q: file:// URLs name a local folder: use file:///absolute/path", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("store URL %q: file:// URLs take no user, query or fragment", raw)
	}
	p := u.Path
	if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:] // file:///C:/data -> C:/data
	}
	p = filepath.FromSlash(p)
	if p == "" || !filepath.IsAbs(p) {
		return nil, fmt.Errorf("store URL %q: file:// needs an absolute path (file:///absolute/path)", raw)
	}
	return OpenLocal(p)
}

var (
	memMu     sync.Mutex
	memStores = map[string]*Memory{}
)

// openMemURL opens mem://NAME, making the store on first use.
func openMemURL(_ context.Context, u *url.URL, raw string) (Store, error) {
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("store URL %q: use mem://NAME", raw)
	}
	memMu.Lock()
	defer memMu.Unlock()
	m, ok := memStores[u.Host]
	if !ok {
		m = newMemory(u.Host)
		memStores[u.Host] = m
	}
	return m, nil
}

// redact hides a password in a URL that url.Parse refused.
func redact(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		if at := strings.LastIndexByte(rest, '@'); at >= 0 && !strings.ContainsAny(rest[:at], "/?#") {
			if c := strings.IndexByte(rest[:at], ':'); c >= 0 {
				return raw[:i+3] + rest[:c] + ":xxxxx" + rest[at:]
			}
		}
	}
	return raw
}
