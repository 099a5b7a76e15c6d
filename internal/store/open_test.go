package store_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
)

func TestOpenPaths(t *testing.T) {
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
	}
	for _, c := range cases {
		s, err := store.Open(t.Context(), c.raw)
		if err != nil {
			t.Errorf("Open(%q): %v", c.raw, err)
			continue
		}
		if _, ok := s.(*store.Local); !ok {
			t.Errorf("Open(%q) = %T, want *store.Local", c.raw, s)
		}
		if got := s.Location(""); got != c.want {
			t.Errorf("Open(%q).Location(\"\") = %q, want %q", c.raw, got, c.want)
		}
	}
}

func TestOpenMem(t *testing.T) {
	ctx := t.Context()
	// Named stores live as long as the process: a fresh name per run.
	shared := fmt.Sprintf("mem://shared-%d", time.Now().UnixNano())
	a, err := store.Open(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Open(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Open(ctx, shared+"-other")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Create(ctx, "k", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	if got, _, err := store.ReadAll(ctx, b, "k"); err != nil || string(got) != "v" {
		t.Errorf("second Open of %s does not see the first's object: %q, %v", shared, got, err)
	}
	if _, _, err := store.ReadAll(ctx, c, "k"); err == nil {
		t.Errorf("another name sees %s's object", shared)
	}
}

func TestOpenErrors(t *testing.T) {
	cases := []struct{ raw, wantMsg string }{
		{"", "empty store URL"},
		{"ftp://host/x", `unsupported store URL "ftp://host/x": use a folder path, file://, s3://, gs://, azblob:// or http(s)://`},
		{"weird+scheme://x", `unsupported store URL "weird+scheme://x"`},
		{"ftp://user:secret@example.com/x", "ftp://user:xxxxx@example.com/x"},
		{"https://", "use http(s)://HOST/PATH"},
		{"s3://user:secret@bucket/x", "s3://user:xxxxx@bucket/x"},
		{"file://otherhost/x", "file:///absolute/path"},
		{"file:///x?no_tmp_dir=true", "no user, query or fragment"},
		{"mem://", "mem://NAME"},
		{"mem://a/b", "mem://NAME"},
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
