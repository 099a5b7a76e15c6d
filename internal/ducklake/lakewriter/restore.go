package lakewriter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Restore and Revert: one new snapshot that takes state back, written the
// way DuckLake writes every change (docs/spec.md §7): rows that must go get
// end_snapshot = the new snapshot; rows that must come back are copied
// with begin_snapshot = the new snapshot and no end_snapshot. Old rows
// are never changed otherwise, so time travel to every earlier snapshot
// still returns what it did, and snapshot ids keep growing.
//
// Ids. A copy keeps its table_id, view_id, column_id, macro_id and row_id
// (DuckLake itself writes a new row with the same table_id when a table is
// renamed). Where the id is a primary key — ducklake_schema.schema_id,
// ducklake_data_file.data_file_id, ducklake_delete_file.delete_file_id — the
// copy gets a new one from next_catalog_id or next_file_id, and the rows
// that name it are copied with it: a schema's tables and views; a data
// file's delete files, inlined deletions (ducklake_inlined_delete_<table>),
// column statistics and partition values. A data file that must lose
// deletions recorded as inlined deletions (which have no end_snapshot) is
// ended and copied under a new id without them. A copied data or delete
// file on a local file system gets a file of its own, a copy (a clone
// where the file system has them) of the Parquet file under a new name (relink says why); elsewhere
// it names the same file as the row it copies.

// Errors of Restore and Revert.
var (
	// ErrConflict: a revert would undo a change that a later snapshot built
	// on (*ConflictError lists each).
	ErrConflict = errors.New("revert conflicts with a later change")
	// ErrCannotRestore: a file holds rows (or deletions) of several
	// snapshots on both sides of the snapshot to go back to (written by
	// merge_adjacent_files, flush_inlined_data, or a second delete from one
	// data file in DuckLake 0.4+); only rewriting it could take some back.
	ErrCannotRestore = errors.New("cannot be taken back without rewriting a file")
	// ErrSchemaDropped: a table would come back inside a schema dropped
	// since (docs/spec.md §19); its old rows would name a schema id that
	// DuckLake's expire_snapshots deletes while it keeps the table's rows.
	ErrSchemaDropped = errors.New("cannot bring back a table inside a schema dropped since")
)

// Conflict is one reason a revert is refused.
type Conflict struct {
	// Object names what is concerned for people, e.g. `table "main"."t"`,
	// `column "c" of table "main"."t"`, `data file <path>`.
	Object string `json:"object"`
	// Snapshot is the later snapshot that changed it (0 when the reason is
	// the state the revert would leave).
	Snapshot int64  `json:"snapshot"`
	Why      string `json:"why"`
}

// ConflictError lists why a revert is refused. It wraps ErrConflict.
type ConflictError struct {
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	for i, c := range e.Conflicts {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.Object + ": " + c.Why)
		if c.Snapshot > 0 {
			fmt.Fprintf(&b, " (snapshot %d)", c.Snapshot)
		}
	}
	return fmt.Sprintf("%v: %s", ErrConflict, b.String())
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// UndoResult says what Restore or Revert wrote.
type UndoResult struct {
	// Snapshot is the snapshot written.
	Snapshot int64 `json:"snapshot"`
	// Ended counts the rows given end_snapshot, Reopened the rows copied
	// with the new begin_snapshot.
	Ended    int64 `json:"ended"`
	Reopened int64 `json:"reopened"`
	// Changes is the snapshot's changes_made.
	Changes string `json:"changes"`
	// Linked counts the data and delete files that came back as a file of
	// their own (a copy, or a clone, in the same folder); Shared those that
	// kept the path of the row they copy (not on a local file system).
	Linked int64 `json:"linked"`
	Shared int64 `json:"shared"`
}

// Restore writes one snapshot after the last whose state — schemas,
// tables, columns, views, tags, partitioning, data files, delete files and
// inlined rows — is the state at snapshot at (Git's restore --source):
// every row begun after at and still open is ended, every row visible at
// at and ended since is copied (see the package's Restore and Revert notes
// for ids). Statistics are widened to cover the rows that come back.
//
// Errors: ErrInvalid (at is not a snapshot of the catalog, or an expired
// one), ErrNoChange (the state is already that), ErrCannotRestore (a file
// holding rows of snapshots on both sides of at), ErrSchemaDropped (a
// table of at's state inside a schema dropped since), ErrUnsupportedFormat (a
// versioned table fdl does not know, or macros, changed since at),
// *ConflictError (the result would break a catalog rule: never expected
// for a restore).
func (w *Writer) Restore(ctx context.Context, at int64) (*UndoResult, error) {
	var res *UndoResult
	err := w.run(ctx, fmt.Sprintf("restore the state of snapshot %d", at), func(o *op) error {
		u, err := newUndo(o, at, -1)
		if err != nil {
			return err
		}
		res, err = u.do()
		return err
	})
	return res, err
}

// Revert writes one snapshot after the last that undoes what snapshots
// after+1 … upto changed (Git's revert): every object those snapshots
// changed — a schema, a table's name, a column, a view, a tag, a table's
// partitioning or sorting, a data file with its delete files and inlined
// deletions, an inlined row — goes back to how it was at snapshot after;
// everything else stays as the last snapshot has it.
//
// It is refused (*ConflictError, listing each reason) when:
//   - an object those snapshots changed was changed again after upto;
//   - they created a schema or table and a later snapshot changed something
//     in it;
//   - they added, dropped or retyped a column of a table (a rename is
//     fine) and a later snapshot wrote data to that table;
//   - the result would have two objects of one name, or an object whose
//     schema or table is gone.
//
// Errors: as Restore, and ErrInvalid unless 0 <= after < upto <= the last
// snapshot.
func (w *Writer) Revert(ctx context.Context, after, upto int64) (*UndoResult, error) {
	var res *UndoResult
	err := w.run(ctx, fmt.Sprintf("revert snapshots %d..%d", after+1, upto), func(o *op) error {
		u, err := newUndo(o, after, upto)
		if err != nil {
			return err
		}
		res, err = u.do()
		return err
	})
	return res, err
}

// do reads what changed, refuses what cannot be undone, writes the
// snapshot's rows and checks the result.
func (u *undo) do() (*UndoResult, error) {
	for _, step := range []func() error{u.readTables, u.readChanges, u.pickScope, u.checkPartial} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if len(u.scope) == 0 {
		return nil, fmt.Errorf("%w: nothing changed after snapshot %d", ErrNoChange, u.lo)
	}
	for _, step := range []func() error{u.applyGeneric, u.applyFiles, u.applyStats, u.applySchemaVersion, u.validate, u.checkFiles} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	// A table that is gone is dropped, not altered.
	ch := &u.o.changes
	ch.alteredTables = slices.DeleteFunc(ch.alteredTables, func(id int64) bool { return slices.Contains(ch.droppedTables, id) })
	u.res.Snapshot = u.o.id
	u.res.Changes = ch.String()
	return &u.res, nil
}
