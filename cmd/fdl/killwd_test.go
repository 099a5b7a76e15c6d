package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/workdir"
)

// TestKillWorkdirAtEveryStep kills (SIGKILL) checkout, pull, revert,
// restore and commit at each of their steps in a SQLite working directory
// (the default): the next command either uses the directory as it is or
// repairs it by itself — status works, and running the command again
// completes. A pull once killed between base.json and state.json left
// every later command failing on a record of another version; the base's
// record now lives in state.json, one atomic write.
//
// It is one piece: one kill helper shared by the four groups of steps
// (checkout, pull, revert and restore, commit), which run at once.
func TestKillWorkdirAtEveryStep(t *testing.T) {
	t.Parallel()
	sqlite := func(dir string) string { return filepath.Join(dir, workdir.SQLiteCatalogName) }
	write := func(t *testing.T, dir, sql string) {
		t.Helper()
		if err := duckLake(t, duckSession(t), sqlite(dir), sql, false); err != nil {
			t.Fatal(err)
		}
	}
	checkout := func(t *testing.T, url string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "w")
		mustFdl(t, "checkout", url, dir, "--catalog-format", "sqlite")
		return dir
	}
	killed := func(t *testing.T, step string, args ...string) {
		t.Helper()
		if code, out := fdlProc(t, []string{"FDL_TEST_KILL_AT=" + step}, args...); code != -1 {
			t.Fatalf("fdl %v was not killed at %s: exit %d\n%s", args, step, code, out)
		}
	}
	usable := func(t *testing.T, dir string) {
		t.Helper()
		if code, out := fdlProc(t, nil, "-C", dir, "status"); code != 0 && !strings.Contains(out, "fdl pull again") {
			t.Fatalf("status after the kill: exit %d\n%s", code, out)
		}
	}
	// Each command has a repository of its own: they run at once.
	t.Run("checkout", func(t *testing.T) {
		t.Parallel()
		url, _ := newRepoWithBase(t)
		for _, step := range []string{"checkout:catalog", "checkout:converted", "checkout:state", "state:saved"} {
			t.Run(step, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "w")
				killed(t, step, "checkout", url, dir, "--catalog-format", "sqlite")
				if step != "state:saved" {
					code, out := fdlProc(t, nil, "-C", dir, "status")
					if code == 0 || !strings.Contains(out, "a checkout into it was interrupted") {
						t.Fatalf("status in an interrupted checkout: exit %d\n%s", code, out)
					}
				}
				// Checking out again resumes (or, once the state was
				// saved, finds the directory made).
				code, out := fdlProc(t, nil, "checkout", url, dir, "--catalog-format", "sqlite")
				if step == "state:saved" {
					if code == 0 {
						t.Fatalf("a second checkout over a finished one succeeded:\n%s", out)
					}
				} else if code != 0 {
					t.Fatalf("checkout again after a kill at %s: exit %d\n%s", step, code, out)
				}
				usable(t, dir)
				write(t, dir, "INSERT INTO base VALUES (1000)")
				mustFdl(t, "-C", dir, "commit", "-m", "after the kill")
			})
		}
	})
	t.Run("pull", func(t *testing.T) {
		t.Parallel()
		url, _ := newRepoWithBase(t)
		for _, step := range []string{"pull:replace", "pull:state", "state:saved"} {
			t.Run(step, func(t *testing.T) {
				a, b := checkout(t, url), checkout(t, url)
				write(t, a, "INSERT INTO base VALUES (2000)")
				mustFdl(t, "-C", a, "commit", "-m", "ahead")
				mustFdl(t, "-C", a, "push")
				killed(t, step, "-C", b, "pull")
				usable(t, b)
				mustFdl(t, "-C", b, "pull")
				usable(t, b)
				write(t, b, "INSERT INTO base VALUES (2001)")
				mustFdl(t, "-C", b, "commit", "-m", "after the pull")
				mustFdl(t, "-C", b, "push")
				mustFdl(t, "-C", a, "pull")
			})
		}
	})
	for _, undo := range []string{"revert", "restore"} {
		t.Run(undo, func(t *testing.T) {
			t.Parallel()
			url, _ := newRepoWithBase(t)
			steps := []string{undo + ":written", "state:saved"}
			if undo == "revert" {
				steps = append(steps, "commit:freeze", "commit:state", "state:saved#2")
			}
			for _, step := range steps {
				t.Run(step, func(t *testing.T) {
					dir := checkout(t, url)
					write(t, dir, "INSERT INTO base VALUES (3000)")
					mustFdl(t, "-C", dir, "commit", "-m", "to undo")
					mustFdl(t, "-C", dir, "push")
					args := []string{"-C", dir, "revert", "main"}
					if undo == "restore" {
						args = []string{"-C", dir, "restore", "--source", "main~1"}
					}
					killed(t, step, args...)
					usable(t, dir)
					// The working directory goes on: a commit of what the
					// kill left, or of nothing new, then a push.
					code, out := fdlProc(t, nil, "-C", dir, "commit", "--allow-nothing", "-m", "after the kill")
					if code != 0 {
						t.Fatalf("commit after a kill at %s: exit %d\n%s", step, code, out)
					}
					mustFdl(t, "-C", dir, "push")
					verifyClean(t, url)
				})
			}
		})
	}
	t.Run("commit", func(t *testing.T) {
		t.Parallel()
		url, _ := newRepoWithBase(t)
		dir := checkout(t, url)
		write(t, dir, "INSERT INTO base VALUES (4000)")
		killed(t, "state:saved", "-C", dir, "commit", "-m", "killed after its state")
		usable(t, dir)
		mustFdl(t, "-C", dir, "push")
	})
}
