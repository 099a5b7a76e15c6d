package repo

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// The errors of the package: sentinels, wrapped with names, and typed
// errors carrying the fields a caller needs to say what to do next. The
// package never names a command in an error: the CLI adds that
// (cmd/fdl/errors.go). Ref and revision errors are refs'.

// Sentinel errors of the repository side.
var (
	ErrNotRepository = errors.New("not an fdl repository")
	ErrNotEmpty      = errors.New("location is not empty")
	// ErrNested: a repository would lie inside another, or around one.
	ErrNested     = errors.New("repositories cannot nest")
	ErrChecksum   = errors.New("catalog does not match its record")
	ErrIncomplete = errors.New("version is incomplete")
	// ErrDataMissing is wrapped by the error of a push whose versions list
	// a data file of the repository that the store does not hold.
	ErrDataMissing = errors.New("a data file the version lists is not in the store")
	// ErrDataSize is wrapped by the error of a push whose versions list a
	// data file whose size in the store differs from the catalog's record.
	ErrDataSize = errors.New("a data file in the store is not the size its catalog records")
	// ErrDataLocal is wrapped by the error of a push to a repository that
	// is not a folder of this machine whose versions read data files by a
	// local path (its readers cannot reach them).
	ErrDataLocal = errors.New("the version reads data files by a local path")
	// ErrDataPath is wrapped by the error of a push whose versions read a
	// data file by a path holding a control character, which fdl cannot
	// place (docs/spec.md §9, §16 Paths).
	ErrDataPath = errors.New("the version reads a data file by a path fdl cannot place")
	// ErrExtraFiles is wrapped by the error for a version folder that holds
	// files besides the version's own.
	ErrExtraFiles = errors.New("the version folder holds files that are not the version's")
	// ErrFormatUpgrade is wrapped by the error of a push that would move a
	// branch to a version with a newer DuckLake format or a newer DuckDB
	// storage version than the one it holds, without
	// PushOptions.AllowFormatChange.
	ErrFormatUpgrade = errors.New("push would move the branch to a newer catalog format")
	// ErrFormatChange is wrapped by the error of a move that would change
	// the set of DuckDB releases that read a branch, up or down, without
	// AllowFormatChange (an upgrade wraps ErrFormatUpgrade too).
	ErrFormatChange = errors.New("the move would change which DuckDB releases read the branch")
)

// Sentinel errors of publishing and of bad input.
var (
	ErrNothingToPush    = errors.New("nothing to push")
	ErrInvalidArguments = errors.New("invalid arguments")
)

// Sentinel errors of retention (gc's own are package gc's).
var (
	// ErrRetired: the version left retention; its catalog is (or is about
	// to be) deleted, its record stays. *RetiredError wraps it.
	ErrRetired = errors.New("version is out of retention")
	// ErrRetentionConflict: the policy or the floor changed between read and
	// write (another gc or a policy change); nothing was written.
	ErrRetentionConflict = errors.New("retention settings changed concurrently")
)

// NotRepositoryError: there is no fdl.json at URL. It wraps
// ErrNotRepository.
// ReadOnly is set when the store is never written (http(s)): no
// repository can be made there. IsWorkdir is set when URL is a working
// directory (it holds .fdl/state.json). Workdir names the working
// directory whose state.json named URL, when it was opened for one (the
// repository may have moved).
type NotRepositoryError struct {
	URL       string
	ReadOnly  bool
	IsWorkdir bool
	Workdir   string
	// HTML: the server answered the read of fdl.json with an HTML page
	// (store.HTMLAnswerError): a web site's page, or a web app's fallback
	// for paths it has no file for.
	HTML bool
	// Reader: the repository was opened to be read for a pin (a
	// lockfile's repository): making one there is no remedy.
	Reader bool
	// NoCache says why the reader's cache is no way out either (the
	// catalog is not cached; a signature is checked against the
	// repository); "" when it may be.
	NoCache string
	// NoFolder: URL is a folder path, and no folder is there.
	NoFolder bool
}

