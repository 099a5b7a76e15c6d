package store_test

import (
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}

// Faulty with no hooks must be a transparent wrapper.
func TestFaultyConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return &storetest.Faulty{Store: store.NewMemory()}
	})
}

func TestMemoryLocation(t *testing.T) {
	m := store.NewMemory()
	n := store.NewMemory()
	if m.Location("") == n.Location("") {
		t.Errorf("two NewMemory stores share the location %q", m.Location(""))
	}
	s, err := store.Open(t.Context(), "mem://loc-test")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Location("refs/heads/main"), "mem://loc-test/refs/heads/main"; got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
	if got, want := s.Location(""), "mem://loc-test"; got != want {
		t.Errorf("Location(\"\") = %q, want %q", got, want)
	}
}
