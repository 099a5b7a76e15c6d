package lockfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const (
	id1  = "0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f"
	id2  = "01930a2b-0000-7123-9abc-def012345678"
	sha1 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	sha2 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
)

// golden is a lockfile exactly as fdl writes it.
const golden = `# fdl.lock: the versions of fdl repositories this project reads, pinned.
# Written by ` + "`fdl lock`" + `; commit it. Format: fdl's docs/spec.md, "The lockfile".
version = 1

[pin.events]
repository = "./data/events"
version = "01930a2b-0000-7123-9abc-def012345678"
seq = 1
catalog_size = 0
catalog_sha256 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"

[pin.sales]
repository = "s3://bucket/lakes/sales"
ref = "refs/heads/main"
version = "0192f0c1-6c1a-7b3e-8f00-1a2b3c4d5e6f"
seq = 12
catalog_size = 52428800
catalog_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
`

func salesPin() Pin {
	return Pin{Repository: "s3://bucket/lakes/sales", Ref: "refs/heads/main", Version: id1, Seq: 12, CatalogSize: 50 << 20, CatalogSHA256: sha1}
}

func eventsPin() Pin {
	return Pin{Repository: "./data/events", Version: id2, Seq: 1, CatalogSize: 0, CatalogSHA256: sha2}
}

func mustMarshal(t *testing.T, f *File) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Reading a file fdl wrote and writing it again gives the same bytes, and
// a File built pin by pin writes exactly those bytes.
func TestRoundTripBytes(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(golden), "fdl.lock")
	if err != nil {
		t.Fatal(err)
	}
	if got := mustMarshal(t, f); string(got) != golden {
		t.Fatalf("Marshal(Parse(golden)) differs:\n%s\nwant:\n%s", got, golden)
	}
	if p, ok := f.Pin("sales"); !ok || p != salesPin() {
		t.Fatalf("Pin(sales) = %+v, %v; want %+v", p, ok, salesPin())
	}
	if p, ok := f.Pin("events"); !ok || p != eventsPin() || p.Ref != "" {
		t.Fatalf("Pin(events) = %+v, %v; want %+v (no ref)", p, ok, eventsPin())
	}
	g := New()
	if err := g.Set("sales", salesPin()); err != nil {
		t.Fatal(err)
	}
	if err := g.Set("events", eventsPin()); err != nil {
		t.Fatal(err)
	}
	if got := mustMarshal(t, g); string(got) != golden {
		t.Fatalf("Marshal of the pins set differs:\n%s\nwant:\n%s", got, golden)
	}
	// Through the file system too.
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(golden), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != golden {
		t.Fatalf("Load then Save changed the file:\n%s", b)
	}
	// An empty file holds the header and the version only, and reads back.
	e := mustMarshal(t, New())
	if !bytes.HasSuffix(e, []byte("\nversion = 1\n")) || bytes.Contains(e, []byte("[pin")) {
		t.Fatalf("empty file = %q", e)
	}
	if f, err := Parse(e, "x"); err != nil || f.Len() != 0 {
		t.Fatalf("Parse(empty) = %v, %v", f, err)
	}
}

// Pins are written in byte order of their names, whatever order they were
// set in, and a pin's strings are escaped so they read back.
func TestSortedOutput(t *testing.T) {
	t.Parallel()
	f := New()
	names := []string{"zeta", "Alpha", "beta-2", "beta_1", "0day", "beta"}
	for _, n := range names {
		p := salesPin()
		p.Repository = `/srv/lakes/` + n + ` "quoted" \ é`
		if err := f.Set(n, p); err != nil {
			t.Fatal(err)
		}
	}
	out := mustMarshal(t, f)
	var order []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "[pin.") {
			order = append(order, strings.TrimSuffix(strings.TrimPrefix(line, "[pin."), "]"))
		}
	}
	want := []string{"0day", "Alpha", "beta", "beta-2", "beta_1", "zeta"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("table order %v, want %v", order, want)
	}
	if got := f.Names(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	g, err := Parse(out, "fdl.lock")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		a, _ := f.Pin(n)
		b, _ := g.Pin(n)
		if a != b {
			t.Fatalf("pin %s read back as %+v, want %+v", n, b, a)
		}
	}
}