func (e *NotRepositoryError) Error() string {
	switch {
	case e.Workdir != "":
		return fmt.Sprintf("%s: %v (no %s there): the repository of the working directory %s is missing; it may have moved or been deleted: check the location, and if it moved, set \"repository\" in %s to its new URL", e.URL, ErrNotRepository, ConfigKey, e.Workdir, filepath.Join(e.Workdir, WorkdirStateFile))
	case e.IsWorkdir:
		return fmt.Sprintf("%s: %v: it is a working directory (it holds %s), not a repository; run the command inside it, or pass its repository's URL", e.URL, ErrNotRepository, WorkdirStateFile)
	case e.HTML:
		return fmt.Sprintf("%s: %v: the server answered %s with an HTML page, not the file: the URL is likely wrong (a web site's page, or a web app that answers every path it has no file for with its own page); check the URL: it must name the folder that holds %s", e.URL, ErrNotRepository, ConfigKey, ConfigKey)
	case e.ReadOnly:
		return fmt.Sprintf("%s: %v (no %s there); check the URL: a repository is read over http(s), and fdl cannot create one there (make it at its own location, a folder or object store, and publish that)", e.URL, ErrNotRepository, ConfigKey)
	case e.NoFolder:
		return fmt.Sprintf("%s: %v: there is no such folder; check the path", e.URL, ErrNotRepository)
	}
	return fmt.Sprintf("%s: %v (no %s there); check the URL", e.URL, ErrNotRepository, ConfigKey)
}

func (e *NotRepositoryError) Unwrap() error { return ErrNotRepository }

// RefusedError says why a push did not move a branch (docs/spec.md §10.2,
// §4.3): the way on is to check the branch out again and redo the change.
// It wraps refs.ErrRefused.
type RefusedError struct {
	Branch   refs.Name
	Current  version.ID // what the branch holds now
	Proposed version.ID // what the push wanted it to hold
	// Race is true when the branch moved between the read and the
	// compare-and-swap (another push won).
	Race bool
	// URL is the repository's URL.
	URL string
}

func (e *RefusedError) Error() string {
	if e.Race && e.Current == "" {
		// The branch was deleted between the read and the compare-and-swap.
		return fmt.Sprintf("push to %s refused: another writer deleted the branch while the push ran (lost the race for %s); nothing was moved: push again, which creates it anew, or push to another branch",
			e.Branch.Short(), e.Proposed)
	}
	why := "it is not a fast-forward: the branch holds %s, which is not an ancestor of %s"
	if e.Race {
		why = "another push moved it to %s first (lost the race for %s)"
	}
	return fmt.Sprintf("push to %s refused: "+why+"; nothing was moved: check out %s again and redo the change on top of it",
		e.Branch.Short(), e.Current, e.Proposed, e.Branch.Short())
}

func (e *RefusedError) Unwrap() error { return refs.ErrRefused }

// ChecksumError reports a catalog whose bytes differ from its record
// (docs/spec.md §10.5). It wraps ErrChecksum.
type ChecksumError struct {
	Version           version.ID
	WantSize, GotSize int64
	WantSHA, GotSHA   string
	Location          string
	// Hint says what to do; a default is used when empty.
	Hint string
}

func (e *ChecksumError) Error() string {
	hint := e.Hint
	if hint == "" {
		hint = "the copy in the store is damaged: restore it from a backup"
	}
	return fmt.Sprintf("version %s: %s does not match its record: record says %d bytes, sha256 %s; found %d bytes, sha256 %s; %s",
		e.Version, e.Location, e.WantSize, e.WantSHA, e.GotSize, e.GotSHA, hint)
}

func (e *ChecksumError) Unwrap() error { return ErrChecksum }

