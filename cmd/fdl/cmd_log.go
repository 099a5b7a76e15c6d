package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
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
directory's branch), newest first. Short ids are unique in the repository.
On a terminal times are local and columns aligned; otherwise one
tab-separated line per version with RFC 3339 UTC times:
  seq<TAB>short id<TAB>created_at<TAB>author<TAB>message`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				o.Rev = a[0]
			}
			return runLog(cmd.Context(), ios, g, o)
		},
	}
	cmd.PersistentFlags().StringVar(&g.Repo, "repo", "", "repository `URL` (default: the working directory's)")
	cmd.Flags().IntVarP(&o.Max, "max-count", "n", 0, "show at most N versions")
	return cmd
}

// logEntry is one line of 'fdl log --json'.
type logEntry struct {
	*version.Record
	Short string `json:"short_id"`
}

func (g *globals) defaultRev() string {
	if g.Repo == "" {
		if w, err := g.workdir(); err == nil {
			if w.State.Base != "" && w.State.Base != w.State.Upstream {
				return string(w.State.Base)
			}
			return w.State.Branch
		}
	}
	return "HEAD"
}

func runLog(ctx context.Context, ios *term.IO, g *globals, o *logOptions) error {
	r, err := g.openRepo(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	rev := o.Rev
	if rev == "" {
		rev = g.defaultRev()
	}
	res, err := r.Resolve(ctx, rev)
	if err != nil {
		return err
	}
	recs, err := r.Log(ctx, res.ID, o.Max)
	if err != nil {
		return err
	}
	n, err := r.ShortLen(ctx)
	if err != nil {
		return err
	}
	if g.JSON {
		out := make([]logEntry, len(recs))
		for i, rec := range recs {
			out[i] = logEntry{rec, repo.Short(rec.ID, n)}
		}
		return printJSON(ios, out)
	}
	for _, rec := range recs {
		short := repo.Short(rec.ID, n)
		if !ios.OutTTY {
			ios.Printf("%d\t%s\t%s\t%s\t%s\n", rec.Seq, short, rec.CreatedAt.UTC().Format(time.RFC3339), rec.Author, oneLine(rec.Message))
			continue
		}
		ios.Printf("%s  %s  %s  %s  %s\n", fmt.Sprintf("%4d", rec.Seq), ios.ID(short), ios.Dim(rec.CreatedAt.Local().Format("2006-01-02 15:04:05")), rec.Author, oneLine(rec.Message))
	}
	return nil
}

func oneLine(s string) string {
	for i, c := range s {
		if c == '\n' || c == '\r' {
			return s[:i] + " …"
		}
	}
	return s
}
