// Package httpstore is a read-only store.Store over a repository published
// at an http:// or https:// URL, and those URLs store.Open opens through it
// (Backend).
package httpstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/net/html"

	"github.com/fdl-dev/fdl/internal/store"
)

// StatusError is a response other than 200 for an object or folder
// fetched over http(s). It names the URL (without credentials) and the
// status; a 404 or 410 also matches store.ErrNotExist, no other status
// does. A 401 or 403 reaches callers as a *store.AuthError wrapping it,
// except an S3-style 403 that fdl tells to be a missing key (see Store).
type StatusError struct {
	URL        string // the object's location, without credentials or query
	StatusCode int    // e.g. 403
	Status     string // e.g. "403 Forbidden"
	Hint       string // what to do, may be empty
}

func (e *StatusError) Error() string {
	s := e.URL + ": HTTP " + e.Status
	switch e.StatusCode {
	case http.StatusNotFound, http.StatusGone:
		s += ": does not exist"
	case http.StatusForbidden, http.StatusUnauthorized:
		s += ": the server refuses access"
	}
	if e.Hint != "" {
		s += ": " + e.Hint
	}
	return s
}

// Is makes a 404 or 410 match store.ErrNotExist.
func (e *StatusError) Is(target error) bool {
	return target == store.ErrNotExist && (e.StatusCode == http.StatusNotFound || e.StatusCode == http.StatusGone)
}

// Store is a read-only store.Store over a repository published at an http:// or
// https:// URL: a folder repository served by any static web server, or a
// bucket's public URL. Objects are fetched with GET (Get) and HEAD (Stat)
// at <base>/<key>; every write (Create, Swap, Delete) fails with
// store.ErrReadOnly without a request.
//
// Listing: plain HTTP has no listing call. List reads the HTML directory
// listings that most static servers can produce (Go's http.FileServer,
// nginx autoindex, Apache, python -m http.server): it fetches
// "<base>/<folder>/" and follows the links to the folder's children. If the
// root's listing does not link fdl.json, the server does not list, and List
// fails with store.ErrCannotList; fdl then shows full version ids and accepts only
// full ids, branch and tag names (docs/stores.md). Listed objects have Size
// -1 and a zero ModTime (a listing does not tell them reliably).
//
// Errors: a 404 or 410 is store.ErrNotExist; a 401 or 403 is a
// *store.AuthError (store.ErrAuth) wrapping the *StatusError, naming the
// credentials the URL carries (none, a user part, a signed query); every
// other status is a *StatusError naming the URL and status; a body shorter
// than its Content-Length fails the read with io.ErrUnexpectedEOF and both
// sizes. A public S3 bucket without s3:ListBucket answers 403 for a
// missing key: an S3-style 403 (an x-amz-request-id header, or an XML
// AccessDenied body) on a read or stat is store.ErrNotExist when the
// repository's store.WitnessKey reads (one more request, once per store).
// User and password in the URL are sent as HTTP basic authentication and
// never shown; the URL's query (a SAS token, say) is sent with every request
// and never shown either.
type Store struct {
	base   *url.URL // scheme, host, path ending in "/", query; no user
	user   *url.Userinfo
	client *http.Client

	listMu      sync.Mutex
	listChecked bool
	listErr     error // from checking the root's listing

	witnessRead atomic.Bool // store.WitnessKey was read (hiddenMissing)
}

var _ store.Store = (*Store)(nil)

// openURL opens http(s)://HOST/PATH as a read-only store.
func openURL(_ context.Context, u *url.URL, raw string) (store.Store, error) {
	if u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("store URL %q: use http(s)://HOST/PATH (no fragment)", raw)
	}
	base := *u
	base.User = nil
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
		base.RawPath = ""
	}
	return &Store{base: &base, user: u.User, client: &http.Client{Timeout: 0}}, nil
}

// url returns the request URL of key ("" is the root, "dir/" a folder).
func (h *Store) url(key string) string {
	u := *h.base
	u.Path = h.base.Path + key
	u.RawPath = ""
	return u.String()
}

// Location returns the object's URL without credentials or query, as
// DuckDB's httpfs reads it; Location("") is the root without a trailing
// slash.
func (h *Store) Location(key string) string {
	u := *h.base
	u.RawQuery = ""
	u.Path = h.base.Path + key
	u.RawPath = ""
	return strings.TrimSuffix(u.String(), "/")
}