// DataMissingError: the versions of a push list data files of the
// repository that the store does not hold (gc deleted files no catalog
// listed, once older than the grace period). It wraps ErrDataMissing.
type DataMissingError struct {
	Version version.ID
	Seq     int64
	Missing []string // keys, at most 5 of them
	Count   int      // all that are missing
}

func (e *DataMissingError) Error() string {
	return fmt.Sprintf("version %s (seq %d) lists %d data file(s) the store does not hold (%s): %v; nothing was pushed. Was the working catalog written long ago? gc deletes files no catalog lists once older than the grace period. Check out the branch again and redo the change",
		e.Version, e.Seq, e.Count, strings.Join(e.Missing, ", "), ErrDataMissing)
}

func (e *DataMissingError) Unwrap() error { return ErrDataMissing }

// DataSizeError: the versions of a push list data files whose size in the
// store differs from the file_size_bytes their catalog records (a file
// replaced or cut short after DuckDB wrote it; docs/spec.md §23). It wraps
// ErrDataSize.
type DataSizeError struct {
	Version version.ID
	Seq     int64
	Files   []string // "key: N bytes in the store, M recorded", at most 5
	Count   int      // all that differ
}

func (e *DataSizeError) Error() string {
	return fmt.Sprintf("version %s (seq %d) lists %d data file(s) whose size in the store is not the one its catalog records (%s): %v; nothing was pushed: readers would fail on them or read other rows",
		e.Version, e.Seq, e.Count, strings.Join(e.Files, "; "), ErrDataSize)
}

func (e *DataSizeError) Unwrap() error { return ErrDataSize }

// LocalDataError: a push to a repository in an object store (or served
// over HTTP) whose versions read data files by a path of this machine's
// file system (a local data_path): no reader of the repository can reach
// them. It wraps ErrDataLocal.
type LocalDataError struct {
	Version version.ID
	Seq     int64
	Where   string   // the repository, as messages name it
	Paths   []string // at most 5 of them
	Count   int      // all of them
}

func (e *LocalDataError) Error() string {
	return fmt.Sprintf("version %s (seq %d) reads %d data file(s) by a local path (%s), which readers of %s cannot reach: %v; nothing was pushed. Write the lake's data into the repository (a working catalog checked out from it has its data_path there) or into a store its readers reach, then commit again",
		e.Version, e.Seq, e.Count, strings.Join(e.Paths, ", "), e.Where, ErrDataLocal)
}

func (e *LocalDataError) Unwrap() error { return ErrDataLocal }

// DataPathError: a push whose versions read data files (or have a
// table's folder) by a path holding a control character, which fdl cannot
// place (retention.ErrPath): gc refuses to plan and verify --data reports
// such a path, so the version is not published. It wraps ErrDataPath.
type DataPathError struct {
	Version version.ID
	Seq     int64
	Paths   []string // at most 5 of them, each with why (the normaliser's error)
	Count   int      // all of them
	// Disputed: the paths lie in the repository's data folder as written,
	// but DuckDB reads them elsewhere (the repository's location holds a
	// '?', which DuckDB reads as the start of query parameters); else they
	// hold a control character.
	Disputed bool
}

func (e *DataPathError) Error() string {
	if e.Disputed {
		return fmt.Sprintf("version %s (seq %d) reads %d data file(s) by a path that DuckDB reads outside the repository (%s): %v; nothing was pushed. The repository's location holds a '?', which DuckDB reads as the start of query parameters, so no DuckDB reader or writer reaches its data folder: publish from a repository at a location without '?'",
			e.Version, e.Seq, e.Count, strings.Join(e.Paths, "; "), ErrDataPath)
	}
	return fmt.Sprintf("version %s (seq %d) reads %d data file(s) by a path no reader can rely on (%s): %v; nothing was pushed. A relative data_path is resolved by DuckDB against each reader's working directory: set an absolute one in the working catalog's ducklake_metadata (key 'data_path'), or import the lake again, which resolves it. A path holding a control character: give the file a plain name (rename it, or remove it from its table). Then commit again",
		e.Version, e.Seq, e.Count, strings.Join(e.Paths, "; "), ErrDataPath)
}

