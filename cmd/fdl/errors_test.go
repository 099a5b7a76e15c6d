package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/filelock"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/workdir"
)

// TestHints pins the messages fdl prints for the library errors that have
// a hint: each is the message the library built before the hints moved
// into cmd/fdl, word for word.
func TestHints(t *testing.T) {
	const id1, id2 = "0192f0c1-6c1a-7000-8000-000000000001", "0192f0c1-6c1a-7000-8000-000000000002"
	main := refs.Name("refs/heads/main")
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	retired := &repo.RetiredError{ID: id1, Seq: 2, At: at, Floor: 3, Reason: "older than keep-last 1"}
	retiredText := "version " + id1 + " (seq 2) left retention on 2025-03-01T12:00:00Z (floor 3: older than keep-last 1): its catalog is deleted or about to be, its record stays (fdl show " + id1 + "); use a version in retention: a branch head, a tag, or a recent one (fdl log)"
	_, policyErr := retention.ParsePolicy([]byte("x"))
	_, floorErr := retention.ParseFloor([]byte("x"))
	_, markerErr := retention.ParseMarker([]byte("x"), id1)
	// The parse error's text without the sentinel, which the message
	// names once, after the location.
	why := func(err error) string { return strings.TrimSuffix(err.Error(), ": "+retention.ErrInvalid.Error()) }
	for _, e := range []error{policyErr, floorErr, markerErr} {
		if !errors.Is(e, retention.ErrInvalid) {
			t.Fatalf("parse error %v", e)
		}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&refs.CorruptError{Ref: main, Location: "/r/refs/heads/main", Why: "it is empty"},
			"ref refs/heads/main (/r/refs/heads/main): ref is corrupt; it is empty: a ref must hold one version id and a newline; restore it from a backup, point a branch at a version again (fdl branch -f NAME REV --backwards; fdl reflog NAME shows what it held), or delete that file if the ref is not needed"},
		{&refs.MissingBranchError{Branch: "refs/heads/dev", Err: fmt.Errorf("refs/heads/dev: %w", refs.ErrNotFound)},
			"branch dev does not exist (create it with fdl branch dev REV): refs/heads/dev: no such ref"},
		{&refs.MoveRefusedError{Branch: main, Old: id1, New: id2, Undone: 2},
			"moving main from " + id1 + " to " + id2 + " refused: " + id2 + " is not a descendant of " + id1 + ", so the move would undo 2 version(s); nothing moved; to move the branch back on purpose pass --backwards (the undone versions stay in the repository and in the ref log, fdl reflog main)"},
		{&refs.MoveRaceError{Branch: main, To: id1, Now: id2},
			"moving main to " + id1 + " refused: another writer moved it to " + id2 + " first; nothing moved: look at it (fdl reflog main) and run again: push refused"},
		{&refs.NoVersionYetError{Branch: main, Where: "it's a repo"},
			"HEAD names branch main, which has no version yet: unknown revision; publish the first one: fdl checkout 'it'\\''s a repo' DIR, write to its catalog, then fdl commit and fdl push"},
		{&refs.NoSuchRevError{Rev: "nosuch", Where: "/r"},
			`revision "nosuch": no branch, tag or version id of that name in /r (list them with 'fdl branch -l', 'fdl tag -l', 'fdl log'): unknown revision`},
		{&refs.NoLogError{Name: "nosuch", Where: "/r"},
			`no ref log for "nosuch" in /r: no branch, tag or request of that name ever moved (list refs with fdl branch -l, fdl tag -l): no such ref`},
		{&repo.NotRepositoryError{URL: "s3://b/x"},
			"s3://b/x: not an fdl repository (no fdl.json there); check the URL, or make one with 'fdl init s3://b/x'"},
		{&workdir.NotWorkdirError{Dir: "/w"},
			"/w: not an fdl working directory (no .fdl/state.json): run 'fdl checkout URL DIR' to make one, or pass -C DIR"},
		{&workdir.BusyError{Op: "commit", Dir: "/w", Err: filelock.ErrBusy},
			"cannot commit in /w: another fdl commit or push is running in this working directory; wait for it to finish: locked by another fdl process"},
		{workdir.NoMessageError{}, "a commit needs a message (-m MSG): invalid arguments"},
		{workdir.NothingToPushError{}, "there is no version to push: commit first (fdl commit -m MSG): nothing to push"},
		{&repo.RefusedError{Branch: main, Current: id1, Proposed: id2, URL: "/r"},
			"push to main refused: it is not a fast-forward: the branch holds " + id1 + ", which is not an ancestor of " + id2 + "; nothing was moved: check out main again (fdl checkout /r NEWDIR) and redo the change on top of it"},
		{&repo.RefusedError{Branch: main, Current: id1, Proposed: id2, Race: true},
			"push to main refused: another push moved it to " + id1 + " first (lost the race for " + id2 + "); nothing was moved: check out main again (fdl checkout URL NEWDIR) and redo the change on top of it"},
		{&repo.RefusedError{Branch: main, Proposed: id2, Race: true},
			"push to main refused: another writer deleted the branch while the push ran (lost the race for " + id2 + "); nothing was moved: push again, which creates it anew, or push to another branch"},
		{&repo.DataMissingError{Version: id1, Seq: 3, Missing: []string{"data/a", "data/b"}, Count: 2},
			"version " + id1 + " (seq 3) lists 2 data file(s) the store does not hold (data/a, data/b): a data file the version lists is not in the store; nothing was pushed. Was the working catalog written long ago? gc deletes files no catalog lists once older than the grace period (fdl retention). Check out the branch again and redo the change"},
		{&repo.FormatChangeError{Branch: main, Change: repo.FormatChange{
			From: repo.FormatInfo{Version: id1, DuckLake: "1.0", Storage: meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}, Readers: meta.ReadersOf("1.0", meta.Storage{Number: 68, MinDuckDB: "v1.5.0"})},
			To:   repo.FormatInfo{Version: id2, DuckLake: "1.1", Storage: meta.Storage{Number: 999, MinDuckDB: "v2.0.0"}, Readers: meta.ReadersOf("1.1", meta.Storage{Number: 999, MinDuckDB: "v2.0.0"})}, Upgrade: true}},
			"push to main refused: it would move the branch from DuckLake 1.0 in DuckDB storage 68 (DuckDB >= 1.5.2 attaches it) (version " + id1 + ") to DuckLake 1.1 in DuckDB storage 999 (DuckDB >= 2.0.0 attaches it) (version " + id2 + "): readers on the older DuckDB release lose the branch; nothing was moved. To do it anyway, push again allowing the format change (fdl push --allow-format-change), and keep the other version under a tag or branch for its readers"},
		{retired, retiredText},
		{&repo.RetiredBaseError{Base: retired},
			"push refused: it builds on " + retiredText + "; check out a version in retention (fdl checkout URL NEWDIR) and redo the change there"},
		{&repo.DamagedError{What: repo.DamagedPolicy, Location: "/r/retention/policy.json", Err: policyErr},
			why(policyErr) + " (/r/retention/policy.json): invalid retention setting; correct the file, or replace it with the default plus the rules you give: fdl retention --reset [--keep-last N] [--keep-within D]"},
		{&repo.DamagedError{What: repo.DamagedFloor, Location: "/r/retention/floor.json", Err: floorErr},
			why(floorErr) + " (/r/retention/floor.json): invalid retention setting; restore it from a backup, or delete it: every version whose catalog gc deleted keeps its marker (versions/<id>/retired.json), and the next fdl gc moves the floor again"},
		{&repo.DamagedError{What: repo.DamagedMarker, Location: "/r/versions/" + id1 + "/retired.json", Err: markerErr},
			why(markerErr) + " (/r/versions/" + id1 + "/retired.json): invalid retention setting; restore it from a backup, or delete it and run fdl gc: a version whose catalog is gone is retired again with a new marker (if the policy keeps that version, gc says so: lower the policy, or restore the catalog)"},
		{&gc.StopError{Why: gc.StopFloorMoved, Key: retention.FloorKey, Err: repo.ErrRetentionConflict},
			"retention/floor.json moved since gc planned (another gc or fdl retention ran): retention settings changed concurrently; nothing was deleted: run fdl gc again"},
		{fmt.Errorf("%w (the floor was put back: nothing changed for readers)", &gc.StopError{Why: gc.StopPolicyChanged, Key: retention.PolicyKey, Err: repo.ErrRetentionConflict}),
			"retention/policy.json changed while gc ran (fdl retention): retention settings changed concurrently; nothing was deleted: run fdl gc again, which applies the new policy (the floor was put back: nothing changed for readers)"},
		{&gc.StopError{Why: gc.StopRefOnRetired, Ref: "refs/tags/t", Version: id1, Generation: 4, Err: gc.ErrAheadOfFloor},
			"refs/tags/t was pointed at version " + id1 + " while gc ran, and the floor (generation 4) takes that version out of retention: refused: ahead of the retention floor; nothing was deleted: run fdl gc again, which takes it back into retention"},
		{&gc.StopError{Why: gc.StopBranchKeepsRetired, Ref: main, Version: id1, KeepLast: 3, Generation: 4, Err: repo.ErrRetentionConflict},
			"refs/heads/main was created or moved while gc ran and keeps version " + id1 + " among its last 3, which the floor (generation 4) takes out of retention: retention settings changed concurrently; nothing was deleted: run fdl gc again, which takes it back into retention"},
		{&gc.StopError{Why: gc.StopNewCatalogUnreadable, Version: id1, Detail: errors.New("short read"), Err: repo.ErrRetentionConflict},
			"version " + id1 + " appeared while gc ran and its catalog cannot be read (short read): retention settings changed concurrently; no data file was deleted: run fdl gc again"},
		{&gc.StopError{Why: gc.StopAheadOfFloor, Version: id1, Generation: 2, Key: retention.MarkerFile, Err: gc.ErrAheadOfFloor},
			"version " + id1 + ": deleting its catalog is refused: the retention floor (generation 2) does not take it out of retention and it has no retired.json: refused: ahead of the retention floor; move the floor first (fdl gc --yes plans and moves it)"},
		{&retention.InconsistentError{Why: "refs/heads/main holds version " + id1 + ", which is not a complete version in the store: gc refuses to run while a ref dangles", RepairRef: true},
			"refs/heads/main holds version " + id1 + ", which is not a complete version in the store: gc refuses to run while a ref dangles; run 'fdl verify' and repair the ref"},
		{fmt.Errorf("%w: %w", gc.ErrRefused, &retention.InconsistentError{Why: "version " + id1 + " has no version.json but a ref log reaches it: gc refuses to run"}),
			"gc refused: version " + id1 + " has no version.json but a ref log reaches it: gc refuses to run; run 'fdl verify'"},
		// A hinted error inside another keeps its hint.
		{fmt.Errorf("read: %w", &refs.NoSuchRevError{Rev: "x", Where: "/r"}),
			`read: revision "x": no branch, tag or version id of that name in /r (list them with 'fdl branch -l', 'fdl tag -l', 'fdl log'): unknown revision`},
	} {
		if got := message(c.err); got != c.want {
			t.Errorf("%T:\n got %s\nwant %s", c.err, got, c.want)
		}
	}
}

