package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra/doc"

	"github.com/fdl-dev/fdl/internal/term"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli/ from the commands")

// TestGeneratedDocs fails when docs/cli/ (Markdown generated from the cobra
// commands) is stale. Refresh with: make docs.
func TestGeneratedDocs(t *testing.T) {
	ios, _, _ := term.Test()
	root := newRootCmd(ios, &globals{})
	root.DisableAutoGenTag = true
	tmp := t.TempDir()
	if err := doc.GenMarkdownTree(root, tmp); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join("..", "..", "docs", "cli")
	if *updateDocs {
		os.RemoveAll(want)
		if err := os.MkdirAll(want, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gen, _ := filepath.Glob(filepath.Join(tmp, "*.md"))
	have, _ := filepath.Glob(filepath.Join(want, "*.md"))
	if !*updateDocs && len(gen) != len(have) {
		t.Fatalf("docs/cli has %d files, the commands make %d: run make docs", len(have), len(gen))
	}
	for _, g := range gen {
		b, _ := os.ReadFile(g)
		dst := filepath.Join(want, filepath.Base(g))
		if *updateDocs {
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(old, b) {
			t.Errorf("%s is stale: run make docs", dst)
		}
	}
}
