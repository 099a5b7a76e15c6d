package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

type diffOptions struct {
	Stat bool
}

func newDiffCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff [REV [REV]]",
		Short: "Show what changed between two versions, or a version and the working catalog",
		Long: `Show what changed between two versions: schemas, tables and views created,
renamed or dropped; columns added, renamed, retyped or dropped; per table the
rows inserted and deleted, data files added and removed, and their bytes.

In a working directory (without --repo):
  fdl diff              the base version against the working catalog
  fdl diff REV          REV against the working catalog
Elsewhere (or with --repo):
  fdl diff              HEAD's parent against HEAD
  fdl diff REV          REV's parent against REV (what REV changed)
Everywhere:
  fdl diff A B, A..B    A against B
  fdl diff A...B        the last version A and B share against B

Both states are read from the newer catalog when it holds the older one's
snapshot, so a retired older version can still be compared. Versions on two
branches that parted are each read from their own catalog; then only the rows
before and after are known, not the rows inserted and deleted.`,
		Example: `  fdl diff
  fdl diff main~1 main
  fdl diff --stat main...feature
  fdl diff --json v2024 v2025 --repo s3://bucket/lake`,
		Args: args(0, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			do, err := repo.ParseDiffArgs(a)
			if err != nil {
				return err
			}
			return runDiff(cmd.Context(), ios, g, o, do)
		},
	}
	g.addRepoFlag(cmd)
	cmd.Flags().BoolVar(&o.Stat, "stat", false, "one line per table changed, then a summary")
	return cmd
}

func runDiff(ctx context.Context, ios *term.IO, g *globals, o *diffOptions, do repo.DiffOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		do.Local = l
		d, err := r.Diff(ctx, do)
		if err != nil {
			return err
		}
		return printDiffResult(ios, g, o, d)
	})
}

// printDiffResult prints a diff (fdl diff, fdl request diff): JSON, or the
// sides and the changes (one line per table with --stat).
func printDiffResult(ios *term.IO, g *globals, o *diffOptions, d *repo.DiffResult) error {
	if g.JSON {
		return printJSON(ios, d)
	}
	ios.Printf("%s %s .. %s\n", ios.Heading("diff"), sideName(ios, d.From), sideName(ios, d.To))
	if d.Catalogs == repo.TwoCatalogs {
		ios.Printf("%s\n", ios.Dim("two timelines: each side read from its own catalog; rows inserted and deleted are not known"))
	}
	if d.Empty() {
		ios.Printf("No changes\n")
		return nil
	}
	if o.Stat {
		printDiffStat(ios, d.Diff)
		return nil
	}
	printDiff(ios, d.Diff)
	return nil
}

// sideName names one side of a diff for people.
func sideName(ios *term.IO, s repo.DiffSide) string {
	switch {
	case s.Working:
		return fmt.Sprintf("working catalog (snapshot %d)", s.Snapshot)
	case s.Version == "":
		return "nothing (before the first version)"
	}
	local := ""
	if s.Local {
		local = ", not pushed"
	}
	return fmt.Sprintf("%s (seq %d, snapshot %d%s)", ios.ID(s.Short), s.Seq, s.Snapshot, local)
}

func qualified(schema, name string) string {
	return sqlquote.IdentIfNeeded(schema) + "." + sqlquote.IdentIfNeeded(name)
}

// printDiff prints every change, schemas first, then tables and views.
func printDiff(ios *term.IO, d *meta.Diff) {
	for _, s := range d.Schemas {
		if s.Change == meta.Modified {
			ios.Printf("schema renamed: %s -> %s\n", sqlquote.IdentIfNeeded(s.OldName), sqlquote.IdentIfNeeded(s.Name))
			continue
		}
		ios.Printf("schema %s: %s\n", s.Change, sqlquote.IdentIfNeeded(s.Name))
	}
	for _, t := range d.Tables {
		name := qualified(t.Schema, t.Name)
		switch t.Change {
		case meta.Created:
			part := ""
			if t.Partitioning != nil && len(t.Partitioning.After) > 0 {
				part = ", partitioned by " + strings.Join(t.Partitioning.After, ", ")
			}
			ios.Printf("%s %s (%d column(s)%s)\n", ios.OK("table created:"), name, len(t.Columns), part)
		case meta.Dropped:
			ios.Printf("%s %s\n", ios.Bad("table dropped:"), name)
		default:
			line := "table " + name
			if t.OldName != "" || t.OldSchema != "" {
				old := t.OldSchema
				if old == "" {
					old = t.Schema
				}
				oldName := t.OldName
				if oldName == "" {
					oldName = t.Name
				}
				line += " (renamed from " + qualified(old, oldName) + ")"
			}
			ios.Printf("%s\n", line)
			for _, c := range t.Columns {
				ios.Printf("    %s\n", columnLine(c))
			}
			if p := t.Partitioning; p != nil {
				ios.Printf("    partitioning: %s -> %s\n", partitionKeys(p.Before), partitionKeys(p.After))
			}
		}
		ios.Printf("    %s\n", dataLine(t))
		if !t.Rows.Exact && t.Rows.Approximate != "" {
			ios.Printf("    ~ approximate: %s\n", t.Rows.Approximate)
		}
	}
	for _, v := range d.Views {
		name := qualified(v.Schema, v.Name)
		switch {
		case v.Change != meta.Modified:
			ios.Printf("view %s: %s\n", v.Change, name)
		default:
			var what []string
			if v.OldName != "" || v.OldSchema != "" {
				what = append(what, "renamed")
			}
			if v.OldSQL != "" {
				what = append(what, "SQL changed: "+oneLine(v.SQL))
			}
			ios.Printf("view modified: %s (%s)\n", name, strings.Join(what, "; "))
		}
	}
	t := d.Totals
	ios.Printf("%s\n", summaryLine(t))
}

