package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/cache"
	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/filelock"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/mirror"
	"github.com/fdl-dev/fdl/pins"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/signature"
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
	exitBehind    = 6 // fdl lock check --fail-behind: a pin's ref moved on (pins.ErrBehind)
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
       conflicts; a mirror whose destination branch moved on its own
  4    the tag (or branch, or request) already exists and holds another
       version; tags never move (creating it again at the same version
       succeeds; a mirror exits so for a destination tag holding another)
  5    the store's credentials are missing, expired or refused (kind auth);
       the message names the source tried and what to set, --verbose adds
       the store SDK's own error
  6    a pin is behind its ref (fdl lock check --fail-behind, kind
       pin_behind): every pin reads as pinned, and a ref a pin follows
       moved on or is gone
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
	case errors.As(err, new(*refs.ExistsError)), errors.As(err, new(*refs.TagIntactError)), errors.As(err, new(*mirror.TagClashError)):
		return exitExists
	case errors.Is(err, store.ErrAuth):
		return exitAuth
	case errors.Is(err, pins.ErrBehind):
		return exitBehind
	}
	return exitError
}

func printError(ios *term.IO, g *globals, root *cobra.Command, err error, code int) {
	msg := err.Error()
	var hs []hint
	var kept *workdir.UndoNotCommittedError
	switch {
	case code == exitInterrupt && errors.As(err, &kept):
		// Something stays (a revert's snapshot): say what, and how to
		// go on or take it back.
		msg, _, _ = strings.Cut(msg, "\n")
		msg = "interrupted: " + msg
		hs = carryLocation(root, g, hints(err))
	case code == exitInterrupt:
		// The first line says where the command stopped; what follows
		// is an engine's own echo of the cancellation (DuckDB's
		// "INTERRUPT Error: Interrupted!").
		msg, _, _ = strings.Cut(msg, "\n")
		msg = "interrupted; nothing was changed past the last complete step: " + msg
	default:
		hs = carryLocation(root, g, hints(err))
	}
	if ae := (*store.AuthError)(nil); errors.As(err, &ae) && ae.Err != nil {
		ios.Debugf("the store's own error: %s", ae.Err) // the SDK's text, credentials removed
	}
	if g.JSON {
		e := map[string]any{"message": msg, "exit_code": code, "kind": errorKind(err, code)}
		if len(hs) > 0 {
			lines := make([]string, len(hs))
			cmds := []string{}
			for i, h := range hs {
				lines[i] = h.String()
				if h.run != "" {
					cmds = append(cmds, h.run)
				}
			}
			e["hint"] = strings.Join(lines, "\n")
			e["hint_commands"] = cmds
		}
		b, _ := json.Marshal(map[string]any{"error": e})
		fmt.Fprintln(ios.ErrOut, string(b))
		return
	}
	fmt.Fprintf(ios.ErrOut, "fdl: %s\n", msg)
	for _, h := range hs {
		fmt.Fprintf(ios.ErrOut, "hint: %s\n", h)
	}
}

// errorKind names an error for JSON output; the kinds are stable
// (docs/cli.md §errors). The exit code decides first (usage, refused,
// ref_exists, auth, interrupted); otherwise the outermost error in err's
// tree (walk's order: an error before what it wraps) that has a kind gives
// it — typed errors by their type (kindOfType), sentinels by identity
// (sentinelKinds). No list order decides between two kinds.
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
	case exitBehind:
		return "pin_behind"
	case exitInterrupt:
		return "interrupted"
	}
	kind := ""
	walk(err, func(e error) {
		if kind != "" {
			return
		}
		if k, ok := kindOfType(e); ok {
			kind = k
			return
		}
		if t := reflect.TypeOf(e); t != nil && t.Comparable() {
			kind = sentinelKinds[e]
		}
	})
	if kind == "" {
		return "error"
	}
	return kind
}

// kindOfType is the kind of the error types whose kind is not their
// sentinel's.
func kindOfType(e error) (string, bool) {
	switch e := e.(type) {
	case verifyFailed:
		return "verify_failed", true
	case *repo.HistoryRewrittenError:
		return "history_rewritten", true
	case *pins.OfflineError:
		return "not_cached", true
	case *mirror.OtherRepositoryError:
		return "other_repository", true
	case *mirror.CannotListError:
		return "cannot_list", true
	case *cache.FolderError:
		return "cache_folder", true
	case *cache.FullError:
		return "cache_full", true
	case *workdir.CatalogUnusableError:
		if errors.Is(e, ducklake.ErrCorrupt) {
			return "corrupt_catalog", true // SQLite's quick_check: its kind, as before
		}
		return "catalog_unusable", true
	}
	return "", false
}

