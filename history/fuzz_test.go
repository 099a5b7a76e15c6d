package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/version"
)

// fuzzLine returns the entries of versions 1..n on one first-parent line
// with fixed ids (seeds must not change from run to run), oldest first.
func fuzzLine(f *testing.F, n int) []Entry {
	f.Helper()
	var out []Entry
	var parent version.ID
	for i := 1; i <= n; i++ {
		id := version.ID(fmt.Sprintf("01900000-0000-7000-8000-%012x", i))
		sum := fmt.Sprintf("%064x", i)
		rec := &version.Record{RecordFormat: 1, ID: id, Seq: int64(i), Parents: []version.ID{}, Author: "t",
			Message:   fmt.Sprintf("version %d\n\"quoted\" <html> é", i),
			CreatedAt: time.Unix(int64(i), 0).UTC(),
			Catalog:   version.Catalog{Size: 1, SHA256: sum, Storage: meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}},
			Dataset:   version.File{Size: 1, SHA256: sum},
			DuckLake:  version.DuckLake{Format: "1.0", Snapshot: int64(i), Adds: version.SnapshotRange{First: int64(i), Last: int64(i)}},
		}
		if parent != "" {
			rec.Parents = []version.ID{parent}
		}
		b, err := rec.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		e, err := NewEntry(b, id)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, e)
		parent = id
	}
	return out
}

// FuzzParsePack: ParsePack never panics, fails only with ErrBadPack or
// ErrNewerPack, and a pack it accepts
//   - is JSON (every fdl reader reads the same packs, whatever parser);
//   - passes the reader's checks of docs/spec.md §18, checked here
//     without ParsePack's code: its id is the one asked for, it holds
//     span(seq) records, each a valid record (version.ParseRecord of its
//     bytes), the first is the pack's version, each next one is the first
//     parent of the one before with a seq one lower;
//   - marshals to the canonical layout, which parses to the same entries
//     (a round trip).
func FuzzParsePack(f *testing.F) {
	line := fuzzLine(f, 12)
	ids := make([]version.ID, len(line))
	for i, e := range line {
		ids[i] = e.Record.ID
	}
	for i := range line {
		seq := int64(i + 1)
		entries := make([]Entry, 0, Span(seq))
		for j := i; j > i-int(Span(seq)); j-- {
			entries = append(entries, line[j])
		}
		p, err := newPack(entries)
		if err != nil {
			f.Fatal(err)
		}
		b := p.Marshal()
		f.Add(b, uint8(i))
		if seq == 4 || seq == 8 {
			var other bytes.Buffer
			if err := json.Indent(&other, b, "", "\t"); err != nil {
				f.Fatal(err)
			}
			f.Add(other.Bytes(), uint8(i))
			f.Add(bytes.Replace(b, []byte(`"format": 1`), []byte(`"format": 2`), 1), uint8(i))
			f.Add(bytes.Replace(b, []byte("    {"), []byte("    { "), 1), uint8(i))
			// Numbers JSON does not have, in the layout read line by line.
			f.Add(bytes.Replace(b, []byte(`"format": 1,`), []byte(`"format": +1,`), 1), uint8(i))
			f.Add(bytes.Replace(b, []byte(fmt.Sprintf(`"seq": %d,`, seq)), []byte(fmt.Sprintf(`"seq": 0%d,`, seq)), 1), uint8(i))
		}
	}
	f.Add([]byte("{}"), uint8(0))
	f.Add([]byte(""), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		want := ids[int(which)%len(ids)]
		p, err := ParsePack(b, want)
		if err != nil {
			if !errors.Is(err, ErrBadPack) && !errors.Is(err, ErrNewerPack) {
				t.Fatalf("error %v wraps neither ErrBadPack nor ErrNewerPack", err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted a pack that is not JSON:\n%s", b)
		}
		checkPack(t, p, want)
		m := p.Marshal()
		p2, err := ParsePack(m, want)
		if err != nil {
			t.Fatalf("the marshalled pack does not parse: %v\n%s", err, m)
		}
		if len(p2.Entries) != len(p.Entries) || p2.Seq != p.Seq {
			t.Fatalf("round trip: %d entries at seq %d, then %d at seq %d", len(p.Entries), p.Seq, len(p2.Entries), p2.Seq)
		}
		for i := range p.Entries {
			if !bytes.Equal(p.Entries[i].Raw, p2.Entries[i].Raw) {
				t.Fatalf("round trip changed record %d:\n%s\n%s", i+1, p.Entries[i].Raw, p2.Entries[i].Raw)
			}
		}
		if !bytes.Equal(p2.Marshal(), m) {
			t.Fatalf("Marshal is not a fixed point:\n%s\n%s", m, p2.Marshal())
		}
	})
}

// checkPack checks an accepted pack as docs/spec.md §18 says a reader
// does, from the entries' bytes.
func checkPack(t *testing.T, p *Pack, want version.ID) {
	t.Helper()
	if p.ID != want {
		t.Fatalf("accepted the pack of %s for %s", p.ID, want)
	}
	span := p.Seq & -p.Seq
	if span > MaxSpan {
		span = MaxSpan
	}
	if p.Seq < 1 || int64(len(p.Entries)) != span {
		t.Fatalf("accepted a pack at seq %d holding %d records, want %d", p.Seq, len(p.Entries), span)
	}
	var prev *version.Record
	for i, e := range p.Entries {
		rec, err := version.ParseRecord(e.Raw, "")
		if err != nil {
			t.Fatalf("record %d of an accepted pack is not a valid record: %v", i+1, err)
		}
		if strings.TrimSpace(string(e.Raw)) != string(e.Raw) || rec.ID != e.Record.ID || rec.Seq != e.Record.Seq {
			t.Fatalf("record %d: entry says %s seq %d, its bytes %s seq %d", i+1, e.Record.ID, e.Record.Seq, rec.ID, rec.Seq)
		}
		switch {
		case i == 0 && (rec.ID != p.ID || rec.Seq != p.Seq):
			t.Fatalf("the first record is %s seq %d, the pack's %s seq %d", rec.ID, rec.Seq, p.ID, p.Seq)
		case i > 0 && (prev.Parent() != rec.ID || rec.Seq != prev.Seq-1):
			t.Fatalf("record %d (%s seq %d) is not the first parent of the one before (%s, seq %d)", i+1, rec.ID, rec.Seq, prev.Parent(), prev.Seq)
		}
		prev = rec
	}
	if p.Next() != prev.Parent() {
		t.Fatalf("Next() = %s, the last record's parent %s", p.Next(), prev.Parent())
	}
}