// TestProblemHints pins verify's findings whose hint depends on their code.
func TestProblemHints(t *testing.T) {
	const id = "0192f0c1-6c1a-7000-8000-000000000001"
	for _, c := range []struct {
		p    repo.Problem
		want string
	}{
		{repo.Problem{Code: repo.CodeRefRetired, Message: "refs/tags/t points at version " + id + ", which is out of retention: readers cannot check it out"},
			"refs/tags/t points at version " + id + ", which is out of retention: readers cannot check it out; run fdl gc again, which takes a version a ref points at back into retention while its catalog is still there; if its catalog is gone, move the ref to a version in retention"},
		{repo.Problem{Code: repo.CodeRetiredNoMarker, Message: "the floor takes version " + id + " out of retention and its catalog is gone, but it has no retired.json"},
			"the floor takes version " + id + " out of retention and its catalog is gone, but it has no retired.json; run fdl gc --yes to write it"},
		{repo.Problem{Code: repo.CodeRetiredCatalog, Message: "version " + id + " is retired (it has retired.json) but its catalog or dataset.json is still there: a gc stopped half way"},
			"version " + id + " is retired (it has retired.json) but its catalog or dataset.json is still there: a gc stopped half way; run fdl gc --yes again"},
		{repo.Problem{Code: repo.CodeTempLeftover, Message: "data/.tmp-1 (3 bytes, 2025-03-01T12:00:00Z) is the temporary file of a write that did not finish (a crash, or one in progress)"},
			"data/.tmp-1 (3 bytes, 2025-03-01T12:00:00Z) is the temporary file of a write that did not finish (a crash, or one in progress): fdl gc --yes deletes it once older than the grace period"},
	} {
		if got := problemMessage(c.p); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.p.Code, got, c.want)
		}
	}
}

