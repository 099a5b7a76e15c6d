package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// This file is the one place that turns a library error into what fdl
// prints and exits with: the exit code (exitCode), the stable kind of
// --json errors (errorKind) and the message with its hint — the command to
// run next — put back where it belongs (message). The library never names a
// command: its errors carry typed fields, and the hints here use them.

// Exit codes (documented in 'fdl help' and docs/cli.md).
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitRefused   = 3 // push, pull, request, branch -f or revert refused; nothing moved
	exitExists    = 4 // a ref created once (tag, branch, request) holds another version
	exitAuth      = 5 // the store's credentials are missing, expired or refused (store.ErrAuth)
	exitInterrupt = 130
)

const exitCodesHelp = `Exit codes:
  0    success
  1    error (the message says what is wrong and what to do)
  2    usage error (bad flags or arguments, a missing -m, fdl tag -d)
  3    refused; nothing moved or written: a push or request whose version
       is not a fast-forward of its branch, or that another writer moved
       first; a pull whose branch's head does not descend from the base; a
       request approve when the target moved on; branch -f without
       --backwards on a move that would undo versions; a revert that
       conflicts
  4    the tag (or branch, or request) already exists and holds another
       version; tags never move (creating it again at the same version
       succeeds)
  5    the store's credentials are missing, expired or refused (kind auth);
       the message names the source tried and what to set, --verbose adds
       the store SDK's own error
  130  interrupted (Ctrl-C, SIGTERM); the command stops at a step boundary
       and leaves the repository as it was`

// usageError marks a usage problem (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// verifyFailed is returned by 'fdl verify' when it found problems.
type verifyFailed struct{ n int }

func (v verifyFailed) Error() string {
	if v.n == 1 {
		return "verify found 1 problem"
	}
	return fmt.Sprintf("verify found %d problems", v.n)
}

func exitCode(ctx context.Context, err error) int {
	var u usageError
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return exitInterrupt
	case errors.As(err, &u), errors.Is(err, repo.ErrInvalidArguments):
		return exitUsage
	case errors.Is(err, refs.ErrRefused):
		return exitRefused
	case errors.As(err, new(*refs.ExistsError)), errors.As(err, new(*refs.TagIntactError)):
		return exitExists
	case errors.Is(err, store.ErrAuth):
		return exitAuth
	}
	return exitError
}

func printError(ios *term.IO, g *globals, err error, code int) {
	msg := message(err)
	if code == exitInterrupt {
		// The first line says where the command stopped; what follows
		// is an engine's own echo of the cancellation (DuckDB's
		// "INTERRUPT Error: Interrupted!").
		msg, _, _ = strings.Cut(msg, "\n")
		msg = "interrupted; nothing was changed past the last complete step: " + msg
	}
	if ae := (*store.AuthError)(nil); errors.As(err, &ae) && ae.Err != nil {
		ios.Debugf("the store's own error: %s", ae.Err) // the SDK's text, credentials removed
	}
	if g.JSON {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "exit_code": code, "kind": errorKind(err, code)}})
		fmt.Fprintln(ios.ErrOut, string(b))
		return
	}
	fmt.Fprintf(ios.ErrOut, "fdl: %s\n", msg)
}

