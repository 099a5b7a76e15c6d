package main

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/version"
)

var update = flag.Bool("update", false, "update testscript golden files")

// TestMain installs the test binary as the commands "fdl" and "holdlock" so
// scripts (and Go tests here) run them as separate processes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"fdl":      fdlTestMain,
		"holdlock": holdLockMain,
	})
}

// fdlTestMain is fdl's main with one test-only addition: FDL_TEST_KILL_AT
// names a commit or push step at which the process kills itself with
// SIGKILL (a real crash, for the crash tests).
func fdlTestMain() {
	if at := os.Getenv("FDL_TEST_KILL_AT"); at != "" {
		stepHook = func(step string) {
			if step == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Minute)
			}
		}
	}
	os.Exit(Main())
}

// sharedCatalogs returns ../shared/testdata/catalogs relative to the module.
func sharedCatalogs(t testing.TB) string {
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(filepath.Dir(d), "shared", "testdata", "catalogs")
			if _, err := os.Stat(p); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("real catalogs not found at %s (CI needs ../shared beside the clone)", p)
				}
				t.Skipf("real catalogs not found at %s", p)
			}
			return p
		}
	}
	t.Fatal("go.mod not found")
	return ""
}

func TestScripts(t *testing.T) {
	shared := sharedCatalogs(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: false,
		Setup: func(e *testscript.Env) error {
			e.Setenv("SHARED", shared)
			e.Setenv("FDL_AUTHOR", "tester")
			e.Setenv("NO_COLOR", "1")
			e.Setenv("CTRL", "bad\x01name")
			return nil
		},
		Cmds: scriptCmds(),
	})
}

func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// catalog NAME DST: gunzip a real catalog from ../shared.
		"catalog": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: catalog NAME DST")
			}
			gunzip(ts, filepath.Join(ts.Getenv("SHARED"), args[0]+".gz"), ts.MkAbs(args[1]))
		},
		// refvar URL REF VAR: set $VAR to the version id REF holds.
		"refvar": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 3 {
				ts.Fatalf("usage: refvar URL REF VAR")
			}
			st, err := store.Open(context.Background(), ts.MkAbs(args[0]))
			ts.Check(err)
			defer st.Close()
			ref, err := refs.New(st).Read(context.Background(), refs.Name(args[1]))
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
			ts.Setenv(args[1], treeHash(ts, ts.MkAbs(args[0])))
		},
		// treesame DIR VAR: the tree under DIR still has the digest in $VAR.
		"treesame": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: treesame DIR VAR")
			}
			if same := treeHash(ts, ts.MkAbs(args[0])) == ts.Getenv(args[1]); same == neg {
				ts.Fatalf("tree %s changed: %v (want unchanged: %v)", args[0], !same, !neg)
			}
		},
		// recordvar REPO ID FIELD VAR: set $VAR to a field of a version's
		// record (sha256, size, seq, snapshot, parent).
		"recordvar": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 4 {
				ts.Fatalf("usage: recordvar REPO ID FIELD VAR")
			}
			b, err := os.ReadFile(filepath.Join(ts.MkAbs(args[0]), "versions", args[1], "version.json"))
			ts.Check(err)
			rec, err := version.ParseRecord(b, version.ID(args[1]))
			ts.Check(err)
			v := map[string]string{"sha256": rec.Catalog.SHA256, "size": fmt.Sprint(rec.Catalog.Size), "seq": fmt.Sprint(rec.Seq),
				"snapshot": fmt.Sprint(rec.DuckLake.Snapshot), "parent": string(rec.Parent())}[args[2]]
			ts.Setenv(args[3], v)
		},
		"lakewrite": lakewriteCmd,
		"sqlexec":   sqlexecCmd,
	}
}

func treeHash(ts *testscript.TestScript, dir string) string {
	h := sha256.New()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%v\x00", rel, fi.IsDir())
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			io.Copy(h, f)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		ts.Fatalf("treehash: %v", err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func gunzip(ts *testscript.TestScript, src, dst string) {
	in, err := os.Open(src)
	ts.Check(err)
	defer in.Close()
	zr, err := gzip.NewReader(in)
	ts.Check(err)
	ts.Check(os.MkdirAll(filepath.Dir(dst), 0o755))
	out, err := os.Create(dst)
	ts.Check(err)
	_, err = io.Copy(out, zr)
	ts.Check(err)
	ts.Check(out.Close())
}

var _ = strings.TrimSpace
