package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/version"
)

// TestPushDanglingBranch: a push onto a branch whose ref names a version
// that is not in the repository (a damaged ref) is an error (exit 1) that
// names the branch, the missing version and how to repair the ref, not a
// refusal (exit 3: "not a fast-forward", which would send the person to
// check out again); nothing is moved or uploaded.
func TestPushDanglingBranch(t *testing.T) {
	url, base := newRepoWithBase(t)
	dir, _ := commitChange(t, url, "after")
	gone, err := version.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(url, "refs", "heads", "main"), []byte(string(gone)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.TreeDigest(t, url)
	code, out := fdlProc(t, nil, "-C", dir, "push")
	if code != exitError {
		t.Fatalf("push onto a dangling branch: exit %d, want %d\n%s", code, exitError, out)
	}
	for _, want := range []string{"main", string(gone), "fdl branch -f main"} {
		if !strings.Contains(out, want) {
			t.Errorf("message lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "push refused") {
		t.Errorf("a damaged ref reads as a refusal:\n%s", out)
	}
	if testutil.TreeDigest(t, url) != before {
		t.Error("a failed push changed the repository")
	}
	code, out = fdlProc(t, []string{}, "--json", "-C", dir, "push")
	if code != exitError || !strings.Contains(out, `"kind":"dangling_ref"`) {
		t.Errorf("--json: exit %d, want kind dangling_ref\n%s", code, out)
	}
	// Moving it is refused the same way; with --backwards it is repaired
	// (what the hint says), and the push then goes.
	code, out = fdlProc(t, nil, "--repo", url, "branch", "-f", "main", string(base))
	if code != exitError || !strings.Contains(out, "fdl branch -f main REV --backwards") {
		t.Errorf("branch -f onto a dangling branch: exit %d\n%s", code, out)
	}
	mustFdl(t, "--repo", url, "branch", "-f", "main", string(base), "--backwards")
	if head := branchHead(t, url); head != base {
		t.Fatalf("after the repair main holds %s, want %s", head, base)
	}
	mustFdl(t, "-C", dir, "push")
	verifyClean(t, url)
}
