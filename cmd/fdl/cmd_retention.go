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
	"github.com/fdl-dev/fdl/version"
)

type retentionOptions struct {
	KeepLast   int
	KeepWithin string
	Grace      string
	KeepAll    bool
	Reset      bool
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
of working catalogs not committed yet, uploads of pushes in flight. gc
deletes those only when older than the grace period by the store's own
modification time.

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
	f.BoolVar(&o.Reset, "reset", false, "start from the default policy instead of the stored one (which may be damaged), then apply the other flags")
	return cmd
}

// retentionOutput is 'fdl retention --json'.
type retentionOutput struct {
	Policy retention.Policy `json:"policy"`
	// Stored is false while the repository has no policy object (the
	// default policy applies).
	Stored  bool             `json:"stored"`
	Floor   *retention.Floor `json:"floor"`
	Changed bool             `json:"changed"`
}

func runRetention(ctx context.Context, ios *term.IO, g *globals, o *retentionOptions, set bool, changed func(string) bool) error {
	return g.withRepo(ctx, func(r *repo.Repo) error {
		var err error
		out := retentionOutput{}
		if set {
			if o.KeepAll && (changed("keep-last") || changed("keep-within")) {
				return usageError{fmt.Errorf("--keep-all turns the rules off: it does not go with --keep-last or --keep-within")}
			}
			if o.KeepLast < 0 {
				return usageError{fmt.Errorf("--keep-last %d: give 0 (off) or a positive number of versions", o.KeepLast)}
			}
			var within, grace retention.Duration
			if changed("keep-within") {
				if within, err = retention.ParseDuration(o.KeepWithin); err != nil {
					return usageError{err}
				}
			}
			if changed("grace") {
				if grace, err = retention.ParseDuration(o.Grace); err != nil {
					return usageError{err}
				}
			}
			update := r.UpdatePolicy
			if o.Reset {
				update = r.ResetPolicy
			}
			out.Policy, err = update(ctx, func(p *retention.Policy) error {
				switch {
				case o.KeepAll:
					p.KeepLast, p.KeepWithin = 0, 0
				default:
					if changed("keep-last") {
						p.KeepLast = o.KeepLast
					}
					if changed("keep-within") {
						p.KeepWithin = within
					}
				}
				if changed("grace") {
					p.Grace = grace
				}
				return nil
			})
			if err != nil {
				return err
			}
			out.Stored, out.Changed = true, true
		} else {
			p, t, err := r.Policy(ctx)
			if err != nil {
				return err
			}
			out.Policy, out.Stored = p, t != ""
		}
		floorBad := false
		if out.Floor, _, err = r.Floor(ctx); errors.Is(err, retention.ErrInvalid) {
			ios.Warnf("%v", err) // the policy can still be shown and set
			floorBad = true
		} else if err != nil {
			return err
		}
		if g.JSON {
			return printJSON(ios, out)
		}
		p := out.Policy
		switch {
		case out.Changed:
			ios.Printf("%s set the retention policy:\n", ios.OK("ok:"))
		case !out.Stored:
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
		if f := out.Floor; f != nil {
			ios.Printf("%s generation %d, moved %s by %s; %d version(s) out of retention awaiting deletion\n",
				ios.Heading("Floor:"), f.Generation, f.MovedAt.UTC().Format(time.RFC3339), f.MovedBy, len(f.Retired))
			for _, b := range f.Branches {
				ios.Printf("  %s: versions from seq %d (snapshot %d) to the head are in retention\n", ios.Ref(refs.Name(b.Branch).Short()), b.Seq, b.Snapshot)
			}
		} else if floorBad {
			ios.Printf("%s cannot be read (see the warning)\n", ios.Heading("Floor:"))
		} else {
			ios.Printf("%s never moved (no version has left retention)\n", ios.Heading("Floor:"))
		}
		if out.Changed {
			ios.Printf("Nothing is deleted until 'fdl gc --yes'; 'fdl gc' shows what it would do.\n")
		}
		return nil
	})
}

// retiredShow is 'fdl show --json' of a version out of retention.
type retiredShow struct {
	Record  *version.Record   `json:"record"`
	Short   string            `json:"short_id"`
	Retired retiredShowReason `json:"retired"`
	Attach  string            `json:"attach"` // always "": it cannot be attached
}

type retiredShowReason struct {
	At     time.Time `json:"at"`
	Floor  int64     `json:"floor"`
	Reason string    `json:"reason"`
	Marked bool      `json:"marked"`
}

// showRetired prints the record of a version out of retention and when it
// left; no ATTACH line (DESIGN.md §4.7: the record stays, the catalog goes).
func showRetired(ctx context.Context, ios *term.IO, g *globals, r *repo.Repo, rec *version.Record, ret *repo.RetiredError) error {
	n, err := r.Abbrev(ctx)
	if err != nil {
		return err
	}
	out := retiredShow{Record: rec, Short: n.Short(rec.ID), Retired: retiredShowReason{At: ret.At, Floor: ret.Floor, Reason: ret.Reason, Marked: ret.Marked}}
	if g.JSON {
		return printJSON(ios, out)
	}
	ios.Printf("%s %s %s\n", ios.Heading("version"), ios.ID(string(rec.ID)), ios.Bad("(retired)"))
	printSeqParents(ios, rec, n)
	ios.Printf("Author:   %s\n", rec.Author)
	ios.Printf("Date:     %s\n", rec.CreatedAt.UTC().Format(time.RFC3339))
	ios.Printf("Catalog:  %s, sha256 %s (deleted)\n", term.Bytes(rec.Catalog.Size), rec.Catalog.SHA256)
	ios.Printf("DuckLake: format %s, snapshot %d, adds snapshots %d..%d\n", rec.DuckLake.Format, rec.DuckLake.Snapshot, rec.DuckLake.Adds.First, rec.DuckLake.Adds.Last)
	ios.Printf("Retired:  left retention on %s (floor %d): %s\n", ret.At.UTC().Format(time.RFC3339), ret.Floor, ret.Reason)
	ios.Printf("\n    %s\n\n", strings.ReplaceAll(rec.Message, "\n", "\n    "))
	ios.Printf("Its catalog and dataset.json are deleted or about to be: it cannot be attached or checked out.\n")
	return nil
}

// warnShortGrace warns (stderr) when the grace period is below a day.
func warnShortGrace(ios *term.IO, p retention.Policy) {
	if p.Grace < retention.Duration(24*time.Hour) {
		ios.Warnf("a grace period of %s is short: gc deletes the data files a working catalog wrote but did not commit, and the uploads of a push in progress, once they are older than that (a push naming deleted files is refused); the default is %s", p.Grace, retention.DefaultGrace)
	}
}
