package main

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
)

type refOptions struct {
	List   bool
	Delete bool
	// Force, Backwards, Why: fdl branch -f NAME REV [--backwards] [--why TEXT].
	Force        bool
	Backwards    bool
	Why          string
	FormatChange bool // with -f: --allow-format-change
	Repair       bool // tag --repair
	// Sign, SignKey: fdl tag --sign [--sign-key FILE] NAME [REV].
	Sign    bool
	SignKey string
}

func newTagCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &refOptions{}
	cmd := &cobra.Command{
		Use:   "tag [NAME [REV]] | tag -l [PATTERN…] | tag --repair NAME [REV]",
		Short: "Create or list tags (tags never move)",
		Long: `Create tag NAME at REV (default: HEAD), or list tags with -l or no NAME.
A tag never moves and cannot be deleted: creating a tag that holds another
version is refused with exit code 4; creating it again at the version it
holds succeeds and changes nothing (a CI job can retry a release tag).

--sign signs the tag with an SSH key (--sign-key, else $FDL_SIGNING_KEY; see
fdl sign): its signature covers the repository's id, the tag's name and the
version, and is written before the tag; the version's record is signed too
when it has none. A tag already at REV is signed if it is not.

--repair points a damaged tag at REV: one whose file holds no version id, or
that names a version the repository does not hold (fdl verify reports both).
The ref log records the repair and what the tag held (fdl reflog NAME). An
intact tag is refused with exit code 4.`,
		Example: `  fdl tag 2025-final --repo s3://bucket/sales
  fdl tag --sign 2025-final main --sign-key ~/.ssh/id_ed25519
  fdl tag -l
  fdl tag --repair 2025-final 3f9a2c1`,
		Args: args(0, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.Delete || o.Force {
				return usageError{errTagsNeverMove(o.Delete)}
			}
			if o.Repair {
				if o.List || len(a) == 0 {
					return usageError{errors.New("--repair needs the tag's NAME (fdl tag --repair NAME REV)")}
				}
				return runRepairTag(cmd.Context(), ios, g, a[0], optionalArg(a, 1))
			}
			if o.List || len(a) == 0 {
				return runListRefs(cmd.Context(), ios, g, refs.TagsPrefix, a)
			}
			if o.Sign {
				return runSignedTag(cmd.Context(), ios, g, a[0], optionalArg(a, 1), o)
			}
			if o.SignKey != "" {
				return usageError{errors.New("--sign-key goes with --sign (fdl tag --sign NAME REV --sign-key FILE)")}
			}
			return runCreateRef(cmd.Context(), ios, g, refs.KindTag, a[0], optionalArg(a, 1))
		},
	}
	cmd.Flags().BoolVarP(&o.List, "list", "l", false, "list tags")
	cmd.Flags().BoolVar(&o.Repair, "repair", false, "point a damaged tag (no version id, or a version the repository does not hold) at REV")
	cmd.Flags().BoolVarP(&o.Sign, "sign", "s", false, "sign the tag (and the version's record, if unsigned) with an SSH key")
	addSignKeyFlag(cmd, &o.SignKey, "with --sign: sign")
	// -d and -f exist only to say why tags cannot be deleted or moved.
	cmd.Flags().BoolVarP(&o.Delete, "delete", "d", false, "not available: tags never move and cannot be deleted")
	cmd.Flags().BoolVarP(&o.Force, "force", "f", false, "not available: tags never move")
	cmd.Flags().MarkHidden("delete")
	cmd.Flags().MarkHidden("force")
	g.addRepoFlag(cmd)
	return cmd
}

// errTagsNeverMove says why 'fdl tag -d' and 'fdl tag -f' do not exist,
// and what to do instead.
func errTagsNeverMove(del bool) error {
	what := "moved (-f)"
	if del {
		what = "deleted (-d)"
	}
	return fmt.Errorf("tags cannot be %s: a tag names one version for good, and readers (ATTACH lines, pipelines, other repositories' records) rely on it never changing. "+
		"To name another version, make a new tag (fdl tag NAME-2 REV); for a name that moves, use a branch (fdl branch NAME REV, then fdl branch -f NAME REV); "+
		"to keep a version from being used, say so in a new tag or in the next version's message. A tag keeps its version in retention for good", what)
}

func newBranchCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &refOptions{}
	cmd := &cobra.Command{
		Use:   "branch [NAME [REV]]",
		Short: "Create, list or delete branches",
		Long: `Create branch NAME at REV (default: HEAD) only where it does not exist; list
branches with -l or no NAME; delete one with -d NAME (its versions stay).
The branch HEAD names cannot be deleted.

Move an existing branch with -f NAME REV. It moves forward (to a version
that descends from the one it holds) without more ado; any other move undoes
versions and needs --backwards as well, else it is refused with exit code 3.
The undone versions stay in the repository and in the ref log (fdl reflog
NAME), and gc keeps them while the retention policy does. --why records the
reason in the ref log.`,
		Example: `  fdl branch dev main~2
  fdl branch -f main main~1 --backwards --why "load of the 12th was wrong"
  fdl branch -d dev`,
		Args: args(0, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if (o.Backwards || o.Why != "") && !o.Force {
				return usageError{fmt.Errorf("--backwards and --why go with -f NAME REV")}
			}
			switch {
			case o.Force:
				if len(a) != 2 || o.Delete || o.List {
					return usageError{fmt.Errorf("branch -f takes a branch name and a revision: fdl branch -f NAME REV")}
				}
				return runMoveBranch(cmd.Context(), ios, g, a[0], a[1], repo.MoveOptions{Backwards: o.Backwards, Why: o.Why, AllowFormatChange: o.FormatChange})
			case o.Delete:
				if len(a) != 1 || o.List {
					return usageError{fmt.Errorf("branch -d takes one branch name")}
				}
				return runDeleteBranch(cmd.Context(), ios, g, a[0])
			case o.List || len(a) == 0:
				return runListRefs(cmd.Context(), ios, g, refs.HeadsPrefix, a)
			}
			return runCreateRef(cmd.Context(), ios, g, refs.KindBranch, a[0], optionalArg(a, 1))
		},
	}
	cmd.Flags().BoolVarP(&o.List, "list", "l", false, "list branches")
	cmd.Flags().BoolVarP(&o.Delete, "delete", "d", false, "delete a branch")
	cmd.Flags().BoolVarP(&o.Force, "force", "f", false, "move an existing branch to REV (forward only, unless --backwards)")
	cmd.Flags().BoolVar(&o.Backwards, "backwards", false, "with -f: allow a move that undoes versions")
	cmd.Flags().StringVar(&o.Why, "why", "", "with -f: the reason, recorded in the ref log")
	formatChangeFlags(cmd, &o.FormatChange, "with -f: allow a move that changes which DuckDB releases read the branch")
	g.addRepoFlag(cmd)
	return cmd
}

