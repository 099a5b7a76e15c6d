package history

import (
	"context"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/memory"
)

// BenchmarkParsePack parses a full pack (1,024 records): what a reader
// spends per 1,024 versions of a history beyond reading the bytes.
func BenchmarkParsePack(b *testing.B) {
	t := &testing.T{}
	mem := memory.New()
	l := newLine(t, mem, MaxSpan)
	l.writeAll(t, mem)
	id := l.recs[MaxSpan-1].ID
	raw, _, err := store.ReadAll(context.Background(), mem, PackKey(id))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ParsePack(raw, id); err != nil {
			b.Fatal(err)
		}
	}
}
