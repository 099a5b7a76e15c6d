package refs

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// MinShort is the fewest hex digits of a short id: the 12 digits of a
// UUIDv7's millisecond timestamp (docs/spec.md §3). Two versions share
// them only when their ids were made in the same millisecond, so a short
// id stays unambiguous as the repository grows: later versions get later
// timestamps. (Git's abbreviations, which grow with the repository, would
// not: a UUIDv7's first 8 digits are shared by every id made in the same
// 65 seconds.)
const MinShort = 12

// maxWindows is the most listings one Abbrev makes, and how many run at
// once.
const maxWindows = 16

// Abbrev shortens version ids for people. The zero Abbrev shows full ids.
type Abbrev struct{ n map[version.ID]int }

// Short returns id's short form: its first hex digits, as many as Abbrev
// found for it, dashes kept where they fall; the full id for an id it was
// not given; "" for "".
func (a Abbrev) Short(id version.ID) string {
	n, ok := a.n[id]
	if !ok || n >= 32 {
		return string(id)
	}
	s, digits := string(id), 0
	for i, c := range s {
		if c != '-' {
			digits++
		}
		if digits == n {
			return s[:i+1]
		}
	}
	return s
}

// AbbrevOf returns the short ids of ids among known (any order; ids count
// as known too): each id's first MinShort hex digits, or one more digit
// than it shares with any other known id beginning with the same
// MinShort digits.
func AbbrevOf(ids, known []version.ID) Abbrev {
	byMS := map[string][]string{}
	add := func(id version.ID) {
		h := id.Hex()
		if len(h) != 32 {
			return
		}
		ms := h[:MinShort]
		for _, o := range byMS[ms] {
			if o == h {
				return
			}
		}
		byMS[ms] = append(byMS[ms], h)
	}
	for _, id := range known {
		add(id)
	}
	for _, id := range ids {
		add(id)
	}
	a := Abbrev{n: make(map[version.ID]int, len(ids))}
	for _, id := range ids {
		if id == "" {
			continue
		}
		h, n := id.Hex(), MinShort
		if len(h) != 32 {
			a.n[id] = 32
			continue
		}
		for _, o := range byMS[h[:MinShort]] {
			c := 0
			for c < len(h) && h[c] == o[c] {
				c++
			}
			if c < len(h) && c+1 > n {
				n = c + 1
			}
		}
		a.n[id] = n
	}
	return a
}

// Abbrev returns the short ids of ids, the versions about to be shown
// (AbbrevOf among the store's versions and ids: local, unpushed versions
// count). It reads no more than the store's versions made near them: the
// ids are grouped by their first p hex digits, with the largest p <=
// MinShort that makes at most 16 groups (a window of time each), and each
// group is one listing (Records.IDsWithPrefix), all at once. A log of the
// newest versions lists the windows they were made in; a log of a year,
// at most 16 windows of weeks. On a store that cannot list, ids are shown
// whole. Errors: the store's.
func (m *Manager) Abbrev(ctx context.Context, ids ...version.ID) (Abbrev, error) {
	known, err := m.near(ctx, ids)
	if errors.Is(err, store.ErrCannotList) {
		a := Abbrev{n: map[version.ID]int{}}
		for _, id := range ids {
			a.n[id] = 32
		}
		return a, nil
	}
	if err != nil {
		return Abbrev{}, err
	}
	return AbbrevOf(ids, known), nil
}

// near returns the store's versions in the windows of time of ids (see
// Abbrev).
func (m *Manager) near(ctx context.Context, ids []version.ID) ([]version.ID, error) {
	prefixes := Windows(ids, maxWindows)
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		known []version.ID
		first error
	)
	for _, p := range prefixes {
		wg.Add(1)
		go func(p string) {
			defer wg.Done()
			got, err := m.recs.IDsWithPrefix(ctx, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			known = append(known, got...)
		}(p)
	}
	wg.Wait()
	return known, first
}

// Windows groups ids by their first p hex digits, with the largest p <=
// MinShort that makes at most max groups, and returns the groups'
// prefixes, sorted. Every id's MinShort-digit prefix starts with one of
// them. Ids that are not 32 hex digits are left out.
func Windows(ids []version.ID, max int) []string {
	var hexes []string
	for _, id := range ids {
		if h := id.Hex(); len(h) == 32 {
			hexes = append(hexes, h)
		}
	}
	if len(hexes) == 0 {
		return nil
	}
	sort.Strings(hexes)
	// distinct returns the p-digit prefixes of the sorted hexes, in order,
	// or nil once there are more than max (and p > 1).
	distinct := func(p int) []string {
		var out []string
		for i, h := range hexes {
			if i > 0 && h[:p] == hexes[i-1][:p] {
				continue
			}
			if len(out) == max && p > 1 {
				return nil
			}
			out = append(out, h[:p])
		}
		return out
	}
	for p := MinShort; ; p-- {
		if out := distinct(p); out != nil {
			return out
		}
	}
}

// DashedPrefix returns the start of a canonical id (dashes after the 8th,
// 12th, 16th and 20th hex digit) holding the hex digits hex: the store key
// prefix of the versions whose ids begin with them.
func DashedPrefix(hex string) string {
	var b strings.Builder
	for i, c := range hex {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b.WriteByte('-')
		}
		b.WriteRune(c)
	}
	return b.String()
}
