package cloud_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloud"
)

// FuzzBucketAndPrefix: for any URL with a scheme that net/url parses (what
// store.Open hands a backend, with the redacted URL), BucketAndPrefix either
// refuses it with a message that quotes no password, or returns a
// non-empty bucket and a prefix that is "" or a valid key and a slash;
// and the URL written back from that bucket and prefix splits into the
// same two again (a round trip: what the store keeps is a URL).
func FuzzBucketAndPrefix(f *testing.F) {
	for _, s := range []string{"s3://bucket/repo", "s3://bucket", "s3://bucket/", "s3://bucket/a/b/?region=x", "gs://b//a//", "azblob://c/p%20x",
		"s3://bucket/p#frag", "s3://user:secret123@bucket/p", "s3:///p", "s3://bucket/a/../b", "s3://bucket/p%3Fx/data", "s3://b/p.lock",
		"s3://[::1]:9000/b", "s3://bu%41cket/p", "s3://b/%ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" {
			return // store.Open reaches a backend only with a URL that parses, with a scheme
		}
		red := store.RedactURL(u.String()) // what store.Open gives a backend
		name, prefix, err := cloud.BucketAndPrefix(u, red, "s3://BUCKET/PREFIX")
		if err != nil {
			if pw, ok := u.User.Password(); ok && len(pw) >= 3 && !strings.Contains(pw, "x") && strings.Contains(err.Error(), pw) {
				t.Fatalf("the error for %q shows its password: %v", raw, err)
			}
			return
		}
		if name == "" {
			t.Fatalf("%q: an empty bucket", raw)
		}
		if prefix != "" {
			key, ok := strings.CutSuffix(prefix, "/")
			if !ok || store.CheckKey(key) != nil {
				t.Fatalf("%q: prefix %q is not a valid key and a slash", raw, prefix)
			}
		}
		back := (&url.URL{Scheme: u.Scheme, Host: name, Path: "/" + prefix}).String()
		u2, err := url.Parse(back)
		if err != nil {
			t.Fatalf("%q split into %q, %q, which write back as %q, which does not parse: %v", raw, name, prefix, back, err)
		}
		name2, prefix2, err := cloud.BucketAndPrefix(u2, back, "s3://BUCKET/PREFIX")
		if err != nil || name2 != name || prefix2 != prefix {
			t.Fatalf("%q split into %q, %q; written back as %q it splits into %q, %q (%v)", raw, name, prefix, back, name2, prefix2, err)
		}
	})
}
