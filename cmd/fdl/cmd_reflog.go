package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

func newReflogCmd(ios *term.IO, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reflog [REF]",
		Short: "Show how refs moved: pushes, tags, branch creation, deletion and moves back",
		Long: `Show the ref log of REF (a branch, tag or request name, or a full ref name
such as refs/heads/main), or of every ref, newest first. Every ref move
appends one entry (logs/<ref>/<entry id>.json, never changed): the ref, the
version it held and the version it holds after, the action (push, create,
delete, move, move-back), the author, the time and why.

A version a ref log names stays in the repository: a branch moved back or
deleted loses no version (gc keeps them while the retention policy does).

On a terminal times are local and columns aligned; otherwise one
tab-separated line per entry with RFC 3339 UTC times:
  time<TAB>ref<TAB>action<TAB>old<TAB>new<TAB>author<TAB>why`,
		Example: `  fdl reflog main --repo /srv/repos/sales
  fdl reflog --json`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runReflog(cmd.Context(), ios, g, optionalArg(a, 0))
		},
	}
	g.addRepoFlag(cmd)
	return cmd
}

// reflogEntry is one item of 'fdl reflog --json'.
type reflogEntry struct {
	refs.LogEntry
	OldShort string `json:"old_short,omitempty"`
	NewShort string `json:"new_short,omitempty"`
}

func runReflog(ctx context.Context, ios *term.IO, g *globals, name string) error {
	return g.withRepo(ctx, func(r *repo.Repo) error {
		var err error
		var entries []refs.LogEntry
		var bad []error
		if name != "" {
			// A full name, else a branch, a tag, a request (deleted ones too:
			// their logs stay).
			cands := []refs.Name{refs.Name(name)}
			if !strings.HasPrefix(name, "refs/") {
				if err := refs.CheckShort(name); err != nil {
					return usageError{fmt.Errorf("ref name %q: %v", name, err)}
				}
				cands = []refs.Name{refs.Name(refs.HeadsPrefix + name), refs.Name(refs.TagsPrefix + name), refs.Name(refs.RequestsPrefix + name)}
			}
			for _, c := range cands {
				if entries, bad, err = r.RefLog(ctx, c); err != nil {
					return err
				}
				if len(entries) > 0 || len(bad) > 0 {
					break
				}
			}
			if len(entries) == 0 && len(bad) == 0 {
				return fmt.Errorf("no ref log for %q in %s: no branch, tag or request of that name ever moved (list refs with fdl branch -l, fdl tag -l): %w", name, r.URL(), refs.ErrNotFound)
			}
		} else if entries, bad, err = r.RefLog(ctx, ""); err != nil {
			return err
		}
		n, err := r.Abbrev(ctx)
		if err != nil {
			return err
		}
		short := func(id version.ID) string {
			if id == "" {
				return ""
			}
			return n.Short(id)
		}
		if g.JSON {
			out := make([]reflogEntry, len(entries))
			for i, e := range entries {
				out[i] = reflogEntry{e, short(e.Old), short(e.New)}
			}
			if err := printJSON(ios, out); err != nil {
				return err
			}
		} else {
			dash := func(s string) string {
				if s == "" {
					return "-"
				}
				return s
			}
			for _, e := range entries {
				if !ios.OutTTY {
					ios.Printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.RFC3339), e.Ref.Short(), e.Action, dash(short(e.Old)), dash(short(e.New)), e.Author, oneLine(e.Why))
					continue
				}
				ios.Printf("%s  %s  %-9s %s -> %s  %s  %s\n", ios.Dim(e.Time.Local().Format("2006-01-02 15:04:05")), ios.Ref(e.Ref.Short()), e.Action,
					ios.ID(dash(short(e.Old))), ios.ID(dash(short(e.New))), e.Author, oneLine(e.Why))
			}
		}
		if len(bad) > 0 {
			for _, e := range bad {
				ios.Printf("%s %v\n", ios.Bad("bad entry:"), e)
			}
			return bad[0]
		}
		return nil
	})
}

// runMoveBranch is 'fdl branch -f NAME REV [--backwards] [--why TEXT]'.
func runMoveBranch(ctx context.Context, ios *term.IO, g *globals, name, rev string, backwards bool, why string) error {
	return g.withRepo(ctx, func(r *repo.Repo) error {
		r.SetOptions(repo.Options{Step: stepHook})
		res, err := r.MoveBranch(ctx, name, rev, repo.MoveOptions{Backwards: backwards, Why: why})
		if err != nil {
			return err
		}
		if res.Backwards && res.Old != "" {
			if ids, err := r.OnlyReachedFrom(ctx, res.Old); err == nil {
				warnUnprotected(ctx, ios, r, ids, "undone")
			}
		}
		if g.JSON {
			return printJSON(ios, res)
		}
		n, _ := r.Abbrev(ctx)
		switch {
		case res.UpToDate:
			ios.Printf("Branch %s already holds %s\n", ios.Ref(name), ios.ID(n.Short(res.New)))
		case res.Backwards && res.Old == "":
			ios.Printf("Repaired branch %s: it now holds %s (what the damaged ref held is in the ref log: fdl reflog %s)\n", ios.Ref(name), ios.ID(n.Short(res.New)), name)
		case res.Backwards:
			ios.Printf("Moved branch %s back: %s -> %s; %d version(s) undone, kept in the repository and the ref log (fdl reflog %s)\n",
				ios.Ref(name), ios.ID(n.Short(res.Old)), ios.ID(n.Short(res.New)), len(res.Undone), name)
		default:
			ios.Printf("Moved branch %s forward: %s -> %s\n", ios.Ref(name), ios.ID(n.Short(res.Old)), ios.ID(n.Short(res.New)))
		}
		return nil
	})
}

// warnUnprotected warns (stderr) when the retention policy lets versions
// no branch holds any more leave retention at the next gc.
func warnUnprotected(ctx context.Context, ios *term.IO, r *repo.Repo, ids []version.ID, what string) {
	leaving, p, err := r.Unprotected(ctx, ids, time.Now())
	if err != nil || len(leaving) == 0 {
		return
	}
	keep := "the retention policy keeps them only through a branch or tag"
	if p.KeepWithin > 0 {
		keep = fmt.Sprintf("the retention policy keeps versions only the ref log reaches for %s after they were made", p.KeepWithin)
	}
	ios.Warnf("%d %s version(s) leave retention at the next 'fdl gc --yes' (their catalogs go, their records stay) unless a tag or another branch keeps them: %s; to keep them longer: fdl retention --keep-within 30d, or tag them", len(leaving), what, keep)
}
