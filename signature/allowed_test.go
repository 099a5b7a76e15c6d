package signature

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// docExample is the allowed signers file of ssh-keygen(1) (ALLOWED
// SIGNERS), which Git's documentation of gpg.ssh.allowedSignersFile points
// to, with its elided keys ("AAAAX1...") as written.
const docExample = `# Comments allowed at start of line
user1@example.com,user2@example.com ssh-rsa AAAAX1...
# A certificate authority, trusted for all principals in a domain.
*@example.com cert-authority ssh-ed25519 AAAB4...
# A key that is accepted only for file signing.
user2@example.com namespaces="file" ssh-ed25519 AAA41...
`

// TestAllowedSignersDocExample: the documentation's example, with real
// keys in place of the elided ones, parses to what it says, and Check
// decides as ssh-keygen -Y verify does: the RSA key signs for both users
// in any namespace, the second Ed25519 key only in namespace "file", the
// authority's own key signs for nobody (it is trusted for certificates).
// As written, with elided keys, the file is refused at its line 2.
func TestAllowedSignersDocExample(t *testing.T) {
	t.Parallel()
	_, err := ParseAllowedSigners("doc/allowed_signers", []byte(docExample))
	var fe *SignersFileError
	if !errors.As(err, &fe) || fe.Line != 2 || !strings.HasPrefix(err.Error(), "doc/allowed_signers:2: ") {
		t.Errorf("the example with elided keys: %v, want an error at doc/allowed_signers:2", err)
	}

	dir := t.TempDir()
	rsa := keygen(t, dir, "rsa", "user1", "-b", "2048")
	ca := keygen(t, dir, "ed25519", "ca")
	user2 := keygen(t, dir, "ed25519", "user2")
	_, rsaLine := publicKey(t, rsa)
	_, caLine := publicKey(t, ca)
	_, user2Line := publicKey(t, user2)
	text := docExample
	for elided, line := range map[string]string{"ssh-rsa AAAAX1...": rsaLine, "ssh-ed25519 AAAB4...": caLine, "ssh-ed25519 AAA41...": user2Line} {
		text = strings.Replace(text, elided, line, 1)
	}
	a := mustParseSigners(t, text)
	if len(a.Signers) != 3 {
		t.Fatalf("%d signers, want 3", len(a.Signers))
	}
	want := []struct {
		line       int
		principals string
		ca         bool
		namespaces string
		comment    string
	}{
		{2, "user1@example.com,user2@example.com", false, "", "user1@example.com"},
		{4, "*@example.com", true, "", "ca@example.com"},
		{6, "user2@example.com", false, "file", "user2@example.com"},
	}
	for i, w := range want {
		s := a.Signers[i]
		if s.Line != w.line || s.Principals != w.principals || s.CertAuthority != w.ca ||
			s.Namespaces != w.namespaces || s.HasNamespaces != (w.namespaces != "") || s.Comment != w.comment {
			t.Errorf("signer %d = line %d %q ca=%v namespaces=%q (%v) comment %q; want %+v",
				i, s.Line, s.Principals, s.CertAuthority, s.Namespaces, s.HasNamespaces, s.Comment, w)
		}
	}

	now := time.Now()
	for _, c := range []struct {
		key, namespace string
		want           []string
		err            error
	}{
		{rsa, "fdl", []string{"user1@example.com", "user2@example.com"}, nil},
		{user2, "file", []string{"user2@example.com"}, nil},
		{user2, "fdl", nil, ErrNamespaceNotAllowed},
		{ca, "fdl", nil, ErrUnknownKey},
	} {
		armored := mustSign(t, mustLoad(t, c.key), message, c.namespace)
		got, err := a.Check(mustParseSignature(t, armored), message, c.namespace, now)
		if fmt.Sprint(got) != fmt.Sprint(c.want) || !errors.Is(err, c.err) || (c.err != nil && !errors.Is(err, ErrNotAllowed)) {
			t.Errorf("%s in %s: Check = %q, %v; want %q, %v", c.key, c.namespace, got, err, c.want, c.err)
		}
		// ssh-keygen decides the same for the first principal.
		principal := "user2@example.com"
		if c.key == ca {
			principal = "ca@example.com"
		}
		kerr := keygenVerify(t, []byte(text), principal, c.namespace, armored, message)
		if (kerr == nil) != (c.err == nil) {
			t.Errorf("%s in %s: ssh-keygen -Y verify says %v, fdl %v", c.key, c.namespace, kerr, err)
		}
	}
}

