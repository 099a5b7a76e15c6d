package signature

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// testSigner is an in-memory Ed25519 key, for the tests that need no
// OpenSSH tool.
func testSigner(t testing.TB) *Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// blobOf returns the binary blob of an armored signature.
func blobOf(t testing.TB, armored []byte) []byte {
	t.Helper()
	b, err := dearmor(armored)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// armorBlob armors any bytes as an SSH signature.
func armorBlob(b []byte) []byte {
	return []byte(armorBegin + "\n" + base64.StdEncoding.EncodeToString(b) + "\n" + armorEnd + "\n")
}

// TestParseSignatureRefusals: garbage, other armor, a damaged armor, the
// wrong magic, an unknown version, an unknown hash, a truncated blob and
// bytes after the blob are each refused as malformed, saying which.
func TestParseSignatureRefusals(t *testing.T) {
	t.Parallel()
	good := mustSign(t, testSigner(t), message, Namespace)
	blob := blobOf(t, good)

	version2 := bytes.Clone(blob)
	binary.BigEndian.PutUint32(version2[6:], 2)
	wrongMagic := bytes.Clone(blob)
	copy(wrongMagic, "SSHSIH")
	sha1 := func() []byte {
		s := mustParseSignature(t, good).sig
		s.HashAlgorithm = "sha1"
		return s.Marshal()
	}()

	for _, c := range []struct {
		name  string
		input []byte
		want  string
	}{
		{"empty", nil, "it is empty"},
		{"white space", []byte(" \n\t\n"), "it is empty"},
		{"garbage", []byte("hello world"), "does not begin with the line"},
		{"a PGP signature", []byte("-----BEGIN PGP SIGNATURE-----\nabc\n-----END PGP SIGNATURE-----\n"), `armored as "-----BEGIN PGP SIGNATURE-----"`},
		{"no end line", bytes.TrimSuffix(good, []byte(armorEnd+"\n")), "does not end with the line"},
		{"text after the end", append(bytes.Clone(good), "trailer\n"...), "does not end with the line"},
		{"bad base64", []byte(armorBegin + "\n!!!!\n" + armorEnd + "\n"), "not base64"},
		{"wrong magic", armorBlob(wrongMagic), "magic"},
		{"unknown version", armorBlob(version2), "unknown SSHSIG version 2"},
		{"too short for a version", armorBlob([]byte("SSHSIG\x00")), "ends before its version"},
		{"truncated", armorBlob(blob[:len(blob)-10]), "does not parse"},
		{"bytes after the blob", armorBlob(append(bytes.Clone(blob), 0)), "does not parse"},
		{"hash sha1", armorBlob(sha1), "does not parse"},
	} {
		_, err := ParseSignature(c.input)
		var fe *FormatError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ParseSignature = %v, want a FormatError saying %q", c.name, err, c.want)
		}
	}

	// What is accepted around the armor: CRLF line ends, white space.
	crlf := bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n"))
	for _, in := range [][]byte{crlf, append([]byte("\n  \n"), good...), append(bytes.Clone(good), "\n\n"...)} {
		sig, err := ParseSignature(in)
		if err != nil {
			t.Fatalf("ParseSignature(%q): %v", in, err)
		}
		if err := sig.Verify(message, Namespace); err != nil {
			t.Errorf("Verify: %v", err)
		}
	}
}

// TestVerifyRefusals: a changed message, a changed signature, a signature
// for another namespace and one checked for no namespace are refused, each
// as what it is.
func TestVerifyRefusals(t *testing.T) {
	t.Parallel()
	s := testSigner(t)
	good := mustSign(t, s, message, Namespace)
	sig := mustParseSignature(t, good)
	if err := sig.Verify(message, Namespace); err != nil {
		t.Fatalf("Verify: %v", err)
	}

	// One byte of the message changed.
	tampered := bytes.Clone(message)
	tampered[10] ^= 1
	err := sig.Verify(tampered, Namespace)
	var ve *VerifyError
	if !errors.Is(err, ErrBadSignature) || !errors.As(err, &ve) || ve.Fingerprint != s.Fingerprint() {
		t.Errorf("tampered message: %v", err)
	}
	if errors.Is(err, ErrWrongNamespace) {
		t.Errorf("tampered message reported as another namespace: %v", err)
	}

	// One byte of the signature itself changed (the last byte of the blob
	// is the signature's).
	blob := blobOf(t, good)
	blob[len(blob)-1] ^= 1
	badSig := mustParseSignature(t, armorBlob(blob))
	if err := badSig.Verify(message, Namespace); !errors.As(err, &ve) {
		t.Errorf("tampered signature: %v", err)
	}

	// The key inside the signature replaced by another: the signature is
	// not that key's.
	other := testSigner(t)
	swapped := mustParseSignature(t, good)
	swapped.sig.PublicKey = other.PublicKey()
	if err := mustParseSignature(t, swapped.Armor()).Verify(message, Namespace); !errors.As(err, &ve) {
		t.Errorf("signature with another key put in: %v", err)
	}

	// A good signature for Git's namespace is not one for fdl's.
	gitSig := mustParseSignature(t, mustSign(t, s, message, "git"))
	err = gitSig.Verify(message, Namespace)
	var wn *WrongNamespaceError
	if !errors.As(err, &wn) || wn.Got != "git" || wn.Want != "fdl" || !errors.Is(err, ErrBadSignature) {
		t.Errorf("signature for namespace git checked for fdl: %v", err)
	}
	// Its namespace field rewritten to "fdl" makes it a bad signature, not
	// a good one.
	gitSig.sig.Namespace = Namespace
	if err := mustParseSignature(t, gitSig.Armor()).Verify(message, Namespace); !errors.As(err, &ve) {
		t.Errorf("namespace field rewritten: %v", err)
	}

	if err := sig.Verify(message, ""); err == nil {
		t.Error("Verify with no namespace succeeded")
	}
}
