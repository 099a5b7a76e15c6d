package storetest_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/memory"
	"github.com/fdl-dev/fdl/internal/store/storetest"
)

func TestFaultyFailAt(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	f := &storetest.Faulty{Store: mem, FailAt: storetest.FailOn(storetest.OpCreate, "versions/", 0, storetest.ErrInjected)}
	if err := f.Create(ctx, "versions/1/version.json", strings.NewReader("x")); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("Create = %v, want the injected error", err)
	}
	if _, _, err := mem.Get(ctx, "versions/1/version.json"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("FailAt let the Create through: Get = %v", err)
	}
	// Other keys and operations pass.
	if err := f.Create(ctx, "fdl.json", strings.NewReader("{}")); err != nil {
		t.Errorf("Create of another key: %v", err)
	}
	if _, err := f.Swap(ctx, "versions/x", store.NoToken, []byte("y")); err != nil {
		t.Errorf("Swap: %v", err)
	}
	want := []string{"create versions/1/version.json", "create fdl.json", "swap versions/x"}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Errorf("Calls = %q, want %q", got, want)
	}
}

func TestFaultyFailAfter(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	f := &storetest.Faulty{Store: mem, FailAfter: storetest.FailOn(storetest.OpSwap, "refs/", 2, storetest.ErrInjected)}
	tok, err := f.Swap(ctx, "refs/heads/main", store.NoToken, []byte("v1\n"))
	if err != nil {
		t.Fatalf("first Swap: %v", err)
	}
	if _, err := f.Swap(ctx, "refs/heads/main", tok, []byte("v2\n")); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("second Swap = %v, want the injected error", err)
	}
	// The write happened although the caller saw an error.
	if got, _, err := store.ReadAll(ctx, mem, "refs/heads/main"); err != nil || string(got) != "v2\n" {
		t.Errorf("after a FailAfter Swap the ref holds %q, %v; want %q", got, err, "v2\n")
	}
	// Only the second call failed.
	_, tok, _ = store.ReadAll(ctx, f, "refs/heads/main")
	if _, err := f.Swap(ctx, "refs/heads/main", tok, []byte("v3\n")); err != nil {
		t.Errorf("third Swap: %v", err)
	}
}

func TestFaultyFailAfterGet(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	if err := mem.Create(ctx, "k", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	f := &storetest.Faulty{Store: mem, FailAfter: func(op, key string) error {
		if op == storetest.OpGet || op == storetest.OpList || op == storetest.OpDelete || op == storetest.OpStat {
			return storetest.ErrInjected
		}
		return nil
	}}
	if r, _, err := f.Get(ctx, "k"); !errors.Is(err, storetest.ErrInjected) || r != nil {
		t.Errorf("Get = %v, %v; want nil and the injected error", r, err)
	}
	if _, err := f.Stat(ctx, "k"); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("Stat = %v, want the injected error", err)
	}
	n := 0
	if err := f.List(ctx, "", func(store.ObjectInfo) error { n++; return nil }); !errors.Is(err, storetest.ErrInjected) || n != 1 {
		t.Errorf("List = %v after %d objects, want the injected error after 1", err, n)
	}
	if err := f.Delete(ctx, "k"); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("Delete = %v, want the injected error", err)
	}
	if _, _, err := mem.Get(ctx, "k"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("Delete with FailAfter did not delete: Get = %v", err)
	}
	// Errors of the wrapped store pass through unchanged, without FailAfter.
	if _, _, err := f.Get(ctx, "k"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("Get of a missing key = %v, want ErrNotExist", err)
	}
}
