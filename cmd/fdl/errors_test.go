package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/filelock"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/pins"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/signature"
	"github.com/fdl-dev/fdl/workdir"
)

// TestHints pins the hints fdl prints after the library errors that have
// them: each is made from the error's type and fields alone, never from
// its words (a change of wording cannot drop a hint).
//
// It is one piece: one table of errors and the hints each must print, the
// test's whole content.
func TestHints(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "/agent.sock") // an agent runs: ssh-add alone
	const id1, id2 = "0192f0c1-6c1a-7000-8000-000000000001", "0192f0c1-6c1a-7000-8000-000000000002"
	main := refs.Name("refs/heads/main")
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	retired := &repo.RetiredError{ID: id1, Seq: 2, At: at, Floor: 3, Reason: "older than keep-last 1"}
	_, policyErr := retention.ParsePolicy([]byte("x"))
	_, floorErr := retention.ParseFloor([]byte("x"))
	_, markerErr := retention.ParseMarker([]byte("x"), id1)
	for _, e := range []error{policyErr, floorErr, markerErr} {
		if !errors.Is(e, retention.ErrInvalid) {
			t.Fatalf("parse error %v", e)
		}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&workdir.LocalVersionError{Dir: "/w", Version: id1, Err: workdir.ErrLocalFileMissing},
			"make one new version of the working catalog, which still holds their snapshots, in place of the unpushed version(s), then publish it again: fdl -C /w commit --replace-unpushed -m MSG"},
		{&refs.CorruptError{Ref: main, Location: "/r/refs/heads/main", Why: "it is empty"},
			"point the branch at a version again: fdl branch -f main REV --backwards\nwhat it held: fdl reflog main"},
		{&refs.MissingBranchError{Branch: "refs/heads/dev", Err: fmt.Errorf("refs/heads/dev: %w", refs.ErrNotFound)},
			"create it: fdl branch dev REV"},
		{&refs.MoveRefusedError{Branch: main, Old: id1, New: id2, Undone: 2},
			"to move the branch back on purpose (the undone versions stay in the repository and in the ref log): fdl branch -f main " + id2 + " --backwards\nwhat the branch held: fdl reflog main"},
		{&refs.MoveRaceError{Branch: main, To: id1, Now: id2},
			"see who moved it: fdl reflog main"},
		{&repo.SignatureError{Version: id1, Check: repo.SignatureCheck{Object: "versions/" + id1 + "/version.json.sig", Status: repo.SigUnsigned}, Signers: "allowed"},
			"whoever holds an allowed key signs it: fdl sign " + id1 + " --sign-key FILE\nwhich versions are signed, and by whom: fdl log --show-signature --signers FILE"},
		{&repo.SignatureError{Version: id1, Check: repo.SignatureCheck{Status: repo.SigNotAllowed, Key: "SHA256:k"}, Signers: "allowed"},
			"if you trust key SHA256:k, add its public key to allowed (PRINCIPALS namespaces=\"fdl\" KEY-TYPE BASE64-KEY)"},
		{&repo.SignatureError{Version: id1, Check: repo.SignatureCheck{Status: repo.SigBad}},
			"the record, the tag or the signature was changed after signing: check the repository: fdl verify --signers FILE"},
		{&repo.SignatureExistsError{Key: "versions/" + id1 + "/version.json.sig", Version: id1},
			"see who signed it: fdl show " + id1 + " --signers FILE\nsignatures are create-only: to replace one by a key your signers file does not allow (or a bad one), delete versions/" + id1 + "/version.json.sig in the repository first, then sign again"},
		{&signature.SigningKeyError{Spec: "/k", Reason: "encrypted", Err: signature.ErrEncryptedKey},
			"load the key into ssh-agent (fdl asks for no passphrase): ssh-add /k"},
		{&refs.NoVersionYetError{Branch: main, Where: "it's a repo"},
			"publish the first one: check it out, write to its catalog, then fdl commit -m MSG and fdl push: fdl checkout 'it'\\''s a repo' NEWDIR\nor name a tag or branch the repository has: fdl tag -l --repo 'it'\\''s a repo'"},
		{&refs.NoSuchRevError{Rev: "nosuch", Where: "/r"},
			"branches: fdl branch -l --repo /r\ntags: fdl tag -l --repo /r\nversions: fdl log --repo /r"},
		{&refs.NoLogError{Name: "nosuch", Where: "/r"},
			"branches: fdl branch -l --repo /r\ntags: fdl tag -l --repo /r"},
		{&repo.NotRepositoryError{URL: "s3://b/x"},
			"check the URL, or make a repository there: fdl init s3://b/x"},
		{&workdir.NotWorkdirError{Dir: "/w"},
			"make one: fdl checkout URL NEWDIR\nor name one: fdl -C DIR COMMAND"},
		{&workdir.BusyError{Op: "commit", Dir: "/w", Err: filelock.ErrBusy},
			""},
		{workdir.NoMessageError{}, "give one with -m MSG"},
		{workdir.NothingToPushError{}, "commit first: fdl commit -m MSG"},
		{&repo.RefusedError{Branch: main, Current: id1, Proposed: id2, URL: "/r"},
			"check out main's head into a new directory: fdl checkout /r NEWDIR --branch main"},
		{&repo.RefusedError{Branch: main, Current: id1, Proposed: id2, Race: true},
			"check out main's head into a new directory: fdl checkout URL NEWDIR --branch main"},
		{&repo.RefusedError{Branch: main, Proposed: id2, Race: true},
			""},
		// After a gc's intent refused a push, pushing again fails once
		// that gc deleted the files: the hint is the path that works.
		{&repo.GCDeletingError{Intent: "gc/intent.json", StartedAt: at, By: "ci", Keys: []string{"data/a"}, Count: 1},
			"check the branch out again and redo the change there (once that gc is done, pushing from here goes only if it kept those files): fdl checkout URL NEWDIR"},
		{&repo.DataMissingError{Version: id1, Seq: 3, Missing: []string{"data/a", "data/b"}, Count: 2},
			"check the branch out again and redo the change (gc deletes files no catalog lists once older than the grace period): fdl checkout URL NEWDIR\nthe grace period: fdl retention"},
		{&repo.FormatChangeError{Branch: main, Change: repo.FormatChange{
			From: repo.FormatInfo{Version: id1, DuckLake: "1.0", Storage: meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}, Readers: meta.ReadersOf("1.0", meta.Storage{Number: 68, MinDuckDB: "v1.5.0"})},
			To:   repo.FormatInfo{Version: id2, DuckLake: "1.1", Storage: meta.Storage{Number: 999, MinDuckDB: "v2.0.0"}, Readers: meta.ReadersOf("1.1", meta.Storage{Number: 999, MinDuckDB: "v2.0.0"})}, Upgrade: true}},
			"push again allowing the format change: fdl push --allow-format-change"},
		{retired, "its record: fdl show " + id1 + "\nversions in retention: fdl log"},
		{&repo.RetiredBaseError{Base: retired},
			"check out a version in retention and redo the change there: fdl checkout URL NEWDIR\nits record: fdl show " + id1 + "\nversions in retention: fdl log"},
		{&repo.DamagedError{What: repo.DamagedPolicy, Location: "/r/retention/policy.json", Err: policyErr},
			"correct the file, or replace it with the default plus the rules you give: fdl retention --reset"},
		{&repo.DamagedError{What: repo.DamagedFloor, Location: "/r/retention/floor.json", Err: floorErr},
			"restore it from a backup, or delete it: every version whose catalog gc deleted keeps its marker (versions/<id>/retired.json), and the next gc moves the floor again: fdl gc"},
		{&repo.DamagedError{What: repo.DamagedMarker, Location: "/r/versions/" + id1 + "/retired.json", Err: markerErr},
			"restore it from a backup, or delete it and run gc: a version whose catalog is gone is retired again with a new marker (if the policy keeps that version, gc says so: lower the policy, or restore the catalog): fdl gc"},
		{&gc.StopError{Why: gc.StopFloorMoved, Key: retention.FloorKey, Err: repo.ErrRetentionConflict},
			"another gc or fdl retention ran; plan again: fdl gc"},
		{fmt.Errorf("%w (the floor was put back: nothing changed for readers)", &gc.StopError{Why: gc.StopPolicyChanged, Key: retention.PolicyKey, Err: repo.ErrRetentionConflict}),
			"apply the new policy: fdl gc"},
		{&gc.StopError{Why: gc.StopRefOnRetired, Ref: "refs/tags/t", Version: id1, Generation: 4, Err: gc.ErrAheadOfFloor},
			"take it back into retention: fdl gc"},
		{&gc.StopError{Why: gc.StopBranchKeepsRetired, Ref: main, Version: id1, KeepLast: 3, Generation: 4, Err: repo.ErrRetentionConflict},
			"take it back into retention: fdl gc"},
		{&gc.StopError{Why: gc.StopNewCatalogUnreadable, Version: id1, Detail: errors.New("short read"), Err: repo.ErrRetentionConflict},
			"run gc again: fdl gc"},
		{&gc.StopError{Why: gc.StopAheadOfFloor, Version: id1, Generation: 2, Key: retention.MarkerFile, Err: gc.ErrAheadOfFloor},
			"plan and move the floor: fdl gc --yes"},
		{&retention.InconsistentError{Why: "refs/heads/main holds version " + id1 + ", which is not a complete version in the store: gc refuses to run while a ref dangles", RepairRef: true},
			"find what is wrong, and repair the ref: fdl verify"},
		{fmt.Errorf("%w: %w", gc.ErrRefused, &retention.InconsistentError{Why: "version " + id1 + " has no version.json but a ref log reaches it: gc refuses to run"}),
			"find what is wrong: fdl verify"},
		{&pins.NoLockfileError{Dir: "/p"},
			"pin a version: fdl makes fdl.lock in this folder: fdl lock add NAME REPO\nor name the lockfile with --lockfile FILE"},
		{&pins.UnknownPinError{Name: "sales", Lockfile: "/p/fdl.lock"}, "pin it: fdl lock add sales REPO"},
		{&pins.PinExistsError{Name: "sales", Lockfile: "/p/fdl.lock", Has: "../a", Repository: "../b"},
			"drop the old pin first, or choose another name: fdl lock remove sales"},
		{&pins.MismatchError{Name: "sales", Version: id1, Pin: pins.PinView{Repository: "../a b"}, URL: "/p/a b"},
			"if the repository is the right one, pin its version again: fdl lock add sales '/p/a b' " + id1},
		{&pins.BehindError{Lockfile: "/p/fdl.lock", Behind: []pins.PinState{{Name: "a"}, {Name: "b"}}},
			"move them to their refs' heads, then review the lockfile's diff: fdl lock update a b"},
		{&pins.CheckError{Lockfile: "/p/fdl.lock", Bad: []pins.PinState{{Name: "a", Kind: pins.ProblemRetired, Pin: pins.PinView{Ref: "refs/heads/main"}}, {Name: "b", Kind: pins.ProblemMissing, Pin: pins.PinView{Ref: "refs/tags/t"}}, {Name: "c", Kind: pins.ProblemRetired}}},
			"move them to their refs' heads: fdl lock update a b\npin c follows no ref: pin a version in retention: fdl lock add c REPO REV"},
		// A pin whose ref is gone is no pin lock update moves.
		{&pins.BehindError{Lockfile: "/p/fdl.lock", Behind: []pins.PinState{{Name: "a"}, {Name: "g", Kind: pins.ProblemRefGone, Pin: pins.PinView{Ref: "refs/heads/dev"}}}},
			"move them to their refs' heads, then review the lockfile's diff: fdl lock update a\npin g follows refs/heads/dev, which is gone: follow another ref: fdl lock add g REPO REV"},
		{&pins.OfflineError{Name: "sales", Version: id1, Cache: "/c", Err: errors.New("down")},
			"attach it once while the repository can be read, to cache its catalog: fdl attach --locked sales --cache"},
		// A hinted error inside another keeps its hint.
		{fmt.Errorf("read: %w", &refs.NoSuchRevError{Rev: "x", Where: "/r"}),
			"branches: fdl branch -l --repo /r\ntags: fdl tag -l --repo /r\nversions: fdl log --repo /r"},
	} {
		if got := hintText(c.err); got != c.want {
			t.Errorf("%T:\n got %q\nwant %q", c.err, got, c.want)
		}
	}
}

