// Package history reads first-parent histories of versions in time that
// follows what is read, not how long the history is, through history
// packs (docs/spec.md §18): create-only objects index/packs/<id>.json,
// each holding the records of a run of versions on one first-parent line,
// verbatim (compacted), newest first.
//
// Along a first-parent line seq grows by one, so a version at seq s owns
// the range (s − Span(s), s], where Span(s) is the lowest set bit of s,
// capped at MaxSpan (the ranges of a Fenwick tree). Walking from a head
// reads its pack, then the pack of the version just below the range, and
// so on: a full history of n versions is about n/MaxSpan + log2(MaxSpan)
// reads, the newest 20 at most log2(20) + 2. A pack's content follows
// from the records alone, so any writer may create it and concurrent
// creators agree; a pack that is missing or damaged is never needed for
// correctness: readers fall back to the records (version.json), which stay
// the truth.
//
// Reader walks histories (Walk); Writer builds and writes packs (push
// writes the packs of the versions it adds, gc the missing ones of every
// ref's history); Check compares a pack with the records (verify).
package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/fdl-dev/fdl/version"
)

// PacksPrefix is the store key prefix of history packs.
const PacksPrefix = "index/packs/"

// PackFormat is the pack format this package writes and the highest it
// reads; a pack of a higher format is not used (readers fall back to
// records).
const PackFormat = 1

// MaxSpan is the most records one pack holds. It bounds what the newest
// versions cost to read (one pack of at most MaxSpan records) and the
// number of packs a whole history takes (about n/MaxSpan).
const MaxSpan = 1024

// ErrBadPack: a pack does not parse, or its records do not form the
// first-parent run its name and seq promise. Readers fall back to records;
// verify reports it.
var ErrBadPack = errors.New("invalid history pack")

// ErrNewerPack: a pack of a format this fdl does not read (not damage:
// readers fall back to records, verify leaves it alone).
var ErrNewerPack = errors.New("history pack of a newer format")

// Span returns how many versions the pack of the version at seq holds:
// the lowest set bit of seq, at most MaxSpan (0 for seq < 1).
func Span(seq int64) int64 {
	if seq < 1 {
		return 0
	}
	l := seq & -seq
	if l > MaxSpan {
		return MaxSpan
	}
	return l
}

// PackKey returns the store key of the pack of version id.
func PackKey(id version.ID) string { return PacksPrefix + string(id) + ".json" }

// IDFromKey returns the version id a pack key names; ok is false for a
// key that is not index/packs/<version id>.json.
func IDFromKey(key string) (version.ID, bool) {
	rest, ok := strings.CutPrefix(key, PacksPrefix)
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutSuffix(rest, ".json"); !ok {
		return "", false
	}
	id, err := version.ParseID(rest)
	return id, err == nil
}

// Entry is one version of a history: its record and the record's bytes
// as stored in version.json, compacted (encoding/json.Compact). Raw is what
// a pack holds, so packs stay byte-for-byte comparable with the records
// and keep fields this fdl does not know.
type Entry struct {
	Record *version.Record
	Raw    []byte
}

// NewEntry parses version.json bytes b of version want (see
// version.ParseRecord) into an Entry. Errors: version.ErrBadRecord.
func NewEntry(b []byte, want version.ID) (Entry, error) {
	rec, err := version.ParseRecord(b, want)
	if err != nil {
		return Entry{}, err
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return Entry{}, fmt.Errorf("version %s: version.json: %v: %w", want, err, version.ErrBadRecord)
	}
	return Entry{Record: rec, Raw: c.Bytes()}, nil
}

// Pack is the history pack of version ID at seq Seq: the entries of the
// versions with seq in (Seq − Span(Seq), Seq] on ID's first-parent line,
// newest first (Entries[0] is ID's own).
type Pack struct {
	ID      version.ID
	Seq     int64
	Entries []Entry
}

// Next returns the version just below the pack's range (the first parent
// of its oldest entry): where a walk goes on. "" below the first version.
func (p *Pack) Next() version.ID { return p.Entries[len(p.Entries)-1].Record.Parent() }

// Marshal returns the pack's bytes, which depend on its entries alone:
//
//	{
//	  "format": 1,
//	  "id": "<id>",
//	  "seq": <seq>,
//	  "records": [
//	    <compact record>,
//	    …
//	  ]
//	}
//
// with one record per line and a trailing newline.
func (p *Pack) Marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"format\": %d,\n  \"id\": %q,\n  \"seq\": %d,\n  \"records\": [\n", PackFormat, p.ID, p.Seq)
	for i, e := range p.Entries {
		b.WriteString("    ")
		b.Write(e.Raw)
		if i < len(p.Entries)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes()
}

// newPack checks that entries (newest first) form the run of versions the
// pack of their newest owns and returns that pack. Errors: ErrBadPack
// naming what does not link.
func newPack(entries []Entry) (*Pack, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("no records: %w", ErrBadPack)
	}
	top := entries[0].Record
	p := &Pack{ID: top.ID, Seq: top.Seq, Entries: entries}
	if want := Span(top.Seq); int64(len(entries)) != want {
		return nil, fmt.Errorf("pack of version %s (seq %d) holds %d records, want %d: %w", top.ID, top.Seq, len(entries), want, ErrBadPack)
	}
	for i := 1; i < len(entries); i++ {
		prev, rec := entries[i-1].Record, entries[i].Record
		if prev.Parent() != rec.ID || rec.Seq != prev.Seq-1 {
			return nil, fmt.Errorf("pack of version %s: record %d is version %s (seq %d), but the first parent of the one before is %s (seq %d): %w",
				top.ID, i+1, rec.ID, rec.Seq, prev.Parent(), prev.Seq-1, ErrBadPack)
		}
	}
	return p, nil
}

