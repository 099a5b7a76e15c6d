package acceptance

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// TestMain prints the measure of the run: how many tables of how many
// versions the real extension counted against dataset.json, and how many
// disagreed.
func TestMain(m *testing.M) {
	code := m.Run()
	if tally.versions > 0 {
		fmt.Printf("acceptance: DuckDB 1.5.5 read %d version(s): %d table count(s) compared with dataset.json, %d mismatch(es); %d time-travel state(s) compared with the writer's\n",
			tally.versions, tally.tables, tally.mismatches, tally.travels)
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// tally is the measure of the run (see TestMain).
var tally struct {
	sync.Mutex
	versions, tables, mismatches, travels int
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// fdlBinary builds cmd/fdl once per test process and returns the folder
// holding the binary (named fdl). FDL_ACCEPTANCE_BIN, when set, names a
// binary built already.
func fdlBinary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("FDL_ACCEPTANCE_BIN"); b != "" {
		return filepath.Dir(b)
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "fdl-acceptance-")
		if buildErr != nil {
			return
		}
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		cmd := exec.Command(gobin, "build", "-o", filepath.Join(binDir, "fdl"), "./cmd/fdl")
		cmd.Dir = realduck.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/fdl: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// duckEnv is the real DuckDB every script uses.
func realDuck(t testing.TB) *realduck.DuckDB {
	return realduck.Find(t, realduck.V15, "ducklake", "sqlite", "httpfs", "aws")
}

// s3Base returns the S3 server's URL (a bucket made if missing), or "" when
// there is none outside CI (the [s3] scripts then skip; under CI
// cloudtest fails the test instead).
func s3Base(t *testing.T) string {
	if os.Getenv(cloudtest.EnvS3) == "" && os.Getenv("CI") == "" {
		return ""
	}
	return cloudtest.S3(t)
}

// sharedCatalogs returns the folder of real DuckLake catalogs beside the
// clone (../shared/testdata/catalogs), or "" without it outside CI (the
// [shared] scripts then skip; testutil.CatalogsDir fails under CI).
func sharedCatalogs(t *testing.T) string {
	p := filepath.Join(filepath.Dir(realduck.Root()), "shared", "testdata", "catalogs")
	if _, err := os.Stat(p); err != nil && os.Getenv("CI") == "" {
		return ""
	}
	return testutil.CatalogsDir(t)
}

// TestScripts runs testdata/script/*.txtar: each script is a user's session
// with fdl and the real DuckDB (see scriptCmds for the commands it adds).
func TestScripts(t *testing.T) {
	d := realDuck(t)
	d151 := realduck.Find(t, realduck.V151, "ducklake", "sqlite")
	bin := fdlBinary(t)
	s3 := s3Base(t)
	helper, err := filepath.Abs("testdata/duckrun.py")
	if err != nil {
		t.Fatal(err)
	}
	shared := sharedCatalogs(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			e.Setenv("FDL_AUTHOR", "tester")
			e.Setenv("NO_COLOR", "1")
			e.Setenv("HOME", e.WorkDir)
			e.Setenv("DUCK_PYTHON", d.Python)
			e.Setenv("DUCK151_PYTHON", d151.Python)
			e.Setenv("DUCKRUN", helper)
			e.Setenv("SHARED", shared)
			for _, kv := range os.Environ() {
				k, v, _ := strings.Cut(kv, "=")
				if strings.HasPrefix(k, "AWS_") {
					e.Setenv(k, v)
				}
			}
			e.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			if s3 != "" {
				name := strings.TrimSuffix(filepath.Base(e.WorkDir), filepath.Ext(e.WorkDir))
				e.Setenv("S3", cloudtest.WithPrefix(s3, name))
			}
			e.Values[ledgerKey{}] = &ledger{obs: map[snapKey]observation{}}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "s3":
				return s3 != "", nil
			case "shared":
				return shared != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: scriptCmds(),
	})
}

// snapKey identifies a snapshot across timelines: its id and its
// snapshot_time in microseconds (two timelines never share both).
type snapKey struct {
	id, us int64
}

// observation is what the writer saw at one snapshot: per table and view
// ("schema.name") its row count and the sum of hash(row) as a decimal
// string.
type observation struct {
	Snapshot int64                     `json:"snapshot"`
	Time     int64                     `json:"time"`
	Tables   map[string][2]json.Number `json:"tables"`
	Views    map[string][2]json.Number `json:"views"`
}

type ledgerKey struct{}

// ledger holds a script's observations.
type ledger struct {
	mu  sync.Mutex
	obs map[snapKey]observation
}

func ledgerOf(ts *testscript.TestScript) *ledger { return ts.Value(ledgerKey{}).(*ledger) }

// expandVars replaces ${NAME} (only the braced form: SQL has its own $) with
// the script's variables.
func expandVars(ts *testscript.TestScript, s string) string {
	return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).ReplaceAllStringFunc(s, func(m string) string {
		return ts.Getenv(m[2 : len(m)-1])
	})
}

// runDuck runs the helper on sql (one python process), with extra flags;
// its stdout and stderr become the script's. It returns the JSON it wrote
// to its --out file, if any.
func runDuck(ts *testscript.TestScript, sql string, flags ...string) (string, error) {
	return runDuckWith(ts, ts.Getenv("DUCK_PYTHON"), sql, flags...)
}

// runDuckWith is runDuck with the python of another DuckDB release.
func runDuckWith(ts *testscript.TestScript, python, sql string, flags ...string) (string, error) {
	dir, err := os.MkdirTemp(ts.Getenv("WORK"), "duck-")
	ts.Check(err)
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in.sql")
	out := filepath.Join(dir, "out.json")
	ts.Check(os.WriteFile(in, []byte(sql), 0o644))
	args := append([]string{ts.Getenv("DUCKRUN"), "--out", out}, flags...)
	args = append(args, in)
	err = ts.Exec(python, args...)
	b, _ := os.ReadFile(out)
	return string(b), err
}

// attachLine returns the one line of text holding an ATTACH statement,
// exactly as printed (surrounding blanks trimmed).
func attachLine(ts *testscript.TestScript, text string) string {
	var found []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "ATTACH OR REPLACE '") {
			found = append(found, strings.TrimSpace(l))
		}
	}
	if len(found) != 1 {
		ts.Fatalf("want one ATTACH line in the output, found %d:\n%s", len(found), text)
	}
	return found[0]
}

