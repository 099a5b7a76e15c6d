package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layers of the code, kept true by TestDepLayers: each rule names the
// packages it holds for (roots), what none of them may link, directly or
// through another package, and why.

const module = "github.com/fdl-dev/fdl"

// depInfo is one package as 'go list -deps' reports it.
type depInfo struct {
	std     bool     // in the standard library
	cgo     bool     // has cgo files
	imports []string // import paths, as go list resolves them
}

// cloudSDKs are the module path prefixes of the object-store SDKs and what
// only they bring in (gocloud.dev and its gRPC).
var cloudSDKs = []string{
	"gocloud.dev", "github.com/aws/", "github.com/Azure/", "github.com/AzureAD/",
	"cloud.google.com/", "google.golang.org/api", "google.golang.org/grpc",
	"google.golang.org/genproto", "github.com/googleapis/",
}

// databases are the database drivers (all of them cgo).
var databases = []string{"github.com/duckdb/", "github.com/mattn/go-sqlite3", "modernc.org/sqlite"}

// backends are the store kinds; only the command (cmd/fdl/stores.go) and
// tests choose them.
var backends = []string{"folder", "memory", "cloud", "s3", "gcs", "azure", "httpstore"}

// cli are the packages only the command may use (STYLE.md §3).
var cli = []string{"github.com/spf13/cobra", "charm.land/lipgloss", module + "/cmd/", module + "/internal/term"}

func hasPrefix(path string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(path, p) })
}

func isBackend(path string) bool {
	return slices.ContainsFunc(backends, func(b string) bool { return path == module+"/internal/store/"+b })
}

// library reports whether path is a library package of the module: not a
// command (cmd/, internal/cmd/, scripts/) and not the command's terminal
// output (internal/term).
func library(path string) bool {
	rel, ok := strings.CutPrefix(path, module+"/")
	return ok && !strings.HasPrefix(rel, "cmd/") && !strings.HasPrefix(rel, "internal/cmd/") &&
		!strings.HasPrefix(rel, "scripts/") && rel != "internal/term"
}

var layerRules = []struct {
	name  string
	roots func(path string) bool
	bad   func(path string, p depInfo) bool
	why   string
}{
	{
		name: "the store interface and its conformance suite stand alone",
		roots: func(path string) bool {
			return path == module+"/internal/store" || path == module+"/internal/store/storetest"
		},
		bad: func(path string, p depInfo) bool {
			return !p.std && path != module+"/internal/store" && path != module+"/internal/store/storetest"
		},
		why: "internal/store and internal/store/storetest link only the standard library; a backend's SDK belongs in its own package (internal/store/s3, …)",
	},
	{
		name:  "refs links no cloud SDK, no database and no store backend",
		roots: func(path string) bool { return path == module+"/refs" },
		bad: func(path string, p depInfo) bool {
			return hasPrefix(path, cloudSDKs) || hasPrefix(path, databases) || isBackend(path)
		},
		why: "refs works on any store.Store through the interface",
	},
	{
		name:  "version links no database and no cgo",
		roots: func(path string) bool { return path == module+"/version" },
		bad: func(path string, p depInfo) bool {
			return hasPrefix(path, databases) || hasPrefix(path, cloudSDKs) || !p.std && p.cgo ||
				strings.HasPrefix(path, module+"/internal/ducklake") && path != module+"/internal/ducklake/meta"
		},
		why: "records and datasets are plain values: what they keep of a catalog comes from internal/ducklake/meta",
	},
	{
		name:  "retention links no database and no cgo",
		roots: func(path string) bool { return path == module+"/retention" },
		bad: func(path string, p depInfo) bool {
			return hasPrefix(path, databases) || hasPrefix(path, cloudSDKs) || !p.std && p.cgo ||
				strings.HasPrefix(path, module+"/internal/ducklake") && path != module+"/internal/ducklake/meta"
		},
		why: "retention decides with no I/O: the data files it decides on are meta.DataFile values",
	},
	{
		name: "the reader's and the signer's libraries link no database, cloud SDK or store backend",
		roots: func(path string) bool {
			return slices.Contains([]string{"signature", "lockfile", "cache"}, strings.TrimPrefix(path, module+"/"))
		},
		bad: func(path string, p depInfo) bool {
			return hasPrefix(path, databases) || hasPrefix(path, cloudSDKs) || isBackend(path)
		},
		why: "signatures, the lockfile and the catalog cache are plain files and bytes; what reads a repository passes them in",
	},
	{
		name: "the library chooses no store backend",
		roots: func(path string) bool {
			return slices.Contains([]string{"repo", "gc", "refs", "version", "retention", "mirror"}, strings.TrimPrefix(path, module+"/"))
		},
		bad: func(path string, p depInfo) bool { return isBackend(path) },
		why: "store.Open reaches the backends the command registered (cmd/fdl/stores.go); a library reads optional features through interfaces such as store.LocalFiles",
	},
	{
		name:  "the library never imports the CLI",
		roots: library,
		bad:   func(path string, p depInfo) bool { return hasPrefix(path, cli) },
		why:   "cobra, lipgloss, cmd/ and internal/term are the command's (STYLE.md §3)",
	},
}

