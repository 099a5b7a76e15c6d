package cloud_test

import (
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
)

// BenchmarkCloudS3 measures Create (streaming multipart upload, create-only)
// and Get (streaming download) of a 64 MiB object on the S3 server named by
// FDL_TEST_S3_URL, or on in-process gofakes3 without it (whose memory then
// counts in -benchmem). Reported MB/s are of the object.
//
//	go test -run '^$' -bench CloudS3 -benchmem ./internal/store/cloud/
func BenchmarkCloudS3(b *testing.B) {
	base := os.Getenv(cloudtest.EnvS3)
	if base == "" {
		base = cloudtest.Gofakes3(b)
	} else {
		base = cloudtest.S3(b)
	}
	const size = 64 << 20
	s, err := store.Open(b.Context(), cloudtest.WithPrefix(base, b.Name()))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("Create", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; b.Loop(); i++ {
			key := "versions/bench/" + strconv.Itoa(i) + ".duckdb"
			if err := s.Create(b.Context(), key, io.LimitReader(&patternReader{}, size)); err != nil {
				b.Fatal(err)
			}
		}
	})
	if err := s.Create(b.Context(), "versions/get/ducklake.duckdb", io.LimitReader(&patternReader{}, size)); err != nil {
		b.Fatal(err)
	}
	b.Run("Get", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			rc, _, err := s.Get(b.Context(), "versions/get/ducklake.duckdb")
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, rc); err != nil || n != size {
				b.Fatalf("read %d bytes: %v", n, err)
			}
			rc.Close()
		}
	})
}
