package repo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/fdl-dev/fdl/cache"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

// Shown is one version as 'fdl show' presents it: its record and dataset,
// its short id and the DuckDB statement a reader attaches it with; for a
// version out of retention, when and why it left instead of the dataset
// and with no statement (docs/spec.md §10.7: the record stays, the catalog
// goes). Its JSON is 'fdl show --json'.
type Shown struct {
	Record  *version.Record  `json:"record"`
	Dataset *version.Dataset `json:"dataset,omitempty"`
	Short   string           `json:"short_id"`
	// Retirement says when and why the version left retention (nil while
	// it is in retention).
	Retirement *Retirement `json:"retirement,omitempty"`
	// Attach is "" when the version cannot be attached: retired, or its
	// catalog does not match its record.
	Attach string `json:"attach"`
	// DataRead is where a reader of the repository at this location reads
	// the version's data (the attach line's DATA_PATH with
	// OVERRIDE_DATA_PATH), when that is not the data path the catalog
	// records: a mirror, or another URL of the same store. "" otherwise.
	DataRead string `json:"data_read,omitempty"`
	// Verified is true when the catalog's size and sha256 were checked
	// against the record (false with ShowOptions.NoVerify, and for a
	// retired version).
	Verified bool `json:"verified"`
	// Readers say which DuckDB releases read the version: the record's, or
	// for a record written before fdl recorded them, derived from its
	// storage version and format (ReadersDerived true).
	Readers        meta.Readers `json:"readers"`
	ReadersDerived bool         `json:"readers_derived,omitempty"`
	// NeedsMigration is true when the version's DuckLake format is older
	// than ducklake.CurrentFormat: DuckDB 1.5.2 and newer refuse it, and
	// MigrateBranch publishes a version they read.
	NeedsMigration bool `json:"needs_migration"`
	// HTTPUnreachable lists the URLs DuckDB requests over http(s) for data
	// files of the version that the server answers 404 or with another
	// file (their names hold %XX escapes, which the server decodes:
	// docs/spec.md §23); empty elsewhere, and with NoVerify.
	HTTPUnreachable []string `json:"http_unreachable,omitempty"`
	// Branch is the branch rev named (or the working directory's, for a
	// local version); "" otherwise.
	Branch string `json:"branch,omitempty"`
	// Signature says who signed the record (docs/spec.md §20): judged by
	// ShowOptions.Signers, or only checked to verify without it.
	Signature *SignatureCheck `json:"signature,omitempty"`
	// Abbrev shortens the other ids shown (parents).
	Abbrev refs.Abbrev `json:"-"`
}

// Retirement says when and why a version left retention.
type Retirement struct {
	At     time.Time `json:"at"`
	Floor  int64     `json:"floor_generation"`
	Reason string    `json:"reason"`
	Marked bool      `json:"marked"`
}

// ShowOptions are the inputs of Show and Attach.
type ShowOptions struct {
	// NoVerify skips the catalog's sha256 (its size is still checked, one
	// Stat): the ATTACH statement is then handed out unverified.
	NoVerify bool
	// Alias is the database name of the ATTACH statement (default
	// "v<seq>").
	Alias string
	// Local is the working directory the command runs in (nil: none):
	// without a revision, Show gives its newest unpushed version, else its
	// upstream or branch's.
	Local *Local
	// Cache, when set, is the reader's catalog cache (docs/spec.md §21.1):
	// the version's catalog is taken from it, or downloaded into it once
	// and checked against the record as it arrives, and the statement
	// attaches that local copy with the repository's data path
	// (CachedAttachStatement). Versions committed in the working directory
	// and not pushed are read where they are, never cached.
	Cache *cache.Cache
	// Signers is an allowed signers file (LoadSigners) the record's
	// signature is judged by; "": it is only checked to verify.
	Signers string
	// RequireSigned refuses (*SignatureError) a version whose record has
	// no good signature by a signer Signers allows, before its catalog is
	// read and before any ATTACH statement is made.
	RequireSigned bool
	// noSignature skips the signature (Attach without RequireSigned:
	// its output does not say who signed, so it reads nothing for it).
	noSignature bool
}