// TestLoopErrors pins the messages, exit codes and kinds of pull's,
// requests' and refs' refusals: each says what happened and the command to
// run next.
func TestLoopErrors(t *testing.T) {
	const id1, id2 = "0192f0c1-6c1a-7000-8000-000000000001", "0192f0c1-6c1a-7000-8000-000000000002"
	main := refs.Name("refs/heads/main")
	fix := refs.Name("refs/requests/fix")
	for _, c := range []struct {
		err  error
		code int
		kind string
		want string
	}{
		{&workdir.UncommittedError{Dir: "/w", Branch: "main", Snapshots: 2}, exitError, "uncommitted",
			"/w holds 2 snapshot(s) not committed yet, which replacing the working catalog would lose; nothing was changed: uncommitted work; to keep them, commit them and push them to a new branch (fdl commit -m MSG; fdl push NEW-BRANCH; then fdl request create NAME --from NEW-BRANCH --into main asks for them on main), then fdl pull --discard; to throw them away: fdl pull --discard"},
		{&workdir.UnpushedError{Branch: main, Unpushed: 1, Tracking: repo.Tracking{Behind: 3}}, exitError, "unpushed",
			"1 version(s) committed here are not pushed, and main has 3 version(s) they lack (diverged); fdl never merges versions, and nothing was changed: unpushed versions; keep them on a new branch (fdl push NEW-BRANCH; fdl request create NAME --from NEW-BRANCH --into main asks for them on main), then fdl pull --discard brings this directory to main's head"},
		{&workdir.PullNotFastForwardError{Branch: main, Base: id1, Head: id2, Ahead: 1, Behind: 2}, exitRefused, "refused",
			"pull from main refused: it is not a fast-forward: main holds " + id2 + ", which does not descend from the base " + id1 + " (1 version(s) of the base are not on main); nothing was changed; the base stays in the repository: fdl pull --discard replaces the working catalog with main's head anyway, or check out main into another directory (fdl checkout URL NEWDIR)"},
		{&workdir.PullInterruptedError{Dir: "/w"}, exitError, "pull_interrupted",
			"/w: a pull was interrupted while it replaced the working catalog: pull interrupted: run fdl pull again to finish it"},
		{&workdir.NoBranchToPullError{Branch: "refs/heads/dev"}, exitError, "ref_not_found",
			"branch dev does not exist in the repository, so there is nothing to pull (fdl push creates it): no such ref"},
		{&refs.ApproveRefusedError{Request: fix, Branch: main, Head: id2, ID: id1}, exitRefused, "refused",
			"approving fix into main refused: it is not a fast-forward: main holds " + id2 + ", which is not an ancestor of " + id1 + "; nothing moved; rebuild the request on main's head (fdl pull, or check main out again, redo the change, commit) and move it there: fdl request update fix"},
		{&repo.RequestRefusedError{Request: fix, Target: main, Head: id2, ID: id1, Behind: 1}, exitRefused, "refused",
			"request fix refused: " + id1 + " is not a fast-forward of main, which holds " + id2 + " and 1 version(s) " + id1 + " lacks; nothing was published; approving it could only be refused: bring the working directory up to main's head (fdl pull, or check it out again), redo the change there and commit"},
		{&repo.NothingToRequestError{Request: fix, Target: main, Head: id2, ID: id1}, exitError, "nothing_to_push",
			"request fix: main already holds version " + id1 + " (it is at " + id2 + "), so there is nothing to review (commit a change first: fdl commit -m MSG): nothing to push"},
		{&refs.NoSuchRequestError{Request: fix, Where: "/r"}, exitError, "ref_not_found",
			"request fix: none of that name in /r (list them with fdl request list): no such ref"},
		{&refs.ExistsError{Ref: "refs/tags/v1", Holds: id1, Wanted: id2}, exitExists, "ref_exists",
			"refs/tags/v1 already holds version " + id1 + ", not " + id2 + ": ref already exists"},
		{&repo.OrphanExistsError{Branch: main, Head: id1}, exitUsage, "usage",
			"an orphan checkout starts a new history, but branch main exists (at " + id1 + ") and would refuse it as not a fast-forward: name a new branch: invalid arguments"},
	} {
		if got := message(c.err); got != c.want {
			t.Errorf("%T:\n got %s\nwant %s", c.err, got, c.want)
		}
		if got := exitCode(context.Background(), c.err); got != c.code {
			t.Errorf("%T: exit code %d, want %d", c.err, got, c.code)
		}
		if got := errorKind(c.err, c.code); got != c.kind {
			t.Errorf("%T: kind %q, want %q", c.err, got, c.kind)
		}
	}
}

// An interrupted command prints one line: where it stopped, without
// DuckDB's echo of the cancellation that duckdb-go joins to ctx's error.
func TestPrintInterrupted(t *testing.T) {
	ios, _, errOut := term.Test()
	err := fmt.Errorf("local version x: query /w/ducklake.duckdb: %w", errors.Join(context.Canceled, errors.New("INTERRUPT Error: Interrupted!")))
	code := exitCode(context.Background(), err)
	if code != exitInterrupt {
		t.Fatalf("exit code %d, want %d", code, exitInterrupt)
	}
	printError(ios, &globals{}, err, code)
	want := "fdl: interrupted; nothing was changed past the last complete step: local version x: query /w/ducklake.duckdb: context canceled\n"
	if got := errOut.String(); got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
