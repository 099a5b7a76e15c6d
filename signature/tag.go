package signature

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TagPayloadHeader is the first line of a tag signature payload, without
// its newline: the payload's name and version.
const TagPayloadHeader = "fdl-tag-signature 1"

// Limits on a payload's fields, in bytes.
const (
	maxRepositoryID = 128
	maxTagName      = 200 // the longest ref name short form fdl accepts
)

// TagPayload is what a tag's signature is made over: the repository, the
// tag and the version it names. Signing these three together, rather
// than the version's record alone, is what stops a tag signature from
// being replayed onto another tag name or into another repository.
type TagPayload struct {
	// Repository is the repository's id: 1 to 128 bytes of printable
	// ASCII (0x21–0x7e).
	Repository string
	// Tag is the tag's short name, without "refs/tags/": 1 to 200 bytes of
	// UTF-8 with no white space or control character.
	Tag string
	// Version is the version id the tag names, in the canonical form of
	// docs/spec.md §3 (lower-case hex, 8-4-4-4-12).
	Version string
}

// Marshal returns the payload's bytes, exactly:
//
//	fdl-tag-signature 1\n
//	repository <Repository>\n
//	tag <Tag>\n
//	version <Version>\n
//
// Fields that break the rules of TagPayload are a *TagPayloadError
// (ErrTagPayload).
func (p TagPayload) Marshal() ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	return []byte(TagPayloadHeader + "\n" +
		"repository " + p.Repository + "\n" +
		"tag " + p.Tag + "\n" +
		"version " + p.Version + "\n"), nil
}

// ParseTagPayload reads bytes Marshal wrote and refuses anything else
// (*TagPayloadError, ErrTagPayload): another header, lines missing, out of
// order, repeated or added, CR line ends, no final newline, or fields
// that break TagPayload's rules. Parsing b and marshalling the result
// gives b again.
func ParseTagPayload(b []byte) (TagPayload, error) {
	bad := func(format string, args ...any) (TagPayload, error) {
		return TagPayload{}, &TagPayloadError{Reason: fmt.Sprintf(format, args...)}
	}
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		return bad("it does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if lines[0] != TagPayloadHeader {
		return bad("its first line is %.40q, not %q", lines[0], TagPayloadHeader)
	}
	if len(lines) != 4 {
		return bad("it has %d lines, not 4 (header, repository, tag, version)", len(lines))
	}
	var p TagPayload
	for i, f := range []struct {
		name string
		dst  *string
	}{{"repository", &p.Repository}, {"tag", &p.Tag}, {"version", &p.Version}} {
		v, ok := strings.CutPrefix(lines[i+1], f.name+" ")
		if !ok {
			return bad("line %d is %.40q, not %q and a value", i+2, lines[i+1], f.name)
		}
		*f.dst = v
	}
	if err := p.validate(); err != nil {
		return TagPayload{}, err
	}
	return p, nil
}

func (p TagPayload) validate() error {
	bad := func(format string, args ...any) error {
		return &TagPayloadError{Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case p.Repository == "" || len(p.Repository) > maxRepositoryID:
		return bad("the repository id must be 1 to %d bytes, not %d", maxRepositoryID, len(p.Repository))
	case strings.IndexFunc(p.Repository, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0:
		return bad("the repository id %.40q holds a character other than printable ASCII", p.Repository)
	case p.Tag == "" || len(p.Tag) > maxTagName:
		return bad("the tag name must be 1 to %d bytes, not %d", maxTagName, len(p.Tag))
	case !utf8.ValidString(p.Tag):
		return bad("the tag name %.40q is not UTF-8", p.Tag)
	case strings.IndexFunc(p.Tag, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return bad("the tag name %.40q holds white space or a control character", p.Tag)
	case strings.HasPrefix(p.Tag, "refs/"):
		return bad("the tag name %.40q must be the short name, without refs/tags/", p.Tag)
	case !canonicalID(p.Version):
		return bad("the version %.40q is not a version id in canonical form (lower-case hex, 8-4-4-4-12)", p.Version)
	}
	return nil
}

// canonicalID reports whether s is a UUID in canonical lower-case form.
func canonicalID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}
