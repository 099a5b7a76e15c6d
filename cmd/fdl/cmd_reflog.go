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
)

func newReflogCmd(ios *term.IO, g *globals) *cobra.Command {
	var max int
	cmd := &cobra.Command{
		Use:   "reflog [REF] [-n N]",
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
  fdl reflog -n 5
  fdl reflog --json`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if cmd.Flags().Changed("max-count") && max < 1 {
				return usageError{fmt.Errorf("-n takes a number of entries, 1 or more (got %d)", max)}
			}
			return runReflog(cmd.Context(), ios, g, optionalArg(a, 0), max)
		},
	}
	g.addRepoFlag(cmd)
	cmd.Flags().IntVarP(&max, "max-count", "n", 0, "show at most the newest N entries (N >= 1)")
	return cmd
}

// runReflog is 'fdl reflog [REF] [-n N]': max > 0 keeps the newest max
// entries.
func runReflog(ctx context.Context, ios *term.IO, g *globals, name string, max int) error {
	if name != "" && !strings.HasPrefix(name, "refs/") {
		if err := refs.CheckShort(name); err != nil {
			return usageError{fmt.Errorf("ref name %q: %v", name, err)}
		}
	}
	return g.withRepo(ctx, func(r *repo.Repo, _ *repo.Local) error {
		l, err := r.RefLogOf(ctx, name)
		if err != nil {
			return err
		}
		if max > 0 && len(l.Entries) > max {
			l.Entries = l.Entries[:max] // newest first
		}
		if g.JSON {
			if err := printJSON(ios, l.Entries); err != nil {
				return err
			}
		} else {
			dash := func(s string) string {
				if s == "" {
					return "-"
				}
				return s
			}
			for _, e := range l.Entries {
				if !ios.OutTTY {
					ios.Printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.RFC3339), e.Ref.Short(), e.Action, dash(e.OldShort), dash(e.NewShort), e.Author, oneLine(e.Why))
					continue
				}
				ios.Printf("%s  %s  %-9s %s -> %s  %s  %s\n", ios.Dim(e.Time.Local().Format("2006-01-02 15:04:05")), ios.Ref(e.Ref.Short()), e.Action,
					ios.ID(dash(e.OldShort)), ios.ID(dash(e.NewShort)), e.Author, oneLine(e.Why))
			}
		}
		if len(l.Bad) > 0 {
			for _, e := range l.Bad {
				ios.Printf("%s %v\n", ios.Bad("bad entry:"), message(e))
			}
			return l.Bad[0]
		}
		return nil
	})
}

// runMoveBranch is 'fdl branch -f NAME REV [--backwards] [--why TEXT]
// [--allow-format-change]'.
func runMoveBranch(ctx context.Context, ios *term.IO, g *globals, name, rev string, mo repo.MoveOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		res, err := r.MoveBranch(ctx, name, rev, mo)
		if err != nil {
			return err
		}
		warnUnprotected(ios, g, res.Unprotected, "undone")
		if g.JSON {
			return printJSON(ios, res)
		}
		n, short := res.Branch, res.Abbrev.Short
		switch {
		case res.UpToDate:
			ios.Printf("Branch %s already holds %s\n", ios.Ref(n), ios.ID(short(res.New)))
		case res.Backwards && res.Old == "":
			ios.Printf("Repaired branch %s: it now holds %s (what the damaged ref held is in the ref log: fdl reflog %s)\n", ios.Ref(n), ios.ID(short(res.New)), n)
		case res.Backwards:
			ios.Printf("Moved branch %s back: %s -> %s; %d version(s) undone, kept in the repository and the ref log (fdl reflog %s)\n",
				ios.Ref(n), ios.ID(short(res.Old)), ios.ID(short(res.New)), len(res.Undone), n)
		default:
			ios.Printf("Moved branch %s forward: %s -> %s\n", ios.Ref(n), ios.ID(short(res.Old)), ios.ID(short(res.New)))
		}
		return nil
	})
}

// warnUnprotected warns (stderr) when the retention policy lets versions
// no branch holds any more leave retention at the next gc.
func warnUnprotected(ios *term.IO, g *globals, u *repo.Unprotected, what string) {
	if u == nil {
		return
	}
	keep := "the retention policy keeps them only through a branch or tag"
	if u.Policy.KeepWithin > 0 {
		keep = fmt.Sprintf("the retention policy keeps versions only the ref log reaches for %s after they were made", u.Policy.KeepWithin)
	}
	ios.Warnf("%d %s version(s) leave retention at the next '%s' (their catalogs go, their records stay) unless a tag or another branch keeps them: %s; to keep them longer: %s, or tag them", len(u.IDs), what, g.next("gc --yes"), keep, g.next("retention --keep-within 30d"))
}
