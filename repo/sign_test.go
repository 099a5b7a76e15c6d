package repo_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/fdl-dev/fdl/internal/store"
	thist "github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/signature"
	"github.com/fdl-dev/fdl/version"
)

// signedRepo makes a memory repository with n records on main, in
// retention (thist.Records retires them: their markers are removed).
func signedRepo(t testing.TB, n int) (*repo.Repo, string, []*version.Record) {
	t.Helper()
	url := fmt.Sprintf("mem://%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
	r, err := repo.Init(context.Background(), url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	recs := thist.Records(t, r, n, false, 0)
	for _, rec := range recs {
		if err := r.Store().Delete(context.Background(), repo.VersionKey(rec.ID, retention.MarkerFile)); err != nil {
			t.Fatal(err)
		}
	}
	return r, url, recs
}

// testSigner is a new key of the kind named ("ed25519" or "rsa"), and its
// allowed signers line for principal with options.
func testSigner(t testing.TB, kind, principal, options string) (*signature.Signer, string) {
	t.Helper()
	var priv any
	var err error
	switch kind {
	case "ed25519":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case "rsa":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signature.NewSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	line := principal + " "
	if options != "" {
		line += options + " "
	}
	return s, line + string(ssh.MarshalAuthorizedKey(s.PublicKey()))
}

// writeSigners writes an allowed signers file of lines and returns its path.
func writeSigners(t testing.TB, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// replace puts b at key (deleting what is there): a damaged store.
func replace(t *testing.T, st store.Store, key string, b []byte) {
	t.Helper()
	ctx := context.Background()
	if err := st.Delete(ctx, key); err != nil && !errors.Is(err, store.ErrNotExist) {
		t.Fatal(err)
	}
	if err := st.Create(ctx, key, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

func readKey(t *testing.T, st store.Store, key string) []byte {
	t.Helper()
	b, _, err := store.ReadAll(context.Background(), st, key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// damageSignature changes the last byte of an armored signature's blob
// (the signature itself), keeping the armor valid.
func damageSignature(t *testing.T, armored []byte) []byte {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(armored)), "\n")
	blob, err := base64.StdEncoding.DecodeString(strings.Join(lines[1:len(lines)-1], ""))
	if err != nil {
		t.Fatal(err)
	}
	blob[len(blob)-1] ^= 0x01
	return []byte(lines[0] + "\n" + base64.StdEncoding.EncodeToString(blob) + "\n" + lines[len(lines)-1] + "\n")
}

// requireRefused checks that attaching id with RequireSigned is refused
// by a *repo.SignatureError naming id, with status want.
func requireRefused(t *testing.T, url string, id version.ID, signers string, want repo.SignatureStatus) *repo.SignatureError {
	t.Helper()
	r, err := repo.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Attach(context.Background(), string(id), repo.ShowOptions{RequireSigned: true, Signers: signers})
	var se *repo.SignatureError
	if !errors.As(err, &se) || !errors.Is(err, repo.ErrSignature) {
		t.Fatalf("attach %s requiring a signature: %v, want a *repo.SignatureError", id, err)
	}
	if se.Version != id || se.Check.Status != want || !strings.Contains(err.Error(), string(id)) {
		t.Fatalf("attach %s requiring a signature: version %s, status %s (%v); want %s, %s", id, se.Version, se.Check.Status, err, id, want)
	}
	return se
}

// TestSignaturesRefusedByName: records signed with Ed25519 and RSA keys
// are good for the allowed signers file; an unsigned version, a signature
// by a key the file does not list, a tampered record, a tampered
// signature and a signature made for another namespace are each refused
// by attach --require-signed naming the version and why, and reported by
// verify with their codes. A second signature of a record is refused.
// It is one piece: every refusal is made on the one repository the
// good signatures were made on, in order.
func TestSignaturesRefusedByName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, url, recs := signedRepo(t, 5)
	alice, aliceLine := testSigner(t, "ed25519", "alice@example.com", `namespaces="fdl"`)
	bob, bobLine := testSigner(t, "rsa", "bob@example.com", "")
	mallory, _ := testSigner(t, "ed25519", "mallory@example.com", "")
	signers := writeSigners(t, aliceLine, bobLine)
	allowed, err := repo.LoadSigners(signers)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []*signature.Signer{alice, bob, mallory, alice, bob} {
		res, err := r.Sign(ctx, string(recs[i].ID), repo.SignOptions{Signer: s})
		if err != nil {
			t.Fatal(err)
		}
		if want := repo.SignatureKey(recs[i].ID, ""); len(res.Signed) != 1 || res.Signed[0] != want {
			t.Fatalf("sign %s wrote %v, want %s", recs[i].ID, res.Signed, want)
		}
	}
	for i, who := range []string{"alice@example.com", "bob@example.com"} {
		c, err := r.VersionSignature(ctx, nil, recs[i].ID, allowed)
		if err != nil || !c.Good() || len(c.Principals) != 1 || c.Principals[0] != who {
			t.Fatalf("version %d: %+v, %v; want good by %s", i+1, c, err, who)
		}
	}
	var exists *repo.SignatureExistsError
	if _, err := r.Sign(ctx, string(recs[0].ID), repo.SignOptions{Signer: bob}); !errors.As(err, &exists) || exists.Version != recs[0].ID {
		t.Fatalf("signing a signed version again: %v, want *repo.SignatureExistsError", err)
	}

	st := r.Store()
	key := func(i int) string { return repo.SignatureKey(recs[i].ID, "") }
	// Unsigned (its signature removed).
	if err := st.Delete(ctx, key(4)); err != nil {
		t.Fatal(err)
	}
	requireRefused(t, url, recs[4].ID, signers, repo.SigUnsigned)
	// A key the file does not list.
	se := requireRefused(t, url, recs[2].ID, signers, repo.SigNotAllowed)
	if !errors.Is(se, signature.ErrUnknownKey) || se.Check.Key != mallory.Fingerprint() {
		t.Fatalf("mallory's signature: %v (key %s), want signature.ErrUnknownKey naming %s", se, se.Check.Key, mallory.Fingerprint())
	}
	// A tampered record: another message, still a valid record.
	rec0 := readKey(t, st, repo.VersionKey(recs[0].ID, version.RecordFile))
	replace(t, st, repo.VersionKey(recs[0].ID, version.RecordFile), bytes.Replace(rec0, []byte("version 1"), []byte("version X"), 1))
	if se := requireRefused(t, url, recs[0].ID, signers, repo.SigBad); !errors.Is(se, signature.ErrBadSignature) {
		t.Fatalf("tampered record: %v, want signature.ErrBadSignature", se)
	}
	// A tampered signature.
	replace(t, st, key(1), damageSignature(t, readKey(t, st, key(1))))
	if se := requireRefused(t, url, recs[1].ID, signers, repo.SigBad); !errors.Is(se, signature.ErrBadSignature) {
		t.Fatalf("tampered signature: %v, want signature.ErrBadSignature", se)
	}
	// A signature by an allowed key, made for another namespace.
	rec3 := readKey(t, st, repo.VersionKey(recs[3].ID, version.RecordFile))
	git, err := alice.Sign(ctx, rec3, "git")
	if err != nil {
		t.Fatal(err)
	}
	replace(t, st, key(3), git)
	if se := requireRefused(t, url, recs[3].ID, signers, repo.SigBad); !errors.Is(se, signature.ErrWrongNamespace) {
		t.Fatalf("another namespace: %v, want signature.ErrWrongNamespace", se)
	}

	// verify reports each, by code.
	r2, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	rep, err := r2.Verify(ctx, repo.VerifyOptions{SkipCatalogs: true, Signers: signers})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]repo.Code{}
	for _, ps := range [][]repo.Problem{rep.Problems, rep.Notes} {
		for _, p := range ps {
			if strings.HasPrefix(string(p.Code), "signature-") || strings.HasPrefix(string(p.Code), "signer-") || strings.HasSuffix(string(p.Code), "-unsigned") {
				codes[p.Object] = p.Code
			}
		}
	}
	want := map[string]repo.Code{
		string(recs[0].ID): repo.CodeSignatureBad, string(recs[1].ID): repo.CodeSignatureBad,
		string(recs[2].ID): repo.CodeSignerNotAllowed, string(recs[3].ID): repo.CodeSignatureBad,
		string(recs[4].ID): repo.CodeVersionUnsigned,
	}
	for obj, code := range want {
		if codes[obj] != code {
			t.Errorf("verify: %s: %q, want %q (all: %v)", obj, codes[obj], code, codes)
		}
	}
	if len(codes) != len(want) {
		t.Errorf("verify: %v, want %v", codes, want)
	}
}

// TestTagSignatureNotReplayed: a signed tag is good in its repository;
// the same objects copied into another repository (another id) or onto
// another tag name do not verify there.
func TestTagSignatureNotReplayed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _, recs := signedRepo(t, 2)
	alice, line := testSigner(t, "ed25519", "alice@example.com", "")
	signers := writeSigners(t, line)
	allowed, err := repo.LoadSigners(signers)
	if err != nil {
		t.Fatal(err)
	}
	id := recs[1].ID
	ref, err := r.CreateSignedTag(ctx, nil, "v1", string(id), repo.SignOptions{Signer: alice})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Signed == nil || len(ref.Signed.Signed) != 2 || ref.Signed.Signed[1] != "signatures/tags/v1/"+string(id)+".sig" {
		t.Fatalf("tag --sign wrote %+v, want the record's signature, then the tag's", ref.Signed)
	}
	if c, err := r.TagSignature(ctx, "v1", id, allowed); err != nil || !c.Good() {
		t.Fatalf("tag v1 in its repository: %+v, %v; want good", c, err)
	}
	// Another repository holding the same objects: its own id.
	url2 := memURL(t)
	r2, err := repo.Init(ctx, url2, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := r.Store().List(ctx, "", func(oi store.ObjectInfo) error {
		if oi.Key == repo.ConfigKey || oi.Key == "HEAD" {
			return nil
		}
		return r2.Store().Create(ctx, oi.Key, bytes.NewReader(readKey(t, r.Store(), oi.Key)))
	}); err != nil {
		t.Fatal(err)
	}
	c, err := r2.TagSignature(ctx, "v1", id, allowed)
	if err != nil || c.Status != repo.SigBad || !errors.Is(c.Err, signature.ErrBadSignature) {
		t.Fatalf("tag v1 replayed into another repository: %+v, %v; want bad", c, err)
	}
	rep, err := r2.Verify(ctx, repo.VerifyOptions{SkipCatalogs: true, Signers: signers})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range rep.Problems {
		found = found || p.Code == repo.CodeSignatureBad && p.Object == "refs/tags/v1"
	}
	if !found {
		t.Fatalf("verify of the other repository: %+v, want signature-bad for refs/tags/v1", rep.Problems)
	}
	// The same signature under another tag name.
	replace(t, r.Store(), repo.SignatureKey(id, "v2"), readKey(t, r.Store(), repo.SignatureKey(id, "v1")))
	if c, err := r.TagSignature(ctx, "v2", id, allowed); err != nil || c.Status != repo.SigBad {
		t.Fatalf("tag v1's signature as v2's: %+v, %v; want bad", c, err)
	}
	// Signing the tag again is refused; a tag holding another version is
	// refused before anything is signed.
	var exists *repo.SignatureExistsError
	if _, err := r.Sign(ctx, "v1", repo.SignOptions{Signer: alice}); !errors.As(err, &exists) || exists.Tag != "v1" {
		t.Fatalf("signing tag v1 again: %v, want *repo.SignatureExistsError", err)
	}
	if _, err := r.CreateSignedTag(ctx, nil, "v1", string(recs[0].ID), repo.SignOptions{Signer: alice}); err == nil {
		t.Fatal("tag --sign v1 at another version: no error")
	}
	if _, err := r.Store().Stat(ctx, repo.SignatureKey(recs[0].ID, "v1")); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("a refused tag --sign left a signature: %v", err)
	}
}

// TestRepositoryIDGivenOnce: a repository made before ids gets one when
// first asked (one compare-and-swap of fdl.json, every other byte kept),
// and every later reader, one opened before included, reads the same.
func TestRepositoryIDGivenOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := memURL(t)
	r, err := repo.Init(ctx, url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Config().ID == "" {
		t.Fatal("init wrote no repository id")
	}
	old := []byte("{\n  \"format\": 1,\n  \"name\": \"old\",\n  \"data_path\": \"/x/data/\",\n  \"default_branch\": \"main\",\n  \"created_at\": \"2025-01-02T03:04:05Z\",\n  \"future\": {\"kept\": true}\n}\n")
	replace(t, r.Store(), repo.ConfigKey, old)
	a, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	idA, err := a.RepositoryID(ctx)
	if err != nil || idA == "" {
		t.Fatalf("RepositoryID: %q, %v", idA, err)
	}
	idB, err := b.RepositoryID(ctx)
	if err != nil || idB != idA {
		t.Fatalf("a second reader: %q, %v; want %q", idB, err, idA)
	}
	got := readKey(t, r.Store(), repo.ConfigKey)
	want := string(bytes.TrimSuffix(old, []byte("\n}\n"))) + ",\n  \"id\": \"" + idA + "\"\n}\n"
	if string(got) != want {
		t.Fatalf("fdl.json is\n%s\nwant\n%s", got, want)
	}
}

// TestSignWithKeysFromFilesAndAgent: Ed25519 and RSA keys made by
// ssh-keygen sign, loaded from their private key files and, by their
// public key files, through an ssh-agent the test starts; each signature
// is good for an allowed signers file and verifies with ssh-keygen -Y
// verify. It is one piece: the agent the test starts serves every key in
// turn, and stops with the test.
func TestSignWithKeysFromFilesAndAgent(t *testing.T) {
	t.Parallel()
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	agentBin, err := exec.LookPath("ssh-agent")
	if err != nil {
		t.Skip("ssh-agent is not installed")
	}
	ctx := context.Background()
	dir := t.TempDir()
	socket := startAgent(t, agentBin)
	var lines []string
	keys := map[string]string{}
	for _, kind := range []string{"ed25519", "rsa"} {
		p := filepath.Join(dir, kind)
		args := []string{"-q", "-t", kind, "-N", "", "-C", kind + "@example.com", "-f", p}
		if kind == "rsa" {
			args = append(args, "-b", "2048")
		}
		if out, err := exec.Command(keygen, args...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		pub, err := os.ReadFile(p + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, kind+"@example.com "+string(pub))
		keys[kind] = p
		add := exec.Command("ssh-add", "-q", p)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+socket)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v\n%s", err, out)
		}
	}
	signers := writeSigners(t, lines...)
	allowed, err := repo.LoadSigners(signers)
	if err != nil {
		t.Fatal(err)
	}
	r, _, recs := signedRepo(t, 4)
	i := 0
	for _, kind := range []string{"ed25519", "rsa"} {
		for _, how := range []string{"file", "agent"} {
			var s *signature.Signer
			if how == "file" {
				s, err = repo.LoadSigner(ctx, keys[kind])
			} else {
				s, err = signature.LoadSigner(ctx, keys[kind]+".pub", signature.AgentSocket(socket))
			}
			if err != nil {
				t.Fatalf("%s key from %s: %v", kind, how, err)
			}
			if s.UsesAgent() != (how == "agent") {
				t.Fatalf("%s key from %s: UsesAgent %v", kind, how, s.UsesAgent())
			}
			id := recs[i].ID
			i++
			if _, err := r.Sign(ctx, string(id), repo.SignOptions{Signer: s}); err != nil {
				t.Fatalf("%s key from %s: %v", kind, how, err)
			}
			c, err := r.VersionSignature(ctx, nil, id, allowed)
			if err != nil || !c.Good() || c.Principals[0] != kind+"@example.com" {
				t.Fatalf("%s key from %s: %+v, %v; want good", kind, how, c, err)
			}
			// OpenSSH agrees.
			sigFile, recFile := filepath.Join(dir, "sig"), filepath.Join(dir, "rec")
			os.WriteFile(sigFile, readKey(t, r.Store(), repo.SignatureKey(id, "")), 0o644)
			os.WriteFile(recFile, readKey(t, r.Store(), repo.VersionKey(id, version.RecordFile)), 0o644)
			v := exec.Command(keygen, "-Y", "verify", "-f", signers, "-I", kind+"@example.com", "-n", "fdl", "-s", sigFile)
			rec, _ := os.Open(recFile)
			v.Stdin = rec
			out, err := v.CombinedOutput()
			rec.Close()
			if err != nil {
				t.Fatalf("ssh-keygen -Y verify of the %s key's signature from %s: %v\n%s", kind, how, err, out)
			}
		}
	}
}

// startAgent starts ssh-agent in the foreground on a socket of its own
// and stops it when the test ends.
func startAgent(t *testing.T, bin string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fdl-agent-") // a socket path must be short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "agent.sock")
	cmd := exec.Command(bin, "-D", "-a", socket)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(socket); err == nil {
			return socket
		}
		select {
		case <-done:
			t.Fatal("ssh-agent exited")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent made no socket in 20s")
		}
	}
}
