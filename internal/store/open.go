package store

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Opener opens the store a URL names. u is the parsed URL; for a plain
// folder path (Backend.Schemes holds "") u.Scheme is "" and u.Path is the
// path exactly as given, relative or absolute. redacted is the URL as
// given with any password hidden, for messages: an Opener quotes it, never
// u.String().
type Opener func(ctx context.Context, u *url.URL, redacted string) (Store, error)

// Backend is one kind of store that Open can open.
type Backend struct {
	// Schemes are the URL schemes it opens, in lower case ("s3"); "" stands
	// for a plain folder path, which has none.
	Schemes []string
	// Forms name its URLs in Open's messages, e.g. "a folder path",
	// "file://", "http(s)://"; none for a store only tests use.
	Forms []string
	// Open opens one store.
	Open Opener
}

var (
	registryMu sync.Mutex
	registry   []Backend // in registration order, which Open's messages follow
)

// Register makes Open open the URLs of b's schemes with b.Open. A program
// registers the kinds of store it links (cmd/fdl: folder, memory, S3, GCS,
// Azure, HTTP), in the order its messages should name them. Registering a
// scheme again replaces its earlier backend in place, so registering the
// same set twice changes nothing. Safe for concurrent use.
func Register(b Backend) {
	b.Schemes = slices.Clone(b.Schemes)
	for i, s := range b.Schemes {
		b.Schemes[i] = strings.ToLower(s)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	at := -1
	kept := registry[:0]
	for _, old := range registry {
		old.Schemes = slices.DeleteFunc(slices.Clone(old.Schemes), func(s string) bool { return slices.Contains(b.Schemes, s) })
		if len(old.Schemes) == 0 {
			if at < 0 {
				at = len(kept)
			}
			continue
		}
		kept = append(kept, old)
	}
	if at < 0 {
		at = len(kept)
	}
	registry = slices.Insert(kept, at, b)
}

// lookup returns the backend registered for scheme, and the forms of every
// registered backend for messages.
func lookup(scheme string) (open Opener, forms []string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, b := range registry {
		if open == nil && slices.Contains(b.Schemes, scheme) {
			open = b.Open
		}
		forms = append(forms, b.Forms...)
	}
	return open, forms
}

// use says which URLs this program opens: "use a folder path, file://, …
// or http(s)://".
func use(forms []string) string {
	switch len(forms) {
	case 0:
		return "this program registers no kind of store (store.Register)"
	case 1:
		return "use " + forms[0]
	}
	return "use " + strings.Join(forms[:len(forms)-1], ", ") + " or " + forms[len(forms)-1]
}

var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// Open returns the Store that rawURL names, opened by the backend
// registered for its scheme (Register). With every backend of this module
// registered:
//   - a plain folder path, absolute or relative to the working directory
//     (made absolute), or file:///absolute/path (file://localhost/… too):
//     a folder store (package folder). The folder need not exist yet (fdl
//     init makes it on its first write).
//   - mem://NAME: the process-wide in-memory store called NAME (package
//     memory); every Open of the same NAME returns the same store, for
//     tests.
//   - s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, azblob://CONTAINER/PREFIX: a
//     store on Amazon S3 (and S3-compatible servers), Google Cloud Storage
//     or Azure Blob Storage (packages s3, gcs, azure over package cloud);
//     options in the URL's query and credentials from the environment as
//     each cloud's SDK reads them (docs/stores.md).
//   - http://… or https://…: a read-only store on a repository published by
//     a static web server or a public bucket (package httpstore); every
//     write fails with ErrReadOnly.
//
// Errors: an empty URL; a scheme no backend is registered for (the message
// lists the forms that work); the backend's own errors (a malformed URL, a
// path that exists but is not a folder, …). Messages quote the URL with
// any password redacted.
func Open(ctx context.Context, rawURL string) (Store, error) {
	if rawURL == "" {
		_, forms := lookup("")
		return nil, fmt.Errorf("empty store URL: %s", use(forms))
	}
	m := schemeRE.FindStringSubmatch(rawURL)
	if m == nil || (runtime.GOOS == "windows" && len(m[1]) == 1) {
		// No scheme: a folder path (on Windows "C://x" is a drive, not a scheme).
		open, forms := lookup("")
		if open == nil {
			return nil, fmt.Errorf("unsupported store URL %q: %s", rawURL, use(forms))
		}
		return open(ctx, &url.URL{Path: rawURL}, rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store URL %q: %w", redact(rawURL), err)
	}
	open, forms := lookup(strings.ToLower(m[1]))
	if open == nil {
		return nil, fmt.Errorf("unsupported store URL %q: %s", u.Redacted(), use(forms))
	}
	return open(ctx, u, u.Redacted())
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
