package refs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/memory"
	"github.com/fdl-dev/fdl/version"
)

// fuzzID is the id of version i of the fuzz targets' fixed line.
func fuzzID(i int) version.ID { return version.ID(fmt.Sprintf("01900000-0000-7000-8000-%012x", i)) }

// FuzzRefContent: Read takes a ref's content (docs/spec.md §4) as one of
// exactly three things: a version id and one newline (the id comes back,
// and writing it gives the same bytes), the tombstone (ErrNotFound), or
// anything else (a *CorruptError naming the ref, never absent).
func FuzzRefContent(f *testing.F) {
	for _, s := range []string{string(fuzzID(1)) + "\n", Tombstone, "", "\n", string(fuzzID(1)), string(fuzzID(1)) + "\n\n",
		string(fuzzID(1)) + "\r\n", strings.ToUpper(string(fuzzID(1))) + "\n", "deleted", "0192f0c1\n", "ref: refs/heads/main\n"} {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	const n = Name("refs/heads/main")
	f.Fuzz(func(t *testing.T, b []byte) {
		st := memory.New()
		if _, err := st.Swap(ctx, string(n), store.NoToken, b); err != nil {
			t.Fatal(err)
		}
		ref, err := New(st, nil, Options{}).Read(ctx, n)
		var corrupt *CorruptError
		switch {
		case err == nil:
			if _, perr := version.ParseID(string(ref.ID)); perr != nil || string(ref.ID)+"\n" != string(b) {
				t.Fatalf("content %q read as id %q", b, ref.ID)
			}
		case errors.Is(err, ErrNotFound):
			if string(b) != Tombstone {
				t.Fatalf("content %q read as absent", b)
			}
		case errors.As(err, &corrupt):
			if corrupt.Ref != n || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("corrupt ref error %v does not name the ref", err)
			}
			if _, perr := version.ParseID(strings.TrimSuffix(string(b), "\n")); perr == nil && strings.Count(string(b), "\n") == 1 && strings.HasSuffix(string(b), "\n") {
				t.Fatalf("content %q is an id and a newline, but was refused: %v", b, err)
			}
		default:
			t.Fatalf("content %q: error %v is neither absent nor corrupt", b, err)
		}
	})
}

// FuzzHead: HEAD is read only when it holds exactly HeadContent of a
// branch whose short name passes CheckShort; anything else is ErrCorrupt.
func FuzzHead(f *testing.F) {
	for _, s := range []string{"ref: refs/heads/main\n", "ref: refs/heads/release/2025\n", "ref: refs/heads/main", "refs/heads/main\n",
		"ref: refs/tags/v1\n", "ref: refs/heads/\n", "ref: refs/heads/a..b\n", "ref: refs/heads/main\nref: refs/heads/x\n", "ref:  refs/heads/main\n", ""} {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, b []byte) {
		st := memory.New()
		if _, err := st.Swap(ctx, HeadKey, store.NoToken, b); err != nil {
			t.Fatal(err)
		}
		n, err := New(st, nil, Options{}).Head(ctx)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("HEAD %q: error %v does not wrap ErrCorrupt", b, err)
			}
			return
		}
		if !n.IsBranch() || CheckShort(n.Short()) != nil || string(HeadContent(n)) != string(b) {
			t.Fatalf("HEAD %q read as branch %q", b, n)
		}
	})
}

