package retention

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// ErrPath is wrapped by the error for a data-file path that gc cannot
// normalise; gc then deletes nothing (docs/spec.md §16).
var ErrPath = errors.New("data file path cannot be normalised")

// Place is where a data-file path points, normalised.
type Place struct {
	// Canonical is the normalised path as DuckDB reads it: "/abs/path" for
	// a local file, "scheme://bucket/key" for an object (scheme in lower
	// case, "gcs" written "gs").
	Canonical string
	// Key is the store key ("data/…") when the file lies in the
	// repository's data folder, else "" (outside the repository: gc never
	// deletes it, docs/spec.md §8). It is the key of DuckDB's reading
	// (Canonical) when that lies inside, else of another reading of the
	// text that does (Disputed).
	Key string
	// Aliases are the other store keys the same text may name inside the
	// repository, sorted: a file:// URL holding %XX escapes names the
	// literal file for DuckDB (which does not decode them) and the decoded
	// file for RFC 8089; an object URL's '#' is part of the key for DuckDB
	// and a fragment for URL parsers; a '?' starts DuckDB's query
	// parameters. gc protects every one and deletes none on the strength of
	// an alias alone.
	Aliases []string
	// Disputed says that DuckDB's reading of the path lies outside the
	// repository while another reading of the same text lies inside it (a
	// prefix holding '?', which DuckDB reads as the start of query
	// parameters): gc keeps the file at Key, verify reports it, and a push
	// refuses it, as no DuckDB reader reaches it by that path.
	Disputed bool
}

// Normaliser maps data-file paths, as DuckLake resolves them (DataFile
// ResolvedPath: relative paths appended to their table's, schema's and
// data_path), to store keys, so that one file spelled two ways in two
// catalogs is recognised as one. Rules (docs/spec.md §16):
//
//   - "file:///p", "file://localhost/p" and "file:/p" are the local path
//     "/p" (as DuckDB reads them);
//   - local paths: "//" runs collapse, "." and ".." elements resolve, a
//     trailing "/" goes; with FollowSymlinks, symbolic links in the folders
//     resolve too (a repository reached through a link);
//   - URLs: the scheme is lower-cased ("gcs" becomes "gs"), "//" runs in the
//     key collapse and a trailing "/" goes; a key with "." or ".." elements
//     is refused (object stores do not resolve them); on object stores
//     (s3, gs, az and their aliases) a '?' starts DuckDB's query
//     parameters and '#' is part of the key, as DuckDB's S3 reader takes
//     them (a file written through s3://b/p#x/data/ lands at "p#x/data/…");
//     on http(s) both end the path, as URLs say;
//   - every other reading of the same text (the path with its query or
//     fragment, the percent-decoded path) that lies inside the repository
//     is an alias, which gc protects too; when only such a reading lies
//     inside, the place is disputed (Place.Disputed);
//   - a path is inside the repository when it lies under one of the data
//     folder locations given to NewNormaliser (the data/ folder as reached
//     now, and as recorded in fdl.json at init: a moved folder keeps both;
//     with FollowSymlinks, also each location with its links resolved;
//     and each location's readings, so a location whose text holds '?' or
//     '#' is found however it is read), tried first as written and then
//     with links resolved, so a file under a linked folder inside data/
//     keeps the key the listing gives it.
//
// Refused with ErrPath: an empty path, control characters, a relative path
// (a relative data_path is relative to the reader's working directory,
// which gc cannot know), a file:// URL naming another host, a URL without
// "//". A Normaliser caches answers; it is not safe for concurrent use.
type Normaliser struct {
	roots    []string // canonical data-folder prefixes, each ending in "/"
	symlinks bool
	dirs     map[string]string // local folder -> with symbolic links resolved
	cache    map[string]placeOrErr
}

type placeOrErr struct {
	p   Place
	err error
}

