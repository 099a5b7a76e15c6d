package refs

import (
	"context"
	"testing"

	"github.com/fdl-dev/fdl/version"
)

// countingReader counts record reads.
type countingReader struct {
	*chain
	reads int
}

func (c *countingReader) Record(ctx context.Context, id version.ID) (*version.Record, error) {
	c.reads++
	return c.chain.Record(ctx, id)
}

// TestAheadBehind checks the counts for each way two histories relate and
// that the walk reads only the versions between them, not the history.
func TestAheadBehind(t *testing.T) {
	ctx := context.Background()
	c := newChain(t, 100)
	side1 := c.add(t, c.line[89], 91) // off seq 90
	side2 := c.add(t, side1, 92)
	other := c.add(t, "", 1) // an unrelated first version
	for _, tc := range []struct {
		name         string
		a, b         version.ID
		ahead, behin int
		base         version.ID
		maxReads     int
	}{
		{"same", c.line[99], c.line[99], 0, 0, c.line[99], 2},
		{"behind", c.line[96], c.line[99], 0, 3, c.line[96], 5},
		{"ahead", c.line[99], c.line[97], 2, 0, c.line[97], 4},
		{"diverged", side2, c.line[99], 2, 10, c.line[89], 14},
		{"no base yet", "", c.line[1], 0, 2, "", 3},
		{"unrelated", other, c.line[2], 1, 3, "", 5},
	} {
		r := &countingReader{chain: c}
		d, err := AheadBehind(ctx, r, tc.a, tc.b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d.Ahead != tc.ahead || d.Behind != tc.behin || d.Base != tc.base {
			t.Errorf("%s: got ahead %d behind %d base %s, want %d %d %s", tc.name, d.Ahead, d.Behind, d.Base, tc.ahead, tc.behin, tc.base)
		}
		if r.reads > tc.maxReads {
			t.Errorf("%s: %d record reads, want at most %d (the distance, not the history)", tc.name, r.reads, tc.maxReads)
		}
	}
}
