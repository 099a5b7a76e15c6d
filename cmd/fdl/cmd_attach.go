package main

import (
	"context"
	"errors"

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

  duckdb -c "$(fdl attach 2025-final --repo s3://bucket/sales); SELECT count(*) FROM v12.sales"

The database is named v<seq>; --as chooses another name.

With --require-signed --signers FILE, a version whose record has no good
signature (fdl sign) by a key the allowed signers file allows for namespace
fdl is refused before its catalog is read: nothing on stdout, exit 1.`,
		Example: `  fdl attach main --repo /srv/repos/sales
  fdl attach 2025-final --as final`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.RequireSigned != (o.Signers != "") {
				return usageError{errors.New("--require-signed and --signers FILE go together: the file says whose signatures count")}
			}
			o.Signers = g.path(o.Signers)
			return runAttach(cmd.Context(), ios, g, optionalArg(a, 0), o)
		},
	}
	cmd.Flags().StringVar(&o.Alias, "as", "", "database `NAME` in the statement (default: v<seq>)")
	cmd.Flags().BoolVar(&o.RequireSigned, "require-signed", false, "refuse a version without a good signature by an allowed signer (with --signers)")
	cmd.Flags().StringVar(&o.Signers, "signers", "", "allowed signers `FILE` (ssh-keygen's format) for --require-signed")
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
