package main

import (
	"crypto/ed25519"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/internal/testutil"
)

// jsonRun runs fdl in-process with args (and --json) and returns its stdout
// and stderr.
func jsonRun(t *testing.T, wantCode int, args ...string) (string, string) {
	t.Helper()
	ios, out, errOut := term.Test()
	code := run(append(args, "--json"), ios)
	if code != wantCode {
		t.Fatalf("fdl %s --json: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, wantCode, out, errOut)
	}
	return out.String(), errOut.String()
}

// jsonKinds records, for every field name met in a JSON document, the JSON
// kinds of its values (null aside: nullability is documented, not a second
// type) and where each was seen.
type jsonKinds map[string]map[string]string

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "null"
}

// docKeys name the fields whose values are documents of the repository
// format, included in outputs as they are stored (docs/spec.md gives their
// fields' types): a record, a dataset, fdl.json, the retention policy and
// floor. Their fields are not commands' fields and are not walked.
var docKeys = map[string]bool{"record": true, "dataset": true, "config": true, "policy": true, "retention_floor": true, "new_floor": true}

// recordKeys are the fields of version.json (docs/spec.md §6): log entries
// carry a record's fields at their top level.
var recordKeys = map[string]bool{"format": true, "id": true, "seq": true, "parents": true, "author": true, "message": true, "created_at": true, "catalog": true, "dataset": true, "ducklake": true, "readers": true}

// walk records every command field under v, named by where (the command).
func (k jsonKinds) walk(where string, v any) {
	switch v := v.(type) {
	case map[string]any:
		_, parents := v["parents"]
		_, ducklake := v["ducklake"]
		isRecord := parents && ducklake // a record, or a log entry with a record's fields
		for name, fv := range v {
			if isRecord && recordKeys[name] {
				continue
			}
			kind := kindOf(fv)
			if kind != "null" {
				if k[name] == nil {
					k[name] = map[string]string{}
				}
				if _, ok := k[name][kind]; !ok {
					k[name][kind] = where
				}
			}
			if !docKeys[name] {
				k.walk(where, fv)
			}
		}
	case []any:
		for _, e := range v {
			k.walk(where, e)
		}
	}
}

