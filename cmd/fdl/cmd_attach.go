package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

func newAttachCmd(ios *term.IO, g *globals) *cobra.Command {
	o := repo.ShowOptions{}
	cmd := &cobra.Command{
		Use:   "attach [REV]",
		Short: "Print only the DuckDB ATTACH statement of a version, after checking its catalog",
		Long: `Print the one line a DuckDB reader runs to attach REV's version read-only
(default: as fdl show), and nothing else, after checking its catalog's size
and sha256 against its record (the catalog is read once; from an object
store, a download that is not kept). A catalog that does not match, a
version out of retention, or an unknown revision prints nothing on stdout
and exits 1, so a script never runs a statement for a damaged catalog:

  duckdb -c "$(fdl attach 2025-final --repo s3://bucket/sales) SELECT count(*) FROM sales_2025_final.orders"

The database's name stays the same from one version to the next where REV
names a ref, so saved SQL keeps working: the repository's name for its
default branch (sales), the repository's and the ref's for another branch
or a tag (sales_2025_final); a revision that names one version (an id,
main~2, main@12) gives v<seq>. --as chooses another name.`,
		Example: `  fdl attach main --repo /srv/repos/sales
  fdl attach 2025-final --as final`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runAttach(cmd.Context(), ios, g, optionalArg(a, 0), o)
		},
	}
	cmd.Flags().StringVar(&o.Alias, "as", "", "database `NAME` in the statement (default: named after the repository and ref, or v<seq>)")
	g.addRepoFlag(cmd)
	return cmd
}

func runAttach(ctx context.Context, ios *term.IO, g *globals, rev string, o repo.ShowOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		o.Local = l
		a, err := r.Attach(ctx, rev, o)
		g.progressDone()
		if err != nil {
			return err
		}
		if g.JSON {
			return printJSON(ios, a)
		}
		ios.Printf("%s\n", a.Attach)
		return nil
	})
}
