package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

// Exit codes (documented in 'fdl help' and docs/cli.md).
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitRefused   = 3 // push refused: not a fast-forward, or lost a race
	exitInterrupt = 130
)

const exitCodesHelp = `Exit codes:
  0    success
  1    error (the message says what and what to do)
  2    usage error (bad flags or arguments)
  3    push refused: the branch is not an ancestor of what you push (not a
       fast-forward), or another push moved it first; nothing was moved
  130  interrupted (Ctrl-C); the repository is left as it was`

// globals are the flags every command takes.
type globals struct {
	Dir     string // -C: run as if started in DIR
	JSON    bool
	NoColor bool
	Verbose bool
	Quiet   bool
	Repo    string // --repo: repository URL for commands that need no working catalog

	ios *term.IO // for debug lines
}

// stepHook, when set (by tests), is passed to the library as Options.Step.
var stepHook func(string)

// Main runs fdl with the process's arguments and streams and returns the
// exit code.
func Main() int { return run(os.Args[1:], term.System()) }

func run(args []string, ios *term.IO) int {
	registerStores()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g := &globals{ios: ios}
	root := newRootCmd(ios, g)
	root.SetArgs(args)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") || strings.HasPrefix(err.Error(), "unknown shorthand flag") {
		err = usageError{err}
	}
	code := exitCode(ctx, err)
	if !g.JSON && code == exitUsage && slices.Contains(args, "--json") {
		// Flag parsing stopped at the bad flag, before --json: a script
		// that asked for JSON still gets its error as JSON.
		g.JSON = true
	}
	printError(ios, g, err, code)
	return code
}

func newRootCmd(ios *term.IO, g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "fdl",
		Short: "Keep versions of DuckLake catalogs the way Git keeps commits",
		Long: `fdl keeps versions of a DuckLake catalog in a folder or object store, with no
server. Each version is one frozen catalog (a DuckDB file) with a checksummed
record; branches move fast-forward only; readers attach any version with one
DuckDB ATTACH.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if g.NoColor || g.JSON {
				ios.Color = false
			}
			ios.Verbose = ios.Verbose || g.Verbose
			ios.Quiet = ios.Quiet || g.Quiet
			if g.Dir != "" {
				// Like git -C: every relative path is then relative to DIR.
				if err := os.Chdir(g.Dir); err != nil {
					return usageError{fmt.Errorf("-C %s: %w", g.Dir, unwrapPathError(err))}
				}
				ios.Debugf("working in %s", g.Dir)
				g.Dir = ""
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&g.Dir, "dir", "C", "", "run as if fdl was started in `DIR` (a working directory)")
	pf.BoolVar(&g.JSON, "json", false, "print machine-readable JSON (errors as JSON on stderr)")
	pf.BoolVar(&g.NoColor, "no-color", false, "do not colour output (also: NO_COLOR=1)")
	pf.BoolVarP(&g.Verbose, "verbose", "v", false, "print debug lines on stderr (also: FDL_DEBUG=1)")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "no progress output")
	root.AddCommand(
		newInitCmd(ios, g), newCheckoutCmd(ios, g), newStatusCmd(ios, g), newCommitCmd(ios, g),
		newPushCmd(ios, g), newLogCmd(ios, g), newShowCmd(ios, g), newTagCmd(ios, g),
		newBranchCmd(ios, g), newVerifyCmd(ios, g),
		newRetentionCmd(ios, g), newGCCmd(ios, g), newReflogCmd(ios, g),
	)
	return root
}

// usageError marks a usage problem (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// args returns a cobra.PositionalArgs accepting min..max arguments, whose
// error is a usage error naming the command's usage line.
func args(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) < min || len(a) > max {
			want := fmt.Sprintf("%d", min)
			if max > min {
				want = fmt.Sprintf("%d to %d", min, max)
			}
			return usageError{fmt.Errorf("%s takes %s argument(s), got %d; usage: %s", cmd.CommandPath(), want, len(a), cmd.UseLine())}
		}
		return nil
	}
}

// optionalArg returns a[i], or "" when there is no such argument.
func optionalArg(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	return ""
}

func exitCode(ctx context.Context, err error) int {
	var u usageError
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return exitInterrupt
	case errors.As(err, &u), errors.Is(err, repo.ErrInvalidArguments):
		return exitUsage
	case errors.Is(err, repo.ErrRefused):
		return exitRefused
	}
	return exitError
}

func printError(ios *term.IO, g *globals, err error, code int) {
	msg := err.Error()
	if code == exitInterrupt {
		msg = "interrupted; nothing was changed past the last complete step: " + msg
	}
	if g.JSON {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "exit_code": code, "kind": errorKind(err, code)}})
		fmt.Fprintln(ios.ErrOut, string(b))
		return
	}
	fmt.Fprintf(ios.ErrOut, "fdl: %s\n", msg)
}

// workdir opens the working directory named by -C (default: the current
// directory).
func (g *globals) workdir() (*repo.Workdir, error) {
	dir := g.Dir
	if dir == "" {
		dir = "."
	}
	return repo.OpenWorkdir(dir)
}

// openRepo opens the repository named by --repo, else the one the working
// directory came from.
func (g *globals) openRepo(ctx context.Context) (*repo.Repo, error) {
	url := g.Repo
	if url == "" {
		w, err := g.workdir()
		if err != nil {
			if errors.Is(err, repo.ErrNotWorkdir) {
				return nil, usageError{fmt.Errorf("no repository given: pass --repo URL, or run inside a working directory (or with -C DIR)")}
			}
			return nil, err
		}
		url = w.State.Repository
	}
	ios := g.ios
	if ios != nil {
		ios.Debugf("repository %s", url)
	}
	return repo.Open(ctx, url)
}

// hooks returns the library options: progress drawn on stderr and the test
// step hook.
func (g *globals) hooks(ios *term.IO) (repo.Options, *term.Progress) {
	p := ios.NewProgress(g.JSON)
	return repo.Options{
		Progress: func(e repo.Event) {
			if e.Done == e.Total {
				ios.Debugf("%s %s: %d bytes", e.Op, e.Name, e.Done)
			}
			p.Update(e.Op, filepath.Base(e.Name), e.Done, e.Total)
		},
		Step: func(step string) {
			ios.Debugf("step %s", step)
			if stepHook != nil {
				stepHook(step)
			}
		},
	}, p
}

// printJSON prints v as indented JSON; "<", ">" and "&" stay as they are
// (readers: ">= 1.5.0").
func printJSON(ios *term.IO, v any) error {
	enc := json.NewEncoder(ios.Out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// unwrapPathError turns "chdir x: no such file or directory" into the
// reason alone, as the caller names the path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// addRepoFlag registers --repo on cmd: the repository's URL, by default
// the working directory's (see openRepo).
func (g *globals) addRepoFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.Repo, "repo", "", "repository `URL` (default: the working directory's)")
}

// withRepo opens the repository (openRepo: --repo, else the working
// directory's), runs fn on it and closes it.
func (g *globals) withRepo(ctx context.Context, fn func(r *repo.Repo) error) error {
	r, err := g.openRepo(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r)
}
