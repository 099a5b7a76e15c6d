package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// hintPrelude is the bash every case of TestHintsRun starts with: mk makes
// a repository "repo" whose main holds table t at seq 1, checked out in w;
// co URL DIR [FLAGS] checks out and keeps the working catalog's ATTACH
// line in DIR.attach; sql DIR SQL runs SQL on DIR's working catalog with
// the real DuckDB; change DIR commits a new row there.
const hintPrelude = `set -euo pipefail
co() { local u=$1 d=$2; shift 2; fdl checkout "$u" "$d" "$@" | { grep 'ATTACH OR REPLACE' || true; } > "$d.attach"; }
sql() { duckdb -c "$(cat "$1.attach") $2;" >/dev/null; }
change() { sql "$1" "INSERT INTO lake.t VALUES (${2:-2})"; fdl -C "$1" commit -m "change in $1" >/dev/null; }
mk() { fdl init repo >/dev/null; co repo w; sql w "CREATE TABLE lake.t(i INT); INSERT INTO lake.t VALUES (1)"; fdl -C w commit -m one >/dev/null; fdl -C w push >/dev/null; }
# moved: main moves on from another working directory.
moved() { co repo other; change other 3; fdl -C other push >/dev/null; }
`

// hintCase is one refusal that carries hints: setup makes the situation
// (bash, after hintPrelude, in a fresh folder), cmd is the refused command
// run in dir, kind its JSON error kind. Each hint command is then run, in
// the order printed, in dir (a user follows them in that order; the
// alternatives take a fresh NEWDIR each), with its placeholders replaced
// by vars (defaults: MSG, NEWDIR, URL, NEW, NEW-BRANCH, BRANCH, COMMAND,
// DIR); before, if set, is a step the user takes before the hints (a hint
// that only makes sense after it, as the message says); after checks
// where the hints ended.
type hintCase struct {
	name, setup, dir, cmd, kind string
	vars                        map[string]string
	before, after               string
	hints                       int // how many hint commands the refusal carries
}

