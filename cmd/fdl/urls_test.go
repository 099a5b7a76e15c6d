package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/term"
)

// runInProcess runs fdl with args in this process and returns its exit code
// and everything it printed (stdout and stderr).
func runInProcess(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ios, out, errOut := term.Test()
	code := run(args, ios)
	return code, out.String() + errOut.String()
}

// TestCredentialsNeverPrinted: a store URL's password or query credential
// never appears in what fdl prints, whatever kind of store the URL names
// and however it is malformed: url.Parse refusals (a bad escape, a bad
// port, an unescaped "/" or "?" in the password), backend refusals (a user
// part where none is allowed, no region), unknown schemes and mistyped
// URLs, in text and --json, from init and from a command that opens a
// repository.
func TestCredentialsNeverPrinted(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	const secret = "s3cr3tPW"
	schemes := []string{"s3", "gs", "gcs", "azblob", "file", "http", "https", "mem", "ftp"}
	var urls []string
	for _, sc := range schemes {
		urls = append(urls,
			sc+"://user:"+secret+"@bucket/%zz",            // bad escape: url.Parse refuses
			sc+"://user:"+secret+"@bucket:port/p",         // bad port
			sc+"://user:"+secret+"/x@bucket/p",            // "/" in the password, unescaped
			sc+"://user:"+secret+"?x@bucket/p",            // "?" in the password, unescaped
			sc+"://user:"+secret+"@bucket/p",              // well formed, but a user part
			sc+"://bucket/p?sig="+secret,                  // a signature in the query
			sc+"://bucket/p?secret_access_key="+secret,    // a key in the query
			sc+"://bucket/p?x=1&token="+secret+"&%zz",     // a token, and a bad escape
			sc+":/user:"+secret+"@bucket/p",               // mistyped: one slash
			sc+":user:"+secret+"@bucket/p?sig="+secret,    // mistyped: no slash
			sc+"://"+secret+"@bucket/p",                   // a token as the user
			sc+"://user:"+strings.ToLower(secret)+"%2F@b", // escaped "/" in the password
		)
	}
	for _, u := range urls {
		for _, args := range [][]string{{"init", u}, {"--repo", u, "log"}, {"--json", "--repo", u, "verify"}} {
			code, out := runInProcess(t, args...)
			if code == 0 {
				t.Errorf("fdl %q: exit 0, want an error\n%s", args, out)
			}
			low := strings.ToLower(out)
			if strings.Contains(low, strings.ToLower(secret)) || strings.Contains(low, "s3cr3tpw%2f") {
				t.Errorf("fdl %q printed the credential:\n%s", args, out)
			}
		}
	}
}

// TestMistypedURLRefused: a repository path that reads as a mistyped URL
// ("s3:/bucket/repo", one slash) is refused, for every scheme people
// write, before anything is made; the message names the URL meant and how
// to ask for a folder of that name. "./s3:" is such a folder, on purpose.
func TestMistypedURLRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, sc := range []string{"s3", "S3", "gs", "gcs", "azblob", "az", "file", "http", "https", "mem", "r2"} {
		for _, u := range []string{sc + ":/bkt/repo", sc + ":bkt/repo", sc + "://" + "", sc + "//bkt/repo"} {
			if u == sc+"://" {
				continue
			}
			for _, args := range [][]string{{"init", u}, {"--repo", u, "log"}, {"checkout", u, "w"}, {"-C", dir, "--repo", u, "log"}} {
				code, out := runInProcess(t, args...)
				if code == 0 || !strings.Contains(out, "looks like a mistyped URL") || !strings.Contains(out, "./"+u) {
					t.Errorf("fdl %q: exit %d, want a refusal naming the mistyped URL\n%s", args, code, out)
				}
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("a refused mistyped URL left %v in the working directory", ents)
	}
	// On purpose: "./s3:" is a folder of that name.
	if code, out := runInProcess(t, "init", "./s3:/bkt/repo"); code != 0 {
		t.Fatalf("init ./s3:/bkt/repo: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "s3:", "bkt", "repo", "fdl.json")); err != nil {
		t.Fatal(err)
	}
}
