package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

type verifyOptions struct {
	SkipCatalogs bool
	Data         bool
	Deep         bool
	Signers      string
}

func newVerifyCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check refs, records, catalogs, retention and (--data) data files",
		Long: `Check that every ref points at a complete version in retention, every record
parses and its parents exist, seq is the parent's + 1; that the retention
policy, floor, markers and ref log entries parse; that every version out of
retention has its marker (retired.json) and no catalog or dataset.json left;
and, for every version in retention, that its catalog's size and sha256
match its record and the DuckLake catalog invariants hold inside it (schema,
table and data-file references, end_snapshot > begin_snapshot,
next_catalog_id and next_file_id above every id used), that its last
snapshot is the one its record names and that it still holds its parent's
last snapshot. A gap in snapshot ids is printed as a note, not a problem:
DuckLake's ducklake_expire_snapshots removes snapshot rows.

With --data, also check that every data and delete file a catalog in
retention can read (at or after its floor snapshot) exists in the store with
the size the catalog records (file_size_bytes); files outside the repository
are counted, not checked. With --deep as well, read each file's Parquet
footer (two small ranged reads a file) and check that it parses, that its
column chunks lie inside the file, and that its length and row count are the
catalog's footer_size and record_count (delete_count). Bytes changed inside a
page, the footer intact, are beyond these checks (docs/spec.md §23).

Every signature object (a version's version.json.sig, a tag's under
signatures/tags/) must verify over what it signs (signature-bad otherwise).
With --signers FILE (an allowed signers file, Git's gpg.ssh.allowedSignersFile
format), each must also be by a key the file allows for namespace fdl
(signer-not-allowed otherwise), and versions and tags without a signature are
noted (version-unsigned, tag-unsigned: notes, not problems).

Exits 1 naming each problem with a stable code (--json: problems[].code;
docs/cli.md lists them). Version folders without version.json that no ref
reaches (an interrupted push) are listed but are not problems.`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.Deep && !o.Data {
				return usageError{fmt.Errorf("--deep reads the data files' footers: use it with --data")}
			}
			if o.Data && o.SkipCatalogs {
				return usageError{fmt.Errorf("--data reads every catalog in retention: it does not go with --skip-catalogs")}
			}
			return runVerify(cmd.Context(), ios, g, o)
		},
	}
	g.addRepoFlag(cmd)
	cmd.Flags().BoolVar(&o.SkipCatalogs, "skip-catalogs", false, "do not read catalogs (no sha256 or catalog invariant checks)")
	cmd.Flags().BoolVar(&o.Data, "data", false, "also check that every data file a catalog in retention can read exists with its recorded size")
	cmd.Flags().BoolVar(&o.Deep, "deep", false, "with --data, also read each data file's Parquet footer and compare its row count with the catalog's")
	cmd.Flags().StringVar(&o.Signers, "signers", "", "judge signatures by this allowed signers `FILE` (ssh-keygen's format) and note what is unsigned")
	return cmd
}

func runVerify(ctx context.Context, ios *term.IO, g *globals, o *verifyOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		rep, err := r.Verify(ctx, repo.VerifyOptions{SkipCatalogs: o.SkipCatalogs, Data: o.Data, Deep: o.Deep, Signers: g.path(o.Signers)})
		if err != nil {
			return err
		}
		for _, ps := range [][]repo.Problem{rep.Problems, rep.Notes} {
			for i := range ps {
				ps[i].Message = problemMessage(g, ps[i])
			}
		}
		if g.JSON {
			if err := printJSON(ios, rep); err != nil {
				return err
			}
		} else {
			for _, p := range rep.Problems {
				ios.Printf("%s %s: %s\n", ios.Bad(string(p.Code)), p.Object, p.Message)
			}
			for _, p := range rep.Notes {
				ios.Printf("%s %s %s: %s\n", ios.Dim("note"), p.Code, p.Object, p.Message)
			}
			for _, id := range rep.Incomplete {
				ios.Printf("%s %s: no version.json and no ref reaches it (an interrupted push; harmless)\n", ios.Dim("incomplete"), id)
			}
			if rep.OK() {
				ios.Printf("%s: %d ref(s), %d version(s), %d catalog(s) checked\n", ios.OK("ok"), rep.Refs, rep.Versions, rep.Catalogs)
				if rep.Packs > 0 {
					ios.Printf("%d history pack(s) checked against the records\n", rep.Packs)
				}
				if rep.Signatures > 0 {
					ios.Printf("%d signature(s) checked\n", rep.Signatures)
				}
				if rep.Retired > 0 {
					ios.Printf("%d version(s) out of retention (records kept, catalogs deleted)\n", rep.Retired)
				}
				if o.Data {
					ios.Printf("%d data file(s) in the store checked", rep.DataFiles)
					if o.Deep {
						ios.Printf("; %d Parquet footer(s) read", rep.DataFooters)
					}
					if rep.DataOutside > 0 {
						ios.Printf("; %d catalog row(s) name files outside the repository (not checked)", rep.DataOutside)
					}
					ios.Printf("\n")
				}
			}
		}
		if !rep.OK() {
			return verifyFailed{len(rep.Problems)}
		}
		return nil
	})
}