// errorKind names an error for JSON output; the kinds are stable
// (docs/cli.md §errors).
func errorKind(err error, code int) string {
	if errors.Is(err, workdir.ErrRevertConflict) {
		return "revert_conflict" // exit 3 (refused), its own kind
	}
	switch code {
	case exitUsage:
		return "usage"
	case exitRefused:
		return "refused"
	case exitExists:
		return "ref_exists"
	case exitAuth:
		return "auth"
	case exitInterrupt:
		return "interrupted"
	}
	kinds := []struct {
		target error
		kind   string
	}{
		{gc.ErrRefused, "gc_refused"},
		{workdir.ErrNotInHistory, "not_in_history"},
		{workdir.ErrUncommitted, "uncommitted"},
		{workdir.ErrNotRestorable, "not_restorable"},
		{workdir.ErrNothingToUndo, "nothing_to_undo"},
		{gc.ErrAheadOfFloor, "ahead_of_floor"},
		{repo.ErrRetentionConflict, "retention_conflict"},
		{repo.ErrRetired, "retired"},
		{retention.ErrInvalid, "invalid_retention"},
		{refs.ErrBadLog, "invalid_reflog"},
		{repo.ErrChecksum, "checksum"},
		{workdir.ErrUncommitted, "uncommitted"},
		{workdir.ErrUnpushed, "unpushed"},
		{workdir.ErrPullInterrupted, "pull_interrupted"},
		{workdir.ErrPullRace, "locked"},
		{repo.ErrDataMissing, "data_missing"},
		{repo.ErrDataLocal, "data_local"},
		{repo.ErrDataPath, "data_path"},
		{repo.ErrExtraFiles, "extra_files"},
		{repo.ErrGCDeleting, "gc_deleting"},
		{repo.ErrFormatUpgrade, "format_upgrade"},
		{repo.ErrFormatChange, "format_change"},
		{ducklake.ErrUnknownStorage, "unknown_storage"},
		{ducklake.ErrLocked, "locked"},
		{ducklake.ErrNotCatalog, "not_catalog"},
		{ducklake.ErrUnsupportedFormat, "unsupported_format"},
		{ducklake.ErrCurrentFormat, "current_format"},
		{workdir.ErrLocalWork, "local_work"},
		{ducklake.ErrSQLite, "sqlite_catalog"},
		{ducklake.ErrCorrupt, "corrupt_catalog"},
		{repo.ErrNotRepository, "not_repository"},
		{workdir.ErrNotWorkdir, "not_workdir"},
		{workdir.ErrNothingToCommit, "nothing_to_commit"},
		{repo.ErrNothingToPush, "nothing_to_push"},
		{workdir.ErrNotDescendant, "not_descendant"},
		{repo.ErrNested, "nested_repository"},
		{workdir.ErrDirNotEmpty, "dir_not_empty"},
		{repo.ErrNotEmpty, "not_empty"},
		{refs.ErrUnknownRev, "unknown_revision"},
		{refs.ErrAmbiguousRev, "ambiguous_revision"},
		{repo.ErrIncomplete, "incomplete_version"},
		{refs.ErrDeleteHead, "delete_head"},
		{refs.ErrDangling, "dangling_ref"},
		{refs.ErrInvalidName, "invalid_ref_name"},
		{refs.ErrExists, "ref_exists"},
		{refs.ErrCorrupt, "corrupt_ref"},
		{refs.ErrNotFound, "ref_not_found"},
		{store.ErrReadOnly, "read_only"},
		{store.ErrNoRoot, "no_bucket"},
		{store.ErrNotExist, "not_found"},
		{version.ErrBadRecord, "bad_record"},
	}
	for _, k := range kinds {
		if errors.Is(err, k.target) {
			return k.kind
		}
	}
	if errVerify := (verifyFailed{}); errors.As(err, &errVerify) {
		return "verify_failed"
	}
	return "error"
}

// message is err's text with every hint put back: for each error in err's
// tree that has a hint (outermost first), its own text is replaced by its
// text with the hint. A hint only adds text around or inside its own
// error's words, never inside a wrapped error's, so the wrapped error's
// text is still there to receive its own hint.
func message(err error) string {
	msg := err.Error()
	walk(err, func(e error) {
		if h, ok := hinted(e); ok {
			msg = strings.Replace(msg, e.Error(), h, 1)
		}
	})
	return msg
}

// walk calls fn for err and every error it wraps, depth first.
func walk(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, fn)
		}
	}
}

