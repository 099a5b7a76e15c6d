//go:build linux

package folder

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A link whose target runs through a regular file ("f/x") makes Stat fail
// with ENOTDIR. ListKeys must then either fail or go on listing the
// folder's other files: it must not stop at the link and report success
// with the rest of the folder missing (push's data check would then call
// present files missing).
func TestListKeysLinkThroughFileDoesNotTruncate(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)+".parquet"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Links among the files, so that whatever order the folder gives,
	// one comes before some of the files.
	for i := range 20 {
		if err := os.Symlink("f0.parquet/x", filepath.Join(dir, "link"+strconv.Itoa(i)+".parquet")); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	err = s.ListKeys(t.Context(), "data/", func([]byte) error { got++; return nil })
	if err == nil && got != n {
		t.Fatalf("ListKeys: no error, but %d of the %d files listed", got, n)
	}
	t.Logf("err=%v, %d keys", err, got)
}
