package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// globals are the flags every command takes.
type globals struct {
	Dir     string // -C: run as if started in DIR
	JSON    bool
	NoColor bool
	Verbose bool
	Quiet   bool
	Repo    string // --repo: repository URL for commands that need no working catalog

	// opened is the repository a command opened from its own arguments
	// or a pin (checkout's URL, lock's REPO, a pin's repository) when no
	// --repo was given: hints and next steps name it with --repo, so
	// they run as printed (carryLocation).
	opened     string
	openedMany bool           // the command opened more than one: none is carried
	openedMu   sync.Mutex     // pins open repositories at once
	root       *cobra.Command // the command tree, for next steps' flags
	// lockfile is --lockfile as given to a lock or attach --locked
	// command: printed lock commands carry it (carryLocation).
	lockfile string

	ios      *term.IO       // for debug lines
	progress *term.Progress // drawn by options' Progress, once made
}

// stepHook, when set (by tests), is passed to the library as Options.Step.
var stepHook func(string)

// Main runs fdl with the process's arguments and streams and returns the
// exit code.
func Main() int { return run(os.Args[1:], term.System()) }

func run(args []string, ios *term.IO) int {
	registerStores()
	defer startProfile()()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = store.WithLockWait(ctx, func(w store.LockWait) { warnLockWait(ios, w) })
	g := &globals{ios: ios}
	root := newRootCmd(ios, g)
	g.root = root
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
	printError(ios, g, root, err, code)
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
				// Like git -C: every relative path is then relative to DIR
				// (g.path), with no change of the process's directory.
				fi, err := os.Stat(g.Dir)
				if err == nil && !fi.IsDir() {
					err = syscall.ENOTDIR
				}
				if err != nil {
					return usageError{fmt.Errorf("-C %s: %w", g.Dir, unwrapPathError(err))}
				}
				ios.Debugf("working in %s", g.Dir)
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	// --version: cobra prints the template; the DuckDB release is asked
	// only then.
	root.Version = "set"
	cobra.AddTemplateFunc("fdlVersion", func() string {
		v, err := versionInfo(context.Background())
		if err != nil {
			return v.String() + "(DuckDB could not be asked: " + err.Error() + ")\n"
		}
		return v.String()
	})
	root.SetVersionTemplate("{{fdlVersion}}")
	pf := root.PersistentFlags()
	pf.StringVarP(&g.Dir, "dir", "C", "", "run as if fdl was started in `DIR` (a working directory)")
	pf.BoolVar(&g.JSON, "json", false, "print machine-readable JSON (errors as JSON on stderr)")
	pf.BoolVar(&g.NoColor, "no-color", false, "do not colour output (also: NO_COLOR=1)")
	pf.BoolVarP(&g.Verbose, "verbose", "v", false, "print debug lines on stderr (also: FDL_DEBUG=1)")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "no progress output")
	root.AddCommand(
		newInitCmd(ios, g), newCheckoutCmd(ios, g), newStatusCmd(ios, g), newCommitCmd(ios, g),
		newPushCmd(ios, g), newPullCmd(ios, g), newLogCmd(ios, g), newShowCmd(ios, g), newAttachCmd(ios, g), newTagCmd(ios, g),
		newBranchCmd(ios, g), newVerifyCmd(ios, g), newDiffCmd(ios, g), newRevertCmd(ios, g), newRestoreCmd(ios, g),
		newRetentionCmd(ios, g), newGCCmd(ios, g), newReflogCmd(ios, g), newRequestCmd(ios, g), newVersionCmd(ios, g),
		newMigrateCmd(ios, g), newMirrorCmd(ios, g), newLockCmd(ios, g), newCacheCmd(ios, g), newSignCmd(ios, g),
	)
	g.registerCompletions(root)
	return root
}

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

// workdir opens the working directory named by -C (default: the current
// directory); its repository is opened, when a command needs it, with the
// library options (options).
func (g *globals) workdir() (*workdir.Workdir, error) {
	return workdir.Open(g.path("."), g.options())
}

// next is the command line of a next step printed after a command: "fdl
// ARGS", with -C DIR as the user gave it, or --repo URL when the command
// was given one (or opened one from its arguments) and ARGS's command
// takes it, so that the line runs from where the user is
// (carryLocation).
func (g *globals) next(args string) string {
	if g.root == nil {
		if g.Dir == "" {
			return "fdl " + args
		}
		return "fdl -C " + shellQuote(g.Dir) + " " + args
	}
	return carryLocation(g.root, g, []hint{{"", "fdl " + args}})[0].run
}

// path returns a path the user gave, made relative to -C DIR when it is a
// relative local path (not a URL).
func (g *globals) path(p string) string {
	if g.Dir == "" || p == "" || filepath.IsAbs(p) || store.LooksLikeURL(p) {
		return p
	}
	return filepath.Join(g.Dir, p)
}

