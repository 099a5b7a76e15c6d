package store

import (
	"net/url"
	"regexp"
	"strings"
)

// Credentials never appear in any output (errors, messages, JSON): a store
// URL may carry a password in its user part ("s3://user:secret@bucket/p")
// or a credential in its query ("?sig=…", "?secret_access_key=…"), and
// messages quote URLs only through RedactURL, whether url.Parse accepts
// them or not.

// secretQueryWords mark a query parameter whose value is a credential:
// a parameter whose name contains one of them (case-insensitively) is
// hidden. The list errs on the side of hiding: "key" hides "sas_key",
// "access_key_id" and "accountkey" alike.
var secretQueryWords = []string{"secret", "password", "passwd", "pwd", "token", "sig", "key", "credential", "auth"}

// authorityRE matches a URL's scheme and the slashes after it, in a URL
// ("s3://") or a mistyped one ("s3:/", "s3:", "s3//").
var authorityRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*(?::[/\\]*|//)`)

// Redacted is what RedactURL writes in place of a credential.
const Redacted = "xxxxx"

// RedactURL returns raw with every credential it may carry replaced by
// "xxxxx": the password of its user part, or a user name alone
// ("user:xxxxx@", "xxxxx@"), with the user part read both as url.Parse
// reads it (up to the last "@" before the first "/") and, for a URL that
// does not parse, up to the last "@" before the path; and the value of
// every parameter after the first "?" (in the query or the fragment) whose
// name suggests a credential (secretQueryWords). Anything else is kept as
// given, so the person reading the message recognises the URL. A plain
// folder path is returned unchanged.
func RedactURL(raw string) string {
	for _, s := range URLSecrets(raw) {
		raw = strings.ReplaceAll(raw, s, Redacted)
	}
	return raw
}

// URLSecrets returns the credentials raw carries (see RedactURL), each in
// the exact spelling raw holds it (escaped or not), longest first, so a
// caller can remove them from any text that may quote them, such as a
// parser's error. Values shorter than 3 bytes are not returned: replacing
// them everywhere would garble the message and they protect nothing.
func URLSecrets(raw string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 3 {
			out = append(out, s)
		}
	}
	// The part after the scheme, also in a mistyped URL ("s3:/u:p@b").
	m := authorityRE.FindStringIndex(raw)
	if m == nil {
		return nil
	}
	rest := raw[m[1]:]
	userPart := func(user string) {
		if c := strings.IndexByte(user, ':'); c >= 0 {
			// "user:password@"; url.Parse's errors quote a password cut
			// at its first "/", "?" or "#" as the host's port.
			pw := user[c+1:]
			add(pw)
			if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
				add(dec)
			}
			if i := strings.IndexAny(pw, "/?#"); i > 0 {
				add(pw[:i])
			}
		} else if !strings.Contains(user, "/") {
			// "token@host": a user name alone may be a credential too.
			add(user)
		}
	}
	// The user part ends at the last "@" before the path, which may be
	// either of two: as url.Parse reads it, the authority ends at the
	// first "/", "?" or "#" (an "@" after it is in the path: "tok@b/p@x");
	// but a password may hold "/" or "?" when it was not escaped, which is
	// exactly when url.Parse refuses the URL, so the last "@" that could
	// close a user part counts too. Both readings are hidden.
	auth := rest
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		userPart(auth[:at])
	}
	if at := strings.LastIndexByte(beforeQuery(rest), '@'); at >= 0 {
		userPart(rest[:at])
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		// Everything after the first "?" is read as parameters, the
		// fragment and any further "?" included ("?a=1#x?sig=…" holds a
		// signature too, whatever a URL parser makes of it).
		query := rest[q+1:]
		for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' || r == '#' || r == '?' }) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !secretName(k) {
				continue
			}
			add(v)
			if dec, err := url.QueryUnescape(v); err == nil && dec != v {
				add(dec)
			}
		}
	}
	// Longest first: a secret that holds another is replaced whole.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// beforeQuery returns s up to its first "?" or "#" that comes after the
// last "@" (a "?" inside an unescaped password is part of the user part).
func beforeQuery(s string) string {
	at := strings.LastIndexByte(s, '@')
	if i := strings.IndexAny(s[max(at, 0):], "?#"); i >= 0 {
		return s[:max(at, 0)+i]
	}
	return s
}

// secretName reports whether a query parameter's name suggests that its
// value is a credential.
func secretName(k string) bool {
	if dec, err := url.QueryUnescape(k); err == nil {
		k = dec
	}
	k = strings.ToLower(k)
	for _, w := range secretQueryWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// redactText removes from text every credential raw carries.
func redactText(text, raw string) string {
	for _, s := range URLSecrets(raw) {
		text = strings.ReplaceAll(text, s, Redacted)
	}
	return text
}
