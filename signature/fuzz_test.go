package signature

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// fuzzKey is a fixed Ed25519 key (seed of zeros), so the seed corpus is
// the same on every run.
func fuzzKey(t testing.TB) *Signer {
	key, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzParseSignature: no input makes ParseSignature or Verify panic; what
// parses armors back to bytes that parse to the same signature; an error
// is always ErrMalformed.
func FuzzParseSignature(f *testing.F) {
	s := fuzzKey(f)
	good := mustSign(f, s, message, Namespace)
	blob := blobOf(f, good)
	f.Add(good)
	f.Add(mustSign(f, s, nil, "git"))
	f.Add(bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")))
	f.Add([]byte(""))
	f.Add([]byte("-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n"))
	f.Add(armorBlob([]byte("SSHSIG")))
	f.Add(armorBlob([]byte("SSHSIG\x00\x00\x00\x02")))
	f.Add(armorBlob(blob[:len(blob)/2]))
	f.Add(armorBlob(append(bytes.Clone(blob), 1, 2, 3)))
	f.Fuzz(func(t *testing.T, in []byte) {
		sig, err := ParseSignature(in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseSignature error is not ErrMalformed: %v", err)
			}
			return
		}
		_ = sig.Fingerprint()
		err = sig.Verify(message, Namespace)
		if err != nil && !errors.Is(err, ErrBadSignature) {
			t.Fatalf("Verify error is not ErrBadSignature: %v", err)
		}
		again, err := ParseSignature(sig.Armor())
		if err != nil {
			t.Fatalf("the armor of a parsed signature does not parse: %v", err)
		}
		if !bytes.Equal(again.Armor(), sig.Armor()) {
			t.Fatal("armor, parse, armor changes the signature")
		}
	})
}

// FuzzParseAllowedSigners: no file makes ParseAllowedSigners or Check
// panic; an error names the file and a line of it.
func FuzzParseAllowedSigners(f *testing.F) {
	s := fuzzKey(f)
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
	sig := mustParseSignature(f, mustSign(f, s, message, Namespace))
	f.Add("alice@example.com " + key + "\n")
	f.Add(docExample)
	f.Add(`"a b" cert-authority,namespaces="fdl,!git",valid-after="20240101Z",valid-before="20250101120000" ` + key + " comment\r\n")
	f.Add("# comment\n\n*@example.com,!mallory@example.com namespaces=\"f*\" " + key)
	f.Add(`alice namespaces="\"" ` + key)
	f.Add("alice valid-after=\"99991231235959Z\" " + key)
	f.Add("\"unterminated " + key)
	f.Fuzz(func(t *testing.T, text string) {
		a, err := ParseAllowedSigners("fuzz", []byte(text))
		if err != nil {
			var fe *SignersFileError
			if !errors.As(err, &fe) || fe.File != "fuzz" || fe.Line < 1 || fe.Line > strings.Count(text, "\n")+1 {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		_, err = a.Check(sig, message, Namespace, time.Unix(1700000000, 0))
		if err != nil && !errors.Is(err, ErrNotAllowed) {
			t.Fatalf("Check of a good signature: %v", err)
		}
	})
}

// FuzzParseTagPayload: no input makes ParseTagPayload panic; what parses
// marshals back to the very same bytes, so a payload has one form.
func FuzzParseTagPayload(f *testing.F) {
	good, err := tagPayload.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("fdl-tag-signature 1\nrepository r\ntag t\nversion 0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f\n"))
	f.Add([]byte("fdl-tag-signature 1\n"))
	f.Add([]byte("fdl-tag-signature 1\nrepository r\ntag t\nversion v\nextra\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ParseTagPayload(in)
		if err != nil {
			if !errors.Is(err, ErrTagPayload) {
				t.Fatalf("error is not ErrTagPayload: %v", err)
			}
			return
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("a parsed payload does not marshal: %v", err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("parse and marshal change the payload: %q -> %q", in, out)
		}
	})
}
