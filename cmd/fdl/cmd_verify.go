package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

type verifyOptions struct {
	SkipCatalogs bool
}

func newVerifyCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check refs, records and catalog checksums",
		Long: `Check that every ref points at a complete version, every record parses and
its parents exist, seq is the parent's + 1, and every catalog's size and
sha256 match its record. Exits 1 naming each problem. Version folders
without version.json that no ref reaches (an interrupted push) are listed
but are not problems.`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runVerify(cmd.Context(), ios, g, o)
		},
	}
	cmd.Flags().StringVar(&g.Repo, "repo", "", "repository `URL` (default: the working directory's)")
	cmd.Flags().BoolVar(&o.SkipCatalogs, "skip-catalogs", false, "do not read catalogs to check their sha256")
	return cmd
}

func runVerify(ctx context.Context, ios *term.IO, g *globals, o *verifyOptions) error {
	r, err := g.openRepo(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	rep, err := r.Verify(ctx, repo.VerifyOptions{SkipCatalogs: o.SkipCatalogs})
	if err != nil {
		return err
	}
	if g.JSON {
		if err := printJSON(ios, rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			ios.Printf("%s %s: %s\n", ios.Bad(p.Code), p.Object, p.Message)
		}
		for _, id := range rep.Incomplete {
			ios.Printf("%s %s: no version.json and no ref reaches it (an interrupted push; harmless)\n", ios.Dim("incomplete"), id)
		}
		if rep.OK() {
			ios.Printf("%s: %d ref(s), %d version(s), %d catalog(s) checked\n", ios.OK("ok"), rep.Refs, rep.Versions, rep.Catalogs)
		}
	}
	if !rep.OK() {
		return verifyFailed{len(rep.Problems)}
	}
	return nil
}

var _ = errors.New
