package folder

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
)

// Backend is the folder kind of store for store.Register: a plain folder
// path (absolute, or relative to the working directory) and
// file:///absolute/path (file://localhost/… too) open a *Store on that
// folder, which need not exist yet.
func Backend() store.Backend {
	return store.Backend{Schemes: []string{"", "file"}, Forms: []string{"a folder path", "file://"}, Open: openURL}
}

// openURL opens a plain path (u.Scheme "") or file:///abs/path.
func openURL(_ context.Context, u *url.URL, raw string) (store.Store, error) {
	if u.Scheme == "" {
		return open(u.Path)
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return nil, fmt.Errorf("store URL %q: file:// URLs name a local folder: use file:///absolute/path", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("store URL %q: file:// URLs take no user, query or fragment", raw)
	}
	p := u.Path
	if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:] // file:///C:/data -> C:/data
	}
	p = filepath.FromSlash(p)
	if p == "" || !filepath.IsAbs(p) {
		return nil, fmt.Errorf("store URL %q: file:// needs an absolute path (file:///absolute/path)", raw)
	}
	return open(p)
}

// open is Open as a store.Store: nil, not a typed nil *Store, on error.
func open(root string) (store.Store, error) {
	s, err := Open(root)
	if err != nil {
		return nil, err
	}
	return s, nil
}
