package repo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Local is what a working directory adds to a command on its repository:
// the branch it was checked out for, the newest version it knows to be in
// the store, its base, the versions committed there and not pushed yet,
// and its working catalog. It is an input value (package workdir makes it,
// Workdir.Local): the repository never holds a working directory. A nil
// *Local is a command run outside any working directory.
type Local struct {
	// Dir is the working directory's folder (absolute).
	Dir string
	// Branch is the short name of the branch push moves by default.
	Branch string
	// Upstream is the newest version of Base's history known to be in the
	// store ("" before the first push).
	Upstream version.ID
	// Base is the record of the version the working catalog descends from
	// (nil before the first version).
	Base *version.Record
	// Pending are the versions committed there and not pushed, oldest
	// first (Upstream's child up to Base).
	Pending []Pending
	// Catalog is the working catalog's path.
	Catalog string
	// CheckCatalog (nil: none) is called before the working catalog is
	// read (fdl diff against it): the working directory's own refusals,
	// as its typed errors (the catalog gone, a pull stopped midway).
	CheckCatalog func() error
}

// DefaultRev is the revision log, show and new refs use without one: the
// working directory's upstream (its newest pushed version), else its
// branch; "HEAD" outside a working directory (l nil).
func (l *Local) DefaultRev() string {
	switch {
	case l == nil:
		return "HEAD"
	case l.Upstream != "":
		return string(l.Upstream)
	}
	return l.Branch
}

// noVersionYet returns *NoLocalVersionError in place of err when err says
// that l's default revision names nothing before its first commit: no
// version here, and none of its branch in the repository. Any other err
// is returned as it is.
func (l *Local) noVersionYet(err error) error {
	if l == nil || l.Base != nil || len(l.Pending) > 0 || l.Upstream != "" || !errors.Is(err, refs.ErrUnknownRev) {
		return err
	}
	return &NoLocalVersionError{Branch: l.Branch}
}

// NoLocalVersionError: a command that reads a working directory's version
// by default (log, show, attach) ran before its first commit, and its
// branch has no version in the repository either. It wraps
// refs.ErrUnknownRev.
type NoLocalVersionError struct{ Branch string }

func (e *NoLocalVersionError) Error() string {
	return fmt.Sprintf("branch %s has no version yet, here or in the repository: this working directory's first commit makes one: %v", e.Branch, refs.ErrUnknownRev)
}

func (e *NoLocalVersionError) Unwrap() error { return refs.ErrUnknownRev }

// newestFirst returns the unpushed versions log and show start from,
// newest first: all of them when rev is "", the one rev names by id
// (byPrefix) and those committed before it; none otherwise.
func (l *Local) newestFirst(rev string) []*version.Record {
	if l == nil {
		return nil
	}
	end := len(l.Pending)
	if rev != "" {
		rec := l.byPrefix(rev)
		if rec == nil {
			return nil
		}
		for end > 0 && l.Pending[end-1].Record.ID != rec.ID {
			end--
		}
	}
	out := make([]*version.Record, 0, end)
	for i := end - 1; i >= 0; i-- {
		out = append(out, l.Pending[i].Record)
	}
	return out
}

// unknownHere returns *NotHereError in place of err when err says that
// rev names nothing in the repository and l has versions committed and
// not pushed (a user who named one of them by its seq or as HEAD~1, as
// fdl log lists them, reads why it is not found); any other err is
// returned as it is.
func (l *Local) unknownHere(rev string, err error) error {
	if l == nil || len(l.Pending) == 0 || !errors.Is(err, refs.ErrUnknownRev) {
		return err
	}
	e := &NotHereError{Rev: rev, Err: err}
	var ns *refs.NoSuchRevError
	var ny *refs.NoVersionYetError
	var tf *refs.TooFarError
	var nq *refs.NoSeqError
	base := rev
	if i := strings.IndexAny(rev, "~^"); i > 0 {
		base = rev[:i]
	}
	if rec := l.byPrefix(base); rec != nil {
		e.Version, e.Walk = rec.ID, base != rev
	} else if !errors.As(err, &ns) && !errors.As(err, &ny) && !errors.As(err, &tf) && !errors.As(err, &nq) {
		return err
	}
	for _, p := range l.Pending {
		e.Unpushed = append(e.Unpushed, p.Record.ID)
	}
	return e
}