func hintCases() []hintCase {
	return []hintCase{
		{name: "push not a fast-forward", setup: "mk; moved; change w", dir: "w", cmd: "fdl push", kind: "refused", hints: 1,
			after: `[[ $(fdl -C hint-dir-1 status) == *"Up to date with main"* ]]`},
		{name: "pull over uncommitted snapshots", setup: "mk; moved; sql w 'INSERT INTO lake.t VALUES (7)'", dir: "w", cmd: "fdl pull", kind: "uncommitted", hints: 3,
			after: onMainWith("hint test")},
		{name: "pull over unpushed versions", setup: "mk; moved; change w", dir: "w", cmd: "fdl pull", kind: "unpushed", hints: 2,
			after: onMainWith("change in w")},
		{name: "pull not a fast-forward", setup: "mk; change w; fdl -C w push >/dev/null; fdl branch -f main main~1 --backwards --repo repo >/dev/null; co repo w2; change w2 9; fdl -C w2 push >/dev/null", dir: "w", cmd: "fdl pull", kind: "refused", hints: 2},
		{name: "push before the first commit", setup: "fdl init repo >/dev/null; co repo w", dir: "w", cmd: "fdl push", kind: "nothing_to_push", hints: 1,
			before: "sql w 'CREATE TABLE lake.t(i INT)'"},
		{name: "log before the first commit", setup: "fdl init repo >/dev/null; co repo w", dir: "w", cmd: "fdl log", kind: "unknown_revision", hints: 1,
			before: "sql w 'CREATE TABLE lake.t(i INT)'", after: `[[ $(fdl -C w log) == *"hint test"* ]]`},
		{name: "request with nothing to review", setup: "mk", dir: "w", cmd: "fdl request create r -m title", kind: "nothing_to_push", hints: 1,
			before: "sql w 'INSERT INTO lake.t VALUES (5)'"},
		{name: "request from a diverged directory", setup: "mk; moved; change w", dir: "w", cmd: "fdl request create r -m title", kind: "refused", hints: 1},
		{name: "approve after the target moved", setup: "mk; change w; fdl -C w request create r -m title >/dev/null; co repo w2; change w2 8; fdl -C w2 push >/dev/null", dir: "w", cmd: "fdl request approve r", kind: "refused", hints: 1},
		{name: "unknown revision", setup: "mk", dir: ".", cmd: "fdl show nosuch --repo repo", kind: "unknown_revision", hints: 3},
		{name: "unknown request", setup: "mk", dir: ".", cmd: "fdl request show nosuch --repo repo", kind: "ref_not_found", hints: 1},
		{name: "not a working directory", setup: "mk", dir: ".", cmd: "fdl commit -m x", kind: "not_workdir", hints: 2},
		{name: "not a repository", setup: "mkdir empty", dir: ".", cmd: "fdl log --repo empty", kind: "not_repository", hints: 1},
		{name: "repository is a working directory", setup: "mk", dir: ".", cmd: "fdl log --repo w", kind: "not_repository", hints: 1},
		{name: "branch -f backwards without the flag", setup: "mk; change w; fdl -C w push >/dev/null", dir: ".", cmd: "fdl branch -f main main~1 --repo repo", kind: "refused", hints: 2},
		{name: "delete HEAD's branch", setup: "mk; change w; fdl -C w push >/dev/null", dir: ".", cmd: "fdl branch -d main --repo repo", kind: "delete_head", hints: 2,
			vars: map[string]string{"NAME": "main", "REV": "main~1"}},
		{name: "branch with no version yet", setup: "fdl init repo >/dev/null", dir: ".", cmd: "fdl log --repo repo", kind: "", hints: 2},
		{name: "revert with uncommitted work", setup: "mk; change w; fdl -C w push >/dev/null; sql w 'INSERT INTO lake.t VALUES (6)'", dir: "w", cmd: "fdl revert main", kind: "uncommitted", hints: 2},
		{name: "revert that conflicts", setup: "mk; sql w 'UPDATE lake.t SET i = 10'; fdl -C w commit -m a >/dev/null; sql w 'UPDATE lake.t SET i = 20'; fdl -C w commit -m b >/dev/null; fdl -C w push >/dev/null", dir: "w", cmd: "fdl revert main~1", kind: "revert_conflict", hints: 2,
			vars: map[string]string{"REV": "main"}},
		{name: "short grace", setup: "mk", dir: ".", cmd: "fdl retention --grace 1m --repo repo", kind: "", hints: 1},
		{name: "request by revision with nothing new", setup: "mk; co repo w2 --branch side; change w2 5; fdl -C w2 push >/dev/null",
			dir: ".", cmd: "fdl request create r --from main --repo repo", kind: "nothing_to_push", hints: 1, vars: map[string]string{"REV": "side"}},
		{name: "tag at another version", setup: "mk; change w; fdl -C w push >/dev/null; fdl tag t1 main --repo repo >/dev/null", dir: ".", cmd: "fdl tag t1 main~1 --repo repo", kind: "ref_exists", hints: 2,
			vars: map[string]string{"NAME": "t2"}},
		{name: "branch at another version", setup: "mk; change w; fdl -C w push >/dev/null; fdl branch b1 main~1 --repo repo >/dev/null", dir: ".", cmd: "fdl branch b1 main --repo repo", kind: "ref_exists", hints: 1},
		{name: "working catalog deleted", setup: "mk; change w; fdl -C w push >/dev/null; rm w/ducklake.*", dir: "w", cmd: "fdl status", kind: "catalog_unusable", hints: 1,
			after: `[[ $(fdl -C w status) == *"Up to date with main"* ]]`},
		{name: "checkout of a retired version", setup: "mk; change w; fdl -C w push >/dev/null; fdl retention --keep-last 1 --repo repo >/dev/null; fdl gc --yes --repo repo >/dev/null",
			dir: ".", cmd: "fdl checkout repo old --rev main~1", kind: "retired", hints: 2},
	}
}

// onMainWith checks that w ended on main, up to date, and that the
// versions it kept are on the branch kept (the last message msg).
func onMainWith(msg string) string {
	return `st=$(fdl -C w status); [[ $st == *"On branch main"* && $st == *"Up to date with main"* ]] && [[ $(fdl log kept --repo repo) == *"` + msg + `"* ]]`
}

