package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

type gcOptions struct {
	Yes bool
}

func newGCCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &gcOptions{}
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Plan (and with --yes apply) the retention policy: delete what nothing keeps",
		Long: `Apply the retention policy ('fdl retention'). Without --yes, print the plan
and change nothing: how the retention floor moves, which versions leave
retention (their catalog and dataset.json go; their record stays), which data
files no catalog in retention can read, which abandoned uploads go, and how
many bytes all that is.

With --yes, carry the plan out in five steps, each safe to interrupt and
resumed by running gc again:
  1. move the floor (retention/floor.json, one compare-and-swap): from now
     on checkout refuses the versions leaving retention;
  2. for each of them, write a marker (versions/<id>/retired.json) and then
     delete its catalog and dataset.json, never its version.json;
  3. delete data files no catalog in retention can read: files ended before
     their catalog's floor snapshot, files only retired catalogs list, and
     files no catalog lists that are older than the grace period;
  4. delete incomplete versions and versions no ref or ref log reaches that
     are older than the grace period (with their history packs), and
     (folder stores) the temporary files of writes a crash interrupted,
     older than the grace period;
  5. write the history packs missing on the refs' histories (a repository
     made before fdl wrote them; log, show and push read them), and delete
     those of versions that are gone.
gc deletes nothing outside the repository's data/, versions/ and
index/packs/. It refuses to run while a ref is empty, garbage or names a
missing version, or while a catalog it must read is damaged. Run one gc at
a time.

On a terminal long lists are cut to 10 items (-v: all); otherwise every item
is printed. --json prints the whole plan (and, with --yes, what was done).`,
		Example: `  fdl gc --repo s3://bucket/sales          # the plan; nothing changes
  fdl gc --repo s3://bucket/sales --yes`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runGC(cmd.Context(), ios, g, o)
		},
	}
	g.addRepoFlag(cmd)
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "apply the plan (default: only print it)")
	return cmd
}

func runGC(ctx context.Context, ios *term.IO, g *globals, o *gcOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, _ *repo.Local) error {
		opts := gc.Options{Apply: o.Yes}
		if !g.JSON {
			// The plan is printed before it is applied.
			opts.Planned = func(p *gc.Plan) { printPlan(ios, g, r.Where(), p) }
		}
		run, err := gc.Run(ctx, r, opts)
		if err != nil {
			return err
		}
		if g.JSON {
			return printJSON(ios, run)
		}
		switch {
		case run.Plan.Empty():
			ios.Printf("Nothing to do.\n")
		case !o.Yes:
			ios.Printf("This was the plan: nothing changed. Apply it with: %s\n", g.next("gc --yes"))
		default:
			res := run.Result
			if res.FloorMoved {
				ios.Printf("%s moved the floor to generation %d\n", ios.OK("done:"), res.Floor)
			}
			ios.Printf("%s wrote %d marker(s), deleted %d catalog/dataset file(s), %d data file(s), %d abandoned upload(s), %d temporary file(s): %s freed\n",
				ios.OK("done:"), res.Marked, res.Excised, res.DataFiles, res.Abandoned, res.Temps, term.Bytes(res.Bytes))
			if res.PacksWritten > 0 || res.PacksDeleted > 0 {
				ios.Printf("%s wrote %d history pack(s), deleted %d\n", ios.OK("done:"), res.PacksWritten, res.PacksDeleted)
			}
		}
		return nil
	})
}

// printPlan prints a plan for people (or, off a terminal, for grep).
func printPlan(ios *term.IO, g *globals, url string, p *gc.Plan) {
	ios.Printf("%s %s, policy:\n", ios.Heading("gc plan for"), url)
	for _, rule := range p.Policy.Rules() {
		ios.Printf("  %s\n", rule)
	}
	warnShortGrace(ios, p.Policy)
	printPlanFloor(ios, p)
	printPlanDeletions(ios, g, p)
	if len(p.Packs) > 0 || len(p.PackOrphans) > 0 {
		ios.Printf("%s %d missing on the refs' histories to write, %d of versions gone to delete\n", ios.Heading("History packs:"), len(p.Packs), len(p.PackOrphans))
	}
	printPlanKept(ios, p)
	for _, w := range p.Warnings {
		ios.Printf("%s %s\n", ios.Bad("warning:"), w)
	}
	ios.Debugf("gc plan: %d catalog(s) read in %s (fetch %s, scan %s); total %s",
		p.Data.CatalogsRead, ms(p.Timing.FetchMS+p.Timing.ScanMS), ms(p.Timing.FetchMS), ms(p.Timing.ScanMS), ms(p.Timing.TotalMS))
}