// Moving one pin changes only that pin's lines: the diff a reviewer sees.
func TestMinimalDiff(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(golden), "fdl.lock")
	if err != nil {
		t.Fatal(err)
	}
	p := salesPin()
	p.Version, p.Seq, p.CatalogSHA256 = id2, 13, sha2
	if err := f.Set("sales", p); err != nil {
		t.Fatal(err)
	}
	before := strings.Split(golden, "\n")
	after := strings.Split(string(mustMarshal(t, f)), "\n")
	if len(before) != len(after) {
		t.Fatalf("line count %d → %d", len(before), len(after))
	}
	var changed []string
	for i := range before {
		if before[i] != after[i] {
			changed = append(changed, after[i])
		}
	}
	want := []string{`version = "` + id2 + `"`, "seq = 13", `catalog_sha256 = "` + sha2 + `"`}
	if strings.Join(changed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changed lines:\n%s\nwant:\n%s", strings.Join(changed, "\n"), strings.Join(want, "\n"))
	}
	if !f.Delete("sales") || f.Delete("sales") {
		t.Fatal("Delete did not report the pin once")
	}
	if _, ok := f.Pin("sales"); ok || f.Len() != 1 {
		t.Fatal("pin still there after Delete")
	}
}

// pinText is a valid pin table with field k replaced by line (or removed
// when line is "").
func pinText(name string, replace map[string]string) string {
	lines := []struct{ k, v string }{
		{"repository", `repository = "s3://b/p"`},
		{"ref", `ref = "refs/heads/main"`},
		{"version", `version = "` + id1 + `"`},
		{"seq", `seq = 3`},
		{"catalog_size", `catalog_size = 1024`},
		{"catalog_sha256", `catalog_sha256 = "` + sha1 + `"`},
	}
	var b strings.Builder
	b.WriteString("version = 1\n[pin." + name + "]\n")
	for _, l := range lines {
		v := l.v
		if r, ok := replace[l.k]; ok {
			v = r
		}
		if v != "" {
			b.WriteString(v + "\n")
		}
	}
	if extra, ok := replace["+"]; ok {
		b.WriteString(extra + "\n")
	}
	return b.String()
}