var metaRE = regexp.MustCompile(`METADATA_CATALOG '([^']+)'`)

var aliasRE = regexp.MustCompile(`ATTACH OR REPLACE '(?:[^']|'')*' AS ("(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_]*)`)

// aliasOf returns the database name an ATTACH line gives.
func aliasOf(ts *testscript.TestScript, line string) string {
	m := aliasRE.FindStringSubmatch(line)
	if m == nil {
		ts.Fatalf("no ATTACH … AS alias in %q", line)
	}
	a := m[1]
	if strings.HasPrefix(a, `"`) {
		a = strings.ReplaceAll(a[1:len(a)-1], `""`, `"`)
	}
	return a
}

// scriptCmds are the commands the acceptance scripts add to testscript's
// own, each described at its entry.
//
// It is one piece: one map literal, the scripts' table of commands, read as
// a list; each entry is short and stands alone.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// duck [-release 1.5.1] [-observe ALIAS] FILE: run the SQL in FILE
		// (after ${VAR} expansion) with the real DuckDB (1.5.5, or 1.5.1,
		// the last release reading DuckLake 0.4), in one process; its
		// output is the command's. With -observe, record what the DuckLake
		// database ALIAS holds now as the writer's view of its current
		// snapshot; a snapshot observed twice must read the same.
		"duck": func(ts *testscript.TestScript, neg bool, args []string) {
			var alias string
			python := ts.Getenv("DUCK_PYTHON")
			for len(args) > 1 && strings.HasPrefix(args[0], "-") {
				switch {
				case args[0] == "-observe":
					alias, args = args[1], args[2:]
				case args[0] == "-release" && args[1] == "1.5.1":
					python, args = ts.Getenv("DUCK151_PYTHON"), args[2:]
				default:
					ts.Fatalf("duck: unknown flag %s %s", args[0], args[1])
				}
			}
			if len(args) != 1 {
				ts.Fatalf("usage: duck [-release 1.5.1] [-observe ALIAS] FILE")
			}
			sql := expandVars(ts, ts.ReadFile(args[0]))
			var flags []string
			if alias != "" {
				flags = []string{"--observe", alias}
			}
			out, err := runDuckWith(ts, python, sql, flags...)
			if (err != nil) != neg {
				ts.Fatalf("duck %s: %v (want failure: %v)", args[0], err, neg)
			}
			if err == nil && alias != "" {
				var o observation
				dec := json.NewDecoder(strings.NewReader(out))
				dec.UseNumber()
				ts.Check(dec.Decode(&o))
				l := ledgerOf(ts)
				k := snapKey{o.Snapshot, o.Time}
				l.mu.Lock()
				prev, dup := l.obs[k]
				l.obs[k] = o
				l.mu.Unlock()
				if dup {
					var problems []string
					compareState(func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) },
						fmt.Sprintf("snapshot %d observed again through %s", o.Snapshot, alias), prev, o.Tables, o.Views)
					if len(problems) > 0 {
						ts.Fatalf("the same snapshot reads differently:\n  %s", strings.Join(problems, "\n  "))
					}
				}
				ts.Logf("observed snapshot %d: %d table(s), %d view(s)", o.Snapshot, len(o.Tables), len(o.Views))
			}
		},
		// stdoutvar VAR: set $VAR to the last command's stdout, trimmed.
		"stdoutvar": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 1 {
				ts.Fatalf("usage: stdoutvar VAR")
			}
			ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
		},
		// attachline VAR: set $VAR to the one ATTACH line of the last
		// command's stdout, exactly as printed.
		"attachline": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 1 {
				ts.Fatalf("usage: attachline VAR")
			}
			line := attachLine(ts, ts.ReadFile("stdout"))
			ts.Setenv(args[0], line)
			// VAR_META: the database of the catalog's tables the line names
			// (METADATA_CATALOG), for SQL that reads them directly.
			if m := metaRE.FindStringSubmatch(line); m != nil {
				ts.Setenv(args[0]+"_META", m[1])
			}
		},
		// checkversion [-unobserved] REPO REV: read version REV through the
		// line `fdl show` prints and compare it with its record, its
		// dataset.json and the writer's observations (see checkVersion).
		"checkversion": func(ts *testscript.TestScript, neg bool, args []string) {
			unobserved := false
			python := ts.Getenv("DUCK_PYTHON")
			for len(args) > 0 && strings.HasPrefix(args[0], "-") {
				switch {
				case args[0] == "-unobserved":
					unobserved, args = true, args[1:]
				case args[0] == "-release" && len(args) > 1 && args[1] == "1.5.1":
					python, args = ts.Getenv("DUCK151_PYTHON"), args[2:]
				default:
					ts.Fatalf("checkversion: unknown flag %s", args[0])
				}
			}
			if len(args) != 2 || neg {
				ts.Fatalf("usage: checkversion [-unobserved] [-release 1.5.1] REPO REV")
			}
			checkVersion(ts, python, args[0], args[1], unobserved)
		},
		// catalog NAME DST: gunzip the real catalog NAME of
		// ../shared/testdata/catalogs to DST (scripts that use it start
		// with [!shared] skip).
		"catalog": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: catalog NAME DST")
			}
			ts.Check(testutil.GunzipFile(filepath.Join(ts.Getenv("SHARED"), args[0]+".gz"), ts.MkAbs(args[1])))
		},
		// httpserve DIR VAR: serve DIR over HTTP on 127.0.0.1 (a static
		// file server with ranges, as a web server or a bucket's public
		// address is) until the script ends; $VAR is its URL.
		"httpserve": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: httpserve DIR VAR")
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			ts.Check(err)
			srv := &http.Server{Handler: http.FileServer(http.Dir(ts.MkAbs(args[0]))), ReadHeaderTimeout: 10 * time.Second}
			go srv.Serve(ln)
			ts.Defer(func() { srv.Close() })
			ts.Setenv(args[1], "http://"+ln.Addr().String())
		},
	}
}