// hinted returns e's own text with its hint, for the error types that have
// one.
func hinted(e error) (string, bool) {
	plain := e.Error()
	if e == refs.ErrDeleteHead {
		return plain + ": HEAD names the repository's default branch, set when it was made, and no fdl command points HEAD at another branch, so this branch cannot be deleted; to stop using it, move it (fdl branch -f NAME REV) or work on another branch (fdl checkout URL DIR --branch NEW)", true
	}
	switch e := e.(type) {
	case *store.AuthError:
		return plain + " (fdl --verbose shows the store's own error)", true
	case *refs.CorruptError:
		return insertAfter(plain, "point a branch at a version again", " (fdl branch -f NAME REV --backwards; fdl reflog NAME shows what it held)"), true
	case *refs.DanglingError:
		n := shellQuote(e.Ref.Short())
		switch {
		case e.Ref.IsBranch():
			return insertAfter(plain, "point the branch at a version again", " (fdl branch -f "+n+" REV --backwards; fdl reflog "+n+" shows what it held)"), true
		case e.Ref.IsTag():
			return insertAfter(plain, "point the tag at a version again", " (fdl tag --repair "+n+" REV; fdl reflog "+n+" shows what it held)"), true
		}
		return plain, true
	case *refs.MissingBranchError:
		n := e.Branch.Short()
		return insertAfter(plain, "branch "+n+" does not exist", " (create it with fdl branch "+n+" REV)"), true
	case *refs.MoveRefusedError:
		return plain + "; to move the branch back on purpose pass --backwards (the undone versions stay in the repository and in the ref log, fdl reflog " + e.Branch.Short() + ")", true
	case *refs.MoveRaceError:
		return insertAfter(plain, "look at it", " (fdl reflog "+e.Branch.Short()+")"), true
	case *refs.NoVersionYetError:
		return plain + "; publish the first one: fdl checkout " + shellQuote(e.Where) + " DIR, write to its catalog, then fdl commit and fdl push", true
	case *refs.NoSuchRevError:
		if alt := caretSpelling(e.Rev); alt != "" {
			return insertBefore(plain, ": "+refs.ErrUnknownRev.Error(), " (fdl walks back along a branch with ~: write "+alt+")"), true
		}
		return insertBefore(plain, ": "+refs.ErrUnknownRev.Error(), " (list them with 'fdl branch -l', 'fdl tag -l', 'fdl log')"), true
	case *refs.NoLogError:
		return insertBefore(plain, ": "+refs.ErrNotFound.Error(), " (list refs with fdl branch -l, fdl tag -l)"), true
	case *repo.NotRepositoryError:
		switch {
		case e.IsWorkdir:
			return plain + " (fdl -C " + shellQuote(e.URL) + " COMMAND)", true
		case e.ReadOnly || e.Workdir != "":
			return plain, true // init would make a new, empty repository: not what is wanted
		}
		return plain + ", or make one with 'fdl init " + e.URL + "'", true
	case *workdir.NotWorkdirError:
		return plain + ": run 'fdl checkout URL DIR' to make one, or pass -C DIR", true
	case *workdir.BusyError:
		return strings.Replace(plain, "another commit or push", "another fdl commit or push", 1), true
	case workdir.NoMessageError:
		return insertBefore(plain, ": "+repo.ErrInvalidArguments.Error(), " (-m MSG)"), true
	case workdir.NothingToPushError:
		return insertAfter(plain, "commit first", " (fdl commit -m MSG)"), true
	case *repo.RefusedError:
		url := e.URL
		if url == "" {
			url = "URL"
		}
		return insertAfter(plain, "check out "+e.Branch.Short()+" again", " (fdl checkout "+shellQuote(url)+" NEWDIR)"), true
	case *workdir.UncommittedError:
		b := e.Branch
		return plain + "; to keep them, commit them and push them to a new branch (fdl commit -m MSG; fdl push NEW-BRANCH; then fdl request create NAME --from NEW-BRANCH --into " + b + " asks for them on " + b + "), then fdl pull --discard; to throw them away: fdl pull --discard", true
	case *workdir.UnpushedError:
		b := e.Branch.Short()
		return plain + "; keep them on a new branch (fdl push NEW-BRANCH; fdl request create NAME --from NEW-BRANCH --into " + b + " asks for them on " + b + "), then fdl pull --discard brings this directory to " + b + "'s head", true
	case *workdir.PullNotFastForwardError:
		return plain + "; the base stays in the repository: fdl pull --discard replaces the working catalog with " + e.Branch.Short() + "'s head anyway, or check out " + e.Branch.Short() + " into another directory (fdl checkout URL NEWDIR)", true
	case *workdir.PullInterruptedError:
		return plain + ": run fdl pull again to finish it", true
	case *workdir.NoBranchToPullError:
		return insertBefore(plain, ": "+refs.ErrNotFound.Error(), " (fdl push creates it)"), true
	case *refs.ApproveRefusedError:
		return plain + "; rebuild the request on " + e.Branch.Short() + "'s head (fdl pull, or check " + e.Branch.Short() + " out again, redo the change, commit) and move it there: fdl request update " + e.Request.Short(), true
	case *repo.RequestRefusedError:
		return plain + "; approving it could only be refused: bring the working directory up to " + e.Target.Short() + "'s head (fdl pull, or check it out again), redo the change there and commit", true
	case *repo.NothingToRequestError:
		return insertBefore(plain, ": "+repo.ErrNothingToPush.Error(), " (commit a change first: fdl commit -m MSG)"), true
	case *refs.NoSuchRequestError:
		return insertBefore(plain, ": "+refs.ErrNotFound.Error(), " (list them with fdl request list)"), true
	case *workdir.RevertConflictError:
		return insertAfter(insertAfter(plain, "revert the later versions first", " (fdl revert REV)"), "restore the state you want", " (fdl restore --source REV, then fdl commit)"), true
	case *workdir.UndoUncommittedError:
		return insertAfter(insertAfter(plain, "commit them first", " (fdl commit -m MSG)"), "discard them by restoring the base", " (fdl restore --source "+string(e.Base)+")"), true
	case *workdir.NotInHistoryError:
		if e.Base == "" || e.Expired {
			return plain, false
		}
		return plain + ": check out the branch that holds it (fdl checkout URL NEWDIR --rev " + e.Rev + ")", true
	case *workdir.LocalWorkError:
		how := "commit and push them first (fdl commit -m MSG, fdl push)"
		if e.Unpushed > 0 {
			how = "push them first (fdl push)"
		}
		return insertBefore(plain, ": "+workdir.ErrLocalWork.Error(), "; "+how+", then run fdl migrate again"), true
	case repo.MigrateNeedsFileError:
		return insertBefore(plain, ": "+repo.ErrInvalidArguments.Error(), " (fdl migrate BRANCH)"), true
	case *repo.FormatChangeError:
		switch {
		case e.Request != "":
			return insertAfter(plain, "approve again allowing the format change", " (fdl request approve "+e.Request.Short()+" --allow-format-change)"), true
		case e.Move:
			back := ""
			if e.Backwards {
				back = " --backwards"
			}
			return insertAfter(plain, "move it again allowing the format change", " (fdl branch -f "+e.Branch.Short()+" "+string(e.Change.To.Version)+back+" --allow-format-change)"), true
		}
		return insertAfter(plain, "push again allowing the format change", " (fdl push --allow-format-change)"), true
	case *repo.DataMissingError:
		return insertAfter(plain, "older than the grace period", " (fdl retention)"), true
	case *workdir.DeletedFilesError:
		return insertAfter(insertAfter(plain, "only gc deletes", " (fdl gc)"), "Those versions are damaged", " (fdl verify --data lists what they lost)"), true
	case *repo.ShortGraceError:
		return insertAfter(plain, "ask for it on purpose to set it", " (fdl retention --grace "+e.Grace.String()+" --allow-short-grace)"), true
	case *repo.ExtraFilesError:
		return plain + ": delete them (fdl verify lists every such file)", true
	case *repo.RetiredError:
		return insertAfter(plain, "its record stays", " (fdl show "+string(e.ID)+")") + " (fdl log)", true
	case *repo.RetiredBaseError:
		return insertAfter(plain, "check out a version in retention", " (fdl checkout URL NEWDIR)"), true
	case *repo.DamagedError:
		return plain + damagedHints[e.What], true
	case *gc.StopError:
		return gcStopHint(e, plain), true
	case *retention.InconsistentError:
		h := e.Why + "; run 'fdl verify'"
		if e.RepairRef {
			h += " and repair the ref"
		}
		return h, true
	}
	return "", false
}