// TestDepLayers checks every rule of layerRules against 'go list -deps'
// of the whole module. A failure names the rule, the offending import and
// the chain of imports that reaches it.
func TestDepLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{.ImportPath}}	{{.Standard}}	{{len .CgoFiles}}	{{join .Imports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := map[string]depInfo{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Fatalf("go list printed %q, want 4 tab-separated fields", line)
		}
		pkgs[f[0]] = depInfo{std: f[1] == "true", cgo: f[2] != "0", imports: strings.Fields(f[3])}
	}
	for _, r := range layerRules {
		var roots []string
		for path := range pkgs {
			if r.roots(path) {
				roots = append(roots, path)
			}
		}
		if len(roots) == 0 {
			t.Errorf("%s: no package of the module matches the rule (renamed?)", r.name)
			continue
		}
		slices.Sort(roots)
		for _, root := range roots {
			for _, chain := range offending(pkgs, root, r.bad) {
				t.Errorf("%s, but %s links %s: %s\n\t(%s)", r.name, short(root), chain[len(chain)-1], joinChain(chain), r.why)
			}
		}
	}
}

// offending walks the imports of root breadth-first and returns, for each
// package bad says no to, the shortest chain of imports from root to it.
// It does not walk on through a bad package, so an SDK is reported once,
// where it enters, not with everything it brings.
func offending(pkgs map[string]depInfo, root string, bad func(string, depInfo) bool) [][]string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	var found [][]string
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if path != root && bad(path, pkgs[path]) {
			chain := []string{path}
			for p := parent[path]; p != ""; p = parent[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			found = append(found, chain)
			continue
		}
		for _, imp := range pkgs[path].imports {
			if _, seen := parent[imp]; !seen {
				parent[imp] = path
				queue = append(queue, imp)
			}
		}
	}
	return found
}

func short(path string) string { return strings.TrimPrefix(path, module+"/") }

func joinChain(chain []string) string {
	parts := make([]string, len(chain))
	for i, p := range chain {
		parts[i] = short(p)
	}
	return strings.Join(parts, " → ")
}

// TestDepLayersCatch: the rules would catch what they are for. A made-up
// graph where refs reaches an SDK through the store package, and version
// reaches DuckDB through internal/ducklake, gives one chain each, ending
// where the bad import enters.
func TestDepLayersCatch(t *testing.T) {
	pkgs := map[string]depInfo{
		module + "/refs":                     {imports: []string{module + "/internal/store", "fmt"}},
		module + "/internal/store":           {imports: []string{"gocloud.dev/blob", "fmt"}},
		"gocloud.dev/blob":                   {imports: []string{"github.com/aws/smithy-go"}},
		"github.com/aws/smithy-go":           {},
		"fmt":                                {std: true},
		module + "/version":                  {imports: []string{module + "/internal/ducklake"}},
		module + "/internal/ducklake":        {imports: []string{"github.com/duckdb/duckdb-go/v2"}},
		"github.com/duckdb/duckdb-go/v2":     {cgo: true},
		module + "/internal/ducklake/meta":   {},
		module + "/internal/store/storetest": {imports: []string{module + "/internal/store", "testing"}},
		"testing":                            {std: true},
	}
	want := map[string]string{
		"refs links no cloud SDK, no database and no store backend": "refs → internal/store → gocloud.dev/blob",
		"version links no database and no cgo":                      "version → internal/ducklake",
		"the store interface and its conformance suite stand alone": "internal/store → gocloud.dev/blob",
	}
	for _, r := range layerRules {
		w, ok := want[r.name]
		if !ok {
			continue
		}
		var got []string
		for path := range pkgs {
			if r.roots(path) {
				for _, c := range offending(pkgs, path, r.bad) {
					got = append(got, joinChain(c))
				}
			}
		}
		if !slices.Contains(got, w) {
			t.Errorf("%s: found %q, want %q among them", r.name, got, w)
		}
	}
}
