package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/memory"
	"github.com/fdl-dev/fdl/internal/store/storetest"
	"github.com/fdl-dev/fdl/version"
)

func TestSpan(t *testing.T) {
	for seq, want := range map[int64]int64{0: 0, -3: 0, 1: 1, 2: 2, 3: 1, 4: 4, 6: 2, 12: 4, 1024: 1024, 2048: 1024, 3072: 1024, 1536: 512, 1025: 1} {
		if got := Span(seq); got != want {
			t.Errorf("Span(%d) = %d, want %d", seq, got, want)
		}
	}
	// The packs below a version tile its range exactly: from s-1, jumping
	// by Span, a walk lands on s - Span(s).
	for s := int64(1); s <= 5000; s++ {
		low := s - Span(s)
		p := s - 1
		for p > low {
			p -= Span(p)
		}
		if p != low {
			t.Fatalf("seq %d: the packs below end at %d, want %d", s, p, low)
		}
	}
	id, _ := version.NewID()
	if got, ok := IDFromKey(PackKey(id)); !ok || got != id {
		t.Errorf("IDFromKey(PackKey) = %q %v", got, ok)
	}
	for _, k := range []string{"index/packs/x.json", "index/packs/" + string(id), "versions/" + string(id) + ".json"} {
		if _, ok := IDFromKey(k); ok {
			t.Errorf("IDFromKey(%q) accepted", k)
		}
	}
}

// line is an in-memory Source: versions 1..n on one first-parent line,
// whose version.json bytes are also in the store.
type line struct {
	entries map[version.ID]Entry
	recs    []*version.Record // oldest first
	reads   int               // Entry calls (the tests read it when no walk runs)
}

func newLine(t *testing.T, st store.Store, n int) *line {
	t.Helper()
	l := &line{entries: map[version.ID]Entry{}}
	var parent version.ID
	for i := 1; i <= n; i++ {
		id, err := version.NewIDAfter(parent)
		if err != nil {
			t.Fatal(err)
		}
		sum := fmt.Sprintf("%064x", i)
		rec := &version.Record{RecordFormat: 1, ID: id, Seq: int64(i), Parents: []version.ID{},
			Author: "t", Message: fmt.Sprintf("version %d\n\"quoted\" <html> é", i), CreatedAt: time.Unix(int64(i), 0).UTC(),
			Catalog:  version.Catalog{Size: 1, SHA256: sum, Storage: meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}},
			Dataset:  version.File{Size: 1, SHA256: sum},
			DuckLake: version.DuckLake{Format: "1.0", Snapshot: int64(i), Adds: version.SnapshotRange{First: int64(i), Last: int64(i)}},
		}
		if parent != "" {
			rec.Parents = []version.ID{parent}
		}
		b, err := rec.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEntry(b, id)
		if err != nil {
			t.Fatal(err)
		}
		l.entries[id] = e
		l.recs = append(l.recs, e.Record)
		parent = id
	}
	return l
}

func (l *line) Entry(_ context.Context, id version.ID) (Entry, error) {
	l.reads++
	e, ok := l.entries[id]
	if !ok {
		return Entry{}, fmt.Errorf("version %s: no such version", id)
	}
	return e, nil
}

func (l *line) head() version.ID { return l.recs[len(l.recs)-1].ID }

// writeAll writes every version's pack, oldest first, as pushes do.
func (l *line) writeAll(t *testing.T, st store.Store) {
	t.Helper()
	w := NewWriter(st, l)
	for _, rec := range l.recs {
		if _, err := w.Write(context.Background(), l.entries[rec.ID], NoBudget); err != nil {
			t.Fatal(err)
		}
	}
}

