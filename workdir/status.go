package workdir

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fdl-dev/fdl/repo"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// Status: the working catalog against its base version.

// Status is the working catalog compared with its base version, and the
// base compared with the head of its branch. Its JSON is 'fdl status
// --json' (docs/cli.md gives every field's type).
type Status struct {
	Dir        string `json:"dir"`
	Repository string `json:"repository"`
	// Branch is the short name of the branch push moves by default.
	Branch string     `json:"branch"`
	Base   version.ID `json:"base,omitempty"`
	// BaseSeq is the base's seq (absent without a base).
	BaseSeq int64 `json:"base_seq,omitempty"`
	// BaseSnapshot is the base's last snapshot (-1 without a base).
	BaseSnapshot int64 `json:"base_snapshot"`
	// Unpushed counts versions committed here and not in the store yet.
	Unpushed int `json:"unpushed"`
	// Snapshots are the working catalog's snapshots after the base: work
	// not committed yet.
	Snapshots []ducklake.Snapshot `json:"snapshots"`
	// Tables lists the tables and views the new snapshots touched, by
	// the changes_made items naming them.
	Tables []string `json:"tables_touched"`
	// Changes says in words what the new snapshots did to each table,
	// view or schema (changes_made summed up: one entry per name and kind
	// of change, with the number of snapshots that made it), sorted by
	// name; the snapshot DuckLake makes itself when it creates a catalog
	// (CreationSnapshots) is not counted. Snapshots keeps the raw list.
	Changes []TableChange `json:"table_changes"`
	// CreationSnapshots is 1 when the new snapshots include the one the
	// ducklake extension writes when it creates a catalog (snapshot 0,
	// created_schema:"main"): not the user's work, and not in Changes.
	CreationSnapshots int `json:"creation_snapshots"`
	// Attach is the DuckDB statement that attaches the working catalog
	// (as checkout printed it); absent with StatusOptions.Offline.
	Attach string `json:"attach,omitempty"`
	// ContinuesBase is false when the working catalog does not continue
	// its base's snapshots (it was replaced by another catalog, or the
	// base's last snapshot was expired): it cannot be committed; Problem
	// says why.
	ContinuesBase bool   `json:"continues_base"`
	Problem       string `json:"problem,omitempty"`
	// PullInterrupted: Problem is a pull stopped after it may have
	// replaced the working catalog; the next pull settles it.
	PullInterrupted bool `json:"pull_interrupted,omitempty"`
	// Tracking compares the base with the head of the branch in the
	// store; nil with StatusOptions.Offline, or when the branch could not
	// be read (TrackingError says why).
	Tracking      *repo.Tracking `json:"tracking"`
	TrackingError string         `json:"tracking_error,omitempty"`
	// PendingWAL is the DuckDB write-ahead log beside a DuckDB working
	// catalog, if there is one: writes committed in DuckDB but not yet
	// checkpointed into the catalog file (a session still attached, or one
	// that ended without a checkpoint). Status lists its snapshots, and
	// commit includes them; PendingWALBytes is its size.
	PendingWAL      string `json:"pending_wal,omitempty"`
	PendingWALBytes int64  `json:"pending_wal_bytes,omitempty"`
	// Undo is a revert or restore written and not committed yet.
	Undo *PendingUndo `json:"undo,omitempty"`
}

// StatusOptions are the inputs of Workdir.Status.
type StatusOptions struct {
	// Offline skips the branch: no read of the store at all.
	Offline bool
}

// Status reads the working catalog (read-only) and compares it with the
// base, then (unless o.Offline) reads the branch's ref once and compares
// the base with the branch's head. A branch that cannot be read (the store
// is unreachable) is reported in TrackingError, not as an error. Its cost
// follows the snapshots after the base, not the catalog's size: it reads
// the base's snapshot and those after it, and the names of the tables
// there (ducklake.ReadRecent; a SQLite working catalog is read in place,
// without a conversion). Errors:
// ducklake.ErrLocked while another process holds the catalog.
// pullReplacedNothing reports whether the interrupted pull in the state
// had not replaced the working catalog (stoppedPull), so that status shows
// the catalog against its base as if no pull had run (the next pull or
// commit clears the state). Offline, or when it cannot tell: false.
func (w *Workdir) pullReplacedNothing(ctx context.Context, o StatusOptions) bool {
	if o.Offline {
		return false
	}
	r, err := w.Repo(ctx)
	if err != nil {
		return false
	}
	_, replaced, known, err := w.stoppedPull(ctx, r)
	return err == nil && known && !replaced
}