// TestAllowedSignersValidity: lines as Git's own test suite writes them
// (quoted principals with spaces; valid-after and valid-before in local
// time) accept a signature only inside their window, to the second, as
// ssh-keygen -Y verify -Overify-time does.
func TestAllowedSignersValidity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	boxed := keygen(t, dir, "ed25519", "boxed")
	expired := keygen(t, dir, "ed25519", "expired")
	utc := keygen(t, dir, "ed25519", "utc")
	text := signersLine(t, `"timeboxed valid key"`, `valid-after="20050407000000",valid-before="200504100000"`, boxed) +
		signersLine(t, `"principal with expired key"`, `valid-before="20000101000000"`, expired) +
		signersLine(t, "utc@example.com", `VALID-AFTER="20240101Z",Valid-Before="20240201120000Z"`, utc)
	a := mustParseSigners(t, text)
	if got := a.Signers[0].ValidBefore; !got.Equal(time.Date(2005, 4, 10, 0, 0, 0, 0, time.Local)) {
		t.Errorf("valid-before 200504100000 read as %v", got)
	}
	if got := a.Signers[2].ValidAfter; !got.Equal(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("valid-after 20240101Z read as %v", got)
	}
	local := func(s string) time.Time {
		tm, err := time.ParseInLocation("20060102150405", s, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, c := range []struct {
		key, principal string
		at             string // local time, as -Overify-time reads it
		ok             bool
		errAfter       bool // the error is "not yet valid"
	}{
		{boxed, "timeboxed valid key", "20050408120000", true, false},
		{boxed, "timeboxed valid key", "20050407000000", true, false}, // valid-after is inclusive
		{boxed, "timeboxed valid key", "20050410000000", true, false}, // so is valid-before
		{boxed, "timeboxed valid key", "20050406235959", false, true},
		{boxed, "timeboxed valid key", "20050410000001", false, false},
		{expired, "principal with expired key", "19991231000000", true, false},
		{expired, "principal with expired key", "20240101000000", false, false},
	} {
		armored := mustSign(t, mustLoad(t, c.key), message, "fdl")
		sig := mustParseSignature(t, armored)
		got, err := a.Check(sig, message, "fdl", local(c.at))
		var ve *ValidityError
		switch {
		case c.ok && (err != nil || len(got) != 1 || got[0] != c.principal):
			t.Errorf("%s at %s: Check = %q, %v; want %q", c.principal, c.at, got, err, c.principal)
		case !c.ok && (!errors.As(err, &ve) || !errors.Is(err, ErrOutsideValidity) || !errors.Is(err, ErrNotAllowed)):
			t.Errorf("%s at %s: Check = %q, %v; want a ValidityError", c.principal, c.at, got, err)
		case !c.ok && c.errAfter != strings.Contains(err.Error(), "valid only from"):
			t.Errorf("%s at %s: the error does not say which bound: %v", c.principal, c.at, err)
		}
		kerr := keygenVerify(t, []byte(text), c.principal, "fdl", armored, message, "-O", "verify-time="+c.at)
		if (kerr == nil) != c.ok {
			t.Errorf("%s at %s: ssh-keygen says %v, want ok=%v", c.principal, c.at, kerr, c.ok)
		}
	}
	sig := mustParseSignature(t, mustSign(t, mustLoad(t, utc), message, "fdl"))
	for at, ok := range map[time.Time]bool{
		time.Date(2023, 12, 31, 23, 59, 59, 0, time.UTC): false,
		time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC):      true,
		time.Date(2024, 2, 1, 12, 0, 0, 0, time.UTC):     true,
		time.Date(2024, 2, 1, 12, 0, 1, 0, time.UTC):     false,
	} {
		if _, err := a.Check(sig, message, "fdl", at); (err == nil) != ok {
			t.Errorf("UTC window at %v: %v, want ok=%v", at, err, ok)
		}
	}
}