// damagedHints say what to do about a retention file that does not parse.
var damagedHints = map[repo.Damaged]string{
	repo.DamagedPolicy: "; correct the file, or replace it with the default plus the rules you give: fdl retention --reset [--keep-last N] [--keep-within D]",
	repo.DamagedFloor:  "; restore it from a backup, or delete it: every version whose catalog gc deleted keeps its marker (versions/<id>/retired.json), and the next fdl gc moves the floor again",
	repo.DamagedMarker: "; restore it from a backup, or delete it and run fdl gc: a version whose catalog is gone is retired again with a new marker (if the policy keeps that version, gc says so: lower the policy, or restore the catalog)",
}

// gcStopHint says what to run after gc stopped.
func gcStopHint(e *gc.StopError, plain string) string {
	switch e.Why {
	case gc.StopFloorMoved:
		return insertAfter(plain, "moved since gc planned", " (another gc or fdl retention ran)") + ": run fdl gc again"
	case gc.StopPolicyChanged:
		return insertAfter(plain, "changed while gc ran", " (fdl retention)") + ": run fdl gc again, which applies the new policy"
	case gc.StopRefOnRetired, gc.StopBranchKeepsRetired:
		return plain + ": run fdl gc again, which takes it back into retention"
	case gc.StopNewCatalogUnreadable, gc.StopIntentLost:
		return plain + ": run fdl gc again"
	case gc.StopMoveToRetired:
		return plain + ": run fdl gc again, which takes it back into retention"
	case gc.StopAnotherGC:
		return plain + " (if no gc is running, its intent expires 10 minutes after it was written, and fdl gc then clears it)"
	case gc.StopAheadOfFloor:
		return plain + " (fdl gc --yes plans and moves it)"
	}
	return plain
}

