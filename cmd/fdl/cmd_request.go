package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

type requestOptions struct {
	From        string // --from DIR|REV
	Into, Title string
}

func newRequestCmd(ios *term.IO, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "request",
		Short: "Offer versions for review without moving a branch, and approve or drop them",
		Long: `A request publishes a version under refs/requests/NAME for review, for a
target branch (--into, default: the working directory's branch, else
HEAD's), without moving that branch. Approving it moves the target forward
to the request's version — a fast-forward, refused with exit code 3 as any
push is when the target moved on — and removes the request. Every move is
in the ref log (fdl reflog NAME), and a request keeps its versions in
retention while it exists.

  fdl request create NAME [--from DIR|REV] [--into BRANCH] [-m TITLE]
  fdl request update NAME [--from DIR|REV]
  fdl request list
  fdl request show NAME
  fdl request diff NAME [--stat]
  fdl request approve NAME
  fdl request drop NAME

--from names a working directory (its committed versions are uploaded, as
fdl push does, and its base is offered) or a revision already in the
repository; default: the working directory fdl runs in.`,
		Example: `  fdl request create fix-prices -m "prices of the 12th, corrected"
  fdl request create nightly --from nightly-branch --into main --repo s3://bucket/sales
  fdl request list
  fdl request approve fix-prices`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRequestList(cmd.Context(), ios, g)
		},
	}
	g.addRepoFlag(cmd)
	for _, c := range []*cobra.Command{
		newRequestCreateCmd(ios, g),
		newRequestUpdateCmd(ios, g),
		newRequestListCmd(ios, g),
		newRequestShowCmd(ios, g),
		newRequestDiffCmd(ios, g),
		newRequestApproveCmd(ios, g),
		newRequestDropCmd(ios, g),
	} {
		g.addRepoFlag(c)
		cmd.AddCommand(c)
	}
	return cmd
}

// newRequestCreateCmd is fdl request create: publish a version as a request.
func newRequestCreateCmd(ios *term.IO, g *globals) *cobra.Command {
	create := &requestOptions{}
	createCmd := &cobra.Command{
		Use:   "create NAME [--from DIR|REV] [--into BRANCH] [-m TITLE]",
		Short: "Publish a version as request NAME for a branch, without moving the branch",
		Long: `Publish a version as refs/requests/NAME for review by the target branch
(--into, default: the working directory's branch, else HEAD's). From a
working directory (the default, or --from DIR) its committed versions are
uploaded first, as fdl push does. Refused when the version adds nothing to
the target, when approving it would not be a fast-forward (exit code 3: the
target moved on; pull or check it out again and redo the change), and when
a request of that name holds another version (exit code 4). Creating it
again at the same version succeeds and changes nothing.`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRequestPublish(cmd.Context(), ios, g, a[0], create, true)
		},
	}
	createCmd.Flags().StringVar(&create.From, "from", "", "working `DIR` or revision to offer (default: the working directory fdl runs in)")
	createCmd.Flags().StringVar(&create.Into, "into", "", "target `BRANCH` (default: the working directory's branch, else HEAD's)")
	createCmd.Flags().StringVarP(&create.Title, "message", "m", "", "what the request is for (default: the version's message)")
	return createCmd
}

// newRequestUpdateCmd is fdl request update: move a request to another version.
func newRequestUpdateCmd(ios *term.IO, g *globals) *cobra.Command {
	update := &requestOptions{}
	updateCmd := &cobra.Command{
		Use:   "update NAME [--from DIR|REV]",
		Short: "Move request NAME to a new version (e.g. rebuilt on the target's head)",
		Long: `Move request NAME to another version: from a working directory (uploading
its committed versions) or a revision. A request is a proposal, not a
published history: the new version need not descend from the one it held
(that one stays in the ref log, logged "replace"), but it must add to the
target and be a fast-forward of it.`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRequestPublish(cmd.Context(), ios, g, a[0], update, false)
		},
	}
	updateCmd.Flags().StringVar(&update.From, "from", "", "working `DIR` or revision to offer (default: the working directory fdl runs in)")
	updateCmd.Flags().StringVarP(&update.Title, "message", "m", "", "what the update is for (default: the version's message)")
	return updateCmd
}

