package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// TestPushFullDisk: a push whose writes fail because the repository's disk
// is full leaves the repository exactly as it was — no empty
// versions/<id>/ folder, no temporary file, the branch where it was — and
// the same push run again once there is room completes and verify is
// clean. "tmpfs" puts the repository on a real, tiny, full file system
// (a tmpfs mounted in a user and mount namespace of its own: ENOSPC);
// "rlimit" gets the same failure from a file-size limit (EFBIG), where
// namespaces are not available.
func TestPushFullDisk(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux (mount namespaces, RLIMIT_FSIZE)")
	}
	for _, how := range []string{"tmpfs", "rlimit"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			mnt := filepath.Join(dir, "mnt")
			url := filepath.Join(mnt, "repo")
			if err := os.MkdirAll(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			url, base := newRepoWithBaseAt(t, url)
			r, err := repo.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			wd := filepath.Join(dir, "w")
			if how == "rlimit" {
				// On the repository's file system push hard-links the
				// catalog (no byte written, nothing for the limit to stop):
				// the working directory goes to another, so push copies.
				wd = filepath.Join(testutil.OtherFileSystem(t), "w")
			}
			if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: wd}); err != nil {
				t.Fatal(err)
			}
			duckWrite(t, duckSession(t), wd, "INSERT INTO base SELECT 100 + i AS id FROM range(1000) t(i)")
			mustFdl(t, "-C", wd, "commit", "-m", "big")
			before := testutil.TreeDigest(t, url)

			out := filepath.Join(dir, "out")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			script, after := fullDiskScript(t, how, url, out)
			cmd := exec.Command("sh", "-c", script)
			if how == "tmpfs" {
				cmd = exec.Command("unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script)
			}
			cmd.Env = append(os.Environ(), "MNT="+mnt, "OUT="+out, "WD="+wd)
			if b, err := cmd.CombinedOutput(); err != nil {
				if how == "tmpfs" && os.Getenv("CI") == "" {
					t.Skipf("no user and mount namespace here (%v): %s", err, b)
				}
				t.Fatalf("%s: %v\n%s", how, err, b)
			}
			code, _ := os.ReadFile(filepath.Join(out, "push.code"))
			pushOut, _ := os.ReadFile(filepath.Join(out, "push.out"))
			if strings.TrimSpace(string(code)) == "0" {
				t.Fatalf("push on a full disk succeeded:\n%s", pushOut)
			}
			low := strings.ToLower(string(pushOut))
			if !strings.Contains(low, "no space left") && !strings.Contains(low, "file too large") {
				t.Fatalf("push on a full disk failed for another reason:\n%s", pushOut)
			}
			if got := testutil.TreeDigest(t, after); got != before {
				ls, _ := exec.Command("find", after).CombinedOutput()
				t.Fatalf("a push that failed on a full disk changed the repository:\n%s", ls)
			}
			if head := branchHead(t, url); head != base {
				t.Fatalf("main moved to %s", head)
			}
			// Room again: the same push completes.
			mustFdl(t, "-C", wd, "push")
			if branchHead(t, url) == base {
				t.Fatal("push after the disk was freed did not move main")
			}
			if code, out := fdlProc(t, nil, "--repo", url, "verify", "--data"); code != 0 {
				t.Fatalf("verify --data: exit %d\n%s", code, out)
			}
		})
	}
}

// fullDiskScript is the shell script that runs the push of TestPushFullDisk
// on a full disk the way how says, and where the repository is to be read
// after it (out/repo for tmpfs, which copies it out of the namespace's
// mount; url itself for rlimit).
func fullDiskScript(t *testing.T, how, url, out string) (script, after string) {
	t.Helper()
	after = url
	switch how {
	case "tmpfs":
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("unshare not found")
		}
		// The repository moves onto a 64 MiB tmpfs mounted at its
		// parent; a filler leaves 16 KiB free, less than the catalog.
		script = `set -e
cp -a "$MNT" "$OUT/save"
mount -t tmpfs -o size=64m tmpfs "$MNT"
cp -a "$OUT/save/." "$MNT/"
dd if=/dev/zero of="$MNT/filler" bs=65536 2>/dev/null || true
truncate -s -16384 "$MNT/filler"
set +e
fdl -C "$WD" push >"$OUT/push.out" 2>&1
echo $? >"$OUT/push.code"
rm -f "$MNT/filler"
cp -a "$MNT/repo" "$OUT/repo"`
		after = filepath.Join(out, "repo")
	case "rlimit":
		script = `ulimit -f 16
fdl -C "$WD" push >"$OUT/push.out" 2>&1
echo $? >"$OUT/push.code"`
	}
	return script, after
}