func (w *Workdir) Status(ctx context.Context, o StatusOptions) (*Status, error) {
	if err := w.catalogGone(); err != nil {
		return nil, err
	}
	st := &Status{Dir: w.Dir, Repository: store.RedactURL(w.State.Repository), Branch: w.State.Branch, Base: w.State.Base, BaseSnapshot: -1, ContinuesBase: true, Undo: w.State.Undo, Changes: []TableChange{}}
	if w.BaseRecord != nil {
		st.BaseSeq = w.BaseRecord.Seq
		st.BaseSnapshot = w.BaseRecord.DuckLake.Snapshot
	}
	pending, err := w.PendingVersions()
	if err != nil {
		return nil, err
	}
	st.Unpushed = len(pending)
	if !o.Offline {
		tr, err := w.tracking(ctx, pending)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			st.TrackingError = err.Error()
		}
		st.Tracking = tr
		if r, err := w.Repo(ctx); err == nil {
			st.Attach = r.AttachStatement(w.CatalogPath(), w.dataPath(), "lake", false)
		}
	}
	if w.State.Pulling != nil && !w.pullReplacedNothing(ctx, o) {
		st.ContinuesBase = false
		st.Problem, st.PullInterrupted = (&PullInterruptedError{Dir: w.Dir}).Error(), true
		st.Snapshots, st.Tables = []ducklake.Snapshot{}, []string{}
		return st, nil
	}
	if w.State.CatalogFormat != ducklake.BackendSQLite {
		if p, n, ok := ducklake.PendingWAL(w.CatalogPath()); ok {
			st.PendingWAL, st.PendingWALBytes = p, n
		}
	}
	// The same reading commit freezes: a .wal's rows included.
	recent, err := ducklake.ReadRecent(ctx, w.CatalogPath(), st.BaseSnapshot)
	if err != nil {
		return nil, w.unusable(err)
	}
	snaps := recent.Snapshots
	if _, err := w.checkLineage(snaps); err != nil && !errors.Is(err, ErrNothingToCommit) {
		st.ContinuesBase = false
		st.Problem = err.Error()
		st.Snapshots, st.Tables = []ducklake.Snapshot{}, []string{}
		return st, nil
	}
	tallyChanges(st, recent, snaps)
	return st, nil
}

// tallyChanges fills st's Snapshots, CreationSnapshots, Changes (per
// table, in words) and Tables (touched, sorted) from the snapshots after
// st.BaseSnapshot, naming tables by the ids recent holds.
func tallyChanges(st *Status, recent *ducklake.Recent, snaps []ducklake.Snapshot) {
	names := map[string]string{} // table id -> "schema"."table"
	for id, t := range recent.Tables {
		names[fmt.Sprint(id)] = typed(t)
	}
	schemas := map[string]string{} // schema id -> its name (dropped_schema:ID)
	for id, name := range recent.Schemas {
		schemas[fmt.Sprint(id)] = sqlquote.IdentIfNeeded(name)
	}
	// A rename is logged as created_table (created_view) with the new
	// name: by snapshot and new name, the old name.
	type at struct {
		snap int64
		name string
	}
	renamed := map[at]string{}
	for _, r := range recent.Renames {
		renamed[at{r.Snapshot, typed(r.To)}] = typed(r.From)
	}
	touched := map[string]bool{}
	counts := map[TableChange]int{}
	for _, s := range snaps {
		if s.ID <= st.BaseSnapshot {
			continue
		}
		st.Snapshots = append(st.Snapshots, s)
		if ducklake.IsCreationSnapshot(s) {
			st.CreationSnapshots++
			continue
		}
		seen := map[TableChange]bool{}
		for _, c := range ducklake.ParseChanges(s.Changes) {
			name, ok := names[c.Value]
			if c.Kind == "dropped_schema" {
				name, ok = schemas[c.Value]
			}
			if !ok {
				name = qualifiedName(c.Value)
			}
			// Table changes: *_table, inlined_*, flushed_inlined, and
			// merge_adjacent / rewrite_delete (compactions by table id);
			// view changes: created_view (by name), altered_view and
			// dropped_view (by id).
			if strings.Contains(c.Kind, "table") || strings.HasSuffix(c.Kind, "_view") || strings.Contains(c.Kind, "inlined") || c.Kind == "merge_adjacent" || c.Kind == "rewrite_delete" {
				touched[name] = true
			}
			tc := TableChange{Name: name, Change: changeWords(c.Kind)}
			if old, ok := renamed[at{s.ID, name}]; ok && (c.Kind == "created_table" || c.Kind == "created_view") {
				tc.Change = strings.TrimSuffix(tc.Change, "created") + "renamed from " + old
			}
			seen[tc] = true
		}
		for tc := range replacedIn(seen) {
			counts[tc]++
		}
	}
	st.Changes = summarise(counts)
	if st.Snapshots == nil {
		st.Snapshots = []ducklake.Snapshot{}
	}
	st.Tables = []string{}
	for t := range touched {
		st.Tables = append(st.Tables, t)
	}
	sort.Strings(st.Tables)
}

