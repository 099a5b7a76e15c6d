package signature

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// The armor of an SSH signature (OpenSSH's PROTOCOL.sshsig).
const (
	armorBegin = "-----BEGIN SSH SIGNATURE-----"
	armorEnd   = "-----END SSH SIGNATURE-----"
	// armorWidth is the length of the base64 lines ssh-keygen writes.
	armorWidth = 70
	// magic opens every signature blob.
	magic = "SSHSIG"
	// formatVersion is the one version of the blob there is.
	formatVersion = 1
)

// Signature is a parsed SSH signature (SSHSIG): who made it (the public
// key, which may be a certificate), for which namespace, with which hash.
// It is not known to be good until Verify (or AllowedSigners.Check) says
// so.
type Signature struct {
	sig *sshsig.Signature
}

// ParseSignature reads an armored SSH signature, as ssh-keygen -Y sign
// and Sign write it: a line "-----BEGIN SSH SIGNATURE-----", base64
// lines, a line "-----END SSH SIGNATURE-----", and nothing else but
// surrounding white space (CRLF line ends are read too). The blob must
// open with the magic "SSHSIG", be of version 1, name a hash sha256 or
// sha512 and a public key x/crypto/ssh knows, and hold nothing after its
// fields. Anything else is a *FormatError (ErrMalformed) saying what is
// wrong. Parsing checks no signature: call Verify.
func ParseSignature(armored []byte) (*Signature, error) {
	blob, err := dearmor(armored)
	if err != nil {
		return nil, err
	}
	return parseBlob(blob)
}

func dearmor(armored []byte) ([]byte, error) {
	text := strings.TrimSpace(string(armored))
	if text == "" {
		return nil, &FormatError{Reason: "it is empty"}
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r \t")
	}
	if lines[0] != armorBegin {
		if strings.HasPrefix(lines[0], "-----BEGIN ") {
			return nil, &FormatError{Reason: fmt.Sprintf("it is armored as %q, not %q", lines[0], armorBegin)}
		}
		return nil, &FormatError{Reason: fmt.Sprintf("it does not begin with the line %q", armorBegin)}
	}
	if len(lines) < 3 || lines[len(lines)-1] != armorEnd {
		return nil, &FormatError{Reason: fmt.Sprintf("it does not end with the line %q", armorEnd)}
	}
	var b64 strings.Builder
	for _, l := range lines[1 : len(lines)-1] {
		b64.WriteString(strings.TrimSpace(l))
	}
	blob, err := base64.StdEncoding.DecodeString(b64.String())
	if err != nil {
		return nil, &FormatError{Reason: fmt.Sprintf("its body is not base64 (%v)", err)}
	}
	return blob, nil
}

func parseBlob(blob []byte) (*Signature, error) {
	if !bytes.HasPrefix(blob, []byte(magic)) {
		return nil, &FormatError{Reason: fmt.Sprintf("its blob does not begin with the magic %q", magic)}
	}
	if len(blob) < len(magic)+4 {
		return nil, &FormatError{Reason: "its blob ends before its version"}
	}
	if v := binary.BigEndian.Uint32(blob[len(magic):]); v != formatVersion {
		return nil, &FormatError{Reason: fmt.Sprintf("unknown SSHSIG version %d (only version %d exists)", v, formatVersion)}
	}
	sig, err := sshsig.ParseSignature(blob)
	if err != nil {
		return nil, &FormatError{Reason: fmt.Sprintf("its blob does not parse (%v)", err)}
	}
	if sig.Signature == nil || sig.PublicKey == nil {
		return nil, &FormatError{Reason: "its blob lacks a key or a signature"}
	}
	return &Signature{sig: sig}, nil
}

// armor returns the armored form of sig as ssh-keygen writes it: base64
// lines of 70 characters, each line ending in "\n".
func armor(sig *sshsig.Signature) []byte {
	enc := base64.StdEncoding.EncodeToString(sig.Marshal())
	var b bytes.Buffer
	b.WriteString(armorBegin + "\n")
	for len(enc) > armorWidth {
		b.WriteString(enc[:armorWidth] + "\n")
		enc = enc[armorWidth:]
	}
	b.WriteString(enc + "\n")
	b.WriteString(armorEnd + "\n")
	return b.Bytes()
}

// PublicKey returns the key the signature names: the signer's public key,
// or a certificate (*ssh.Certificate) when a certificate signed.
func (s *Signature) PublicKey() ssh.PublicKey { return s.sig.PublicKey }

// Fingerprint returns the SHA-256 fingerprint of the signing key as
// ssh-keygen prints it ("SHA256:" and unpadded base64). For a certificate
// it is the fingerprint of the certified key, as OpenSSH gives it.
func (s *Signature) Fingerprint() string { return Fingerprint(s.sig.PublicKey) }

// Namespace returns the namespace the signature says it was made for.
// Only Verify makes it trustworthy.
func (s *Signature) Namespace() string { return s.sig.Namespace }

// HashAlgorithm returns the hash the message was hashed with: "sha512"
// (what Sign and ssh-keygen write) or "sha256".
func (s *Signature) HashAlgorithm() string { return string(s.sig.HashAlgorithm) }

// Armor returns the signature armored as ssh-keygen writes it.
func (s *Signature) Armor() []byte { return armor(s.sig) }

// Verify checks that the signature is one by its key over message for
// namespace, as ssh-keygen -Y check-novalidate does. It says nothing of
// whether the key is trusted: AllowedSigners.Check does that. A signature
// that verifies for its own namespace but not the one asked is a
// *WrongNamespaceError; any other failure a *VerifyError (both
// ErrBadSignature). An empty namespace is refused: every signature has
// one.
func (s *Signature) Verify(message []byte, namespace string) error {
	if namespace == "" {
		return fmt.Errorf("verify a signature: %w", sshsig.ErrMissingNamespace)
	}
	err := sshsig.Verify(bytes.NewReader(message), s.sig, s.sig.PublicKey, s.sig.HashAlgorithm, namespace)
	if err == nil {
		return nil
	}
	if s.sig.Namespace != namespace {
		// Good for the namespace it names? Then it is a signature for
		// another use; otherwise simply a bad one.
		if sshsig.Verify(bytes.NewReader(message), s.sig, s.sig.PublicKey, s.sig.HashAlgorithm, s.sig.Namespace) == nil {
			return &WrongNamespaceError{Fingerprint: s.Fingerprint(), Want: namespace, Got: s.sig.Namespace}
		}
	}
	return &VerifyError{Fingerprint: s.Fingerprint(), Namespace: namespace, Err: err}
}

// Fingerprint returns the SHA-256 fingerprint of key as ssh-keygen -l
// prints it: "SHA256:" and the unpadded base64 of the SHA-256 of the key's
// wire form. A certificate's is its certified key's, as OpenSSH gives it.
func Fingerprint(key ssh.PublicKey) string {
	return ssh.FingerprintSHA256(plainKey(key))
}

// plainKey returns the certified key of a certificate, else key.
func plainKey(key ssh.PublicKey) ssh.PublicKey {
	if c, ok := key.(*ssh.Certificate); ok && c.Key != nil {
		return c.Key
	}
	return key
}