// sentinelKinds names the library's sentinel errors for JSON output. Each
// sentinel has one kind; an error wrapping two takes the outer one's.
var sentinelKinds = map[error]string{
	gc.ErrRefused:                 "gc_refused",
	gc.ErrAheadOfFloor:            "ahead_of_floor",
	workdir.ErrNotInHistory:       "not_in_history",
	workdir.ErrUncommitted:        "uncommitted",
	workdir.ErrNotRestorable:      "not_restorable",
	workdir.ErrNothingToUndo:      "nothing_to_undo",
	workdir.ErrUnpushed:           "unpushed",
	workdir.ErrPullInterrupted:    "pull_interrupted",
	workdir.ErrPullRace:           "locked",
	workdir.ErrLocalWork:          "local_work",
	workdir.ErrNotWorkdir:         "not_workdir",
	workdir.ErrNothingToCommit:    "nothing_to_commit",
	workdir.ErrNotDescendant:      "not_descendant",
	workdir.ErrDirNotEmpty:        "dir_not_empty",
	workdir.ErrLocalFileMissing:   "local_version_missing",
	filelock.ErrBusy:              "locked",
	repo.ErrRetentionConflict:     "retention_conflict",
	repo.ErrRetired:               "retired",
	repo.ErrChecksum:              "checksum",
	repo.ErrDataMissing:           "data_missing",
	repo.ErrDataSize:              "data_size",
	repo.ErrDataLocal:             "data_local",
	repo.ErrDataPath:              "data_path",
	repo.ErrExtraFiles:            "extra_files",
	repo.ErrGCDeleting:            "gc_deleting",
	repo.ErrFormatUpgrade:         "format_upgrade",
	repo.ErrFormatChange:          "format_change",
	repo.ErrNotRepository:         "not_repository",
	repo.ErrNothingToPush:         "nothing_to_push",
	repo.ErrNested:                "nested_repository",
	repo.ErrNotEmpty:              "not_empty",
	repo.ErrIncomplete:            "incomplete_version",
	repo.ErrSignature:             "signature",
	repo.ErrSignatureExists:       "signature_exists",
	signature.ErrSigningKey:       "signing_key",
	signature.ErrSignersFile:      "signers_file",
	signature.ErrTagPayload:       "tag_payload",
	retention.ErrInvalid:          "invalid_retention",
	refs.ErrBadLog:                "invalid_reflog",
	refs.ErrUnknownRev:            "unknown_revision",
	refs.ErrAmbiguousRev:          "ambiguous_revision",
	refs.ErrDeleteHead:            "delete_head",
	refs.ErrDangling:              "dangling_ref",
	refs.ErrInvalidName:           "invalid_ref_name",
	refs.ErrExists:                "ref_exists",
	refs.ErrCorrupt:               "corrupt_ref",
	refs.ErrNotFound:              "ref_not_found",
	ducklake.ErrUnknownStorage:    "unknown_storage",
	ducklake.ErrLocked:            "locked",
	ducklake.ErrNotCatalog:        "not_catalog",
	ducklake.ErrUnsupportedFormat: "unsupported_format",
	ducklake.ErrCurrentFormat:     "current_format",
	ducklake.ErrSQLite:            "sqlite_catalog",
	ducklake.ErrCorrupt:           "corrupt_catalog",
	store.ErrReadOnly:             "read_only",
	store.ErrNoRoot:               "no_bucket",
	store.ErrNotExist:             "not_found",
	version.ErrBadRecord:          "bad_record",
	pins.ErrUnknownPin:            "unknown_pin",
	pins.ErrPinExists:             "pin_exists",
	pins.ErrMismatch:              "pin_mismatch",
	pins.ErrCheckFailed:           "lock_check",
	lockfile.ErrNotFound:          "no_lockfile",
	lockfile.ErrInvalid:           "invalid_lockfile",
	lockfile.ErrUnsupportedFormat: "lockfile_format",
}

// message is err's text followed by its hints, on one line: for the
// places that print an error among other lines (warnings, a bad ref log
// entry). printError prints the hints on lines of their own.
func message(err error) string {
	msg := err.Error()
	for _, h := range hints(err) {
		msg += " (hint: " + h.String() + ")"
	}
	return msg
}

// walk calls fn for err and every error it wraps, depth first: an error
// before what it wraps.
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

// hint is one thing to do next, printed after an error's message: what it
// does, and the command that does it ("" when the advice is not one
// command). A command's words in capitals (MSG, REV, NEWDIR, URL, NAME)
// are the user's to choose; every other word runs as printed
// (TestHintsRun runs them).
type hint struct {
	do, run string
}

// String is the hint as printed: "what: command", or either alone.
func (h hint) String() string {
	switch {
	case h.run == "":
		return h.do
	case h.do == "":
		return h.run
	}
	return h.do + ": " + h.run
}