// showJSON is the part of `fdl show --json` the checks read.
type showJSON struct {
	Record struct {
		ID       string `json:"id"`
		DuckLake struct {
			Format       string    `json:"format"`
			Snapshot     int64     `json:"snapshot"`
			SnapshotTime time.Time `json:"snapshot_time"`
		} `json:"ducklake"`
	} `json:"record"`
	Dataset struct {
		Snapshot int64 `json:"snapshot"`
		Schemas  []struct {
			Name   string `json:"name"`
			Tables []struct {
				Name     string `json:"name"`
				RowCount int64  `json:"row_count"`
			} `json:"tables"`
			Views []struct {
				Name string `json:"name"`
			} `json:"views"`
		} `json:"schemas"`
	} `json:"dataset"`
	Attach string `json:"attach"`
}

// inspection is what duckrun --inspect reports.
type inspection struct {
	Snapshots [][2]int64 `json:"snapshots"`
	Head      struct {
		Snapshot      int64                     `json:"snapshot"`
		Tables        map[string][2]json.Number `json:"tables"`
		Views         map[string][2]json.Number `json:"views"`
		CatalogTables []string                  `json:"catalog_tables"`
		CatalogViews  []string                  `json:"catalog_views"`
	} `json:"head"`
	At map[string]struct {
		Tables map[string][2]json.Number `json:"tables"`
		Views  map[string][2]json.Number `json:"views"`
	} `json:"at"`
}