// TestCheckRefusals: the refusals of Check and CheckPrincipal, each by
// its type, and what a file with several lines for one key decides.
func TestCheckRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alice := keygen(t, dir, "ed25519", "alice")
	bob := keygen(t, dir, "ed25519", "bob")
	stranger := keygen(t, dir, "ed25519", "stranger")
	text := signersLine(t, "alice@example.com", `namespaces="git"`, alice) +
		signersLine(t, "alice@fdl.dev", `namespaces="fdl*,!fdl-test"`, alice) +
		signersLine(t, "*@example.com,!mallory@example.com", "", bob)
	a := mustParseSigners(t, text)
	now := time.Now()
	sign := func(key, ns string) *Signature {
		return mustParseSignature(t, mustSign(t, mustLoad(t, key), message, ns))
	}

	// A key listed twice: the line that allows the namespace decides.
	got, err := a.Check(sign(alice, "fdl"), message, "fdl", now)
	if err != nil || fmt.Sprint(got) != "[alice@fdl.dev]" {
		t.Errorf("alice in fdl: %q, %v", got, err)
	}
	got, err = a.Check(sign(alice, "git"), message, "git", now)
	if err != nil || fmt.Sprint(got) != "[alice@example.com]" {
		t.Errorf("alice in git: %q, %v", got, err)
	}
	// A namespace a negated pattern excludes; the first line's refusal is
	// the one reported.
	_, err = a.Check(sign(alice, "fdl-test"), message, "fdl-test", now)
	var nn *NamespaceNotAllowedError
	if !errors.As(err, &nn) || nn.Line != 1 || nn.Namespace != "fdl-test" || nn.Allowed != "git" {
		t.Errorf("alice in fdl-test: %v", err)
	}
	// A key not in the file.
	_, err = a.Check(sign(stranger, "fdl"), message, "fdl", now)
	var uk *UnknownKeyError
	if !errors.As(err, &uk) || uk.File != "allowed_signers" || !strings.Contains(err.Error(), uk.Fingerprint) {
		t.Errorf("a stranger: %v", err)
	}
	// A signature that does not verify is refused before the file is
	// read, as a bad signature.
	tampered := append([]byte("x"), message...)
	if _, err := a.Check(sign(alice, "fdl"), tampered, "fdl", now); !errors.Is(err, ErrBadSignature) || errors.Is(err, ErrNotAllowed) {
		t.Errorf("tampered message: %v", err)
	}
	// A signature for another namespace than the one checked.
	if _, err := a.Check(sign(bob, "git"), message, "fdl", now); !errors.Is(err, ErrWrongNamespace) {
		t.Errorf("bob's git signature checked for fdl: %v", err)
	}

	// Principal patterns: bob signs for anyone at example.com but mallory.
	bobSig := sign(bob, "fdl")
	if got, err := a.Check(bobSig, message, "fdl", now); err != nil || fmt.Sprint(got) != "[*@example.com]" {
		t.Errorf("bob: %q, %v (negated patterns are not principals)", got, err)
	}
	for principal, ok := range map[string]bool{
		"carol@example.com":   true,
		"mallory@example.com": false,
		"carol@example.org":   false,
		"alice@fdl.dev":       false,
	} {
		err := a.CheckPrincipal(bobSig, message, "fdl", principal, now)
		if ok != (err == nil) || (!ok && !errors.As(err, &uk)) {
			t.Errorf("bob as %s: %v, want ok=%v", principal, err, ok)
		}
		kerr := keygenVerify(t, []byte(text), principal, "fdl", bobSig.Armor(), message)
		if (kerr == nil) != ok {
			t.Errorf("bob as %s: ssh-keygen says %v, want ok=%v", principal, kerr, ok)
		}
	}
	if err := a.CheckPrincipal(bobSig, message, "fdl", "", now); err == nil {
		t.Error("CheckPrincipal with no principal succeeded")
	}
	// An empty file trusts nobody.
	if _, err := mustParseSigners(t, "").Check(bobSig, message, "fdl", now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("empty file: %v", err)
	}
}

