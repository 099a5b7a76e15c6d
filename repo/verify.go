package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// Problem is one finding of Verify. Code is stable for scripts
// (docs/spec.md §verify lists them).
type Problem struct {
	Code    Code   `json:"code"`
	Object  string `json:"object"` // a ref name or a version id
	Message string `json:"message"`
	// Err is the error the message quotes, if any (its type says what to
	// do about it).
	Err error `json:"-"`
}

// problem returns a Problem whose message is fmt.Sprintf(format, a...),
// keeping the first error among a.
func problem(code Code, obj, format string, a ...any) Problem {
	p := Problem{Code: code, Object: obj, Message: fmt.Sprintf(format, a...)}
	for _, v := range a {
		if err, ok := v.(error); ok {
			p.Err = err
			break
		}
	}
	return p
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Refs     int       `json:"refs_checked"`
	Versions int       `json:"versions_checked"`
	Catalogs int       `json:"catalogs_checked"`
	Problems []Problem `json:"problems"`
	// Notes are findings that are not faults, with the same shape as
	// problems (catalog-snapshot-gap: snapshot ids removed by
	// ducklake_expire_snapshots). They do not make verify fail.
	Notes []Problem `json:"notes"`
	// Retired counts versions out of retention (record kept, catalog gone
	// or going); their catalogs are not checked.
	Retired int `json:"retired_count"`
	// DataFiles and DataOutside count, with Data, the distinct files inside
	// data/ that catalogs in retention can read at or after their floor
	// snapshots (each looked for in the store; files they list that they
	// cannot read there were gc's to delete), and the rows naming files
	// outside the repository (not checked: docs/spec.md §8).
	DataFiles   int `json:"data_files_checked"`
	DataOutside int `json:"data_files_outside"`
	// DataFooters counts, with Deep, the Parquet footers read (files
	// whose size matched and whose footer is neither encrypted nor of
	// another format than Parquet).
	DataFooters int `json:"data_footers_checked"`
	// Packs counts the history packs checked against the records.
	Packs int `json:"packs_checked"`
	// Signatures counts the signature objects checked (docs/spec.md §20);
	// Signers is the allowed signers file they were judged by, if any.
	Signatures int    `json:"signatures_checked"`
	Signers    string `json:"signers,omitempty"`
	// Incomplete lists version folders without version.json that no ref
	// reaches: left by an interrupted push; harmless (docs/spec.md §10.1).
	Incomplete []version.ID `json:"incomplete"`
}

// OK reports whether Verify found no problem.
func (v *VerifyReport) OK() bool { return len(v.Problems) == 0 }

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// SkipCatalogs skips reading every catalog to check its size and
	// sha256 and the catalog invariants inside it.
	SkipCatalogs bool
	// Data checks that every data file a catalog in retention can read at
	// or after its floor exists in the store and has the size the
	// catalogs record (file_size_bytes): one listing of data/.
	Data bool
	// Deep (with Data) also reads each such file's Parquet footer (two
	// ranged reads a file) and compares its length and row count with the
	// catalogs' footer_size and record_count (docs/spec.md §23).
	Deep bool
	// Signers is an allowed signers file (LoadSigners): every signature
	// is judged by it, and versions and tags without one are noted.
	// Without it, signatures are checked only to verify.
	Signers string
}

// Verify checks the repository (docs/spec.md §5.1, §10): HEAD
// and every ref parse and point at a complete version in retention; every
// record parses, its parents exist, seq is the first parent's + 1, ids and
// snapshots grow along parents; the retention policy, floor, markers and
// ref log entries parse; a retired version has its marker and neither
// catalog nor dataset.json; for every version in retention, dataset.json
// parses, the catalog's size and sha256 match its record and the DuckLake
// catalog invariants hold inside it (ducklake.Catalog.CheckInvariants);
// with o.Data, every data file a catalog in retention can read at or after
// its floor exists in the store with the size the catalogs record, and
// with o.Deep its Parquet footer agrees with them; every signature object
// verifies over what it signs, and with o.Signers, was made by an allowed
// signer (versions and tags without one are noted). It returns an error
// only when the store or o.Signers cannot be read (or the file does not
// parse); findings go into the report, each with a stable code
// (docs/cli.md).
func (r *Repo) Verify(ctx context.Context, o VerifyOptions) (*VerifyReport, error) {
	rep := &VerifyReport{Problems: []Problem{}, Notes: []Problem{}, Incomplete: []version.ID{}, Signers: o.Signers}
	signers, err := LoadSigners(o.Signers)
	if err != nil {
		return nil, err
	}
	add := func(code Code, obj, format string, a ...any) {
		rep.Problems = append(rep.Problems, problem(code, obj, format, a...))
	}
	if _, err := r.refs.Head(ctx); err != nil {
		add(CodeHeadInvalid, "HEAD", "%v", err)
	}
	vs, err := r.verifyRetention(ctx, o, add)
	if err != nil {
		return nil, err
	}
	defer vs.close()
	r.forgetIDs()
	ids, err := r.IDs(ctx)
	if err != nil {
		return nil, err
	}
	r.prefetch(ctx, ids)
	reached, heads, err := r.verifyRefs(ctx, rep, add)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := r.verifyVersion(ctx, o, vs, rep, id, reached[id], add); err != nil {
			return nil, err
		}
	}
	if err := r.verifySignatures(ctx, signers, vs, rep, ids, heads, add); err != nil {
		return nil, err
	}
	if err := r.verifyPacks(ctx, rep, heads, add); err != nil {
		return nil, err
	}
	if vs.dp != nil {
		if err := r.verifyData(ctx, o, vs, rep, add); err != nil {
			return nil, err
		}
	}
	if err := r.Temps(ctx, func(oi store.ObjectInfo) error {
		rep.Notes = append(rep.Notes, Problem{Code: CodeTempLeftover, Object: oi.Key, Message: fmt.Sprintf(
			"%s (%d bytes, %s) is the temporary file of a write that did not finish (a crash, or one in progress)",
			oi.Key, oi.Size, oi.ModTime.UTC().Format(time.RFC3339))})
		return nil
	}); err != nil {
		return nil, err
	}
	sort.SliceStable(rep.Problems, func(i, j int) bool { return rep.Problems[i].Object < rep.Problems[j].Object })
	return rep, nil
}

