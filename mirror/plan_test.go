package mirror

import (
	"errors"
	"testing"

	"github.com/fdl-dev/fdl/repo"
)

// TestPatterns: --ref names its kind, a trailing /* matches deeper names,
// other patterns are path.Match's, and a bad one is a usage error: also one
// no ref can have ("heads/../tags/x", "heads/main/"), which before reached
// the store as a key it refuses, after the summary of a mirror that
// copied nothing.
func TestPatterns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pat, name string
		want      bool
	}{
		{"tags/*", "tags/v1", true},
		{"tags/*", "tags/release/2025", true},
		{"refs/tags/*", "tags/v1", true},
		{"tags/v1.*", "tags/v1.2", true},
		{"tags/v1.*", "tags/v2.0", false},
		{"heads/main", "heads/main", true},
		{"heads/main", "heads/main2", false},
		{"tags/*", "heads/main", false},
		{"heads/*/x", "heads/a/x", true},
	} {
		ps, err := parsePatterns([]string{c.pat})
		if err != nil {
			t.Fatalf("%q: %v", c.pat, err)
		}
		if got := ps[0].matches(c.name); got != c.want {
			t.Errorf("%q matches %q = %v, want %v", c.pat, c.name, got, c.want)
		}
	}
	for _, bad := range []string{"main", "tags/", "heads/[", "v1", "heads/../tags/x", "heads/main/", "heads//x", "tags/*/../x", "heads/ma in", "tags/v1.", "heads/-x"} {
		if _, err := parsePatterns([]string{bad}); !errors.Is(err, repo.ErrInvalidArguments) {
			t.Errorf("--ref %q: %v, want a usage error", bad, err)
		}
	}
}
