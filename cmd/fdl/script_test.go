package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/sqlquote"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

var update = flag.Bool("update", false, "update testscript golden files")

// TestMain installs the test binary as the commands "fdl" and "holdlock" so
// scripts (and Go tests here) run them as separate processes.
func TestMain(m *testing.M) {
	registerStores() // for the store.Open calls of the tests themselves
	widenParallel()
	testscript.Main(m, map[string]func(){
		"fdl":       fdlTestMain,
		"holdlock":  holdLockMain,
		"holdflock": holdFlockMain,
	})
}

// parallelPerCore is how many of this package's parallel tests run at once
// per core when go test is not told otherwise (-parallel; go test's default
// is one per core). Most of a test's time here is spent in the fdl and
// DuckDB processes it starts and in their waits (another process's lock, a
// killed process, a store's retries), so at one per core the package kept
// 1.45 of 2 cores busy when it ran alone.
const parallelPerCore = 2

// widenParallel sets -test.parallel to parallelPerCore per core before the
// flags are parsed: a -parallel given to go test still wins.
func widenParallel() {
	if f := flag.Lookup("test.parallel"); f != nil {
		_ = f.Value.Set(strconv.Itoa(parallelPerCore * runtime.GOMAXPROCS(0)))
	}
}

// fdlTestMain is fdl's main with one test-only addition: FDL_TEST_KILL_AT
// names a commit, push or gc step at which the process kills itself with
// SIGKILL (a real crash, for the crash tests); "STEP#N" kills at the N-th
// time the step is reached (gc repeats its steps for each object).
// FDL_TEST_INTERRUPT_AT names a step at which it sends itself SIGINT
// (Ctrl-C) once and goes on.
func fdlTestMain() {
	if path := os.Getenv("FDL_TEST_PANICS"); path != "" {
		defer func() {
			if p := recover(); p != nil {
				if f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprintf(f, "fdl %s: panic: %v\n%s\n", strings.Join(os.Args[1:], " "), p, debug.Stack())
					f.Close()
				}
				panic(p)
			}
		}()
	}
	if at := os.Getenv("FDL_TEST_KILL_AT"); at != "" {
		name, nth := at, 1
		if i := strings.LastIndexByte(at, '#'); i >= 0 {
			name = at[:i]
			fmt.Sscan(at[i+1:], &nth)
		}
		seen := 0
		stepHook = func(step string) {
			if step == name {
				if seen++; seen == nth {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					time.Sleep(time.Minute)
				}
			}
		}
	}
	if at := os.Getenv("FDL_TEST_EXEC_AT"); at != "" {
		// Run the shell command FDL_TEST_EXEC once at that step, as
		// another process would change files while the command runs.
		ran := false
		stepHook = func(step string) {
			if step == at && !ran {
				ran = true
				if out, err := exec.Command("sh", "-c", os.Getenv("FDL_TEST_EXEC")).CombinedOutput(); err != nil {
					fmt.Fprintf(os.Stderr, "FDL_TEST_EXEC: %v\n%s", err, out)
				}
			}
		}
	}
	if at := os.Getenv("FDL_TEST_INTERRUPT_AT"); at != "" {
		// Ctrl-C at that step: the process sends itself SIGINT and goes
		// on, as it would when a person pressed it then.
		interrupted := false
		stepHook = func(step string) {
			if step == at && !interrupted {
				interrupted = true
				syscall.Kill(os.Getpid(), syscall.SIGINT)
				time.Sleep(50 * time.Millisecond) // the signal's delivery, before the next step
			}
		}
	}
	os.Exit(Main())
}

// TestScripts runs the command scripts on a folder repository ($REPO is
// "repo" in the script's work directory).
func TestScripts(t *testing.T) { runScripts(t, "", nil) }

// TestScriptsS3 runs the same scripts on a repository on the S3 server
// (versitygw) that .ci/run starts; skipped without it outside CI.
func TestScriptsS3(t *testing.T) { runScripts(t, cloudtest.S3(t), nil) }

// TestScriptsAzure runs the scripts whose behaviour depends on the store
// (storeScripts; all of them with FDL_ALL_STORES=1) on Azurite.
func TestScriptsAzure(t *testing.T) { runScripts(t, cloudtest.Azure(t), cloudScripts()) }

// TestScriptsGCS runs the scripts whose behaviour depends on the store
// (storeScripts; all of them with FDL_ALL_STORES=1) on an in-process
// fake-gcs-server.
func TestScriptsGCS(t *testing.T) { runScripts(t, cloudtest.FakeGCS(t), cloudScripts()) }