// verifyRefs checks that every ref parses and points at a complete
// version; it counts the refs and returns every version a ref's
// first-parent history reaches (read from the records, not from history
// packs, which verify checks against them) and the versions the refs
// hold.
func (r *Repo) verifyRefs(ctx context.Context, rep *VerifyReport, add func(code Code, obj, format string, a ...any)) (map[version.ID]bool, []refs.Ref, error) {
	good, bad, err := r.refs.List(ctx, "refs/")
	if err != nil {
		return nil, nil, err
	}
	for _, e := range bad {
		add(CodeRefCorrupt, "", "%v", e)
	}
	rep.Refs = len(good) + len(bad)
	reached := map[version.ID]bool{}
	var heads []refs.Ref
	for _, ref := range good {
		if _, err := r.Record(ctx, ref.ID); err != nil {
			why := "which is not a complete version"
			if errors.Is(err, version.ErrBadRecord) {
				why = "whose record cannot be read"
			}
			add(CodeRefDangling, string(ref.Name), "%s points at version %s, %s: %v", ref.Name, ref.ID, why, err)
			continue
		}
		heads = append(heads, ref)
		log, _ := r.recordChain(ctx, ref.ID)
		for _, rec := range log {
			reached[rec.ID] = true
		}
	}
	return reached, heads, nil
}

// verifyVersion checks one version folder: its record (an incomplete one
// is a problem only when a ref reaches it), its parents, and, retired, its
// marker (verifyRetired), else its dataset.json and (unless
// o.SkipCatalogs) its catalog (verifyCatalog).
func (r *Repo) verifyVersion(ctx context.Context, o VerifyOptions, vs *verifyState, rep *VerifyReport, id version.ID, reached bool, add func(code Code, obj, format string, a ...any)) error {
	rec, err := r.Record(ctx, id)
	if errors.Is(err, ErrIncomplete) {
		if reached {
			add(CodeVersionIncomplete, string(id), "%v", err)
		} else {
			rep.Incomplete = append(rep.Incomplete, id)
		}
		return nil
	}
	if err != nil {
		add(CodeRecordInvalid, string(id), "%v", err)
		return nil
	}
	rep.Versions++
	for _, k := range vs.extra[id] {
		add(CodeVersionExtraFile, string(id), "%s is not one of the files of version %s (%s, %s, %s, %s, %s): fdl show refuses the version until it is removed (a DuckDB .wal beside the catalog would be replayed over it by a reader that attaches it)",
			r.st.Location(k), id, version.CatalogFile, version.DatasetFile, version.RecordFile, version.SignatureFile, retention.MarkerFile)
	}
	r.verifyParents(ctx, rec, add)
	if vs.retired[id] {
		rep.Retired++
		return r.verifyRetired(ctx, vs, id, add)
	}
	if _, err := r.Dataset(ctx, id); err != nil {
		add(CodeDatasetInvalid, string(id), "%v", err)
	}
	if o.SkipCatalogs {
		return nil
	}
	rep.Catalogs++
	note := func(code Code, obj, format string, a ...any) {
		rep.Notes = append(rep.Notes, problem(code, obj, format, a...))
	}
	return r.verifyCatalog(ctx, vs, rec, add, note)
}

// verifyParents checks that rec's parents exist, that it follows its
// first parent (version.CheckChild: seq, id, snapshots, created_at — the
// rule push refuses by too; docs/spec.md §6, §10.6), and that every other
// parent has a lower seq (docs/spec.md §6).
func (r *Repo) verifyParents(ctx context.Context, rec *version.Record, add func(code Code, obj, format string, a ...any)) {
	id := string(rec.ID)
	for i, p := range rec.Parents {
		prec, err := r.Record(ctx, p)
		if err != nil {
			add(CodeParentMissing, id, "parent %s: %v", p, err)
			continue
		}
		if i > 0 {
			// Every parent has a lower seq: walks stop at a seq (§6).
			if rec.Seq <= prec.Seq {
				add(CodeSeqMismatch, id, "seq %d, but its parent %s has seq %d (every parent's must be lower)", rec.Seq, p, prec.Seq)
			}
			continue
		}
		for _, lp := range version.CheckChild(prec, rec) {
			add(Code(lp.Code), id, "%s", lp.Message)
		}
	}
}
