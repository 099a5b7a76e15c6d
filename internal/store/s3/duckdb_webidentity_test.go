package s3

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// What this test found about DuckDB 1.5.5's aws extension (the AWS C++
// SDK, whose web identity provider is aws-c-auth's): PROVIDER
// credential_chain, without a CHAIN, takes web identity from
// AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE and asks STS over HTTPS on
// port 443 at sts.<region>.amazonaws.com. It reads AWS_ENDPOINT_URL_STS
// only as a bare host name (still HTTPS, port 443): the URL form the AWS
// SDK for Go takes ("http://127.0.0.1:PORT", "https://host") makes it ask
// nobody. So the line fdl prints works for readers under web identity
// against real AWS, but a plain-HTTP stand-in on a loopback port cannot
// serve DuckDB: this test gives it what real AWS is, inside a network and
// mount namespace of its own (unshare): loopback only, an /etc/hosts that
// names sts.us-east-1.amazonaws.com 127.0.0.1, a test CA added to the
// system's CA bundle, the STS stand-in on 127.0.0.1:443 over TLS, and a
// versitygw of its own. Nothing leaves the namespace.

// envInside names the folder the outer test prepared; set, the test runs
// the inside part.
const envInside = "FDL_TEST_WEBID_INSIDE"

// TestDuckDBCredentialChainWebIdentity: the CREATE SECRET line fdl prints
// for readers of an s3:// store (PROVIDER credential_chain) works in the
// real DuckDB 1.5.5 when the only credentials are web identity's
// (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE): DuckDB asks STS with the
// role and the token and reads the bucket with the keys STS gave; with a
// token STS refuses, creating the secret fails. It needs root (for the
// namespaces), versitygw and DuckDB 1.5 with httpfs and aws.
func TestDuckDBCredentialChainWebIdentity(t *testing.T) {
	if dir := os.Getenv(envInside); dir != "" {
		inside(t, dir)
		return
	}
	realduck.Find(t, realduck.V15, "httpfs", "aws")
	vgw := versitygwBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for its own network and mount namespaces (unshare)")
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found: CI must run this test", tool)
			}
			t.Skipf("%s not found", tool)
		}
	}
	dir := t.TempDir()
	writeTLSFiles(t, dir, "sts.us-east-1.amazonaws.com")
	cmd := exec.Command("unshare", "--net", "--mount", "--", os.Args[0],
		"-test.run=^TestDuckDBCredentialChainWebIdentity$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envInside+"="+dir, "FDL_TEST_VERSITYGW="+vgw)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inside its namespace the test failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestDuckDBCredentialChainWebIdentity") {
		t.Fatalf("inside its namespace the test did not pass:\n%s", out)
	}
	t.Logf("inside:\n%s", out)
}

// versitygwBinary finds the versitygw that scripts/test-servers.sh
// installs ($FDL_TOOLS/bin, default ~/.cache/fdl-ci/bin); without one the
// test is skipped, or fails under CI.
func versitygwBinary(t *testing.T) string {
	tools := os.Getenv("FDL_TOOLS")
	if tools == "" {
		home, _ := os.UserHomeDir()
		tools = filepath.Join(home, ".cache", "fdl-ci")
	}
	p := filepath.Join(tools, "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("versitygw not found at %s: .ci/run installs it (scripts/test-servers.sh install)", p)
		}
		t.Skipf("versitygw not found at %s (scripts/test-servers.sh install)", p)
	}
	return p
}

