package cloud_test

import (
	"context"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/fdl-dev/fdl/internal/store/cloud"
)

// TestFirstForeign: an object whose name is no valid key (a copied
// fdl.lock) is found under the prefix; objects with valid keys, folder
// markers and objects outside the prefix are not.
func TestFirstForeign(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	c := cloud.New(cloud.Config{Bucket: b, Scheme: "s3", Name: "b", Prefix: "p/"})
	defer c.Close()
	for _, k := range []string{"p/", "p/data/", "p/data/a.parquet", "other/fdl.lock"} {
		if err := b.WriteAll(ctx, k, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := c.FirstForeign(ctx); err != nil || got != "" {
		t.Fatalf("keys and folder markers only: %q, %v; want none", got, err)
	}
	if err := b.WriteAll(ctx, "p/fdl.lock", []byte("{}\n"), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := c.FirstForeign(ctx); err != nil || got != "fdl.lock" {
		t.Fatalf("a copied lockfile: %q, %v; want fdl.lock", got, err)
	}
}