// newRequestListCmd is fdl request list.
func newRequestListCmd(ios *term.IO, g *globals) *cobra.Command {
	listCmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List requests: target, state (open, stale, merged), versions they add",
		Long: `List every request: its version, target branch, state — open (approve is
a fast-forward), stale (the target moved on: approve is refused), merged
(the target holds it already), no-target (the target branch is gone) — and
the number of versions approving it would add. Off a terminal, one
tab-separated line per request:
  name<TAB>short id<TAB>seq<TAB>into<TAB>state<TAB>adds<TAB>title`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRequestList(cmd.Context(), ios, g)
		},
	}
	return listCmd
}

// newRequestShowCmd is fdl request show.
func newRequestShowCmd(ios *term.IO, g *globals) *cobra.Command {
	showCmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a request: target, state, the versions it adds, its ref log",
		Args:  args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRequestShow(cmd.Context(), ios, g, a[0])
		},
	}
	return showCmd
}

// newRequestDiffCmd is fdl request diff: what approving a request would change.
func newRequestDiffCmd(ios *term.IO, g *globals) *cobra.Command {
	diffOpts := &diffOptions{}
	diffCmd := &cobra.Command{
		Use:   "diff NAME [--stat]",
		Short: "Show what approving request NAME would change on its target branch",
		Long: `Show what approving request NAME would change on its target branch: the
request's version against the last version it shares with the target's head
(as fdl diff TARGET...REQUEST), in fdl diff's form: schemas, tables, views
and columns changed, rows inserted and deleted, data files and bytes.`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return g.withRepo(cmd.Context(), func(r *repo.Repo, l *repo.Local) error {
				d, err := r.DiffRequest(cmd.Context(), a[0])
				if err != nil {
					return err
				}
				return printDiffResult(ios, g, diffOpts, d)
			})
		},
	}
	diffCmd.Flags().BoolVar(&diffOpts.Stat, "stat", false, "one line per table changed, then a summary")
	return diffCmd
}

// newRequestApproveCmd is fdl request approve: the fast-forward of the target.
func newRequestApproveCmd(ios *term.IO, g *globals) *cobra.Command {
	approve := repo.PushOptions{}
	approveCmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Move the target branch forward to the request's version (fast-forward only)",
		Long: `Move the request's target branch forward to its version with one
compare-and-swap (logged "approve" in the branch's ref log), then remove the
request (logged "delete"). Refused with exit code 3, moving nothing, when the
target does not lead to the request's version (it moved on since: the
request must be rebuilt on its head and updated) or when another writer
moved the target first. As for a push, a version that other DuckDB
releases read than the target's head (a newer or older DuckLake format or
storage version) needs --allow-format-change.`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRequestApprove(cmd.Context(), ios, g, a[0], approve)
		},
	}
	formatChangeFlags(approveCmd, &approve.AllowFormatChange, "allow moving the target to a version that other DuckDB releases read (a newer or older DuckLake format or storage version)")
	return approveCmd
}

// newRequestDropCmd is fdl request drop.
func newRequestDropCmd(ios *term.IO, g *globals) *cobra.Command {
	dropCmd := &cobra.Command{
		Use:   "drop NAME",
		Short: "Remove a request without approving it (its versions stay)",
		Args:  args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runRequestDrop(cmd.Context(), ios, g, a[0])
		},
	}
	return dropCmd
}

// requestSource says where a request's version comes from: a working
// directory (--from DIR, or the one fdl runs in) or a revision.
func (g *globals) requestSource(from string) (*workdir.Workdir, string, error) {
	if from == "" {
		w, err := g.workdir()
		if errors.Is(err, workdir.ErrNotWorkdir) {
			return nil, "", usageError{fmt.Errorf("no version to offer: pass --from DIR (a working directory) or --from REV (a revision), or run inside a working directory")}
		}
		return w, "", err
	}
	dir := g.path(from)
	if _, err := os.Stat(filepath.Join(dir, workdir.StateDir, workdir.StateFile)); err == nil {
		w, err := workdir.Open(dir, g.options())
		return w, "", err
	}
	return nil, from, nil
}

