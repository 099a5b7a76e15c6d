package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
)

type retentionOptions struct {
	KeepLast   int
	KeepWithin string
	Grace      string
	KeepAll    bool
	Reset      bool
	// AllowShortGrace allows a --grace below retention.MinGrace.
	AllowShortGrace bool
}

func newRetentionCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &retentionOptions{}
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Show or set the retention policy",
		Long: `Show the repository's retention policy and floor, or change the policy with
the flags (only the rules given change). The policy lives in the repository
(retention/policy.json) and is replaced with a compare-and-swap: if someone
else changed it meanwhile, nothing is written and you run the command again.

A version stays in retention, with its catalog, when any rule keeps it:
  - a branch, tag or request ref points at it (always);
  - --keep-last N: it is one of the last N versions of a branch;
  - --keep-within DURATION: it was created less than DURATION ago;
  - with no rule set (the default, or --keep-all): every version a ref or
    ref log reaches.
Versions leaving retention lose their catalog and dataset.json when 'fdl gc
--yes' runs; their record stays, so 'fdl log' still shows them.

--grace DURATION (default 7d) protects what no catalog describes: data files
of working catalogs not committed and pushed yet, uploads that never
finished. gc deletes those only when older than the grace period by the
store's own modification time. A grace below 1d needs --allow-short-grace,
and puts at risk, for as long as it is set: the data files of a working
catalog not committed and pushed within the grace period, and a push that
takes longer than the grace period from its first upload to its branch's
move (its uploaded version, complete but reached by no ref yet, and the
files only it names, count as abandoned): gc deletes them, the push is
refused, and its data files are lost. With a grace longer than any push
and any uncommitted work, gc and push exclude each other.

Durations: a number and a unit, w d h m s, or a sum: 2w, 30d, 1d12h, 90m.`,
		Example: `  fdl retention --repo s3://bucket/sales
  fdl retention --keep-last 30 --keep-within 90d
  fdl retention --keep-all
  fdl retention --reset --keep-last 30     # replace a damaged policy.json`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			set := cmd.Flags().Changed("keep-last") || cmd.Flags().Changed("keep-within") || cmd.Flags().Changed("grace") || o.KeepAll || o.Reset
			return runRetention(cmd.Context(), ios, g, o, set, cmd.Flags().Changed)
		},
	}
	g.addRepoFlag(cmd)
	f := cmd.Flags()
	f.IntVar(&o.KeepLast, "keep-last", 0, "keep the last `N` versions of each branch (0: rule off)")
	f.StringVar(&o.KeepWithin, "keep-within", "", "keep versions created less than `DURATION` ago (0: rule off)")
	f.StringVar(&o.Grace, "grace", "", "grace period for files and uploads no catalog or ref describes (`DURATION`, default 7d)")
	f.BoolVar(&o.KeepAll, "keep-all", false, "turn both rules off: keep every version a ref or ref log reaches")
	f.BoolVar(&o.AllowShortGrace, "allow-short-grace", false, "allow a --grace below 1d (gc then deletes the data files of working catalogs not committed and pushed within it)")
	f.BoolVar(&o.Reset, "reset", false, "start from the default policy instead of the stored one (which may be damaged), then apply the other flags")
	return cmd
}

func runRetention(ctx context.Context, ios *term.IO, g *globals, o *retentionOptions, set bool, changed func(string) bool) error {
	change, err := o.change(set, changed)
	if err != nil {
		return usageError{err}
	}
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		st, err := r.Retention(ctx, change)
		var sg *repo.ShortGraceError
		if errors.As(err, &sg) {
			sg.With = o.policyFlags(changed)
		}
		if err != nil {
			return err
		}
		warn(ios, st.Warnings) // the policy can still be shown and set
		if g.JSON {
			return printJSON(ios, st)
		}
		printRetention(ios, g, st)
		return nil
	})
}

