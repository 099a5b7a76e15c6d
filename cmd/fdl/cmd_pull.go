package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/workdir"
)

func newPullCmd(ios *term.IO, g *globals) *cobra.Command {
	o := workdir.PullOptions{}
	cmd := &cobra.Command{
		Use:   "pull",
		Short: "Bring the working directory up to its branch's head, in place (fast-forward only)",
		Long: `Bring this working directory up to the head of its branch, in place: the
working catalog keeps its path and form, so the ATTACH statement pipelines,
notebooks and dbt use does not change. Like git pull --ff-only: only when
the branch's head descends from the base, and only when the directory holds
nothing the repository lacks. fdl never merges rows.

Refused, with nothing changed:
  - versions committed here and not pushed, when the branch moved on
    (diverged): push them to a new branch first (fdl push NEW-BRANCH);
  - snapshots not committed yet: commit and push them to a new branch, or
    throw them away with --discard;
  - a base that is not on the branch's history (the branch was moved back,
    or this directory holds another branch's version): exit code 3; --discard
    replaces the working catalog anyway (the base stays in the repository);
  - a DuckDB-format working catalog attached by a process (DuckDB holds its
    lock): DETACH it there first;
  - a working catalog that is gone, unreadable or another lake's: --discard
    makes it anew from the branch's head (from the base when versions
    committed here are not pushed: they are never discarded).

A SQLite working catalog is replaced in one SQLite write transaction, which
first checks, inside it, that no snapshot was added since fdl looked: DuckDB
processes that have it attached see the branch's new snapshots in their next
transaction, as if another writer had committed them, and none of their
writes is lost (one that runs meanwhile makes the pull wait, then refuse).
With --discard, attached processes must re-attach: the snapshots they saw
are gone.`,
		Example: `  fdl pull
  fdl -C /srv/pipelines/sales pull --json`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runPull(cmd.Context(), ios, g, o)
		},
	}
	cmd.Flags().BoolVar(&o.Discard, "discard", false, "replace the working catalog even when it holds snapshots not committed (lost) or its base is not on the branch's history")
	return cmd
}

func runPull(ctx context.Context, ios *term.IO, g *globals, o workdir.PullOptions) error {
	w, err := g.workdir()
	if err != nil {
		return err
	}
	defer w.Close()
	if g.Repo == "" {
		g.opened = w.State.Repository // hints name it (checkout URL)
	}
	res, err := w.Pull(ctx, o)
	g.progressDone()
	if err != nil {
		return err
	}
	if g.JSON {
		return printJSON(ios, res)
	}
	b := ios.Ref(res.Branch)
	if res.Remade {
		ios.Printf("Made the working catalog anew from this directory's base, seq %d (%s), committed here and not pushed; what was written after it is gone\n", res.Seq, ios.ID(string(res.New)))
	}
	if res.UpToDate {
		ios.Printf("Already up to date with %s", b)
		if res.Ahead > 0 {
			ios.Printf("; %d version(s) here are not on %s yet: %s", res.Ahead, b, g.next("push"))
		} else {
			ios.Printf(" (seq %d)", res.Seq)
		}
		ios.Printf("\n")
		return nil
	}
	if res.Discarded > 0 {
		ios.Warnf("discarded %d snapshot(s) that were not committed", res.Discarded)
	}
	if res.New == res.Old && res.Discarded > 0 && res.Pulled == 0 {
		ios.Printf("Back at the base of %s, seq %d (%s): nothing to pull\n", res.Dir, res.Seq, ios.ID(string(res.New)))
		return nil
	}
	ios.Printf("Updated %s to %s seq %d (%s, %d version(s) pulled)\n", res.Dir, b, res.Seq, ios.ID(string(res.New)), res.Pulled)
	if res.AttachChanged {
		ios.Printf("The ATTACH statement changed (the new version reads its data elsewhere, or other DuckDB releases read it):\n  %s\n", res.Attach)
	} else {
		ios.Printf("Same path, same ATTACH statement:\n  %s\n", res.Attach)
	}
	return nil
}