// problemHints say what to do about some of verify's findings, by code.
var problemHints = map[repo.Code]string{
	repo.CodeRefRetired:       "; run fdl gc again, which takes a version a ref points at back into retention while its catalog is still there; if its catalog is gone, move the ref to a version in retention",
	repo.CodeRetiredNoMarker:  "; run fdl gc --yes to write it",
	repo.CodeRetiredCatalog:   "; run fdl gc --yes again",
	repo.CodeTempLeftover:     ": fdl gc --yes deletes it once older than the grace period",
	repo.CodeVersionExtraFile: "; delete it",
	repo.CodeDataLocalPath:    "; copy those files into the repository's data/ under the same relative paths (readers then attach with DATA_PATH pointing there, OVERRIDE_DATA_PATH true), or publish a new version whose lake writes into the repository",
}

// problemMessage is a verify finding's message with the hints of the error
// it quotes and of its code.
func problemMessage(p repo.Problem) string {
	msg := p.Message
	if p.Err != nil {
		msg = strings.Replace(msg, p.Err.Error(), message(p.Err), 1)
	}
	return msg + problemHints[p.Code]
}

// insertAfter returns s with add after the last anchor (s unchanged
// without one; TestHints keeps the anchors in step with the library). The
// last, because an error's fixed words follow the names it quotes.
func insertAfter(s, anchor, add string) string {
	i := strings.LastIndex(s, anchor)
	if i < 0 {
		return s
	}
	i += len(anchor)
	return s[:i] + add + s[i:]
}

// insertBefore returns s with add before the last anchor.
func insertBefore(s, anchor, add string) string {
	i := strings.LastIndex(s, anchor)
	if i < 0 {
		return s
	}
	return s[:i] + add + s[i:]
}

// shellQuote quotes s for a POSIX shell when it needs it (in the commands
// the hints name).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// caretSpelling returns fdl's spelling of git's REV^ (REV^^, REV^2 is not
// it: fdl follows first parents only) as REV~N, or "" when rev is not
// NAME followed by carets only.
func caretSpelling(rev string) string {
	name := strings.TrimRight(rev, "^")
	n := len(rev) - len(name)
	if n == 0 || name == "" || strings.ContainsAny(name, "^~@") {
		return ""
	}
	return fmt.Sprintf("%s~%d", name, n)
}
