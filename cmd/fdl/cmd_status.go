package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

func newStatusCmd(ios *term.IO, g *globals) *cobra.Command {
	o := workdir.StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the working catalog against its base, and the base against its branch",
		Long: `Show the working catalog against its base version (what the snapshots not
committed yet did, one line per table in words: "main.sales: created, rows
inserted (96 snapshots)"; --json lists each snapshot's raw changes_made),
the base against the head of its branch in the repository: up to date,
ahead (fdl push moves the branch), behind (fdl pull brings this directory
up to date), diverged (push would be refused), or a branch that does not
exist yet; and the line that attaches the working catalog in DuckDB, as
checkout printed it. The comparison reads the branch's ref once, and the
records between the two versions; --offline skips it (and the line) and
reads nothing from the repository.`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runStatus(cmd.Context(), ios, g, o)
		},
	}
	cmd.Flags().BoolVar(&o.Offline, "offline", false, "do not read the branch from the repository (no network)")
	return cmd
}

func runStatus(ctx context.Context, ios *term.IO, g *globals, o workdir.StatusOptions) error {
	w, err := g.workdir()
	if err != nil {
		return err
	}
	st, err := w.Status(ctx, o)
	if err != nil {
		return err
	}
	if st.TrackingError != "" {
		ios.Warnf("could not read branch %s from the repository (%s); fdl status --offline skips it", st.Branch, st.TrackingError)
	}
	if g.JSON {
		return printJSON(ios, st)
	}
	ios.Printf("On branch %s of %s\n", ios.Ref(st.Branch), st.Repository)
	if st.Base == "" {
		ios.Printf("No version yet: the first commit makes seq 1\n")
	} else {
		ios.Printf("Base version %s (seq %d, snapshot %d)\n", ios.ID(string(st.Base)), st.BaseSeq, st.BaseSnapshot)
	}
	printTracking(ios, g, st)
	if st.PendingWAL != "" {
		ios.Printf("Pending: %s (%d bytes) holds writes committed in DuckDB but not yet checkpointed into the catalog file (a session still attached, or one that ended without a checkpoint); they are listed here and the next commit includes them\n", st.PendingWAL, st.PendingWALBytes)
	}
	if !st.ContinuesBase {
		ios.Printf("%s %s\n", ios.Bad("problem:"), st.Problem)
		if st.PullInterrupted {
			ios.Printf("Finish it with: %s\n", g.next("pull"))
		}
		return nil
	}
	defer printWorkingAttach(ios, st)
	if len(st.Snapshots) == 0 {
		ios.Printf("Nothing new since the base\n")
		return nil
	}
	if len(st.Snapshots) == st.CreationSnapshots {
		ios.Printf("Nothing written to the new catalog yet\n")
		return nil
	}
	printChanges(ios, st)
	if u := st.Undo; u != nil {
		ios.Printf("A %s of version %s (snapshot %d) waits for its commit: %s takes its message\n", u.Kind, ios.ID(string(u.Version)), u.Snapshot, g.next("commit"))
		return nil
	}
	ios.Printf("Commit them with: %s\n", g.next("commit -m MSG"))
	return nil
}

// printTracking prints how the base relates to the head of its branch, and
// what to run next.
func printTracking(ios *term.IO, g *globals, st *workdir.Status) {
	tr, b := st.Tracking, ios.Ref(st.Branch)
	uncommitted := len(st.Snapshots) > 0
	if tr == nil {
		if st.Unpushed > 0 {
			ios.Printf("%d version(s) committed here are not in the repository yet: %s\n", st.Unpushed, g.next("push"))
		}
		return
	}
	switch tr.State {
	case repo.TrackUpToDate:
		ios.Printf("Up to date with %s\n", b)
	case repo.TrackNoBranch:
		if tr.Ahead == 0 {
			ios.Printf("Branch %s does not exist in the repository yet: commit, then %s creates it\n", b, g.next("push"))
		} else {
			ios.Printf("Branch %s does not exist in the repository yet: %s creates it with %d version(s)\n", b, g.next("push"), tr.Ahead)
		}
	case repo.TrackAhead:
		ios.Printf("Ahead of %s by %d version(s) (%d not in the repository yet): %s\n", b, tr.Ahead, st.Unpushed, g.next("push"))
	case repo.TrackBehind:
		ios.Printf("Behind %s by %d version(s) (%s holds seq %d)", b, tr.Behind, b, tr.HeadSeq)
		if uncommitted {
			ios.Printf("; a version committed from here cannot be pushed to %s (not a fast-forward): keep it on a new branch (commit, then %s)\n", b, g.next("push NEW-BRANCH"))
		} else {
			ios.Printf(": %s brings this directory up to date\n", g.next("pull"))
		}
	case repo.TrackDiverged:
		if st.Unpushed == 0 && !uncommitted {
			// Pushed already (to another branch, or to this one before it
			// was moved back): kept in the repository.
			ios.Printf("Diverged from %s: %d version(s) here and %d on %s that the other lacks; yours were pushed and stay in the repository (%s): %s brings this directory to %s's head\n",
				b, tr.Ahead, tr.Behind, b, g.next("show "+string(st.Base)), g.next("pull --discard"), b)
			return
		}
		ios.Printf("Diverged from %s: %d version(s) here and %d on %s that the other lacks; a push to %s would be refused: keep yours on a new branch (%s), then check out %s again\n",
			b, tr.Ahead, tr.Behind, b, b, g.next("push NEW-BRANCH"), b)
	}
}

// printChanges prints what the new snapshots did, per table in words (one
// line per table, view or schema: "main.sales: created, rows inserted (96
// snapshots)"), and the messages snapshots were given; --json keeps the
// raw changes_made of each snapshot. The snapshot DuckLake makes when it
// creates a catalog is not counted.
func printChanges(ios *term.IO, st *workdir.Status) {
	snaps := st.Snapshots[st.CreationSnapshots:]
	first, last := snaps[0].Time.UTC().Format(time.RFC3339), snaps[len(snaps)-1].Time.UTC().Format(time.RFC3339)
	when := "at " + first
	if first != last {
		when = first + " to " + last
	}
	ios.Printf("%d new snapshot(s), %s:\n", len(snaps), ios.Dim(when))
	var names []string
	did := map[string][]string{}
	for _, c := range st.Changes {
		if _, ok := did[c.Name]; !ok {
			names = append(names, c.Name)
		}
		w := oneLine(c.Change)
		if c.Snapshots > 1 {
			w += " (" + strconv.Itoa(c.Snapshots) + " snapshots)"
		}
		did[c.Name] = append(did[c.Name], w)
	}
	for _, n := range names {
		ios.Printf("  %s: %s\n", oneLine(n), strings.Join(did[n], ", "))
	}
	for _, s := range snaps {
		if s.Message != "" {
			ios.Printf("  snapshot %d: %s\n", s.ID, oneLine(s.Message))
		}
	}
	if len(st.Tables) > 0 {
		ios.Printf("Tables touched: %s\n", strings.Join(st.Tables, ", "))
	}
}

// printWorkingAttach prints the line that attaches the working catalog,
// as checkout printed it (status is where to find it again, before the
// first push as after); not with --offline, which reads no repository.
func printWorkingAttach(ios *term.IO, st *workdir.Status) {
	if st.Attach != "" {
		ios.Printf("Attach the working catalog with:\n  %s\n", st.Attach)
	}
}