// hintText is err's hints as printed, one per line.
func hintText(err error) string {
	var lines []string
	for _, h := range hints(err) {
		lines = append(lines, h.String())
	}
	return strings.Join(lines, "\n")
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
		if got := problemMessage(&globals{}, c.p); got != c.want {
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
			"to keep them, commit them and push them to a new branch of their own: fdl commit -m MSG && fdl push NEW-BRANCH\nthen bring this directory to main's head, where the change is redone and pushed (fdl never merges versions): fdl pull --discard\nor check main out into another directory and redo the change there: fdl checkout URL NEWDIR --branch main"},
		{&workdir.UnpushedError{Branch: main, Unpushed: 1, Tracking: repo.Tracking{Behind: 3}}, exitError, "unpushed",
			"keep them on a new branch of their own: fdl push NEW-BRANCH\nthen bring this directory to main's head, redo the change there, commit and push (fdl never merges versions): fdl pull --discard"},
		{&workdir.UnpushedError{Branch: main, Unpushed: 1, Tracking: repo.Tracking{Behind: 3}, Retired: id1}, exitError, "unpushed",
			"check main out again and redo the change there (their rows stay readable here until then): fdl checkout URL NEWDIR --branch main"},
		{&workdir.PullNotFastForwardError{Branch: main, Base: id1, Head: id2, Ahead: 1, Behind: 2}, exitRefused, "refused",
			"replace the working catalog with main's head anyway (the base stays in the repository): fdl pull --discard\nor check main out into another directory: fdl checkout URL NEWDIR --branch main"},
		{&workdir.PullInterruptedError{Dir: "/w"}, exitError, "pull_interrupted",
			"finish it: fdl pull"},
		{&workdir.CatalogUnusableError{Dir: "/w", Path: "/w/ducklake.sqlite", Branch: "main", Err: fs.ErrNotExist}, exitError, "catalog_unusable",
			"make it anew from main's head (what was written to it since the last commit is lost): fdl pull --discard"},
		{&workdir.CatalogUnusableError{Dir: "/w", Path: "/w/ducklake.sqlite", Branch: "main", Unpushed: 1, Err: fs.ErrNotExist}, exitError, "catalog_unusable",
			"make it anew from this directory's base, the newest version committed here (those versions are kept; what was written after it is lost): fdl pull --discard"},
		{&repo.NoLocalVersionError{Branch: "main"}, exitError, "unknown_revision",
			"write to the working catalog (fdl status prints its ATTACH line), then commit: fdl commit -m MSG"},
		{&workdir.NoBranchToPullError{Branch: "refs/heads/dev"}, exitError, "ref_not_found",
			"push creates it: fdl push"},
		{&refs.ApproveRefusedError{Request: fix, Branch: main, Head: id2, ID: id1}, exitRefused, "refused",
			"rebuild the request on main's head (bring a working directory up to it, redo the change, commit) and move the request there: fdl request update fix"},
		{&repo.RequestRefusedError{Request: fix, Target: main, Head: id2, ID: id1, Behind: 1}, exitRefused, "refused",
			"approving it could only be refused: check main's head out, redo the change there and commit, then ask again: fdl checkout URL NEWDIR --branch main"},
		{&repo.NothingToRequestError{Request: fix, Target: main, Head: id2, ID: id1}, exitError, "nothing_to_push",
			"write a change to the working catalog and commit it, then create the request again: fdl commit -m MSG"},
		{&refs.NoSuchRequestError{Request: fix, Where: "/r"}, exitError, "ref_not_found",
			"list them: fdl request list --repo /r"},
		{&refs.ExistsError{Ref: "refs/tags/v1", Holds: id1, Wanted: id2}, exitExists, "ref_exists",
			"tags never move: see the version it holds: fdl show v1\nor tag that version under another name: fdl tag NAME " + id2},
		{&refs.ExistsError{Ref: "refs/heads/b", Holds: id1, Wanted: id2}, exitExists, "ref_exists",
			"move the branch there instead (fast-forward only): fdl branch -f b " + id2},
		{&refs.ExistsError{Ref: "refs/tags/v1", Holds: id1, Wanted: id2, WantedRetired: true}, exitExists, "ref_exists",
			"see the version it holds: fdl show v1"},
		{&refs.ExistsError{Ref: "refs/heads/b", Holds: id2, Wanted: id1, Backwards: true}, exitExists, "ref_exists",
			"see the version it holds: fdl show b\nto move it back there on purpose (the undone versions stay in the repository and in the ref log): fdl branch -f b " + id1 + " --backwards"},
		{&repo.OrphanExistsError{Branch: main, Head: id1}, exitUsage, "usage",
			""},
	} {
		if got := hintText(c.err); got != c.want {
			t.Errorf("%T:\n got %q\nwant %q", c.err, got, c.want)
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
	printError(ios, &globals{}, nil, err, code)
	want := "fdl: interrupted; nothing was changed past the last complete step: local version x: query /w/ducklake.duckdb: context canceled\n"
	if got := errOut.String(); got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}

// TestSigningKeyHints: ssh-add is given the private key file (a .pub
// named is replaced by the file beside it), and an agent is started first
// when none runs.
func TestSigningKeyHints(t *testing.T) {
	dir := t.TempDir()
	priv := filepath.Join(dir, "k")
	os.WriteFile(priv, []byte("x"), 0o600)
	for _, c := range []struct {
		sock, spec string
		err        error
		want       string
	}{
		{"/a.sock", priv + ".pub", signature.ErrNotInAgent, "ssh-add " + priv},
		{"/a.sock", filepath.Join(dir, "gone.pub"), signature.ErrNotInAgent, "ssh-add PRIVATE-KEY-FILE"},
		{"", priv, signature.ErrEncryptedKey, `eval "$(ssh-agent)" && ssh-add ` + priv},
		{"", "key::ssh-ed25519 AAAA", signature.ErrNoAgent, `eval "$(ssh-agent)" && ssh-add PRIVATE-KEY-FILE`},
	} {
		t.Setenv("SSH_AUTH_SOCK", c.sock)
		hs := signingKeyHints(&signature.SigningKeyError{Spec: c.spec, Reason: "r", Err: c.err})
		if len(hs) != 1 || hs[0].run != c.want {
			t.Errorf("SSH_AUTH_SOCK=%q spec %q: hints %v, want %q", c.sock, c.spec, hs, c.want)
		}
	}
}