// readerURL is the URL DuckDB's httpfs requests for key when its data
// path is the repository's location: the location's escaped path, then
// the key as it is (DuckDB escapes nothing in a data file's path; its
// ducklake writer percent-encodes partition values, "k=x%20y"), then the
// store's own query, if any (a signed URL's).
func (h *Store) readerURL(key string) *url.URL {
	u := *h.base
	u.Opaque = "//" + u.Host + h.base.EscapedPath() + key
	u.Path, u.RawPath, u.User = "", "", nil
	return &u
}

// ReaderDiffers reports whether DuckDB's request for key differs from the
// store's (store.ReaderPaths): key holds a character the store escapes,
// such as the '%' of a partition folder's escaped value.
func (h *Store) ReaderDiffers(key string) bool {
	u := *h.base
	u.Path, u.RawPath = h.base.Path+key, ""
	return u.EscapedPath() != h.base.EscapedPath()+key
}

// StatAsReader asks for key's headers at the URL DuckDB requests
// (readerURL; HEAD, GET if the server refuses HEAD) and returns that URL
// (store.ReaderPaths). Errors: store.ErrNotExist (404, 410), as Stat.
func (h *Store) StatAsReader(ctx context.Context, key string) (string, store.ObjectInfo, error) {
	loc := h.Location("") + "/" + key // the URL as DuckDB's error names it
	if err := store.Begin(ctx, key); err != nil {
		return loc, store.ObjectInfo{}, err
	}
	var resp *http.Response
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		req, err := http.NewRequestWithContext(ctx, method, "", nil)
		if err != nil {
			return loc, store.ObjectInfo{}, fmt.Errorf("%s: %w", loc, err)
		}
		req.URL, req.Host = h.readerURL(key), h.base.Host
		if h.user != nil {
			pw, _ := h.user.Password()
			req.SetBasicAuth(h.user.Username(), pw)
		}
		if resp, err = h.client.Do(req); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return loc, store.ObjectInfo{}, fmt.Errorf("%s: %w", loc, cerr)
			}
			return loc, store.ObjectInfo{}, fmt.Errorf("%s: %s: %w", loc, method, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotImplemented {
			break
		}
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return loc, store.ObjectInfo{Key: key, Size: resp.ContentLength}, nil
	case http.StatusNotFound, http.StatusGone:
		return loc, store.ObjectInfo{}, fmt.Errorf("%s: %s: %w", loc, resp.Status, store.ErrNotExist)
	}
	return loc, store.ObjectInfo{}, fmt.Errorf("%s: %s", loc, resp.Status)
}

// Close releases idle connections.
func (h *Store) Close() error {
	h.client.CloseIdleConnections()
	return nil
}

func (h *Store) do(ctx context.Context, method, key string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.url(key), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Location(key), err)
	}
	if h.user != nil {
		pw, _ := h.user.Password()
		req.SetBasicAuth(h.user.Username(), pw)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%s: %w", h.Location(key), cerr)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL, query included
		}
		return nil, fmt.Errorf("%s: %s: %w", h.Location(key), method, err)
	}
	return resp, nil
}

// statusError is the error for a response other than 200 to request op
// ("read", "stat", "list") of key: a *store.AuthError for 401 and 403, a
// *StatusError otherwise.
func (h *Store) statusError(key, op string, resp *http.Response) error {
	e := &StatusError{URL: h.Location(key), StatusCode: resp.StatusCode, Status: resp.Status}
	if e.Status == "" {
		e.Status = strconv.Itoa(resp.StatusCode)
	}
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized {
		return e
	}
	reason := store.AuthDenied
	if resp.StatusCode == http.StatusUnauthorized {
		reason = store.AuthMissing
		if h.user != nil || h.base.RawQuery != "" {
			reason = store.AuthInvalid
		}
	}
	return &store.AuthError{
		Store: "http", Location: h.Location(key), Key: key, Op: op, Reason: reason,
		Code: "HTTP " + e.Status, Creds: h.credentials(reason),
		MaybeMissing: resp.StatusCode == http.StatusForbidden && s3Style(resp) && op != "list",
		Err:          e,
	}
}

