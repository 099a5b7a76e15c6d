// Package lockfile reads and writes a consumer project's lockfile,
// fdl.lock: the versions of fdl repositories the project reads, pinned by
// name, in a TOML file made to be committed and reviewed in a diff
// (docs/spec.md §21 defines the format).
//
// A File holds pins; Load and Parse read one, Save and Marshal write one.
// The bytes written depend only on the pins (names sorted, fields in a
// fixed order, one header comment), so reading a file fdl wrote and
// writing it again gives the same bytes, and changing one pin changes only
// that pin's lines. Comments and layout edited by hand are not kept.
//
// TOML is parsed by github.com/BurntSushi/toml; every value is then checked
// here, and any error names the file, the pin and the field.
package lockfile

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// FileName is the lockfile's name: Find looks for it.
const FileName = "fdl.lock"

// Format is the format number this package reads and writes (the
// top-level `version` key). A reader refuses a larger number.
const Format = 1

// MaxNameLen is the longest pin name, in bytes.
const MaxNameLen = 100

// Errors, each wrapped with the file, pin and field it concerns.
var (
	// ErrNotFound: Find found no fdl.lock in the folder or any parent.
	ErrNotFound = errors.New("no lockfile found")
	// ErrInvalid: a lockfile, a pin or a pin name breaks a rule of the
	// format (docs/spec.md §21). Errors of this kind are *InvalidError.
	ErrInvalid = errors.New("invalid lockfile")
	// ErrUnsupportedFormat: the file's `version` is larger than Format,
	// written by a newer fdl.
	ErrUnsupportedFormat = errors.New("lockfile written by a newer fdl")
)

