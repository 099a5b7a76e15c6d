package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
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

// logEntry is one line of 'fdl log --json'.
type logEntry struct {
	*version.Record
	Short string `json:"short_id"`
	// Local is true for a version committed in this working directory and
	// not pushed yet.
	Local bool `json:"local,omitempty"`
	// Retired is true for a version out of retention: its record stays,
	// its catalog is deleted (fdl gc).
	Retired bool `json:"retired,omitempty"`
}

// defaultRev is the revision log and show use without one: the working
// directory's upstream (its newest pushed version), else its branch, else
// HEAD.
func (g *globals) defaultRev() string {
	if g.Repo == "" {
		if w, err := g.workdir(); err == nil {
			if w.State.Upstream != "" {
				return string(w.State.Upstream)
			}
			return w.State.Branch
		}
	}
	return "HEAD"
}

// localVersions returns the working directory's unpushed versions, newest
// first, when log or show run in one without --repo and without a revision.
func (g *globals) localVersions(rev string) []*version.Record {
	if rev != "" || g.Repo != "" {
		return nil
	}
	w, err := g.workdir()
	if err != nil {
		return nil
	}
	pend, err := w.PendingVersions()
	if err != nil {
		return nil
	}
	out := make([]*version.Record, 0, len(pend))
	for i := len(pend) - 1; i >= 0; i-- {
		out = append(out, pend[i].Record)
	}
	return out
}

// shortLen is the short-id length over the store's ids and local ones.
func shortLen(ctx context.Context, r *repo.Repo, local []*version.Record) (refs.Abbrev, error) {
	ids := make([]version.ID, len(local))
	for i, rec := range local {
		ids[i] = rec.ID
	}
	return r.Abbrev(ctx, ids...)
}

func runLog(ctx context.Context, ios *term.IO, g *globals, o *logOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo) error {
		local := g.localVersions(o.Rev)
		rev := o.Rev
		if rev == "" {
			rev = g.defaultRev()
		}
		recs := local
		if len(local) == 0 || local[len(local)-1].Parent() != "" {
			res, err := r.Resolve(ctx, rev)
			if err != nil && !(len(local) > 0 && errors.Is(err, refs.ErrUnknownRev)) {
				return err
			}
			if err == nil {
				stored, err := r.Log(ctx, res.ID, 0)
				if err != nil {
					return err
				}
				recs = append(recs, stored...)
			}
		}
		if o.Max > 0 && len(recs) > o.Max {
			recs = recs[:o.Max]
		}
		n, err := shortLen(ctx, r, local)
		if err != nil {
			return err
		}
		isLocal := map[version.ID]bool{}
		for _, rec := range local {
			isLocal[rec.ID] = true
		}
		retired, err := r.RetiredIDs(ctx)
		if errors.Is(err, retention.ErrInvalid) {
			// A damaged floor must not hide the history: markers still say
			// which catalogs are gone.
			ios.Warnf("%v", err)
			retired, err = r.MarkedIDs(ctx)
		}
		if err != nil {
			return err
		}
		if g.JSON {
			out := make([]logEntry, len(recs))
			for i, rec := range recs {
				out[i] = logEntry{rec, n.Short(rec.ID), isLocal[rec.ID], retired[rec.ID]}
			}
			return printJSON(ios, out)
		}
		for _, rec := range recs {
			short := n.Short(rec.ID)
			msg := oneLine(rec.Message)
			if isLocal[rec.ID] {
				msg = "(not pushed) " + msg
			}
			if retired[rec.ID] {
				msg = "(retired) " + msg
			}
			if !ios.OutTTY {
				ios.Printf("%d\t%s\t%s\t%s\t%s\n", rec.Seq, short, rec.CreatedAt.UTC().Format(time.RFC3339), oneLine(rec.Author), msg)
				continue
			}
			ios.Printf("%s  %s  %s  %s  %s\n", fmt.Sprintf("%4d", rec.Seq), ios.ID(short), ios.Dim(rec.CreatedAt.Local().Format("2006-01-02 15:04:05 MST")), oneLine(rec.Author), msg)
		}
		return nil
	})
}

// oneLine returns the first line of s, with " …" when more follows, and
// control characters escaped (a tab would break tab-separated output; an
// escape sequence would drive the terminal).
func oneLine(s string) string {
	for i, c := range s {
		if c == '\n' || c == '\r' {
			return printable(s[:i]) + " …"
		}
	}
	return printable(s)
}

// printable escapes control characters other than newline as Go escapes
// (\t, \x1b).
func printable(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if isControl(c) {
			q := strconv.QuoteRune(c)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func isControl(c rune) bool { return c != '\n' && unicode.IsControl(c) }