// partitionKeys is a table's partition keys as a diff line shows them:
// "(year(ts), region)", or "none".
func partitionKeys(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return "(" + strings.Join(keys, ", ") + ")"
}

func columnLine(c meta.ColumnChange) string {
	switch c.Change {
	case meta.Added:
		return fmt.Sprintf("column added: %s %s", c.Name, c.Type)
	case meta.Dropped:
		return fmt.Sprintf("column dropped: %s %s", c.Name, c.Type)
	}
	var what []string
	if c.OldName != "" {
		what = append(what, "renamed from "+c.OldName)
	}
	if c.OldType != "" {
		what = append(what, "retyped "+c.OldType+" -> "+c.Type)
	}
	if c.OldNullable != nil {
		if c.Nullable {
			what = append(what, "now nullable")
		} else {
			what = append(what, "now not null")
		}
	}
	return fmt.Sprintf("column %s: %s", c.Name, strings.Join(what, ", "))
}

// dataLine says what happened to a table's rows and files.
func dataLine(t meta.TableChange) string {
	r, f := t.Rows, t.Files
	approx := ""
	if !r.Exact {
		approx = "~"
	}
	rows := fmt.Sprintf("rows %s%d -> %s%d", approx, r.Before, approx, r.After)
	if r.Inserted != nil {
		rows += fmt.Sprintf(" (+%s%d -%s%d)", approx, *r.Inserted, approx, *r.Deleted)
	} else if r.Differ {
		rows += " (not the same rows)"
	}
	files := fmt.Sprintf("data files %d -> %d (+%d -%d), %s -> %s", f.Before, f.After, f.Added, f.Removed, term.Bytes(f.BytesBefore), term.Bytes(f.BytesAfter))
	if f.DeleteFilesAdded+f.DeleteFilesRemoved > 0 {
		files += fmt.Sprintf(", delete files +%d -%d", f.DeleteFilesAdded, f.DeleteFilesRemoved)
	}
	return rows + ", " + files
}

func summaryLine(t meta.DiffTotals) string {
	s := fmt.Sprintf("%d table(s) changed (%d created, %d dropped), %d view(s), %d schema(s)",
		t.TablesCreated+t.TablesDropped+t.TablesModified, t.TablesCreated, t.TablesDropped,
		t.ViewsCreated+t.ViewsDropped+t.ViewsModified, t.SchemasCreated+t.SchemasDropped+t.SchemasRenamed)
	approx := ""
	if !t.Exact {
		approx = "~"
	}
	if t.RowsInserted != nil {
		s += fmt.Sprintf(": +%s%d -%s%d rows", approx, *t.RowsInserted, approx, *t.RowsDeleted)
	} else {
		s += fmt.Sprintf(": rows %s%d -> %s%d", approx, t.RowsBefore, approx, t.RowsAfter)
	}
	return s + fmt.Sprintf(", +%d -%d data files, +%s -%s", t.FilesAdded, t.FilesRemoved, term.Bytes(t.BytesAdded), term.Bytes(t.BytesRemoved))
}

// printDiffStat prints one line per table, as git diff --stat does, then
// the summary.
func printDiffStat(ios *term.IO, d *meta.Diff) {
	width := 0
	for _, t := range d.Tables {
		width = max(width, len(qualified(t.Schema, t.Name)))
	}
	for _, t := range d.Tables {
		r, f := t.Rows, t.Files
		approx := "" // as dataLine and summaryLine mark counts
		if !r.Exact {
			approx = "~"
		}
		rows := fmt.Sprintf("%s%d -> %s%d rows", approx, r.Before, approx, r.After)
		if r.Inserted != nil {
			rows = fmt.Sprintf("+%s%d -%s%d rows", approx, *r.Inserted, approx, *r.Deleted)
		} else if r.Differ {
			rows += " (not the same)"
		}
		mark := ""
		if f.DeleteFilesAdded+f.DeleteFilesRemoved > 0 {
			mark = fmt.Sprintf(", +%d -%d delete files", f.DeleteFilesAdded, f.DeleteFilesRemoved)
		}
		if t.Change != meta.Modified {
			mark += " (" + string(t.Change) + ")"
		}
		ios.Printf(" %-*s | %s, +%d -%d files, +%s -%s%s\n", width, qualified(t.Schema, t.Name), rows, f.Added, f.Removed, term.Bytes(f.BytesAdded), term.Bytes(f.BytesRemoved), mark)
	}
	ios.Printf(" %s\n", summaryLine(d.Totals))
}