// InvalidError is a rule of the format broken: in File (a path, or the
// name Parse was given), in pin Pin ("" for the file as a whole), at field
// Field ("" for the pin or file as a whole). errors.Is(err, ErrInvalid)
// holds for every InvalidError.
type InvalidError struct {
	File   string
	Pin    string
	Field  string
	Reason string // what is wrong, in words
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Pin != "" {
		fmt.Fprintf(&b, "pin %q: ", e.Pin)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Pin is one pinned version: where its repository is, the ref it follows,
// and the version with its catalog's size and digest, as the version's
// record gives them (docs/spec.md §6).
type Pin struct {
	// Repository is the repository as the file holds it: a store URL
	// (scheme://…, kept as given) or a folder path with "/" separators,
	// relative to the lockfile's folder unless absolute. RepositoryURL
	// resolves it; StoredRepository makes it from a location.
	Repository string
	// Ref is the full ref the pin follows ("refs/heads/main",
	// "refs/tags/2026-q1"), or "" when it was pinned by version id and
	// follows none.
	Ref refs.Name
	// Version is the pinned version's id.
	Version version.ID
	// Seq is the version's seq (docs/spec.md §3), ≥ 1.
	Seq int64
	// CatalogSize is the size of the version's frozen catalog, in bytes.
	CatalogSize int64
	// CatalogSHA256 is the catalog's SHA-256, 64 lower-case hex digits.
	CatalogSHA256 string
}

// Field names of a pin, in the order they are written.
const (
	fieldRepository = "repository"
	fieldRef        = "ref"
	fieldVersion    = "version"
	fieldSeq        = "seq"
	fieldSize       = "catalog_size"
	fieldSHA256     = "catalog_sha256"
)

var pinFields = []string{fieldRepository, fieldRef, fieldVersion, fieldSeq, fieldSize, fieldSHA256}

// Validate checks every field of p: a repository that is non-empty, holds
// no control character and carries no credential (the file is committed);
// a ref under refs/heads/ or refs/tags/ with a valid name, or none; a
// canonical UUIDv7 version id; seq ≥ 1; catalog size ≥ 0; a digest of 64
// lower-case hex digits. Errors: *InvalidError naming the field.
func (p Pin) Validate() error {
	bad := func(field, format string, a ...any) error {
		return &InvalidError{Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case p.Repository == "":
		return bad(fieldRepository, "empty: give the repository's URL or folder path")
	case !utf8.ValidString(p.Repository):
		return bad(fieldRepository, "not valid UTF-8")
	case strings.IndexFunc(p.Repository, isControl) >= 0:
		return bad(fieldRepository, "holds a control character")
	case len(store.URLSecrets(p.Repository)) > 0:
		return bad(fieldRepository, "%q carries a credential, and a lockfile is made to be committed: give credentials through the environment instead", store.RedactURL(p.Repository))
	}
	if p.Ref != "" {
		if err := checkRef(p.Ref); err != nil {
			return bad(fieldRef, "%v", err)
		}
	}
	if _, err := version.ParseID(string(p.Version)); err != nil {
		return bad(fieldVersion, "%q is not a version id (a UUIDv7 in lower case, as version.json's id)", p.Version)
	}
	if p.Seq < 1 {
		return bad(fieldSeq, "%d: a version's seq is 1 or more", p.Seq)
	}
	if p.CatalogSize < 0 {
		return bad(fieldSize, "%d: a size in bytes is never negative", p.CatalogSize)
	}
	if !IsSHA256(p.CatalogSHA256) {
		return bad(fieldSHA256, "%q is not a SHA-256 digest (64 lower-case hex digits)", p.CatalogSHA256)
	}
	return nil
}

// checkRef checks that r is a branch or tag with a valid short name.
func checkRef(r refs.Name) error {
	if !r.IsBranch() && !r.IsTag() {
		return fmt.Errorf("%q: a pin follows a branch (refs/heads/…) or a tag (refs/tags/…), named in full", r)
	}
	if err := refs.CheckShort(r.Short()); err != nil {
		return fmt.Errorf("%q: %w", r, err)
	}
	return nil
}

// IsSHA256 reports whether s is a SHA-256 digest as fdl writes it: 64
// lower-case hex digits.
func IsSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// CheckName checks a pin name: 1 to MaxNameLen bytes of ASCII letters,
// digits, '-' and '_' (a TOML bare key, so the file never quotes it), not
// beginning with '-' (a command line would read it as a flag).
// Errors: *InvalidError naming the pin.
func CheckName(name string) error {
	bad := func(why string) error { return &InvalidError{Pin: name, Reason: "bad pin name: " + why} }
	if name == "" {
		return &InvalidError{Reason: "bad pin name: the name is empty"}
	}
	if len(name) > MaxNameLen {
		return bad(fmt.Sprintf("%d bytes, at most %d", len(name), MaxNameLen))
	}
	if name[0] == '-' {
		// "fdl lock remove -x" would read it as a flag, and so would
		// every hint that names the pin.
		return bad("a name may not begin with '-' (it would read as a flag)")
	}
	for _, r := range name {
		if !isBare(r) {
			return bad(fmt.Sprintf("%q is not allowed: use letters, digits, '-' and '_'", r))
		}
	}
	return nil
}

func isBare(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// File is a lockfile's content: its pins by name. The zero value is not
// ready to use; call New.
type File struct {
	pins map[string]Pin
}

// New returns a File with no pins.
func New() *File { return &File{pins: map[string]Pin{}} }

// Pin returns the pin called name and whether it exists.
func (f *File) Pin(name string) (Pin, bool) {
	p, ok := f.pins[name]
	return p, ok
}

// Names returns the pins' names, sorted (byte order, as the file lists
// them).
func (f *File) Names() []string { return slices.Sorted(maps.Keys(f.pins)) }

// Len returns the number of pins.
func (f *File) Len() int { return len(f.pins) }

// Set adds the pin name, or replaces it. Errors: *InvalidError from
// CheckName or Pin.Validate (the pin and field named); f is then unchanged.
func (f *File) Set(name string, p Pin) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			ie.Pin = name
		}
		return err
	}
	f.pins[name] = p
	return nil
}

// Delete removes the pin name and reports whether it was there.
func (f *File) Delete(name string) bool {
	_, ok := f.pins[name]
	delete(f.pins, name)
	return ok
}

// header opens every file fdl writes.
const header = `# fdl.lock: the versions of fdl repositories this project reads, pinned.
# Written by ` + "`fdl lock`" + `; commit it. Format: fdl's docs/spec.md, "The lockfile".
`

// tomlPin is a pin as the encoder writes it: the fields in their order,
// ref left out when the pin follows none.
type tomlPin struct {
	Repository    string `toml:"repository"`
	Ref           string `toml:"ref,omitempty"`
	Version       string `toml:"version"`
	Seq           int64  `toml:"seq"`
	CatalogSize   int64  `toml:"catalog_size"`
	CatalogSHA256 string `toml:"catalog_sha256"`
}

// Marshal returns the file's bytes: the header comment, `version = 1`,
// then one `[pin.NAME]` table per pin in name order, each preceded by a
// blank line, fields in the order repository, ref, version, seq,
// catalog_size, catalog_sha256. Strings are TOML basic strings ("…") as
// the TOML encoder escapes them. Errors: the encoder's, which pins checked
// by Set or Parse never meet.
func (f *File) Marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	fmt.Fprintf(&b, "version = %d\n", Format)
	for _, name := range f.Names() {
		p := f.pins[name]
		fmt.Fprintf(&b, "\n[pin.%s]\n", name) // names are bare keys (CheckName)
		enc := toml.NewEncoder(&b)
		if err := enc.Encode(tomlPin{
			Repository: p.Repository, Ref: string(p.Ref), Version: string(p.Version),
			Seq: p.Seq, CatalogSize: p.CatalogSize, CatalogSHA256: p.CatalogSHA256,
		}); err != nil {
			return nil, fmt.Errorf("encode pin %q: %w", name, err)
		}
	}
	return b.Bytes(), nil
}

