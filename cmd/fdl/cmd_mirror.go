package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/mirror"
)

func newMirrorCmd(ios *term.IO, g *globals) *cobra.Command {
	var o mirror.Options
	cmd := &cobra.Command{
		Use:   "mirror SRC DST",
		Short: "Copy a repository, or some of its refs, to another store (refs last, fast-forward only)",
		Long: `Copy the repository at SRC, or the refs --ref names and the versions they
reach, to DST, on any store (folder, s3://, gs://, azblob://). The first
mirror makes DST with SRC's fdl.json; afterwards DST must be that same
repository. Objects are copied first — each version's catalog (its sha256
computed on the copy's stream), the data files it reads in SRC's data/
(sizes checked), dataset.json, signatures, the record, its history pack;
then the ref log entries — and the refs last, each by compare-and-swap.
A mirror stopped at any point (Ctrl-C, a crash) leaves DST's refs as they
were; running it again copies only what is still missing. With nothing
new, a run reads the refs at both ends and nothing else.

Tags are created, never moved: a DST tag holding another version is
refused (exit code 4). Branches move fast-forward only: a DST branch that
moved on its own is refused (exit code 3) unless --backwards --why TEXT,
as for fdl branch -f. Refused refs are reported; the others move. A move
that changes which DuckDB releases read a branch needs
--allow-format-change, as for fdl push.

SRC may be a read-only http(s):// URL; where it cannot list, name each ref
(--ref heads/main --ref tags/v1).`,
		Example: `  fdl mirror s3://acme/lake /backup/lake
  fdl mirror s3://acme/lake /srv/www/lake --ref 'tags/*'
  fdl mirror https://data.example.org/lake ./lake --ref tags/2025-final`,
		Args: args(2, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if strings.TrimSpace(a[0]) == "" || strings.TrimSpace(a[1]) == "" {
				return usageError{errors.New("mirror takes the source and the destination repository (fdl mirror SRC DST); one is empty")}
			}
			if o.Why != "" && !o.Backwards {
				return usageError{errors.New("--why gives the reason for --backwards: use them together (fdl mirror SRC DST --backwards --why TEXT), or leave --why out")}
			}
			return runMirror(cmd.Context(), ios, g, a[0], a[1], o)
		},
	}
	cmd.Flags().StringArrayVar(&o.Refs, "ref", nil, "mirror only the refs matching `PATTERN` (heads/main, tags/*; repeatable); default: every branch and tag")
	cmd.Flags().BoolVar(&o.Backwards, "backwards", false, "move a DST branch that moved on its own back to SRC's version (needs --why)")
	cmd.Flags().StringVar(&o.Why, "why", "", "with --backwards: the reason, recorded in DST's ref log")
	formatChangeFlags(cmd, &o.AllowFormatChange, "let a branch move change the DuckDB releases that read it")
	return cmd
}

func runMirror(ctx context.Context, ios *term.IO, g *globals, src, dst string, o mirror.Options) error {
	o.Repo = g.options()
	res, err := mirror.Run(ctx, g.path(src), g.path(dst), o)
	g.progressDone()
	if res == nil {
		return err
	}
	if g.JSON {
		if perr := printJSON(ios, res); perr != nil {
			return perr
		}
		return err
	}
	// A copy that stopped moved no ref: say so, not what moved.
	stopped := err != nil && !errors.As(err, new(*mirror.RefusedError))
	if res.Created {
		if stopped {
			ios.Printf("Made %s to mirror %s; the copy stopped before any ref moved (below)\n", res.Destination, res.Source)
			return err
		}
		ios.Printf("Made %s, a mirror of %s\n", res.Destination, res.Source)
	}
	if stopped {
		return err
	}
	for _, r := range res.Refs {
		switch r.Action {
		case mirror.ActCreated:
			ios.Printf("%s: created at %s\n", ios.Ref(r.Ref), ios.ID(string(r.New)))
		case mirror.ActMoved, mirror.ActMovedBack:
			ios.Printf("%s: %s..%s (%s)\n", ios.Ref(r.Ref), ios.ID(string(r.Old)), ios.ID(string(r.New)), r.Action)
		case mirror.ActUpToDate:
			ios.Printf("%s: up to date at %s\n", ios.Ref(r.Ref), ios.ID(string(r.New)))
		case mirror.ActRefused:
			ios.Printf("%s: not moved (refused, below)\n", ios.Ref(r.Ref))
		}
		if c := r.FormatChange; c != nil {
			printFormatChange(ios, r.Ref, c)
		}
	}
	gone := ""
	if res.DataGone > 0 {
		gone = fmt.Sprintf(" (%d more that the source's gc deleted and no copied version reads: not copied)", res.DataGone)
	}
	ios.Printf("%d version(s) copied (%d retired), %d object(s), %d data file(s)%s, %d bytes; %d ref(s) moved\n",
		res.Versions, res.Retired, res.Objects, res.DataFiles, gone, res.Bytes, res.RefsMoved)
	if res.DataAbsolute > 0 {
		ios.Warnf("%d data file(s) are named by absolute path in the copied catalogs (added with ducklake_add_data_files by their full path): %s holds copies, but DuckDB reads an absolute path as written, so its readers read them at %s", res.DataAbsolute, res.Destination, res.Source)
	}
	return err
}
