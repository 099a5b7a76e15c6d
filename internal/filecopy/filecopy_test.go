package filecopy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeRandom(t *testing.T, dir string, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	p := filepath.Join(dir, "src")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

func copyTo(t *testing.T, ctx context.Context, src, dst string, offset int64) (int64, string, []int64, error) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if offset > 0 {
		in.Seek(offset, 0)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var seen []int64
	n, sum, err := Copy(ctx, out, in, func(d int64) { seen = append(seen, d) })
	return n, sum, seen, err
}

// TestCopy: the copy holds the source's bytes, the digest is theirs, and
// progress ends at the size; copying from an offset copies the rest.
func TestCopy(t *testing.T) {
	dir := t.TempDir()
	dirs := []string{dir}
	if d := os.Getenv("FDL_REFLINK_DIR"); d != "" {
		// A folder on btrfs or XFS: Copy clones there (and must still hash).
		rd, err := os.MkdirTemp(d, "filecopy-*")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(rd) })
		dirs = append(dirs, rd)
	}
	for _, d := range dirs {
		src, data := writeRandom(t, d, 9<<20+17)
		dst := filepath.Join(d, "dst")
		n, sum, seen, err := copyTo(t, context.Background(), src, dst, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := sha256.Sum256(data)
		if n != int64(len(data)) || sum != hex.EncodeToString(want[:]) {
			t.Fatalf("%s: Copy = %d %s, want %d %x", d, n, sum, len(data), want)
		}
		got, _ := os.ReadFile(dst)
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: the copy differs", d)
		}
		if len(seen) == 0 || seen[len(seen)-1] != n {
			t.Errorf("%s: progress %v, want it to end at %d", d, seen, n)
		}
		dst2 := filepath.Join(d, "dst2")
		n, sum, _, err = copyTo(t, context.Background(), src, dst2, 100)
		want = sha256.Sum256(data[100:])
		if err != nil || n != int64(len(data)-100) || sum != hex.EncodeToString(want[:]) {
			t.Fatalf("%s: Copy from offset 100 = %d %s %v", d, n, sum, err)
		}
		if got, _ := os.ReadFile(dst2); !bytes.Equal(got, data[100:]) {
			t.Fatalf("%s: the copy from an offset differs", d)
		}
	}
}

// TestCopyCancelled: a cancelled context stops the copy with its error.
func TestCopyCancelled(t *testing.T) {
	dir := t.TempDir()
	src, _ := writeRandom(t, dir, 3<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := copyTo(t, ctx, src, filepath.Join(dir, "dst"), 7); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Copy: %v", err)
	}
}

// TestDigest: size and SHA-256 of a reader.
func TestDigest(t *testing.T) {
	data := bytes.Repeat([]byte("fdl"), 1<<20)
	n, sum, err := Digest(context.Background(), bytes.NewReader(data), nil)
	want := sha256.Sum256(data)
	if err != nil || n != int64(len(data)) || sum != hex.EncodeToString(want[:]) {
		t.Fatalf("Digest = %d %s %v", n, sum, err)
	}
}