// credentials says which credentials the URL carries: a user part (sent
// as basic authentication), a query (a signed URL or SAS), or none.
func (h *Store) credentials(reason store.AuthReason) store.Credentials {
	switch {
	case h.user != nil:
		return store.Credentials{Source: "basic authentication from the URL's user part", Set: "check the user and password in the URL"}
	case h.base.RawQuery != "":
		return store.Credentials{Source: "the URL's query (a signed URL or SAS)", Set: "check that the query's signature is current and grants reading and listing"}
	}
	c := store.Credentials{Source: "none (http(s) reads anonymously)"}
	if reason == store.AuthMissing {
		c.Set = "the server asks for credentials: put user:password in the URL, or read the bucket through s3://, gs:// or azblob:// with credentials"
	} else {
		c.Set = "check that the repository is published there and readable without credentials, or read the bucket through s3://, gs:// or azblob:// with credentials"
	}
	return c
}

// s3Style reports whether a 403 response came from S3 or an S3-compatible
// server (its request-id headers, or an XML error body naming
// AccessDenied, which the caller has not read yet: only the headers and
// Content-Type are looked at, and the body's first 1 KiB).
func s3Style(resp *http.Response) bool {
	if resp.Header.Get("x-amz-request-id") != "" || resp.Header.Get("x-amz-id-2") != "" {
		return true
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/xml" && mt != "text/xml" {
		return false
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return strings.Contains(string(b), "<Code>AccessDenied</Code>")
}

// readError is statusError for a read or stat: an S3-style 403 is
// store.ErrNotExist when store.WitnessKey reads with the same URL
// (hiddenMissing).
func (h *Store) readError(ctx context.Context, key, op string, resp *http.Response) error {
	err := h.statusError(key, op, resp)
	if ae, ok := err.(*store.AuthError); ok && ae.MaybeMissing && h.hiddenMissing(ctx, key) {
		return fmt.Errorf("%s: %w (the server answered 403, as S3 does for a missing key when the bucket may not be listed; %s reads)", h.Location(key), store.ErrNotExist, store.WitnessKey)
	}
	return err
}

// hiddenMissing tells whether a 403 for key means "no such key": true when
// store.WitnessKey, which every repository holds, reads (one HEAD, once
// per store; a successful Get of it is remembered too). False for the
// witness itself.
func (h *Store) hiddenMissing(ctx context.Context, key string) bool {
	if key == store.WitnessKey {
		return false
	}
	if h.witnessRead.Load() {
		return true
	}
	resp, err := h.do(ctx, http.MethodHead, store.WitnessKey)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	h.witnessRead.Store(true)
	return true
}

// Get fetches key. The Token is the response's ETag (or Last-Modified); it
// is only informative, since Swap always fails. Errors: store.ErrNotExist (404,
// 410), *store.AuthError (401, 403), *StatusError, store.ErrInvalidKey, a
// short body while reading.
func (h *Store) Get(ctx context.Context, key string) (io.ReadCloser, store.Token, error) {
	if err := store.Begin(ctx, key); err != nil {
		return nil, "", err
	}
	resp, err := h.do(ctx, http.MethodGet, key)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, "", h.readError(ctx, key, "read", resp)
	}
	if key == store.WitnessKey {
		h.witnessRead.Store(true)
	}
	tok := store.Token(resp.Header.Get("ETag"))
	if tok == "" {
		tok = store.Token("last-modified:" + resp.Header.Get("Last-Modified") + ":" + strconv.FormatInt(resp.ContentLength, 10))
	}
	body := io.ReadCloser(&httpBody{rc: resp.Body, want: resp.ContentLength, loc: h.Location(key)})
	if isHTMLType(resp) {
		br := bufio.NewReaderSize(body, htmlSniff)
		head, _ := br.Peek(htmlSniff)
		if looksHTML(head) {
			body.Close()
			return nil, "", &store.HTMLAnswerError{URL: h.Location(key)}
		}
		body = struct {
			io.Reader
			io.Closer
		}{br, body}
	}
	return body, tok, nil
}

// htmlSniff is how many bytes of a text/html answer are looked at.
const htmlSniff = 512

// isHTMLType reports whether a response says it is an HTML page.
func isHTMLType(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// looksHTML reports whether the start of a body is markup (after a BOM
// and white space, a '<'): no object of a repository starts so (records
// and refs are JSON or an id, catalogs and data files binary).
func looksHTML(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] == '<'
}

// httpBody reports a body that ends before its Content-Length clearly.
type httpBody struct {
	rc   io.ReadCloser
	want int64 // -1: unknown
	got  int64
	loc  string
}

func (b *httpBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.got += int64(n)
	if err != nil && err != io.EOF || err == io.EOF && b.want >= 0 && b.got < b.want {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return n, fmt.Errorf("%s: short body: the server sent %d of the %d bytes it announced (Content-Length): %w", b.loc, b.got, b.want, io.ErrUnexpectedEOF)
		}
		return n, fmt.Errorf("%s: read: %w", b.loc, err)
	}
	return n, err
}

func (b *httpBody) Close() error { return b.rc.Close() }

// Stat asks for key's headers (HEAD; GET if the server refuses HEAD). Size
// is Content-Length (-1 if the server does not say), ModTime Last-Modified
// (zero if absent). Errors: as Get.
func (h *Store) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if err := store.Begin(ctx, key); err != nil {
		return store.ObjectInfo{}, err
	}
	resp, err := h.do(ctx, http.MethodHead, key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented {
		if resp, err = h.do(ctx, http.MethodGet, key); err != nil {
			return store.ObjectInfo{}, err
		}
		resp.Body.Close()
	}
	if resp.StatusCode != http.StatusOK {
		return store.ObjectInfo{}, h.readError(ctx, key, "stat", resp)
	}
	if isHTMLType(resp) {
		// Said to be HTML: look at the body (Get refuses an HTML page).
		r, _, err := h.Get(ctx, key)
		if err != nil {
			return store.ObjectInfo{}, err
		}
		r.Close()
	}
	info := store.ObjectInfo{Key: key, Size: resp.ContentLength}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		info.ModTime = t
	}
	return info, nil
}

func (h *Store) readOnly(ctx context.Context, key string) error {
	if err := store.Begin(ctx, key); err != nil {
		return err
	}
	return fmt.Errorf("%s: %w: fdl does not write over http(s); write to the repository's own location (a folder, s3://, gs:// or azblob://) and publish it again", h.Location(key), store.ErrReadOnly)
}

// ReadOnly reports true: fdl never writes over http(s) (store.ReadOnly).
func (h *Store) ReadOnly() bool { return true }

// Create fails with store.ErrReadOnly (store.ErrInvalidKey for an invalid key).
func (h *Store) Create(ctx context.Context, key string, _ io.Reader) error {
	return h.readOnly(ctx, key)
}

// Swap fails with store.ErrReadOnly (store.ErrInvalidKey for an invalid key).
func (h *Store) Swap(ctx context.Context, key string, _ store.Token, _ []byte) (store.Token, error) {
	return "", h.readOnly(ctx, key)
}

// Delete fails with store.ErrReadOnly (store.ErrInvalidKey for an invalid key).
func (h *Store) Delete(ctx context.Context, key string) error {
	return h.readOnly(ctx, key)
}

// listParallel is how many folder listings List fetches at once.
const listParallel = 8

// List walks the server's HTML directory listings under prefix (see HTTP)
// and calls fn in byte order of the keys. A folder that answers 404 lists
// nothing. Errors: store.ErrCannotList when the server does not list folders,
// store.ErrInvalidKey, fn's error, ctx's error, *StatusError.
func (h *Store) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.CheckPrefix(prefix); err != nil {
		return err
	}
	h.listMu.Lock()
	if !h.listChecked {
		if err := h.checkListing(ctx); err != nil && ctx.Err() != nil {
			h.listMu.Unlock()
			return err
		} else {
			h.listChecked, h.listErr = true, err
		}
	}
	h.listMu.Unlock()
	if h.listErr != nil {
		return h.listErr
	}
	var keys []string
	dirs := []string{prefix[:strings.LastIndexByte(prefix, '/')+1]}
	for len(dirs) > 0 {
		type result struct {
			files, dirs []string
			err         error
		}
		results := make([]result, len(dirs))
		sem := make(chan struct{}, listParallel)
		var wg sync.WaitGroup
		for i, d := range dirs {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				f, sub, err := h.listDir(ctx, d)
				results[i] = result{f, sub, err}
			})
		}
		wg.Wait()
		dirs = nil
		for _, r := range results {
			if r.err != nil {
				return r.err
			}
			for _, k := range r.files {
				if strings.HasPrefix(k, prefix) && store.CheckKey(k) == nil {
					keys = append(keys, k)
				}
			}
			for _, d := range r.dirs {
				if strings.HasPrefix(d, prefix) || strings.HasPrefix(prefix, d) {
					if store.CheckKey(strings.TrimSuffix(d, "/")) == nil {
						dirs = append(dirs, d)
					}
				}
			}
		}
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(store.ObjectInfo{Key: k, Size: -1}); err != nil {
			return err
		}
	}
	return nil
}

// checkListing decides once whether the server lists folders: the root's
// listing must link fdl.json (every repository has it).
func (h *Store) checkListing(ctx context.Context) error {
	files, _, err := h.listDir(ctx, "")
	if err != nil && ctx.Err() != nil {
		return err
	}
	if err == nil && slices.Contains(files, "fdl.json") {
		return nil
	}
	why := "its root answers with no HTML listing that links fdl.json"
	if err != nil {
		why = err.Error()
	}
	return fmt.Errorf("%s: %w: the server does not list folders (%s). Reading a version by branch, tag or full id still works; for short ids, 'branch -l', 'tag -l' and 'verify', serve the repository with directory listings on (nginx autoindex, Apache Indexes), or read the bucket through s3://, gs:// or azblob://", h.Location(""), store.ErrCannotList, why)
}

// listDir fetches the listing of folder dir ("" or "a/b/") and returns the
// keys of the files and the folders ("a/b/c/") it links. A 404 is an empty
// folder.
func (h *Store) listDir(ctx context.Context, dir string) (files, dirs []string, err error) {
	resp, err := h.do(ctx, http.MethodGet, dir)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, nil, nil
	case resp.StatusCode != http.StatusOK:
		return nil, nil, h.statusError(dir, "list", resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/html" {
		return nil, nil, fmt.Errorf("%s/: the server answers with %q, not an HTML directory listing", strings.TrimSuffix(h.Location(dir), "/"), mt)
	}
	dirURL, _ := url.Parse(h.url(dir))
	dirURL.RawQuery = ""
	seen := map[string]bool{}
	z := html.NewTokenizer(io.LimitReader(resp.Body, 64<<20))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if err := z.Err(); err != io.EOF {
				return nil, nil, fmt.Errorf("%s: reading the folder listing: %w", h.Location(dir), err)
			}
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if string(name) != "a" || !hasAttr {
			continue
		}
		for {
			k, v, more := z.TagAttr()
			if string(k) == "href" {
				if child, isDir, ok := childOf(dirURL, string(v)); ok && !seen[child] {
					seen[child] = true
					if isDir {
						dirs = append(dirs, dir+child+"/")
					} else {
						files = append(files, dir+child)
					}
				}
			}
			if !more {
				break
			}
		}
	}
	return files, dirs, nil
}

// childOf resolves a link found in the listing of dirURL and returns the
// name of the direct child it points at ("x" for "x" or "x/", isDir for
// the latter); ok is false for links elsewhere (parent, sort links, other
// hosts).
func childOf(dirURL *url.URL, href string) (name string, isDir, ok bool) {
	ref, err := url.Parse(href)
	if err != nil || ref.RawQuery != "" || ref.Fragment != "" && ref.Path == "" {
		return "", false, false
	}
	u := dirURL.ResolveReference(ref)
	if u.Scheme != dirURL.Scheme || u.Host != dirURL.Host || !strings.HasPrefix(u.Path, dirURL.Path) {
		return "", false, false
	}
	rest := strings.TrimPrefix(u.Path, dirURL.Path)
	isDir = strings.HasSuffix(rest, "/")
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || strings.Contains(rest, "/") {
		return "", false, false
	}
	return rest, isDir, true
}

// Backend is the http:// and https:// kind of store for store.Register:
// a read-only *Store on the repository published at the URL.
func Backend() store.Backend {
	return store.Backend{Schemes: []string{"http", "https"}, Forms: []string{"http(s)://"}, Open: openURL}
}