// runListRefs lists refs under prefix whose short names match one of the
// shell patterns (all refs when none is given).
func runListRefs(ctx context.Context, ios *term.IO, g *globals, prefix string, patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return usageError{fmt.Errorf("pattern %q: %v", p, err)}
		}
	}
	return g.withRepo(ctx, func(r *repo.Repo, _ *repo.Local) error {
		l, err := r.ListRefs(ctx, prefix, patterns)
		if err != nil {
			return err
		}
		for i := range l.Refs {
			l.Refs[i].Message = oneLine(l.Refs[i].Message)
		}
		if g.JSON {
			if err := printJSON(ios, l.Refs); err != nil {
				return err
			}
		} else {
			for _, e := range l.Refs {
				mark := "  "
				if e.Head {
					mark = "* "
				}
				if !ios.OutTTY {
					ios.Printf("%s\t%s\t%d\t%s\n", e.Name, e.Short, e.Seq, e.Message)
					continue
				}
				ios.Printf("%s%s  %s  seq %d  %s\n", mark, ios.Ref(e.Name), ios.ID(e.Short), e.Seq, e.Message)
			}
		}
		if len(l.Bad) > 0 {
			for _, e := range l.Bad {
				ios.Printf("%s\n", message(e))
			}
			return l.Bad[0]
		}
		return nil
	})
}

// runCreateRef is 'fdl tag NAME [REV]' and 'fdl branch NAME [REV]'; REV
// defaults, inside a working directory, to its branch's newest pushed
// version.
func runCreateRef(ctx context.Context, ios *term.IO, g *globals, kind refs.Kind, name, rev string) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		create := r.CreateBranch
		if kind == refs.KindTag {
			create = r.CreateTag
		}
		ref, err := create(ctx, l, name, rev)
		if err != nil {
			return err
		}
		if g.JSON {
			return printJSON(ios, ref)
		}
		if ref.UpToDate {
			ios.Printf("%s %s already at %s\n", titleCase(string(ref.Kind)), ios.Ref(ref.Name), ios.ID(ref.Abbrev.Short(ref.ID)))
			return nil
		}
		ios.Printf("Created %s %s at %s\n", ref.Kind, ios.Ref(ref.Name), ios.ID(ref.Abbrev.Short(ref.ID)))
		return nil
	})
}

func runRepairTag(ctx context.Context, ios *term.IO, g *globals, name, rev string) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		ref, err := r.RepairTag(ctx, l, name, rev)
		if errors.Is(err, refs.ErrNotFound) {
			return fmt.Errorf("%w (create it with fdl tag %s REV)", err, shellQuote(name))
		}
		if err != nil {
			return err
		}
		if g.JSON {
			return printJSON(ios, ref)
		}
		if ref.UpToDate {
			ios.Printf("Tag %s already at %s\n", ios.Ref(ref.Name), ios.ID(ref.Abbrev.Short(ref.ID)))
			return nil
		}
		was := "no version id"
		if ref.Was != "" {
			was = string(ref.Was)
		}
		ios.Printf("Repaired tag %s: at %s (was %s)\n", ios.Ref(ref.Name), ios.ID(ref.Abbrev.Short(ref.ID)), was)
		return nil
	})
}

func runDeleteBranch(ctx context.Context, ios *term.IO, g *globals, name string) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		d, err := r.DeleteBranch(ctx, name)
		if err != nil {
			return err
		}
		warnUnprotected(ios, g, d.Unprotected, "of the deleted branch's")
		if g.JSON {
			return printJSON(ios, d)
		}
		ios.Printf("Deleted branch %s (was %s)\n", ios.Ref(d.Ref.Short()), ios.ID(string(d.ID)))
		return nil
	})
}

// titleCase upper-cases the first letter of an ASCII word.
func titleCase(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func runSignedTag(ctx context.Context, ios *term.IO, g *globals, name, rev string, o *refOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		ref, err := r.CreateSignedTag(ctx, l, name, rev, repo.SignOptions{Key: g.signKey(o.SignKey)})
		if err != nil {
			return err
		}
		if g.JSON {
			return printJSON(ios, ref)
		}
		if ref.UpToDate {
			ios.Printf("Tag %s already at %s\n", ios.Ref(ref.Name), ios.ID(ref.Abbrev.Short(ref.ID)))
		} else {
			ios.Printf("Created tag %s at %s\n", ios.Ref(ref.Name), ios.ID(ref.Abbrev.Short(ref.ID)))
		}
		printSigned(ios, ref.Signed)
		return nil
	})
}