// Show returns rev's version (default: defaultRev). Opened from a working
// directory with unpushed versions and without rev, it shows the newest
// of those, from the local copy. Before its ATTACH statement is given, the
// stored version's folder is checked (CheckVersionFolder, one listing:
// the catalog's size matches the record and nothing lies beside it) and
// its catalog against its record: size and sha256, streamed from the store
// (skipped with o.NoVerify). When a check fails, Show returns the Shown
// without a statement (Attach "") and the error, so a caller can still
// print the record. Errors: the Resolve errors, *ChecksumError,
// *ExtraFilesError, the store's.
func (r *Repo) Show(ctx context.Context, rev string, o ShowOptions) (*Shown, error) {
	s, err := r.show(ctx, rev, o)
	if s != nil {
		var recorded bool
		s.Readers, recorded = s.Record.EffectiveReaders()
		s.ReadersDerived = !recorded
		s.NeedsMigration = ducklake.NeedsMigration(s.Record.DuckLake.Format)
	}
	return s, err
}

// resolveShown resolves show's rev; "" is the working directory's default
// revision (l's; HEAD outside one), and a working directory's upstream
// that is its branch's head is named as the branch is (the same line as
// fdl attach BRANCH; one the branch moved on from names that version
// alone). It returns the revision to name the database after. Errors:
// ResolveRecord's; *NoLocalVersionError before a working directory's
// first version.
func (r *Repo) resolveShown(ctx context.Context, rev string, l *Local) (*version.Record, refs.Resolved, string, error) {
	byDefault := rev == ""
	if byDefault {
		rev = l.DefaultRev()
	}
	rec, rv, err := r.refs.ResolveRecord(ctx, rev)
	if err != nil {
		if byDefault {
			err = l.noVersionYet(err)
		} else {
			err = l.unknownHere(rev, err)
		}
		return nil, rv, rev, err
	}
	if byDefault && l != nil && l.Branch != "" {
		if b, err := refs.Branch(l.Branch); err == nil {
			if cur, err := r.refs.Read(ctx, b); err == nil && cur.ID == rec.ID {
				rev, rv.Ref = l.Branch, b
			}
		}
	}
	return rec, rv, rev, nil
}

func (r *Repo) show(ctx context.Context, rev string, o ShowOptions) (*Shown, error) {
	if err := CheckAlias(o.Alias); err != nil {
		return nil, err
	}
	local := o.Local.newestFirst(rev)
	if len(local) > 0 {
		abbrev, err := r.Abbrev(ctx, append(ids(local), local[0].Parents...)...)
		if err != nil {
			return nil, err
		}
		out := &Shown{Record: local[0], Short: abbrev.Short(local[0].ID), Abbrev: abbrev, Branch: o.Local.Branch}
		if err := r.showSignature(ctx, out, o); err != nil {
			return signatureRefused(out, err)
		}
		return r.showLocal(o.Local, out, o)
	}
	rec, rv, rev, err := r.resolveShown(ctx, rev, o.Local)
	if err != nil {
		return nil, err
	}
	abbrev, err := r.Abbrev(ctx, append([]version.ID{rec.ID}, rec.Parents...)...)
	if err != nil {
		return nil, err
	}
	out := &Shown{Record: rec, Short: abbrev.Short(rec.ID), Abbrev: abbrev}
	if rv.Ref.IsBranch() {
		out.Branch = rv.Ref.Short()
	}
	if err := r.showSignature(ctx, out, o); err != nil {
		return signatureRefused(out, err)
	}
	if ret, err := r.Retirement(ctx, rec.ID); err != nil {
		return nil, err
	} else if ret != nil {
		out.Retirement = &Retirement{At: ret.At, Floor: ret.Floor, Reason: ret.Reason, Marked: ret.Marked}
		return out, nil
	}
	if out.Dataset, err = r.Dataset(ctx, rec.ID); err != nil {
		return nil, err
	}
	if rec.DuckLake.DataPath == r.cfg.DataPath && r.DataLocation() != r.cfg.DataPath {
		out.DataRead = r.DataLocation() // as AttachStatement's OVERRIDE_DATA_PATH reads it
	}
	err = r.CheckVersionFolder(ctx, rec)
	alias := r.readerAlias(o, rev, rv.Ref, rec)
	if err == nil && o.Cache != nil {
		var local string
		if local, err = r.CachedCatalog(ctx, o.Cache, rec); err != nil {
			return out, err
		}
		out.Verified = true
		out.Attach = WithReaderNote(r.CachedAttachStatement(local, rec.DuckLake.DataPath, alias), rec.DuckLake.Format)
		return out, nil
	}
	if rp, ok := r.st.(store.ReaderPaths); ok && err == nil && !o.NoVerify {
		// Over http(s) the catalog is fetched (and checked) to find the
		// files DuckDB cannot reach there.
		out.HTTPUnreachable, err = r.readerUnreachable(ctx, rp, rec)
	} else if err == nil && !o.NoVerify {
		err = r.CheckCatalog(ctx, rec)
	}
	if err != nil {
		return out, err
	}
	out.Verified = !o.NoVerify
	out.Attach = WithReaderNote(r.AttachStatement(r.CatalogLocation(rec.ID), rec.DuckLake.DataPath, alias, true), rec.DuckLake.Format)
	return out, nil
}

