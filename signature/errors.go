package signature

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Each typed error below wraps one of them (and, where
// it is a kind of a wider refusal, that one too), so a caller tests with
// errors.Is and reads the fields with errors.As. No message names an fdl
// command: the command layer adds its hints.
var (
	// ErrMalformed: the bytes are not an armored SSH signature of version
	// 1 (FormatError).
	ErrMalformed = errors.New("not a valid SSH signature")
	// ErrBadSignature: the signature does not verify over the message for
	// the namespace asked (VerifyError, and WrongNamespaceError).
	ErrBadSignature = errors.New("signature does not verify")
	// ErrWrongNamespace: the signature is good, but was made for another
	// namespace (WrongNamespaceError; also ErrBadSignature).
	ErrWrongNamespace = errors.New("signature was made for another namespace")

	// ErrNotAllowed is wrapped by every refusal of a good signature by an
	// allowed signers file: ErrUnknownKey, ErrNamespaceNotAllowed,
	// ErrOutsideValidity, ErrCertificate.
	ErrNotAllowed = errors.New("signer is not allowed")
	// ErrUnknownKey: no line of the file lists the signing key (for the
	// principal asked, if one was) (UnknownKeyError).
	ErrUnknownKey = errors.New("key is not in the allowed signers file")
	// ErrNamespaceNotAllowed: the key's line limits it to other namespaces
	// (NamespaceNotAllowedError).
	ErrNamespaceNotAllowed = errors.New("key is not allowed to sign in this namespace")
	// ErrOutsideValidity: the key's line is not valid at the time checked
	// (ValidityError).
	ErrOutsideValidity = errors.New("key is not valid at that time")
	// ErrCertificate: the signing key is a certificate that a
	// cert-authority line does not accept (CertificateError).
	ErrCertificate = errors.New("certificate is not accepted")

	// ErrSignersFile: an allowed signers file does not parse
	// (SignersFileError).
	ErrSignersFile = errors.New("invalid allowed signers file")

	// ErrSigningKey is wrapped by every failure to load or use a signing
	// key (SigningKeyError); one of the three below says why where it is
	// one of them.
	ErrSigningKey = errors.New("cannot use the signing key")
	// ErrEncryptedKey: the private key file is encrypted with a
	// passphrase and no ssh-agent holds it.
	ErrEncryptedKey = errors.New("private key is encrypted")
	// ErrNoAgent: the key needs ssh-agent and none can be reached.
	ErrNoAgent = errors.New("no ssh-agent")
	// ErrNotInAgent: ssh-agent runs but does not hold the key.
	ErrNotInAgent = errors.New("ssh-agent does not hold the key")

	// ErrTagPayload: bytes that are not a tag signature payload, or fields
	// that cannot make one (TagPayloadError).
	ErrTagPayload = errors.New("invalid tag signature payload")
)

// FormatError: bytes that are not an armored SSH signature fdl reads.
// Reason says what is wrong ("wrong magic", "unknown version 2", …). It
// wraps ErrMalformed.
type FormatError struct {
	Reason string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%v: %s", ErrMalformed, e.Reason)
}

func (e *FormatError) Unwrap() error { return ErrMalformed }

// VerifyError: a well-formed signature that does not verify over the
// message: the message or the signature was changed after signing, or the
// signature was made over other bytes. It wraps ErrBadSignature.
type VerifyError struct {
	Fingerprint string // the key the signature names (SHA256:…)
	Namespace   string
	Err         error // the cryptographic failure, for debugging
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%v: the signature by key %s (namespace %q) is not one over these bytes; the message or the signature was changed, or the signature belongs to something else",
		ErrBadSignature, e.Fingerprint, e.Namespace)
}

func (e *VerifyError) Unwrap() error { return ErrBadSignature }

// WrongNamespaceError: a signature that verifies, but for namespace Got,
// not the namespace Want it was checked for: a signature made for another
// use (another tool, or another kind of fdl object) is not one for this
// use. It wraps ErrWrongNamespace and ErrBadSignature.
type WrongNamespaceError struct {
	Fingerprint string
	Want, Got   string
}

func (e *WrongNamespaceError) Error() string {
	return fmt.Sprintf("%v: the signature by key %s was made for namespace %q, not %q",
		ErrWrongNamespace, e.Fingerprint, e.Got, e.Want)
}

func (e *WrongNamespaceError) Unwrap() []error { return []error{ErrWrongNamespace, ErrBadSignature} }

// UnknownKeyError: a good signature by a key that no line of the allowed
// signers file lists (or none for Principal, when one was asked). It
// wraps ErrUnknownKey and ErrNotAllowed.
type UnknownKeyError struct {
	File        string
	Fingerprint string
	Principal   string // the principal asked, or ""
}

