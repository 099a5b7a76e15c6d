package signature

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Namespace is the SSHSIG namespace fdl signs and checks its objects in.
// A signature made by the same key for Git ("git") or for files ("file")
// is not one for fdl, and the reverse.
const Namespace = "fdl"

// hash is the hash fdl signs with: sha512, ssh-keygen's default.
const hash = sshsig.HashSHA512

// literalPrefix marks a public key given literally, as Git's
// user.signingKey takes it ("key::ssh-ed25519 AAAA… comment").
const literalPrefix = "key::"

// Signer signs messages in the SSH signature format (SSHSIG) with one key:
// a private key read from a file, or a key held by ssh-agent. Make one
// with LoadSigner or NewSigner. A Signer holds no connection: one to the
// agent is opened for each Sign and closed after it.
type Signer struct {
	pub    ssh.PublicKey
	key    ssh.Signer // the key, when it was read from a file
	socket string     // the agent's socket, when the agent holds the key
}

// LoadOption changes how LoadSigner finds a key.
type LoadOption func(*loadOptions)

type loadOptions struct {
	socket    string
	socketSet bool
}

// AgentSocket makes LoadSigner (and the Signer's Sign) use the ssh-agent
// listening at the Unix socket path, instead of the one SSH_AUTH_SOCK
// names. An empty path means no agent.
func AgentSocket(path string) LoadOption {
	return func(o *loadOptions) { o.socket, o.socketSet = path, true }
}

// LoadSigner returns the Signer that spec names. spec is what Git's
// user.signingKey takes for gpg.format ssh:
//
//   - the path of an unencrypted private key file (OpenSSH format, or
//     PEM: PKCS#1, PKCS#8, SEC 1), used directly;
//   - the path of an encrypted private key file: used through ssh-agent if
//     the agent holds that key, and refused otherwise (ErrEncryptedKey:
//     fdl asks for no passphrase; load the key into ssh-agent with ssh-add);
//   - the path of a public key file ("ssh-ed25519 AAAA… comment", as in
//     id_ed25519.pub, or a -cert.pub certificate) whose private half
//     ssh-agent holds;
//   - a public key given literally after "key::" (Git's form), or starting
//     with "ssh-" (Git's older form), whose private half ssh-agent holds.
//
// A path beginning with "~/" is read from the home directory. The agent is
// the one at SSH_AUTH_SOCK unless AgentSocket says otherwise; without one,
// or when it does not hold the key, the key is refused (ErrNoAgent,
// ErrNotInAgent). Ed25519, RSA (signed with rsa-sha2-512, as ssh-keygen
// does) and ECDSA keys are read from files; through the agent, whatever
// it signs with (security keys too). Every failure is a *SigningKeyError
// naming spec, but for ctx's own error when ctx ends while the agent is
// asked.
func LoadSigner(ctx context.Context, spec string, opts ...LoadOption) (*Signer, error) {
	o := loadOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if !o.socketSet {
		o.socket = os.Getenv("SSH_AUTH_SOCK")
	}
	if strings.TrimSpace(spec) == "" {
		return nil, &SigningKeyError{Spec: `""`, Reason: "no key was given: name a private key file, a public key file whose key ssh-agent holds, or key::<public key>"}
	}
	if lit, ok := strings.CutPrefix(spec, literalPrefix); ok || strings.HasPrefix(spec, "ssh-") {
		if !ok {
			lit = spec
		}
		pub, _, err := parsePublicKeyLine(lit)
		if err != nil {
			return nil, &SigningKeyError{Spec: spec, Reason: fmt.Sprintf("not a public key: %v", err), Err: err}
		}
		return agentSigner(ctx, spec, pub, o.socket, "")
	}
	path := spec
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, &SigningKeyError{Spec: spec, Reason: fmt.Sprintf("cannot find the home directory: %v", err), Err: err}
		}
		path = filepath.Join(home, rest)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &SigningKeyError{Spec: spec, Reason: fmt.Sprintf("cannot read it: %v", err), Err: err}
	}
	if bytes.Contains(data, []byte("PRIVATE KEY-----")) {
		return fileSigner(ctx, spec, path, data, o.socket)
	}
	pub, _, err := parsePublicKeyLine(firstLine(data))
	if err != nil {
		return nil, &SigningKeyError{Spec: spec, Reason: fmt.Sprintf("neither a private key nor a public key file (%v)", err), Err: err}
	}
	return agentSigner(ctx, spec, pub, o.socket, "")
}

