// Package refs reads and moves refs: small files under refs/ that each hold
// one version id and a newline (DESIGN.md §2). Every move is a
// compare-and-swap on the store (DESIGN.md §4.3).
//
// Deleting a ref is portable across stores that ignore conditional deletes:
// it is a compare-and-swap to the tombstone line "deleted", which readers
// treat as absent (docs/spec.md §refs).
package refs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// Name is a full ref name: "refs/heads/main", "refs/tags/2025-final",
// "refs/requests/fix-1".
type Name string

// Ref name prefixes (docs/spec.md §refs).
const (
	HeadsPrefix    = "refs/heads/"
	TagsPrefix     = "refs/tags/"
	RequestsPrefix = "refs/requests/"
	// HeadKey is the store key of HEAD ("ref: refs/heads/main\n").
	HeadKey = "HEAD"
	// Tombstone is the content of a deleted ref.
	Tombstone = "deleted\n"
)

// Sentinel errors, wrapped with the ref name.
var (
	// ErrNotFound: no such ref (absent or deleted).
	ErrNotFound = errors.New("no such ref")
	// ErrExists: a ref that may only be created already exists.
	ErrExists = errors.New("ref already exists")
	// ErrCorrupt: the ref file is empty or does not hold a version id.
	ErrCorrupt = errors.New("ref is corrupt")
	// ErrInvalidName: the name breaks the naming rules.
	ErrInvalidName = errors.New("invalid ref name")
	// ErrConflict: the ref moved since it was read (lost a compare-and-swap).
	ErrConflict = errors.New("ref moved concurrently")
)

// Short returns the name without its "refs/heads/", "refs/tags/" or
// "refs/requests/" prefix.
func (n Name) Short() string {
	for _, p := range []string{HeadsPrefix, TagsPrefix, RequestsPrefix} {
		if strings.HasPrefix(string(n), p) {
			return strings.TrimPrefix(string(n), p)
		}
	}
	return string(n)
}

// IsBranch reports whether n is under refs/heads/.
func (n Name) IsBranch() bool { return strings.HasPrefix(string(n), HeadsPrefix) }

// IsTag reports whether n is under refs/tags/.
func (n Name) IsTag() bool { return strings.HasPrefix(string(n), TagsPrefix) }

// Kind returns "branch", "tag" or "request".
func (n Name) Kind() string {
	switch {
	case n.IsBranch():
		return "branch"
	case n.IsTag():
		return "tag"
	default:
		return "request"
	}
}

// Branch returns refs/heads/<short> after checking the name.
func Branch(short string) (Name, error) { return named(HeadsPrefix, "branch", short) }

// Tag returns refs/tags/<short> after checking the name.
func Tag(short string) (Name, error) { return named(TagsPrefix, "tag", short) }

// Request returns refs/requests/<short> after checking the name.
func Request(short string) (Name, error) { return named(RequestsPrefix, "request", short) }

func named(prefix, kind, short string) (Name, error) {
	if err := CheckShort(short); err != nil {
		return "", fmt.Errorf("%s name %q: %w", kind, short, err)
	}
	return Name(prefix + short), nil
}

// CheckShort checks a short ref name with Git's rules (git check-ref-format)
// plus fdl's own: no '@' (it separates a branch from a seq in revisions), no
// '~' or ':' (revision syntax), not HEAD or refs/…, no leading '-' (it
// would read as a flag), and not only hex digits and dashes (it would hide
// a version id: full-length hex ids are refused here; a shorter hex name
// is refused by the repository when it is a prefix of an existing id). Errors: ErrInvalidName wrapped with the
// rule broken.
func CheckShort(s string) error {
	bad := func(why string) error { return fmt.Errorf("%s: %w", why, ErrInvalidName) }
	switch {
	case s == "":
		return bad("the name is empty")
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/"):
		return bad("a name may not begin or end with '/'")
	case strings.Contains(s, "//"):
		return bad("a name may not contain '//'")
	case strings.Contains(s, ".."):
		return bad("a name may not contain '..'")
	case strings.HasSuffix(s, "."):
		return bad("a name may not end with '.'")
	case len(s) > 200:
		return bad("a name may be at most 200 bytes")
	case s == "HEAD" || strings.HasPrefix(s, "refs/"):
		return bad("HEAD and names beginning with 'refs/' are reserved")
	case strings.HasPrefix(s, "-"):
		return bad("a name may not begin with '-'")
	case LooksLikeID(s) && len(strings.ReplaceAll(s, "-", "")) == 32:
		return bad("a name shaped like a version id would hide that version")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return bad(fmt.Sprintf("a name may not contain spaces or control characters (found %q)", r))
		}
		if strings.ContainsRune(`~^:?*[\@`, r) {
			return bad(fmt.Sprintf("a name may not contain %q", r))
		}
	}
	for _, el := range strings.Split(s, "/") {
		if strings.HasPrefix(el, ".") {
			return bad("a name element may not begin with '.'")
		}
		if strings.HasSuffix(el, ".lock") {
			return bad("a name element may not end with '.lock'")
		}
	}
	return nil
}

// Ref is one ref as read: its name, the version it holds and the store token
// of the read (for a later compare-and-swap).
type Ref struct {
	Name  Name        `json:"name"`
	ID    version.ID  `json:"id"`
	Token store.Token `json:"-"`
}

// Refs reads and moves the refs of one repository store.
type Refs struct{ st store.Store }

// New returns the refs of a store.
func New(st store.Store) *Refs { return &Refs{st: st} }