// cloudScripts is the set of scripts the GCS and Azure runs take: nil (all)
// with FDL_ALL_STORES=1, else storeScripts.
func cloudScripts() map[string]string {
	if allStores() {
		return nil
	}
	return storeScripts
}

// runScripts runs testdata/script with $REPO set to a fresh repository
// location for each script ($REPO2 to a second one): "repo" (a folder in
// $WORK) when base is "", else a fresh prefix of the object-store URL base;
// on an object store only the scripts that use $REPO run, and of those
// only the ones only names when it is not nil. The condition [cloud]
// holds for object stores, [s3] for the S3 server. $DATA is where Parquet files written by the
// scripts land: the repository's data/ folder on a folder store; on an
// object store a local folder, because DuckDB here cannot write to s3:// or
// az:// (its httpfs and azure extensions are not built in and cannot be
// downloaded), so scripts point new catalogs there with setdatapath.
func runScripts(t *testing.T, base string, only map[string]string) {
	shared := testutil.CatalogsDir(t)
	// The scripts' pipelines write with the real DuckDB (duckCmd).
	duck := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	dir := "testdata/script"
	if base != "" {
		dir = scriptsUsingRepo(t, dir, only)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		UpdateScripts:       *update && base == "",
		RequireExplicitExec: false,
		Setup: func(e *testscript.Env) error {
			e.Setenv("SHARED", shared)
			e.Setenv("DUCK_PYTHON", duck.Python)
			e.Setenv("DUCK_RUNNER", duck.Runner)
			e.Setenv("FDL_AUTHOR", "tester")
			// The scripts written before SQLite working catalogs test the
			// DuckDB-format one; sqlite.txtar sets its own.
			e.Setenv("FDL_CATALOG_FORMAT", "duckdb")
			e.Setenv("NO_COLOR", "1")
			e.Setenv("CTRL", "bad\x01name")
			// The clouds' SDKs read their settings and credentials from
			// the environment; testscript starts scripts with a clean one.
			for _, kv := range os.Environ() {
				k, v, _ := strings.Cut(kv, "=")
				for _, p := range []string{"AWS_", "AZURE_", "STORAGE_EMULATOR_HOST", "GOOGLE_", "FDL_TEST_"} {
					if strings.HasPrefix(k, p) {
						e.Setenv(k, v)
					}
				}
			}
			e.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never ask a metadata server
			// No command panics on any input: an fdl process that panics
			// leaves its stack in $WORK/.panics, and the script fails.
			panics := filepath.Join(e.WorkDir, ".panics")
			e.Setenv("FDL_TEST_PANICS", panics)
			e.Defer(func() {
				if b, err := os.ReadFile(panics); err == nil {
					e.T().Fatal("an fdl command panicked:\n" + string(b))
				}
			})
			// $REPO2 is a second, separate repository location.
			if base == "" {
				e.Setenv("REPO", "repo")
				e.Setenv("REPO2", "repo2")
				e.Setenv("DATA", filepath.Join(e.WorkDir, "repo", "data"))
			} else {
				e.Setenv("REPO", cloudtest.WithPrefix(base, "script"))
				e.Setenv("REPO2", cloudtest.WithPrefix(base, "script2"))
				e.Setenv("DATA", filepath.Join(e.WorkDir, "localdata"))
				// lakewrite writes Parquet files on this disk only: their
				// versions are published as a single-machine setup would.
				e.Setenv("FDL_ALLOW_LOCAL_DATA", "1")
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "cloud":
				return base != "", nil
			case "s3":
				return strings.HasPrefix(base, "s3://"), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: scriptCmds(),
	})
}

// scriptsUsingRepo copies the scripts of dir that name their repository
// as $REPO into a temporary folder and returns it: only those can run on
// an object store (the others work on folders by path). When only is not
// nil it keeps only the scripts it names (by name without .txtar), and
// fails on a name no script has.
func scriptsUsingRepo(t *testing.T, dir string, only map[string]string) string {
	t.Helper()
	out := t.TempDir()
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		if _, ok := only[name]; only != nil && !ok {
			continue
		}
		if !strings.Contains(string(b), "$REPO") {
			if only != nil {
				t.Fatalf("%s is in storeScripts but does not use $REPO", name)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no script in %s uses $REPO", dir)
	}
	if only != nil && n != len(only) {
		t.Fatalf("storeScripts names %d scripts, %s holds %d of them: a name without its script", len(only), dir, n)
	}
	return out
}

// storeArg opens the store a script argument names: a URL as is, a path
// relative to the script's directory.
func storeArg(ts *testscript.TestScript, arg string) store.Store {
	if !strings.Contains(arg, "://") {
		arg = ts.MkAbs(arg)
	}
	st, err := store.Open(context.Background(), arg)
	ts.Check(err)
	return st
}

// scriptCmds are the commands the command scripts add to testscript's own,
// each described at its entry.
//
// It is one piece: one map literal, the scripts' table of commands, read as
// a list; each entry is short and stands alone.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// catalog NAME DST: gunzip a real catalog from ../shared.
		"catalog": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: catalog NAME DST")
			}
			ts.Check(testutil.GunzipFile(filepath.Join(ts.Getenv("SHARED"), args[0]+".gz"), ts.MkAbs(args[1])))
		},
		// refvar URL REF VAR: set $VAR to the version id REF holds.
		"refvar": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 3 {
				ts.Fatalf("usage: refvar URL REF VAR")
			}
			st := storeArg(ts, args[0])
			defer st.Close()
			ref, err := refs.New(st, nil, refs.Options{}).Read(context.Background(), refs.Name(args[1]))
			ts.Check(err)
			ts.Setenv(args[2], string(ref.ID))
		},
		// sha256 FILE HEX: the file's sha256 equals HEX (or the content of
		// the env var named by HEX when it starts with $).
		"sha256": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: sha256 FILE HEX")
			}
			f, err := os.Open(ts.MkAbs(args[0]))
			ts.Check(err)
			defer f.Close()
			h := sha256.New()
			_, err = io.Copy(h, f)
			ts.Check(err)
			got := hex.EncodeToString(h.Sum(nil))
			if (got == args[1]) == neg {
				ts.Fatalf("sha256 of %s is %s, want %s%s", args[0], got, map[bool]string{true: "not ", false: ""}[neg], args[1])
			}
		},
		// flipbyte FILE OFFSET: change one byte of a file (damage a catalog).
		"flipbyte": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: flipbyte FILE OFFSET")
			}
			var off int64
			fmt.Sscan(args[1], &off)
			f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_RDWR, 0)
			ts.Check(err)
			defer f.Close()
			b := make([]byte, 1)
			_, err = f.ReadAt(b, off)
			ts.Check(err)
			b[0] ^= 0xff
			_, err = f.WriteAt(b, off)
			ts.Check(err)
		},
		// waitfile FILE: wait up to 30 s for FILE to exist.
		"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
					return
				}
				if time.Now().After(deadline) {
					ts.Fatalf("%s did not appear in 30 s", args[0])
				}
				time.Sleep(20 * time.Millisecond)
			}
		},
		// treehash DIR VAR: set $VAR to a digest of every file under DIR
		// (names and bytes), to show a command changed nothing.
		"treehash": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: treehash DIR VAR")
			}
			ts.Setenv(args[1], treeHash(ts, mkAbsPath(ts, args[0])))
		},
		// treesame DIR VAR: the tree under DIR still has the digest in $VAR.
		"treesame": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: treesame DIR VAR")
			}
			if same := treeHash(ts, mkAbsPath(ts, args[0])) == ts.Getenv(args[1]); same == neg {
				ts.Fatalf("tree %s changed: %v (want unchanged: %v)", args[0], !same, !neg)
			}
		},
		// recordvar REPO ID FIELD VAR: set $VAR to a field of a version's
		// record (sha256, size, seq, snapshot, parent).
		"recordvar": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 4 {
				ts.Fatalf("usage: recordvar REPO ID FIELD VAR")
			}
			st := storeArg(ts, args[0])
			defer st.Close()
			b, _, err := store.ReadAll(context.Background(), st, "versions/"+args[1]+"/version.json")
			ts.Check(err)
			rec, err := version.ParseRecord(b, version.ID(args[1]))
			ts.Check(err)
			v := map[string]string{"sha256": rec.Catalog.SHA256, "size": fmt.Sprint(rec.Catalog.Size), "seq": fmt.Sprint(rec.Seq),
				"snapshot": fmt.Sprint(rec.DuckLake.Snapshot), "parent": string(rec.Parent())}[args[2]]
			ts.Setenv(args[3], v)
		},
		// stored URL KEY...: each key holds an object in the store at URL
		// (a folder path or a store URL); with !, none does.
		"stored": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) < 2 {
				ts.Fatalf("usage: stored URL KEY...")
			}
			st := storeArg(ts, args[0])
			defer st.Close()
			for _, k := range args[1:] {
				_, err := st.Stat(context.Background(), k)
				if err != nil && !errors.Is(err, store.ErrNotExist) {
					ts.Fatalf("stat %s: %v", k, err)
				}
				if (err == nil) == neg {
					ts.Fatalf("%s: exists %v, want %v", k, err == nil, !neg)
				}
			}
		},
		// storecat URL KEY: print an object to stdout.
		"storecat": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: storecat URL KEY")
			}
			st := storeArg(ts, args[0])
			defer st.Close()
			b, _, err := store.ReadAll(context.Background(), st, args[1])
			ts.Check(err)
			ts.Stdout().Write(b)
		},
		// storels URL PREFIX: print the keys under PREFIX, one a line.
		"storels": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: storels URL PREFIX")
			}
			st := storeArg(ts, args[0])
			defer st.Close()
			ts.Check(st.List(context.Background(), args[1], func(oi store.ObjectInfo) error {
				fmt.Fprintln(ts.Stdout(), oi.Key)
				return nil
			}))
		},
		// storeput URL KEY FILE: write FILE's bytes to KEY (replacing it).
		"storeput": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 3 {
				ts.Fatalf("usage: storeput URL KEY FILE")
			}
			st := storeArg(ts, args[0])
			defer st.Close()
			b, err := os.ReadFile(ts.MkAbs(args[2]))
			ts.Check(err)
			ts.Check(st.Delete(context.Background(), args[1]))
			ts.Check(st.Create(context.Background(), args[1], bytes.NewReader(b)))
		},
		// storerm URL KEY...: delete objects.
		"storerm": func(ts *testscript.TestScript, neg bool, args []string) {
			st := storeArg(ts, args[0])
			defer st.Close()
			for _, k := range args[1:] {
				ts.Check(st.Delete(context.Background(), k))
			}
		},
		// storeflip URL KEY OFFSET: change one byte of an object (damage a
		// catalog), by rewriting it.
		"storeflip": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 3 {
				ts.Fatalf("usage: storeflip URL KEY OFFSET")
			}
			var off int
			fmt.Sscan(args[2], &off)
			st := storeArg(ts, args[0])
			defer st.Close()
			b, _, err := store.ReadAll(context.Background(), st, args[1])
			ts.Check(err)
			b[off] ^= 0xff
			ts.Check(st.Delete(context.Background(), args[1]))
			ts.Check(st.Create(context.Background(), args[1], bytes.NewReader(b)))
		},
		// setdatapath CATALOG DIR: make a working catalog's data_path the
		// local folder DIR (for object-store runs, see runScripts).
		"setdatapath": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: setdatapath CATALOG DIR")
			}
			dir := strings.TrimSuffix(filepath.ToSlash(ts.MkAbs(args[1])), "/") + "/"
			sqlexecCmd(ts, false, []string{args[0], "UPDATE ducklake_metadata SET value = " + sqlquote.String(dir) + " WHERE key = 'data_path'"})
		},
		// basevar DIR VAR: set $VAR to the working directory's base version.
		"basevar": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: basevar DIR VAR")
			}
			w, err := workdir.Open(ts.MkAbs(args[0]))
			ts.Check(err)
			ts.Setenv(args[1], string(w.State.Base))
		},
		"duck":      duckCmd,
		"httpserve": httpserveCmd,
		"lakewrite": lakewriteCmd,
		"sqlexec":   sqlexecCmd,
	}
}

// treeHash digests the repository at dir (a folder or a URL); a missing
// folder digests as empty.
func treeHash(ts *testscript.TestScript, dir string) string {
	if strings.Contains(dir, "://") {
		return storeHash(ts, dir)
	}
	d, err := testutil.DigestTree(dir)
	if err != nil && !os.IsNotExist(err) {
		ts.Fatalf("treehash: %v", err)
	}
	return d
}

// mkAbsPath is ts.MkAbs for paths; URLs are returned as they are.
func mkAbsPath(ts *testscript.TestScript, p string) string {
	if strings.Contains(p, "://") {
		return p
	}
	return ts.MkAbs(p)
}

// storeHash is a digest of every object (keys and bytes) in a store.
func storeHash(ts *testscript.TestScript, url string) string {
	st := storeArg(ts, url)
	defer st.Close()
	h := sha256.New()
	ctx := context.Background()
	ts.Check(st.List(ctx, "", func(oi store.ObjectInfo) error {
		b, _, err := store.ReadAll(ctx, st, oi.Key)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", oi.Key, len(b))
		h.Write(b)
		return nil
	}))
	return hex.EncodeToString(h.Sum(nil))
}
