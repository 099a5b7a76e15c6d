package signature

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

var tagPayload = TagPayload{
	Repository: "0192f0c1-0000-7000-8000-00000000beef",
	Tag:        "v1.0",
	Version:    "0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f",
}

// TestTagPayloadBytes: the payload's bytes are exactly the documented
// ones, and parse back to the same fields.
func TestTagPayloadBytes(t *testing.T) {
	t.Parallel()
	b, err := tagPayload.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := "fdl-tag-signature 1\n" +
		"repository 0192f0c1-0000-7000-8000-00000000beef\n" +
		"tag v1.0\n" +
		"version 0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f\n"
	if string(b) != want {
		t.Fatalf("Marshal = %q, want %q", b, want)
	}
	p, err := ParseTagPayload(b)
	if err != nil || p != tagPayload {
		t.Fatalf("ParseTagPayload = %+v, %v", p, err)
	}
	unicode := TagPayload{Repository: "repo-1", Tag: "release/2025-été", Version: tagPayload.Version}
	b, err = unicode.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ParseTagPayload(b); err != nil || p != unicode {
		t.Errorf("a tag name in UTF-8: %+v, %v", p, err)
	}
}

// TestTagPayloadRefusals: anything but the exact form is refused, by
// Marshal (fields) and by ParseTagPayload (bytes).
func TestTagPayloadRefusals(t *testing.T) {
	t.Parallel()
	good, _ := tagPayload.Marshal()
	for _, c := range []struct {
		name  string
		input string
		want  string
	}{
		{"empty", "", "newline"},
		{"no final newline", strings.TrimSuffix(string(good), "\n"), "newline"},
		{"another header", strings.Replace(string(good), "fdl-tag-signature 1", "fdl-tag-signature 2", 1), "first line"},
		{"CRLF", strings.ReplaceAll(string(good), "\n", "\r\n"), "first line"},
		{"a line added", string(good) + "extra x\n", "5 lines"},
		{"a blank line added", string(good) + "\n", "5 lines"},
		{"a line missing", "fdl-tag-signature 1\nrepository r\ntag t\n", "3 lines"},
		{"out of order", "fdl-tag-signature 1\ntag v1.0\nrepository r\nversion " + tagPayload.Version + "\n", "line 2"},
		{"two spaces", strings.Replace(string(good), "tag v1.0", "tag  v1.0", 1), "white space"},
		{"trailing space", strings.Replace(string(good), "tag v1.0", "tag v1.0 ", 1), "white space"},
		{"empty tag", strings.Replace(string(good), "tag v1.0", "tag ", 1), "1 to 200 bytes"},
		{"full ref name", strings.Replace(string(good), "tag v1.0", "tag refs/tags/v1.0", 1), "short name"},
		{"tag not UTF-8", strings.Replace(string(good), "tag v1.0", "tag v\xff", 1), "not UTF-8"},
		{"version upper case", strings.Replace(string(good), "version 0192f0c1-6c1a", "version 0192F0C1-6c1a", 1), "canonical"},
		{"version short", strings.Replace(string(good), "-1a2b3c4d5e6f", "", 1), "canonical"},
		{"repository with a space", strings.Replace(string(good), "repository 0192", "repository a 0192", 1), "printable ASCII"},
		{"repository too long", strings.Replace(string(good), "repository 0192", "repository "+strings.Repeat("r", 200), 1), "1 to 128 bytes"},
	} {
		_, err := ParseTagPayload([]byte(c.input))
		var te *TagPayloadError
		if !errors.As(err, &te) || !errors.Is(err, ErrTagPayload) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a TagPayloadError saying %q", c.name, err, c.want)
		}
	}
	for _, p := range []TagPayload{
		{Repository: "", Tag: "v1", Version: tagPayload.Version},
		{Repository: "r", Tag: "v1\nversion x", Version: tagPayload.Version},
		{Repository: "r\n", Tag: "v1", Version: tagPayload.Version},
		{Repository: "r", Tag: strings.Repeat("t", 201), Version: tagPayload.Version},
		{Repository: "r", Tag: "v1", Version: "main"},
	} {
		if b, err := p.Marshal(); !errors.Is(err, ErrTagPayload) {
			t.Errorf("Marshal(%+v) = %q, %v", p, b, err)
		}
	}
}

// TestTagSignatureReplay: a tag signature checks only against the payload
// of its own repository, tag name and version: the same signature put
// beside another repository's tag of the same name, another tag of the
// same version, or the same tag moved to another version is a bad
// signature.
func TestTagSignatureReplay(t *testing.T) {
	t.Parallel()
	s := testSigner(t)
	signers := mustParseSigners(t, "alice@example.com "+string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(s.PublicKey())))+"\n")
	payload, _ := tagPayload.Marshal()
	sig := mustParseSignature(t, mustSign(t, s, payload, Namespace))
	now := time.Now()
	if got, err := signers.Check(sig, payload, Namespace, now); err != nil || len(got) != 1 {
		t.Fatalf("the tag's own payload: %q, %v", got, err)
	}
	for name, p := range map[string]TagPayload{
		"another repository": {Repository: "0192f0c1-0000-7000-8000-00000000cafe", Tag: tagPayload.Tag, Version: tagPayload.Version},
		"another tag name":   {Repository: tagPayload.Repository, Tag: "v1.0-rc1", Version: tagPayload.Version},
		"another version":    {Repository: tagPayload.Repository, Tag: tagPayload.Tag, Version: "0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e70"},
	} {
		other, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, err = signers.Check(sig, other, Namespace, now)
		var ve *VerifyError
		if !errors.As(err, &ve) || !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: %v, want a VerifyError", name, err)
		}
	}
}
