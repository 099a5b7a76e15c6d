package signature

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Check decides whether sig is a good signature over message for
// namespace by a signer the file allows at time at, and returns who
// signed: the principals of every line that accepts the signature, in
// file order, without repeats. For a line with a plain key these are the
// line's principal patterns as written (negated ones left out), so a
// pattern such as "*@example.com" can be among them; for a cert-authority
// line, the certificate's principals the line's patterns allow.
//
// The rules are ssh-keygen's (-Y find-principals, then -Y verify), except
// that Check also honours namespaces= (find-principals does not) and
// returns every accepting line's principals, not the first's:
//
//  1. the signature must verify over message for namespace
//     (*VerifyError, *WrongNamespaceError: ErrBadSignature);
//  2. a line accepts it when its key is the signing key, or, with
//     cert-authority, the key that issued the signing certificate, and
//     that certificate is a user certificate valid at at, naming at least
//     one principal the line allows, with a good signature by the
//     authority (*CertificateError otherwise);
//  3. and its namespaces= pattern-list, if any, matches namespace
//     (*NamespaceNotAllowedError otherwise);
//  4. and at is within its valid-after and valid-before, to the second,
//     both inclusive (*ValidityError otherwise).
//
// When no line lists the key, the error is an *UnknownKeyError; when some
// do but none accepts, the error is the first such line's. Every refusal
// of a good signature wraps ErrNotAllowed. at is the time the signature
// is judged at: Git uses the signed commit's time; ssh-keygen the present.
func (a *AllowedSigners) Check(sig *Signature, message []byte, namespace string, at time.Time) ([]string, error) {
	return a.check(sig, message, namespace, "", at)
}

// CheckPrincipal is Check for one identity, as ssh-keygen -Y verify -I
// principal does: only lines whose principals pattern-list matches
// principal are read, and a certificate must name principal itself. A key
// listed only for other principals is an *UnknownKeyError naming
// principal.
func (a *AllowedSigners) CheckPrincipal(sig *Signature, message []byte, namespace, principal string, at time.Time) error {
	if principal == "" {
		return errors.New("check a signature for a principal: the principal is empty")
	}
	_, err := a.check(sig, message, namespace, principal, at)
	return err
}

func (a *AllowedSigners) check(sig *Signature, message []byte, namespace, principal string, at time.Time) ([]string, error) {
	if sig == nil || sig.sig == nil {
		return nil, &FormatError{Reason: "there is no signature"}
	}
	if err := sig.Verify(message, namespace); err != nil {
		return nil, err
	}
	key, fp := sig.PublicKey(), sig.Fingerprint()
	var (
		found    []string
		firstErr error
		listed   bool
	)
	for i := range a.Signers {
		s := &a.Signers[i]
		if principal != "" && matchPatternList(principal, s.Principals) != 1 {
			continue
		}
		names, matched, err := s.accepts(a.File, key, fp, namespace, principal, at)
		if !matched {
			continue
		}
		listed = true
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		for _, n := range names {
			if !slices.Contains(found, n) {
				found = append(found, n)
			}
		}
	}
	switch {
	case len(found) > 0:
		return found, nil
	case listed:
		return nil, firstErr
	default:
		return nil, &UnknownKeyError{File: a.File, Fingerprint: fp, Principal: principal}
	}
}

