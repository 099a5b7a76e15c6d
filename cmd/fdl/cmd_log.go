package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
)

type logOptions struct {
	Rev           string
	Max           int
	ShowSignature bool
	Signers       string
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
Refs that point at a version are named beside its id, as git log does:
(main, tag: 2025-final, request: fix).

On a terminal times are local and columns aligned; otherwise one
tab-separated line per version with RFC 3339 UTC times, the refs last
(comma-separated short names, tags as tag:NAME, requests as request:NAME;
empty for none):
  seq<TAB>short id<TAB>created_at<TAB>author<TAB>message<TAB>refs

--show-signature adds who signed each version's record (good, by whom, with
--signers FILE; unsigned; or why it is not good); without a terminal, two
more columns: the status, then the principals (good) or the key:
  …<TAB>refs<TAB>signature status<TAB>signer`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				o.Rev = a[0]
			}
			if cmd.Flags().Changed("max-count") && o.Max < 1 {
				return usageError{fmt.Errorf("-n takes a number of versions, 1 or more (got %d)", o.Max)}
			}
			if o.Signers != "" && !o.ShowSignature {
				return usageError{fmt.Errorf("--signers goes with --show-signature")}
			}
			return runLog(cmd.Context(), ios, g, o)
		},
	}
	g.addRepoFlag(cmd)
	cmd.Flags().IntVarP(&o.Max, "max-count", "n", 0, "show at most N versions (N >= 1)")
	cmd.Flags().BoolVar(&o.ShowSignature, "show-signature", false, "say who signed each version")
	cmd.Flags().StringVar(&o.Signers, "signers", "", "with --show-signature: judge signatures by this allowed signers `FILE`")
	return cmd
}

func runLog(ctx context.Context, ios *term.IO, g *globals, o *logOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		var h *repo.History
		var err error
		if o.ShowSignature {
			h, err = r.SignedHistory(ctx, l, o.Rev, o.Max, g.path(o.Signers))
		} else {
			h, err = r.History(ctx, l, o.Rev, o.Max)
		}
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
				ios.Printf("%d\t%s\t%s\t%s\t%s\t%s%s\n", e.Seq, e.Short, e.CreatedAt.UTC().Format(time.RFC3339), oneLine(e.Author), msg, strings.Join(decorations(e.Refs, ""), ","), signatureColumns(e.Signature))
				continue
			}
			deco := ""
			if d := decorations(e.Refs, " "); len(d) > 0 {
				deco = " (" + ios.Ref(strings.Join(d, ", ")) + ")"
			}
			ios.Printf("%s  %s%s  %s  %s  %s\n", fmt.Sprintf("%4d", e.Seq), ios.ID(e.Short), deco, ios.Dim(e.CreatedAt.Local().Format("2006-01-02 15:04:05 MST")), oneLine(e.Author), msg)
			printSignature(ios, "      ", e.Signature)
		}
		return nil
	})
}

// decorations names refs as log shows them beside an id: a branch by its
// name, a tag as "tag:"+sep+NAME, a request as "request:"+sep+NAME. A name
// holding a comma or a double quote (ref names may) is written as a Go
// quoted string, so the comma-separated list splits one way.
func decorations(names []refs.Name, sep string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		name := n.Short()
		if strings.ContainsAny(name, ",\"") {
			name = strconv.Quote(name)
		}
		switch n.Kind() {
		case refs.KindBranch:
			out = append(out, name)
		default:
			out = append(out, string(n.Kind())+":"+sep+name)
		}
	}
	return out
}

// signatureColumns is the signature's two tab-separated columns of a log
// line without a terminal ("" without --show-signature): the status, then
// the principals (comma-separated) for a good one, the key otherwise.
func signatureColumns(c *repo.SignatureCheck) string {
	if c == nil {
		return ""
	}
	who := c.Key
	if c.Status == repo.SigGood {
		who = strings.Join(c.Principals, ",")
	}
	return "\t" + string(c.Status) + "\t" + who
}
