//go:build unix

package folder

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// readEntries gives the names and types os.ReadDir gives, for a folder
// that takes several reads (more than direntBuf of entries) and holds a
// file, a folder, a link and a named pipe.
func TestReadEntriesMatchesReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 3000 {
		name := filepath.Join(dir, "ducklake-"+strconv.Itoa(10000+i)+"-0193abcd-ef01-7000-8000-000000000000.parquet")
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "k=1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("k=1", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	want, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type entry struct {
		key string
		typ fs.FileMode
	}
	var got []entry
	if err := readEntries(f, func(name []byte, typ fs.FileMode) error {
		got = append(got, entry{"data/main/t/" + string(name), typ})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	if len(got) != len(want) {
		t.Fatalf("readEntries gave %d entries, ReadDir %d", len(got), len(want))
	}
	for i, e := range want {
		if got[i].key != "data/main/t/"+e.Name() || (got[i].typ != e.Type() && got[i].typ != fs.ModeIrregular) {
			t.Errorf("entry %d: %q %v, ReadDir %q %v", i, got[i].key, got[i].typ, e.Name(), e.Type())
		}
	}
}
