package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store/cloudtest"
)

// withHost returns the store URL raw with its bucket (or container)
// replaced by host.
func withHost(t *testing.T, raw, host string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = host
	return u.String()
}

// TestMissingBucket: a repository URL whose bucket (S3, GCS) or container
// (Azure) does not exist reads as that, naming it, for a command that
// opens a repository and for init — not as "not an fdl repository", whose
// hint (fdl init) cannot work there.
func TestMissingBucket(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		url        func(t *testing.T) string
	}{
		{"s3", "bucket", func(t *testing.T) string { return cloudtest.S3(t) }},
		{"gcs", "bucket", func(t *testing.T) string { return cloudtest.FakeGCS(t) + "/repo" }},
		{"azure", "container", func(t *testing.T) string { return cloudtest.Azure(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := withHost(t, c.url(t), "fdl-no-such-bucket-4242")
			for _, args := range [][]string{{"--repo", u, "log"}, {"init", u}, {"checkout", u, t.TempDir() + "/w"}} {
				code, out := fdlProc(t, nil, args...)
				if code != exitError || !strings.Contains(out, c.kind+` "fdl-no-such-bucket-4242"`) || !strings.Contains(out, "does not exist") {
					t.Errorf("fdl %s: exit %d, want a missing %s named\n%s", args[len(args)-2], code, c.kind, out)
				}
				if strings.Contains(out, "not an fdl repository") {
					t.Errorf("a missing %s reads as a missing repository:\n%s", c.kind, out)
				}
			}
			code, out := fdlProc(t, nil, "--json", "--repo", u, "log")
			if code != exitError || !strings.Contains(out, `"kind":"no_bucket"`) {
				t.Errorf("--json: exit %d, want kind no_bucket\n%s", code, out)
			}
		})
	}
}