// Every rule of the format is refused with an error that names the file,
// the pin and the field, and says what is wrong.
func TestValidationErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		text  string
		pin   string // "" when the error concerns the file
		field string
		say   string
	}{
		{"bad id", pinText("sales", map[string]string{"version": `version = "0192F0C1-6c1a-7b3e-8f00-1a2b3c4d5e6f"`}), "sales", "version", "not a version id"},
		{"v4 id", pinText("sales", map[string]string{"version": `version = "0192f0c1-6c1a-4b3e-8f00-1a2b3c4d5e6f"`}), "sales", "version", "not a version id"},
		{"upper-case sha", pinText("sales", map[string]string{"catalog_sha256": `catalog_sha256 = "` + strings.ToUpper(sha1) + `"`}), "sales", "catalog_sha256", "not a SHA-256"},
		{"short sha", pinText("sales", map[string]string{"catalog_sha256": `catalog_sha256 = "abc"`}), "sales", "catalog_sha256", "64 lower-case hex"},
		{"negative size", pinText("sales", map[string]string{"catalog_size": `catalog_size = -1`}), "sales", "catalog_size", "never negative"},
		{"seq 0", pinText("sales", map[string]string{"seq": `seq = 0`}), "sales", "seq", "1 or more"},
		{"seq string", pinText("sales", map[string]string{"seq": `seq = "3"`}), "sales", "seq", "a string, not an integer"},
		{"size float", pinText("sales", map[string]string{"catalog_size": `catalog_size = 1.5`}), "sales", "catalog_size", "a float, not an integer"},
		{"repository int", pinText("sales", map[string]string{"repository": `repository = 3`}), "sales", "repository", "an integer, not a string"},
		{"unknown field", pinText("sales", map[string]string{"+": `catalog_sha265 = "x"`}), "sales", "", `unknown field "catalog_sha265"`},
		{"missing field", pinText("sales", map[string]string{"seq": ""}), "sales", "seq", "missing"},
		{"missing repository", pinText("sales", map[string]string{"repository": ""}), "sales", "repository", "missing"},
		{"empty repository", pinText("sales", map[string]string{"repository": `repository = ""`}), "sales", "repository", "empty"},
		{"control character", pinText("sales", map[string]string{"repository": `repository = "s3://b/p\u0007"`}), "sales", "repository", "control character"},
		{"credential", pinText("sales", map[string]string{"repository": `repository = "https://user:hunter2@example.com/lake"`}), "sales", "repository", "carries a credential"},
		{"request ref", pinText("sales", map[string]string{"ref": `ref = "refs/requests/fix"`}), "sales", "ref", "a branch (refs/heads/…) or a tag"},
		{"short ref", pinText("sales", map[string]string{"ref": `ref = "main"`}), "sales", "ref", "named in full"},
		{"bad ref name", pinText("sales", map[string]string{"ref": `ref = "refs/heads/a..b"`}), "sales", "ref", "may not contain '..'"},
		{"empty ref", pinText("sales", map[string]string{"ref": `ref = ""`}), "sales", "ref", "empty"},
		{"quoted pin name", pinText(`"sales 2024"`, nil), "sales 2024", "", "bad pin name"},
		{"dotted pin name", pinText(`"a.b"`, nil), "a.b", "", "'.' is not allowed"},
		{"pin not a table", "version = 1\n[pin]\nsales = 3\n", "sales", "", "an integer, not a table"},
		{"pin key not a table", "version = 1\npin = \"x\"\n", "", "pin", "not a table"},
		{"unknown top-level key", "version = 1\n[pins.sales]\nrepository = \"x\"\n", "", "", `unknown key "pins"`},
		{"missing version", "[pin.sales]\nrepository = \"x\"\n", "", "version", "missing"},
		{"version string", "version = \"1\"\n", "", "version", "a string, not an integer"},
		{"version 0", "version = 0\n", "", "version", "1 or more"},
		{"not TOML", "version = 1\n[pin.sales\n", "", "", "not valid TOML: line 2"},
		{"duplicate table", pinText("sales", nil) + "[pin.sales]\nseq = 4\n", "", "", "not valid TOML"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), "/proj/fdl.lock")
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.File != "/proj/fdl.lock" || ie.Pin != c.pin || ie.Field != c.field {
				t.Fatalf("error %#v, want file /proj/fdl.lock, pin %q, field %q", ie, c.pin, c.field)
			}
			msg := err.Error()
			for _, want := range []string{"/proj/fdl.lock", c.say} {
				if !strings.Contains(msg, want) {
					t.Fatalf("error %q does not say %q", msg, want)
				}
			}
			if c.pin != "" && !strings.Contains(msg, `pin "`+c.pin+`"`) {
				t.Fatalf("error %q does not name pin %q", msg, c.pin)
			}
			if c.field != "" && !strings.Contains(msg, `field "`+c.field+`"`) {
				t.Fatalf("error %q does not name field %q", msg, c.field)
			}
			if strings.Contains(msg, "hunter2") {
				t.Fatalf("error %q shows the password", msg)
			}
		})
	}
}