// Parse reads a lockfile's bytes; name is the file named in errors (its
// path). It checks, in this order: the text is TOML; `version` is an
// integer, at most Format (else ErrUnsupportedFormat, before anything else
// is checked: a newer format may hold what this one refuses); no top-level
// key but `version` and `pin`; each pin name (CheckName); in each pin, no
// field but the six of the format, each of its TOML type, and the pin's
// values (Pin.Validate). Errors: *InvalidError (ErrInvalid) naming the file,
// pin and field; ErrUnsupportedFormat wrapped with the file and number.
// Bytes that are not UTF-8 are refused first.
func Parse(data []byte, name string) (*File, error) {
	bad := func(pin, field, format string, a ...any) error {
		return &InvalidError{File: name, Pin: pin, Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	if !utf8.Valid(data) {
		// The TOML parser takes a UTF-16 byte order mark and what follows
		// it for text; a lockfile is UTF-8 (docs/spec.md §21).
		return nil, bad("", "", "not UTF-8 text (line %d): a lockfile is TOML in UTF-8", bytes.Count(data[:firstInvalid(data)], []byte("\n"))+1)
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, bad("", "", "not valid TOML: line %d: %s", errorLine(data, pe.Position), pe.Message)
		}
		return nil, bad("", "", "not valid TOML: %v", err)
	}
	v, ok := doc["version"]
	if !ok {
		return nil, bad("", "version", "missing: a lockfile begins with `version = %d`", Format)
	}
	n, ok := v.(int64)
	if !ok {
		return nil, bad("", "version", "%s, not an integer", tomlType(v))
	}
	if n > Format {
		return nil, fmt.Errorf("%s: format version %d, this fdl reads up to %d: %w", name, n, Format, ErrUnsupportedFormat)
	}
	if n < 1 {
		return nil, bad("", "version", "%d: the format version is 1 or more", n)
	}
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if k != "version" && k != "pin" {
			return nil, bad("", "", "unknown key %q: a lockfile holds `version` and [pin.NAME] tables", k)
		}
	}
	f := New()
	if doc["pin"] == nil {
		return f, nil
	}
	pins, ok := doc["pin"].(map[string]any)
	if !ok {
		return nil, bad("", "pin", "%s, not a table of [pin.NAME] tables", tomlType(doc["pin"]))
	}
	for _, pname := range slices.Sorted(maps.Keys(pins)) {
		if err := CheckName(pname); err != nil {
			err.(*InvalidError).File = name
			return nil, err
		}
		t, ok := pins[pname].(map[string]any)
		if !ok {
			return nil, bad(pname, "", "%s, not a table: write [pin.%s]", tomlType(pins[pname]), pname)
		}
		p, err := parsePin(t)
		if err != nil {
			ie := err.(*InvalidError)
			ie.File, ie.Pin = name, pname
			return nil, ie
		}
		f.pins[pname] = p
	}
	return f, nil
}

// firstInvalid returns the offset of the first byte of data that is not
// part of valid UTF-8.
func firstInvalid(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// errorLine returns the line of a parse error, counted from its byte
// offset: the parser counts a newline it stops at as the next line's.
func errorLine(data []byte, pos toml.Position) int {
	if pos.Start < 0 || pos.Start > len(data) {
		return pos.Line
	}
	return bytes.Count(data[:pos.Start], []byte("\n")) + 1
}

// parsePin reads one pin table. Errors: *InvalidError naming the field.
func parsePin(t map[string]any) (Pin, error) {
	for _, k := range slices.Sorted(maps.Keys(t)) {
		if !slices.Contains(pinFields, k) {
			return Pin{}, &InvalidError{Reason: fmt.Sprintf("unknown field %q: a pin has %s", k, strings.Join(pinFields, ", "))}
		}
	}
	for _, k := range pinFields {
		if _, ok := t[k]; !ok && k != fieldRef {
			return Pin{}, &InvalidError{Field: k, Reason: "missing"}
		}
	}
	str := func(k string) (string, error) {
		s, ok := t[k].(string)
		if !ok {
			return "", &InvalidError{Field: k, Reason: tomlType(t[k]) + ", not a string"}
		}
		return s, nil
	}
	integer := func(k string) (int64, error) {
		n, ok := t[k].(int64)
		if !ok {
			return 0, &InvalidError{Field: k, Reason: tomlType(t[k]) + ", not an integer"}
		}
		return n, nil
	}
	var p Pin
	var err error
	if p.Repository, err = str(fieldRepository); err != nil {
		return Pin{}, err
	}
	if _, ok := t[fieldRef]; ok {
		r, err := str(fieldRef)
		if err != nil {
			return Pin{}, err
		}
		if r == "" {
			return Pin{}, &InvalidError{Field: fieldRef, Reason: "empty: name the ref in full, or leave the field out for a pin that follows none"}
		}
		p.Ref = refs.Name(r)
	}
	s, err := str(fieldVersion)
	if err != nil {
		return Pin{}, err
	}
	p.Version = version.ID(s)
	if p.Seq, err = integer(fieldSeq); err != nil {
		return Pin{}, err
	}
	if p.CatalogSize, err = integer(fieldSize); err != nil {
		return Pin{}, err
	}
	if p.CatalogSHA256, err = str(fieldSHA256); err != nil {
		return Pin{}, err
	}
	if err := p.Validate(); err != nil {
		return Pin{}, err
	}
	return p, nil
}

// tomlType names the TOML type of a decoded value, for messages.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date or time"
	}
}