// printPlanFloor prints how the plan moves the floor, branch by branch.
func printPlanFloor(ios *term.IO, p *gc.Plan) {
	switch {
	case p.FloorMoves:
		ios.Printf("%s moves from generation %d to %d: %d version(s) out of retention", ios.Heading("Floor:"), p.FloorGeneration, p.NewFloor.Generation, len(p.NewFloor.Retired))
		if len(p.Unretire) > 0 {
			ios.Printf(", %d taken back into retention", len(p.Unretire))
		}
		ios.Printf("\n")
	case p.FloorGeneration > 0:
		ios.Printf("%s stays at generation %d\n", ios.Heading("Floor:"), p.FloorGeneration)
	default:
		ios.Printf("%s does not move\n", ios.Heading("Floor:"))
	}
	n := p.Abbrev
	for _, b := range p.Branches {
		ios.Printf("  branch %s: head %s; in retention from seq %d (%s, snapshot %d)\n", ios.Ref(b.Branch), ios.ID(n.Short(b.Head)), b.Seq, ios.ID(n.Short(b.Floor)), b.Snapshot)
	}
}

// printPlanDeletions prints what the plan deletes, each list cut to 10
// items on a terminal (all with -v, or off a terminal).
func printPlanDeletions(ios *term.IO, g *globals, p *gc.Plan) {
	limit := 10
	if !ios.OutTTY || g.Verbose || ios.Verbose {
		limit = -1
	}
	list := func(heading, count string, bytes int64, items int, line func(i int)) {
		ios.Printf("%s %s, %s\n", ios.Heading(heading), count, term.Bytes(bytes))
		for i := range items {
			if limit >= 0 && i == limit {
				ios.Printf("  … and %d more (-v or --json lists all)\n", items-limit)
				break
			}
			line(i)
		}
	}
	t, n := p.Totals, p.Abbrev
	list("Catalogs to delete:", fmt.Sprintf("%d version(s)", t.Catalogs), t.CatalogBytes, len(p.Retire), func(i int) {
		rt, state := p.Retire[i], ""
		if rt.Marked {
			state = " (marked already)"
		}
		ios.Printf("  retire seq %d %s%s: %s\n", rt.Seq, ios.ID(n.Short(rt.ID)), state, rt.Reason)
	})
	list("Data files to delete:", fmt.Sprint(t.DataFiles), t.DataBytes, len(p.DataFiles), func(i int) {
		f := p.DataFiles[i]
		ios.Printf("  delete %s  %s  %s\n", f.Key, f.Reason, term.Bytes(f.Size))
	})
	list("Abandoned uploads to delete:", fmt.Sprint(t.Abandoned), t.AbandonedBytes, len(p.Abandoned), func(i int) {
		ios.Printf("  abandoned %s: %s\n", ios.ID(string(p.Abandoned[i].ID)), p.Abandoned[i].Reason)
	})
	if len(p.Temps) > 0 {
		list("Temporary files of interrupted writes to delete:", fmt.Sprint(t.Temps), t.TempBytes, len(p.Temps), func(i int) {
			f := p.Temps[i]
			ios.Printf("  temp %s  %s  %s\n", f.Key, f.ModTime.UTC().Format(time.RFC3339), term.Bytes(f.Size))
		})
	}
	ios.Printf("%s %s\n", ios.Heading("Total to delete:"), term.Bytes(t.Bytes))
}

// printPlanKept prints what the plan keeps.
func printPlanKept(ios *term.IO, p *gc.Plan) {
	d := p.Data
	ios.Printf("Kept: %d version(s) in retention, %d data file(s) (%s)", len(p.Kept), d.Kept, term.Bytes(d.KeptBytes))
	if d.Young > 0 {
		ios.Printf(", %d file(s) no catalog lists, younger than the grace period", d.Young)
	}
	if len(p.Young) > 0 {
		ios.Printf(", %d unreferenced upload(s) younger than the grace period", len(p.Young))
	}
	if p.YoungTemps > 0 {
		ios.Printf(", %d temporary file(s) younger than the grace period (writes in progress?)", p.YoungTemps)
	}
	if d.Outside > 0 {
		ios.Printf("; %d catalog row(s) name files outside the repository (never deleted)", d.Outside)
	}
	ios.Printf("\n")
	if d.Foreign > 0 {
		more := ""
		if d.Foreign > len(d.ForeignSample) {
			more = ", …"
		}
		ios.Printf("Left: %d file(s) under data/ that no catalog lists, whose names are not of the kinds DuckDB's ducklake writes (%s%s): gc deletes no file it does not own\n", d.Foreign, strings.Join(d.ForeignSample, ", "), more)
	}
}