// policyFlags are the policy flags given besides --grace, as a command
// line repeats them ("--reset --keep-last 1").
func (o *retentionOptions) policyFlags(changed func(string) bool) string {
	var out []string
	if o.Reset {
		out = append(out, "--reset")
	}
	if o.KeepAll {
		out = append(out, "--keep-all")
	}
	if changed("keep-last") {
		out = append(out, fmt.Sprintf("--keep-last %d", o.KeepLast))
	}
	if changed("keep-within") {
		out = append(out, "--keep-within "+shellQuote(o.KeepWithin))
	}
	return strings.Join(out, " ")
}

// change turns the flags into the policy change they ask for (nil: none).
func (o *retentionOptions) change(set bool, changed func(string) bool) (*repo.PolicyChange, error) {
	if !set {
		return nil, nil
	}
	if o.KeepAll && (changed("keep-last") || changed("keep-within")) {
		return nil, fmt.Errorf("--keep-all turns the rules off: it does not go with --keep-last or --keep-within")
	}
	if o.KeepLast < 0 {
		return nil, fmt.Errorf("--keep-last %d: give 0 (off) or a positive number of versions", o.KeepLast)
	}
	c := &repo.PolicyChange{Reset: o.Reset, KeepAll: o.KeepAll, AllowShortGrace: o.AllowShortGrace}
	if changed("keep-last") {
		c.KeepLast = &o.KeepLast
	}
	for _, d := range []struct {
		flag, value string
		to          **retention.Duration
	}{{"keep-within", o.KeepWithin, &c.KeepWithin}, {"grace", o.Grace, &c.Grace}} {
		if !changed(d.flag) {
			continue
		}
		v, err := retention.ParseDuration(d.value)
		if err != nil {
			return nil, err
		}
		*d.to = &v
	}
	return c, nil
}

func printRetention(ios *term.IO, g *globals, st *repo.RetentionState) {
	p := st.Policy
	switch {
	case st.Changed:
		ios.Printf("%s set the retention policy:\n", ios.OK("ok:"))
	case !st.Stored:
		ios.Printf("%s (no policy set: the default applies):\n", ios.Heading("Retention policy"))
	case p.UpdatedAt.IsZero():
		ios.Printf("%s (written without updated_at, by hand?):\n", ios.Heading("Retention policy"))
	default:
		ios.Printf("%s (set %s by %s):\n", ios.Heading("Retention policy"), p.UpdatedAt.UTC().Format(time.RFC3339), p.UpdatedBy)
	}
	for _, rule := range p.Rules() {
		ios.Printf("  %s\n", rule)
	}
	warnShortGrace(ios, p)
	if f := st.Floor; f != nil {
		// The floor lists the versions it retired, not whether gc has
		// deleted their catalogs yet (that would cost a look at each).
		ios.Printf("%s generation %d, moved %s by %s; %d version(s) out of retention (records kept; %s deletes their catalogs where still present, %s says which are gone)\n",
			ios.Heading("Floor:"), f.Generation, f.MovedAt.UTC().Format(time.RFC3339), f.MovedBy, len(f.Retired), g.next("gc --yes"), g.next("verify"))
		for _, b := range f.Branches {
			ios.Printf("  %s: versions from seq %d (snapshot %d) to the head are in retention\n", ios.Ref(refs.Name(b.Branch).Short()), b.Seq, b.Snapshot)
		}
	} else if st.FloorBad {
		ios.Printf("%s cannot be read (see the warning)\n", ios.Heading("Floor:"))
	} else {
		ios.Printf("%s never moved (no version has left retention)\n", ios.Heading("Floor:"))
	}
	if st.Changed {
		ios.Printf("Nothing is deleted until %s runs; %s shows what it would do.\n", g.next("gc --yes"), g.next("gc"))
	}
}

// warnShortGrace warns (stderr) when the grace period is below
// retention.MinGrace (set with --allow-short-grace).
func warnShortGrace(ios *term.IO, p retention.Policy) {
	if p.Grace < retention.MinGrace {
		ios.Warnf("a grace period of %s is short: gc deletes the data files a working catalog wrote but did not commit and push within it, and the uploads and data files of a push that takes longer than %s from its first upload to its branch's move (the push is then refused and that work is lost); the default is %s", p.Grace, p.Grace, retention.DefaultGrace)
	}
}
