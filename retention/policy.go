// Package retention decides what a repository keeps and what garbage
// collection may delete (docs/spec.md §5.1, §8, §10.7, §13–§16).
//
// It holds the formats fdl writes for retention — the policy
// (retention/policy.json), the floor (retention/floor.json) and the
// retirement marker (versions/<id>/retired.json) — the normalisation of
// data-file paths, and the planner: a pure computation from what the store
// holds (refs, ref logs, version folders, catalog data-file tables, the
// data/ listing) to what gc does. It performs no I/O: package repo reads the
// store, calls the planner, and carries the plan out step by step.
//
// The safety model, as docs/spec.md §10.7 states it: first move the retention
// floor (logical, always safe), then delete bytes below it; the second step
// refuses to run ahead of the first. Nothing a version in retention needs is
// ever deleted: no catalog of a kept version, no data file a kept catalog
// can read at any snapshot at or after its floor.
package retention

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Store keys of the retention objects (docs/spec.md §13, §14, §15).
const (
	// PolicyKey holds the policy. It is replaced only by compare-and-swap.
	PolicyKey = "retention/policy.json"
	// FloorKey holds the floor. It is replaced only by compare-and-swap.
	FloorKey = "retention/floor.json"
	// MarkerFile is the retirement marker inside versions/<id>/, written
	// create-only before the version's catalog and dataset.json are deleted.
	MarkerFile = "retired.json"
	// Format is the format number of the policy, the floor and the marker.
	// A reader refuses a larger number.
	Format = 1
)

// DefaultGrace is the grace period of a repository without a policy: 7 days.
// Data files no catalog lists, incomplete versions and versions no ref or
// ref log reaches are deleted only when older than the grace period by the
// store's own modification time.
const DefaultGrace = Duration(7 * 24 * time.Hour)

// Young reports whether an object last modified at mod is still within
// the grace period at now: a write that may still be in progress, which gc
// leaves alone. An unknown modification time (the zero time: a store that
// does not tell it, such as an http(s) listing) counts as young, so that gc
// never deletes a file it cannot date.
func Young(now, mod time.Time, grace Duration) bool {
	return mod.IsZero() || now.Sub(mod) <= time.Duration(grace)
}

// MinGrace is the shortest grace period a policy is set to without being
// asked for on purpose (repo.PolicyChange.AllowShortGrace, fdl retention
// --allow-short-grace): below it, gc deletes the data files of working
// catalogs written and not yet committed and pushed within that time. A
// push is safe at any grace (gc and push exclude each other, docs/spec.md
// §16); the work in a working catalog is not.
const MinGrace = Duration(24 * time.Hour)

// ErrInvalid is wrapped by every error about a policy, floor or marker that
// does not parse or breaks a rule, and by invalid durations.
var ErrInvalid = errors.New("invalid retention setting")

// Duration is a non-negative length of time, written in JSON and on the
// command line as a number with a unit: "30d", "12h", "90m", "45s", "2w",
// or a sum such as "1d12h". Units: w (7 days), d (24 hours), h, m, s. The
// canonical form (String) uses the largest unit up to days that divides it
// exactly.
type Duration time.Duration

var durationUnits = []struct {
	name string
	d    time.Duration
}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}

// ParseDuration reads a Duration ("30d", "1d12h", "0"). Errors: ErrInvalid
// naming the text and the accepted units.
func ParseDuration(s string) (Duration, error) {
	bad := func(why string) (Duration, error) {
		return 0, fmt.Errorf("duration %q: %s (write a number and a unit: 2w, 30d, 12h, 90m, 45s, or a sum such as 1d12h): %w", s, why, ErrInvalid)
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return bad("it is empty")
	}
	if t == "0" {
		return 0, nil
	}
	var total time.Duration
	for t != "" {
		i := 0
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		if i == 0 {
			return bad("expected a number")
		}
		n, err := strconv.ParseInt(t[:i], 10, 64)
		if err != nil {
			return bad("the number is too large")
		}
		t = t[i:]
		j := 0
		for j < len(t) && (t[j] < '0' || t[j] > '9') {
			j++
		}
		name := t[:j]
		t = t[j:]
		var unit time.Duration
		for _, u := range durationUnits {
			if name == u.name {
				unit = u.d
				break
			}
		}
		switch {
		case name == "":
			return bad("expected a unit after " + strconv.FormatInt(n, 10))
		case unit == 0:
			return bad(fmt.Sprintf("unknown unit %q", name))
		}
		if n > int64((1<<63-1)/unit) || total > time.Duration(1<<63-1)-time.Duration(n)*unit {
			return bad("it is too long")
		}
		total += time.Duration(n) * unit
	}
	return Duration(total), nil
}

// String returns the canonical form: "0s" for zero, else the largest unit
// up to days that divides it ("30d", "36h", "90m"; 2w is "14d").
func (d Duration) String() string {
	if d <= 0 {
		return "0s"
	}
	for _, u := range durationUnits[1:] {
		if time.Duration(d)%u.d == 0 {
			return strconv.FormatInt(int64(time.Duration(d)/u.d), 10) + u.name
		}
	}
	return time.Duration(d).String()
}