func (e *DataPathError) Unwrap() error { return ErrDataPath }

// LineageError: a version a push would upload does not follow its first
// parent (version.CheckChild: seq, id order, snapshots, created_at), so
// its record was changed after commit or made by another tool. It wraps
// version.ErrBadRecord; nothing is uploaded.
type LineageError struct {
	Version  version.ID
	Parent   version.ID
	Problems []version.LineageProblem
}

func (e *LineageError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Code + ": " + p.Message
	}
	return fmt.Sprintf("local version %s does not follow its parent %s (%s): %v; nothing was pushed: its record was changed after commit, or made by another tool. Check out the branch again and redo the change",
		e.Version, e.Parent, strings.Join(msgs, "; "), version.ErrBadRecord)
}

func (e *LineageError) Unwrap() error { return version.ErrBadRecord }

// HistoryRewrittenError: a catalog (Where: the working catalog at commit,
// a local version at push) read at snapshot Snapshot, where version
// Version (seq Seq) ends, does not show the metadata rows that version
// published there (docs/spec.md §24: the digests differ in Change's
// table). Rows of snapshots at or before Snapshot were changed in place —
// a data file's path or size, an inlined value — though the counts may
// agree. Table names the DuckLake table (schema.table) when the change is
// in one and the version knew it. Err, when set, is wrapped (commit:
// workdir.ErrNotDescendant). Nothing is committed or pushed.
type HistoryRewrittenError struct {
	Where    string
	Version  version.ID
	Seq      int64
	Snapshot int64
	Change   meta.DigestChange
	Table    string
	Push     bool
	// URL is the repository's location as given and Branch the branch
	// the work is on, for the hint ("" when not known).
	URL, Branch string
	Err         error
}

func (e *HistoryRewrittenError) Error() string {
	what := e.Change.String()
	if e.Table != "" {
		what = "table " + e.Table + ", " + what
	}
	done := "nothing was committed"
	if e.Push {
		done = "nothing was pushed"
	}
	msg := fmt.Sprintf("%s rewrote what version %s (seq %d) published at snapshot %d: %s; the history a version published is read the same from every later version, so %s",
		e.Where, e.Version, e.Seq, e.Snapshot, what, done)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *HistoryRewrittenError) Unwrap() error { return e.Err }

// NestedError: init of Location refused because it lies inside the
// repository at Other (Inside) or holds the repository at Other. A
// repository inside another's folder — in its data/ above all — is taken
// by the outer one's gc for files no catalog lists and deleted once older
// than the grace period. It wraps ErrNested (and ErrNotEmpty when Other is
// inside).
type NestedError struct {
	Location string
	Other    string
	Inside   bool
}

func (e *NestedError) Error() string {
	if e.Inside {
		return fmt.Sprintf("init %s: it lies inside the repository at %s: %v (the outer repository's gc would take the new one's objects for files of its own that no catalog lists, and delete them); choose a location outside %s", e.Location, e.Other, ErrNested, e.Other)
	}
	return fmt.Sprintf("init %s: it holds the repository at %s: %v (this repository's gc would take that one's objects for files of its own); choose an empty folder or a new prefix", e.Location, e.Other, ErrNested)
}

func (e *NestedError) Unwrap() []error {
	if e.Inside {
		return []error{ErrNested}
	}
	return []error{ErrNested, ErrNotEmpty}
}

// ShortGraceError: a grace period below retention.MinGrace was asked for
// without allowing it: gc would delete the data files working catalogs
// wrote and did not commit and push within that time. It wraps
// ErrInvalidArguments.
type ShortGraceError struct {
	Grace retention.Duration
	// With are the other policy flags of the command that asked, as it
	// wrote them ("--keep-last 1"), for the hint that repeats it; "" for
	// none.
	With string
}