// accepts applies the line to a signing key: matched says whether the
// line names the key (or its certificate's authority); names are the
// principals it signs for when the line accepts it, err why not.
func (s *AllowedSigner) accepts(file string, key ssh.PublicKey, fp, namespace, principal string, at time.Time) (names []string, matched bool, err error) {
	cert, isCert := key.(*ssh.Certificate)
	switch {
	case !s.CertAuthority:
		if !bytes.Equal(s.Key.Marshal(), key.Marshal()) {
			return nil, false, nil
		}
		if principal != "" {
			names = []string{principal}
		} else {
			names = positivePatterns(s.Principals)
		}
	case isCert && cert.SignatureKey != nil &&
		bytes.Equal(plainKey(s.Key).Marshal(), plainKey(cert.SignatureKey).Marshal()):
		names, err = s.certPrincipals(cert, principal, at)
		if err != nil {
			return nil, true, &CertificateError{File: file, Line: s.Line, Fingerprint: fp, Reason: err.Error()}
		}
	default:
		return nil, false, nil
	}
	if s.HasNamespaces && matchPatternList(namespace, s.Namespaces) != 1 {
		return nil, true, &NamespaceNotAllowedError{File: file, Line: s.Line, Fingerprint: fp,
			Namespace: namespace, Allowed: s.Namespaces}
	}
	if (!s.ValidAfter.IsZero() && at.Unix() < s.ValidAfter.Unix()) ||
		(!s.ValidBefore.IsZero() && at.Unix() > s.ValidBefore.Unix()) {
		return nil, true, &ValidityError{File: file, Line: s.Line, Fingerprint: fp, At: at,
			ValidAfter: s.ValidAfter, ValidBefore: s.ValidBefore}
	}
	return names, true, nil
}

// certPrincipals checks a certificate issued by the line's authority, as
// OpenSSH's sshkey_cert_check_authority does for signatures, and returns
// the principals it signs for: principal, when one is asked (the
// certificate must name it), else the certificate's principals that the
// line's pattern-list allows.
func (s *AllowedSigner) certPrincipals(cert *ssh.Certificate, principal string, at time.Time) ([]string, error) {
	if cert.CertType != ssh.UserCert {
		return nil, errors.New("is a host certificate, not a user certificate")
	}
	if len(cert.ValidPrincipals) == 0 {
		return nil, errors.New("names no principal (a certificate must name the identities it signs for)")
	}
	var names []string
	if principal != "" {
		if !slices.Contains(cert.ValidPrincipals, principal) {
			return nil, fmt.Errorf("is not valid for principal %q (it names %s)", principal, strings.Join(cert.ValidPrincipals, ", "))
		}
		names = []string{principal}
	} else {
		for _, p := range cert.ValidPrincipals {
			if matchPatternList(p, s.Principals) == 1 && !slices.Contains(names, p) {
				names = append(names, p)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("names principals %s, none of which the line's %q allows",
				strings.Join(cert.ValidPrincipals, ", "), s.Principals)
		}
	}
	unix := at.Unix()
	if int64(cert.ValidAfter) < 0 || unix < int64(cert.ValidAfter) {
		return nil, fmt.Errorf("is valid only from %s, and the time checked is %s",
			certTime(cert.ValidAfter), at.UTC().Format(time.RFC3339))
	}
	if cert.ValidBefore != ssh.CertTimeInfinity && (int64(cert.ValidBefore) < 0 || unix >= int64(cert.ValidBefore)) {
		return nil, fmt.Errorf("expired at %s, and the time checked is %s",
			certTime(cert.ValidBefore), at.UTC().Format(time.RFC3339))
	}
	// The authority's signature over the certificate; the options a login
	// would obey (force-command, source-address) do not bear on a
	// signature, so none is refused here, as OpenSSH refuses none.
	checker := ssh.CertChecker{
		Clock:                    func() time.Time { return at },
		SupportedCriticalOptions: slices.Collect(maps.Keys(cert.CriticalOptions)),
	}
	if err := checker.CheckCert(names[0], cert); err != nil {
		return nil, fmt.Errorf("does not check out (%v)", err)
	}
	return names, nil
}

// certTime formats a certificate's time (seconds since 1970).
func certTime(t uint64) string {
	if int64(t) < 0 {
		return "forever"
	}
	return time.Unix(int64(t), 0).UTC().Format(time.RFC3339)
}

// positivePatterns returns the patterns of a pattern-list that are not
// negated.
func positivePatterns(list string) []string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p != "" && !strings.HasPrefix(p, "!") {
			out = append(out, p)
		}
	}
	return out
}