// sameRepository refuses --repo naming another repository than the one
// the working directory w publishes to (a request made from a working
// directory goes to its own repository; following --repo silently would
// write where the user did not look).
func (g *globals) sameRepository(w *workdir.Workdir) error {
	if g.Repo == "" {
		return nil
	}
	named, own := g.Repo, w.State.Repository
	if p, ok := strings.CutPrefix(named, "file://"); ok {
		named = p
	}
	if !store.LooksLikeURL(named) {
		if abs, err := filepath.Abs(named); err == nil {
			named = abs
		}
	}
	if strings.TrimRight(named, "/") == strings.TrimRight(own, "/") {
		return nil
	}
	return usageError{fmt.Errorf("--repo %s names another repository than the one working directory %s publishes to (%s): leave --repo out to offer its versions there, or offer a version of %s with --from REV", g.Repo, w.Dir, own, g.Repo)}
}

func runRequestPublish(ctx context.Context, ios *term.IO, g *globals, name string, o *requestOptions, create bool) error {
	w, rev, err := g.requestSource(o.From)
	if err != nil {
		return err
	}
	var res repo.PushResult
	if w != nil {
		// The working directory's base, its unpushed versions uploaded.
		defer w.Close()
		if err := g.sameRepository(w); err != nil {
			return err
		}
		switch {
		case o.From != "" && g.Dir == "":
			g.Dir = o.From // the next commands and hints run there (-C DIR)
		case g.Repo == "" && o.From != "":
			g.opened = w.State.Repository // they name its repository
		}
		res, err = w.PublishRequest(ctx, name, workdir.RequestOptions{Update: !create, Into: o.Into, Title: o.Title})
	} else {
		err = g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
			ro := repo.RequestOptions{Rev: rev, Into: o.Into, Title: o.Title, Local: l}
			if create {
				res, err = r.CreateRequest(ctx, name, ro)
			} else {
				res, err = r.UpdateRequest(ctx, name, ro)
			}
			return err
		})
	}
	g.progressDone()
	if err != nil {
		return err
	}
	if g.JSON {
		return printJSON(ios, res)
	}
	short := res.Abbrev.Short
	switch {
	case res.UpToDate:
		ios.Printf("Request %s already holds %s\n", ios.Ref(name), ios.ID(short(res.New)))
	case create:
		ios.Printf("Created request %s at %s (%d version(s) uploaded); review it with %s, approve it with %s\n",
			ios.Ref(name), ios.ID(short(res.New)), res.Uploaded, g.next("request show "+shellQuote(name)), g.next("request approve "+shellQuote(name)))
	default:
		ios.Printf("Updated request %s: %s -> %s (%d version(s) uploaded)\n", ios.Ref(name), ios.ID(short(res.Old)), ios.ID(short(res.New)), res.Uploaded)
	}
	return nil
}

func runRequestList(ctx context.Context, ios *term.IO, g *globals) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		list, bad, err := r.Requests(ctx)
		if err != nil {
			return err
		}
		// The requests' versions are short among every version the
		// repository knows, themselves included (a version no branch
		// holds yet is not among those Abbrev knows by itself).
		ids := make([]version.ID, len(list))
		for i, q := range list {
			ids[i] = q.ID
		}
		abbrev, err := r.Abbrev(ctx, ids...)
		if err != nil {
			return err
		}
		if g.JSON {
			if err := printJSON(ios, list); err != nil {
				return err
			}
		} else {
			for _, q := range list {
				if !ios.OutTTY {
					ios.Printf("%s\t%s\t%d\t%s\t%s\t%d\t%s\n", q.Name, abbrev.Short(q.ID), q.Seq, q.Into, q.State, q.Ahead, oneLine(q.Title))
					continue
				}
				ios.Printf("%s  %s  seq %d  into %s  %s, adds %d  %s\n", ios.Ref(q.Name), ios.ID(abbrev.Short(q.ID)), q.Seq, ios.Ref(q.Into), q.State, q.Ahead, oneLine(q.Title))
			}
		}
		for _, e := range bad {
			ios.Warnf("%s", message(e))
		}
		if len(bad) > 0 {
			return bad[0]
		}
		return nil
	})
}