func (e *ShortGraceError) Error() string {
	return fmt.Sprintf("a grace period of %s is below %s: gc would delete the data files a working catalog wrote but did not commit and push within %s, and the uploads and data files of a push that takes longer than %s from its first upload to its branch's move, losing that work: %v; ask for it on purpose to set it",
		e.Grace, retention.MinGrace, e.Grace, e.Grace, ErrInvalidArguments)
}

func (e *ShortGraceError) Unwrap() error { return ErrInvalidArguments }

// ErrGCDeleting is wrapped by the error of a push that needs an object a
// running gc may be deleting (its deletion intent lists it).
var ErrGCDeleting = errors.New("a running gc may delete what the push needs")

// GCDeletingError: a push found, after its ref log entry and before its
// compare-and-swap, a deletion intent of a gc that lists objects the
// versions it publishes need; nothing was moved (and what it uploaded was
// removed). Running push again once that gc is done goes only if the gc
// kept the files; when it deleted them the push is refused with
// *DataMissingError, so the message gives no such advice (the command
// layer's hint is the path that always works: a fresh checkout, the change
// redone). It wraps ErrGCDeleting.
type GCDeletingError struct {
	Intent    string // the intent's key
	StartedAt time.Time
	By        string
	Keys      []string // at most 5 of them
	Count     int
}

func (e *GCDeletingError) Error() string {
	return fmt.Sprintf("a gc started %s by %s may delete %d object(s) this push needs (%s; its intent %s): %v; nothing was moved",
		e.StartedAt.UTC().Format(time.RFC3339), e.By, e.Count, strings.Join(e.Keys, ", "), e.Intent, ErrGCDeleting)
}

func (e *GCDeletingError) Unwrap() error { return ErrGCDeleting }

// ExtraFilesError: a version folder holds objects besides the version's
// catalog, dataset.json, record and retirement marker (a
// ducklake.duckdb.wal, which a reader's DuckDB would replay over the
// frozen catalog). The version is not handed to readers until they are
// removed. It wraps ErrExtraFiles.
type ExtraFilesError struct {
	Version version.ID
	Keys    []string
}

func (e *ExtraFilesError) Error() string {
	return fmt.Sprintf("version %s: its folder holds %s besides the version's own files: %v; a reader's DuckDB would read them with the catalog (it replays a .wal beside a database file) and see a state the record does not describe, so the version is not handed out until they are removed",
		e.Version, strings.Join(e.Keys, ", "), ErrExtraFiles)
}

func (e *ExtraFilesError) Unwrap() error { return ErrExtraFiles }

// FormatChangeError is the refusal of a move of a branch (a push, a
// request's approval, branch -f) that would change the set of DuckDB
// releases that read it: to a newer catalog format or storage version
// (readers on the older release would lose the branch), or to an older or
// other one (readers on the newer release would). It wraps ErrFormatChange,
// and ErrFormatUpgrade for an upgrade.
type FormatChangeError struct {
	Branch refs.Name
	Change FormatChange
	// Request is set when the move was a request's approval; Move when it
	// was branch -f (Backwards: a move back, which needs --backwards too).
	Request   refs.Name
	Move      bool
	Backwards bool
	// Mirror is set when the move was a mirror's (package mirror): the
	// destination repository, as messages name it.
	Mirror string
}

func (e *FormatChangeError) Error() string {
	who := "readers on the older DuckDB release lose the branch"
	if !e.Change.Upgrade {
		who = "the DuckDB releases that read the branch change, and readers on the releases that read it now may lose it"
	}
	what, again := fmt.Sprintf("push to %s", e.Branch.Short()), "push again allowing the format change"
	switch {
	case e.Request != "":
		what, again = fmt.Sprintf("approving %s into %s", e.Request.Short(), e.Branch.Short()), "approve again allowing the format change"
	case e.Move:
		what, again = fmt.Sprintf("moving %s", e.Branch.Short()), "move it again allowing the format change"
	case e.Mirror != "":
		what, again = fmt.Sprintf("mirroring %s to %s", e.Branch.Short(), e.Mirror), "mirror again allowing the format change"
	}
	return fmt.Sprintf("%s refused: it would move the branch from %s (version %s) to %s (version %s): %s; nothing was moved. To do it anyway, %s, and keep the other version under a tag or branch for its readers",
		what, e.Change.From, e.Change.From.Version, e.Change.To, e.Change.To.Version, who, again)
}