// NewNormaliser returns a Normaliser for a repository whose data folder is
// reached at each of dataLocations ("/abs/repo/data/", "s3://b/p/data/").
// followSymlinks resolves symbolic links in local paths (folder stores).
// Errors: ErrPath for a location that does not normalise.
func NewNormaliser(dataLocations []string, followSymlinks bool) (*Normaliser, error) {
	n := &Normaliser{symlinks: followSymlinks, dirs: map[string]string{}, cache: map[string]placeOrErr{}}
	for _, loc := range dataLocations {
		if loc == "" {
			continue
		}
		c, alts, err := n.canonical(loc)
		if err != nil {
			return nil, fmt.Errorf("data folder location: %w", err)
		}
		// The readings of the location's text that name its data folder
		// (one cut at a '?' or '#' before it names some other folder, and
		// is no root).
		name := path.Base(strings.TrimRight(loc, "/"))
		var forms []string
		for _, f := range append([]string{c}, alts...) {
			if path.Base(f) == name {
				forms = append(forms, f)
			}
		}
		if len(forms) == 0 {
			forms = []string{c}
		}
		if followSymlinks && strings.HasPrefix(c, "/") {
			// The folder itself may be a link (data/ on a bigger disk):
			// catalog paths whose folders resolve land under its target.
			if r, err := filepath.EvalSymlinks(filepath.FromSlash(c)); err == nil {
				forms = append(forms, filepath.ToSlash(r))
			}
		}
		for _, f := range forms {
			root := strings.TrimSuffix(f, "/") + "/"
			if !slices.Contains(n.roots, root) {
				n.roots = append(n.roots, root)
			}
		}
	}
	if len(n.roots) == 0 {
		return nil, fmt.Errorf("no data folder location given: %w", ErrPath)
	}
	return n, nil
}

// Roots returns the canonical data-folder prefixes, each ending in "/".
func (n *Normaliser) Roots() []string { return append([]string(nil), n.roots...) }

// Place normalises p and says whether it lies in the repository's data
// folder. Errors: ErrPath naming p and the reason.
func (n *Normaliser) Place(p string) (Place, error) {
	if v, ok := n.cache[p]; ok {
		return v.p, v.err
	}
	pl, err := n.place(p)
	n.cache[p] = placeOrErr{pl, err}
	return pl, err
}

func (n *Normaliser) place(p string) (Place, error) {
	c, alts, err := n.canonical(p)
	if err != nil {
		return Place{}, err
	}
	pl := Place{Canonical: c, Key: n.key(c)}
	if n.symlinks {
		// The path as written, before links resolve, when it lies under a
		// data folder location: the listing of data/ names the file that
		// way even where a folder inside data/ is a link elsewhere.
		lex := *n
		lex.symlinks = false
		if lc, _, err := lex.canonical(p); err == nil {
			if k := n.key(lc); k != "" {
				pl.Key = k
			}
		}
	}
	for _, a := range alts {
		k := n.key(a)
		switch {
		case k == "" || k == pl.Key || slices.Contains(pl.Aliases, k):
		case pl.Key == "":
			// DuckDB reads the path outside the repository, while the
			// same text read another way lies inside it: never "outside,
			// not checked".
			pl.Key, pl.Disputed = k, true
		default:
			pl.Aliases = append(pl.Aliases, k)
		}
	}
	slices.Sort(pl.Aliases)
	return pl, nil
}

func (n *Normaliser) key(canonical string) string {
	for _, r := range n.roots {
		if rest, ok := strings.CutPrefix(canonical, r); ok && rest != "" {
			return "data/" + rest
		}
	}
	return ""
}

