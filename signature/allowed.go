package signature

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
)

// AllowedSigners is a parsed allowed signers file: Git's
// gpg.ssh.allowedSignersFile, in the format of OpenSSH's ssh-keygen (man
// ssh-keygen, ALLOWED SIGNERS). Check and CheckPrincipal decide with it
// whether a signature comes from a trusted signer.
type AllowedSigners struct {
	// File names the file in errors (its path, as the caller gave it).
	File string
	// Signers are the file's lines that name a key, in file order.
	Signers []AllowedSigner
}

// AllowedSigner is one line of an allowed signers file:
//
//	principals [options] keytype base64-key [comment]
type AllowedSigner struct {
	// Line is the line's number in the file, from 1.
	Line int
	// Principals is the pattern-list of identities the key signs for, as
	// written (quotes removed): comma-separated patterns with '*' and '?',
	// a leading '!' negating one.
	Principals string
	// CertAuthority: the key is a certificate authority; signatures by
	// certificates it issued are accepted (option cert-authority).
	CertAuthority bool
	// Namespaces is the pattern-list of namespaces the key may sign in
	// (option namespaces="…"); it applies only when HasNamespaces.
	Namespaces    string
	HasNamespaces bool
	// ValidAfter and ValidBefore bound the times the key is valid at
	// (options valid-after and valid-before, both inclusive, to the
	// second); zero when the line has none.
	ValidAfter, ValidBefore time.Time
	// Key is the signer's public key (or the authority's).
	Key ssh.PublicKey
	// Comment is what follows the key on the line, if anything.
	Comment string
}

// ParseAllowedSigners parses the bytes of an allowed signers file; file
// names it in errors. The format is OpenSSH's (ssh-keygen(1), ALLOWED
// SIGNERS; sshsig.c is the reference):
//
//   - blank lines and lines whose first non-blank character is '#' are
//     ignored; lines end in LF or CRLF;
//   - fields are separated by spaces or tabs: principals, then options if
//     any, then the key type, the base64 key and an optional comment;
//   - the principals field may be written in double quotes;
//   - options are comma-separated, their names in any case, with no white
//     space outside double quotes: cert-authority, namespaces="list",
//     valid-after="time", valid-before="time" (values in double quotes,
//     `\"` for a quote inside); each at most once;
//   - a time is YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, in UTC when
//     followed by "Z" (or "UTC"), else in the local time zone;
//     valid-before must be later than valid-after;
//   - the key type must be the one the key's bytes name.
//
// Any other line is a *SignersFileError (ErrSignersFile) naming file and
// line, as ssh-keygen refuses it. A file with no line at all is valid
// (and trusts nobody).
func ParseAllowedSigners(file string, data []byte) (*AllowedSigners, error) {
	a := &AllowedSigners{File: file}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		s, err := parseSignerLine(line, n)
		if err != nil {
			return nil, &SignersFileError{File: file, Line: n, Reason: err.Error()}
		}
		if s != nil {
			a.Signers = append(a.Signers, *s)
		}
	}
	return a, nil
}

// parseSignerLine parses one line; nil, nil for a blank or comment line.
func parseSignerLine(line string, n int) (*AllowedSigner, error) {
	line = strings.TrimRight(line, "\r")
	rest := strings.TrimLeft(line, " \t")
	if rest == "" || rest[0] == '#' {
		return nil, nil
	}
	if !utf8.ValidString(line) {
		return nil, fmt.Errorf("the line is not UTF-8 text")
	}
	s := &AllowedSigner{Line: n}
	principals, rest, err := cutPrincipals(rest)
	if err != nil {
		return nil, err
	}
	if principals == "" {
		return nil, fmt.Errorf("the principals field is empty")
	}
	s.Principals = principals
	if strings.TrimSpace(rest) == "" {
		return nil, fmt.Errorf("a line needs principals and a key; this one has no key")
	}
	// As ssh-keygen does: what follows the principals is the key if its
	// first field is a key type, else options and then the key.
	if typ, _ := cutField(rest); !isKeyType(typ) {
		opts, after := cutOptions(rest)
		if err := parseOptions(s, opts); err != nil {
			return nil, err
		}
		rest = after
		if strings.TrimSpace(rest) == "" {
			return nil, fmt.Errorf("the options %q are followed by no key", opts)
		}
		if typ, _ := cutField(rest); !isKeyType(typ) {
			return nil, fmt.Errorf("%q is not a key type ssh-keygen writes (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256, …)", typ)
		}
	}
	key, comment, err := parsePublicKeyLine(rest)
	if err != nil {
		return nil, err
	}
	s.Key, s.Comment = key, comment
	return s, nil
}

// cutPrincipals returns the principals field, unquoted if quoted, and
// what follows it.
func cutPrincipals(s string) (string, string, error) {
	if strings.HasPrefix(s, `"`) {
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return "", "", fmt.Errorf("the quoted principals field has no closing quote")
		}
		p, rest := s[1:1+end], s[2+end:]
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			return "", "", fmt.Errorf("the quoted principals field is followed by %q, not white space", rest[:1])
		}
		return p, strings.TrimLeft(rest, " \t"), nil
	}
	p, rest := cutField(s)
	return p, rest, nil
}

