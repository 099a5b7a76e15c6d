package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// read returns a file's footer as ParseFooter takes it, and its size.
func readFooter(t testing.TB, b []byte) ([]byte, int64, error) {
	t.Helper()
	size := int64(len(b))
	if size < TrailerSize {
		return nil, size, ErrNotParquet
	}
	n, err := FooterLength(b[size-TrailerSize:], size)
	if err != nil {
		return nil, size, err
	}
	return b[size-TrailerSize-n : size-TrailerSize], size, nil
}

// The files in testdata were written by DuckDB 1.5.5 (COPY ... TO (FORMAT
// parquet)); DuckDB's parquet_file_metadata gives the rows, row groups and
// footer sizes checked here.
func TestParseFooterDuckDBFiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file         string
		rows, footer int64
		groups       int
	}{
		{"small.parquet", 3000, 698, 2},
		{"nested.parquet", 10, -1, 1},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if !HasMagic(b) {
			t.Fatalf("%s: no leading magic", c.file)
		}
		ft, size, err := readFooter(t, b)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFooter(ft, size)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if f.Rows != c.rows || f.RowGroups != c.groups || (c.footer > 0 && f.Length != c.footer) || f.Chunks == 0 {
			t.Fatalf("%s: %+v, want %d rows in %d row groups, footer %d", c.file, f, c.rows, c.groups, c.footer)
		}
	}
}

// Damage a file as a disk or an interrupted copy does: each is refused
// with ErrNotParquet, never read as a file of other rows, and never a
// panic.
func TestParseFooterDamage(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile(filepath.Join("testdata", "small.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(orig[len(orig)-8:]))
	start := len(orig) - 8 - n
	for name, damage := range map[string]func(b []byte) []byte{
		"truncated by 100 bytes": func(b []byte) []byte { return b[:len(b)-100] },
		"footer length zeroed":   func(b []byte) []byte { copy(b[len(b)-8:], []byte{0, 0, 0, 0}); return b },
		"footer length too long": func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(b)-8:], uint32(len(b))); return b },
		"trailing magic gone":    func(b []byte) []byte { copy(b[len(b)-4:], "\x00\x00\x00\x00"); return b },
		"footer cut short":       func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(b)-8:], uint32(n-10)); return b },
		"footer start zeroed":    func(b []byte) []byte { copy(b[start:], []byte{0, 0, 0, 0}); return b },
		"footer middle zeroed":   func(b []byte) []byte { copy(b[start+n/2:], []byte{0, 0, 0, 0}); return b },
	} {
		b := damage(bytes.Clone(orig))
		ft, size, err := readFooter(t, b)
		if err == nil {
			_, err = ParseFooter(ft, size)
		}
		if !errors.Is(err, ErrNotParquet) {
			t.Errorf("%s: %v, want ErrNotParquet", name, err)
		}
	}
	b := bytes.Clone(orig)
	copy(b[len(b)-4:], magicEncrypted)
	if _, _, err := readFooter(t, b); !errors.Is(err, ErrEncrypted) {
		t.Errorf("encrypted: %v, want ErrEncrypted", err)
	}
}

// FuzzParseFooter: no footer makes ParseFooter panic or loop; whatever it
// accepts agrees with itself.
func FuzzParseFooter(f *testing.F) {
	for _, name := range []string{"small.parquet", "nested.parquet"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		f.Add(b[len(b)-8-n:])
	}
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		size := int64(len(b))
		if size >= TrailerSize {
			if n, err := FooterLength(b[size-TrailerSize:], size); err == nil {
				if n <= 0 || n > size-12 {
					t.Fatalf("footer length %d accepted for %d bytes", n, size)
				}
				ft, err := ParseFooter(b[size-TrailerSize-n:size-TrailerSize], size)
				if err == nil && ft.Rows < 0 {
					t.Fatalf("negative rows accepted: %+v", ft)
				}
			}
		}
		// The bytes as a footer of a large file.
		if ft, err := ParseFooter(b, 1<<40); err == nil && (ft.Rows < 0 || ft.Length != size) {
			t.Fatalf("accepted %+v for a %d-byte footer", ft, size)
		}
	})
}
