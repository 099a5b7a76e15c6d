package repo

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
)

// Repositories never nest (docs/spec.md §2): a repository inside another's
// folder (in its data/, above all) would be taken by the outer one's gc
// for files no catalog lists, and deleted once older than the grace
// period. Init refuses both ways — a location inside a repository
// (ancestorRepository), and one around a repository (any object there
// refuses init) — and gc never deletes what looks like another repository
// (package gc).

// ancestorRepository returns the location of a repository whose folder
// holds the store location rawURL (a folder path or a store URL): the
// nearest ancestor with a fdl.json object, or "" when there is none. On a
// folder store the ancestors of the path as given and with its symbolic
// links resolved are both looked at; on an object store, every prefix of
// the URL's path in the same bucket. It costs one lookup per ancestor.
func ancestorRepository(ctx context.Context, rawURL string) (string, error) {
	for _, anc := range ancestorLocations(rawURL) {
		st, err := store.Open(ctx, anc)
		if err != nil {
			continue // not a location this program opens: nothing there to nest in
		}
		_, err = st.Stat(ctx, ConfigKey)
		loc := st.Location("")
		st.Close()
		if err == nil {
			return loc, nil
		}
		if !errors.Is(err, store.ErrNotExist) {
			return "", fmt.Errorf("look for a repository around %s at %s: %w", store.RedactURL(rawURL), store.RedactURL(anc), err)
		}
	}
	return "", nil
}

// ancestorLocations returns the locations strictly above rawURL, nearest
// first: parent folders of a local path (as given, then with its links
// resolved), or the URL with its path cut one element at a time (query
// kept) down to the bucket's root.
func ancestorLocations(rawURL string) []string {
	var out []string
	if !strings.Contains(rawURL, "://") || strings.HasPrefix(strings.ToLower(rawURL), "file://") {
		p := rawURL
		if u, err := url.Parse(rawURL); err == nil && strings.EqualFold(u.Scheme, "file") {
			p = filepath.FromSlash(u.Path)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil
		}
		seen := map[string]bool{abs: true}
		add := func(start string) {
			for d := filepath.Dir(start); !seen[d]; d = filepath.Dir(d) {
				seen[d] = true
				out = append(out, d)
			}
		}
		add(abs)
		// The nearest existing ancestor with its links resolved: a folder
		// reached through a symbolic link may lie inside a repository.
		for d := abs; ; d = filepath.Dir(d) {
			if real, err := filepath.EvalSymlinks(d); err == nil {
				if real != d {
					if !seen[real] {
						seen[real] = true
						out = append(out, real)
					}
					add(real)
				}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
		return out
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	p := strings.Trim(u.Path, "/")
	for p != "" {
		p = path.Dir(p)
		if p == "." {
			p = ""
		}
		v := *u
		v.RawPath = ""
		v.Path = "/" + p
		if p == "" {
			v.Path = ""
		}
		out = append(out, v.String())
	}
	return out
}