// fileSigner reads a private key file.
func fileSigner(ctx context.Context, spec, path string, data []byte, socket string) (*Signer, error) {
	if block, _ := pem.Decode(data); block != nil && block.Type == "ENCRYPTED PRIVATE KEY" {
		return encryptedSigner(ctx, spec, path, nil, socket)
	}
	raw, err := ssh.ParseRawPrivateKey(data)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return encryptedSigner(ctx, spec, path, missing.PublicKey, socket)
		}
		return nil, &SigningKeyError{Spec: spec, Reason: fmt.Sprintf("not a private key fdl can read: %v", err), Err: err}
	}
	key, err := ssh.NewSignerFromKey(raw)
	if err != nil {
		return nil, &SigningKeyError{Spec: spec, Reason: fmt.Sprintf("cannot sign with this key: %v", err), Err: err}
	}
	return NewSigner(key)
}

// encryptedSigner uses an encrypted key through the agent, when the agent
// holds it, as ssh-keygen -Y sign does; pub is the key's public half when
// the file says it (OpenSSH format), else the one of path.pub is tried.
func encryptedSigner(ctx context.Context, spec, path string, pub ssh.PublicKey, socket string) (*Signer, error) {
	hint := fmt.Sprintf("the private key is encrypted and fdl asks for no passphrase: load it into ssh-agent (ssh-add %s) and sign again", path)
	if pub == nil {
		if data, err := os.ReadFile(path + ".pub"); err == nil {
			pub, _, _ = parsePublicKeyLine(firstLine(data))
		}
	}
	if pub == nil || socket == "" {
		return nil, &SigningKeyError{Spec: spec, Reason: hint, Err: ErrEncryptedKey}
	}
	s, err := agentSigner(ctx, spec, pub, socket, path)
	if err != nil {
		var ke *SigningKeyError
		if errors.As(err, &ke) && (errors.Is(ke.Err, ErrNotInAgent) || errors.Is(ke.Err, ErrNoAgent)) {
			return nil, &SigningKeyError{Spec: spec, Reason: hint + " (" + ke.Reason + ")", Err: ErrEncryptedKey}
		}
		return nil, err
	}
	return s, nil
}

// agentSigner checks that the agent at socket holds pub. privPath, when
// known, is the private key file to name in the hint.
func agentSigner(ctx context.Context, spec string, pub ssh.PublicKey, socket, privPath string) (*Signer, error) {
	s := &Signer{pub: pub, socket: socket}
	err := s.withAgent(ctx, func(ssh.Signer) error { return nil })
	if err != nil {
		var ke *SigningKeyError
		if errors.As(err, &ke) {
			ke.Spec = spec
			if errors.Is(ke.Err, ErrNotInAgent) {
				what := "the private key file"
				if privPath != "" {
					what = privPath
				}
				ke.Reason += fmt.Sprintf("; add it with ssh-add %s, or name the private key file instead", what)
			}
		}
		return nil, err
	}
	return s, nil
}

// NewSigner returns a Signer over key (a private key held in memory, or
// any ssh.Signer). An RSA key must offer rsa-sha2-512 signatures
// (ssh.AlgorithmSigner), as every x/crypto/ssh signer does.
func NewSigner(key ssh.Signer) (*Signer, error) {
	if key == nil || key.PublicKey() == nil {
		return nil, &SigningKeyError{Spec: "(in memory)", Reason: "no key"}
	}
	if key.PublicKey().Type() == ssh.KeyAlgoRSA {
		if _, ok := key.(ssh.AlgorithmSigner); !ok {
			return nil, &SigningKeyError{Spec: "(in memory)", Reason: "this RSA signer cannot make rsa-sha2-512 signatures, which SSHSIG requires"}
		}
	}
	return &Signer{pub: key.PublicKey(), key: key}, nil
}

// PublicKey returns the signing key's public half (a certificate, when
// the agent signs with one).
func (s *Signer) PublicKey() ssh.PublicKey { return s.pub }