// writeTLSFiles writes a test CA (ca.pem), a certificate for host signed by
// it (srv.pem, srv.key) and bundle.pem: the system's CA bundle plus the
// test CA.
func writeTLSFiles(t *testing.T, dir, host string) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fdl test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	system, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	for name, b := range map[string][]byte{
		"ca.pem":     caPEM,
		"srv.pem":    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		"srv.key":    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"bundle.pem": append(append(system, '\n'), caPEM...),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// inside is the part that runs in the namespace (see the note above).
//
// It is one piece: the whole life of the process in the namespace, in order
// (the network, an S3 server and STS of its own, then DuckDB's reads); each
// part needs what the one before it started.
func inside(t *testing.T, dir string) {
	ctx := context.Background()
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v\n%s", err, out)
	}
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost sts.us-east-1.amazonaws.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{hosts: "/etc/hosts", filepath.Join(dir, "bundle.pem"): "/etc/ssl/certs/ca-certificates.crt"} {
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind %s over %s: %v", src, dst, err)
		}
	}

	// An S3 server of the namespace's own, its root key the keys STS gives.
	const keyID, secret, bucket = "webidroot", "webid-root-secret-not-for-production", "webid-test"
	data := filepath.Join(dir, "s3")
	if err := os.MkdirAll(filepath.Join(data, bucket), 0o755); err != nil { // a posix folder is a bucket
		t.Fatal(err)
	}
	vgw := exec.Command(os.Getenv("FDL_TEST_VERSITYGW"), "--port", "127.0.0.1:7070", "--quiet", "posix", data)
	vgw.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+keyID, "ROOT_SECRET_KEY="+secret)
	if err := vgw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vgw.Process.Kill(); vgw.Wait() })
	waitPort(t, "127.0.0.1:7070")

	// STS on 127.0.0.1:443 over TLS, as sts.us-east-1.amazonaws.com.
	good := fmt.Sprintf("eyJhbGciOiJSUzI1NiJ9.ci-%d.sig", time.Now().UnixNano())
	sts := cloudtest.NewSTS(keyID, secret, good)
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "srv.pem"), filepath.Join(dir, "srv.key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:443", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sts}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	// The line fdl prints, from the store itself.
	store.Register(Backend())
	url := "s3://" + bucket + "?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true"
	t.Setenv("AWS_ACCESS_KEY_ID", keyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	line := st.(store.SecretProvider).DuckDBSecret()
	if !strings.Contains(line, "PROVIDER credential_chain") || strings.Contains(line, "CHAIN") {
		t.Fatalf("the secret fdl prints is not the plain credential chain this test is about: %s", line)
	}
	duck := realduck.Find(t, realduck.V15, "httpfs", "aws")
	// A Parquet file, written with the root key.
	duck.MustQuery(t, "CREATE SECRET (TYPE s3, KEY_ID '"+keyID+"', SECRET '"+secret+"', REGION 'us-east-1', ENDPOINT '127.0.0.1:7070', URL_STYLE 'path', USE_SSL false); "+
		"COPY (SELECT 42 AS answer) TO 's3://"+bucket+"/nightly.parquet';")

	// A reader with web identity only: no keys, no profile, IMDS off.
	home := t.TempDir()
	token := filepath.Join(home, "token")
	const role = "arn:aws:iam::123456789012:role/reader"
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "HOME": home,
		"AWS_CONFIG_FILE": filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_STS": "", "AWS_ENDPOINT_URL": "",
		"AWS_ROLE_ARN": role, "AWS_WEB_IDENTITY_TOKEN_FILE": token,
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
	if err := os.WriteFile(token, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := duck.Query(line + " SELECT answer FROM 's3://" + bucket + "/nightly.parquet';")
	if err != nil {
		t.Fatalf("DuckDB with the printed secret and web identity: %v", err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || fmt.Sprint(res[0].Rows[0][0]) != "42" {
		t.Fatalf("read %+v, want 42", res)
	}
	calls := sts.Calls()
	if len(calls) == 0 {
		t.Fatal("DuckDB read the bucket without asking STS: the test did not exercise web identity")
	}
	for _, c := range calls {
		if c.Action != "AssumeRoleWithWebIdentity" || c.RoleARN != role || strings.TrimSpace(c.Token) != good {
			t.Errorf("STS was asked %+v, want AssumeRoleWithWebIdentity of %s with the token file's token", c, role)
		}
	}

	// A token STS refuses: the secret cannot be made.
	if err := os.WriteFile(token, []byte("eyJhbGciOiJSUzI1NiJ9.refused.sig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := duck.Query(line + " SELECT answer FROM 's3://" + bucket + "/nightly.parquet';"); err == nil || !strings.Contains(err.Error(), "Secret Validation Failure") {
		t.Fatalf("DuckDB with a token STS refuses: %v, want a secret validation failure", err)
	}
}

func waitPort(t *testing.T, addr string) {
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing answers on %s", addr)
}