func runRequestShow(ctx context.Context, ios *term.IO, g *globals, name string) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		v, err := r.ShowRequest(ctx, name)
		if err != nil {
			return err
		}
		warn(ios, v.Warnings)
		if g.JSON {
			return printJSON(ios, v)
		}
		q, short := v.Request, v.Abbrev.Short
		ios.Printf("%s %s\n", ios.Heading("request"), ios.Ref(q.Name))
		ios.Printf("Into:     %s (at %s)\n", ios.Ref(q.Into), ios.ID(short(q.TargetHead)))
		ios.Printf("Version:  %s (seq %d)\n", ios.ID(short(q.ID)), q.Seq)
		ios.Printf("Opened:   %s by %s\n", q.Opened.UTC().Format(time.RFC3339), oneLine(q.Author))
		ios.Printf("State:    %s\n", requestStateText(q))
		ios.Printf("\n    %s\n\n", oneLine(q.Title))
		adds := "Versions it adds to " + q.Into + ":"
		if q.State == repo.RequestMerged {
			adds = "Versions it brought to " + q.Into + " (merged):"
		}
		ios.Printf("%s\n", ios.Heading(adds))
		for _, e := range v.Versions {
			ios.Printf("  %4d  %s  %s  %s\n", e.Seq, ios.ID(e.Short), oneLine(e.Author), oneLine(e.Message))
		}
		ios.Printf("%s\n", ios.Heading("Ref log:"))
		for _, e := range v.Log {
			ios.Printf("  %s  %-8s %s -> %s  %s  %s\n", e.Time.UTC().Format(time.RFC3339), e.Action, ios.ID(dashIfEmpty(short(e.Old))), ios.ID(dashIfEmpty(short(e.New))), oneLine(e.Author), oneLine(e.Why))
		}
		return nil
	})
}

// requestStateText says what a request's state means for approve.
func requestStateText(q repo.Request) string {
	switch q.State {
	case repo.RequestOpen:
		return fmt.Sprintf("open: approve moves %s forward by %d version(s) (fdl request approve %s)", q.Into, q.Ahead, q.Name)
	case repo.RequestStale:
		return fmt.Sprintf("stale: %s moved on (%d version(s) the request lacks); approve is refused until it is rebuilt on %s's head (fdl request update %s)", q.Into, q.Behind, q.Into, q.Name)
	case repo.RequestMerged:
		return fmt.Sprintf("merged: %s holds it already (approve only removes the request)", q.Into)
	}
	return fmt.Sprintf("no target: branch %s does not exist", q.Into)
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runRequestApprove(ctx context.Context, ios *term.IO, g *globals, name string, o repo.PushOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		res, err := r.ApproveRequest(ctx, name, o)
		if err != nil {
			return err
		}
		if g.JSON {
			return printJSON(ios, res)
		}
		short := res.Abbrev.Short
		if res.UpToDate {
			ios.Printf("%s already holds %s", ios.Ref(res.Branch), ios.ID(short(res.New)))
		} else {
			ios.Printf("Approved %s: %s %s..%s (fast-forward)", ios.Ref(name), ios.Ref(res.Branch), ios.ID(short(res.Old)), ios.ID(short(res.New)))
		}
		if c := res.FormatChange; c != nil {
			what := "upgraded"
			if !c.Upgrade {
				what = "changed"
			}
			ios.Printf("; format %s from %s to %s", what, c.From, c.To)
		}
		if res.Removed {
			ios.Printf("; request removed\n")
		} else {
			ios.Printf("; the request moved meanwhile and stays (fdl request show %s)\n", name)
		}
		return nil
	})
}

func runRequestDrop(ctx context.Context, ios *term.IO, g *globals, name string) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		d, err := r.DropRequest(ctx, name)
		if err != nil {
			return err
		}
		warnUnprotected(ios, g, d.Unprotected, "of the dropped request's")
		if g.JSON {
			return printJSON(ios, d)
		}
		ios.Printf("Dropped request %s (was %s); its versions stay in the repository and its ref log (%s)\n", ios.Ref(d.Request), ios.ID(string(d.ID)), g.next("reflog "+shellQuote(d.Request)))
		return nil
	})
}
