package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/workdir"
)

type revertOptions struct {
	Message  string
	Author   string
	NoCommit bool
	SignKey  string
}

func newRevertCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &revertOptions{}
	cmd := &cobra.Command{
		Use:   "revert REV",
		Short: "Undo a version's changes as a new version (git revert)",
		Long: `Undo what version REV changed, on top of everything after it, and commit that
as a new local version whose record says "reverts": REV's id. Nothing is
rewritten: the undo is a new snapshot of the working catalog that ends what
REV added and brings back what REV ended, so snapshot ids keep growing and
every older version still reads as it did. Publish it with fdl push.

REV must be the working directory's base version or one of its ancestors, and
the working catalog must have no uncommitted snapshots. The revert is refused,
with nothing written, when a later version changed again what REV changed
(the same table's name, column, view, data file or inlined row), filled a
schema or table REV created, or wrote data to a table whose columns REV added,
dropped or retyped; also when the result would hold two objects of one name.
Revert the later versions first, or use fdl restore.

With --no-commit the snapshot stays in the working catalog and the next
fdl commit records it (its message is prepared).`,
		Example: `  fdl revert main~1
  fdl revert 01a2f3c4 -m 'Undo the bad import'
  fdl revert @12 --no-commit`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRevert(cmd.Context(), ios, g, o, a[0])
		},
	}
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", `commit message (default: Revert "<REV's message>")`)
	cmd.Flags().StringVar(&o.Author, "author", "", "who made it (default: $FDL_AUTHOR or the login name)")
	cmd.Flags().BoolVarP(&o.NoCommit, "no-commit", "n", false, "write the undo into the working catalog, commit later")
	addSignKeyFlag(cmd, &o.SignKey, "sign the version it commits")
	return cmd
}

func runRevert(ctx context.Context, ios *term.IO, g *globals, o *revertOptions, rev string) error {
	return g.withWorkdir(ctx, func(w *workdir.Workdir) error {
		res, err := w.Revert(ctx, workdir.RevertOptions{Rev: rev, Message: o.Message, Author: o.Author, NoCommit: o.NoCommit, SignKey: g.signKey(o.SignKey)})
		if err != nil {
			return err
		}
		return printUndo(ios, g, w, res)
	})
}

type restoreOptions struct {
	Source string
	Author string
}

func newRestoreCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore --source REV",
		Short: "Bring back the state of a version into the working catalog (git restore)",
		Long: `Make the working catalog's state what version REV held (schemas, tables,
columns, views, data, inlined rows), as one new snapshot that ends what came
after REV and brings back what REV had. Nothing is rewritten and nothing is
committed: the next fdl commit makes the new version, and its record says
"restores": REV's id (its message is prepared: fdl commit alone takes it).

REV must be the working directory's base version or one of its ancestors.
Uncommitted snapshots are allowed: fdl restore --source BASE discards them
(as a new snapshot; they stay in the catalog's history).

Refused, with nothing written, when a data or delete file holds rows of
snapshots on both sides of REV (merge_adjacent_files, flush_inlined_data, or
a second delete from one data file wrote it): fdl does not rewrite Parquet
files; and when a table of REV lies in a schema dropped since (DuckLake's
expire_snapshots would leave its old rows naming a deleted schema): copy it
back with CREATE TABLE ... AS SELECT ... AT (VERSION => n) instead.`,
		Example: `  fdl restore --source main~3 && fdl commit
  fdl restore -s 2025-final && fdl commit -m 'Back to the 2025 release'`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.Source == "" {
				return usageError{errNeedSource}
			}
			return runRestore(cmd.Context(), ios, g, o)
		},
	}
	cmd.Flags().StringVarP(&o.Source, "source", "s", "", "the version whose state to bring back (required)")
	cmd.Flags().StringVar(&o.Author, "author", "", "author of the snapshot (default: $FDL_AUTHOR or the login name)")
	return cmd
}

func runRestore(ctx context.Context, ios *term.IO, g *globals, o *restoreOptions) error {
	return g.withWorkdir(ctx, func(w *workdir.Workdir) error {
		res, err := w.Restore(ctx, workdir.RestoreOptions{Source: o.Source, Author: o.Author})
		if err != nil {
			return err
		}
		return printUndo(ios, g, w, res)
	})
}

// printUndo prints what a revert or restore wrote, and the commit it made.
func printUndo(ios *term.IO, g *globals, w *workdir.Workdir, res *workdir.UndoResult) error {
	if res.Shared > 0 {
		ios.Warnf("%d data or delete file(s) brought back are not local files and keep the path of the ended catalog rows they copy: do not run DuckLake's ducklake_expire_snapshots over the snapshots those rows were live in, then ducklake_cleanup_old_files, on this lake: the files would be deleted while the catalog still reads them", res.Shared)
	}
	if g.JSON {
		return printJSON(ios, res)
	}
	if res.Unchanged {
		ios.Printf("Nothing to restore: the working catalog already has the state of version %s (seq %d)\n", ios.ID(res.Short), res.Seq)
		return nil
	}
	verb := map[workdir.UndoKind]string{workdir.UndoRevert: "Reverted", workdir.UndoRestore: "Restored the state of"}[res.Kind]
	ios.Printf("%s version %s (seq %d) as snapshot %d: %d catalog row(s) ended, %d brought back\n", verb, ios.ID(res.Short), res.Seq, res.Snapshot, res.Ended, res.Reopened)
	if rec := res.Committed; rec != nil {
		ios.Printf("[%s seq %d %s] %s\n", ios.Ref(w.State.Branch), rec.Seq, ios.ID(string(rec.ID)), oneLine(rec.Message))
		ios.Printf("Publish it with: %s\n", g.next("push"))
		return nil
	}
	ios.Printf("Commit it with: %s (message: %s)\n", g.next("commit"), oneLine(res.Message))
	return nil
}

var errNeedSource = errors.New("fdl restore needs --source REV: the version whose state to bring back")