// NotHereError: a revision named nothing in the repository, in a working
// directory with versions committed and not pushed. Version is set when
// rev names one of them by id (a command that reads the repository's
// versions only, as tag and branch do, cannot take it before its push);
// Unpushed lists them all, oldest first. Err is the repository's answer.
// It wraps refs.ErrUnknownRev (not Err: its hints are for a repository
// with nothing committed).
type NotHereError struct {
	Rev      string
	Version  version.ID
	Unpushed []version.ID
	Err      error
	// Walk: rev walks back from Version (ID~N, ID^), which only the
	// repository's history answers.
	Walk bool
}

func (e *NotHereError) Error() string {
	if e.Walk {
		return fmt.Sprintf("revision %q walks back from version %s, committed in this working directory and not pushed: name the version you mean by its id here (fdl log lists them): %v", e.Rev, e.Version, refs.ErrUnknownRev)
	}
	if e.Version != "" {
		return fmt.Sprintf("revision %q is version %s, committed in this working directory and not pushed: the repository does not have it yet: %v", e.Rev, e.Version, refs.ErrUnknownRev)
	}
	return fmt.Sprintf("%s; the %d version(s) committed in this working directory and not pushed are named by their ids here (fdl log lists them), by seq and ~N once pushed", strings.TrimSuffix(e.Err.Error(), ": "+refs.ErrUnknownRev.Error()), len(e.Unpushed)) + ": " + refs.ErrUnknownRev.Error()
}

func (e *NotHereError) Unwrap() error { return refs.ErrUnknownRev }

// pending returns the unpushed version id, or nil.
func (l *Local) pending(id version.ID) *Pending {
	if l == nil {
		return nil
	}
	for i := range l.Pending {
		if l.Pending[i].Record.ID == id {
			return &l.Pending[i]
		}
	}
	return nil
}

// byPrefix returns the unpushed version whose id rev is (or is a prefix
// of at least 4 hex digits of), or nil (also when two match: the
// repository's resolution then says so).
func (l *Local) byPrefix(rev string) *version.Record {
	if l == nil || len(strings.ReplaceAll(rev, "-", "")) < 4 || strings.Trim(rev, "0123456789abcdef-") != "" {
		return nil
	}
	var found *version.Record
	for _, p := range l.Pending {
		if strings.HasPrefix(p.Record.ID.Hex(), strings.ReplaceAll(rev, "-", "")) {
			if found != nil {
				return nil
			}
			found = p.Record
		}
	}
	return found
}

// catalogOf returns the local frozen catalog of an unpushed version, or "".
func (l *Local) catalogOf(id version.ID) string {
	if p := l.pending(id); p != nil {
		if _, err := os.Stat(filepath.Join(p.Dir, version.CatalogFile)); err == nil {
			return filepath.Join(p.Dir, version.CatalogFile)
		}
	}
	return ""
}

// dataset reads dataset.json of an unpushed version. Errors:
// os.ErrNotExist when it is not local; the file's, version.ParseDataset's.
func (l *Local) dataset(id version.ID) (*version.Dataset, error) {
	p := l.pending(id)
	if p == nil {
		return nil, os.ErrNotExist
	}
	b, err := os.ReadFile(filepath.Join(p.Dir, version.DatasetFile))
	if err != nil {
		return nil, err
	}
	return version.ParseDataset(b, id)
}

// RecordsWith reads records and walks histories of the repository and of
// the working directory's unpushed versions (l may be nil): what refs'
// ancestry functions read (refs.RecordReader, refs.Walker).
func (r *Repo) RecordsWith(l *Local) LocalRecords { return r.records(l) }

// records is RecordsWith.
func (r *Repo) records(l *Local) withLocal {
	var local []history.Entry
	extra := map[version.ID]*version.Record{}
	if l != nil {
		for _, p := range l.Pending {
			if e, err := p.entry(); err == nil {
				local = append(local, e)
			}
			extra[p.Record.ID] = p.Record
		}
		if b := l.Base; b != nil && extra[b.ID] == nil {
			extra[b.ID] = b
		}
	}
	return withLocal{r, r.hist.WithLocal(local), extra}
}
