package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// quickStartBlocks returns the shell blocks (```sh) of the README's quick
// start: the section "## Quick start for a DuckDB user", up to the next
// "## " heading, in order.
func quickStartBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realduck.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Quick start for a DuckDB user\n")
	if !ok {
		t.Fatal("README.md has no section '## Quick start for a DuckDB user'")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var blocks []string
	for {
		_, rest, ok := strings.Cut(sec, "\n```sh\n")
		if !ok {
			break
		}
		block, after, ok := strings.Cut(rest, "\n```")
		if !ok {
			t.Fatal("README.md: a ```sh block of the quick start is not closed")
		}
		blocks = append(blocks, block)
		sec = after
	}
	if len(blocks) < 5 {
		t.Fatalf("README.md's quick start has %d shell blocks; the story has more", len(blocks))
	}
	return blocks
}

// TestReadme runs every shell block of the README's quick start exactly as
// written, in order, in one bash (set -euo pipefail: a failing command, or
// one failing in a pipe, stops it), from a fresh folder standing for the
// clone: bin/fdl is the fdl under test, scripts/duckdb the real DuckDB
// 1.5.5 CLI with its extensions. It fails when a command of the text fails
// or the story's last reading is not what the text says it reads.
// (docs/ci.md's one script, nightly.sh, is run by TestCIWorkflow.)
func TestReadme(t *testing.T) {
	t.Parallel()
	realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	fdl, err := exec.LookPath("fdl")
	if err != nil {
		t.Fatal(err)
	}
	clone := t.TempDir()
	for _, d := range []string{"bin", "scripts"} {
		if err := os.MkdirAll(filepath.Join(clone, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(fdl, filepath.Join(clone, "bin", "fdl")); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nexec " + filepath.Join(realduck.Root(), "scripts", "duckdb") + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(clone, "scripts", "duckdb"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, b := range quickStartBlocks(t) {
		fmt.Fprintf(&script, "echo '=== README quick start, block %d'\n%s\n", i+1, b)
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = clone
	// A fresh user: no repository named by the environment, a temporary
	// folder of the test's own (mktemp -d).
	// The reader's catalog cache goes to a folder of the test's own.
	cmd.Env = append(envWithout(os.Environ(), "FDL_REPO", "FDL_AUTHOR", "TMPDIR", "FDL_CACHE", "XDG_CACHE_HOME"),
		"TMPDIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's quick start does not run as written: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	// The tagged version read through the reader's line: the 100,000
	// rows loaded (the revert brought the 10 deleted back), 25,000 per
	// region, and the late sale in north; fdl log names FDL_AUTHOR; the
	// pinned tag read from the cache holds all 100,001.
	for _, want := range []string{"│ east    │        25000 │", "│ north   │        25001 │", "Ada Lovelace", "│ 100001 │", "Pinned shop: "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the quick start's output lacks %q:\n%s", want, out)
		}
	}
}

// envWithout is env without the variables named.
func envWithout(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
