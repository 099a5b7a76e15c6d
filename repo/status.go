package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/version"
)

// Status: the working catalog against its base version.

// Status is the working catalog compared with its base version.
type Status struct {
	Dir        string     `json:"dir"`
	Repository string     `json:"repository"`
	Branch     string     `json:"branch"`
	Base       version.ID `json:"base,omitempty"`
	BaseSeq    int64      `json:"base_seq,omitempty"`
	// BaseSnapshot is the base's last snapshot (-1 without a base).
	BaseSnapshot int64 `json:"base_snapshot"`
	// Unpushed counts local versions not in the store yet.
	Unpushed int `json:"unpushed"`
	// Snapshots are the working catalog's snapshots after the base.
	Snapshots []ducklake.Snapshot `json:"snapshots"`
	// Tables lists the tables the new snapshots touched, by the
	// changes_made items naming them.
	Tables []string `json:"tables_touched"`
	// Descends is false when the catalog does not continue its base.
	Descends bool   `json:"descends"`
	Problem  string `json:"problem,omitempty"`
	// Undo is a revert or restore written and not committed yet.
	Undo *PendingUndo `json:"undo,omitempty"`
}

// Status reads the working catalog (read-only) and compares it with the base.
// Errors: ducklake.ErrLocked while another process holds the catalog.
func (w *Workdir) Status(ctx context.Context) (*Status, error) {
	st := &Status{Dir: w.Dir, Repository: w.State.Repository, Branch: w.State.Branch, Base: w.State.Base, BaseSnapshot: -1, Descends: true, Undo: w.State.Undo}
	if w.BaseRecord != nil {
		st.BaseSeq = w.BaseRecord.Seq
		st.BaseSnapshot = w.BaseRecord.DuckLake.Snapshot
	}
	pending, err := w.PendingVersions()
	if err != nil {
		return nil, err
	}
	st.Unpushed = len(pending)
	cat, err := ducklake.Open(ctx, w.CatalogPath())
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	snaps, err := cat.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := w.checkLineage(snaps); err != nil && !errors.Is(err, ErrNothingToCommit) {
		st.Descends = false
		st.Problem = err.Error()
		return st, nil
	}
	names := map[string]string{} // table id -> "schema"."table"
	for _, at := range []int64{st.BaseSnapshot, snaps[len(snaps)-1].ID} {
		if at < 0 {
			continue
		}
		state, err := cat.State(ctx, at)
		if err != nil {
			return nil, err
		}
		for _, sc := range state.Schemas {
			for _, t := range sc.Tables {
				names[fmt.Sprint(t.ID)] = sqlquote.IdentIfNeeded(sc.Name) + "." + sqlquote.IdentIfNeeded(t.Name)
			}
		}
	}
	touched := map[string]bool{}
	for _, s := range snaps {
		if s.ID <= st.BaseSnapshot {
			continue
		}
		st.Snapshots = append(st.Snapshots, s)
		for _, c := range ducklake.ParseChanges(s.Changes) {
			// Table changes: *_table, inlined_*, flushed_inlined, and
			// merge_adjacent / rewrite_delete (compactions by table id).
			if strings.Contains(c.Kind, "table") || strings.Contains(c.Kind, "inlined") || c.Kind == "merge_adjacent" || c.Kind == "rewrite_delete" {
				if n, ok := names[c.Value]; ok {
					touched[n] = true
				} else {
					touched[qualifiedName(c.Value)] = true
				}
			}
		}
	}
	if st.Snapshots == nil {
		st.Snapshots = []ducklake.Snapshot{}
	}
	st.Tables = []string{}
	for t := range touched {
		st.Tables = append(st.Tables, t)
	}
	sort.Strings(st.Tables)
	return st, nil
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