// showLocal is Show of a version committed in the working directory and
// not pushed: its local files are checked against the record.
func (r *Repo) showLocal(l *Local, out *Shown, o ShowOptions) (*Shown, error) {
	rec := out.Record
	ds, err := l.dataset(rec.ID)
	if err != nil {
		return nil, err
	}
	p := l.pending(rec.ID)
	out.Dataset = ds
	if !o.NoVerify {
		if err := checkLocal(*p); err != nil {
			return out, err
		}
		out.Verified = true
	}
	out.Attach = WithReaderNote(r.AttachStatement(filepath.Join(p.Dir, version.CatalogFile), rec.DuckLake.DataPath, r.readerAlias(o, "", "", rec), true), rec.DuckLake.Format)
	return out, nil
}

// readerAlias is the database name of a reader's ATTACH line when none is
// asked for (ShowOptions.Alias). Where the revision names a ref, it stays
// the same from one version to the next, so saved SQL keeps working at
// the next release: the repository's name for its default branch
// ("sales"), the repository's and the ref's for another branch or a tag
// ("sales_dev", "sales_2025_final"); a revision that names one version (an
// id, main~2, main@12, an unpushed version) gives "v<seq>". In a
// working directory, no revision means its upstream version, named as
// its branch while it is the branch's head (so the line is the same in
// the working directory as outside it), else "v<seq>". Names are
// made identifier-safe (anything but letters, digits and '_' becomes
// '_'); DuckDB's reserved database names get "_lake" added.
func (r *Repo) readerAlias(o ShowOptions, rev string, named refs.Name, rec *version.Record) string {
	if o.Alias != "" {
		return o.Alias
	}
	if named == "" || (rev != "HEAD" && refs.RevName(rev) != rev) || (!named.IsBranch() && named.Kind() != refs.KindTag) {
		return fmt.Sprint("v", rec.Seq)
	}
	repoName := aliasWord(r.cfg.Name)
	if named.IsBranch() && named.Short() == r.cfg.DefaultBranch {
		return reserved(repoName)
	}
	return reserved(repoName + "_" + aliasWord(named.Short()))
}