// packJSON is a pack as it parses.
type packJSON struct {
	Format  int               `json:"format"`
	ID      version.ID        `json:"id"`
	Seq     int64             `json:"seq"`
	Records []json.RawMessage `json:"records"`
}

// ParsePack decodes and checks the pack read from PackKey(want): its
// format, id and seq, each record (as version.ParseRecord does), and that
// the records are the first-parent run of Span(seq) versions ending at
// want. A pack laid out as Marshal writes it (every pack fdl writes) is
// split by lines and each record decoded once; any other valid JSON is
// read by the general decoder, its records compacted. Errors: ErrBadPack (wrapping what is
// wrong), ErrNewerPack.
func ParsePack(b []byte, want version.ID) (*Pack, error) {
	j, ok := splitPack(b)
	if !ok {
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, fmt.Errorf("history pack of version %s does not parse: %v: %w", want, err, ErrBadPack)
		}
		for i, raw := range j.Records {
			var c bytes.Buffer
			if json.Compact(&c, raw) == nil {
				j.Records[i] = c.Bytes()
			}
		}
	}
	if j.Format > PackFormat {
		return nil, fmt.Errorf("history pack of version %s has format %d (this fdl reads %d): %w", want, j.Format, PackFormat, ErrNewerPack)
	}
	if j.Format < 1 || j.ID != want || len(j.Records) == 0 {
		return nil, fmt.Errorf("history pack of version %s: format %d, id %q, %d records: %w", want, j.Format, j.ID, len(j.Records), ErrBadPack)
	}
	entries, err := decodeEntries(j.Records)
	if err != nil {
		return nil, fmt.Errorf("history pack of version %s, %w", want, err)
	}
	next := want
	for i, e := range entries {
		if e.Record.ID != next {
			return nil, fmt.Errorf("history pack of version %s, record %d: it is version %s, want %s: %w", want, i+1, e.Record.ID, next, ErrBadPack)
		}
		next = e.Record.Parent()
		if next == "" && i < len(entries)-1 {
			return nil, fmt.Errorf("history pack of version %s: record %d has no parent but %d records follow: %w", want, i+1, len(entries)-1-i, ErrBadPack)
		}
	}
	p, err := newPack(entries)
	if err != nil {
		return nil, err
	}
	if p.Seq != j.Seq {
		return nil, fmt.Errorf("history pack of version %s says seq %d, its record %d: %w", want, j.Seq, p.Seq, ErrBadPack)
	}
	return p, nil
}

// decodeEntries parses each record (version.ParseRecord), on several
// cores for a long pack. Errors: ErrBadPack naming the first bad record.
func decodeEntries(raws []json.RawMessage) ([]Entry, error) {
	entries := make([]Entry, len(raws))
	errs := make([]error, len(raws))
	decode := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			rec, err := version.ParseRecord(raws[i], "")
			entries[i], errs[i] = Entry{Record: rec, Raw: raws[i]}, err
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 8, len(raws)/128+1)
	if workers <= 1 {
		decode(0, len(raws))
	} else {
		var wg sync.WaitGroup
		per := (len(raws) + workers - 1) / workers
		for lo := 0; lo < len(raws); lo += per {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				decode(lo, hi)
			}(lo, min(lo+per, len(raws)))
		}
		wg.Wait()
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("record %d: %v: %w", i+1, err, ErrBadPack)
		}
	}
	return entries, nil
}

// splitPack reads a pack laid out exactly as Marshal writes it: the four
// fields on their lines, one record per line. ok is false for any other
// layout (the caller then decodes it as JSON). The records are not
// checked here: version.ParseRecord parses each.
func splitPack(b []byte) (j packJSON, ok bool) {
	lines := bytes.Split(b, []byte("\n"))
	n := len(lines)
	if n < 9 || string(lines[0]) != "{" || string(lines[4]) != `  "records": [` ||
		string(lines[n-3]) != "  ]" || string(lines[n-2]) != "}" || len(lines[n-1]) != 0 {
		return j, false
	}
	f, ok1 := field(lines[1], "format", ",")
	id, ok2 := field(lines[2], "id", ",")
	seq, ok3 := field(lines[3], "seq", ",")
	if !ok1 || !ok2 || !ok3 || !jsonInt(f) || !jsonInt(seq) || len(id) < 2 || id[0] != '"' || id[len(id)-1] != '"' {
		return j, false
	}
	var err1, err2 error
	j.Format, err1 = strconv.Atoi(f)
	j.Seq, err2 = strconv.ParseInt(seq, 10, 64)
	if err1 != nil || err2 != nil {
		return j, false
	}
	j.ID = version.ID(id[1 : len(id)-1])
	recs := lines[5 : n-3]
	j.Records = make([]json.RawMessage, len(recs))
	for i, line := range recs {
		line, ok = bytes.CutPrefix(line, []byte("    "))
		if i < len(recs)-1 {
			line, ok = bytes.CutSuffix(line, []byte(","))
		}
		if !ok || len(line) == 0 || line[0] != '{' {
			return j, false
		}
		j.Records[i] = line
	}
	return j, true
}

// jsonInt reports whether s is an integer as JSON writes it (RFC 8259:
// "-"?, then "0" or digits without a leading zero). strconv also reads
// "+1" and "04", which are no JSON: a pack holding them goes to the
// general decoder, which refuses it.
func jsonInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}

// field returns the value of a line `  "name": value<end>`.
func field(line []byte, name, end string) (string, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`  "`+name+`": `))
	if !ok {
		return "", false
	}
	rest, ok = bytes.CutSuffix(rest, []byte(end))
	return string(rest), ok
}
