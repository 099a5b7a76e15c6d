package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
)

type migrateOptions struct {
	Message string
	Author  string
	SignKey string
}

func newMigrateCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &migrateOptions{}
	cmd := &cobra.Command{
		Use:     "migrate [BRANCH]",
		Aliases: []string{"upgrade"},
		Short:   "Publish a branch's head in the DuckLake format current DuckDB reads",
		Long: `DuckDB's ducklake extension reads only its own DuckLake format: from DuckDB
1.5.2 on that is 1.0, and an older catalog is refused ("DuckLake catalog
version mismatch ... To automatically migrate, set AUTOMATIC_MIGRATION"),
which a READ_ONLY reader cannot do. 'fdl migrate' makes a new version on top
of BRANCH's head (default: the working directory's branch, else HEAD's)
whose catalog is the head's migrated to DuckLake 1.0 with the extension's
own migration steps, run by fdl on a copy, and moves the branch to it
(fast-forward, compare-and-swap, as a push). The migration adds no snapshot:
the new version holds the same snapshots and rows, and its record says which
format it was migrated from. The old version stays for readers of its format
(its ATTACH line still works with the DuckDB release that reads it).

It refuses a branch whose head is already DuckLake 1.0 or newer, and, run in
a working directory of BRANCH, snapshots not committed or versions not pushed
there (they could not be pushed on top of the migrated version). A working
directory of BRANCH keeps its old catalog: check the branch out again to
write on the migrated version.

To migrate a lake while importing it, use 'fdl checkout URL DIR --from FILE
--migrate' instead.`,
		Example: `  fdl migrate
  fdl migrate main --repo s3://bucket/lakes/sales -m "DuckLake 1.0 for DuckDB 1.5.2+"`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runMigrate(cmd.Context(), ios, g, o, strings.TrimPrefix(optionalArg(a, 0), refs.HeadsPrefix))
		},
	}
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "the new version's message (default: what was migrated)")
	cmd.Flags().StringVar(&o.Author, "author", "", "who made it (default: $FDL_AUTHOR or the login name)")
	addSignKeyFlag(cmd, &o.SignKey, "sign the new version")
	g.addRepoFlag(cmd)
	return cmd
}

func runMigrate(ctx context.Context, ios *term.IO, g *globals, o *migrateOptions, branch string) error {
	mo := repo.MigrateOptions{Branch: branch, Message: o.Message, Author: o.Author, SignKey: g.signKey(o.SignKey)}
	if g.Repo == "" {
		// In a working directory: its branch by default, and no local work.
		if w, err := g.workdir(); err == nil {
			defer w.Close()
			res, err := w.Migrate(ctx, mo)
			g.progressDone()
			return printMigrate(ios, g, res, err)
		}
	}
	return g.withRepo(ctx, func(r *repo.Repo, _ *repo.Local) error {
		res, err := r.MigrateBranch(ctx, mo)
		g.progressDone()
		return printMigrate(ios, g, res, err)
	})
}

// printMigrate prints what a migration made.
func printMigrate(ios *term.IO, g *globals, res *repo.MigrateResult, err error) error {
	if err != nil {
		return err
	}
	if g.JSON {
		return printJSON(ios, res)
	}
	short := res.Abbrev.Short
	rec, m := res.Version, res.Migration
	ios.Printf("Migrated %s from DuckLake %s to %s: version %s (seq %d) on top of %s (seq %d)\n",
		ios.Ref(res.Branch), m.From, m.To, ios.ID(short(rec.ID)), rec.Seq, ios.ID(short(res.Parent)), res.ParentSeq)
	steps := make([]string, len(m.Steps))
	for i, s := range m.Steps {
		steps[i] = s.From + " -> " + s.To
	}
	ios.Printf("The ducklake extension's own steps (%s); no snapshot added: both end at snapshot %d.\n", strings.Join(steps, ", "), rec.DuckLake.Snapshot)
	ios.Printf("%s attaches it with:\n  %s\n", readersText(res.Readers), res.Attach)
	ios.Printf("The old version stays for %s:\n  %s\n", readersText(res.ParentReaders), res.ParentAttach)
	if res.WorkdirBehind {
		ios.Printf("This working directory still holds the DuckLake %s catalog of seq %d: %s brings it to the migrated version (or check out %s again: fdl checkout %s NEWDIR).\n",
			m.From, res.ParentSeq, g.next("pull"), res.Branch, shellQuote(res.URL))
	}
	return nil
}

// readersText says which DuckDB releases run a version's READ_ONLY ATTACH
// line: "DuckDB >= 1.5.2", "DuckDB 1.4.x", or "no published DuckDB
// release" (a format only development builds wrote).
func readersText(rd meta.Readers) string {
	switch rd.Attach {
	case "none":
		return "no published DuckDB release"
	case "", "unknown":
		return "an unknown DuckDB release"
	}
	return "DuckDB " + rd.Attach
}
