package signature

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var message = []byte(`{"id":"0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f","seq":1}` + "\n")

// keyKinds are the keys fdl signs with from a file: ssh-keygen's formats
// and types.
var keyKinds = []struct {
	name  string
	typ   string
	extra []string
	algo  string // the signature algorithm inside the SSHSIG blob
}{
	{"ed25519", "ed25519", nil, "ssh-ed25519"},
	{"rsa", "rsa", []string{"-b", "2048"}, "rsa-sha2-512"},
	{"rsa-pem", "rsa", []string{"-b", "2048", "-m", "PEM"}, "rsa-sha2-512"},
	{"ed25519-pkcs8", "ed25519", []string{"-m", "PKCS8"}, "ssh-ed25519"},
	{"ecdsa", "ecdsa", []string{"-b", "256"}, "ecdsa-sha2-nistp256"},
}

// TestSignKeyFiles: a key read from each kind of private key file signs;
// the signature verifies, names the key by the fingerprint ssh-keygen -l
// prints, hashes with sha512, signs RSA with rsa-sha2-512, and ssh-keygen
// -Y verify accepts it against an allowed signers file.
func TestSignKeyFiles(t *testing.T) {
	t.Parallel()
	for _, k := range keyKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			key := keygen(t, t.TempDir(), k.typ, "alice", k.extra...)
			s := mustLoad(t, key)
			if s.UsesAgent() {
				t.Error("a private key file is used through the agent")
			}
			wantFP := strings.Fields(string(run(t, "", nil, "ssh-keygen", "-l", "-E", "sha256", "-f", key+".pub")))[1]
			if s.Fingerprint() != wantFP {
				t.Errorf("Signer.Fingerprint = %s, ssh-keygen says %s", s.Fingerprint(), wantFP)
			}
			armored := mustSign(t, s, message, Namespace)
			if !bytes.HasPrefix(armored, []byte("-----BEGIN SSH SIGNATURE-----\n")) ||
				!bytes.HasSuffix(armored, []byte("-----END SSH SIGNATURE-----\n")) {
				t.Fatalf("not armored as ssh-keygen armors:\n%s", armored)
			}
			sig := mustParseSignature(t, armored)
			if err := sig.Verify(message, Namespace); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if sig.Fingerprint() != wantFP || sig.Namespace() != "fdl" || sig.HashAlgorithm() != "sha512" {
				t.Errorf("signature: fingerprint %s namespace %q hash %q; want %s, fdl, sha512",
					sig.Fingerprint(), sig.Namespace(), sig.HashAlgorithm(), wantFP)
			}
			if got := sig.sig.Signature.Format; got != k.algo {
				t.Errorf("signature algorithm %s, want %s", got, k.algo)
			}
			allowed := []byte(signersLine(t, "alice@example.com", "", key))
			if err := keygenVerify(t, allowed, "alice@example.com", "fdl", armored, message); err != nil {
				t.Errorf("ssh-keygen -Y verify refuses fdl's signature: %v", err)
			}
			if err := keygenVerify(t, allowed, "alice@example.com", "git", armored, message); err == nil {
				t.Error("ssh-keygen -Y verify accepts fdl's signature for namespace git")
			}
		})
	}
}

// TestSignSameBytesAsSSHKeygen: Ed25519 and RSA signatures are
// deterministic, so fdl's armored signature must be ssh-keygen's, byte for
// byte: same blob, same hash, same armor.
func TestSignSameBytesAsSSHKeygen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, k := range keyKinds[:3] {
		key := keygen(t, dir, k.typ, k.name, k.extra...)
		want := keygenSign(t, "", key, "fdl", message)
		got := mustSign(t, mustLoad(t, key), message, "fdl")
		if !bytes.Equal(got, want) {
			t.Errorf("%s: fdl's signature differs from ssh-keygen's\nfdl:\n%s\nssh-keygen:\n%s", k.name, got, want)
		}
	}
}