// TableChange is one kind of change the new snapshots made to one table,
// view or schema, in words: Name as people type it (main.sales), Change
// what was done ("created", "rows inserted", "rows deleted", "altered",
// "dropped", "files compacted", ...; a changes_made kind fdl does not know
// is given as it is), and in how many snapshots.
type TableChange struct {
	Name      string `json:"name"`
	Change    string `json:"change"`
	Snapshots int    `json:"snapshot_count"`
}

// changeWordsOf are the words for the changes_made kinds of DuckLake 1.0
// and 1.1 (the extension's SnapshotChangeInformation).
var changeWordsOf = map[string]string{
	"created_schema": "schema created", "dropped_schema": "schema dropped",
	"created_table": "created", "created_view": "view created",
	"altered_table": "altered", "altered_view": "view altered",
	"dropped_table": "dropped", "dropped_view": "view dropped",
	"inserted_into_table": "rows inserted", "inlined_insert": "rows inserted",
	"deleted_from_table": "rows deleted", "inlined_delete": "rows deleted",
	"compacted_table": "files compacted", "merge_adjacent": "files compacted", "rewrite_delete": "files compacted",
	"flushed_inlined": "inlined rows written to files",
}

// replacedIn returns one snapshot's changes (seen) with a table or view
// both created and dropped under one name in it (CREATE OR REPLACE: the
// old one dropped, a new one made; a rename is told apart by its new
// name) given as one change, "replaced" or "view replaced".
func replacedIn(seen map[TableChange]bool) map[TableChange]bool {
	for tc := range seen {
		for _, w := range [][3]string{{"created", "dropped", "replaced"}, {"view created", "view dropped", "view replaced"}} {
			gone := TableChange{Name: tc.Name, Change: w[1]}
			if tc.Change == w[0] && seen[gone] {
				delete(seen, tc)
				delete(seen, gone)
				seen[TableChange{Name: tc.Name, Change: w[2]}] = true
			}
		}
	}
	return seen
}

func changeWords(kind string) string {
	if w, ok := changeWordsOf[kind]; ok {
		return w
	}
	return kind
}

// summarise turns the counts into a list sorted by name, then in the
// order a table's life reads (created first, dropped last).
func summarise(counts map[TableChange]int) []TableChange {
	order := map[string]int{"schema created": 0, "created": 0, "view created": 0, "altered": 1, "view altered": 1, "replaced": 1, "view replaced": 1, "rows inserted": 2, "rows deleted": 3, "files compacted": 4, "inlined rows written to files": 4, "dropped": 6, "view dropped": 6, "schema dropped": 6}
	out := []TableChange{}
	for tc, n := range counts {
		tc.Snapshots = n
		out = append(out, tc)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		oa, ok := order[a.Change]
		if !ok {
			oa = 5
		}
		ob, ok := order[b.Change]
		if !ok {
			ob = 5
		}
		if strings.Contains(a.Change, "renamed from ") {
			oa = 0
		}
		if strings.Contains(b.Change, "renamed from ") {
			ob = 0
		}
		if oa != ob {
			return oa < ob
		}
		return a.Change < b.Change
	})
	return out
}

// typed is a table's or view's name as people type it (main.sales).
func typed(t ducklake.TableName) string {
	return sqlquote.IdentIfNeeded(t.Schema) + "." + sqlquote.IdentIfNeeded(t.Name)
}

// qualifiedName turns a changes_made value such as "main"."my ""t""" into
// the form people type (main."my ""t""").
func qualifiedName(v string) string {
	var parts []string
	var cur strings.Builder
	inQuote := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"' && inQuote && i+1 < len(v) && v[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			inQuote = !inQuote
		case c == '.' && !inQuote:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	for i, p := range parts {
		parts[i] = sqlquote.IdentIfNeeded(p)
	}
	return strings.Join(parts, ".")
}

// tracking reads the branch's ref once and compares the base with its head
// (refs.AheadBehind), reading local records for the unpushed versions.
func (w *Workdir) tracking(ctx context.Context, pending []repo.Pending) (*repo.Tracking, error) {
	r, err := w.Repo(ctx)
	if err != nil {
		return nil, err
	}
	return r.Tracking(ctx, w.State.Branch, w.State.Base, pending)
}