// cutOptions returns the options field (up to the first white space
// outside double quotes) and what follows it.
func cutOptions(s string) (string, string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted && i+1 < len(s) && s[i+1] == '"':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && (c == ' ' || c == '\t'):
			return s[:i], strings.TrimLeft(s[i:], " \t")
		}
	}
	return s, ""
}

// parseOptions reads the options field into s.
func parseOptions(s *AllowedSigner, opts string) error {
	var seenAfter, seenBefore bool
	for opts != "" {
		name := opts
		if i := strings.IndexAny(opts, ",="); i >= 0 {
			name = opts[:i]
		}
		lname := strings.ToLower(name)
		opts = opts[len(name):]
		switch lname {
		case "cert-authority":
			if strings.HasPrefix(opts, "=") {
				return fmt.Errorf("option cert-authority takes no value")
			}
			s.CertAuthority = true
		case "namespaces", "valid-after", "valid-before":
			if !strings.HasPrefix(opts, "=") {
				return fmt.Errorf(`option %s needs a value: %s="…"`, name, lname)
			}
			value, rest, err := dequote(opts[1:])
			if err != nil {
				return fmt.Errorf("option %s: %v", name, err)
			}
			opts = rest
			switch lname {
			case "namespaces":
				if s.HasNamespaces {
					return fmt.Errorf(`option "namespaces" is given twice`)
				}
				s.Namespaces, s.HasNamespaces = value, true
			case "valid-after":
				if seenAfter {
					return fmt.Errorf(`option "valid-after" is given twice`)
				}
				seenAfter = true
				if s.ValidAfter, err = parseSignerTime(value); err != nil {
					return fmt.Errorf("option valid-after: %v", err)
				}
			case "valid-before":
				if seenBefore {
					return fmt.Errorf(`option "valid-before" is given twice`)
				}
				seenBefore = true
				if s.ValidBefore, err = parseSignerTime(value); err != nil {
					return fmt.Errorf("option valid-before: %v", err)
				}
			}
		default:
			return fmt.Errorf("unknown option %q (fdl knows cert-authority, namespaces, valid-after and valid-before, as ssh-keygen does)", name)
		}
		if opts == "" {
			break
		}
		if opts[0] != ',' {
			return fmt.Errorf("options must be separated by commas, found %q", opts[:1])
		}
		opts = opts[1:]
		if opts == "" {
			return fmt.Errorf("the options end with a comma")
		}
	}
	if seenAfter && seenBefore && s.ValidBefore.Unix() <= s.ValidAfter.Unix() {
		return fmt.Errorf("valid-before (%s) is not after valid-after (%s)",
			s.ValidBefore.UTC().Format(time.RFC3339), s.ValidAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// dequote reads a double-quoted option value (`\"` is a quote inside it)
// and returns it and what follows the closing quote.
func dequote(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", fmt.Errorf("the value must be in double quotes")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		case s[i] == '"':
			return b.String(), s[i+1:], nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", fmt.Errorf("the value has no closing quote")
}

// parseSignerTime reads an allowed signers time: YYYYMMDD[Z],
// YYYYMMDDHHMM[Z] or YYYYMMDDHHMMSS[Z] ("UTC" may stand for "Z"), in UTC
// with the suffix and in the local time zone without, as OpenSSH's
// parse_absolute_time does.
func parseSignerTime(v string) (time.Time, error) {
	loc := time.Local
	digits := v
	for _, suffix := range []string{"Z", "z", "UTC", "utc"} {
		if len(v) > len(suffix) && strings.HasSuffix(v, suffix) {
			digits, loc = strings.TrimSuffix(v, suffix), time.UTC
			break
		}
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return time.Time{}, fmt.Errorf("%q is not a time: write YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, and Z for UTC", v)
		}
	}
	var layout string
	switch len(digits) {
	case 8:
		layout = "20060102"
	case 12:
		layout = "200601021504"
	case 14:
		layout = "20060102150405"
	default:
		return time.Time{}, fmt.Errorf("%q is not a time: write YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, and Z for UTC", v)
	}
	t, err := time.ParseInLocation(layout, digits, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a valid time (%v)", v, err)
	}
	if t.Unix() <= 0 {
		return time.Time{}, fmt.Errorf("%q is not after 1970", v)
	}
	return t, nil
}

// isKeyType reports whether name is a public key type (plain or
// certificate) that x/crypto/ssh reads, as OpenSSH's sshkey_read tells a
// key from options.
func isKeyType(name string) bool {
	switch name {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoRSA, "ssh-dss",
		ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
		ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256,
		ssh.CertAlgoED25519v01, ssh.CertAlgoRSAv01, "ssh-dss-cert-v01@openssh.com",
		ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
		ssh.CertAlgoSKED25519v01, ssh.CertAlgoSKECDSA256v01:
		return true
	}
	return false
}