// FuzzCheckShort: a short name CheckShort accepts keeps every rule of
// docs/spec.md §4, checked here one by one; every key fdl writes for the
// ref (the ref itself, its ref log entries) is a valid store key; Branch,
// Tag and Request agree with CheckShort.
func FuzzCheckShort(f *testing.F) {
	for _, s := range []string{"main", "release/2025", "2025-final", "nightly_01", "naïve", "café", "abc", "face-off", "", "a..b", "/main",
		"main/", "a//b", "main.lock", "a/b.lock/c", "with space", "tab\there", "ctl\x01", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`,
		"a@1", ".hidden", "a/.b", "end.", "HEAD", "refs/heads/main", "-x", "01a229970000700080000000000000ff",
		"01a22997-0000-7000-8000-0000000000ff", "a\u00a0b", "a\u200bb", strings.Repeat("x", 200), strings.Repeat("x", 201)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckShort(s)
		for _, mk := range []func(string) (Name, error){Branch, Tag, Request} {
			n, nerr := mk(s)
			if (nerr == nil) != (err == nil) || (nerr == nil && n.Short() != s) {
				t.Fatalf("%q: CheckShort says %v, a full name %q %v", s, err, n, nerr)
			}
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidName", s, err)
			}
			return
		}
		if why := breaksNameRule(s); why != "" {
			t.Fatalf("CheckShort accepted %q, which %s (docs/spec.md §4)", s, why)
		}
		for _, p := range []string{HeadsPrefix, TagsPrefix, RequestsPrefix} {
			n := Name(p + s)
			for _, key := range []string{string(n), logKey(n, string(fuzzID(1)))} {
				if kerr := store.CheckKey(key); kerr != nil {
					t.Fatalf("CheckShort accepted %q, but fdl cannot store its key %q: %v", s, key, kerr)
				}
			}
		}
	})
}

// breaksNameRule says which rule of docs/spec.md §4 s breaks, "" if none.
func breaksNameRule(s string) string {
	el := strings.Split(s, "/")
	hex := strings.ReplaceAll(s, "-", "")
	switch {
	case len(s) == 0 || len(s) > 200 || !utf8.ValidString(s):
		return "is empty, longer than 200 bytes or not valid UTF-8"
	case s[0] == '/' || s[len(s)-1] == '/' || strings.Contains(s, "//"):
		return "begins or ends with '/' or holds '//'"
	case strings.Contains(s, "..") || s[len(s)-1] == '.':
		return "holds '..' or ends with '.'"
	case strings.ContainsAny(s, "~^:?*[\\@"):
		return "holds one of ~ ^ : ? * [ \\ @"
	case strings.IndexFunc(s, func(r rune) bool { return r == ' ' || unicode.IsControl(r) }) >= 0:
		return "holds a space or a control character"
	case s == "HEAD" || strings.HasPrefix(s, "refs/") || s[0] == '-':
		return "is HEAD, begins with refs/ or '-'"
	case len(hex) == 32 && strings.Trim(strings.ToLower(hex), "0123456789abcdef") == "":
		return "is a full version id"
	}
	for _, e := range el {
		if strings.HasPrefix(e, ".") || strings.HasSuffix(e, ".lock") {
			return "has an element that begins with '.' or ends with '.lock'"
		}
	}
	return ""
}

// fuzzChain is the fixed repository FuzzResolve resolves in: versions
// 1..5 on one line, main at 5 (HEAD names it), tag v1 at 1, request r at
// 3, and a side version 6 off version 2 that shares its first 12 hex
// digits with the others (an ambiguous short prefix).
func fuzzChain(f *testing.F) (*Manager, *chain) {
	f.Helper()
	c := &chain{recs: map[version.ID]*version.Record{}}
	add := func(i int, parent version.ID, seq int64) version.ID {
		id := fuzzID(i)
		rec := &version.Record{ID: id, Seq: seq, Parents: []version.ID{}}
		if parent != "" {
			rec.Parents = []version.ID{parent}
		}
		c.recs[id] = rec
		c.ids = append(c.ids, id)
		return id
	}
	var parent version.ID
	for i := 1; i <= 5; i++ {
		parent = add(i, parent, int64(i))
		c.line = append(c.line, parent)
	}
	add(6, c.line[1], 3)
	ctx := context.Background()
	st := memory.New()
	for key, content := range map[string][]byte{
		HeadKey: HeadContent("refs/heads/main"), "refs/heads/main": []byte(c.line[4] + "\n"),
		"refs/tags/v1": []byte(c.line[0] + "\n"), "refs/requests/r": []byte(c.line[2] + "\n"),
		"refs/heads/gone": []byte(Tombstone), "refs/heads/bad": []byte("garbage\n"),
	} {
		if _, err := st.Swap(ctx, key, store.NoToken, content); err != nil {
			f.Fatal(err)
		}
	}
	return New(st, c, Options{Where: "mem://fuzz"}), c
}

// revModel matches the revisions whose meaning FuzzResolve computes on its
// own: a name the fixed repository has, or @SEQ / main@SEQ, then any ~N.
var revModel = regexp.MustCompile(`^(main|HEAD|v1|r|refs/heads/main|refs/tags/v1|refs/requests/r|main@([0-9]+)|@([0-9]+))((?:~[0-9]*)*)$`)

// FuzzResolve: Resolve never panics; its errors wrap ErrUnknownRev,
// ErrAmbiguousRev or ErrCorrupt (what its doc promises, and what the
// command layer maps to exit codes); what it resolves is a version of the
// repository; and the revisions of docs/spec.md §11 over the names the
// repository has (main, HEAD, tag v1, request r, main@SEQ, @SEQ, each
// with any ~N suffixes) resolve to what a model computes with unbounded
// integers: N first parents back, or an error past the first version.
func FuzzResolve(f *testing.F) {
	m, c := fuzzChain(f)
	for _, s := range []string{"main", "HEAD", "v1", "r", "refs/heads/main", "refs/tags/v1", "main~", "main~2", "main~~", "main~1~1",
		"main@2", "@3", "main@3~1", "v1@1", "main~5", "main~x", "main~-1", "", "~", "@", "@0", "nosuch", "gone", "bad", "refs/heads/bad",
		string(fuzzID(3)), strings.ToUpper(string(fuzzID(3))), fuzzID(3).Hex(), "0190", "01900000-0000-7000-8000-00000000000", "zz",
		"main~9223372036854775807", "main@9223372036854775807", "main~9223372036854775807~9223372036854775807~2"} {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, rev string) {
		res, err := m.Resolve(ctx, rev)
		if err != nil {
			if !errors.Is(err, ErrUnknownRev) && !errors.Is(err, ErrAmbiguousRev) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Resolve(%q): error %v wraps none of ErrUnknownRev, ErrAmbiguousRev, ErrCorrupt", rev, err)
			}
		} else if _, ok := c.recs[res.ID]; !ok {
			if _, perr := version.ParseID(strings.ToLower(rev)); perr != nil {
				t.Fatalf("Resolve(%q) = %s, not a version of the repository", rev, res.ID)
			}
		}
		if !strings.HasPrefix(rev, RevName(rev)) {
			t.Fatalf("RevName(%q) = %q is not its start", rev, RevName(rev))
		}
		want, ok := modelResolve(rev, c)
		if !ok {
			return
		}
		switch {
		case want == "" && err == nil:
			t.Fatalf("Resolve(%q) = %s, want an error: it goes back past the first version", rev, res.ID)
		case want == "" && !errors.Is(err, ErrUnknownRev):
			t.Fatalf("Resolve(%q): %v, want ErrUnknownRev", rev, err)
		case want != "" && (err != nil || res.ID != want):
			t.Fatalf("Resolve(%q) = %s, %v; want %s", rev, res.ID, err, want)
		}
	})
}

// modelResolve computes what a revision revModel matches names: the
// version ("" when it goes back past the first version or names no seq
// on main), ok false for other revisions.
func modelResolve(rev string, c *chain) (version.ID, bool) {
	sm := revModel.FindStringSubmatch(rev)
	if sm == nil {
		return "", false
	}
	var at *big.Int // index into c.line
	switch {
	case sm[2] != "" || sm[3] != "":
		seq, _ := new(big.Int).SetString(sm[2]+sm[3], 10)
		if seq.Sign() < 1 || seq.Cmp(big.NewInt(int64(len(c.line)))) > 0 {
			return "", true
		}
		at = seq.Sub(seq, big.NewInt(1))
	case sm[1] == "v1" || sm[1] == "refs/tags/v1":
		at = big.NewInt(0)
	case sm[1] == "r" || sm[1] == "refs/requests/r":
		at = big.NewInt(2)
	default:
		at = big.NewInt(int64(len(c.line) - 1))
	}
	if strings.HasPrefix(sm[1], "main@") || strings.HasPrefix(sm[1], "@") {
		// seq numbers are int64: one that does not fit names nothing.
		if _, err := strconv.ParseInt(sm[2]+sm[3], 10, 64); err != nil {
			return "", true
		}
	}
	for _, n := range strings.Split(sm[4], "~")[1:] {
		back := big.NewInt(1)
		if n != "" {
			back.SetString(n, 10)
		}
		at.Sub(at, back)
	}
	if at.Sign() < 0 {
		return "", true
	}
	return c.line[at.Int64()], true
}

// FuzzParseLogEntry: parseLogEntry never panics; an entry it accepts has
// the key it was read from, a UUIDv7 id, old and new ids that are valid
// or empty (not both), and written again as appendLog writes it, parses to
// the same entry.
func FuzzParseLogEntry(f *testing.F) {
	at := time.Date(2026, 11, 29, 22, 44, 6, 123e6, time.UTC)
	for _, e := range []LogEntry{
		{Format: 1, ID: string(fuzzID(9)), Ref: "refs/heads/main", Old: fuzzID(1), New: fuzzID(2), Action: ActionPush, Author: "ann", Time: at, Why: "push: x"},
		{Format: 1, ID: string(fuzzID(9)), Ref: "refs/tags/v1", New: fuzzID(1), Action: ActionCreate, Author: "ann", Time: at, Why: "created at main"},
		{Format: 1, ID: string(fuzzID(9)), Ref: "refs/requests/r", Old: fuzzID(1), Action: ActionDelete, Author: "é \"q\"", Time: at, Why: "dropped", Target: "refs/heads/main"},
	} {
		b, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(b, '\n'), LogKey(e))
	}
	f.Add([]byte(`{"format":1,"id":"`+string(fuzzID(9))+`","ref":"refs/heads/main","old":"","new":""}`), "logs/refs/heads/main/"+string(fuzzID(9))+".json")
	f.Fuzz(func(t *testing.T, b []byte, key string) {
		e, err := parseLogEntry(b, key)
		if err != nil {
			var bad *BadLogError
			if !errors.As(err, &bad) || bad.Key != key {
				t.Fatalf("error %v is not a *BadLogError naming %q", err, key)
			}
			return
		}
		if LogKey(e) != key {
			t.Fatalf("entry read from %q has key %q", key, LogKey(e))
		}
		if _, err := version.ParseID(e.ID); err != nil {
			t.Fatalf("accepted entry id %q: %v", e.ID, err)
		}
		for _, id := range []version.ID{e.Old, e.New} {
			if _, err := version.ParseID(string(id)); id != "" && err != nil {
				t.Fatalf("accepted version id %q: %v", id, err)
			}
		}
		if e.Old == "" && e.New == "" {
			t.Fatal("accepted an entry that names no version")
		}
		again, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			t.Fatalf("accepted entry does not marshal: %v", err)
		}
		e2, err := parseLogEntry(append(again, '\n'), key)
		if err != nil {
			t.Fatalf("the entry written again does not parse: %v\n%s", err, again)
		}
		if !e2.Time.Equal(e.Time) {
			t.Fatalf("round trip changed the time: %v -> %v", e.Time, e2.Time)
		}
		e.Time, e2.Time = time.Time{}, time.Time{}
		if e != e2 {
			t.Fatalf("round trip changed the entry:\n%+v\n%+v", e, e2)
		}
	})
}