// TestParseAllowedSignersErrors: each malformed line is refused with the
// file, the line and what is wrong; comments, blank lines, CRLF and tabs
// are read.
func TestParseAllowedSignersErrors(t *testing.T) {
	t.Parallel()
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOrJ0HZFHcjx7nMkjFTrpWcHXfv8fkpkyi2ZK4xsSWvE"
	good := "# a comment\n\n   # indented comment\n\t\nalice@example.com " + key + " a comment\r\n" +
		"\"principal with spaces\"\tcert-authority,NAMESPACES=\"fdl,git\"\t" + key + "\n" +
		"bob@example.com namespaces=\"a \\\"quoted\\\" ns\" " + key
	a := mustParseSigners(t, good)
	if len(a.Signers) != 3 || a.Signers[0].Line != 5 || a.Signers[0].Comment != "a comment" ||
		a.Signers[1].Principals != "principal with spaces" || !a.Signers[1].CertAuthority ||
		a.Signers[1].Namespaces != "fdl,git" || a.Signers[2].Namespaces != `a "quoted" ns` {
		t.Errorf("parsed %+v", a.Signers)
	}

	for _, c := range []struct{ line, want string }{
		{"alice@example.com", "has no key"},
		{"alice@example.com   ", "has no key"},
		{`"alice@example.com ` + key, "no closing quote"},
		{`"alice"x ` + key, "not white space"},
		{`"" ` + key, "principals field is empty"},
		{"alice ssh-ed25519", `keytype base64-key`},
		{"alice namespaces=\"x\" foo AAAA", `"foo" is not a key type`},
		{"alice ssh-ed25519 !!!", "not base64"},
		{"alice ssh-ed25519 AAAA", "does not parse"},
		{"alice ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOrJ0HZFHcjx7nMkjFTrpWcHXfv8fkpkyi2ZK4xsSWvE", "bytes are of type ssh-ed25519"},
		{"alice no-touch-required " + key, `unknown option "no-touch-required"`},
		{"alice cert-authority", "followed by no key"},
		{"alice cert-authority,,namespaces=\"x\" " + key, `unknown option ""`},
		{"alice cert-authority, " + key, "end with a comma"},
		{"alice cert-authority;x " + key, "unknown option"},
		{"alice cert-authority=yes " + key, "takes no value"},
		{"alice namespaces " + key, "needs a value"},
		{"alice namespaces=fdl " + key, "double quotes"},
		{"alice namespaces=\"fdl " + key, "no closing quote"},
		{"alice namespaces=\"a\",namespaces=\"b\" " + key, "given twice"},
		{"alice valid-after=\"2024\" " + key, "not a time"},
		{"alice valid-after=\"2024010x\" " + key, "not a time"},
		{"alice valid-after=\"20241301\" " + key, "not a valid time"},
		{"alice valid-after=\"19700101Z\" " + key, "not after 1970"},
		{"alice valid-before=\"20240101Z\",valid-before=\"20240102Z\" " + key, "given twice"},
		{"alice valid-after=\"20240102Z\",valid-before=\"20240101Z\" " + key, "not after valid-after"},
		{"alice valid-after=\"20240101Z\",valid-before=\"20240101Z\" " + key, "not after valid-after"},
		{"alice namespaces=\"fdl\"x " + key, "separated by commas"},
		{"alice\xff " + key, "not UTF-8"},
	} {
		_, err := ParseAllowedSigners("/etc/fdl/signers", []byte("# first\n"+c.line+"\n"))
		var fe *SignersFileError
		if !errors.As(err, &fe) || fe.Line != 2 || !errors.Is(err, ErrSignersFile) ||
			!strings.HasPrefix(err.Error(), "/etc/fdl/signers:2: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error at /etc/fdl/signers:2 saying %q", c.line, err, c.want)
		}
	}
}

// TestMatchPattern: OpenSSH's patterns and pattern-lists.
func TestMatchPattern(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s, p string
		want bool
	}{
		{"alice@example.com", "alice@example.com", true},
		{"alice@example.com", "Alice@example.com", false},
		{"alice@example.com", "*@example.com", true},
		{"alice@example.com", "*", true},
		{"", "*", true},
		{"", "", true},
		{"a", "", false},
		{"alice", "al?ce", true},
		{"alice", "al?e", false},
		{"alice", "a*e", true},
		{"alice", "a*c", false},
		{"aaaa", "*a*a*a*a*a", false},
		{"ab", "a**b", true},
		{"fdl", "fdl*", true},
		{strings.Repeat("a", 2000), strings.Repeat("*a", 60) + "b", false},
	} {
		if got := matchPattern(c.s, c.p); got != c.want {
			t.Errorf("matchPattern(%q, %q) = %v", c.s, c.p, got)
		}
	}
	for _, c := range []struct {
		s, list string
		want    int
	}{
		{"alice@example.com", "bob@example.com,alice@example.com", 1},
		{"alice@example.com", "bob@example.com", 0},
		{"mallory@example.com", "*@example.com,!mallory@example.com", -1},
		{"mallory@example.com", "!mallory@example.com,*@example.com", -1},
		{"alice@example.com", "!mallory@example.com", 0},
		{"fdl", "git,file", 0},
		{"fdl", "", 0},
	} {
		if got := matchPatternList(c.s, c.list); got != c.want {
			t.Errorf("matchPatternList(%q, %q) = %d, want %d", c.s, c.list, got, c.want)
		}
	}
}
