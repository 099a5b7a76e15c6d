package gc_test

import (
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/folder"
	"github.com/fdl-dev/fdl/internal/store/memory"
)

// TestMain registers the folder and memory stores, the kinds these tests
// open by URL (a program registers the kinds it links; cmd/fdl registers
// all).
func TestMain(m *testing.M) {
	store.Register(folder.Backend())
	store.Register(memory.Backend())
	m.Run()
}
