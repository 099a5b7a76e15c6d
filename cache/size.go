package cache

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultMaxBytes is the size limit of a cache when none is set: 10 GiB.
const DefaultMaxBytes = 10 << 30

// ParseSize reads a size in bytes as people write it: a number, optionally
// with a fraction, and a unit: B, KB, MB, GB, TB (powers of 1000), KiB,
// MiB, GiB, TiB (powers of 1024), or K, M, G, T (taken as KiB…TiB); case
// does not matter; no unit is bytes ("0" is no limit where a limit is
// asked). Errors: not a number, an unknown unit, a negative or too large
// size, each naming the text.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: expected a number and a unit, such as 500MB or 10GiB", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, t[i:])
	}
	v := math.Round(f * mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return int64(v), nil
}
