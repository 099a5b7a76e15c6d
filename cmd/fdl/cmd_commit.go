package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

type commitOptions struct {
	Message      string
	Author       string
	AllowNothing bool
	SignKey      string
	// ReplaceUnpushed: the new version replaces the unpushed ones.
	ReplaceUnpushed bool
}

func newCommitCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &commitOptions{}
	cmd := &cobra.Command{
		Use:   "commit -m MSG",
		Short: "Freeze the working catalog into a new local version",
		Long: `Freeze the working catalog's last snapshot into a new version, held in
DIR/.fdl/versions until 'fdl push'. The working catalog is only read.
It refuses when nothing changed since the base version, and when the catalog
does not continue the base's snapshots. A SQLite working catalog is read in
one consistent state (its -wal file included) while other processes go on
writing; their later snapshots wait for the next commit. A DuckDB-format one
cannot be read while another process holds it (a DuckDB session with it
attached): commit then refuses, DETACH it first.

After fdl restore or fdl revert --no-commit, the new version records what it
restores or reverts, and -m may be left out: the prepared message is taken.

With --allow-nothing, a working catalog with nothing after its base is no
error: commit says so and exits 0 ("committed": false in --json), as a
scheduled job that found no new data wants.

With --replace-unpushed, the new version takes the place of every version
committed here and not pushed yet (as git reset --soft @{u} then git commit):
its parent is the branch's version this directory last pushed or pulled, and
it holds every snapshot of the working catalog after that one. It is the way
on when push reports a local version whose files were lost or changed after
commit (the working catalog still holds their snapshots), and squashes
local versions before a push.

The author is --author, else $FDL_AUTHOR, else the login name.

With --sign-key (or $FDL_SIGNING_KEY set), the new version's record is signed
with that SSH key (as Git signs commits: ssh-keygen -Y sign, namespace fdl),
and push uploads the signature with it; see fdl sign.`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runCommit(cmd.Context(), ios, g, o)
		},
	}
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "what this version holds (required, unless fdl restore or revert --no-commit prepared one)")
	cmd.Flags().StringVar(&o.Author, "author", "", "who made it (default: $FDL_AUTHOR or the login name)")
	cmd.Flags().BoolVar(&o.AllowNothing, "allow-nothing", false, "exit 0 when nothing changed since the base (\"committed\": false in --json)")
	cmd.Flags().BoolVar(&o.ReplaceUnpushed, "replace-unpushed", false, "make the new version in place of the versions committed here and not pushed")
	addSignKeyFlag(cmd, &o.SignKey, "sign the version")
	return cmd
}

func runCommit(ctx context.Context, ios *term.IO, g *globals, o *commitOptions) error {
	w, err := g.workdir()
	if err != nil {
		return err
	}
	defer w.Close()
	co := workdir.CommitOptions{Message: o.Message, Author: o.Author, AllowNothing: o.AllowNothing, SignKey: g.signKey(o.SignKey)}
	var rec *version.Record
	var replaced []version.ID
	if o.ReplaceUnpushed {
		rec, replaced, err = w.ReplaceUnpushed(ctx, co)
	} else {
		rec, err = w.Commit(ctx, co)
	}
	if err != nil {
		return err
	}
	if rec == nil {
		b := w.BaseRecord
		if g.JSON {
			return printJSON(ios, nothingCommitted{Base: b.ID, Seq: b.Seq, Snapshot: b.DuckLake.Snapshot})
		}
		ios.Printf("Nothing to commit: the working catalog has no snapshot after version %s (seq %d)\n", ios.ID(string(b.ID)), b.Seq)
		return nil
	}
	if ahead := time.Until(rec.CreatedAt); ahead > time.Second {
		// Commit never lets created_at go back along parents: on a machine
		// whose clock is behind the one that made the parent, the version
		// takes the parent's time.
		ios.Warnf("this machine's clock is %s behind the one that made version %s: the new version's created_at is its parent's (%s), not now; check the clock (NTP)",
			ahead.Round(time.Second), rec.Parent(), rec.CreatedAt.Format(time.RFC3339))
	}
	if g.JSON {
		return printJSON(ios, committed{Committed: true, Record: rec, Replaced: replaced})
	}
	ios.Printf("[%s seq %d %s] %s\n", ios.Ref(w.State.Branch), rec.Seq, ios.ID(string(rec.ID)), oneLine(rec.Message))
	ios.Printf(" snapshots %d..%d, catalog %s, sha256 %s\n", rec.DuckLake.Adds.First, rec.DuckLake.Adds.Last, term.Bytes(rec.Catalog.Size), rec.Catalog.SHA256[:16])
	if co.SignKey != "" {
		from := "--sign-key"
		if o.SignKey == "" {
			from = "$" + signingKeyEnv
		}
		ios.Printf(" signed with the key of %s %s (version.json.sig, published with it)\n", from, co.SignKey)
	}
	if len(replaced) > 0 {
		ids := make([]string, len(replaced))
		for i, id := range replaced {
			ids[i] = ios.ID(string(id))
		}
		ios.Printf(" in place of %d unpushed version(s): %s\n", len(replaced), strings.Join(ids, ", "))
	}
	ios.Printf("Publish it with: %s\n", g.next("push"))
	return nil
}

// committed is 'fdl commit --json' for a new version: the record, and
// "committed": true.
type committed struct {
	Committed bool `json:"committed"`
	*version.Record
	// Replaced: the versions --replace-unpushed replaced, oldest first.
	Replaced []version.ID `json:"replaced,omitempty"`
}

// nothingCommitted is 'fdl commit --allow-nothing --json' when nothing
// changed since the base.
type nothingCommitted struct {
	Committed bool       `json:"committed"`
	Base      version.ID `json:"base"`
	Seq       int64      `json:"seq"`
	Snapshot  int64      `json:"snapshot"`
}
