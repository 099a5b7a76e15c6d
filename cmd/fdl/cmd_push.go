package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

func newPushCmd(ios *term.IO, g *globals) *cobra.Command {
	var o workdir.PushOptions
	cmd := &cobra.Command{
		Use:   "push [BRANCH]",
		Short: "Upload local versions and move the branch (fast-forward only)",
		Long: `Upload the versions committed in this working directory (catalog, then
dataset.json, then version.json, each create-only) and move BRANCH (default:
the branch it was checked out from) with a compare-and-swap. The branch moves
only if the version it holds is an ancestor of yours (fast-forward); if not,
or if another push moved it first, the push is refused with exit code 3 and
nothing moves. A push that was interrupted can be run again.

A push that would change which DuckDB releases read the branch — a newer
DuckLake format or DuckDB storage version than the version it holds
(readers on the older DuckDB release would lose the branch), or an older or
other one (readers on the newer release would) — is refused unless
--allow-format-change is given (--allow-format-upgrade is its older name);
the refusal names both formats and the DuckDB releases that read them.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runPush(cmd.Context(), ios, g, strings.TrimPrefix(optionalArg(a, 0), refs.HeadsPrefix), o)
		},
	}
	formatChangeFlags(cmd, &o.AllowFormatChange, "move the branch to a version that other DuckDB releases read than the one it holds (a newer or older DuckLake format or storage version)")
	return cmd
}

func runPush(ctx context.Context, ios *term.IO, g *globals, branch string, o workdir.PushOptions) error {
	w, err := g.workdir()
	if err != nil {
		return err
	}
	defer w.Close()
	o.Branch = branch
	res, err := w.Push(ctx, o)
	g.progressDone()
	if err != nil {
		return err
	}
	if g.JSON {
		return printJSON(ios, res)
	}
	short := res.Abbrev.Short
	switch {
	case res.UpToDate && res.Ahead:
		ios.Printf("Everything up to date: %s holds %s and has moved on to %s\n", ios.Ref(res.Branch), ios.ID(short(res.New)), ios.ID(short(res.Old)))
		ios.Printf("Bring this directory up to date with: %s\n", g.next("pull"))
	case res.UpToDate:
		ios.Printf("Everything up to date: %s holds %s\n", ios.Ref(res.Branch), ios.ID(short(res.New)))
	case res.Old == "":
		ios.Printf("Created branch %s at %s (%d version(s) uploaded)\n", ios.Ref(res.Branch), ios.ID(short(res.New)), res.Uploaded)
	default:
		ios.Printf("%s: %s..%s (%d version(s) uploaded)\n", ios.Ref(res.Branch), ios.ID(short(res.Old)), ios.ID(short(res.New)), res.Uploaded)
	}
	if c := res.FormatChange; c != nil {
		printFormatChange(ios, res.Branch, c)
	}
	return nil
}

// printFormatChange says what a move allowed to change the branch's
// readers changed.
func printFormatChange(ios *term.IO, branch string, c *repo.FormatChange) {
	if c.Upgrade {
		ios.Printf("Format upgraded: %s moved from %s to %s; readers on the older DuckDB release no longer read it\n", ios.Ref(branch), c.From, c.To)
		return
	}
	ios.Printf("Format changed: %s moved from %s to %s; the DuckDB releases that read it changed\n", ios.Ref(branch), c.From, c.To)
}
