package signature

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// needTool returns the path of an OpenSSH tool, skipping the test when it
// is missing, except under CI (CI=true), where a missing tool fails it:
// the interop tests are the proof that fdl's signatures are OpenSSH's.
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed, and CI must run the OpenSSH interop tests: %v", name, err)
		}
		t.Skipf("%s is not installed: %v", name, err)
	}
	return p
}

// sshEnv is the environment OpenSSH tools run in: no agent unless socket
// is given.
func sshEnv(socket string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SSH_AUTH_SOCK=") && !strings.HasPrefix(kv, "SSH_AGENT_PID=") {
			env = append(env, kv)
		}
	}
	if socket != "" {
		env = append(env, "SSH_AUTH_SOCK="+socket)
	}
	return append(env, "SSH_ASKPASS=/bin/false", "DISPLAY=")
}

// run runs an OpenSSH tool and returns its standard output; it fails the
// test when the tool fails.
func run(t testing.TB, socket string, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	out, err := runErr(socket, stdin, needTool(t, name), args...)
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out
}

func runErr(socket string, stdin []byte, path string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = sshEnv(socket)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &toolError{err: err, stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

type toolError struct {
	err    error
	stderr string
}

func (e *toolError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.stderr) }

// keygen makes a key with ssh-keygen in dir and returns the private key
// file's path (the public key is path + ".pub"). typ is ssh-keygen's -t;
// extra arguments follow (-m PEM, -N passphrase, -b bits).
func keygen(t testing.TB, dir, typ, name string, extra ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	args := append([]string{"-q", "-t", typ, "-C", name + "@example.com", "-f", path}, extra...)
	if !slices.Contains(extra, "-N") {
		args = append(args, "-N", "")
	}
	run(t, "", nil, "ssh-keygen", args...)
	return path
}

// publicKey reads the public key of a key made by keygen.
func publicKey(t testing.TB, path string) (ssh.PublicKey, string) {
	t.Helper()
	data, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := parsePublicKeyLine(string(data))
	if err != nil {
		t.Fatalf("%s.pub: %v", path, err)
	}
	return pub, strings.TrimSpace(string(data))
}

// startAgent starts a real ssh-agent in the foreground (-D) on a socket of
// its own and stops it when the test ends.
func startAgent(t testing.TB) string {
	t.Helper()
	bin := needTool(t, "ssh-agent")
	// A Unix socket's path is limited to about 100 bytes: t.TempDir's can
	// be longer.
	dir, err := os.MkdirTemp("", "fdl-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "agent.sock")
	cmd := exec.Command(bin, "-D", "-a", socket)
	cmd.Env = sshEnv("")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ssh-agent: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			return socket
		}
		select {
		case <-done:
			t.Fatalf("ssh-agent exited: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent made no socket in 20s: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sshAdd adds a private key file to the agent at socket.
func sshAdd(t testing.TB, socket, key string) {
	t.Helper()
	run(t, socket, nil, "ssh-add", "-q", key)
}

// keygenSign signs message with ssh-keygen -Y sign and returns the
// armored signature.
func keygenSign(t testing.TB, socket, key, namespace string, message []byte, extra ...string) []byte {
	t.Helper()
	args := append([]string{"-Y", "sign", "-n", namespace, "-f", key}, extra...)
	return run(t, socket, message, "ssh-keygen", args...)
}

// keygenVerify runs ssh-keygen -Y verify over message and returns its
// error (nil when ssh-keygen says the signature is good).
func keygenVerify(t testing.TB, allowed []byte, principal, namespace string, sig, message []byte, extra ...string) error {
	t.Helper()
	dir := t.TempDir()
	allowedPath := filepath.Join(dir, "allowed_signers")
	sigPath := filepath.Join(dir, "message.sig")
	if err := os.WriteFile(allowedPath, allowed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sigPath, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-Y", "verify", "-n", namespace, "-I", principal, "-f", allowedPath, "-s", sigPath}, extra...)
	_, err := runErr("", message, needTool(t, "ssh-keygen"), args...)
	return err
}

// signersLine returns an allowed signers line for the key at path.
func signersLine(t testing.TB, principals, options, path string) string {
	t.Helper()
	_, line := publicKey(t, path)
	if options != "" {
		return principals + " " + options + " " + line + "\n"
	}
	return principals + " " + line + "\n"
}

func mustParseSigners(t testing.TB, text string) *AllowedSigners {
	t.Helper()
	a, err := ParseAllowedSigners("allowed_signers", []byte(text))
	if err != nil {
		t.Fatalf("ParseAllowedSigners: %v\n%s", err, text)
	}
	return a
}

func mustParseSignature(t testing.TB, armored []byte) *Signature {
	t.Helper()
	sig, err := ParseSignature(armored)
	if err != nil {
		t.Fatalf("ParseSignature: %v\n%s", err, armored)
	}
	return sig
}

func mustLoad(t testing.TB, spec string, opts ...LoadOption) *Signer {
	t.Helper()
	s, err := LoadSigner(context.Background(), spec, opts...)
	if err != nil {
		t.Fatalf("LoadSigner(%q): %v", spec, err)
	}
	return s
}

func mustSign(t testing.TB, s *Signer, message []byte, namespace string) []byte {
	t.Helper()
	sig, err := s.Sign(context.Background(), message, namespace)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return sig
}
