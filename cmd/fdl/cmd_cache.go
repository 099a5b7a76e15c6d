package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/cache"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/retention"
)

func newCacheCmd(ios *term.IO, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "List and prune the reader's catalog cache",
		Long: `fdl attach --cache (and FDL_CACHE) keeps each version's catalog it attaches,
checked against its record, in the reader's catalog cache: a folder of this
user's, FDL_CACHE or by default fdl/catalogs in the user's cache folder
($XDG_CACHE_HOME, else ~/.cache). Entries are keyed by their sha256, so one
catalog is downloaded once whichever repository or pin names it. The cache
records each entry's last use itself and keeps its size under
FDL_CACHE_MAX_SIZE (default 10GiB; 0: no limit) by removing the least
recently used entries after each download. Several fdl processes may use
it at once. Format: docs/spec.md, "The reader's catalog cache".

  fdl cache list                               entries, least recently used first
  fdl cache prune [--max-size SIZE] [--older-than DUR] [--all]`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error { return runCacheList(ios, g) },
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the cached catalogs, least recently used first",
		Args:  args(0, 0),
		RunE:  func(cmd *cobra.Command, a []string) error { return runCacheList(ios, g) },
	}
	var po struct {
		MaxSize, OlderThan string
		All                bool
	}
	prune := &cobra.Command{
		Use:   "prune [--max-size SIZE] [--older-than DUR] [--all]",
		Short: "Remove cached catalogs: old ones, the least recently used above a size, or all",
		Long: `Remove cached catalogs: those last used more than --older-than ago (30d,
12h, 2w), then the least recently used until the rest fit in --max-size
(500MB, 10GiB), or every one with --all. Without options it removes only
what killed fdl processes left (partial downloads, stale locks). An entry
another fdl process is using is kept and reported as busy. Nothing is
ever needed again from the cache: a removed catalog is downloaded again by
the next attach that needs it.`,
		Example: `  fdl cache prune --max-size 2GiB
  fdl cache prune --older-than 30d`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			var opts cache.PruneOptions
			var err error
			if po.MaxSize != "" {
				if opts.MaxBytes, err = cache.ParseSize(po.MaxSize); err != nil {
					return usageError{err}
				}
			}
			if po.OlderThan != "" {
				d, err := retention.ParseDuration(po.OlderThan)
				if err != nil {
					// Not retention's words: this is the cache's age.
					return usageError{fmt.Errorf("--older-than %q: not a duration: write a number and a unit (2w, 30d, 12h, 90m, 45s) or a sum such as 1d12h", po.OlderThan)}
				}
				opts.OlderThan = time.Duration(d)
			}
			// Zero asked for on the command line is a bound like any
			// other (at most 0 bytes, last used more than 0s ago): every
			// entry goes. To the library (and FDL_CACHE_MAX_SIZE) 0 is
			// no bound.
			zeroSize := po.MaxSize != "" && opts.MaxBytes == 0
			zeroAge := po.OlderThan != "" && opts.OlderThan == 0
			opts.All = po.All || zeroSize || zeroAge
			return runCachePrune(cmd, ios, g, opts)
		},
	}
	prune.Flags().StringVar(&po.MaxSize, "max-size", "", "remove the least recently used until the cache holds at most `SIZE` (500MB, 10GiB; 0: every entry)")
	prune.Flags().StringVar(&po.OlderThan, "older-than", "", "remove entries last used more than `DUR` ago (30d, 12h)")
	prune.Flags().BoolVar(&po.All, "all", false, "remove every entry")
	cmd.AddCommand(list, prune)
	return cmd
}

// cacheListing is 'fdl cache list --json'.
type cacheListing struct {
	Dir     string        `json:"dir"`
	Entries []cache.Entry `json:"entries"`
	Bytes   int64         `json:"bytes"`
}

func runCacheList(ios *term.IO, g *globals) error {
	c, err := openCacheDir(os.Getenv("FDL_CACHE"))
	if err != nil {
		return err
	}
	entries, err := c.List()
	if err != nil {
		return err
	}
	out := cacheListing{Dir: c.Dir(), Entries: entries}
	for _, e := range entries {
		out.Bytes += e.Size
	}
	if out.Entries == nil {
		out.Entries = []cache.Entry{}
	}
	if g.JSON {
		return printJSON(ios, out)
	}
	for _, e := range entries {
		ios.Printf("%s\t%s\t%s\n", e.SHA256, term.Bytes(e.Size), e.LastUse.Format(time.RFC3339))
	}
	ios.Printf("%d catalog(s), %s in %s\n", len(entries), term.Bytes(out.Bytes), c.Dir())
	return nil
}

func runCachePrune(cmd *cobra.Command, ios *term.IO, g *globals, opts cache.PruneOptions) error {
	c, err := openCacheDir(os.Getenv("FDL_CACHE"))
	if err != nil {
		return err
	}
	res, err := c.Prune(cmd.Context(), opts)
	if err != nil {
		return err
	}
	if g.JSON {
		return printJSON(ios, res)
	}
	var freed int64
	for _, e := range res.Removed {
		freed += e.Size
	}
	ios.Printf("Removed %d catalog(s), %s; %s kept in %s\n", len(res.Removed), term.Bytes(freed), term.Bytes(res.Kept), c.Dir())
	for _, e := range res.Busy {
		ios.Warnf("catalog %s is in use by another fdl process: kept", e.SHA256)
	}
	return nil
}
