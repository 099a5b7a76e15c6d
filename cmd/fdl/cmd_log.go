package main

import (
	"bufio"
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

type logOptions struct {
	Rev string
	Max int
}

func newLogCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &logOptions{}
	cmd := &cobra.Command{
		Use:   "log [REV]",
		Short: "Show first-parent history: seq, short id, time, author, message",
		Long: `Show the first-parent history of REV (default: HEAD's branch, or the working
directory's branch), newest first. A short id is the first 12 hex digits of
the version's id (the millisecond it was made), more where two versions
share that millisecond: it stays unambiguous as the repository grows.
On a terminal times are local and columns aligned; otherwise one
tab-separated line per version with RFC 3339 UTC times:
  seq<TAB>short id<TAB>created_at<TAB>author<TAB>message`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				o.Rev = a[0]
			}
			if cmd.Flags().Changed("max-count") && o.Max < 1 {
				return usageError{fmt.Errorf("-n takes a number of versions, 1 or more (got %d)", o.Max)}
			}
			return runLog(cmd.Context(), ios, g, o)
		},
	}
	g.addRepoFlag(cmd)
	cmd.Flags().IntVarP(&o.Max, "max-count", "n", 0, "show at most N versions (N >= 1)")
	return cmd
}

func runLog(ctx context.Context, ios *term.IO, g *globals, o *logOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo) error {
		h, err := r.History(ctx, o.Rev, o.Max)
		if err != nil {
			return err
		}
		warn(ios, h.Warnings)
		if g.JSON {
			return printJSON(ios, h.Entries)
		}
		// One write per screenful, not per version (10,000 lines).
		bw := bufio.NewWriter(ios.Out)
		defer bw.Flush()
		buffered := *ios
		buffered.Out = bw
		ios := &buffered
		for _, e := range h.Entries {
			msg := oneLine(e.Message)
			if e.Local {
				msg = "(not pushed) " + msg
			}
			if e.Retired {
				msg = "(retired) " + msg
			}
			if !ios.OutTTY {
				ios.Printf("%d\t%s\t%s\t%s\t%s\n", e.Seq, e.Short, e.CreatedAt.UTC().Format(time.RFC3339), oneLine(e.Author), msg)
				continue
			}
			ios.Printf("%s  %s  %s  %s  %s\n", fmt.Sprintf("%4d", e.Seq), ios.ID(e.Short), ios.Dim(e.CreatedAt.Local().Format("2006-01-02 15:04:05 MST")), oneLine(e.Author), msg)
		}
		return nil
	})
}
