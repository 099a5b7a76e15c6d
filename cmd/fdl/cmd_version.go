package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/term"
)

// VersionInfo is what 'fdl version --json' prints: fdl's module version and
// build, and the DuckDB release it embeds.
type VersionInfo struct {
	// Version is the module version ("v0.4.0"; "(devel)" for a build from
	// a source tree).
	Version     string `json:"fdl_version"`
	VCSRevision string `json:"vcs_revision,omitempty"` // the commit built, when known
	VCSTime     string `json:"vcs_time,omitempty"`
	VCSModified bool   `json:"vcs_modified"` // the tree had changes not committed
	GoVersion   string `json:"go_version"`
	Platform    string `json:"platform"` // GOOS/GOARCH
	// DuckDB is the embedded DuckDB library's release ("v1.5.6") and
	// DuckDBSourceID its commit; DuckDBGo the Go binding's module version.
	DuckDB         string   `json:"duckdb_version"`
	DuckDBSourceID string   `json:"duckdb_source_id"`
	DuckDBGo       string   `json:"duckdb_go_version,omitempty"`
	Formats        []string `json:"ducklake_formats"` // DuckLake formats fdl reads
}

// versionInfo reads the build information (debug.ReadBuildInfo) and asks
// the embedded DuckDB its release.
func versionInfo(ctx context.Context) (VersionInfo, error) {
	v := VersionInfo{Version: "(unknown)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Formats: ducklake.SupportedFormats()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.VCSRevision = s.Value
			case "vcs.time":
				v.VCSTime = s.Value
			case "vcs.modified":
				v.VCSModified = s.Value == "true"
			}
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/duckdb/duckdb-go/v2" {
				v.DuckDBGo = d.Version
				if d.Replace != nil {
					v.DuckDBGo = d.Replace.Version
				}
			}
		}
	}
	var err error
	v.DuckDB, v.DuckDBSourceID, err = ducklake.DuckDBRelease(ctx)
	return v, err
}

// String is the text of 'fdl --version'.
func (v VersionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fdl %s", v.Version)
	var build []string
	if v.VCSRevision != "" {
		rev := v.VCSRevision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		build = append(build, "commit "+rev)
	}
	if v.VCSTime != "" {
		build = append(build, v.VCSTime)
	}
	if v.VCSModified {
		build = append(build, "modified")
	}
	build = append(build, v.GoVersion, v.Platform)
	fmt.Fprintf(&b, " (%s)\n", strings.Join(build, ", "))
	fmt.Fprintf(&b, "DuckDB %s (source %s", v.DuckDB, v.DuckDBSourceID)
	if v.DuckDBGo != "" {
		fmt.Fprintf(&b, ", duckdb-go %s", v.DuckDBGo)
	}
	fmt.Fprintf(&b, ")\nDuckLake formats read: %s\n", strings.Join(v.Formats, ", "))
	return b.String()
}

func newVersionCmd(ios *term.IO, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print fdl's version and the DuckDB release it embeds",
		Long: `Print fdl's module version (with the commit it was built from, when the
build recorded it), the Go release, the DuckDB library it embeds and the
DuckLake formats it reads. 'fdl --version' prints the same.`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, a []string) error {
			v, err := versionInfo(cmd.Context())
			if err != nil {
				return err
			}
			if g.JSON {
				return printJSON(ios, v)
			}
			ios.Printf("%s", v)
			return nil
		},
	}
}
