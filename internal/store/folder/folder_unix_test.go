//go:build unix

package folder_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/folder"
)

// The multi-process tests re-run this test binary as a child process; the
// environment variable childEnv selects what the child does (see runChild).
const (
	childEnv = "FDL_STORE_TEST_CHILD"
	rootEnv  = "FDL_STORE_TEST_ROOT"
	keyEnv   = "FDL_STORE_TEST_KEY"
	tokenEnv = "FDL_STORE_TEST_TOKEN"
	dataEnv  = "FDL_STORE_TEST_DATA"
	gateEnv  = "FDL_STORE_TEST_GATE" // a file to wait for before acting
)

// Exit codes of a "swap" child.
const (
	exitWon      = 0
	exitError    = 1
	exitConflict = 3
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild is the body of a child process.
//   - "swap": wait for the gate file, then Swap(key, token, data) once.
//   - "hold": take key's Swap lock, create the gate file, sleep until killed.
func runChild(mode string) int {
	ctx := context.Background()
	l, err := folder.Open(os.Getenv(rootEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitError
	}
	key, gate := os.Getenv(keyEnv), os.Getenv(gateEnv)
	switch mode {
	case "swap":
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(gate); err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintln(os.Stderr, "gate never opened")
				return exitError
			}
			time.Sleep(200 * time.Microsecond)
		}
		_, err := l.Swap(ctx, key, store.Token(os.Getenv(tokenEnv)), []byte(os.Getenv(dataEnv)))
		switch {
		case err == nil:
			return exitWon
		case errors.Is(err, store.ErrConflict):
			return exitConflict
		default:
			fmt.Fprintln(os.Stderr, err)
			return exitError
		}
	case "hold":
		if _, err := l.LockForTest(ctx, key); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitError
		}
		if err := os.WriteFile(gate, nil, 0o666); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitError
		}
		time.Sleep(time.Minute) // killed long before
		return exitError
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return exitError
}

func child(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		if s := stderr.String(); s != "" {
			t.Logf("child %s stderr: %s", mode, s)
		}
	})
	return cmd
}

// Workers processes Swap the same ref from the same Token, Rounds times: each
// round exactly one wins and the ref holds its value.
func TestFolderSwapMultiProcess(t *testing.T) {
	const (
		workers = 16
		rounds  = 20
		key     = "refs/heads/main"
	)
	if testing.Short() {
		t.Skip("starts 320 processes")
	}
	ctx := t.Context()
	root := filepath.Join(t.TempDir(), "repo")
	l, err := folder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	gates := t.TempDir()
	tok := store.NoToken // round 0 races to create the ref
	for round := range rounds {
		gate := filepath.Join(gates, fmt.Sprint(round))
		cmds := make([]*exec.Cmd, workers)
		for i := range workers {
			cmds[i] = child(t, "swap",
				rootEnv+"="+root, keyEnv+"="+key, tokenEnv+"="+string(tok), gateEnv+"="+gate,
				dataEnv+"="+fmt.Sprintf("round %d writer %d\n", round, i))
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(gate, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		winner := -1
		for i, cmd := range cmds {
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			switch {
			case code == exitWon && winner >= 0:
				t.Fatalf("round %d: processes %d and %d both won", round, winner, i)
			case code == exitWon:
				winner = i
			case code != exitConflict:
				t.Fatalf("round %d: process %d: exit %d (%v), want won or conflict", round, i, code, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no process won", round)
		}
		got, gtok, err := store.ReadAll(ctx, l, key)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("round %d writer %d\n", round, winner); string(got) != want {
			t.Fatalf("round %d: ref holds %q, want the winner's %q", round, got, want)
		}
		tok = gtok
	}
	assertNoTemp(t, root)
}

// A process killed by SIGKILL while it holds a ref's lock does not block the
// next Swap of that ref.
func TestFolderSwapAfterKill(t *testing.T) {
	ctx := t.Context()
	root := filepath.Join(t.TempDir(), "repo")
	l, err := folder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	const key = "refs/heads/main"
	tok, err := l.Swap(ctx, key, store.NoToken, []byte("v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "locked")
	cmd := child(t, "hold", rootEnv+"="+root, keyEnv+"="+key, gateEnv+"="+gate)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(gate); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never took the lock")
		}
	}

	// While the child holds the lock, Swap waits (and gives up with its ctx).
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = l.Swap(short, key, tok, []byte("v2\n"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Swap while another process holds the lock = %v, want it to wait until its deadline", err)
	}

	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v", cmd.ProcessState)
	}

	start := time.Now()
	short, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := l.Swap(short, key, tok, []byte("v2\n")); err != nil {
		t.Fatalf("Swap after the lock holder was killed: %v", err)
	}
	t.Logf("Swap after kill took %v", time.Since(start))
	if got, _, _ := store.ReadAll(ctx, l, key); string(got) != "v2\n" {
		t.Errorf("ref holds %q, want %q", got, "v2\n")
	}
}

// New files and folders get the usual permissions (0666 and 0777 less the
// umask), not CreateTemp's 0600, so other readers (DuckDB run by another
// user, a web server) can read the repository.
func TestFolderPermissions(t *testing.T) {
	umask := syscall.Umask(0o022)
	syscall.Umask(umask)
	ctx := t.Context()
	l := newLocal(t)
	if err := l.Create(ctx, "versions/01/version.json", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Swap(ctx, "refs/heads/main", store.NoToken, []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]os.FileMode{
		"versions/01/version.json": 0o666 &^ os.FileMode(umask),
		"refs/heads/main":          0o666 &^ os.FileMode(umask),
		"versions/01":              0o777 &^ os.FileMode(umask),
		"refs/heads":               0o777 &^ os.FileMode(umask),
	} {
		fi, err := os.Stat(l.Location(key))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", key, got, want)
		}
	}
}
