package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
)

func TestCheckElement(t *testing.T) {
	for _, ok := range []string{"main", "v 1", "f ü.parquet", "0192abc", ".hidden", "x.locked"} {
		if err := store.CheckElement(ok); err != nil {
			t.Errorf("CheckElement(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "main.lock", ".tmp-1", "a\\b", "a\x01", "\xff"} {
		if err := store.CheckElement(bad); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("CheckElement(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

// Temporary names are fresh, carry their kind, and can never be a key.
func TestTempName(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		n := store.TempName("probe-")
		if !strings.HasPrefix(n, store.TempPrefix+"probe-") || len(n) != len(store.TempPrefix+"probe-")+24 {
			t.Fatalf("TempName(probe-) = %q, want %sprobe- and 24 hex digits", n, store.TempPrefix)
		}
		if seen[n] {
			t.Fatalf("TempName repeated %q", n)
		}
		seen[n] = true
		if store.CheckKey(n) == nil || store.CheckKey("versions/"+n) == nil {
			t.Fatalf("%q is a valid key", n)
		}
	}
}
