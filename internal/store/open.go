package store

import (
	"context"
	"errors"
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

// mistypedRE matches the start of a path that reads as a URL scheme: a
// first element "word:" of two or more characters (one letter and a colon
// is a Windows drive), or a first element that is only a scheme's name
// followed by "//" ("s3//bucket").
var mistypedRE = regexp.MustCompile(`^(?:([A-Za-z][A-Za-z0-9+.-]+):([^/\\]*[/\\]*)|([A-Za-z][A-Za-z0-9+.-]*)//)`)

// LooksLikeURL reports whether s starts like a URL or a mistyped one
// ("s3://b", "s3:/b", "s3:b", "gs//b"): text callers must not treat as a
// relative folder path (joining it to a directory, making it absolute).
// A path starting "./" never does.
func LooksLikeURL(s string) bool {
	if schemeRE.MatchString(s) {
		return true
	}
	m := mistypedRE.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	if m[1] != "" {
		return true
	}
	return knownScheme(m[3])
}

// knownScheme reports whether name is the scheme of a registered backend
// or of a store URL people commonly write.
func knownScheme(name string) bool {
	name = strings.ToLower(name)
	switch name {
	case "file", "s3", "s3a", "gs", "gcs", "az", "azure", "azblob", "abfss", "http", "https", "mem", "r2":
		return true
	}
	open, _ := lookup(name)
	return open != nil
}

// checkNotMistypedURL refuses a folder path that reads as a mistyped store
// URL: "s3:/bucket/p" (one slash), "s3:bucket", "gs//bucket" — opened as a
// folder they would quietly make a local folder named "s3:" or "gs". The
// error names the URL meant and how to ask for such a folder on purpose
// ("./s3:/bucket/p").
func checkNotMistypedURL(p string) error {
	m := mistypedRE.FindStringSubmatch(p)
	if m == nil || (m[1] == "" && !knownScheme(m[3])) {
		return nil
	}
	scheme, rest := m[1], p[len(m[1])+1:]
	if scheme == "" {
		scheme, rest = m[3], p[len(m[3]):]
	}
	rest = strings.TrimLeft(rest, `/\`)
	// The URL meant is redacted whole: rest alone has no scheme, and
	// RedactURL finds a user part only after one ("s3:/token@b" meant
	// "s3://token@b", whose token rest quoted as it was).
	return fmt.Errorf("store URL %q looks like a mistyped URL: %s:// takes two slashes (did you mean %q?); to use a local folder of that name, write %q", RedactURL(p), strings.ToLower(scheme), RedactURL(strings.ToLower(scheme)+"://"+rest), "./"+RedactURL(p))
}

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
		if err := checkNotMistypedURL(rawURL); err != nil {
			return nil, err
		}
		open, forms := lookup("")
		if open == nil {
			return nil, fmt.Errorf("unsupported store URL %q: %s", rawURL, use(forms))
		}
		st, err := open(ctx, &url.URL{Path: rawURL}, rawURL)
		if err != nil {
			return nil, err // never a typed nil inside a non-nil Store
		}
		return st, nil
	}
	red := RedactURL(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the raw URL, password included: keep only its
		// reason, itself cleared of anything the URL carries.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("store URL %q: %s", red, redactText(err.Error(), rawURL))
	}
	open, forms := lookup(strings.ToLower(m[1]))
	if open == nil {
		return nil, fmt.Errorf("unsupported store URL %q: %s", red, use(forms))
	}
	// Backends quote the URL in its parsed form (scheme in lower case).
	// Writing it back can unescape a credential the URL as given escaped
	// ("#…?sig=a%26b" becomes "sig=a&b", which then reads as two
	// parameters): what the given URL carries is removed from it too.
	st, err := open(ctx, u, redactText(RedactURL(u.String()), rawURL))
	if err != nil {
		// A backend's error (an SDK's included) may quote the URL or a part
		// of it as it was given.
		return nil, redactedError{msg: redactText(err.Error(), rawURL), err: err}
	}
	return st, nil
}

// redactedError is an error whose message had credentials removed;
// errors.Is and errors.As still see the original.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }
