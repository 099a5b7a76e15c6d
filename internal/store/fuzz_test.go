package store_test

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fdl-dev/fdl/internal/store"
)

// FuzzCheckKey: CheckKey, CheckPrefix and CheckElement keep the key rules
// of the package doc, checked here one by one: a key CheckKey accepts
// breaks none; every key is a valid List prefix, and so is its folder
// (the key and a slash); a name without a slash is a valid element
// exactly when it is a valid key; a prefix CheckPrefix accepts is a run
// of valid elements and the start of one.
func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"refs/heads/main", "versions/0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f/version.json", "data/main/t/f ü.parquet",
		"", "/a", "a/", "a//b", "a/./b", "a/../b", "refs/heads/main.lock", "versions/.tmp-1", "a\\b", "a\x01b", "a\x7fb", "\xff",
		".hidden", "x.locked", "versions/01", "refs/", strings.Repeat("k", 1024), strings.Repeat("k", 1025)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kerr := store.CheckKey(s)
		perr := store.CheckPrefix(s)
		for _, err := range []error{kerr, perr, store.CheckElement(s)} {
			if err != nil && !errors.Is(err, store.ErrInvalidKey) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidKey", s, err)
			}
		}
		if kerr == nil {
			if why := breaksKeyRule(s); why != "" {
				t.Fatalf("CheckKey accepted %q, which %s", s, why)
			}
			if perr != nil {
				t.Fatalf("key %q is not a valid prefix: %v", s, perr)
			}
			if len(s) < store.MaxKeyLen {
				if err := store.CheckPrefix(s + "/"); err != nil {
					t.Fatalf("the folder %q of a valid key is not a valid prefix: %v", s+"/", err)
				}
			}
		}
		if !strings.Contains(s, "/") && (store.CheckElement(s) == nil) != (kerr == nil) {
			t.Fatalf("%q: CheckElement says %v, CheckKey %v", s, store.CheckElement(s), kerr)
		}
		if perr == nil && s != "" {
			if i := strings.LastIndexByte(s, '/'); i >= 0 {
				if err := store.CheckKey(s[:i]); err != nil {
					t.Fatalf("CheckPrefix accepted %q, whose folder %q is no valid key: %v", s, s[:i], err)
				}
			}
			if s[0] == '/' || !utf8.ValidString(s) || len(s) > store.MaxKeyLen {
				t.Fatalf("CheckPrefix accepted %q", s)
			}
		}
	})
}

// breaksKeyRule says which key rule s breaks, "" if none.
func breaksKeyRule(s string) string {
	switch {
	case s == "" || len(s) > store.MaxKeyLen:
		return "is empty or too long"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }):
		return "holds a control character or a backslash"
	case s[0] == '/' || s[len(s)-1] == '/':
		return "begins or ends with a slash"
	}
	for _, el := range strings.Split(s, "/") {
		if el == "" || el == "." || el == ".." || strings.HasSuffix(el, store.LockSuffix) || strings.HasPrefix(el, store.TempPrefix) {
			return "has an empty, '.' or '..' element, or one a folder store keeps for itself"
		}
	}
	return ""
}

// redactSchemes are the schemes FuzzRedactURL builds URLs with, and
// redactKeys the query parameters: all but the last name a credential.
var (
	redactSchemes = []string{"s3://", "gs://", "azblob://", "https://", "http://", "s3:/", "s3:", "gs//", "ftp://", "file:///"}
	redactKeys    = []string{"sig", "X-Amz-Signature", "sas_token", "secret_access_key", "AccountKey", "password", "auth", "sv%5Ftoken", "region"}
)

// FuzzRedactURL: a credential put into a store URL — the password of its
// user part (as written, unescaped; or escaped as net/url writes it), a
// user name alone, or the value of a query parameter whose name says it
// is a credential — never appears in RedactURL's output, nor in any error
// of Open or in the URL Open hands a backend for its messages; the URL
// Open's backend receives is the URL as parsed. Credentials are wrapped in
// "Z…9" so that they cannot occur in a message by chance; ones holding
// "x" (the "xxxxx" RedactURL writes could spell them) or shorter than 3
// bytes (RedactURL keeps those, as its doc says) are not checked.
func FuzzRedactURL(f *testing.F) {
	for _, c := range []struct {
		scheme             uint8
		user, secret, rest string
		key, mode          uint8
	}{
		{0, "user", "pw123", "bucket/p", 0, 0},
		{0, "user", "pw/123", "bucket/p", 0, 0},
		{0, "user", "pw?123", "bucket/p?region=x", 0, 0},
		{5, "user", "pw123", "bucket/p", 0, 0},
		{3, "", "tok123", "host/p", 0, 2},
		{0, "", "abc123", "b/p", 0, 1},
		{2, "", "abc/123", "c/p", 2, 1},
		{0, "", "abc123", "b/p?x=a@b", 3, 1},
		{0, "u", "p@ss:w%rd#1", "b/p#frag", 0, 3},
		{8, "u", "a b&c=d", "host/x", 7, 1},
	} {
		f.Add(c.scheme, c.user, c.secret, c.rest, c.key, c.mode)
	}
	registerThree()
	store.Register(fake("cloud", []string{"s3", "gs", "azblob"}, []string{"s3://"}))
	f.Fuzz(func(t *testing.T, scheme uint8, user, secret, rest string, key, mode uint8) {
		prefix := redactSchemes[int(scheme)%len(redactSchemes)]
		secret = "Z" + secret + "9"
		raw, spelled, ok := redactCase(prefix, user, secret, rest, key, mode)
		if !ok {
			return
		}
		if strings.ContainsRune(secret, 'x') || len(secret) < 3 {
			return // RedactURL leaves values under 3 bytes (its doc)
		}
		words := append([]string{secret}, spelled...)
		shows := func(what, text string) {
			t.Helper()
			for _, w := range words {
				if strings.Contains(text, w) {
					t.Fatalf("%s of %q shows the credential %q: %q", what, raw, w, text)
				}
			}
		}
		if len(spelled) == 0 {
			words = nil
		}
		shows("RedactURL", store.RedactURL(raw))
		s, err := store.Open(t.Context(), raw)
		if err != nil {
			shows("Open's error", err.Error())
			return
		}
		fs := s.(*fakeStore)
		if fs.u.Scheme == "" {
			return // a plain folder path: no URL, nothing to redact
		}
		shows("the URL Open gives the backend for messages", fs.redacted)
		u, perr := url.Parse(raw)
		if perr != nil || u.String() != fs.u.String() {
			t.Fatalf("Open(%q) gave the backend %q, url.Parse %v %v", raw, fs.u, u, perr)
		}
	})
}

// redactCase is the store URL FuzzRedactURL checks: secret put into
// prefix (a scheme and "://") and rest as mode says (mode%4: 0 user and
// password as written, 1 the query parameter redactKeys[key] escaped, 2 a
// user name alone, 3 user and password escaped as net/url writes them),
// and the spellings of secret that raw holds (none for a region, which is
// no credential). ok is false for a case that cannot be made (a user name
// alone that would not read as one).
func redactCase(prefix, user, secret, rest string, key, mode uint8) (raw string, spelled []string, ok bool) {
	switch mode % 4 {
	case 0: // user:password@, as written
		raw = prefix + user + ":" + secret + "@" + rest
		spelled = []string{secret}
	case 1: // a credential in the query, escaped
		k := redactKeys[int(key)%len(redactKeys)]
		v := url.QueryEscape(secret)
		raw = prefix + rest + "?a=1&" + k + "=" + v
		if k == "region" {
			spelled = nil
		} else {
			spelled = []string{v}
		}
	case 2: // a user name alone: "token@host"
		auth, _, _ := strings.Cut(rest, "/")
		if strings.ContainsAny(secret, "/:?#") || strings.Contains(auth, "@") {
			// Not a user name alone: "tok@:pw@host" has a password, and
			// in "s3://a#b@host" the user part would end at the "#".
			return "", nil, false
		}
		raw = prefix + secret + "@" + rest
		spelled = []string{secret}
	case 3: // user:password@, escaped as net/url writes it
		up := url.UserPassword(user, secret).String()
		raw = prefix + up + "@" + rest
		_, p, _ := strings.Cut(up, ":")
		spelled = []string{p}
	}
	return raw, spelled, true
}

// uriScheme is RFC 3986's scheme, then "://".
var uriScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// FuzzOpen: Open never panics, and splits what it is given the way
// LooksLikeURL tells callers to: text with a scheme and "://" reaches
// that scheme's backend as net/url parses it (or is refused); other text
// that Open takes reaches the folder backend as a path exactly as given,
// and is then text LooksLikeURL says is no URL (a caller may join it to a
// folder); what LooksLikeURL calls a URL never opens as a folder.
func FuzzOpen(f *testing.F) {
	for _, s := range []string{"relative/dir", "/abs/dir", "file:///abs/dir", "FILE:///abs/dir", "mem://x", "https://u:secret@host/p",
		"http://host/p", "s3://b/p?region=x", "s3:/b/p", "s3:b", "gs//b", "./s3:/b", "C:/x", `c:\x`, "data//x", "ftp://h/x", "",
		"weird+scheme://x", "s3://b/%zz", "a:b", "ab:/c", "s3://[::1", "-x"} {
		f.Add(s)
	}
	registerThree()
	store.Register(fake("cloud", []string{"s3", "gs", "azblob"}, []string{"s3://"}))
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := store.Open(t.Context(), raw)
		looks := store.LooksLikeURL(raw)
		m := uriScheme.FindStringSubmatch(raw)
		hasScheme := m != nil
		if hasScheme && !looks {
			t.Fatalf("LooksLikeURL(%q) is false, but it has a scheme", raw)
		}
		if err != nil {
			return
		}
		fs := s.(*fakeStore)
		if fs.u.Scheme == "" {
			if hasScheme || looks || fs.kind != "folder" || fs.u.Path != raw || fs.redacted != raw {
				t.Fatalf("Open(%q) reached %s with path %q (LooksLikeURL %v)", raw, fs.kind, fs.u.Path, looks)
			}
			return
		}
		u, perr := url.Parse(raw)
		if !hasScheme || perr != nil || u.String() != fs.u.String() || !strings.EqualFold(u.Scheme, m[1]) {
			t.Fatalf("Open(%q) reached %s with %q; url.Parse gives %v, %v", raw, fs.kind, fs.u, u, perr)
		}
	})
}