func (e *FormatChangeError) Unwrap() []error {
	if e.Change.Upgrade {
		return []error{ErrFormatUpgrade, ErrFormatChange} // the narrower kind first
	}
	return []error{ErrFormatChange}
}

// RetiredError says a version is out of retention and since when: its
// record stays (show it), its catalog cannot be used. It wraps ErrRetired.
type RetiredError struct {
	ID  version.ID
	Seq int64
	// At is when it left retention (the floor move), Floor that move's
	// generation; Marked is false while only the floor retires it.
	At     time.Time
	Floor  int64
	Reason string
	Marked bool
}

func (e *RetiredError) Error() string {
	return fmt.Sprintf("version %s (seq %d) left retention on %s (floor %d: %s): its catalog is deleted or about to be, its record stays; use a version in retention: a branch head, a tag, or a recent one",
		e.ID, e.Seq, e.At.UTC().Format(time.RFC3339), e.Floor, e.Reason)
}

func (e *RetiredError) Unwrap() error { return ErrRetired }

// RetiredBaseError: a push builds on a version out of retention (the data
// files only its catalog listed may be gone). It wraps the *RetiredError.
type RetiredBaseError struct{ Base *RetiredError }

func (e *RetiredBaseError) Error() string {
	return fmt.Sprintf("push refused: it builds on %v; check out a version in retention and redo the change there", e.Base)
}

func (e *RetiredBaseError) Unwrap() error { return e.Base }

// Damaged says which retention file does not parse.
type Damaged string

// The retention files.
const (
	DamagedPolicy Damaged = "policy" // retention/policy.json
	DamagedFloor  Damaged = "floor"  // retention/floor.json
	DamagedMarker Damaged = "marker" // versions/<id>/retired.json
)

