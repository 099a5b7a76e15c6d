package pins

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Sentinels of the typed errors below (errors.Is).
var (
	// ErrUnknownPin: the lockfile has no pin of that name.
	ErrUnknownPin = errors.New("no such pin")
	// ErrPinExists: Add was given a name pinned to another repository.
	ErrPinExists = errors.New("pin exists")
	// ErrMismatch: the repository's record of a pinned version is not the
	// version the pin describes (another seq, catalog size or sha256).
	ErrMismatch = errors.New("pin does not match its version")
	// ErrCheckFailed: Check found pins that cannot be read as pinned.
	ErrCheckFailed = errors.New("lockfile check failed")
	// ErrBehind: Check (with FailBehind) found pins whose ref moved on.
	ErrBehind = errors.New("pin behind its ref")
)

// NoLockfileError: no lockfile where one was looked for: Path when it was
// given (--lockfile), else no fdl.lock in Dir or a folder above it. It
// wraps lockfile.ErrNotFound.
type NoLockfileError struct {
	Path string
	Dir  string
}

func (e *NoLockfileError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("lockfile %s does not exist", e.Path)
	}
	return fmt.Sprintf("no %s in %s or any folder above it", lockfile.FileName, e.Dir)
}

// Unwrap returns lockfile.ErrNotFound.
func (e *NoLockfileError) Unwrap() error { return lockfile.ErrNotFound }

// UnknownPinError: Lockfile has no pin Name; Names are the pins it has.
type UnknownPinError struct {
	Name     string
	Lockfile string
	Names    []string
}

func (e *UnknownPinError) Error() string {
	have := "it has no pins"
	if len(e.Names) > 0 {
		have = "it pins " + strings.Join(e.Names, ", ")
	}
	return fmt.Sprintf("%s has no pin %q (%s)", e.Lockfile, e.Name, have)
}

// Unwrap returns ErrUnknownPin.
func (e *UnknownPinError) Unwrap() error { return ErrUnknownPin }

// PinExistsError: Add was asked to pin Name to Repository, and Lockfile
// pins that name to another repository (Has).
type PinExistsError struct {
	Name       string
	Lockfile   string
	Has        string
	Repository string
}

func (e *PinExistsError) Error() string {
	return fmt.Sprintf("%s already pins %s to repository %s, not %s", e.Lockfile, e.Name, store.RedactURL(e.Has), store.RedactURL(e.Repository))
}

// Unwrap returns ErrPinExists.
func (e *PinExistsError) Unwrap() error { return ErrPinExists }

// MismatchError: pin Name says version Version is Pin; the repository's
// record says seq Seq, a catalog of Size bytes with SHA256. The
// repository is not the one pinned (or the lockfile was edited).
type MismatchError struct {
	Name    string
	Version version.ID
	Pin     PinView
	// URL is the repository as opened: a URL, or the pin's folder path
	// resolved against the lockfile's folder (lockfile.RepositoryURL), so
	// a command given it reaches the repository from any folder.
	URL    string
	Seq    int64
	Size   int64
	SHA256 string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("pin %s: version %s in the repository is seq %d, catalog %d bytes sha256 %s; the lockfile pins seq %d, catalog %d bytes sha256 %s: the repository is not the one pinned, or the lockfile was edited",
		e.Name, e.Version, e.Seq, e.Size, e.SHA256, e.Pin.Seq, e.Pin.CatalogSize, e.Pin.CatalogSHA256)
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// CheckError: Check found Bad pins (each with its problem) in Lockfile.
type CheckError struct {
	Lockfile string
	Bad      []PinState
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("%s: %d of its pins cannot be read as pinned: %s", e.Lockfile, len(e.Bad), names(e.Bad))
}

// Unwrap returns ErrCheckFailed.
func (e *CheckError) Unwrap() error { return ErrCheckFailed }

// BehindError: pins of Lockfile whose followed ref moved on (Behind: each
// with the ref's version now).
type BehindError struct {
	Lockfile string
	Behind   []PinState
}

func (e *BehindError) Error() string {
	return fmt.Sprintf("%s: %d pin(s) behind their ref: %s", e.Lockfile, len(e.Behind), names(e.Behind))
}

// Unwrap returns ErrBehind.
func (e *BehindError) Unwrap() error { return ErrBehind }

// RefGoneError: pin Name follows Ref, which the repository no longer has.
type RefGoneError struct {
	Name string
	Ref  refs.Name
	Err  error
}

func (e *RefGoneError) Error() string {
	return fmt.Sprintf("pin %s follows %s, which the repository no longer has: %v", e.Name, e.Ref, e.Err)
}

func (e *RefGoneError) Unwrap() error { return e.Err }

func names(ps []PinState) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Name)
		if p.Problem != "" {
			b.WriteString(" (" + p.Problem + ")")
		} else if p.Head != "" {
			fmt.Fprintf(&b, " (%s is at seq %d, %s; pinned seq %d)", p.Pin.Ref, p.HeadSeq, p.Head, p.Pin.Seq)
		}
	}
	return b.String()
}

// OfflineError: the repository of pin Name could not be opened (Err), and
// the cache in folder Cache does not hold its catalog (version Version):
// there is nothing to attach.
type OfflineError struct {
	Name    string
	Version version.ID
	Cache   string
	Err     error
}

func (e *OfflineError) Error() string {
	return fmt.Sprintf("pin %s: the repository could not be read and the catalog of version %s is not in the cache %s: %v", e.Name, e.Version, e.Cache, e.Err)
}

func (e *OfflineError) Unwrap() error { return e.Err }
