package memory_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/memory"
	"github.com/fdl-dev/fdl/internal/store/storetest"
)

func TestMain(m *testing.M) {
	store.Register(memory.Backend())
	m.Run()
}

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}

// Faulty with no hooks must be a transparent wrapper.
func TestFaultyConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return &storetest.Faulty{Store: memory.New()}
	})
}

func TestMemoryLocation(t *testing.T) {
	m := memory.New()
	n := memory.New()
	if m.Location("") == n.Location("") {
		t.Errorf("two memory.New stores share the location %q", m.Location(""))
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

func TestOpenMem(t *testing.T) {
	ctx := t.Context()
	// Named stores live as long as the process: a fresh name per run.
	shared := fmt.Sprintf("mem://shared-%d", time.Now().UnixNano())
	a, err := store.Open(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Open(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Open(ctx, shared+"-other")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Create(ctx, "k", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	if got, _, err := store.ReadAll(ctx, b, "k"); err != nil || string(got) != "v" {
		t.Errorf("second Open of %s does not see the first's object: %q, %v", shared, got, err)
	}
	if _, _, err := store.ReadAll(ctx, c, "k"); err == nil {
		t.Errorf("another name sees %s's object", shared)
	}
}

func TestOpenMemErrors(t *testing.T) {
	for _, raw := range []string{"mem://", "mem://a/b", "mem://a?x=1", "mem://u:secret@a"} {
		s, err := store.Open(t.Context(), raw)
		if err == nil {
			t.Errorf("Open(%q) = %v, want an error", raw, s)
			continue
		}
		if !strings.Contains(err.Error(), "mem://NAME") {
			t.Errorf("Open(%q) error = %q, want it to say mem://NAME", raw, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error shows the password: %q", raw, err)
		}
	}
}
