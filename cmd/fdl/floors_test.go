package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFloors keeps the library's floors (docs/architecture.md): a package
// never imports one on a floor above it. refs reads records through its
// Records interface, so it imports neither repo nor retention; history
// reads records through its Source interface, so it imports neither repo
// nor refs; retention decides from what repo reads, so it does not import
// repo; version, the records, imports none of them. gc, above repo,
// is imported by none of them (nor by workdir, its neighbour on that
// floor): it carries retention's decisions out over what repo reads and
// writes for it. mirror, beside them above repo, copies between two
// repositories through repo alone: it imports neither, and none imports it.
// pins, the reader's operations, sits beside them above repo too; lockfile
// and cache, the files it reads and writes, know no repository.
func TestFloors(t *testing.T) {
	const mod = "github.com/fdl-dev/fdl/"
	for pkg, above := range map[string][]string{
		"refs":      {"repo", "gc", "retention", "history", "mirror", "cmd/"},
		"history":   {"repo", "gc", "refs", "retention", "cmd/"},
		"retention": {"repo", "gc", "cmd/"},
		"version":   {"repo", "gc", "refs", "retention", "history", "cmd/"},
		"repo":      {"gc", "workdir", "mirror", "pins", "cmd/"},
		"workdir":   {"gc", "mirror", "pins", "cmd/"},
		"gc":        {"workdir", "mirror", "pins", "cmd/"},
		"mirror":    {"gc", "workdir", "pins", "cmd/"},
		"pins":      {"gc", "workdir", "mirror", "cmd/"},
		// A project's lockfile names refs and versions; the catalog cache
		// and signatures stand on internal/ alone.
		"lockfile":  {"repo", "gc", "workdir", "mirror", "pins", "history", "retention", "cache", "signature", "cmd/"},
		"cache":     {"repo", "gc", "workdir", "mirror", "pins", "refs", "history", "retention", "version", "lockfile", "signature", "cmd/"},
		"signature": {"repo", "gc", "workdir", "mirror", "pins", "refs", "history", "retention", "version", "lockfile", "cache", "cmd/"},
	} {
		out, err := exec.Command("go", "list", "-deps", "../../"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, a := range above {
				if dep == mod+strings.TrimSuffix(a, "/") || strings.HasPrefix(dep, mod+a) && strings.HasSuffix(a, "/") {
					t.Errorf("%s imports %s, a floor above it", pkg, dep)
				}
			}
		}
	}
}
