package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
)

// Shell completion of ref names and flag values (cobra's 'fdl completion
// bash|zsh|fish|powershell' scripts call 'fdl __complete'). Completing a
// ref reads the repository's refs — --repo, $FDL_REPO, or the working
// directory's — with a deadline: nothing is offered, and nothing fails,
// when it cannot be read in time (offline, no credentials).

// completeTimeout bounds how long a completion may read the repository.
const completeTimeout = 1500 * time.Millisecond

// refKinds selects which refs a completion offers.
type refKinds struct{ branches, tags, requests bool }

var (
	revRefs     = refKinds{branches: true, tags: true, requests: true}
	branchRefs  = refKinds{branches: true}
	requestRefs = refKinds{requests: true}
)

// refNames lists the short names of the refs of kinds in the repository
// url ("" for --repo, $FDL_REPO or the working directory's) that begin
// with prefix; nil when the repository cannot be read within
// completeTimeout.
func (g *globals) refNames(url string, kinds refKinds, prefix string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	type result struct{ names []string }
	done := make(chan result, 1)
	go func() {
		var r *repo.Repo
		var err error
		if url != "" {
			r, err = repo.Open(ctx, g.path(url))
		} else {
			r, _, err = g.openRepo(ctx)
		}
		if err != nil {
			done <- result{}
			return
		}
		defer r.Close()
		var names []string
		for _, p := range []struct {
			on     bool
			prefix string
		}{{kinds.branches, refs.HeadsPrefix}, {kinds.tags, refs.TagsPrefix}, {kinds.requests, refs.RequestsPrefix}} {
			if !p.on {
				continue
			}
			good, err := r.RefNames(ctx, p.prefix)
			if err != nil {
				continue
			}
			for _, short := range good {
				if strings.HasPrefix(short, prefix) {
					names = append(names, short)
				}
			}
		}
		done <- result{names}
	}()
	select {
	case res := <-done:
		return res.names
	case <-ctx.Done():
		return nil
	}
}

// completeRefs returns a ValidArgsFunction offering refs of kinds for the
// positional arguments at the given indexes (none: every position).
func (g *globals) completeRefs(kinds refKinds, positions ...int) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, a []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(positions) > 0 && !containsInt(positions, len(a)) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return g.refNames("", kinds, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRepoRefs offers refs of kinds of the repository named by the
// command's first argument (checkout URL DIR --rev/--branch), else as
// completeRefs.
func (g *globals) completeRepoRefs(kinds refKinds) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, a []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		url := ""
		if len(a) == 2 || (len(a) == 1 && os.Getenv("FDL_REPO") == "") {
			url = a[0]
		}
		return g.refNames(url, kinds, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeWords offers fixed values (a flag's choices).
func completeWords(words ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeDirs offers folders (--repo, -C).
func completeDirs(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// registerCompletions wires completion into every command of root: ref
// names for revision, branch and request arguments and flags, the choices
// of --catalog-format and --format, folders for --repo and -C.
func (g *globals) registerCompletions(root *cobra.Command) {
	root.RegisterFlagCompletionFunc("dir", completeDirs)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("repo") != nil {
			c.RegisterFlagCompletionFunc("repo", completeDirs)
		}
		switch c.CommandPath() {
		case "fdl log", "fdl show", "fdl attach", "fdl diff", "fdl sign":
			c.ValidArgsFunction = g.completeRefs(revRefs)
		case "fdl reflog":
			c.ValidArgsFunction = g.completeRefs(revRefs, 0)
		case "fdl tag":
			c.ValidArgsFunction = g.completeRefs(revRefs, 1)
		case "fdl branch":
			c.ValidArgsFunction = func(cmd *cobra.Command, a []string, s string) ([]string, cobra.ShellCompDirective) {
				if len(a) == 0 {
					if f, _ := cmd.Flags().GetBool("force"); !f {
						if d, _ := cmd.Flags().GetBool("delete"); !d {
							return nil, cobra.ShellCompDirectiveNoFileComp // a new name
						}
					}
					return g.refNames("", branchRefs, s), cobra.ShellCompDirectiveNoFileComp
				}
				return g.completeRefs(revRefs, 1)(cmd, a, s)
			}
		case "fdl push":
			c.ValidArgsFunction = g.completeRefs(branchRefs, 0)
		case "fdl checkout":
			c.RegisterFlagCompletionFunc("rev", g.completeRepoRefs(revRefs))
			c.RegisterFlagCompletionFunc("branch", g.completeRepoRefs(branchRefs))
			c.RegisterFlagCompletionFunc("catalog-format", completeWords("sqlite", "duckdb"))
			c.RegisterFlagCompletionFunc("format", completeWords("1.0", "0.4"))
		case "fdl request show", "fdl request approve", "fdl request drop", "fdl request update", "fdl request diff":
			c.ValidArgsFunction = g.completeRefs(requestRefs, 0)
		case "fdl request create":
			c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveNoFileComp // a new name
			}
			c.RegisterFlagCompletionFunc("into", g.completeRefs(branchRefs))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