// Fingerprint returns the signing key's SHA-256 fingerprint as ssh-keygen
// prints it ("SHA256:…").
func (s *Signer) Fingerprint() string { return Fingerprint(s.pub) }

// UsesAgent reports whether the private key is held by ssh-agent.
func (s *Signer) UsesAgent() bool { return s.key == nil }

// Sign signs message for namespace (Namespace, "fdl", for fdl's objects;
// never empty) with a sha512 hash, and returns the armored signature,
// byte for byte what ssh-keygen -Y sign -n namespace writes for the same
// key and message where the key's signatures are deterministic (Ed25519,
// RSA). Through the agent, ctx bounds the exchange (its deadline, its
// cancellation); an agent that stopped holding the key since LoadSigner
// is ErrNotInAgent.
func (s *Signer) Sign(ctx context.Context, message []byte, namespace string) ([]byte, error) {
	if namespace == "" {
		return nil, fmt.Errorf("sign: %w", sshsig.ErrMissingNamespace)
	}
	sign := func(key ssh.Signer) ([]byte, error) {
		sig, err := sshsig.Sign(bytes.NewReader(message), key, hash, namespace)
		if err != nil {
			return nil, &SigningKeyError{Spec: s.Fingerprint(), Reason: fmt.Sprintf("signing failed: %v", err), Err: err}
		}
		return armor(sig), nil
	}
	if s.key != nil {
		return sign(s.key)
	}
	var out []byte
	err := s.withAgent(ctx, func(key ssh.Signer) error {
		var err error
		out, err = sign(key)
		return err
	})
	return out, err
}

// withAgent connects to the agent, finds the Signer's key among the ones
// it holds and calls fn with it.
func (s *Signer) withAgent(ctx context.Context, fn func(ssh.Signer) error) error {
	fp := s.Fingerprint()
	if s.socket == "" {
		return &SigningKeyError{Spec: fp, Err: ErrNoAgent,
			Reason: "its private half must come from ssh-agent, and none runs (SSH_AUTH_SOCK is not set); start ssh-agent and add the key with ssh-add, or name an unencrypted private key file"}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", s.socket)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &SigningKeyError{Spec: fp, Err: errors.Join(ErrNoAgent, err),
			Reason: fmt.Sprintf("cannot reach ssh-agent at %s (%v); start it, or name an unencrypted private key file", s.socket, err)}
	}
	defer func() { _ = conn.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &SigningKeyError{Spec: fp, Err: err, Reason: fmt.Sprintf("ssh-agent at %s failed: %v", s.socket, err)}
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		return fail(err)
	}
	want := s.pub.Marshal()
	for _, key := range signers {
		if bytes.Equal(key.PublicKey().Marshal(), want) {
			if err := fn(key); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			return nil
		}
	}
	return &SigningKeyError{Spec: fp, Err: ErrNotInAgent,
		Reason: fmt.Sprintf("ssh-agent at %s does not hold key %s %s", s.socket, s.pub.Type(), fp)}
}

// firstLine returns the first line of data that is not blank.
func firstLine(data []byte) string {
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// parsePublicKeyLine reads "keytype base64 [comment]", the form of a .pub
// file and of an allowed signers line's key: the key type must be the one
// the key's own bytes name.
func parsePublicKeyLine(line string) (ssh.PublicKey, string, error) {
	typ, rest := cutField(line)
	b64, comment := cutField(rest)
	if typ == "" || b64 == "" {
		return nil, "", errors.New(`a public key is "keytype base64-key [comment]"`)
	}
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, "", fmt.Errorf("the %s key is not base64", typ)
	}
	pub, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return nil, "", fmt.Errorf("the %s key does not parse: %v", typ, err)
	}
	if pub.Type() != typ {
		return nil, "", fmt.Errorf("the key is said to be of type %s, but its bytes are of type %s", typ, pub.Type())
	}
	return pub, strings.TrimSpace(comment), nil
}

// cutField returns the first field of s (white space: space, tab, CR,
// LF) and what follows it, its leading white space dropped.
func cutField(s string) (field, rest string) {
	s = strings.TrimLeft(s, " \t\r\n")
	i := strings.IndexAny(s, " \t\r\n")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t\r\n")
}
