package scratch

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A folder whose owner is gone (its owner file unlocked, and not just
// made) is swept, so is an old one without an owner file; one whose owner
// holds its lock, one whose owner file was made a moment ago (about to be
// locked), a young one without an owner file (being made), a folder of a
// kind fdl does not make, a file and anything else are kept. The
// temporary folder's own name holds characters a glob pattern would read
// ('[', '*').
func TestSweep(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "tmp [1]*")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	mk := func(name string, owner bool, age time.Duration) string {
		t.Helper()
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "ducklake.duckdb"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if owner {
			o := filepath.Join(d, OwnerFile)
			if err := os.WriteFile(o, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(o, when, when); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, when, when); err != nil {
			t.Fatal(err)
		}
		return d
	}
	dead := mk("fdl-duckdb-dead", true, 2*LockGrace)
	deadMirror := mk("fdl-mirror-123", true, 2*LockGrace)
	justMade := mk("fdl-gc-justmade", true, 0)
	oldOrphan := mk("fdl-verify-old", false, 2*OrphanAge)
	youngOrphan := mk("fdl-diff-young", false, time.Minute)
	otherKind := mk("fdl-notes-1", true, 2*OrphanAge)
	noDash := mk("fdl-mirror", true, 2*OrphanAge)
	other := mk("not-fdl-duckdb", true, 2*OrphanAge)
	file := filepath.Join(tmp, "fdl-show-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	live, remove, err := New(Mirror)
	if err != nil {
		t.Fatal(err)
	}
	Sweep(tmp, time.Now())
	for _, c := range []struct {
		dir  string
		kept bool
	}{{dead, false}, {deadMirror, false}, {justMade, true}, {oldOrphan, false}, {youngOrphan, true},
		{otherKind, true}, {noDash, true}, {other, true}, {file, true}, {live, true}} {
		_, err := os.Lstat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(c.dir), kept, c.kept)
		}
	}
	if filepath.Dir(live) != tmp || !strings.HasPrefix(filepath.Base(live), "fdl-mirror-") {
		t.Errorf("folder %s is not fdl-mirror-* in TMPDIR %s", live, tmp)
	}
	// Another process's sweep (another open of the owner file) keeps the
	// live folder while its owner holds the lock; remove removes it.
	Sweep(tmp, time.Now().Add(2*LockGrace))
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live folder was swept: %v", err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live); err == nil {
		t.Errorf("remove left %s", live)
	}
	if err := remove(); err != nil {
		t.Errorf("a second remove: %v", err)
	}
	if _, _, err := New("notes"); err == nil {
		t.Errorf("New made a folder of an unknown kind")
	}
}

// A process killed (SIGKILL) while it holds a folder leaves it; the
// kernel lets go of its owner file's lock, so the next sweep (past
// LockGrace) removes it.
func TestSweepAfterKill(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL")
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepAfterKill$")
	cmd.Env = append(os.Environ(), "SCRATCH_HOLD=1", "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("the child printed no folder: %v", err)
	}
	dir := strings.TrimSpace(line)
	Sweep(tmp, time.Now().Add(2*LockGrace))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a live process's folder was swept: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, "catalog.duckdb")); err != nil {
		t.Fatalf("the killed process's folder is not there to sweep: %v", err)
	}
	Sweep(tmp, time.Now().Add(2*LockGrace))
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a killed process's folder %s was kept", dir)
	}
}

// TestMain runs the child of TestSweepAfterKill: it makes a folder with a
// file in it, prints the folder's path and waits to be killed.
func TestMain(m *testing.M) {
	if os.Getenv("SCRATCH_HOLD") == "1" {
		dir, _, err := New(Mirror)
		if err != nil {
			os.Exit(2)
		}
		os.WriteFile(filepath.Join(dir, "catalog.duckdb"), []byte("x"), 0o600)
		os.Stdout.WriteString(dir + "\n")
		time.Sleep(time.Minute)
		os.Exit(3)
	}
	os.Exit(m.Run())
}