// Read returns the ref n. A missing or deleted ref returns ErrNotFound (with
// the token of the tombstone in Ref.Token, so Create can replace it); an empty
// or garbage ref returns ErrCorrupt naming the content.
func (r *Refs) Read(ctx context.Context, n Name) (Ref, error) {
	b, tok, err := store.ReadAll(ctx, r.st, string(n))
	if errors.Is(err, store.ErrNotExist) {
		return Ref{Name: n}, fmt.Errorf("%s: %w", n, ErrNotFound)
	}
	if err != nil {
		return Ref{}, fmt.Errorf("read ref %s: %w", n, err)
	}
	ref := Ref{Name: n, Token: tok}
	if string(b) == Tombstone {
		return ref, fmt.Errorf("%s: %w", n, ErrNotFound)
	}
	id, err := parseContent(b)
	if err != nil {
		return ref, fmt.Errorf("ref %s (%s): %w; %v: a ref must hold one version id and a newline; restore it from a backup, point a branch at a version again (fdl branch -f NAME REV --backwards; fdl reflog NAME shows what it held), or delete that file if the ref is not needed", n, r.st.Location(string(n)), ErrCorrupt, err)
	}
	ref.ID = id
	return ref, nil
}

func parseContent(b []byte) (version.ID, error) {
	if len(b) == 0 {
		return "", errors.New("it is empty")
	}
	if !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 {
		return "", fmt.Errorf("it holds %q, not one version id and a newline", truncate(b))
	}
	id, err := version.ParseID(string(b[:len(b)-1]))
	if err != nil {
		return "", fmt.Errorf("it holds %q, not a version id", truncate(b))
	}
	return id, nil
}

func truncate(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// Update moves ref n to id if it still holds the version read with token old
// (store.NoToken: only if it does not exist). If the store reports a
// conflict, the ref is read once more: if it holds id, the write won (a
// retried request can report a conflict for a write that succeeded,
// STORES.md). Errors: ErrConflict.
func (r *Refs) Update(ctx context.Context, n Name, old store.Token, id version.ID) error {
	_, err := r.st.Swap(ctx, string(n), old, []byte(string(id)+"\n"))
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("move ref %s: %w", n, err)
	}
	if cur, rerr := r.Read(ctx, n); rerr == nil && cur.ID == id {
		return nil
	}
	return fmt.Errorf("%s: %w", n, ErrConflict)
}

// Create makes ref n point at id only if it does not exist (or was deleted).
// Errors: ErrExists naming the version it holds; ErrConflict if another
// writer created it at the same time.
func (r *Refs) Create(ctx context.Context, n Name, id version.ID) error {
	cur, err := r.Read(ctx, n)
	switch {
	case err == nil:
		return fmt.Errorf("%s already holds version %s: %w", n, cur.ID, ErrExists)
	case errors.Is(err, ErrNotFound):
	default:
		return err
	}
	if err := r.Update(ctx, n, cur.Token, id); err != nil {
		if errors.Is(err, ErrConflict) {
			if now, rerr := r.Read(ctx, n); rerr == nil {
				return fmt.Errorf("%s already holds version %s: %w", n, now.ID, ErrExists)
			}
		}
		return err
	}
	return nil
}

// Delete deletes ref n if it still holds the version read with token old, by
// a compare-and-swap to the tombstone. Errors: ErrConflict.
func (r *Refs) Delete(ctx context.Context, n Name, old store.Token) error {
	_, err := r.st.Swap(ctx, string(n), old, []byte(Tombstone))
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%s: %w", n, ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("delete ref %s: %w", n, err)
	}
	return nil
}

// List returns the refs under prefix ("refs/heads/", "refs/tags/", "refs/")
// sorted by name, skipping deleted ones. Refs that cannot be read are
// returned in bad (each error names the ref); good ones are still listed.
func (r *Refs) List(ctx context.Context, prefix string) (good []Ref, bad []error, err error) {
	var names []Name
	err = r.st.List(ctx, prefix, func(o store.ObjectInfo) error {
		names = append(names, Name(o.Key))
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list refs under %s: %w", prefix, err)
	}
	for _, n := range names {
		ref, rerr := r.Read(ctx, n)
		switch {
		case rerr == nil:
			good = append(good, ref)
		case errors.Is(rerr, ErrNotFound):
		default:
			bad = append(bad, rerr)
		}
	}
	return good, bad, nil
}

// Head returns the branch HEAD names. Errors: ErrCorrupt if HEAD is not
// "ref: refs/heads/<name>\n".
func (r *Refs) Head(ctx context.Context) (Name, error) {
	b, _, err := store.ReadAll(ctx, r.st, HeadKey)
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "ref: "+HeadsPrefix) || !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		return "", fmt.Errorf("HEAD holds %q, not \"ref: refs/heads/<branch>\": %w", truncate(b), ErrCorrupt)
	}
	n := Name(strings.TrimSuffix(strings.TrimPrefix(s, "ref: "), "\n"))
	if err := CheckShort(n.Short()); err != nil {
		return "", fmt.Errorf("HEAD names %q: %v: %w", n, err, ErrCorrupt)
	}
	return n, nil
}

// HeadContent returns what HEAD holds when it names branch n.
func HeadContent(n Name) []byte { return []byte("ref: " + string(n) + "\n") }

// LooksLikeID reports whether s could be read as a version id or prefix: at
// least 4 hex digits and nothing but hex digits and dashes.
func LooksLikeID(s string) bool {
	digits := 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			digits++
		case c == '-':
		default:
			return false
		}
	}
	return digits >= 4
}
