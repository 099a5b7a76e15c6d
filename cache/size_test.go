package cache

import "testing"

// TestParseSize: units in powers of 1000 and 1024, no unit is bytes, and
// what is not a size is refused naming it.
func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"0": 0, "123": 123, "10B": 10, "1KB": 1000, "1.5MB": 1_500_000, "2GB": 2e9,
		"1KiB": 1024, "50MiB": 50 << 20, "10GiB": 10 << 30, "1g": 1 << 30, " 3 M ": 3 << 20, "1TiB": 1 << 40,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "-1", "1XB", "1e3", "99999999999TiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}