func (e *UnknownKeyError) Error() string {
	if e.Principal != "" {
		return fmt.Sprintf("%v: %s lists key %s for no principal matching %q; add a line for it to trust this signer",
			ErrUnknownKey, e.File, e.Fingerprint, e.Principal)
	}
	return fmt.Sprintf("%v: %s does not list key %s; add a line for it to trust this signer",
		ErrUnknownKey, e.File, e.Fingerprint)
}

func (e *UnknownKeyError) Unwrap() []error { return []error{ErrUnknownKey, ErrNotAllowed} }

// NamespaceNotAllowedError: the key's line (File:Line) has a namespaces=
// option that Namespace does not match. It wraps ErrNamespaceNotAllowed
// and ErrNotAllowed.
type NamespaceNotAllowedError struct {
	File        string
	Line        int
	Fingerprint string
	Namespace   string
	Allowed     string // the line's namespaces= pattern-list
}

func (e *NamespaceNotAllowedError) Error() string {
	return fmt.Sprintf("%v: %s:%d allows key %s only for namespaces %q, not %q",
		ErrNamespaceNotAllowed, e.File, e.Line, e.Fingerprint, e.Allowed, e.Namespace)
}

func (e *NamespaceNotAllowedError) Unwrap() []error {
	return []error{ErrNamespaceNotAllowed, ErrNotAllowed}
}

// ValidityError: the key's line (File:Line) is not valid At: before its
// valid-after or after its valid-before time (zero when the line has
// none). It wraps ErrOutsideValidity and ErrNotAllowed.
type ValidityError struct {
	File        string
	Line        int
	Fingerprint string
	At          time.Time
	ValidAfter  time.Time
	ValidBefore time.Time
}

func (e *ValidityError) Error() string {
	at := e.At.UTC().Format(time.RFC3339)
	if !e.ValidAfter.IsZero() && e.At.Unix() < e.ValidAfter.Unix() {
		return fmt.Sprintf("%v: %s:%d makes key %s valid only from %s, and the time checked is %s",
			ErrOutsideValidity, e.File, e.Line, e.Fingerprint, e.ValidAfter.UTC().Format(time.RFC3339), at)
	}
	return fmt.Sprintf("%v: %s:%d makes key %s valid only until %s, and the time checked is %s",
		ErrOutsideValidity, e.File, e.Line, e.Fingerprint, e.ValidBefore.UTC().Format(time.RFC3339), at)
}

func (e *ValidityError) Unwrap() []error { return []error{ErrOutsideValidity, ErrNotAllowed} }

// CertificateError: the signing key is a certificate issued by a
// cert-authority of File:Line, and the certificate is not valid for the
// use (Reason: expired, not a user certificate, no principal allowed, a
// bad CA signature, …). It wraps ErrCertificate and ErrNotAllowed.
type CertificateError struct {
	File        string
	Line        int
	Fingerprint string
	Reason      string
}

func (e *CertificateError) Error() string {
	return fmt.Sprintf("%v: the certificate of key %s, issued by the authority of %s:%d, %s",
		ErrCertificate, e.Fingerprint, e.File, e.Line, e.Reason)
}

func (e *CertificateError) Unwrap() []error { return []error{ErrCertificate, ErrNotAllowed} }

// SignersFileError: line Line of the allowed signers file File does not
// parse (Reason says why). It wraps ErrSignersFile.
type SignersFileError struct {
	File   string
	Line   int
	Reason string
}

func (e *SignersFileError) Error() string {
	return fmt.Sprintf("%s:%d: %v: %s (the format is the one of ssh-keygen's ALLOWED SIGNERS)",
		e.File, e.Line, ErrSignersFile, e.Reason)
}

func (e *SignersFileError) Unwrap() error { return ErrSignersFile }

// SigningKeyError: the signing key Spec (a file, or "key::…") cannot be
// loaded or used. Reason says why and what to do; Err is ErrEncryptedKey,
// ErrNoAgent, ErrNotInAgent or the underlying failure. It wraps
// ErrSigningKey and Err.
type SigningKeyError struct {
	Spec   string
	Reason string
	Err    error
}

func (e *SigningKeyError) Error() string {
	return fmt.Sprintf("%v %s: %s", ErrSigningKey, e.Spec, e.Reason)
}

func (e *SigningKeyError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrSigningKey}
	}
	return []error{ErrSigningKey, e.Err}
}

// TagPayloadError: bytes that are not a tag signature payload, or fields
// that cannot be put in one. It wraps ErrTagPayload.
type TagPayloadError struct {
	Reason string
}

func (e *TagPayloadError) Error() string {
	return fmt.Sprintf("%v: %s", ErrTagPayload, e.Reason)
}

func (e *TagPayloadError) Unwrap() error { return ErrTagPayload }