// TestJSONFieldTypes runs every command that prints JSON, on a repository
// that exercises their fields (versions, tags, branches, requests, a
// retention policy, gc that retires and deletes, a pull, refusals), and
// fails when one field name has two JSON types across commands (docs/cli.md
// documents one type per name); the repository's own documents that some
// outputs carry as stored (docKeys, records) keep the types docs/spec.md
// gives them. It also checks the one meaning of the names that used to
// differ: "branch" is always a short name, "ref" always a full one.
//
// It is one piece: the outputs of every command are gathered from one
// repository and checked together, since a name must have one type across
// all of them.
func TestJSONFieldTypes(t *testing.T) {
	t.Setenv("FDL_AUTHOR", "tester")
	t.Setenv("FDL_CATALOG_FORMAT", "duckdb")
	dir := t.TempDir()
	url := filepath.Join(dir, "repo")
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	kinds := jsonKinds{}
	doc := func(where, out string) {
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s: not one JSON document: %v\n%s", where, err, out)
		}
		kinds.walk(where, v)
		checkMeanings(t, where, v)
	}
	cmd := func(args ...string) { out, _ := jsonRun(t, 0, args...); doc(strings.Join(args, " "), out) }
	fails := func(code int, args ...string) {
		_, errOut := jsonRun(t, code, args...)
		doc(strings.Join(args, " ")+" (error)", errOut)
	}
	duck := duckSession(t)
	insert := func(w string, n int) { duckWrite(t, duck, w, fmt.Sprintf("INSERT INTO t VALUES (%d)", n)) }

	cmd("init", url)
	cmd("checkout", url, a)
	duckWrite(t, duck, a, "CREATE TABLE t(x INTEGER)")
	cmd("-C", a, "status")
	cmd("-C", a, "commit", "-m", "one")
	cmd("-C", a, "push")
	// The reader's side: a project pins main, which then moves on.
	proj := filepath.Join(dir, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FDL_CACHE", filepath.Join(dir, "cache"))
	cmd("-C", proj, "lock", "add", "sales", url)
	cmd("checkout", url, b)
	for i := 2; i <= 4; i++ {
		insert(a, i)
		cmd("-C", a, "commit", "-m", fmt.Sprint("v", i))
	}
	cmd("-C", a, "status")
	cmd("-C", a, "log")
	cmd("-C", a, "show")
	cmd("-C", a, "push")
	cmd("-C", proj, "lock", "check")
	fails(6, "-C", proj, "lock", "check", "--fail-behind")
	cmd("-C", proj, "lock", "update")
	cmd("-C", proj, "attach", "--locked", "sales")
	fails(1, "-C", proj, "attach", "--locked", "nosuch")
	cmd("-C", proj, "lock", "add", "first", url, "main~1")
	cmd("-C", proj, "lock", "remove", "first")
	cmd("cache", "list")
	cmd("cache", "prune", "--all")
	cmd("-C", b, "status")
	cmd("-C", b, "status", "--offline")
	cmd("-C", b, "pull")
	cmd("--repo", url, "tag", "rel", "main~1")
	cmd("--repo", url, "tag", "rel", "main~1")
	fails(4, "--repo", url, "tag", "rel", "main")
	cmd("--repo", url, "tag", "-l")
	cmd("--repo", url, "branch", "dev", "main~2")
	cmd("--repo", url, "branch", "-l")
	cmd("--repo", url, "branch", "-f", "dev", "main")
	cmd("--repo", url, "branch", "-f", "dev", "main~3", "--backwards")
	cmd("--repo", url, "branch", "-d", "dev")
	insert(b, 5)
	cmd("-C", b, "commit", "-m", "five")
	cmd("-C", b, "request", "create", "fix", "-m", "five")
	cmd("--repo", url, "request", "list")
	cmd("--repo", url, "request", "show", "fix")
	cmd("--repo", url, "request", "approve", "fix")
	insert(b, 6)
	cmd("-C", b, "commit", "-m", "six")
	cmd("-C", b, "request", "create", "six")
	insert(b, 7)
	cmd("-C", b, "commit", "-m", "seven")
	cmd("-C", b, "request", "update", "six")
	cmd("--repo", url, "request", "drop", "six")
	cmd("--repo", url, "reflog")
	cmd("--repo", url, "log")
	cmd("--repo", url, "show", "main")
	cmd("--repo", url, "attach", "main")
	key, signers := signingKey(t, dir)
	cmd("--repo", url, "sign", "main", "--sign-key", key)
	cmd("--repo", url, "tag", "--sign", "srel", "main", "--sign-key", key)
	cmd("--repo", url, "show", "main", "--signers", signers)
	cmd("--repo", url, "log", "--show-signature", "--signers", signers)
	cmd("--repo", url, "attach", "main", "--require-signed", "--signers", signers)
	cmd("--repo", url, "verify", "--signers", signers)
	fails(1, "--repo", url, "attach", "main~1", "--require-signed", "--signers", signers)
	fails(1, "--repo", url, "sign", "main", "--sign-key", key)
	cmd("--repo", url, "retention", "--keep-last", "2")
	cmd("--repo", url, "gc")
	cmd("--repo", url, "gc", "--yes")
	cmd("--repo", url, "retention")
	cmd("--repo", url, "log")
	cmd("--repo", url, "show", "main~4")
	cmd("--repo", url, "verify")
	cmd("--repo", url, "verify", "--data")
	cmd("mirror", url, filepath.Join(dir, "mirror"))
	cmd("mirror", url, filepath.Join(dir, "mirror"))
	cmd("version")
	fails(2, "--repo", url, "log", "-n", "0")
	insert(a, 8)
	cmd("-C", a, "commit", "-m", "eight", "--sign-key", key)
	fails(3, "-C", a, "push")
	fails(1, "-C", a, "pull")
	os.RemoveAll(filepath.Join(url, "versions", "nosuch"))
	// An old lake: imported as it is, then migrated (fdl migrate), and
	// imported again migrated on the way in (checkout --migrate).
	old := filepath.Join(dir, "old.ducklake")
	testutil.Gunzip(t, "dltest-v04.ducklake", old)
	url2, m, m2 := filepath.Join(dir, "repo2"), filepath.Join(dir, "m"), filepath.Join(dir, "m2")
	cmd("init", url2)
	cmd("checkout", url2, m, "--from", old)
	cmd("-C", m, "commit", "-m", "old")
	cmd("-C", m, "push")
	cmd("--repo", url2, "migrate")
	cmd("--repo", url2, "show", "main")
	cmd("checkout", url2, m2, "--branch", "again", "--orphan", "--from", old, "--migrate")

	if out := os.Getenv("FDL_JSON_FIELDS"); out != "" {
		var lines []string
		for name, ks := range kinds {
			for k, where := range ks {
				lines = append(lines, fmt.Sprintf("%s\t%s\t%s", name, k, where))
			}
		}
		sort.Strings(lines)
		os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
	var bad []string
	for name, ks := range kinds {
		if len(ks) < 2 {
			continue
		}
		var seen []string
		for k, where := range ks {
			seen = append(seen, fmt.Sprintf("%s in %q", k, where))
		}
		sort.Strings(seen)
		bad = append(bad, fmt.Sprintf("%q: %s", name, strings.Join(seen, ", ")))
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("field %s", b)
	}
	checkDocumented(t, kinds)
}

// docTypes are the type words of docs/cli.md's field table for each JSON
// kind.
var docTypes = map[string][]string{
	"string": {"string", "id", "time", "ref name", "short name"},
	"number": {"integer"},
	"bool":   {"boolean"},
	"object": {"object"},
	"array":  {"array"},
}

// checkDocumented fails for a field name the commands print that docs/cli.md's
// field table does not list, or lists with another type.
func checkDocumented(t *testing.T, kinds jsonKinds) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	_, table, ok := strings.Cut(string(b), "| field | type | absent / null |")
	if !ok {
		t.Fatal("docs/cli.md has no field table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		for _, name := range strings.Split(cells[1], ",") {
			name = strings.Trim(strings.TrimSpace(name), "`")
			documented[name] = strings.TrimSpace(cells[2])
		}
	}
	for name, ks := range kinds {
		typ, ok := documented[name]
		if !ok {
			t.Errorf("field %q (printed by %v) is not in docs/cli.md's field table", name, ks)
			continue
		}
		for k := range ks {
			match := false
			for _, w := range docTypes[k] {
				match = match || strings.HasPrefix(typ, w)
			}
			if !match {
				t.Errorf("field %q is a JSON %s, docs/cli.md says %q", name, k, typ)
			}
		}
	}
}

// checkMeanings fails when "branch" holds a full ref name or "ref" a short
// one anywhere in v outside the repository's documents.
func checkMeanings(t *testing.T, where string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for name, fv := range v {
			if docKeys[name] {
				continue
			}
			s, ok := fv.(string)
			switch {
			case !ok:
			case (name == "branch" || name == "into") && strings.HasPrefix(s, "refs/"):
				t.Errorf("%s: %q is %q: a short name is wanted", where, name, s)
			case (name == "ref" || name == "into_ref" || name == "target") && s != "" && !strings.HasPrefix(s, "refs/"):
				t.Errorf("%s: %q is %q: a full ref name is wanted", where, name, s)
			}
			checkMeanings(t, where, fv)
		}
	case []any:
		for _, e := range v {
			checkMeanings(t, where, e)
		}
	}
}

// signingKey writes a new Ed25519 private key file (OpenSSH format) and an
// allowed signers file that allows it for namespace fdl, into dir, and
// returns their paths.
func signingKey(t *testing.T, dir string) (key, signers string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "tester")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	key, signers = filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	line := "tester@example.com namespaces=\"fdl\" " + string(ssh.MarshalAuthorizedKey(sp))
	if err := os.WriteFile(signers, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return key, signers
}
