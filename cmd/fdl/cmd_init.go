package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

type initOptions struct {
	URL           string
	Name          string
	DefaultBranch string
}

func newInitCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init URL",
		Short: "Make an empty repository in a folder or store",
		Long: `Make an empty repository at URL: a folder path, file://, or mem:// (tests).
It refuses a location that already holds files.`,
		Example: `  fdl init ./lake-repo
  fdl init file:///srv/data/sales`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.URL = a[0]
			return runInit(cmd.Context(), ios, g, o)
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "repository name (default: the folder's name)")
	cmd.Flags().StringVar(&o.DefaultBranch, "default-branch", "main", "the branch HEAD names")
	return cmd
}

func runInit(ctx context.Context, ios *term.IO, g *globals, o *initOptions) error {
	r, err := repo.Init(ctx, g.path(o.URL), repo.InitOptions{Name: o.Name, DefaultBranch: o.DefaultBranch})
	if err != nil {
		return err
	}
	defer r.Close()
	cfg := r.Config()
	if g.JSON {
		return printJSON(ios, map[string]any{"url": store.RedactURL(o.URL), "location": r.Store().Location(""), "config": cfg})
	}
	ios.Printf("Initialized empty fdl repository %q in %s (branch %s)\n", cfg.Name, r.Store().Location(""), ios.Ref(cfg.DefaultBranch))
	ios.Printf("Next: fdl checkout %s DIR [--from EXISTING.ducklake]\n", shellQuote(store.RedactURL(o.URL)))
	return nil
}
