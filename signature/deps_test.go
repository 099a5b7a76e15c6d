package signature

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps: the package links only the standard library, golang.org/x/crypto
// and the SSHSIG package: no other package of fdl (no store, no repository,
// no DuckDB), nothing outside the standard library that uses cgo, so a reader can check signatures with it alone.
func TestDeps(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f",
		"{{.ImportPath}}\t{{.Standard}}\t{{len .CgoFiles}}", "github.com/fdl-dev/fdl/signature").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := []string{"golang.org/x/crypto/", "github.com/hiddeco/sshsig", "github.com/fdl-dev/fdl/signature"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		if f[1] == "true" {
			continue
		}
		if f[2] != "0" {
			t.Errorf("signature links %s, which uses cgo", f[0])
		}
		ok := false
		for _, p := range allowed {
			ok = ok || strings.HasPrefix(f[0], p)
		}
		if !ok {
			t.Errorf("signature links %s: it may link only the standard library, golang.org/x/crypto and github.com/hiddeco/sshsig", f[0])
		}
	}
}