// TestVerifySSHKeygenSignatures: what ssh-keygen -Y sign writes (sha512 by
// default, sha256 when asked) parses, verifies and passes Check.
func TestVerifySSHKeygenSignatures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, k := range keyKinds {
		key := keygen(t, dir, k.typ, k.name, k.extra...)
		signers := mustParseSigners(t, signersLine(t, "alice@example.com", "", key))
		for _, hashalg := range []string{"", "sha256", "sha512"} {
			var extra []string
			if hashalg != "" {
				extra = []string{"-O", "hashalg=" + hashalg}
			}
			armored := keygenSign(t, "", key, "fdl", message, extra...)
			sig := mustParseSignature(t, armored)
			if want := map[string]string{"": "sha512"}[hashalg]; want != "" && sig.HashAlgorithm() != want {
				t.Errorf("%s: hash %q, want %q", k.name, sig.HashAlgorithm(), want)
			}
			got, err := signers.Check(sig, message, "fdl", time.Now())
			if err != nil {
				t.Errorf("%s/%s: Check: %v", k.name, hashalg, err)
				continue
			}
			if len(got) != 1 || got[0] != "alice@example.com" {
				t.Errorf("%s/%s: principals %q", k.name, hashalg, got)
			}
			if !bytes.Equal(sig.Armor(), armored) {
				t.Errorf("%s: Armor does not give back ssh-keygen's bytes", k.name)
			}
		}
	}
}

// TestAgentSigner: a public key file, and a literal key::, whose private
// half a real ssh-agent holds, sign through the agent (Ed25519 and RSA,
// RSA with rsa-sha2-512), and ssh-keygen accepts the signatures. A key
// the agent does not hold, no agent, and an agent gone are refused by
// name.
func TestAgentSigner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	socket := startAgent(t)
	ed := keygen(t, dir, "ed25519", "ed")
	rsa := keygen(t, dir, "rsa", "rsa", "-b", "2048")
	other := keygen(t, dir, "ed25519", "other")
	sshAdd(t, socket, ed)
	sshAdd(t, socket, rsa)

	_, edLine := publicKey(t, ed)
	for _, c := range []struct {
		name, spec, key, algo string
	}{
		{"ed25519 public key file", ed + ".pub", ed, "ssh-ed25519"},
		{"rsa public key file", rsa + ".pub", rsa, "rsa-sha2-512"},
		{"literal key::", "key::" + edLine, ed, "ssh-ed25519"},
		{"literal ssh- (Git's older form)", edLine, ed, "ssh-ed25519"},
	} {
		s := mustLoad(t, c.spec, AgentSocket(socket))
		if !s.UsesAgent() {
			t.Errorf("%s: not used through the agent", c.name)
		}
		armored := mustSign(t, s, message, Namespace)
		sig := mustParseSignature(t, armored)
		if err := sig.Verify(message, Namespace); err != nil {
			t.Errorf("%s: Verify: %v", c.name, err)
		}
		if sig.sig.Signature.Format != c.algo {
			t.Errorf("%s: algorithm %s, want %s", c.name, sig.sig.Signature.Format, c.algo)
		}
		allowed := []byte(signersLine(t, "alice@example.com", "", c.key))
		if err := keygenVerify(t, allowed, "alice@example.com", "fdl", armored, message); err != nil {
			t.Errorf("%s: ssh-keygen -Y verify refuses: %v", c.name, err)
		}
		// What ssh-keygen signs through the same agent, fdl reads.
		theirs := mustParseSignature(t, keygenSign(t, socket, c.key+".pub", "fdl", message))
		if _, err := mustParseSigners(t, string(allowed)).Check(theirs, message, "fdl", time.Now()); err != nil {
			t.Errorf("%s: a signature ssh-keygen made through the agent: %v", c.name, err)
		}
	}

	ctx := context.Background()
	_, err := LoadSigner(ctx, other+".pub", AgentSocket(socket))
	if !errors.Is(err, ErrNotInAgent) || !errors.Is(err, ErrSigningKey) || !strings.Contains(err.Error(), "ssh-add") {
		t.Errorf("a key the agent does not hold: %v", err)
	}
	_, err = LoadSigner(ctx, ed+".pub", AgentSocket(""))
	if !errors.Is(err, ErrNoAgent) || !strings.Contains(err.Error(), "SSH_AUTH_SOCK") {
		t.Errorf("no agent: %v", err)
	}
	_, err = LoadSigner(ctx, ed+".pub", AgentSocket(filepath.Join(dir, "no-such.sock")))
	if !errors.Is(err, ErrNoAgent) {
		t.Errorf("an agent socket nobody listens on: %v", err)
	}

	// The agent forgets the key after LoadSigner: Sign says so.
	s := mustLoad(t, rsa+".pub", AgentSocket(socket))
	run(t, socket, nil, "ssh-add", "-q", "-d", rsa)
	if _, err := s.Sign(ctx, message, Namespace); !errors.Is(err, ErrNotInAgent) {
		t.Errorf("Sign with a key the agent dropped: %v", err)
	}
	// A cancelled context stops an exchange with the agent.
	s = mustLoad(t, ed+".pub", AgentSocket(socket))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Sign(cancelled, message, Namespace); !errors.Is(err, context.Canceled) {
		t.Errorf("Sign with a cancelled context: %v", err)
	}
}

