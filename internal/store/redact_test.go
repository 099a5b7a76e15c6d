package store_test

import (
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
)

func TestRedactURL(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"s3://bucket/p", "s3://bucket/p"},
		{"/plain/folder", "/plain/folder"},
		{"s3://user:pw123@bucket/p", "s3://user:xxxxx@bucket/p"},
		{"s3://user:pw/123@bucket/p", "s3://user:xxxxx@bucket/p"},
		{"s3://user:pw?123@bucket/p?region=x", "s3://user:xxxxx@bucket/p?region=x"},
		{"s3:/user:pw123@bucket/p", "s3:/user:xxxxx@bucket/p"},
		{"https://tok123@host/p", "https://xxxxx@host/p"},
		{"s3://b/p?sig=abc123&region=eu", "s3://b/p?sig=xxxxx&region=eu"},
		{"s3://b/p?Secret_Access_Key=abc123", "s3://b/p?Secret_Access_Key=xxxxx"},
		{"azblob://c/p?sas_token=abc%2F123", "azblob://c/p?sas_token=xxxxx"},
		{"gs://b/p?x=a@b", "gs://b/p?x=a@b"},
		// An "@" in the path after a user part: the user part is the
		// authority's too (FuzzRedactURL found "s3://Z09@/@" unredacted).
		{"https://tok123@host/p@v1", "https://xxxxx@host/p@v1"},
		{"s3://tok123@bucket/data@2024/x", "s3://xxxxx@bucket/data@2024/x"},
		{"s3://tok123@bucket/a:b@c", "s3://xxxxx@bucket/a:b@c"},
		// A credential's name after a fragment or a second "?" (FuzzRedactURL
		// found "s3:?000#0?a=1&secret_access_key=…" unredacted).
		{"s3://b/p?a=1#f?secret_access_key=abc123", "s3://b/p?a=1#f?secret_access_key=xxxxx"},
		{"s3://b/p?a=1?sig=abc123", "s3://b/p?a=1?sig=xxxxx"},
		{"s3://b/p?sig=abc123#frag", "s3://b/p?sig=xxxxx#frag"},
	}
	for _, c := range cases {
		if got := store.RedactURL(c.raw); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

// TestLooksLikeURL: what callers must not take for a relative folder path.
func TestLooksLikeURL(t *testing.T) {
	for s, want := range map[string]bool{
		"s3://b/p": true, "s3:/b/p": true, "s3:b": true, "gs//b": true, "GS://b": true,
		"repo": false, "./s3:/b": false, "/abs/s3:/b": false, "C:/x": false, "c:\\x": false, "data//x": false,
	} {
		if got := store.LooksLikeURL(s); got != want {
			t.Errorf("LooksLikeURL(%q) = %v, want %v", s, got, want)
		}
	}
}
