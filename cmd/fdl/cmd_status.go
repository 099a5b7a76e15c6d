package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
)

func newStatusCmd(ios *term.IO, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the working catalog against its base version",
		Args:  args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runStatus(cmd.Context(), ios, g)
		},
	}
}

func runStatus(ctx context.Context, ios *term.IO, g *globals) error {
	w, err := g.workdir()
	if err != nil {
		return err
	}
	st, err := w.Status(ctx)
	if err != nil {
		return err
	}
	if g.JSON {
		return printJSON(ios, st)
	}
	ios.Printf("On branch %s of %s\n", ios.Ref(st.Branch), st.Repository)
	if st.Base == "" {
		ios.Printf("No version yet: the first commit makes seq 1\n")
	} else {
		ios.Printf("Base version %s (seq %d, snapshot %d)\n", ios.ID(string(st.Base)), st.BaseSeq, st.BaseSnapshot)
	}
	if st.Unpushed > 0 {
		ios.Printf("%d local version(s) not pushed yet: fdl push\n", st.Unpushed)
	}
	if !st.Descends {
		ios.Printf("%s %s\n", ios.Bad("problem:"), st.Problem)
		return nil
	}
	if len(st.Snapshots) == 0 {
		ios.Printf("Nothing new since the base\n")
		return nil
	}
	ios.Printf("%d new snapshot(s):\n", len(st.Snapshots))
	for _, s := range st.Snapshots {
		line := "  " + ios.Dim(s.Time.UTC().Format(time.RFC3339)) + "  snapshot " + strconv.FormatInt(s.ID, 10) + "  " + oneLine(s.Changes)
		if s.Message != "" {
			line += "  " + ios.Dim("("+oneLine(s.Message)+")")
		}
		ios.Printf("%s\n", line)
	}
	if len(st.Tables) > 0 {
		ios.Printf("Tables touched: %s\n", strings.Join(st.Tables, ", "))
	}
	if u := st.Undo; u != nil {
		ios.Printf("A %s of version %s (snapshot %d) waits for its commit: fdl commit takes its message\n", u.Kind, ios.ID(string(u.Version)), u.Snapshot)
		return nil
	}
	ios.Printf("Commit them with: fdl commit -m MSG\n")
	return nil
}