// checkVersion reads version rev of the repository at repoURL through the
// ATTACH line `fdl show` prints (executed exactly as printed) and checks:
// the version's snapshot and its time are its record's; the tables and
// views the extension lists are dataset.json's and the catalog's; every
// table's count(*) equals dataset.json's row_count; the head state
// (counts and row checksums of tables and views) is what the writer
// observed at that snapshot; and, read with AT (VERSION => n), every
// earlier snapshot the version holds and the writer observed gives what
// the writer saw then. Unless unobserved, the writer must have observed
// the version's snapshot.
//
// It is one piece: the version's state is read in one run of the real
// DuckDB (--inspect) and compared field by field with what the writers
// observed; the comparisons share what that run returned.
func checkVersion(ts *testscript.TestScript, python, repoURL, rev string, unobserved bool) {
	ts.Check(ts.Exec("fdl", "show", rev, "--repo", repoURL))
	line := attachLine(ts, ts.ReadFile("stdout"))
	ts.Check(ts.Exec("fdl", "show", rev, "--repo", repoURL, "--json"))
	var sj showJSON
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &sj))
	if sj.Attach != line {
		ts.Fatalf("fdl show prints\n  %s\nbut --json says attach is\n  %s", line, sj.Attach)
	}
	alias := aliasOf(ts, line)
	l := ledgerOf(ts)
	l.mu.Lock()
	ids := map[int64]bool{}
	for k := range l.obs {
		if k.id <= sj.Record.DuckLake.Snapshot {
			ids[k.id] = true
		}
	}
	l.mu.Unlock()
	var want []string
	for id := range ids {
		want = append(want, strconv.FormatInt(id, 10))
	}
	sort.Strings(want)
	out, err := runDuckWith(ts, python, line+"\n", "--inspect", alias, "--snapshots", strings.Join(want, ","))
	if err != nil {
		ts.Fatalf("reading version %s through the printed line: %v\n%s", rev, err, ts.ReadFile("stderr"))
	}
	var in inspection
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	ts.Check(dec.Decode(&in))

	var problems []string
	bad := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	rec := sj.Record.DuckLake
	if in.Head.Snapshot != rec.Snapshot {
		bad("DuckDB reads snapshot %d, the record says %d", in.Head.Snapshot, rec.Snapshot)
	}
	times := map[int64]int64{}
	for _, s := range in.Snapshots {
		times[s[0]] = s[1]
	}
	if us, ok := times[rec.Snapshot]; !ok || us != rec.SnapshotTime.UnixMicro() {
		bad("snapshot %d's time is %d µs in the catalog, the record says %s", rec.Snapshot, us, rec.SnapshotTime.Format(time.RFC3339Nano))
	}
	// The object lists: the extension's, the catalog rows', dataset.json's.
	dsTables, dsViews := map[string]int64{}, []string{}
	for _, s := range sj.Dataset.Schemas {
		for _, t := range s.Tables {
			dsTables[s.Name+"."+t.Name] = t.RowCount
		}
		for _, v := range s.Views {
			dsViews = append(dsViews, s.Name+"."+v.Name)
		}
	}
	extTables := keys(in.Head.Tables)
	if a, b := strings.Join(extTables, " "), strings.Join(keys(dsTables), " "); a != b {
		bad("tables: DuckDB lists [%s], dataset.json [%s]", a, b)
	}
	if a, b := strings.Join(extTables, " "), strings.Join(in.Head.CatalogTables, " "); a != b {
		bad("tables: DuckDB lists [%s], the catalog's rows [%s]", a, b)
	}
	sort.Strings(dsViews)
	if a, b := strings.Join(keys(in.Head.Views), " "), strings.Join(dsViews, " "); a != b {
		bad("views: DuckDB lists [%s], dataset.json [%s]", a, b)
	}
	mismatches := 0
	for name, m := range in.Head.Tables {
		n, _ := m[0].Int64()
		if ds, ok := dsTables[name]; ok && ds != n {
			mismatches++
			bad("table %s: DuckDB counts %d rows, dataset.json says %d", name, n, ds)
		}
	}
	l.mu.Lock()
	o, seen := l.obs[snapKey{rec.Snapshot, times[rec.Snapshot]}]
	l.mu.Unlock()
	switch {
	case seen:
		compareState(bad, fmt.Sprintf("head (snapshot %d)", rec.Snapshot), o, in.Head.Tables, in.Head.Views)
	case !unobserved:
		bad("the writer never observed snapshot %d, where the version ends (add duck -observe after the last write)", rec.Snapshot)
	}
	travels := 0
	for _, s := range in.Snapshots {
		l.mu.Lock()
		o, ok := l.obs[snapKey{s[0], s[1]}]
		l.mu.Unlock()
		if !ok {
			continue
		}
		at, ok := in.At[strconv.FormatInt(s[0], 10)]
		if !ok {
			bad("snapshot %d: not read with AT (VERSION => %d)", s[0], s[0])
			continue
		}
		compareState(bad, fmt.Sprintf("AT (VERSION => %d)", s[0]), o, at.Tables, at.Views)
		travels++
	}
	tally.Lock()
	tally.versions++
	tally.tables += len(in.Head.Tables)
	tally.mismatches += mismatches
	tally.travels += travels
	tally.Unlock()
	ts.Logf("version %s (%s): snapshot %d, %d table(s), %d view(s), %d snapshot(s) compared with the writer's", rev, sj.Record.ID, rec.Snapshot, len(in.Head.Tables), len(in.Head.Views), travels)
	if len(problems) > 0 {
		ts.Fatalf("version %s (%s) read through\n  %s\ndisagrees:\n  %s", rev, sj.Record.ID, line, strings.Join(problems, "\n  "))
	}
}

// compareState reports where a read state differs from an observation.
func compareState(bad func(string, ...any), where string, o observation, tables, views map[string][2]json.Number) {
	cmp := func(kind string, want, got map[string][2]json.Number) {
		if a, b := strings.Join(keys(want), " "), strings.Join(keys(got), " "); a != b {
			bad("%s: %s: the writer saw [%s], DuckDB reads [%s]", where, kind, a, b)
			return
		}
		for k, w := range want {
			if g := got[k]; g != w {
				bad("%s: %s %s: the writer saw %s rows (hash sum %s), DuckDB reads %s (hash sum %s)", where, kind, k, w[0], w[1], g[0], g[1])
			}
		}
	}
	cmp("tables", o.Tables, tables)
	cmp("views", o.Views, views)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
