package signature

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestCertificates: signatures made by ssh-keygen with a user certificate
// issued by an authority that a cert-authority line trusts: accepted for
// the certificate's principals the line allows, inside the certificate's
// validity; refused (CertificateError) outside it, for a principal the
// certificate does not name, for a host certificate, and for an authority
// listed without cert-authority. ssh-keygen -Y verify decides the same.
//
// It is one piece: one authority and its certificates, made once with
// ssh-keygen, and the checks over them, each beside what ssh-keygen
// decides.
func TestCertificates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := keygen(t, dir, "ed25519", "ca")
	user := keygen(t, dir, "ed25519", "user")
	host := keygen(t, dir, "ed25519", "host")
	run(t, "", nil, "ssh-keygen", "-q", "-s", ca, "-I", "user-id", "-n", "alice@example.com,alice@other.org",
		"-V", "20200101000000Z:20400101000000Z", user+".pub")
	run(t, "", nil, "ssh-keygen", "-q", "-s", ca, "-I", "host-id", "-h", "-n", "alice@example.com", host+".pub")

	text := signersLine(t, "*@example.com", "cert-authority", ca)
	a := mustParseSigners(t, text)
	armored := keygenSign(t, "", user+"-cert.pub", "fdl", message)
	sig := mustParseSignature(t, armored)
	if _, ok := sig.PublicKey().(*ssh.Certificate); !ok {
		t.Fatalf("ssh-keygen signed with %T, not the certificate", sig.PublicKey())
	}
	userPub, _ := publicKey(t, user)
	if sig.Fingerprint() != ssh.FingerprintSHA256(userPub) {
		t.Errorf("a certificate's fingerprint is %s, want its key's %s", sig.Fingerprint(), ssh.FingerprintSHA256(userPub))
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	got, err := a.Check(sig, message, "fdl", at)
	if err != nil || fmt.Sprint(got) != "[alice@example.com]" {
		t.Errorf("Check = %q, %v; want the certificate's principal the line allows", got, err)
	}
	if err := a.CheckPrincipal(sig, message, "fdl", "alice@example.com", at); err != nil {
		t.Errorf("CheckPrincipal(alice@example.com): %v", err)
	}
	var ce *CertificateError
	for _, c := range []struct {
		name      string
		principal string
		at        time.Time
		want      string
	}{
		{"before the certificate", "", time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC), "valid only from"},
		{"after the certificate", "", time.Date(2041, 1, 1, 0, 0, 0, 0, time.UTC), "expired"},
		{"a principal the certificate does not name", "bob@example.com", at, "not valid for principal"},
	} {
		var err error
		if c.principal == "" {
			_, err = a.Check(sig, message, "fdl", c.at)
		} else {
			err = a.CheckPrincipal(sig, message, "fdl", c.principal, c.at)
		}
		if !errors.As(err, &ce) || !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a CertificateError saying %q", c.name, err, c.want)
		}
	}
	// The line allows no principal the certificate names.
	other := mustParseSigners(t, signersLine(t, "*@fdl.dev", "cert-authority", ca))
	if _, err := other.Check(sig, message, "fdl", at); !errors.As(err, &ce) || !strings.Contains(err.Error(), "none of which") {
		t.Errorf("no principal allowed: %v", err)
	}
	// The authority listed as a plain key trusts no certificate.
	plain := mustParseSigners(t, signersLine(t, "*@example.com", "", ca))
	if _, err := plain.Check(sig, message, "fdl", at); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("authority without cert-authority: %v", err)
	}
	// A host certificate is not a signer.
	hostSig := mustParseSignature(t, keygenSign(t, "", host+"-cert.pub", "fdl", message))
	if _, err := a.Check(hostSig, message, "fdl", at); !errors.As(err, &ce) || !strings.Contains(err.Error(), "host certificate") {
		t.Errorf("host certificate: %v", err)
	}
	// A certificate whose authority's signature was changed is refused.
	forged := mustParseSignature(t, armored)
	cert := *forged.sig.PublicKey.(*ssh.Certificate)
	cert.ValidPrincipals = []string{"mallory@example.com"}
	forged.sig.PublicKey = &cert
	// (The SSHSIG signature over the message is by the same private key,
	// so only the certificate's own signature is wrong.)
	if _, err := a.Check(mustParseSignature(t, forged.Armor()), message, "fdl", at); !errors.As(err, &ce) ||
		!strings.Contains(err.Error(), "does not check out") {
		t.Errorf("a certificate with a principal changed: %v", err)
	}

	// ssh-keygen agrees.
	for _, c := range []struct {
		principal string
		verify    string
		ok        bool
	}{
		{"alice@example.com", "20300101", true},
		{"alice@example.com", "20410101", false},
		{"bob@example.com", "20300101", false},
		{"alice@other.org", "20300101", false}, // the line does not allow it
	} {
		err := keygenVerify(t, []byte(text), c.principal, "fdl", armored, message, "-O", "verify-time="+c.verify+"Z")
		if (err == nil) != c.ok {
			t.Errorf("ssh-keygen verify %s at %s: %v, want ok=%v", c.principal, c.verify, err, c.ok)
		}
		local, _ := time.Parse("20060102", c.verify)
		ferr := a.CheckPrincipal(sig, message, "fdl", c.principal, local)
		if (ferr == nil) != c.ok {
			t.Errorf("fdl verify %s at %s: %v, want ok=%v", c.principal, c.verify, ferr, c.ok)
		}
	}
}
