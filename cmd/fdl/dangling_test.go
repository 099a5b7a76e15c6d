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
	for _, want := range []string{"main", string(gone), "fdl -C " + dir + " branch -f main REV --backwards"} {
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

// TestDanglingRefsNamed: a tag or branch whose ref names a version the
// repository does not hold is named, with its kind, the missing version and
// the repair, by every command that reads it (log, show, attach, tag,
// branch, checkout, pull, a revision walking back from it), not reported
// as the version id alone ("unknown revision"); fdl tag --repair points a
// damaged tag at a version again, logged as a repair, and refuses an intact
// tag (exit 4).
func TestDanglingRefsNamed(t *testing.T) {
	url, base := newRepoWithBase(t)
	mustFdl(t, "--repo", url, "tag", "v1", string(base))
	mustFdl(t, "--repo", url, "tag", "intact", string(base))
	mustFdl(t, "--repo", url, "branch", "side", string(base))
	wd := filepath.Join(t.TempDir(), "side")
	mustFdl(t, "checkout", url, wd, "--branch", "side")
	gone, err := version.NewID()
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"tags/v1", "heads/side"} {
		if err := os.WriteFile(filepath.Join(url, "refs", ref), []byte(string(gone)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tagHint := []string{"tag v1", string(gone), "fdl tag --repair v1 REV"}
	// The hint carries the command's location (--repo URL after it, -C DIR
	// before it), so only the words after "fdl" are the same everywhere.
	branchHint := []string{"branch side", string(gone), "hint: ", " branch -f side REV --backwards"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--repo", url, "log", "v1"}, tagHint},
		{[]string{"--repo", url, "show", "v1"}, tagHint},
		{[]string{"--repo", url, "attach", "v1"}, tagHint},
		{[]string{"--repo", url, "tag", "v2", "v1"}, tagHint},
		{[]string{"--repo", url, "branch", "b2", "v1"}, tagHint},
		{[]string{"--repo", url, "log", "side~1"}, branchHint},
		{[]string{"--repo", url, "show", "side"}, branchHint},
		{[]string{"checkout", url, filepath.Join(t.TempDir(), "co"), "--branch", "side"}, branchHint},
		{[]string{"-C", wd, "pull"}, branchHint},
	} {
		code, out := fdlProc(t, nil, c.args...)
		if code != exitError {
			t.Errorf("fdl %s: exit %d, want %d\n%s", strings.Join(c.args, " "), code, exitError, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("fdl %s: message lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
	// The repair the hint names works, is logged, and is idempotent.
	mustFdl(t, "--repo", url, "tag", "--repair", "v1", string(base))
	if out := mustFdl(t, "--repo", url, "show", "v1"); !strings.Contains(out, string(base)[:7]) {
		t.Errorf("show v1 after the repair:\n%s", out)
	}
	if out := mustFdl(t, "--repo", url, "reflog", "v1"); !strings.Contains(out, "repair") || !strings.Contains(out, string(gone)[:7]) {
		t.Errorf("reflog v1 does not show the repair from %s:\n%s", gone, out)
	}
	if out := mustFdl(t, "--repo", url, "tag", "--repair", "v1", string(base)); !strings.Contains(out, "already at") {
		t.Errorf("a repeated repair: %s", out)
	}
	// A corrupt tag file is repaired the same way.
	if err := os.WriteFile(filepath.Join(url, "refs", "tags", "v1"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustFdl(t, "--repo", url, "tag", "--repair", "v1", string(base)); !strings.Contains(out, "Repaired tag v1") {
		t.Errorf("repair of a corrupt tag: %s", out)
	}
	// An intact tag never moves; a missing one has nothing to repair.
	dir, _ := commitChange(t, url, "after")
	mustFdl(t, "-C", dir, "push")
	if code, out := fdlProc(t, nil, "--repo", url, "tag", "--repair", "intact", "main"); code != exitExists || !strings.Contains(out, "tags never move") {
		t.Errorf("repair of an intact tag: exit %d, want %d\n%s", code, exitExists, out)
	}
	if code, out := fdlProc(t, nil, "--repo", url, "tag", "--repair", "nosuch", string(base)); code != exitError || !strings.Contains(out, "fdl tag nosuch REV") {
		t.Errorf("repair of a missing tag: exit %d\n%s", code, out)
	}
	mustFdl(t, "--repo", url, "branch", "-f", "side", string(base), "--backwards")
	verifyClean(t, url)
}