// TestEncryptedKey: an encrypted private key (OpenSSH format, and legacy
// PEM) is refused with a message saying to load it into ssh-agent; once
// the agent holds that key, the same file signs through the agent, as
// ssh-keygen -Y sign does.
func TestEncryptedKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	for _, c := range []struct {
		name, typ string
		extra     []string
	}{
		{"openssh", "ed25519", nil},
		{"pem", "rsa", []string{"-b", "2048", "-m", "PEM"}},
	} {
		key := keygen(t, dir, c.typ, c.name, append([]string{"-N", "correct horse"}, c.extra...)...)
		_, err := LoadSigner(ctx, key, AgentSocket(""))
		if !errors.Is(err, ErrEncryptedKey) || !errors.Is(err, ErrSigningKey) {
			t.Fatalf("%s: encrypted key: %v", c.name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "encrypted") || !strings.Contains(msg, "ssh-agent") ||
			!strings.Contains(msg, "ssh-add "+key) {
			t.Errorf("%s: the message does not say to load the key into ssh-agent: %s", c.name, msg)
		}
		// An agent that does not hold it changes nothing.
		socket := startAgent(t)
		if _, err := LoadSigner(ctx, key, AgentSocket(socket)); !errors.Is(err, ErrEncryptedKey) {
			t.Errorf("%s: encrypted key, agent without it: %v", c.name, err)
		}
		// The agent gets the key (from a decrypted copy: ssh-add would ask
		// for the passphrase).
		plain := filepath.Join(dir, c.name+"-plain")
		data, err := os.ReadFile(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(plain, data, 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, "", nil, "ssh-keygen", "-q", "-p", "-P", "correct horse", "-N", "", "-f", plain)
		sshAdd(t, socket, plain)
		s := mustLoad(t, key, AgentSocket(socket))
		if !s.UsesAgent() {
			t.Errorf("%s: not used through the agent", c.name)
		}
		sig := mustParseSignature(t, mustSign(t, s, message, Namespace))
		if err := sig.Verify(message, Namespace); err != nil {
			t.Errorf("%s: Verify: %v", c.name, err)
		}
	}
}

// TestLoadSignerRefusals: what is not a key is refused by name.
func TestLoadSignerRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, want string }{
		{"", "no key was given"},
		{filepath.Join(dir, "missing"), "cannot read it"},
		{garbage, "neither a private key nor a public key"},
		{broken, "not a private key fdl can read"},
		{"key::ssh-ed25519 !!!", "not a public key"},
		{"key::ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOrJ0HZFHcjx7nMkjFTrpWcHXfv8fkpkyi2ZK4xsSWvE", "its bytes are of type ssh-ed25519"},
	} {
		_, err := LoadSigner(context.Background(), c.spec, AgentSocket(""))
		if !errors.Is(err, ErrSigningKey) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadSigner(%q) = %v, want an error saying %q", c.spec, err, c.want)
		}
	}
	s := mustLoad(t, keygen(t, dir, "ed25519", "k"))
	if _, err := s.Sign(context.Background(), message, ""); err == nil {
		t.Error("Sign with no namespace succeeded")
	}
}

// TestLoadSignerHome: "~/" names the home directory, as in Git's
// configuration. Not parallel: it sets HOME.
func TestLoadSignerHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	key := keygen(t, home, "ed25519", "id_ed25519")
	s := mustLoad(t, "~/id_ed25519")
	pub, _ := publicKey(t, key)
	if s.Fingerprint() != Fingerprint(pub) {
		t.Errorf("~/id_ed25519 loaded key %s, want %s", s.Fingerprint(), Fingerprint(pub))
	}
}