// hints returns the hints of every error in err's tree, outermost first,
// each once. The library's errors carry what a hint needs in typed
// fields; the text is made here (hintsFor), never by editing the
// library's words.
func hints(err error) []hint {
	var out []hint
	seen := map[hint]bool{}
	walk(err, func(e error) {
		for _, h := range hintsFor(e) {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	})
	return out
}

// hintsFor returns the hints of e itself, by its type (the hint's key)
// and its fields (the hint's arguments).
//
// It is one piece: one type switch with a case per error type that has a
// hint, the table of hints read top to bottom; split, a new error type
// would have several places to look for where its hint goes.
func hintsFor(e error) []hint {
	if e == syscall.ENOSPC {
		return []hint{{"free space on the disk that is full (the message names the file), then run the command again: what was written before is kept, and a rerun goes on from it", ""}}
	}
	if e == refs.ErrDeleteHead {
		return []hint{{"HEAD names it (the repository's default branch, set when it was made), so it stays; to undo its last versions instead, move it back", "fdl branch -f NAME REV --backwards"}, {"or work on another branch", "fdl checkout URL NEWDIR --branch NEW"}}
	}
	switch e := e.(type) {
	case *store.AuthError:
		return []hint{{"run the command again with --verbose to see the store's own error", ""}}
	case *cache.FullError:
		return []hint{{"see what the cache holds", "fdl cache list"},
			{"make room: remove the least recently used catalogs until the rest fit in SIZE", "fdl cache prune --max-size SIZE"},
			{"or set FDL_CACHE to a folder on a disk with room; attach and lock commands also run without the cache with --cache=false", ""}}
	case *cache.FolderError:
		return []hint{{"set FDL_CACHE to a folder this user can write, or unset it for the default (fdl/catalogs in the user's cache folder); attach and lock commands also run without the cache with --cache=false", ""}}
	case *workdir.UndoNotCommittedError:
		dir := shellQuote(e.Dir)
		return []hint{{"record the " + string(e.Kind) + " as prepared (its message is kept)", "fdl -C " + dir + " commit"},
			{"or take its snapshot back: bring back the base's state, then commit", "fdl -C " + dir + " restore --source " + string(e.Base)}}
	case *repo.DamagedRecordError:
		return []hint{{"version.json is the version's record, written once by its push: restore " + e.Location + " from a backup, or write back the copy the version's history pack holds (" + e.Pack + ": the entry of \"records\" whose id is " + string(e.Version) + ")", ""},
			{"then check the repository", "fdl verify"}}
	case *refs.CorruptError:
		return refRepairHints(e.Ref)
	case *refs.DanglingError:
		return refRepairHints(e.Ref)
	case *refs.MissingBranchError:
		if e.Request != "" {
			return []hint{{"offer it into a branch the repository has", "fdl request create " + shellQuote(e.Request.Short()) + " --into BRANCH"},
				{"the branches", "fdl branch -l"}}
		}
		return []hint{{"create it", "fdl branch " + shellQuote(e.Branch.Short()) + " REV"}}
	case *refs.MoveRefusedError:
		n := shellQuote(e.Branch.Short())
		return []hint{{"to move the branch back on purpose (the undone versions stay in the repository and in the ref log)", "fdl branch -f " + n + " " + string(e.New) + " --backwards"}, {"what the branch held", "fdl reflog " + n}}
	case *refs.MoveRaceError:
		return []hint{{"see who moved it", "fdl reflog " + shellQuote(e.Branch.Short())}}
	case *refs.NoVersionYetError:
		if e.Tags > 0 {
			// A mirror of tags alone has versions but no branch: name one.
			return []hint{{"name one of its tags", "fdl tag -l" + repoFlag(e.Where)}}
		}
		return []hint{{"publish the first one: check it out, write to its catalog, then fdl commit -m MSG and fdl push", "fdl checkout " + shellQuote(e.Where) + " NEWDIR"},
			{"or name a tag or branch the repository has", "fdl tag -l" + repoFlag(e.Where)}}
	case *repo.NotHereError:
		if e.Walk {
			return []hint{{"the ids of the versions committed here", "fdl log"}}
		}
		if e.Version != "" {
			return []hint{{"publish it, then name it", "fdl push"}}
		}
		return []hint{{"the ids of the versions committed here", "fdl log"}, {"or publish them, then name them by seq or ~N", "fdl push"}}
	case *refs.NoSuchRevError:
		if alt := caretSpelling(e.Rev); alt != "" {
			return []hint{{"fdl walks back along a branch with ~: write " + alt, ""}}
		}
		return listRefHints(e.Where, true)
	case *refs.NoLogError:
		return listRefHints(e.Where, false)
	case *mirror.DivergedError:
		src, dst, ref := shellQuote(e.Source), shellQuote(e.Dest), shellQuote(strings.TrimPrefix(string(e.Ref), "refs/"))
		if e.Race {
			return []hint{{"run the mirror again", "fdl mirror " + src + " " + dst + " --ref " + ref}}
		}
		return []hint{{"to move it to the source's version on purpose (what it holds stays in the destination's ref log)", "fdl mirror " + src + " " + dst + " --ref " + ref + " --backwards --why TEXT"},
			{"see who moved it at the destination", "fdl reflog " + shellQuote(e.Ref.Short()) + " --repo " + dst}}
	case *mirror.TagClashError:
		return []hint{{"what the destination's tag holds", "fdl show " + shellQuote(e.Exists.Ref.Short()) + " --repo " + shellQuote(e.Dest)},
			{"what the source's tag holds", "fdl show " + shellQuote(e.Exists.Ref.Short()) + " --repo " + shellQuote(e.Source)}}
	case *mirror.RetiredAtDestinationError:
		return []hint{{"a version leaves retention for good: mirror the ref to another place", "fdl mirror " + shellQuote(e.Source) + " NEWPLACE --ref " + shellQuote(strings.TrimPrefix(string(e.Ref), "refs/"))},
			{"what the destination keeps", "fdl retention --repo " + shellQuote(e.Dest)}}
	case *mirror.OtherRepositoryError:
		return []hint{{"mirror to an empty folder or prefix", "fdl mirror " + shellQuote(e.Source) + " NEWPLACE"}}
	case *mirror.SourceDataMissingError:
		return []hint{{"what the source's versions lost", "fdl verify --data --repo " + shellQuote(e.Source)}}
	case *mirror.CannotListError:
		return []hint{{"name each ref to mirror", "fdl mirror " + shellQuote(e.Source) + " DST --ref heads/NAME --ref tags/NAME"}}
	case *repo.NotRepositoryError:
		switch {
		case e.IsWorkdir:
			return []hint{{"run the command in that working directory", "fdl -C " + shellQuote(e.URL) + " COMMAND"}}
		case e.Reader && e.NoCache != "":
			return []hint{{"the pinned repository is not there: check the pin's repository in the lockfile (it may have moved); the cache is no way out here: " + e.NoCache, ""}}
		case e.Reader:
			return []hint{{"the pinned repository is not there: check the pin's repository in the lockfile (it may have moved), or attach from the cache while it is out of reach (--cache)", ""}}
		case e.ReadOnly || e.Workdir != "":
			return nil // init would make a new, empty repository: not what is wanted
		}
		return []hint{{"check the URL, or make a repository there", "fdl init " + shellQuote(e.URL)}}
	case *workdir.NotWorkdirError:
		return []hint{{"make one", "fdl checkout URL NEWDIR"}, {"or name one", "fdl -C DIR COMMAND"}}
	case workdir.NoMessageError:
		return []hint{{"give one with -m MSG", ""}}
	case *workdir.LocalVersionError:
		dir := shellQuote(e.Dir)
		return []hint{{"make one new version of the working catalog, which still holds their snapshots, in place of the unpushed version(s), then publish it again", "fdl -C " + dir + " commit --replace-unpushed -m MSG"}}
	case workdir.NothingToPushError:
		return []hint{{"commit first", "fdl commit -m MSG"}}
	case *repo.NoLocalVersionError:
		return []hint{{"write to the working catalog (fdl status prints its ATTACH line), then commit", "fdl commit -m MSG"}}
	case *repo.RefusedError:
		if e.Race && e.Current == "" {
			return nil // the branch was deleted: the message says push again
		}
		return []hint{{"check out " + e.Branch.Short() + "'s head into a new directory", "fdl checkout " + urlOr(e.URL) + " NEWDIR --branch " + shellQuote(e.Branch.Short())}}
	case *workdir.UncommittedError:
		b := shellQuote(e.Branch)
		return []hint{{"to keep them, commit them and push them to a new branch of their own", "fdl commit -m MSG && fdl push NEW-BRANCH"},
			{"then bring this directory to " + e.Branch + "'s head, where the change is redone and pushed (fdl never merges versions)", "fdl pull --discard"},
			{"or check " + e.Branch + " out into another directory and redo the change there", "fdl checkout URL NEWDIR --branch " + b}}
	case *workdir.UnpushedError:
		b := e.Branch.Short()
		if e.Retired != "" {
			return []hint{{"check " + b + " out again and redo the change there (their rows stay readable here until then)", "fdl checkout URL NEWDIR --branch " + shellQuote(b)}}
		}
		return []hint{{"keep them on a new branch of their own", "fdl push NEW-BRANCH"},
			{"then bring this directory to " + b + "'s head, redo the change there, commit and push (fdl never merges versions)", "fdl pull --discard"}}
	case *workdir.PullNotFastForwardError:
		b := e.Branch.Short()
		return []hint{{"replace the working catalog with " + b + "'s head anyway (the base stays in the repository)", "fdl pull --discard"},
			{"or check " + b + " out into another directory", "fdl checkout URL NEWDIR --branch " + shellQuote(b)}}
	case *refs.ExistsError:
		name, want := shellQuote(e.Ref.Short()), string(e.Wanted)
		switch {
		case e.WantedRetired:
			return []hint{{"see the version it holds", "fdl show " + name}}
		case e.Ref.IsTag():
			return []hint{{"tags never move: see the version it holds", "fdl show " + name},
				{"or tag that version under another name", "fdl tag NAME " + want}}
		case e.Ref.IsBranch() && e.Backwards:
			return []hint{{"see the version it holds", "fdl show " + name},
				{"to move it back there on purpose (the undone versions stay in the repository and in the ref log)", "fdl branch -f " + name + " " + want + " --backwards"}}
		case e.Ref.IsBranch():
			return []hint{{"move the branch there instead (fast-forward only)", "fdl branch -f " + name + " " + want}}
		}
		return nil
	case *workdir.CatalogUnusableError:
		if e.Unpushed > 0 {
			return []hint{{"make it anew from this directory's base, the newest version committed here (those versions are kept; what was written after it is lost)", "fdl pull --discard"}}
		}
		return []hint{{"make it anew from " + e.Branch + "'s head (what was written to it since the last commit is lost)", "fdl pull --discard"}}
	case *workdir.PullInterruptedError:
		return []hint{{"finish it", "fdl pull"}}
	case *workdir.NoBranchToPullError:
		return []hint{{"push creates it", "fdl push"}}
	case *refs.ApproveRefusedError:
		b := e.Branch.Short()
		return []hint{{"rebuild the request on " + b + "'s head (bring a working directory up to it, redo the change, commit) and move the request there", "fdl request update " + shellQuote(e.Request.Short())}}
	case *repo.RequestRefusedError:
		b := e.Target.Short()
		return []hint{{"approving it could only be refused: check " + b + "'s head out, redo the change there and commit, then ask again", "fdl checkout URL NEWDIR --branch " + shellQuote(b)}}
	case *repo.NothingToRequestError:
		if e.ByRev {
			verb := "create"
			if e.Update {
				verb = "update"
			}
			return []hint{{"name a version " + e.Target.Short() + " does not hold yet", "fdl request " + verb + " " + shellQuote(e.Request.Short()) + " --from REV"}}
		}
		return []hint{{"write a change to the working catalog and commit it, then create the request again", "fdl commit -m MSG"}}
	case *refs.NoSuchRequestError:
		return []hint{{"list them", "fdl request list" + repoFlag(e.Where)}}
	case *workdir.RevertConflictError:
		return []hint{{"revert the later versions first", "fdl revert REV"}, {"or restore the state you want, then commit it", "fdl restore --source REV"}}
	case *workdir.UndoUncommittedError:
		return []hint{{"commit them first", "fdl commit -m MSG"}, {"or discard them (the catalog goes back to its base, or on to its branch's head if the branch moved)", "fdl pull --discard"}}
	case *workdir.NotInHistoryError:
		if e.Base == "" || e.Expired {
			return nil
		}
		return []hint{{"check out the branch that holds it", "fdl checkout URL NEWDIR --rev " + shellQuote(e.Rev)}}
	case *workdir.LocalWorkError:
		if e.Unpushed > 0 {
			return []hint{{"push them first, then migrate again", "fdl push"}}
		}
		return []hint{{"commit and push them first, then migrate again", "fdl commit -m MSG && fdl push"}}
	case repo.MigrateNeedsFileError:
		return []hint{{"name the branch", "fdl migrate BRANCH"}}
	case *repo.FormatChangeError:
		switch {
		case e.Request != "":
			return []hint{{"approve again allowing the format change", "fdl request approve " + shellQuote(e.Request.Short()) + " --allow-format-change"}}
		case e.Move:
			back := ""
			if e.Backwards {
				back = " --backwards"
			}
			return []hint{{"move it again allowing the format change", "fdl branch -f " + shellQuote(e.Branch.Short()) + " " + string(e.Change.To.Version) + back + " --allow-format-change"}}
		}
		return []hint{{"push again allowing the format change", "fdl push --allow-format-change"}}
	case *repo.GCDeletingError:
		return []hint{{"check the branch out again and redo the change there (once that gc is done, pushing from here goes only if it kept those files)", "fdl checkout URL NEWDIR"}}
	case *repo.DataMissingError:
		return []hint{{"check the branch out again and redo the change (gc deletes files no catalog lists once older than the grace period)", "fdl checkout URL NEWDIR"}, {"the grace period", "fdl retention"}}
	case *repo.DataSizeError:
		return []hint{{"the files were changed after DuckDB wrote them: put back what DuckDB wrote (or rewrite the rows in the working catalog so DuckDB writes new files), then push again", "fdl push"}, {"what the published versions read", "fdl verify --data"}}
	case *workdir.FilesGoneError:
		return []hint{{"what the published versions lost", "fdl verify --data"}, {"then take the branch's head all the same (once the files are restored, or knowing what is lost)", "fdl pull --discard"}}
	case *workdir.DeletedFilesError:
		return []hint{{"what those versions lost", "fdl verify --data"}, {"only gc deletes files a version may read", "fdl gc"}}
	case *repo.ShortGraceError:
		with := ""
		if e.With != "" {
			with = " " + e.With
		}
		return []hint{{"set it on purpose", "fdl retention" + with + " --grace " + e.Grace.String() + " --allow-short-grace"}}
	case *repo.ExtraFilesError:
		return []hint{{"list every such file, then delete them", "fdl verify"}}
	case *repo.SignatureError:
		return signatureHints(e)
	case *repo.SignatureExistsError:
		replace := hint{"signatures are create-only: to replace one by a key your signers file does not allow (or a bad one), delete " + e.Key + " in the repository first, then sign again", ""}
		if e.Tag != "" {
			return []hint{{"check it", "fdl verify --signers FILE"}, replace}
		}
		return []hint{{"see who signed it", "fdl show " + string(e.Version) + " --signers FILE"}, replace}
	case *repo.SignersReadError:
		return []hint{{"name an allowed signers file (one line per signer: PRINCIPALS [OPTIONS] KEY-TYPE BASE64-KEY, as ssh-keygen reads it)", ""}}
	case *signature.SigningKeyError:
		return signingKeyHints(e)
	case *repo.RetiredError:
		return []hint{{"its record", "fdl show " + string(e.ID)}, {"versions in retention", "fdl log"}}
	case *repo.HistoryRewrittenError:
		co := "fdl checkout " + urlOr(e.URL) + " NEWDIR"
		if e.Branch != "" {
			co += " --branch " + shellQuote(e.Branch)
		}
		return []hint{{"check the branch out again and redo the change there (the catalog's rows of snapshot " + strconv.FormatInt(e.Snapshot, 10) + " and before were changed in place)", co},
			{"what version " + string(e.Version) + " published", "fdl show " + string(e.Version) + " --json"}}
	case *repo.RetiredBaseError:
		return []hint{{"check out a version in retention and redo the change there", "fdl checkout URL NEWDIR"}}
	case *repo.DamagedError:
		return damagedHints[e.What]
	case *gc.StopError:
		return gcStopHints(e)
	case *pins.NoLockfileError:
		if e.Path != "" {
			return []hint{{"make it by pinning a version", "fdl lock add NAME REPO --lockfile " + shellQuote(e.Path)}}
		}
		return []hint{{"pin a version: fdl makes fdl.lock in this folder", "fdl lock add NAME REPO"}, {"or name the lockfile with --lockfile FILE", ""}}
	case *pins.UnknownPinError:
		return []hint{{"pin it", "fdl lock add " + shellQuote(e.Name) + " REPO"}}
	case *pins.PinExistsError:
		return []hint{{"drop the old pin first, or choose another name", "fdl lock remove " + shellQuote(e.Name)}}
	case *pins.MismatchError:
		// The repository as opened: the lockfile's relative folder path
		// is relative to the lockfile, lock add's REPO to where fdl runs.
		return []hint{{"if the repository is the right one, pin its version again", "fdl lock add " + shellQuote(e.Name) + " " + shellQuote(e.URL) + " " + string(e.Version)}}
	case *pins.RefGoneError:
		return []hint{{"follow another ref", "fdl lock add " + shellQuote(e.Name) + " REPO REV"}}
	case *pins.CheckError:
		return checkHints(e.Bad)
	case *pins.BehindError:
		// lock update moves a pin whose ref moved on; one whose ref is
		// gone it refuses (RefGoneError): that pin follows another ref.
		var moved []string
		var hs []hint
		for _, s := range e.Behind {
			if s.Kind == pins.ProblemRefGone {
				hs = append(hs, hint{"pin " + s.Name + " follows " + s.Pin.Ref + ", which is gone: follow another ref", "fdl lock add " + shellQuote(s.Name) + " REPO REV"})
				continue
			}
			moved = append(moved, shellQuote(s.Name))
		}
		if len(moved) > 0 {
			hs = append([]hint{{"move them to their refs' heads, then review the lockfile's diff", "fdl lock update " + strings.Join(moved, " ")}}, hs...)
		}
		return hs
	case *pins.OfflineError:
		return []hint{{"attach it once while the repository can be read, to cache its catalog", "fdl attach --locked " + shellQuote(e.Name) + " --cache"}}
	case *retention.InconsistentError:
		if e.RepairRef {
			return []hint{{"find what is wrong, and repair the ref", "fdl verify"}}
		}
		return []hint{{"find what is wrong", "fdl verify"}}
	}
	return nil
}

// checkHints say what to do about the bad pins of fdl lock check: one
// hint per kind of problem, naming the pins.
func checkHints(bad []pins.PinState) []hint {
	by := map[string][]string{}
	var kinds []string
	for _, s := range bad {
		k := s.Kind
		if k == pins.ProblemMissing {
			k = pins.ProblemRetired // one remedy for both
		}
		if k == pins.ProblemRetired && s.Pin.Ref == "" {
			k = "retired-no-ref" // lock update leaves a pin that follows no ref
		}
		if by[k] == nil {
			kinds = append(kinds, k)
		}
		by[k] = append(by[k], shellQuote(s.Name))
	}
	var hs []hint
	for _, k := range kinds {
		n := strings.Join(by[k], " ")
		switch k {
		case pins.ProblemRetired:
			hs = append(hs, hint{"move them to their refs' heads", "fdl lock update " + n})
		case "retired-no-ref":
			for _, name := range by[k] {
				hs = append(hs, hint{"pin " + name + " follows no ref: pin a version in retention", "fdl lock add " + name + " REPO REV"})
			}
		case pins.ProblemUnreachable:
			hs = append(hs, hint{"check the repository's URL and credentials, then check again", "fdl lock check"})
		case pins.ProblemChecksum:
			hs = append(hs, hint{"the repository's catalog is damaged: have its owners check it", "fdl verify --repo URL"})
		case pins.ProblemMismatch:
			hs = append(hs, hint{"if the repository is the right one, pin its version again", "fdl lock add NAME REPO REV"})
		}
	}
	return hs
}

// carryLocation gives the hint commands the repository the failed command
// was given: with --repo URL on the command line (or a repository the
// command opened from its arguments or a pin: globals.opened), a hint command that
// takes --repo and names none gets it, and the placeholder URL (the
// repository to check out) becomes it; with -C DIR, an fdl command that
// names no -C and no --repo runs in DIR too. So a hint runs as printed from
// where the user stands (TestHintsRun). root is the command tree that says
// which commands take --repo; nil leaves the hints as they are.
func carryLocation(root *cobra.Command, g *globals, hs []hint) []hint {
	repoURL := g.Repo
	if repoURL == "" {
		repoURL = g.opened
	}
	if root == nil || (repoURL == "" && g.Dir == "" && g.lockfile == "") {
		return hs
	}
	out := make([]hint, len(hs))
	for i, h := range hs {
		parts := strings.Split(h.run, " && ")
		for j, p := range parts {
			rest, ok := strings.CutPrefix(p, "fdl ")
			if !ok {
				continue
			}
			words := strings.Fields(rest)
			if repoURL != "" && slices.Contains(words, "URL") {
				rest = urlWord.ReplaceAllLiteralString(rest, shellQuote(repoURL))
			}
			named := slices.Contains(words, "-C") || slices.Contains(words, "--repo")
			// A pin names its repository: --locked takes no --repo.
			pinned := slices.Contains(words, "--locked")
			if g.lockfile != "" && (pinned || len(words) > 0 && words[0] == "lock") && !slices.Contains(words, "--lockfile") {
				rest += " --lockfile " + shellQuote(g.lockfile)
			}
			c, _, err := root.Find(words)
			switch {
			case named || err != nil:
			case repoURL != "" && !pinned && c.Flags().Lookup("repo") != nil:
				rest += " --repo " + shellQuote(repoURL)
			case g.Dir != "" && c.Name() != "checkout" && c.Name() != "init":
				rest = "-C " + shellQuote(g.Dir) + " " + rest
			}
			parts[j] = "fdl " + rest
		}
		out[i] = hint{h.do, strings.Join(parts, " && ")}
	}
	return out
}

// urlWord is the placeholder URL in a hint command.
var urlWord = regexp.MustCompile(`\bURL\b`)

// refRepairHints say how to point a damaged ref at a version again.
func refRepairHints(ref refs.Name) []hint {
	n := shellQuote(ref.Short())
	switch {
	case ref.IsBranch():
		return []hint{{"point the branch at a version again", "fdl branch -f " + n + " REV --backwards"}, {"what it held", "fdl reflog " + n}}
	case ref.IsTag():
		return []hint{{"point the tag at a version again", "fdl tag --repair " + n + " REV"}, {"what it held", "fdl reflog " + n}}
	}
	return nil
}

// listRefHints say how to list a repository's names (and its versions).
func listRefHints(where string, versions bool) []hint {
	f := repoFlag(where)
	h := []hint{{"branches", "fdl branch -l" + f}, {"tags", "fdl tag -l" + f}}
	if versions {
		h = append(h, hint{"versions", "fdl log" + f})
	}
	return h
}

// repoFlag is " --repo URL" for a repository the error names, "" when it
// names none.
func repoFlag(url string) string {
	if url == "" {
		return ""
	}
	return " --repo " + shellQuote(url)
}

// urlOr is url quoted, or the placeholder URL.
func urlOr(url string) string {
	if url == "" {
		return "URL"
	}
	return shellQuote(url)
}

// damagedHints say what to do about a retention file that does not parse.
var damagedHints = map[repo.Damaged][]hint{
	repo.DamagedPolicy: {{"correct the file, or replace it with the default plus the rules you give", "fdl retention --reset"}},
	repo.DamagedFloor:  {{"restore it from a backup, or delete it: every version whose catalog gc deleted keeps its marker (versions/<id>/retired.json), and the next gc moves the floor again", "fdl gc"}},
	repo.DamagedMarker: {{"restore it from a backup, or delete it and run gc: a version whose catalog is gone is retired again with a new marker (if the policy keeps that version, gc says so: lower the policy, or restore the catalog)", "fdl gc"}},
}

// gcStopHints say what to run after gc stopped.
func gcStopHints(e *gc.StopError) []hint {
	switch e.Why {
	case gc.StopFloorMoved:
		return []hint{{"another gc or fdl retention ran; plan again", "fdl gc"}}
	case gc.StopPolicyChanged:
		return []hint{{"apply the new policy", "fdl gc"}}
	case gc.StopRefOnRetired, gc.StopBranchKeepsRetired, gc.StopMoveToRetired:
		return []hint{{"take it back into retention", "fdl gc"}}
	case gc.StopNewCatalogUnreadable, gc.StopIntentLost:
		return []hint{{"run gc again", "fdl gc"}}
	case gc.StopAnotherGC:
		return []hint{{"if no gc is running, its intent expires 10 minutes after it was written, and gc then clears it", ""}}
	case gc.StopAheadOfFloor:
		return []hint{{"plan and move the floor", "fdl gc --yes"}}
	}
	return nil
}

// problemHints say what to do about some of verify's findings, by code; a
// command in braces ({gc --yes}) is an fdl command line, printed as the
// next steps are (globals.next: with the command's -C or --repo).
var problemHints = map[repo.Code]string{
	repo.CodeRefRetired:          "; run {gc} again, which takes a version a ref points at back into retention while its catalog is still there; if its catalog is gone, move the ref to a version in retention",
	repo.CodeRetiredNoMarker:     "; run {gc --yes} to write it",
	repo.CodeRetiredCatalog:      "; run {gc --yes} again",
	repo.CodeTempLeftover:        ": {gc --yes} deletes it once older than the grace period",
	repo.CodeVersionExtraFile:    "; delete it",
	repo.CodeDataSize:            "; put the file the version was published with back (from a backup or the writer's copy); if none is left, publish a version that no longer reads it",
	repo.CodeDataFooter:          "; put the file the version was published with back (from a backup or the writer's copy); if none is left, publish a version that no longer reads it",
	repo.CodeDataHTTPUnreachable: "; readers over http(s) need a server that serves each file under its name as written, without decoding %XX escapes in the path; else give them the repository's own location (its folder or object-store URL), where DuckDB reads these names",
	repo.CodeDataLocalPath:       "; copy those files into the repository's data/ under the same relative paths (readers then attach with DATA_PATH pointing there, OVERRIDE_DATA_PATH true), or publish a new version whose lake writes into the repository",
	repo.CodeSignatureBad:        "; the signed object or its signature was changed after signing (or it was made elsewhere): do not trust the version or tag; once the object is known to be as published, delete the signature (it is create-only, so a new one cannot be written over it) and have whoever signed it sign again",
	repo.CodeSignerNotAllowed:    "",
	repo.CodeVersionUnsigned:     ": {sign ID --sign-key FILE} signs it",
	repo.CodeTagUnsigned:         ": {sign TAG --sign-key FILE} signs it",
}

// problemMessage is a verify finding's message with the hints of the error
// it quotes and of its code.
func problemMessage(g *globals, p repo.Problem) string {
	advice := problemHints[p.Code]
	switch p.Code {
	case repo.CodeVersionUnsigned: // the object is the version's id
		advice = strings.Replace(advice, "{sign ID ", "{sign "+shellQuote(p.Object)+" ", 1)
	case repo.CodeTagUnsigned: // the object is the tag's ref name
		advice = strings.Replace(advice, "{sign TAG ", "{sign "+shellQuote(strings.TrimPrefix(p.Object, refs.TagsPrefix))+" ", 1)
	}
	msg := p.Message + fdlCommand.ReplaceAllStringFunc(advice, func(c string) string {
		return g.next(c[1 : len(c)-1])
	})
	if p.Err != nil {
		for _, h := range carryLocation(g.root, g, hints(p.Err)) {
			msg += " (hint: " + h.String() + ")"
		}
	}
	return msg
}

// fdlCommand is a command in braces in problemHints.
var fdlCommand = regexp.MustCompile(`\{[a-z][^{}]*\}`)

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

// signatureHints says what to do about a version or tag without a good
// signature where one is required.
func signatureHints(e *repo.SignatureError) []hint {
	id := string(e.Version)
	switch {
	case e.Local != "":
		return []hint{{"delete that signature file, push, then sign the published version", "fdl sign " + id + " --sign-key FILE"}}
	case e.Check.Status == repo.SigUnsigned:
		return []hint{{"whoever holds an allowed key signs it", "fdl sign " + id + " --sign-key FILE"}, {"which versions are signed, and by whom", "fdl log --show-signature --signers FILE"}}
	case e.Check.Status == repo.SigNotAllowed:
		return notAllowedHints(e)
	}
	return []hint{{"the record, the tag or the signature was changed after signing: check the repository", "fdl verify --signers FILE"}}
}

// notAllowedHints says what to do about a good signature whose key the
// allowed signers file does not allow: add the key when no line lists it;
// when a line lists it but does not allow it, change that line (its
// validity, its namespaces), or mind the certificate.
func notAllowedHints(e *repo.SignatureError) []hint {
	var (
		ve *signature.ValidityError
		ne *signature.NamespaceNotAllowedError
		ce *signature.CertificateError
	)
	switch err := e.Check.Err; {
	case errors.As(err, &ve):
		return []hint{{fmt.Sprintf("%s:%d lists key %s with valid-after/valid-before times that leave this signature out; if the key may sign at that time, change those options on that line", ve.File, ve.Line, e.Check.Key), ""}}
	case errors.As(err, &ne):
		return []hint{{fmt.Sprintf("%s:%d allows key %s only for namespaces %q; if it may sign for fdl, add fdl to that line's namespaces option (namespaces=\"%s,fdl\")", ne.File, ne.Line, e.Check.Key, ne.Allowed, ne.Allowed), ""}}
	case errors.As(err, &ce):
		return []hint{{fmt.Sprintf("the certificate is not one the authority on %s:%d vouches for here (%s): sign with a certificate it issued that is valid at the time checked and names an allowed principal", ce.File, ce.Line, ce.Reason), ""}}
	}
	return []hint{{"if you trust key " + e.Check.Key + ", add its public key to " + e.Signers + " (PRINCIPALS namespaces=\"fdl\" KEY-TYPE BASE64-KEY)", ""}}
}

// signingKeyHints says how to make a signing key usable: ssh-add takes
// the private key file (a .pub named is replaced by the file beside it
// without .pub), and runs only with an agent (SSH_AUTH_SOCK), started
// first when there is none.
func signingKeyHints(e *signature.SigningKeyError) []hint {
	key := e.Spec
	if k, ok := strings.CutSuffix(key, ".pub"); ok {
		key = "PRIVATE-KEY-FILE"
		if _, err := os.Stat(k); err == nil {
			key = k
		}
	} else if strings.HasPrefix(key, "key::") || strings.HasPrefix(key, "ssh-") {
		key = "PRIVATE-KEY-FILE"
	}
	add := "ssh-add " + shellQuote(key)
	if os.Getenv("SSH_AUTH_SOCK") == "" {
		add = "eval \"$(ssh-agent)\" && " + add
	}
	switch {
	case errors.Is(e, signature.ErrEncryptedKey), errors.Is(e, signature.ErrNotInAgent):
		return []hint{{"load the key into ssh-agent (fdl asks for no passphrase)", add}}
	case errors.Is(e, signature.ErrNoAgent):
		return []hint{{"start ssh-agent and load the key", add}}
	}
	return []hint{{"name a private key file (--sign-key FILE or $FDL_SIGNING_KEY), a public key file whose key ssh-agent holds, or key::PUBLIC-KEY", ""}}
}
