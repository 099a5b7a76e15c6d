package mirror

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
)

// pattern is one --ref: a name below refs/ ("heads/main") or a pattern
// ("tags/*").
type pattern struct {
	text string
	glob bool
}

// refsPrefix is the folder of every ref.
const refsPrefix = "refs/"

// kinds are the ref folders a mirror copies.
var kinds = []string{"heads/", "tags/", "requests/"}

// parsePatterns checks the --ref patterns: each names its kind (heads/,
// tags/ or requests/; a leading refs/ is dropped), is a valid
// path.Match pattern, and below its kind follows the ref name rules
// (refs.CheckShort, wildcards read as letters). Errors wrap repo.ErrInvalidArguments.
func parsePatterns(in []string) ([]pattern, error) {
	var out []pattern
	for _, p := range in {
		t := strings.TrimPrefix(p, refsPrefix)
		ok := false
		for _, k := range kinds {
			ok = ok || (strings.HasPrefix(t, k) && len(t) > len(k))
		}
		if !ok {
			return nil, fmt.Errorf("--ref %q: name the ref with its kind (heads/NAME, tags/NAME, requests/NAME; patterns such as tags/* work): %w", p, repo.ErrInvalidArguments)
		}
		if _, err := path.Match(t, ""); err != nil {
			return nil, fmt.Errorf("--ref %q: %v: %w", p, err, repo.ErrInvalidArguments)
		}
		// The name below its kind follows the ref name rules, a
		// pattern's wildcards read as letters ("heads/../x" or
		// "heads/main/" can name no ref, and would reach the store as
		// keys it refuses).
		short := strings.Map(func(r rune) rune {
			if strings.ContainsRune(`*?[]\`, r) {
				return 'x'
			}
			return r
		}, t[strings.Index(t, "/")+1:])
		if err := refs.CheckShort(short); err != nil {
			return nil, fmt.Errorf("--ref %q: %v: %w", p, err, repo.ErrInvalidArguments)
		}
		out = append(out, pattern{text: t, glob: strings.ContainsAny(t, `*?[\`)})
	}
	return out, nil
}

// matches reports whether the ref name (below refs/) matches p: by
// path.Match, and a trailing "/*" matches any name below its folder.
func (p pattern) matches(name string) bool {
	if ok, _ := path.Match(p.text, name); ok {
		return true
	}
	return strings.HasSuffix(p.text, "/*") && !strings.ContainsAny(p.text[:len(p.text)-2], `*?[\`) && strings.HasPrefix(name, p.text[:len(p.text)-1])
}

// plannedRef is one ref to mirror: what the source holds, what the
// destination holds, and what the mirror will do.
type plannedRef struct {
	name   refs.Name
	src    version.ID
	dst    version.ID // "" when the destination has no such ref
	move   bool       // the ref moves once its versions are copied
	back   bool       // ... backwards (Options.Backwards)
	err    error      // refused (nothing moves for it)
	result RefResult
}

// plan reads the refs to mirror (srcRefs, as sourceRefs read them at the
// source) at the destination, and decides each
// move by what the two hold: up to date; a create; a forward move (the
// destination's version is an ancestor of the source's, by the source's
// history); a move back (Backwards); or a refusal (a tag holding another
// version, a branch that moved at the destination on its own, a damaged
// ref). The decision is made again at the compare-and-swap (moveRef).
func (m *mirror) plan(ctx context.Context, srcRefs []refs.Ref) ([]*plannedRef, error) {
	var out []*plannedRef
	for _, r := range srcRefs {
		p := &plannedRef{name: r.Name, src: r.ID, result: RefResult{Ref: string(r.Name), New: r.ID}}
		out = append(out, p)
		cur, err := m.dst.Refs().Read(ctx, r.Name)
		switch {
		case errors.Is(err, refs.ErrNotFound):
			p.move, p.result.Action = true, ActCreated
			continue
		case errors.Is(err, refs.ErrCorrupt):
			p.refuse(err)
			continue
		case err != nil:
			return nil, err
		}
		p.dst, p.result.Old = cur.ID, cur.ID
		if cur.ID == r.ID {
			p.result.Action = ActUpToDate
			m.known[cur.ID] = true
			continue
		}
		if r.Name.IsTag() {
			p.refuse(&TagClashError{Source: m.src.Where(), Dest: m.dst.Where(), Exists: &refs.ExistsError{Ref: r.Name, Holds: cur.ID, Wanted: r.ID}})
			continue
		}
		anc, err := refs.IsAncestor(ctx, m.src, cur.ID, r.ID)
		notHeld := err != nil && (errors.Is(err, refs.ErrVersionMissing) || errors.Is(err, refs.ErrUnknownRev))
		if err != nil && !notHeld {
			return nil, fmt.Errorf("mirror %s: %w", r.Name, err)
		}
		switch {
		case anc:
			p.move, p.result.Action = true, ActMoved
			m.known[cur.ID] = true
		case m.o.Backwards:
			p.move, p.back, p.result.Action = true, true, ActMovedBack
		default:
			p.refuse(&DivergedError{Ref: r.Name, Source: m.src.Where(), Dest: m.dst.Where(), Holds: cur.ID, Wanted: r.ID, NotInSource: notHeld})
		}
	}
	return out, nil
}

// refuse marks p refused with err.
func (p *plannedRef) refuse(err error) {
	p.move, p.err = false, err
	p.result.Action, p.result.Error = ActRefused, err.Error()
}

// sourceRefs returns the source's refs to mirror, sorted by name: every
// branch and tag when pats is empty, else those matching a pattern. Names
// without patterns are read one by one (a web server needs nothing
// else); a pattern needs a listing. A damaged source ref is an error
// naming it; a ref named that the source lacks is refs.ErrNotFound.
func (m *mirror) sourceRefs(ctx context.Context, pats []pattern) ([]refs.Ref, error) {
	glob := len(pats) == 0
	for _, p := range pats {
		glob = glob || p.glob
	}
	var out []refs.Ref
	if !glob {
		for _, p := range pats {
			r, err := m.src.Refs().Read(ctx, refs.Name(refsPrefix+p.text))
			if err != nil {
				return nil, fmt.Errorf("mirror from %s: %w", m.src.Where(), err)
			}
			out = append(out, r)
		}
	} else {
		prefixes := []string{refs.HeadsPrefix, refs.TagsPrefix}
		if len(pats) > 0 {
			prefixes = []string{refsPrefix}
		}
		for _, prefix := range prefixes {
			good, bad, err := m.src.Refs().List(ctx, prefix)
			if errors.Is(err, store.ErrCannotList) {
				texts := make([]string, len(pats))
				for i, p := range pats {
					texts[i] = p.text
				}
				return nil, &CannotListError{Source: m.src.Where(), Patterns: texts}
			}
			if err != nil {
				return nil, err
			}
			for _, r := range good {
				if matchesAny(pats, strings.TrimPrefix(string(r.Name), refsPrefix)) {
					out = append(out, r)
				}
			}
			if len(bad) > 0 {
				return nil, fmt.Errorf("mirror from %s: %w", m.src.Where(), bad[0])
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// matchesAny reports whether name (below refs/) matches one of pats, or
// pats is empty.
func matchesAny(pats []pattern, name string) bool {
	if len(pats) == 0 {
		return true
	}
	for _, p := range pats {
		if p.matches(name) {
			return true
		}
	}
	return false
}