// MarshalJSON writes the canonical form as a JSON string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a JSON string in ParseDuration's syntax.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // as if left out: the field keeps its default
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s is not a string such as \"30d\": %w", b, ErrInvalid)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Policy is retention/policy.json: which versions keep their catalog
// (docs/spec.md §13). A version is *in retention* when any rule keeps it:
//
//   - the version a branch, tag or request ref points at (always);
//   - KeepLast > 0: the first KeepLast versions of each branch's
//     first-parent history, its head included;
//   - KeepWithin > 0: versions a ref or a ref log reaches that were
//     created (record created_at) less than KeepWithin before now;
//   - with both rules off (the default), every version a ref or ref log
//     reaches.
//
// Versions leaving retention lose their catalog and dataset.json, never
// their record. Grace applies to what no catalog describes: see DefaultGrace.
type Policy struct {
	Format int `json:"format"`
	// KeepLast is the number of versions kept on each branch's first-parent
	// history (0: the rule is off).
	KeepLast int `json:"keep_last"`
	// KeepWithin keeps versions younger than this (0: the rule is off).
	KeepWithin Duration `json:"keep_within"`
	// Grace is the age (by the store's modification time) below which gc
	// never deletes a data file no catalog lists, an incomplete version, or
	// a version no ref or ref log reaches.
	Grace Duration `json:"grace"`
	// UpdatedAt and UpdatedBy say who set the policy last (informative).
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// DefaultPolicy is the policy of a repository without retention/policy.json:
// keep every version, grace DefaultGrace.
func DefaultPolicy() Policy { return Policy{Format: Format, Grace: DefaultGrace} }

// KeepsEverything reports whether both rules are off: every version a ref or
// ref log reaches stays in retention.
func (p Policy) KeepsEverything() bool { return p.KeepLast == 0 && p.KeepWithin == 0 }

// Validate checks the policy's fields. Errors: ErrInvalid naming the field.
func (p Policy) Validate() error {
	switch {
	case p.Format < 1 || p.Format > Format:
		return fmt.Errorf("retention policy format %d is not one this fdl reads (1..%d): upgrade fdl: %w", p.Format, Format, ErrInvalid)
	case p.KeepLast < 0:
		return fmt.Errorf("retention policy keep_last %d: it must be 0 (off) or a positive number of versions: %w", p.KeepLast, ErrInvalid)
	case p.KeepWithin < 0 || p.Grace < 0:
		return fmt.Errorf("retention policy: durations may not be negative: %w", ErrInvalid)
	}
	return nil
}

// Marshal encodes the policy as indented JSON with a trailing newline.
func (p Policy) Marshal() ([]byte, error) { return marshal(p) }

// ParsePolicy decodes and validates retention/policy.json; a field left
// out has its default (grace: DefaultGrace; the rules: off). Errors:
// ErrInvalid.
func ParsePolicy(b []byte) (Policy, error) {
	p := Policy{Grace: DefaultGrace}
	if err := json.Unmarshal(b, &p); err != nil {
		if errors.Is(err, ErrInvalid) { // a field's own check (a duration) said what is wrong
			return Policy{}, fmt.Errorf("%s: %w", PolicyKey, err)
		}
		return Policy{}, fmt.Errorf("%s does not parse: %v: %w", PolicyKey, err, ErrInvalid)
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Rules describes the policy in words, one rule a line, for people.
func (p Policy) Rules() []string {
	out := []string{"keep every version a branch, tag or request ref points at"}
	if p.KeepsEverything() {
		out = append(out, "keep every version a ref or ref log reaches (no rule retires anything)")
	}
	if p.KeepLast > 0 {
		out = append(out, fmt.Sprintf("keep the last %d version(s) of each branch", p.KeepLast))
	}
	if p.KeepWithin > 0 {
		out = append(out, fmt.Sprintf("keep versions created in the last %s", p.KeepWithin))
	}
	out = append(out, fmt.Sprintf("grace period %s for files no catalog lists, incomplete versions and versions no ref or ref log reaches", p.Grace))
	return out
}

func marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// LeavesAt returns when the policy's time rule stops keeping a version
// created (record created_at) at created: created + KeepWithin. ok is
// false when no rule dates its leaving: with keep_within off, a version
// leaves only when no ref points at it and keep_last no longer counts it
// (after a number of pushes, not at a time), or never when every rule is
// off. The date is the earliest the version can leave (docs/spec.md §13):
// past it, it stays while a branch, tag or request points at it, or while
// keep_last keeps it, and it leaves at the first gc after that.
func (p Policy) LeavesAt(created time.Time) (at time.Time, ok bool) {
	if p.KeepWithin <= 0 {
		return time.Time{}, false
	}
	return created.Add(time.Duration(p.KeepWithin)), true
}