// A file from a newer fdl is refused by its version number before any
// field it may add is looked at.
func TestNewerFormat(t *testing.T) {
	t.Parallel()
	text := "version = 2\n[pin.sales]\nmirror = \"s3://x\"\nseq = \"three\"\n"
	_, err := Parse([]byte(text), "a/fdl.lock")
	if !errors.Is(err, ErrUnsupportedFormat) || errors.Is(err, ErrInvalid) {
		t.Fatalf("Parse(version 2) = %v, want ErrUnsupportedFormat", err)
	}
	for _, want := range []string{"a/fdl.lock", "format version 2", "up to 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

// Set refuses a bad name or a bad pin with the name and field, and leaves
// the file as it was.
func TestSetValidates(t *testing.T) {
	t.Parallel()
	f := New()
	for _, name := range []string{"", "a b", "a.b", "é", strings.Repeat("x", MaxNameLen+1), "-x"} {
		if err := f.Set(name, salesPin()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "bad pin name") {
			t.Fatalf("Set(%q) = %v, want a bad pin name", name, err)
		}
	}
	if err := f.Set(strings.Repeat("x", MaxNameLen), salesPin()); err != nil {
		t.Fatalf("Set(name of %d bytes) = %v", MaxNameLen, err)
	}
	p := salesPin()
	p.CatalogSize = -5
	err := f.Set("sales", p)
	var ie *InvalidError
	if !errors.As(err, &ie) || ie.Pin != "sales" || ie.Field != "catalog_size" {
		t.Fatalf("Set(negative size) = %#v", err)
	}
	p = salesPin()
	p.Repository = "/srv/\xff"
	if err := f.Set("sales", p); !errors.As(err, &ie) || ie.Field != "repository" {
		t.Fatalf("Set(invalid UTF-8) = %v", err)
	}
	if _, ok := f.Pin("sales"); ok || f.Len() != 1 {
		t.Fatal("a refused Set changed the file")
	}
}

// Find returns the nearest fdl.lock from a nested folder, passes over a
// folder named fdl.lock, and returns ErrNotFound when none is above.
func TestFindNested(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if _, err := Find(root); err == nil {
		t.Skipf("a lockfile above %s: %v", root, err)
	}
	top := filepath.Join(root, "proj")
	deep := filepath.Join(top, "models", "staging", "fdl.lock", "x")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Find(deep)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), deep) {
		t.Fatalf("Find without a lockfile = %v, want ErrNotFound naming %s", err, deep)
	}
	want := filepath.Join(top, FileName)
	if err := os.WriteFile(want, []byte(golden), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Find(deep)
	if err != nil || got != want {
		t.Fatalf("Find(%s) = %q, %v; want %q", deep, got, err, want)
	}
	if got, err := Find(top); err != nil || got != want {
		t.Fatalf("Find(%s) = %q, %v; want %q", top, got, err, want)
	}
	// The nearest wins.
	nearer := filepath.Join(top, "models", FileName)
	if err := os.WriteFile(nearer, []byte(golden), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(deep); err != nil || got != nearer {
		t.Fatalf("Find with two lockfiles = %q, %v; want %q", got, err, nearer)
	}
}

// A relative Find starts from the working directory and returns an
// absolute path.
func TestFindRelative(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(golden), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(dir, "sub"))
	got, err := Find(".")
	if err != nil || got != filepath.Join(dir, FileName) {
		t.Fatalf("Find(.) = %q, %v", got, err)
	}
}

// Folder repositories are stored relative to the lockfile's folder when
// they lie inside it or inside its parent, and read back against it; URLs
// pass untouched; other folders stay absolute.
func TestRelativeFolderPaths(t *testing.T) {
	root := t.TempDir()
	lockDir := filepath.Join(root, "team", "proj")
	cases := []struct{ location, stored string }{
		{filepath.Join(lockDir, "data", "sales"), "./data/sales"},
		{lockDir, "."},
		{filepath.Join(root, "team", "lakes"), "../lakes"},
		{filepath.Join(root, "other", "lake"), filepath.Join(root, "other", "lake")},
		{filepath.Join(root, "team"), filepath.Join(root, "team")},
		{"s3://bucket/lakes/sales", "s3://bucket/lakes/sales"},
		{"file:///srv/lake", "file:///srv/lake"},
		{"https://example.com/lake", "https://example.com/lake"},
	}
	for _, c := range cases {
		got, err := StoredRepository(lockDir, c.location)
		if err != nil || got != c.stored {
			t.Errorf("StoredRepository(%q) = %q, %v; want %q", c.location, got, err, c.stored)
			continue
		}
		p := salesPin()
		p.Repository = got
		if back := RepositoryURL(lockDir, p); back != c.location {
			t.Errorf("RepositoryURL(%q) = %q, want %q", got, back, c.location)
		}
	}
	// A relative location is relative to the working directory.
	t.Chdir(filepath.Join(root))
	if got, err := StoredRepository(lockDir, filepath.Join("team", "proj", "lake")); err != nil || got != "./lake" {
		t.Errorf("StoredRepository(relative) = %q, %v; want ./lake", got, err)
	}
	// Paths written by hand resolve however deep they go; a name that reads
	// as a URL is not joined.
	for stored, want := range map[string]string{
		"../../x/lake": filepath.Join(root, "x", "lake"),
		"lake":         filepath.Join(lockDir, "lake"),
		"s3:/bucket":   "s3:/bucket",
	} {
		p := salesPin()
		p.Repository = stored
		if got := RepositoryURL(lockDir, p); got != want {
			t.Errorf("RepositoryURL(%q) = %q, want %q", stored, got, want)
		}
	}
	// A folder whose name reads like a scheme is written so it stays a path.
	got, err := StoredRepository(lockDir, filepath.Join(lockDir, "s3:x"))
	if runtime.GOOS != "windows" && (err != nil || got != "./s3:x") {
		t.Errorf("StoredRepository(s3:x) = %q, %v", got, err)
	}
}

// Save replaces the file atomically: a write that fails halfway leaves
// the old bytes and no temporary file; a rename that fails leaves no
// temporary file; a saved file keeps the old one's mode.
func TestAtomicSave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte(golden), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Delete("events")
	data := mustMarshal(t, f)
	failing := func(w io.Writer, b []byte) error {
		if _, err := w.Write(b[:len(b)/2]); err != nil {
			return err
		}
		return errors.New("disk full (simulated)")
	}
	err = writeAtomic(path, data, failing)
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), path) {
		t.Fatalf("failing write = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != golden {
		t.Fatalf("a failed save changed the file:\n%s", b)
	}
	onlyFile(t, dir, FileName)

	// The target is a folder: the write is refused, nothing left behind.
	asDir := filepath.Join(dir, "sub")
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(asDir); err == nil {
		t.Fatal("Save over a folder succeeded")
	}
	onlyFile(t, dir, FileName, "sub")

	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after Save = %v, %v; want 0600", fi.Mode(), err)
	}
	g, err := Load(path)
	if err != nil || g.Len() != 1 {
		t.Fatalf("Load after Save = %v pins, %v", g.Len(), err)
	}
	onlyFile(t, dir, FileName, "sub")

	// A new file gets 0644.
	fresh := filepath.Join(dir, "sub", FileName)
	if err := New().Save(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("new file mode = %v, %v", fi.Mode(), err)
	}
}

