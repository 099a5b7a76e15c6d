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

	"github.com/fdl-dev/fdl/cache"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/pins"
	"github.com/fdl-dev/fdl/repo"
)

// readerOptions are the flags of the commands that read a lockfile or the
// catalog cache.
type readerOptions struct {
	Lockfile string // --lockfile
	Cache    bool   // --cache
}

// addReaderFlags binds --lockfile and --cache.
func addReaderFlags(cmd *cobra.Command, o *readerOptions) {
	cmd.Flags().StringVar(&o.Lockfile, "lockfile", "", "lockfile `FILE` (default: fdl.lock in this folder or the nearest parent)")
	cmd.Flags().BoolVar(&o.Cache, "cache", false, "check and keep catalogs in the reader's catalog cache (default: on when FDL_CACHE is set; --cache=false turns it off)")
}

// readerEnv is the pins.Env of a command: the lockfile, the folder fdl
// runs in, repositories opened with the library options, and the catalog
// cache when asked for.
func (g *globals) readerEnv(cmd *cobra.Command, o *readerOptions) (pins.Env, error) {
	g.lockfile = o.Lockfile
	env := pins.Env{Lockfile: g.path(o.Lockfile), Dir: g.path("."), Open: func(ctx context.Context, url string) (*repo.Repo, error) {
		r, _, err := g.openURL(ctx, url)
		if nr := (*repo.NotRepositoryError)(nil); errors.As(err, &nr) {
			nr.Reader = true // a reader's: fdl init there is no remedy
		}
		return r, err
	}}
	c, err := openCache(cmd, o.Cache)
	env.Cache = c
	return env, err
}

// openCache opens the reader's catalog cache when --cache is given, or
// FDL_CACHE is set and --cache=false is not: in FDL_CACHE's folder, else
// the default (cache.DefaultDir), bounded by FDL_CACHE_MAX_SIZE (default
// cache.DefaultMaxBytes; 0: no bound). nil when not asked for.
func openCache(cmd *cobra.Command, flag bool) (*cache.Cache, error) {
	env := os.Getenv("FDL_CACHE")
	on := flag || env != "" && !cmd.Flags().Changed("cache")
	if !on {
		return nil, nil
	}
	return openCacheDir(env)
}

// openCacheDir opens the cache in dir (default: cache.DefaultDir) with
// FDL_CACHE_MAX_SIZE's bound.
func openCacheDir(dir string) (*cache.Cache, error) {
	if dir == "" {
		d, err := cache.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	max := int64(cache.DefaultMaxBytes)
	if s := os.Getenv("FDL_CACHE_MAX_SIZE"); s != "" {
		n, err := cache.ParseSize(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("FDL_CACHE_MAX_SIZE: %w", err)}
		}
		max = n
	}
	return cache.Open(dir, cache.Options{MaxBytes: max})
}

func newLockCmd(ios *term.IO, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Pin the versions a project reads in fdl.lock, update and check the pins",
		Long: `A project that reads fdl repositories (a notebook, a dbt project, another
team's pipeline) pins the version of each it reads in fdl.lock, a TOML file
made to be committed and reviewed in a diff (format: docs/spec.md, "The
lockfile"). fdl finds it in the current folder or the nearest parent, or
at --lockfile FILE. Folder repositories in it are relative to it.

  fdl lock add NAME REPO [REV]     pin REV (default: HEAD) under NAME
  fdl lock update [NAME...]        move pins to their refs' heads
  fdl lock check [--fail-behind]   check every pin (exit 1, or 6 if behind)
  fdl lock remove NAME             drop a pin
  fdl attach --locked NAME         the pinned version's ATTACH line

With --cache (or FDL_CACHE set), catalogs are checked by keeping them in
the reader's catalog cache, so the next attach downloads nothing.`,
		Example: `  fdl lock add sales s3://bucket/lakes/sales
  fdl lock add events ../lakes/events 2026-q1
  fdl lock check --fail-behind
  duckdb -c "$(fdl attach --locked sales --cache); SELECT count(*) FROM sales.orders"`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newLockAddCmd(ios, g), newLockUpdateCmd(ios, g), newLockCheckCmd(ios, g), newLockRemoveCmd(ios, g))
	return cmd
}

func newLockAddCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &readerOptions{}
	so := &pins.Signed{}
	cmd := &cobra.Command{
		Use:   "add NAME REPO [REV]",
		Short: "Pin a repository's revision under NAME in fdl.lock",
		Long: `Pin REV of the repository at REPO (a folder or a store URL; default: HEAD,
its default branch's head) under NAME, after checking that the version is
in retention and that its catalog matches its record. The pin records the
repository, the ref followed (when REV names a branch or tag as it is; an
id, NAME~N or NAME@SEQ follows none), the version id, its seq, and its
catalog's size and sha256. The lockfile is made in the current folder when
none is found. A NAME already pinned to the same repository moves; pinned
to another, it is refused (fdl lock remove NAME first).

Warns when the version may leave retention within a week under the
repository's current policy (keep_within), unless a tag is followed.

With --require-signed --signers FILE, a version whose record has no good
signature (fdl sign) by a key the allowed signers file allows is refused
before its catalog is read, and the lockfile is left as it was.`,
		Example: `  fdl lock add sales s3://bucket/lakes/sales
  fdl lock add final ../lakes/sales 2025-final
  fdl lock add sales s3://bucket/lakes/sales --require-signed --signers allowed_signers`,
		Args: args(2, 3),
		RunE: func(cmd *cobra.Command, a []string) error {
			sig, err := signedOf(g, so)
			if err != nil {
				return err
			}
			if strings.TrimSpace(a[1]) == "" {
				return usageError{errors.New("lock add takes the repository's URL or folder as REPO; it is empty")}
			}
			return runLockAdd(cmd, ios, g, o, pins.AddOptions{Name: a[0], Repository: g.path(a[1]), Rev: optionalArg(a, 2), Signed: sig})
		},
	}
	addReaderFlags(cmd, o)
	addSignedFlags(cmd, so)
	return cmd
}

func runLockAdd(cmd *cobra.Command, ios *term.IO, g *globals, o *readerOptions, ao pins.AddOptions) error {
	env, err := g.readerEnv(cmd, o)
	if err != nil {
		return err
	}
	res, err := pins.Add(cmd.Context(), env, ao)
	g.progressDone()
	if err != nil {
		return err
	}
	if res.LeavesRetention != nil {
		ios.Warnf("%s", leavingWarning(g, res.Lockfile, res.Name, res.Pin, *res.LeavesRetention))
	}
	if g.JSON {
		return printJSON(ios, res)
	}
	switch {
	case res.Unchanged:
		ios.Printf("Pin %s already at seq %d (%s) in %s\n", res.Name, res.Pin.Seq, res.Pin.Version, res.Lockfile)
	case res.Previous != nil:
		ios.Printf("Moved pin %s from seq %d to seq %d (%s) in %s\n", res.Name, res.Previous.Seq, res.Pin.Seq, res.Pin.Version, res.Lockfile)
	default:
		ios.Printf("Pinned %s: %s seq %d (%s)%s in %s\n", res.Name, res.Pin.Repository, res.Pin.Seq, res.Pin.Version, following(res.Pin), res.Lockfile)
	}
	return nil
}

// following says which ref a pin follows, for people.
func following(p pins.PinView) string {
	if p.Ref == "" {
		return ", following no ref"
	}
	return ", following " + p.Ref
}

// leavingWarning says that a pinned version may leave retention soon; the
// tag command it names reaches the repository as the lockfile (at path
// lockfile) names it, from wherever it runs.
func leavingWarning(g *globals, lockfilePath, name string, p pins.PinView, at time.Time) string {
	when := "on " + at.UTC().Format(time.RFC3339)
	if d := time.Until(at); d <= 0 {
		when = "at the next gc"
	} else {
		when += fmt.Sprintf(" (in %s)", d.Round(time.Hour))
	}
	url := lockfile.RepositoryURL(filepath.Dir(lockfilePath), lockfile.Pin{Repository: p.Repository})
	keep := "keep it with a tag (fdl tag NAME " + string(p.Version) + " --repo " + shellQuote(url) + ")"
	if p.Ref != "" {
		keep += ", or move the pin on before then (" + g.next("lock update "+shellQuote(name)) + ")"
	}
	return fmt.Sprintf("pin %s: version %s (seq %d) may leave retention %s under the repository's policy, once no ref points at it; then fdl lock check fails for it: %s", name, p.Version, p.Seq, when, keep)
}

func newLockUpdateCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &readerOptions{}
	so := &pins.Signed{}
	cmd := &cobra.Command{
		Use:   "update [NAME...]",
		Short: "Move pins to their refs' current heads and print what changed",
		Long: `Move the pins named (default: every pin) to the current version of the ref
each follows, after checking those versions as fdl lock add does, and print
for each pin that moved what changed (the summary fdl diff prints). Pins
that follow no ref are left as they are. The lockfile is written once, and
only when every pin named was brought up to date. With --require-signed
--signers FILE, each new version must have a good signature by an allowed
signer, as for fdl lock add.`,
		Example: `  fdl lock update
  fdl lock update sales`,
		RunE: func(cmd *cobra.Command, a []string) error {
			env, err := g.readerEnv(cmd, o)
			if err != nil {
				return err
			}
			sig, err := signedOf(g, so)
			if err != nil {
				return err
			}
			res, err := pins.Update(cmd.Context(), env, a, sig)
			g.progressDone()
			if err != nil {
				return err
			}
			return printUpdated(ios, g, res)
		},
	}
	addReaderFlags(cmd, o)
	addSignedFlags(cmd, so)
	return cmd
}