// openRepo opens the repository named by --repo, else the one the
// working directory came from (-C DIR or the current directory; then l is
// its Local: log, show and new refs default to its branch, its unpushed
// versions are shown), else $FDL_REPO. The working directory wins over
// $FDL_REPO: a variable set for a whole CI job must not make the commands
// run inside a checkout compare with, or write to, another repository.
func (g *globals) openRepo(ctx context.Context) (*repo.Repo, *repo.Local, error) {
	if g.Repo != "" {
		return g.openURL(ctx, g.Repo)
	}
	w, err := g.workdir()
	switch {
	case err == nil:
		if g.ios != nil {
			g.ios.Debugf("repository %s (the working directory's)", store.RedactURL(w.State.Repository))
		}
		l, err := w.Local()
		if err != nil {
			return nil, nil, err
		}
		r, err := w.Repo(ctx)
		return r, l, err
	case !errors.Is(err, workdir.ErrNotWorkdir):
		return nil, nil, err
	}
	if url := os.Getenv("FDL_REPO"); url != "" {
		return g.openURL(ctx, url)
	}
	if ni := (*workdir.NotWorkdirError)(nil); errors.As(err, &ni) && ni.Interrupted {
		return nil, nil, err
	}
	return nil, nil, usageError{fmt.Errorf("no repository given: pass --repo URL or set FDL_REPO, or run inside a working directory (or with -C DIR)")}
}

// openURL opens the repository at url (a path relative to -C DIR).
func (g *globals) openURL(ctx context.Context, url string) (*repo.Repo, *repo.Local, error) {
	if g.ios != nil {
		g.ios.Debugf("repository %s", store.RedactURL(url))
	}
	g.noteOpened(g.path(url))
	r, err := repo.Open(ctx, g.path(url), g.options())
	return r, nil, err
}

// noteOpened records url (as given, made relative to where fdl was
// started) as the repository the command opened (globals.opened); a
// command that opens several carries none into its hints.
func (g *globals) noteOpened(url string) {
	g.openedMu.Lock()
	defer g.openedMu.Unlock()
	switch {
	case g.openedMany || g.opened == url:
	case g.opened == "":
		g.opened = url
	default:
		g.opened, g.openedMany = "", true
	}
}

// options are the library options, given once when a repository is
// opened: progress drawn on stderr (finished by progressDone), the debug
// and test step hook, and FDL_ALLOW_LOCAL_DATA.
func (g *globals) options() repo.Options {
	ios := g.ios
	return repo.Options{
		AllowLocalData: allowLocalData(),
		Progress: func(e repo.Event) {
			if g.progress == nil {
				g.progress = ios.NewProgress(g.JSON)
			}
			if e.Done == e.Total {
				ios.Debugf("%s %s: %d bytes", e.Op, e.Name, e.Done)
			}
			g.progress.Update(string(e.Op), filepath.Base(e.Name), e.Done, e.Total)
		},
		Debug: func(line string) { ios.Debugf("%s", line) },
		Step: func(step string) {
			ios.Debugf("step %s", step)
			if stepHook != nil {
				stepHook(step)
			}
		},
	}
}

// progressDone clears the progress bar, if one was drawn.
func (g *globals) progressDone() {
	if g.progress != nil {
		g.progress.Done()
	}
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
	cmd.Flags().StringVar(&g.Repo, "repo", "", "repository `URL` (default: the working directory's, else $FDL_REPO)")
}

// withRepo opens the repository (openRepo: --repo, else the working
// directory's), runs fn on it with the working directory's Local (nil
// outside one) and closes it.
func (g *globals) withRepo(ctx context.Context, fn func(r *repo.Repo, l *repo.Local) error) error {
	r, l, err := g.openRepo(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r, l)
}

// allowLocalData reads FDL_ALLOW_LOCAL_DATA (repo.Options.AllowLocalData).
func allowLocalData() bool { return os.Getenv("FDL_ALLOW_LOCAL_DATA") == "1" }

// withWorkdir opens the working directory (-C DIR or the current one),
// runs fn and closes its repository.
func (g *globals) withWorkdir(ctx context.Context, fn func(w *workdir.Workdir) error) error {
	w, err := g.workdir()
	if err != nil {
		return err
	}
	defer w.Close()
	return fn(w)
}

// formatChangeFlags registers --allow-format-change on cmd, bound to v, and
// --allow-format-upgrade, its older name, which still works.
func formatChangeFlags(cmd *cobra.Command, v *bool, usage string) {
	cmd.Flags().BoolVar(v, "allow-format-change", false, usage)
	cmd.Flags().BoolVar(v, "allow-format-upgrade", false, "older name of --allow-format-change")
}

// warnLockWait says that a ref's lock has been held by another process for
// w.Waited, and by whom where known, so a waiting push does not look hung.
func warnLockWait(ios *term.IO, w store.LockWait) {
	who := "another process"
	if len(w.Holders) > 0 {
		who = strings.Join(w.Holders, ", ")
	}
	ios.Warnf("waiting for the lock on %s (%s), held by %s for %s: a ref move holds it for milliseconds, so its holder may be stopped or its file system hung; fdl goes on waiting (Ctrl-C stops it)", w.Key, w.Lock, who, w.Waited)
}