// hintPlaceholder matches the words in capitals a hint leaves to the user.
var hintPlaceholder = regexp.MustCompile(`\b(NEW-BRANCH|NEWDIR|NEW|MSG|REV|URL|NAME|BRANCH|COMMAND|DIR)\b`)

// TestHintsRun makes each refusal that carries hints, takes the hint
// commands of its --json error (hint_commands), fills in their
// placeholders and runs them: each must succeed in that situation (exit 0),
// and where the case says so, end where the advice promised (on main, up to
// date). A hint that fails here is wrong advice.
func TestHintsRun(t *testing.T) {
	t.Parallel()
	realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	for _, c := range hintCases() {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			runHintCase(t, c)
		})
	}
}

func runHintCase(t *testing.T, c hintCase) {
	dir := t.TempDir()
	env := append(envWithout(os.Environ(), "FDL_REPO", "FDL_AUTHOR"), "FDL_AUTHOR=t", "NO_COLOR=1",
		"PATH="+duckBinDir(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	bash := func(where, script string) (string, error) {
		cmd := exec.Command("bash", "-c", hintPrelude+script)
		cmd.Dir, cmd.Env = filepath.Join(dir, where), env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := bash(".", c.setup); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "-c", c.cmd+" --json")
	cmd.Dir, cmd.Env = filepath.Join(dir, c.dir), env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("%s succeeded; the case wants a refusal", c.cmd)
	}
	var e struct {
		Error struct {
			Message, Kind, Hint string
			Commands            []string `json:"hint_commands"`
		}
	}
	if err := json.Unmarshal([]byte(stderr.String()), &e); err != nil {
		t.Fatalf("%s: stderr is not one JSON error: %v\n%s", c.cmd, err, stderr.String())
	}
	if c.kind != "" && e.Error.Kind != c.kind {
		t.Fatalf("%s: kind %q, want %q: %s", c.cmd, e.Error.Kind, c.kind, e.Error.Message)
	}
	if len(e.Error.Commands) != c.hints {
		t.Fatalf("%s: %d hint commands %q, want %d\n%s\n%s", c.cmd, len(e.Error.Commands), e.Error.Commands, c.hints, e.Error.Message, e.Error.Hint)
	}
	if c.before != "" {
		if out, err := bash(".", c.before); err != nil {
			t.Fatalf("the user's step before the hints: %v\n%s", err, out)
		}
	}
	for i, h := range e.Error.Commands {
		run := fillHint(h, i+1, dir, c.vars)
		out, err := bash(c.dir, run)
		if err != nil {
			t.Errorf("%s: %s\nhint %d %q (run as %q) fails: %v\n%s", c.cmd, e.Error.Message, i+1, h, run, err, out)
			return
		}
	}
	if c.after != "" {
		if out, err := bash(".", c.after); err != nil {
			t.Errorf("%s: after its hints %q, not where the advice leads (%s): %v\n%s", c.cmd, e.Error.Commands, c.after, err, out)
		}
	}
}

// fillHint replaces the placeholders of hint command h (the n-th of its
// error) with values: vars first, then the defaults.
func fillHint(h string, n int, dir string, vars map[string]string) string {
	def := map[string]string{
		"MSG": `"hint test"`, "NEWDIR": filepath.Join(dir, fmt.Sprint("hint-dir-", n)), "URL": filepath.Join(dir, "repo"),
		"NEW": "kept", "NEW-BRANCH": "kept", "BRANCH": "main", "COMMAND": "status", "DIR": filepath.Join(dir, "w"),
	}
	return hintPlaceholder.ReplaceAllStringFunc(h, func(w string) string {
		if v, ok := vars[w]; ok {
			return v
		}
		if v, ok := def[w]; ok {
			return v
		}
		return w
	})
}

// duckBinDir is a folder holding "duckdb": the real DuckDB 1.5.5 CLI with
// its extensions (scripts/duckdb).
func duckBinDir(t *testing.T) string {
	bin := t.TempDir()
	wrapper := "#!/bin/sh\nexec " + filepath.Join(realduck.Root(), "scripts", "duckdb") + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "duckdb"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