// aliasWord is s with every run of characters other than ASCII letters,
// digits and '_' replaced by one '_', trimmed of '_'. If nothing is left,
// "lake" and, for a name that had characters (all outside ASCII: ü/ä),
// the 8 hex digits of its 32-bit FNV-1a hash, so that two such names give
// two words and each the same one every time.
func aliasWord(s string) string {
	var b strings.Builder
	under := false
	for _, c := range s {
		if c < 128 && (unicode.IsLetter(c) || unicode.IsDigit(c)) || c == '_' {
			b.WriteRune(c)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	if w := strings.Trim(b.String(), "_"); w != "" {
		return w
	}
	if s == "" {
		return "lake"
	}
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("lake_%08x", h.Sum32())
}

// reservedNames are the database names DuckDB reserves or always has
// attached: an ATTACH under one of them fails ("is a reserved name",
// "is already attached").
var reservedNames = []string{"main", "memory", "system", "temp", "information_schema", "pg_catalog"}

// reserved adds "_lake" to the database names DuckDB reserves.
func reserved(name string) string {
	if slices.Contains(reservedNames, strings.ToLower(name)) {
		return name + "_lake"
	}
	return name
}

// CheckAlias refuses a database name asked for (attach --as) that DuckDB
// reserves, whose ATTACH line would fail; "" (the default name) is no
// error. Errors: ErrInvalidArguments naming it.
func CheckAlias(alias string) error {
	if alias != "" && slices.Contains(reservedNames, strings.ToLower(alias)) {
		return fmt.Errorf("database name %q: DuckDB reserves it (%s), so the ATTACH line would fail; choose another, such as %s: %w", alias, strings.Join(reservedNames, ", "), alias+"_lake", ErrInvalidArguments)
	}
	return nil
}

// Attached is what 'fdl attach' gives: a version's ATTACH statement, its
// catalog checked first. Its JSON is 'fdl attach --json'.
type Attached struct {
	ID     version.ID `json:"id"`
	Seq    int64      `json:"seq"`
	Attach string     `json:"attach"`
}

// Attach returns the DuckDB statement that attaches rev's version (default
// as Show), after checking its catalog's size and sha256 against the
// record (streamed from the store). With o.RequireSigned, the record's
// signature is checked first, by o.Signers (*SignatureError when it is not
// good: nothing else is read); without it, nothing is read for the
// signature. Errors: *RetiredError (the version left retention: nothing
// to attach), *ChecksumError, *SignatureError, the Resolve errors, the
// store's.
func (r *Repo) Attach(ctx context.Context, rev string, o ShowOptions) (*Attached, error) {
	o.NoVerify = false
	o.noSignature = true
	v, err := r.Show(ctx, rev, o)
	if err != nil {
		return nil, err
	}
	if v.Retirement != nil {
		ret, err := r.Retirement(ctx, v.Record.ID)
		if err != nil {
			return nil, err
		}
		return nil, ret
	}
	return &Attached{ID: v.Record.ID, Seq: v.Record.Seq, Attach: v.Attach}, nil
}

// readerUnreachable fetches rec's catalog (checking it against its
// record, as CheckCatalog does) and returns the URLs DuckDB requests, over
// a store whose readers request files by other URLs than its own
// (store.ReaderPaths), for the data and delete files the version reads at
// its snapshot that the server answers 404 or with a file of another
// size. Only files whose names the store escapes differently are asked
// for (one request each).
func (r *Repo) readerUnreachable(ctx context.Context, rp store.ReaderPaths, rec *version.Record) ([]string, error) {
	tmp, removeTmp, err := scratch.New(scratch.Show)
	if err != nil {
		return nil, err
	}
	defer removeTmp()
	dst := filepath.Join(tmp, version.CatalogFile)
	if err := r.FetchCatalog(ctx, rec, dst); err != nil {
		return nil, err
	}
	c, err := ducklake.Open(ctx, dst)
	if err != nil {
		return nil, fmt.Errorf("version %s: %w", rec.ID, err)
	}
	files, err := c.DataFiles(ctx)
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("version %s: %w", rec.ID, err)
	}
	norm, err := r.Normaliser()
	if err != nil {
		return nil, err
	}
	var out []string
	s := rec.DuckLake.Snapshot
	for _, f := range files {
		if f.BeginSnapshot > s || f.EndSnapshot != nil && *f.EndSnapshot <= s {
			continue
		}
		pl, err := norm.Place(f.ResolvedPath)
		if err != nil || pl.Key == "" || !rp.ReaderDiffers(pl.Key) {
			continue
		}
		url, got, err := rp.StatAsReader(ctx, pl.Key)
		switch {
		case errors.Is(err, store.ErrNotExist), err == nil && got.Size >= 0 && f.Size > 0 && got.Size != f.Size:
			out = append(out, url)
		case err != nil:
			return nil, err
		}
	}
	return out, nil
}

// ReaderAlias returns name made a database name readers can type: runs of
// characters other than ASCII letters, digits and '_' become one '_', and
// DuckDB's reserved database names get "_lake" added (as the default
// names of Show's statements).
func ReaderAlias(name string) string { return reserved(aliasWord(name)) }

// showSignature checks the signature of out's record (by o.Signers, if
// given) into out.Signature; with o.RequireSigned, one that is not good
// is *SignatureError, and so is a signed record whose bytes describe
// another catalog than the record out holds (read twice, changed
// between the reads).
// signatureRefused returns what show gives back when its signature step
// failed: the version shown so far with a *SignatureError (a required
// signature is not good: the caller says whose and why), nothing with any
// other error (an allowed signers file that cannot be read).
func signatureRefused(out *Shown, err error) (*Shown, error) {
	var se *SignatureError
	if errors.As(err, &se) {
		return out, err
	}
	return nil, err
}

func (r *Repo) showSignature(ctx context.Context, out *Shown, o ShowOptions) error {
	if o.noSignature && !o.RequireSigned {
		return nil
	}
	signers, err := LoadSigners(o.Signers)
	if err != nil {
		return err
	}
	rec := out.Record
	c, signed, err := r.versionSignature(ctx, o.Local, rec.ID, signers)
	if err != nil {
		return err
	}
	if signed != nil && signed.Catalog != rec.Catalog {
		c.Status, c.Principals = SigBad, nil
		c.Reason = "the signed version.json names another catalog than the one read before"
	}
	out.Signature = &c
	if o.RequireSigned && !c.Good() {
		return &SignatureError{Version: rec.ID, Check: c, Signers: o.Signers}
	}
	return nil
}