// DamagedError: a retention file does not parse. What names which (the
// way out differs: the policy can be reset, the floor moved again, a
// marker written again by gc). It wraps retention.ErrInvalid.
type DamagedError struct {
	What     Damaged
	Location string
	Err      error // the parse error, wrapping retention.ErrInvalid
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%s (%s): %v", withoutInvalid(e.Err), e.Location, retention.ErrInvalid)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// OrphanExistsError: an orphan checkout (a new history) was asked for a
// branch that exists; a version committed there could never be pushed to
// it (not a fast-forward).
type OrphanExistsError struct {
	Branch refs.Name
	Head   version.ID
}

func (e *OrphanExistsError) Error() string {
	return fmt.Sprintf("an orphan checkout starts a new history, but branch %s exists (at %s) and would refuse it as not a fast-forward: name a new branch: %v", e.Branch.Short(), e.Head, ErrInvalidArguments)
}

func (e *OrphanExistsError) Unwrap() error { return ErrInvalidArguments }

// NoMergeBaseError: two versions share no ancestor (two histories that
// never met: an orphan branch). It wraps refs.ErrUnknownRev.
type NoMergeBaseError struct{ A, B version.ID }

func (e *NoMergeBaseError) Error() string {
	return fmt.Sprintf("versions %s and %s share no ancestor, so they have no merge base: %v", e.A, e.B, refs.ErrUnknownRev)
}

func (e *NoMergeBaseError) Unwrap() error { return refs.ErrUnknownRev }

// DamagedRecordError: a version's version.json is there but does not
// parse or validate. The record is written once, by the push that made the
// version, and a copy of its bytes is kept in the version's history pack
// (docs/spec.md §18), from which it can be written back. It wraps Err
// (which wraps version.ErrBadRecord).
type DamagedRecordError struct {
	Version  version.ID
	Location string // version.json's location
	Pack     string // the key of the version's history pack
	Err      error
}

func (e *DamagedRecordError) Error() string { return e.Err.Error() }

func (e *DamagedRecordError) Unwrap() error { return e.Err }

// Sentinel errors of signatures (docs/spec.md §20).
var (
	// ErrSignature is wrapped by the refusal of a version or tag that has
	// no good signature where one is required (*SignatureError).
	ErrSignature = errors.New("no good signature")
	// ErrSignatureExists is wrapped by the refusal to sign what already
	// has a signature object (*SignatureExistsError): signatures are
	// create-only.
	ErrSignatureExists = errors.New("a signature object is already there")
)

// SignatureError: Version (or Tag, naming Version) has no good signature
// where one is required: Check says what was found (unsigned, a signature
// that does not verify, one by a key the allowed signers file does not
// allow). Local is the file of a version committed here, when it is one
// (a push refuses to upload a signature that does not verify). It wraps
// ErrSignature and the signature package's error, if any.
type SignatureError struct {
	Version version.ID
	Tag     string
	Check   SignatureCheck
	Local   string
	// Signers is the allowed signers file the signature was judged by.
	Signers string
}

func (e *SignatureError) Error() string {
	what := "version " + string(e.Version)
	if e.Tag != "" {
		what = fmt.Sprintf("tag %s (version %s)", e.Tag, e.Version)
	}
	switch {
	case e.Local != "":
		return fmt.Sprintf("local %s: its signature %s does not verify over its record (%s): %v; nothing was pushed: delete that file, push, and sign the published version", what, e.Local, e.Check.Reason, ErrSignature)
	case e.Check.Status == SigUnsigned:
		return fmt.Sprintf("%s is not signed (no %s): %v", what, e.Check.Object, ErrSignature)
	case e.Check.Status == SigNotAllowed:
		return fmt.Sprintf("%s: its signature %s is not by an allowed signer: %s: %v", what, e.Check.Object, e.Check.Reason, ErrSignature)
	}
	return fmt.Sprintf("%s: its signature %s does not verify (%s): %v; the signed object or the signature changed after signing, or it was not made for fdl", what, e.Check.Object, e.Check.Reason, ErrSignature)
}

func (e *SignatureError) Unwrap() []error {
	if e.Check.Err != nil {
		return []error{ErrSignature, e.Check.Err}
	}
	return []error{ErrSignature}
}

// SignatureExistsError: Key, the signature of Version (or of Tag naming
// it), is already in the store; a signature object is create-only, so
// nothing was written. It wraps ErrSignatureExists.
type SignatureExistsError struct {
	Key     string
	Version version.ID
	Tag     string
	// By is the fingerprint of the key that made the existing signature,
	// when it was read (tag --sign with another key); "" otherwise.
	By string
}

func (e *SignatureExistsError) Error() string {
	what := "version " + string(e.Version)
	if e.Tag != "" {
		what = fmt.Sprintf("tag %s (version %s)", e.Tag, e.Version)
	}
	by := ""
	if e.By != "" {
		by = " by another key (" + e.By + ")"
	}
	return fmt.Sprintf("%s is already signed%s: %s exists: %v (signatures are create-only, one per object); nothing was written", what, by, e.Key, ErrSignatureExists)
}

func (e *SignatureExistsError) Unwrap() error { return ErrSignatureExists }

// SignersReadError: the allowed signers file File cannot be read. It
// wraps the file's error.
type SignersReadError struct {
	File string
	Err  error
}

func (e *SignersReadError) Error() string {
	return fmt.Sprintf("allowed signers file %s: %v", e.File, e.Err)
}

func (e *SignersReadError) Unwrap() error { return e.Err }
