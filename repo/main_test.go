package repo_test

import (
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/folder"
)

// TestMain registers the folder store, the only kind these tests open by
// URL (a program registers the kinds it links; cmd/fdl registers all).
func TestMain(m *testing.M) {
	store.Register(folder.Backend())
	m.Run()
}