// walk returns the ids of a walk from id, at most max (0: all).
func walk(t *testing.T, r *Reader, id version.ID, max int) []version.ID {
	t.Helper()
	var out []version.ID
	err := r.Walk(context.Background(), id, func(e Entry) (bool, error) {
		out = append(out, e.Record.ID)
		return max == 0 || len(out) < max, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (l *line) want(from, max int) []version.ID {
	var out []version.ID
	for i := from - 1; i >= 0 && (max == 0 || len(out) < max); i-- {
		out = append(out, l.recs[i].ID)
	}
	return out
}

func same(a, b []version.ID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func count(calls []string, op string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, op+" ") {
			n++
		}
	}
	return n
}

// TestWalkReadsWhatItShows: with every pack written, the newest 20 of
// 3,000 versions take at most log2(20)+2 reads, the whole history about
// 3000/1024 + 10, and no record is read; the entries are the records'.
func TestWalkReadsWhatItShows(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	l := newLine(t, mem, 3000)
	l.writeAll(t, mem)
	for _, head := range []int{3000, 2047, 1023, 1024, 1, 2} {
		for _, max := range []int{20, 0} {
			f := &storetest.Faulty{Store: mem}
			l.reads = 0
			got := walk(t, NewReader(f, l), l.recs[head-1].ID, max)
			if !same(got, l.want(head, max)) {
				t.Fatalf("walk from seq %d (max %d): %d versions, not the history", head, max, len(got))
			}
			gets := count(f.Calls(), storetest.OpGet)
			limit := 7 // log2(20) + 2
			if max == 0 {
				limit = head/MaxSpan + 11
			}
			if gets > limit || l.reads != 0 {
				t.Errorf("walk from seq %d (max %d): %d gets, %d records read; want <= %d gets, no record", head, max, gets, l.reads, limit)
			}
		}
	}
	// Entries from packs are the records' bytes.
	err := NewReader(mem, l).Walk(ctx, l.head(), func(e Entry) (bool, error) {
		if want := l.entries[e.Record.ID]; !bytes.Equal(want.Raw, e.Raw) || e.Record.Message != want.Record.Message {
			return false, fmt.Errorf("version %s: the pack's entry differs from the record", e.Record.ID)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPacksAreDeterministic: any writer builds the same bytes (from the
// packs below, from the records alone, or concurrently), so a create-only
// write that finds the pack there loses nothing.
func TestPacksAreDeterministic(t *testing.T) {
	ctx := context.Background()
	a, b := memory.New(), memory.New()
	l := newLine(t, a, 600)
	l.writeAll(t, a)
	// b: only the head's pack, built from records alone.
	if _, err := NewWriter(b, l).Write(ctx, l.entries[l.recs[511].ID], NoBudget); err != nil {
		t.Fatal(err)
	}
	x, _, _ := store.ReadAll(ctx, a, PackKey(l.recs[511].ID))
	y, _, _ := store.ReadAll(ctx, b, PackKey(l.recs[511].ID))
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Fatalf("the pack of seq 512 differs between a build from packs and one from records")
	}
	p, err := ParsePack(x, l.recs[511].ID)
	if err != nil || len(p.Entries) != 512 || !bytes.Equal(p.Marshal(), x) {
		t.Fatalf("parse of a written pack: %v, %d entries", err, len(p.Entries))
	}
	// Concurrent writers of every pack: all agree, all succeed.
	c := memory.New()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			w := NewWriter(c, l)
			for _, rec := range l.recs {
				if _, err := w.Write(ctx, l.entries[rec.ID], NoBudget); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range l.recs {
		x, _, _ := store.ReadAll(ctx, a, PackKey(rec.ID))
		y, _, _ := store.ReadAll(ctx, c, PackKey(rec.ID))
		if !bytes.Equal(x, y) {
			t.Fatalf("pack of seq %d differs after concurrent writers", rec.Seq)
		}
	}
}

// TestWalkFallsBack: missing, damaged and newer-format packs are not
// used; the walk reads the records in their place and gives the same
// history; damage (not a newer format) is reported in Problems.
func TestWalkFallsBack(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	l := newLine(t, mem, 1100)
	l.writeAll(t, mem)
	at := func(seq int) version.ID { return l.recs[seq-1].ID }
	put := func(seq int, b []byte) {
		if err := mem.Delete(ctx, PackKey(at(seq))); err != nil {
			t.Fatal(err)
		}
		if b != nil {
			if err := mem.Create(ctx, PackKey(at(seq)), bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	good, _, _ := store.ReadAll(ctx, mem, PackKey(at(1096)))
	other, _, _ := store.ReadAll(ctx, mem, PackKey(at(1088)))
	put(1100, nil)                                                                   // missing (span 4)
	put(1096, []byte("{not json"))                                                   // garbage (span 8)
	put(1088, bytes.Replace(other, []byte(`"seq": 1088`), []byte(`"seq": 1089`), 1)) // says another seq
	put(1024, bytes.Replace(good, []byte(`"format": 1`), []byte(`"format": 99`), 1)) // a newer format
	mid, _, _ := store.ReadAll(ctx, mem, PackKey(at(512)))
	put(512, bytes.Replace(mid, []byte("version 300\\n"), []byte("version 299\\n"), 1))
	r := NewReader(mem, l)
	got := walk(t, r, l.head(), 0)
	if !same(got, l.want(1100, 0)) {
		t.Fatalf("the walk over damaged packs gave %d versions, not the history", len(got))
	}
	probs := r.Problems()
	if len(probs) != 2 {
		t.Fatalf("problems: %v, want the garbage pack and the one with the wrong seq", probs)
	}
	for _, p := range probs {
		if !errors.Is(p, ErrBadPack) {
			t.Errorf("problem %v is not ErrBadPack", p)
		}
	}
	// The pack whose content was changed but still links is used by the
	// walk (only a comparison with the records tells it apart): verify's
	// job (Compare).
	mp, err := ParsePack(func() []byte { b, _, _ := store.ReadAll(ctx, mem, PackKey(at(512))); return b }(), at(512))
	if err != nil {
		t.Fatal(err)
	}
	if err := Compare(mp, func(id version.ID) (Entry, bool) { e, ok := l.entries[id]; return e, ok }); !errors.Is(err, ErrBadPack) {
		t.Fatalf("Compare of a changed pack: %v", err)
	}
	gp, _ := ParsePack(good, at(1096))
	if err := Compare(gp, func(id version.ID) (Entry, bool) { e, ok := l.entries[id]; return e, ok }); err != nil {
		t.Fatalf("Compare of a good pack: %v", err)
	}
	for _, bad := range [][]byte{
		[]byte(`{"format":1,"id":"` + string(at(3)) + `","seq":3,"records":[]}`),
		bytes.Replace(good, []byte(string(at(1096))), []byte(string(at(1095))), 1),
	} {
		if _, err := ParsePack(bad, at(1096)); !errors.Is(err, ErrBadPack) {
			t.Errorf("ParsePack(%.60q…): %v, want ErrBadPack", bad, err)
		}
	}
}

// TestBuildBudget: a build reads at most the records allowed in place of
// missing packs; with the packs below there, it reads none.
func TestBuildBudget(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	l := newLine(t, mem, 64)
	e := l.entries[l.recs[63].ID]
	if _, err := NewWriter(mem, l).Build(ctx, e, 16); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("a build of a 64-version pack with no pack below and 16 records allowed: %v", err)
	}
	l.reads = 0
	p, err := NewWriter(mem, l).Build(ctx, e, NoBudget)
	if err != nil || len(p.Entries) != 64 || l.reads != 63 {
		t.Fatalf("a build from records: %v, %d entries, %d records read", err, len(p.Entries), l.reads)
	}
	l.writeAll(t, mem)
	l.reads = 0
	if _, err := NewWriter(mem, l).Build(ctx, e, 0); err != nil || l.reads != 0 {
		t.Fatalf("a build over the packs below: %v, %d records read", err, l.reads)
	}
}

// TestWalkLocal: versions not in the store yet (a push's) are read from
// the local entries and never looked for in the store.
func TestWalkLocal(t *testing.T) {
	mem := memory.New()
	l := newLine(t, mem, 40)
	store30 := &line{entries: map[version.ID]Entry{}}
	for _, rec := range l.recs[:30] {
		store30.entries[rec.ID] = l.entries[rec.ID]
	}
	w := NewWriter(mem, store30)
	for _, rec := range l.recs[:30] {
		if _, err := w.Write(context.Background(), l.entries[rec.ID], NoBudget); err != nil {
			t.Fatal(err)
		}
	}
	var local []Entry
	for _, rec := range l.recs[30:] {
		local = append(local, l.entries[rec.ID])
	}
	f := &storetest.Faulty{Store: mem}
	r := NewReader(f, store30).WithLocal(local)
	if got := walk(t, r, l.head(), 0); !same(got, l.want(40, 0)) {
		t.Fatalf("walk over local versions: %d versions", len(got))
	}
	for _, c := range f.Calls() {
		for _, e := range local {
			if strings.Contains(c, string(e.Record.ID)) {
				t.Errorf("the store was asked for local version %s: %s", e.Record.ID, c)
			}
		}
	}
}

// TestParseAnyLayout: a pack laid out otherwise than Marshal writes it
// (another writer's indentation) parses to the same compacted records.
func TestParseAnyLayout(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	l := newLine(t, mem, 8)
	l.writeAll(t, mem)
	id := l.recs[7].ID
	b, _, _ := store.ReadAll(ctx, mem, PackKey(id))
	var other bytes.Buffer
	if err := json.Indent(&other, b, "", "\t"); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other.Bytes(), b) {
		t.Fatal("the layout did not change")
	}
	p, err := ParsePack(other.Bytes(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Marshal(), b) {
		t.Fatalf("a re-indented pack parses to other records:\n%s", p.Marshal())
	}
}
