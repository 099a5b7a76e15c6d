package refs

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Name is a full ref name: "refs/heads/main", "refs/tags/2025-final",
// "refs/requests/fix-1".
type Name string

// Ref name prefixes (docs/spec.md §refs).
const (
	HeadsPrefix    = "refs/heads/"
	TagsPrefix     = "refs/tags/"
	RequestsPrefix = "refs/requests/"
	// HeadKey is the store key of HEAD ("ref: refs/heads/main\n").
	HeadKey = "HEAD"
	// Tombstone is the content of a deleted ref.
	Tombstone = "deleted\n"
)

// Kind is what a ref is: a branch, a tag or a request.
type Kind string

// The kinds of ref, by prefix.
const (
	KindBranch  Kind = "branch"
	KindTag     Kind = "tag"
	KindRequest Kind = "request"
	// KindOther: a ref under refs/ outside heads/, tags/ and requests/
	// (written by hand or by another tool); fdl keeps what it names and
	// never creates one.
	KindOther Kind = "ref"
)

// Short returns the name without its "refs/heads/", "refs/tags/" or
// "refs/requests/" prefix.
func (n Name) Short() string {
	for _, p := range []string{HeadsPrefix, TagsPrefix, RequestsPrefix} {
		if strings.HasPrefix(string(n), p) {
			return strings.TrimPrefix(string(n), p)
		}
	}
	return string(n)
}

// IsBranch reports whether n is under refs/heads/.
func (n Name) IsBranch() bool { return strings.HasPrefix(string(n), HeadsPrefix) }

// IsTag reports whether n is under refs/tags/.
func (n Name) IsTag() bool { return strings.HasPrefix(string(n), TagsPrefix) }

// Kind returns KindBranch, KindTag, KindRequest or KindOther.
func (n Name) Kind() Kind {
	switch {
	case n.IsBranch():
		return KindBranch
	case n.IsTag():
		return KindTag
	case n.IsRequest():
		return KindRequest
	default:
		return KindOther
	}
}

// IsRequest reports whether n is under refs/requests/.
func (n Name) IsRequest() bool { return strings.HasPrefix(string(n), RequestsPrefix) }

// Branch returns refs/heads/<short> after checking the name.
func Branch(short string) (Name, error) { return named(HeadsPrefix, KindBranch, short) }

// Tag returns refs/tags/<short> after checking the name.
func Tag(short string) (Name, error) { return named(TagsPrefix, KindTag, short) }

// Request returns refs/requests/<short> after checking the name.
func Request(short string) (Name, error) { return named(RequestsPrefix, KindRequest, short) }

func named(prefix string, kind Kind, short string) (Name, error) {
	if err := CheckShort(short); err != nil {
		return "", fmt.Errorf("%s name %q: %w", kind, short, err)
	}
	return Name(prefix + short), nil
}

// candidates returns the full names a short name can mean, in the order a
// revision tries them: branch, tag, request. A name beginning with "refs/"
// is only itself.
func candidates(s string) []Name {
	if strings.HasPrefix(s, "refs/") {
		return []Name{Name(s)}
	}
	return []Name{Name(HeadsPrefix + s), Name(TagsPrefix + s), Name(RequestsPrefix + s)}
}

// CheckShort checks a short ref name with Git's rules (git check-ref-format)
// plus fdl's own: valid UTF-8 (a store key and the JSON of a ref log entry
// hold the name), no '@' (it separates a branch from a seq in revisions), no
// '~' or ':' (revision syntax), not HEAD or refs/…, no leading '-' (it
// would read as a flag), and not only hex digits and dashes (it would hide
// a version id: full-length hex ids are refused here; a shorter hex name
// is refused by Manager.CheckNewName when it is a prefix of an existing
// id). Errors: ErrInvalidName wrapped with the rule broken.
func CheckShort(s string) error {
	bad := func(why string) error { return fmt.Errorf("%s: %w", why, ErrInvalidName) }
	switch {
	case s == "":
		return bad("the name is empty")
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/"):
		return bad("a name may not begin or end with '/'")
	case strings.Contains(s, "//"):
		return bad("a name may not contain '//'")
	case strings.Contains(s, ".."):
		return bad("a name may not contain '..'")
	case strings.HasSuffix(s, "."):
		return bad("a name may not end with '.'")
	case len(s) > 200:
		return bad("a name may be at most 200 bytes")
	case !utf8.ValidString(s):
		return bad("a name must be valid UTF-8 (store keys and ref log entries are)")
	case !norm.NFC.IsNormalString(s):
		return bad(fmt.Sprintf("a name must be in Unicode NFC, the composed form (write it %q): two spellings of one name would be two refs that print alike", norm.NFC.String(s)))
	case s == "HEAD" || strings.HasPrefix(s, "refs/"):
		return bad("HEAD and names beginning with 'refs/' are reserved")
	case strings.HasPrefix(s, "-"):
		return bad("a name may not begin with '-'")
	case LooksLikeID(s) && len(strings.ReplaceAll(s, "-", "")) == 32:
		return bad("a name shaped like a version id would hide that version")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return bad(fmt.Sprintf("a name may not contain spaces or control characters (found %q)", r))
		}
		if strings.ContainsRune(`~^:?*[\@`, r) {
			return bad(fmt.Sprintf("a name may not contain %q", r))
		}
	}
	for _, el := range strings.Split(s, "/") {
		if strings.HasPrefix(el, ".") {
			return bad("a name element may not begin with '.'")
		}
		if strings.HasSuffix(el, ".lock") {
			return bad("a name element may not end with '.lock'")
		}
	}
	return nil
}

// HeadContent returns what HEAD holds when it names branch n.
func HeadContent(n Name) []byte { return []byte("ref: " + string(n) + "\n") }

// LooksLikeID reports whether s could be read as a version id or prefix: at
// least 4 hex digits and nothing but hex digits and dashes.
func LooksLikeID(s string) bool {
	digits := 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			digits++
		case c == '-':
		default:
			return false
		}
	}
	return digits >= 4
}