// onlyFile fails unless dir holds exactly names.
func onlyFile(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
}

// Load reports a missing file as fs.ErrNotExist and names the path in a
// bad file's error.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(missing) = %v", err)
	}
	path := filepath.Join(dir, "bad.lock")
	if err := os.WriteFile(path, []byte("version = 1\nextra = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), path+": ") {
		t.Fatalf("Load(bad) = %v", err)
	}
	// A folder is named as one, once.
	if _, err := Load(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "a folder, not a lockfile") || strings.Count(err.Error(), dir) != 2 {
		t.Errorf("Load(folder) = %v", err)
	}
	// Not UTF-8: a UTF-16 byte order mark, which the TOML parser passed
	// over, reading the file as one with no pins.
	for _, data := range []string{"\xff\xfeversion = 1\n", "version = 1\n# \xff\n"} {
		if _, err := Parse([]byte(data), "x.lock"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not UTF-8") {
			t.Errorf("Parse(%q) = %v, want it refused as not UTF-8", data, err)
		}
	}
}

// Parsing any bytes never panics; whatever parses writes bytes that parse
// to the same pins, and writing is stable.
func FuzzParse(f *testing.F) {
	f.Add([]byte(golden))
	f.Add([]byte(pinText("x", nil)))
	f.Add([]byte("version = 1\n[pin]\n"))
	f.Add([]byte("version = 2\n"))
	f.Add([]byte("version = 1\n[pin.a]\nrepository = '''x\ny'''\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "fuzz.lock")
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		out, err := file.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed file: %v", err)
		}
		again, err := Parse(out, "fuzz.lock")
		if err != nil {
			t.Fatalf("written file does not parse: %v\n%s", err, out)
		}
		out2, err := again.Marshal()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("writing is not stable: %v\n%s\n---\n%s", err, out, out2)
		}
		for _, n := range file.Names() {
			a, _ := file.Pin(n)
			b, _ := again.Pin(n)
			if a != b {
				t.Fatalf("pin %s: %+v read back as %+v", n, a, b)
			}
		}
	})
}

// The example in docs/spec.md §21 is a lockfile exactly as fdl writes it.
func TestSpecExample(t *testing.T) {
	t.Parallel()
	spec, err := os.ReadFile(filepath.Join("..", "docs", "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(spec), "\n## 21. The lockfile")
	if !ok {
		t.Fatal("docs/spec.md has no §21")
	}
	_, block, ok := strings.Cut(sec, "```toml\n")
	if !ok {
		t.Fatal("§21 has no toml example")
	}
	example, _, _ := strings.Cut(block, "```")
	f, err := Parse([]byte(example), "docs/spec.md §21")
	if err != nil {
		t.Fatal(err)
	}
	if got := mustMarshal(t, f); string(got) != example {
		t.Fatalf("the example is not as fdl writes it:\n%s\nfdl writes:\n%s", example, got)
	}
	if p, _ := f.Pin("events"); p.Ref != "" || f.Len() != 2 {
		t.Fatalf("example read as %+v", f.Names())
	}
}