var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// canonical returns p's canonical form (DuckDB's reading) and the
// canonical forms of its other readings: for a file:// URL with %XX
// escapes, the percent-decoded one; for a URL, the readings with and
// without its query and fragment, and percent-decoded.
func (n *Normaliser) canonical(p string) (string, []string, error) {
	bad := func(why string) (string, []string, error) {
		return "", nil, fmt.Errorf("%q: %s: %w", p, why, ErrPath)
	}
	if p == "" {
		return bad("the path is empty")
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return bad("it holds a control character")
		}
	}
	m := schemeRE.FindStringSubmatch(p)
	switch {
	case m == nil || len(m[1]) == 1 && (len(p) < 3 || p[2] == '/' || p[2] == '\\'):
		// A plain path (a one-letter "scheme" is a Windows drive: C:/x).
		if m != nil {
			return n.local(strings.ReplaceAll(p, `\`, "/"), "")
		}
		if !strings.HasPrefix(p, "/") {
			return bad("it is a relative path, which DuckDB reads against the reader's working directory: a file added by a relative path (ducklake_add_data_files stores the path as given) or a relative data_path; add files by their absolute path, and give the catalog an absolute data_path")
		}
		return n.local(p, "")
	case strings.EqualFold(m[1], "file"):
		rest := p[len(m[0]):]
		switch {
		case strings.HasPrefix(rest, "///"):
			rest = rest[2:]
		case strings.HasPrefix(rest, "//"):
			host, tail, _ := strings.Cut(rest[2:], "/")
			if !strings.EqualFold(host, "localhost") {
				return bad(fmt.Sprintf("a file:// URL naming host %q is not a local path", host))
			}
			rest = "/" + tail
		case strings.HasPrefix(rest, "/"):
		default:
			return bad("a file: URL needs an absolute path (file:///abs/path)")
		}
		decoded := ""
		if strings.Contains(rest, "%") {
			if d, err := url.PathUnescape(rest); err == nil {
				decoded = d
			}
		}
		return n.local(rest, decoded)
	default:
		return canonicalURL(p[len(m[0]):], m[1], bad)
	}
}

// URL schemes DuckDB reads as one service (its httpfs and azure
// extensions): each maps to the scheme the repository's own locations use.
var schemeAliases = map[string]string{
	"s3": "s3", "s3a": "s3", "s3n": "s3", "r2": "s3",
	"gs": "gs", "gcs": "gs",
	"az": "az", "azure": "az", "abfs": "az", "abfss": "az", "azblob": "az",
}

// canonicalURL is canonical for a URL with scheme rawScheme and the text
// after the colon (rest). Object-store URLs are one canonical form
// whatever the spelling DuckDB accepts for them: the scheme's aliases
// (s3a, gcs, azure, abfss, …), any case of the scheme and the bucket, the
// account-qualified Azure forms, the public HTTPS endpoints of S3, GCS and
// Azure, "//" runs anywhere in the key (also right after the bucket), a
// trailing "/", and a query (DuckDB reads "?s3_region=…" as settings, not
// part of the key: the key without it is canonical, with it an alias).
// On an object store '#' belongs to the key (DuckDB's S3 reader sends it
// as part of the object's name); on http(s) it starts a fragment. The
// other reading of each, and the percent-decoded key, are the aliases.
func canonicalURL(rest, rawScheme string, bad func(string) (string, []string, error)) (string, []string, error) {
	scheme := strings.ToLower(rawScheme)
	rest, ok := strings.CutPrefix(rest, "//")
	if !ok {
		return bad("a URL needs scheme://bucket/key")
	}
	_, objectStore := schemeAliases[scheme]
	// DuckDB's reading: an object store's path ends at '?'; an http(s)
	// URL's at '?' or '#'.
	cut := "?#"
	if objectStore {
		cut = "?"
	}
	duck := rest
	if i := strings.IndexAny(rest, cut); i >= 0 {
		duck = rest[:i]
	}
	c, err := urlForm(scheme, duck)
	if err != nil {
		return bad(err.Error())
	}
	var alts []string
	add := func(text string) {
		a, err := urlForm(scheme, text)
		if err == nil && a != c && !slices.Contains(alts, a) {
			alts = append(alts, a)
		}
		if strings.Contains(text, "%") {
			if d, err := url.PathUnescape(text); err == nil && d != text {
				if a, err := urlForm(scheme, d); err == nil && a != c && !slices.Contains(alts, a) {
					alts = append(alts, a)
				}
			}
		}
	}
	add(duck)
	add(rest)
	for _, sep := range "?#" {
		if i := strings.IndexRune(rest, sep); i >= 0 {
			add(rest[:i])
		}
	}
	return c, alts, nil
}

// urlForm is the canonical "scheme://bucket/key" of a URL's text after
// "scheme://" (hostAndKey, without a query), or an error saying why it
// names no object.
func urlForm(scheme, hostAndKey string) (string, error) {
	host, key, _ := strings.Cut(hostAndKey, "/")
	host = strings.ToLower(host)
	key = strings.Trim(collapseSlashes(key), "/")
	if s, ok := schemeAliases[scheme]; ok {
		scheme = s
	} else if scheme == "http" || scheme == "https" {
		if s, h, k, ok := publicEndpoint(host, key); ok {
			scheme, host, key = s, h, k
		}
	}
	if scheme == "az" {
		host, key = azureContainer(host, key)
	}
	// A bucket or container taken from the path (path-style S3,
	// storage.googleapis.com/BUCKET, account.blob.core.windows.net/CONT)
	// is in any case too, like one in the host.
	host = strings.ToLower(host)
	if host == "" {
		return "", errors.New("the URL names no bucket or host")
	}
	for _, el := range strings.Split(key, "/") {
		if el == "." || el == ".." {
			return "", errors.New("an object key with '.' or '..' elements (object stores do not resolve them)")
		}
	}
	c := scheme + "://" + host
	if key != "" {
		c += "/" + key
	}
	return c, nil
}

// publicEndpoint maps the public HTTPS address of an object in S3, GCS or
// Azure Blob Storage to its object-store URL parts: virtual-hosted and
// path-style S3 (bucket.s3[.-region].amazonaws.com/key,
// s3[.-region].amazonaws.com/bucket/key), GCS
// (storage.googleapis.com/bucket/key, bucket.storage.googleapis.com/key)
// and Azure (account.blob.core.windows.net/container/key).
func publicEndpoint(host, key string) (scheme, bucket, k string, ok bool) {
	host, _, _ = strings.Cut(host, ":") // a port
	first, after, _ := strings.Cut(key, "/")
	switch {
	case strings.HasSuffix(host, ".amazonaws.com"):
		name := strings.TrimSuffix(host, ".amazonaws.com")
		if name == "s3" || strings.HasPrefix(name, "s3.") || strings.HasPrefix(name, "s3-") {
			return "s3", first, after, first != ""
		}
		if i := strings.Index(name, ".s3"); i > 0 {
			return "s3", name[:i], key, true
		}
	case host == "storage.googleapis.com":
		return "gs", first, after, first != ""
	case strings.HasSuffix(host, ".storage.googleapis.com"):
		return "gs", strings.TrimSuffix(host, ".storage.googleapis.com"), key, true
	case strings.HasSuffix(host, ".blob.core.windows.net"), strings.HasSuffix(host, ".dfs.core.windows.net"):
		return "az", host, key, true
	}
	return "", "", "", false
}

// azureContainer turns the account-qualified forms of an Azure URL into
// container and key: "account.blob.core.windows.net/container/key" and
// abfss's "container@account.dfs.core.windows.net/key".
func azureContainer(host, key string) (string, string) {
	if c, acct, ok := strings.Cut(host, "@"); ok && strings.Contains(acct, ".core.windows.net") {
		return c, key
	}
	if strings.HasSuffix(host, ".blob.core.windows.net") || strings.HasSuffix(host, ".dfs.core.windows.net") {
		c, k, _ := strings.Cut(key, "/")
		return c, k
	}
	return host, key
}

func collapseSlashes(s string) string {
	for strings.Contains(s, "//") {
		s = strings.ReplaceAll(s, "//", "/")
	}
	return s
}

// local cleans an absolute local path (and its decoded reading) and, with
// symlinks on, resolves links in its folders.
func (n *Normaliser) local(p, decoded string) (string, []string, error) {
	c := n.resolve(path.Clean(p))
	if decoded == "" {
		return c, nil, nil
	}
	if d := n.resolve(path.Clean(decoded)); d != c {
		return c, []string{d}, nil
	}
	return c, nil, nil
}

// resolve evaluates symbolic links in the folders of a clean absolute path:
// the longest existing ancestor folder is resolved, the rest appended.
func (n *Normaliser) resolve(p string) string {
	if !n.symlinks || p == "/" {
		return p
	}
	dir, base := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return p
	}
	return path.Join(n.resolveDir(dir), base)
}

func (n *Normaliser) resolveDir(dir string) string {
	if v, ok := n.dirs[dir]; ok {
		return v
	}
	v := dir
	if r, err := filepath.EvalSymlinks(filepath.FromSlash(dir)); err == nil {
		v = filepath.ToSlash(r)
	} else if os.IsNotExist(err) {
		parent, base := path.Split(dir)
		parent = strings.TrimSuffix(parent, "/")
		if parent != "" && parent != dir {
			v = path.Join(n.resolveDir(parent), base)
		}
	}
	n.dirs[dir] = v
	return v
}

// DirPlace is where the files of one folder lie in the repository: for a
// simple name p (see SimpleName), Place(dir + p).Key is KeyPrefix + p,
// without normalising each path (what a push's data check does for
// hundreds of thousands of files of one table).
type DirPlace struct {
	// KeyPrefix is the store key that names of the folder follow ("" when
	// the folder lies outside the repository: its files get no key).
	KeyPrefix string
	// Nested says the rule also holds for simple names with folders
	// ("year=2024/f.parquet"); false where symbolic links in those folders
	// could lead elsewhere, which only Place can tell.
	Nested bool
	// Disputed says DuckDB reads the folder outside the repository while
	// its text read another way lies inside (Place.Disputed).
	Disputed bool
}

// PlaceDir returns the DirPlace of dir, a path that file paths are
// appended to as DuckLake appends a relative file path to its table's path
// (plain concatenation: dir usually ends in "/"). Answers are cached.
// Errors: ErrPath as Place gives them for dir + a name.
func (n *Normaliser) PlaceDir(dir string) (DirPlace, error) {
	const probe = "x"
	pl, err := n.Place(dir + probe)
	if err != nil {
		return DirPlace{}, err
	}
	if pl.Key == "" {
		return DirPlace{}, nil
	}
	prefix, ok := strings.CutSuffix(pl.Key, probe)
	if !ok {
		return DirPlace{}, fmt.Errorf("%q: the key %q does not end in the name: %w", dir+probe, pl.Key, ErrPath)
	}
	dp := DirPlace{KeyPrefix: prefix, Nested: true, Disputed: pl.Disputed}
	if n.symlinks {
		// The key came from the path as written when that lies under a
		// data folder (place): then every simple name appends to it. Else
		// links were resolved, in the folder of dir+name only.
		lex := *n
		lex.symlinks = false
		if lc, _, err := lex.canonical(dir + probe); err != nil || n.key(lc) == "" {
			dp.Nested = false
		}
	}
	// A data-folder location inside the folder (a moved repository's
	// second location nested in the first) would give nested names
	// another key.
	folder := strings.TrimSuffix(pl.Canonical, probe)
	for _, r := range n.roots {
		if len(r) > len(folder) && strings.HasPrefix(r, folder) {
			dp.Nested = false
		}
	}
	return dp, nil
}

// SimpleName reports whether a relative file path appends to its folder's
// key unchanged (PlaceDir): not empty, not starting with "." or "/", no
// empty, "." or ".." element, no "//", no backslash or control character,
// no '?' or '#' (where a URL's readings part: on an object store DuckDB's
// reading of "a?b" is the object "a"). DuckDB's own file names
// ("ducklake-<uuid>.parquet", partition folders "k=v/") are simple.
func SimpleName(p string) bool {
	if p == "" || p[0] == '.' || p[0] == '/' || strings.HasSuffix(p, "/") {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c < 0x20 || c == 0x7f || c == '\\' || c == '?' || c == '#':
			return false
		case c == '/' && (p[i+1] == '/' || p[i+1] == '.'):
			return false // "//", "/." (".", "..", and names starting with ".")
		case c >= 0x80:
			return simpleUnicode(p)
		}
	}
	return true
}

// simpleUnicode: a name with non-ASCII bytes is simple only when it is
// valid UTF-8 without control characters (canonical refuses those).
func simpleUnicode(p string) bool {
	for _, r := range p {
		if r == unicode.ReplacementChar || unicode.IsControl(r) {
			return false
		}
	}
	return true
}