func printUpdated(ios *term.IO, g *globals, res *pins.Updated) error {
	for _, c := range res.Changes {
		if c.LeavesRetention != nil {
			ios.Warnf("%s", leavingWarning(g, res.Lockfile, c.Name, c.To, *c.LeavesRetention))
		}
	}
	if g.JSON {
		return printJSON(ios, res)
	}
	for _, c := range res.Changes {
		switch {
		case c.Skipped != "":
			ios.Printf("%s: left at seq %d: %s\n", c.Name, c.From.Seq, c.Skipped)
		case !c.Moved:
			ios.Printf("%s: up to date at seq %d (%s)\n", c.Name, c.From.Seq, c.From.Ref)
		case c.Totals != nil:
			ios.Printf("%s: seq %d -> %d (%s): %s\n", c.Name, c.From.Seq, c.To.Seq, c.To.Version, summaryLine(*c.Totals))
		default:
			ios.Printf("%s: seq %d -> %d (%s): changes not read: %s\n", c.Name, c.From.Seq, c.To.Seq, c.To.Version, c.DiffError)
		}
	}
	return nil
}

func newLockCheckCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &readerOptions{}
	failBehind := false
	cmd := &cobra.Command{
		Use:   "check [--fail-behind]",
		Short: "Check every pin: the version exists, is in retention, and its catalog matches",
		Long: `Check every pin of the lockfile, as npm ci checks a package lock: the
repository opens and holds the pinned version, whose record is the one
pinned (seq, catalog size and sha256), in retention, with a stored catalog
that matches its record. Prints one line per pin. Exit 0 when every pin
passes; 1 naming each pin that does not. A pin whose ref moved on (or is
gone) is reported as behind; with --fail-behind it also makes fdl exit 6
(kind pin_behind), naming each, for a job that wants to know.`,
		Example: `  fdl lock check
  fdl lock check --fail-behind --cache`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			env, err := g.readerEnv(cmd, o)
			if err != nil {
				return err
			}
			rep, err := pins.Check(cmd.Context(), env, failBehind)
			g.progressDone()
			if rep != nil {
				if perr := printReport(ios, g, rep); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	addReaderFlags(cmd, o)
	cmd.Flags().BoolVar(&failBehind, "fail-behind", false, "exit 6 when a followed ref moved on")
	return cmd
}

func printReport(ios *term.IO, g *globals, rep *pins.Report) error {
	if g.JSON {
		return printJSON(ios, rep)
	}
	for _, s := range rep.Pins {
		line := fmt.Sprintf("%s\t%s\tseq %d\t%s", s.Name, s.Status, s.Pin.Seq, s.Pin.Version)
		switch {
		case s.Problem != "":
			line += "\t" + oneLine(s.Problem)
		case s.Head != "":
			line += fmt.Sprintf("\t%s is at seq %d (%s)", s.Pin.Ref, s.HeadSeq, s.Head)
		}
		ios.Printf("%s\n", line)
	}
	return nil
}

func newLockRemoveCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &readerOptions{}
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Drop pin NAME from fdl.lock",
		Args:  args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			g.lockfile = o.Lockfile
			res, err := pins.Remove(cmd.Context(), pins.Env{Lockfile: g.path(o.Lockfile), Dir: g.path(".")}, a[0])
			if err != nil {
				return err
			}
			if g.JSON {
				return printJSON(ios, res)
			}
			ios.Printf("Removed pin %s (seq %d, %s) from %s\n", res.Name, res.Pin.Seq, res.Pin.Version, res.Lockfile)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Lockfile, "lockfile", "", "lockfile `FILE` (default: fdl.lock in this folder or the nearest parent)")
	return cmd
}

// addSignedFlags adds --require-signed and --signers FILE, the signature
// a pinned version must have (pins.Signed).
func addSignedFlags(cmd *cobra.Command, so *pins.Signed) {
	cmd.Flags().BoolVar(&so.Require, "require-signed", false, "refuse a version without a good signature by an allowed signer (with --signers)")
	cmd.Flags().StringVar(&so.Signers, "signers", "", "allowed signers `FILE` (ssh-keygen's format) for --require-signed")
}

// signedOf is so checked (the two flags go together) with its file made
// relative to -C.
func signedOf(g *globals, so *pins.Signed) (pins.Signed, error) {
	if so.Require != (so.Signers != "") {
		return pins.Signed{}, usageError{errors.New("--require-signed and --signers FILE go together: the file says whose signatures count")}
	}
	return pins.Signed{Require: so.Require, Signers: g.path(so.Signers)}, nil
}
