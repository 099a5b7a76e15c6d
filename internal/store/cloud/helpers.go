package cloud

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
)

// BucketAndPrefix splits SCHEME://BUCKET/PREFIX into the bucket name and the
// key prefix ("" or ending in "/"). raw is the redacted URL and form the
// URL's shape ("s3://BUCKET/PREFIX"), for messages. Errors: no bucket, a
// user or fragment in the URL, a prefix that is not a valid key.
func BucketAndPrefix(u *url.URL, raw, form string) (name, prefix string, err error) {
	if u.Host == "" || u.User != nil || u.Fragment != "" {
		return "", "", fmt.Errorf("store URL %q: use %s (no user or fragment)", raw, form)
	}
	p := strings.Trim(u.Path, "/")
	if p == "" {
		return u.Host, "", nil
	}
	if err := store.CheckKey(p); err != nil {
		return "", "", fmt.Errorf("store URL %q: the path is not a valid prefix: %w", raw, err)
	}
	return u.Host, p + "/", nil
}
