package repo_test

import (
	"context"
	"testing"

	"github.com/fdl-dev/fdl/repo"
)

// BenchmarkVersionSignature measures one check of a record's Ed25519
// signature by an allowed signers file (its two reads from a memory
// store, the verification, the file's rules): the cost verify, log
// --show-signature and attach --require-signed add per version.
//
//	go test ./repo -run '^$' -bench VersionSignature -benchtime 2000x
func BenchmarkVersionSignature(b *testing.B) {
	ctx := context.Background()
	r, _, recs := signedRepo(b, 1)
	s, line := testSigner(b, "ed25519", "a@example.com", "")
	allowed, err := repo.LoadSigners(writeSigners(b, line))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Sign(ctx, string(recs[0].ID), repo.SignOptions{Signer: s}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		c, err := r.VersionSignature(ctx, nil, recs[0].ID, allowed)
		if err != nil || !c.Good() {
			b.Fatalf("%+v, %v", c, err)
		}
	}
}
