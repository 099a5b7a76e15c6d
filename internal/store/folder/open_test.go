package folder_test

import (
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/folder"
)

func TestOpenPaths(t *testing.T) {
	store.Register(folder.Backend())
	dir := t.TempDir()
	t.Chdir(dir)
	wd, err := os.Getwd() // dir with symlinks resolved as the OS reports it
	if err != nil {
		t.Fatal(err)
	}
	fileURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(wd, "c"))}).String()
	if runtime.GOOS == "windows" {
		fileURL = "file:///" + filepath.ToSlash(filepath.Join(wd, "c"))
	}
	cases := []struct{ raw, want string }{
		{"repo", filepath.Join(wd, "repo")},
		{"./a/b", filepath.Join(wd, "a", "b")},
		{filepath.Join(wd, "abs"), filepath.Join(wd, "abs")},
		{fileURL, filepath.Join(wd, "c")},
		{"FILE://" + strings.TrimPrefix(fileURL, "file://"), filepath.Join(wd, "c")},
	}
	for _, c := range cases {
		s, err := store.Open(t.Context(), c.raw)
		if err != nil {
			t.Errorf("Open(%q): %v", c.raw, err)
			continue
		}
		lf, ok := s.(store.LocalFiles)
		if _, isFolder := s.(*folder.Store); !isFolder || !ok {
			t.Errorf("Open(%q) = %T, want a *folder.Store offering store.LocalFiles", c.raw, s)
			continue
		}
		if got := s.Location(""); got != c.want {
			t.Errorf("Open(%q).Location(\"\") = %q, want %q", c.raw, got, c.want)
		}
		if got, want := lf.LocalPath("refs/heads/main"), s.Location("refs/heads/main"); got != want {
			t.Errorf("Open(%q).LocalPath = %q, want Location's %q", c.raw, got, want)
		}
	}
}

func TestOpenFileURLErrors(t *testing.T) {
	store.Register(folder.Backend())
	cases := []struct{ raw, wantMsg string }{
		{"file://otherhost/x", "file:///absolute/path"},
		{"file:///x?no_tmp_dir=true", "no user, query or fragment"},
		{"file://user:secret@localhost/x", "no user, query or fragment"},
		{"file://", "file:// needs an absolute path"},
	}
	for _, c := range cases {
		s, err := store.Open(t.Context(), c.raw)
		if err == nil {
			t.Errorf("Open(%q) = %v, want an error", c.raw, s)
			continue
		}
		if !strings.Contains(err.Error(), c.wantMsg) {
			t.Errorf("Open(%q) error = %q, want it to contain %q", c.raw, err, c.wantMsg)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error shows the password: %q", c.raw, err)
		}
	}
}

// TestOpenErrorNoTypedNil: when a folder path cannot be opened (it names a
// file, not a folder), Open returns a nil store.Store, not a nil *Store
// inside a non-nil interface that a caller's nil check would miss.
func TestOpenErrorNoTypedNil(t *testing.T) {
	store.Register(folder.Backend())
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fileURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(file)}).String()
	for _, raw := range []string{file, fileURL} {
		s, err := store.Open(t.Context(), raw)
		if err == nil {
			t.Errorf("Open(%q) of a file = %v, want an error", raw, s)
		}
		if s != nil {
			t.Errorf("Open(%q) returned %#v with its error, want a nil store.Store", raw, s)
		}
	}
}
