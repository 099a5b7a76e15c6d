// Package parquet reads what fdl checks of a Parquet file without reading
// its pages: the footer's length from the file's last 8 bytes, and from
// the footer (the thrift FileMetaData, compact protocol) the row count and
// where each column chunk lies. It links only the standard library.
//
// The format is Apache Parquet's (parquet-format, src/main/thrift/
// parquet.thrift): "PAR1", the column chunks, the footer, its length as a
// 4-byte little-endian integer, "PAR1". An encrypted footer ends in "PARE"
// instead; it is reported as such (ErrEncrypted), not read.
package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic starts and ends every Parquet file with a plaintext footer.
const Magic = "PAR1"

// magicEncrypted ends a file whose footer is encrypted.
const magicEncrypted = "PARE"

// TrailerSize is the size of the end of the file that gives the footer's
// length: 4 bytes of length, then the magic.
const TrailerSize = 8

// ErrNotParquet: the bytes are not those of a Parquet file (no magic, a
// footer length that does not fit the file, a footer that does not parse
// or whose numbers do not agree). Errors wrap it with what is wrong.
var ErrNotParquet = errors.New("not a readable Parquet file")

// ErrEncrypted: the file's footer is encrypted (Parquet modular
// encryption, magic "PARE"): only a reader with its key reads it.
var ErrEncrypted = errors.New("the Parquet footer is encrypted")

// FooterLength returns the length of the footer a file of size bytes
// declares in its trailer (its last TrailerSize bytes). Errors:
// ErrNotParquet (the trailer's magic is not "PAR1", or the length does not
// fit between the leading magic and the trailer), ErrEncrypted.
func FooterLength(trailer []byte, size int64) (int64, error) {
	if len(trailer) != TrailerSize {
		return 0, fmt.Errorf("%w: the trailer is %d bytes, not %d", ErrNotParquet, len(trailer), TrailerSize)
	}
	switch string(trailer[4:]) {
	case Magic:
	case magicEncrypted:
		return 0, ErrEncrypted
	default:
		return 0, fmt.Errorf("%w: the file does not end in %q (it ends in %q): truncated or not Parquet", ErrNotParquet, Magic, trailer[4:])
	}
	n := int64(binary.LittleEndian.Uint32(trailer[:4]))
	if n == 0 || n > size-int64(len(Magic))-TrailerSize {
		return 0, fmt.Errorf("%w: the footer length %d does not fit a file of %d bytes", ErrNotParquet, n, size)
	}
	return n, nil
}

// Footer is what ParseFooter reads of a Parquet footer.
type Footer struct {
	Length    int64 // bytes of the footer
	Rows      int64 // FileMetaData.num_rows
	RowGroups int   // row groups
	Chunks    int   // column chunks over all row groups
}

// ParseFooter parses a footer (the length bytes before the trailer of a
// file of size bytes) and checks that its numbers agree with each other
// and with the file: num_rows is not negative and is the sum of the row
// groups' num_rows, and every column chunk's bytes lie between the leading
// magic and the footer. Errors: ErrNotParquet, naming what is wrong.
func ParseFooter(footer []byte, size int64) (*Footer, error) {
	f := &Footer{Length: int64(len(footer))}
	dataEnd := size - TrailerSize - f.Length
	d := &decoder{b: footer}
	var haveRows bool
	var groupRows int64
	err := d.fields(func(id int16, typ byte) error {
		switch {
		case id == 3 && typ == tI64:
			v, err := d.zigzag()
			f.Rows, haveRows = v, true
			return err
		case id == 4 && typ == tList:
			return d.list(func(et byte) error {
				if et != tStruct {
					return d.skip(et)
				}
				f.RowGroups++
				rows, chunks, err := d.rowGroup(int64(len(Magic)), dataEnd)
				f.Chunks += chunks
				if groupRows += rows; rows < 0 || groupRows < 0 {
					return fmt.Errorf("row group %d: %d rows", f.RowGroups-1, rows)
				}
				return err
			})
		}
		return d.skip(typ)
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: footer: %v", ErrNotParquet, err)
	case d.pos != len(footer):
		return nil, fmt.Errorf("%w: footer: %d bytes follow its end", ErrNotParquet, len(footer)-d.pos)
	case !haveRows || f.Rows < 0:
		return nil, fmt.Errorf("%w: footer: no row count", ErrNotParquet)
	case groupRows != f.Rows:
		return nil, fmt.Errorf("%w: footer: %d rows, but its row groups hold %d", ErrNotParquet, f.Rows, groupRows)
	}
	return f, nil
}

// rowGroup reads a RowGroup: its num_rows, and checks each column chunk's
// byte range against [lo, hi).
func (d *decoder) rowGroup(lo, hi int64) (rows int64, chunks int, err error) {
	have := false
	err = d.fields(func(id int16, typ byte) error {
		switch {
		case id == 1 && typ == tList:
			return d.list(func(et byte) error {
				if et != tStruct {
					return d.skip(et)
				}
				chunks++
				return d.columnChunk(lo, hi)
			})
		case id == 3 && typ == tI64:
			v, err := d.zigzag()
			rows, have = v, true
			return err
		}
		return d.skip(typ)
	})
	if err == nil && !have {
		err = errors.New("a row group has no row count")
	}
	return rows, chunks, err
}

// columnChunk reads a ColumnChunk and checks that its column's pages (from
// the dictionary page, if any, or the first data page, for
// total_compressed_size bytes) lie within [lo, hi).
func (d *decoder) columnChunk(lo, hi int64) error {
	var start, dict, total int64 = -1, -1, -1
	external := false
	err := d.fields(func(id int16, typ byte) error {
		switch {
		case id == 1 && typ == tBinary: // file_path: the chunk lies in another file
			external = true
			return d.skip(typ)
		case id == 3 && typ == tStruct:
			return d.fields(func(id int16, typ byte) error {
				if typ != tI64 || (id != 7 && id != 9 && id != 11) {
					return d.skip(typ)
				}
				v, err := d.zigzag()
				switch id {
				case 7:
					total = v
				case 9:
					start = v
				case 11:
					dict = v
				}
				return err
			})
		}
		return d.skip(typ)
	})
	if err != nil || external || start < 0 && total < 0 {
		return err
	}
	if dict > 0 && dict < start {
		start = dict
	}
	if start < lo || total < 0 || total > hi-start {
		return fmt.Errorf("a column chunk of %d bytes at offset %d does not lie between byte %d and the footer at byte %d", total, start, lo, hi)
	}
	return nil
}

// The thrift compact protocol's types.
const (
	tStop   = 0
	tTrue   = 1
	tFalse  = 2
	tByte   = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
)

// maxDepth bounds the nesting of structs and containers a footer may have
// (a Parquet schema is flat in the footer; 64 is far above any real one).
const maxDepth = 64

// decoder reads the thrift compact protocol from b.
type decoder struct {
	b     []byte
	pos   int
	depth int
}

var errShort = errors.New("it ends in the middle of a value")

func (d *decoder) byte() (byte, error) {
	if d.pos >= len(d.b) {
		return 0, errShort
	}
	c := d.b[d.pos]
	d.pos++
	return c, nil
}

func (d *decoder) varint() (uint64, error) {
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, errShort
		}
		return 0, errors.New("a varint overflows 64 bits")
	}
	d.pos += n
	return v, nil
}

func (d *decoder) zigzag() (int64, error) {
	v, err := d.varint()
	return int64(v>>1) ^ -int64(v&1), err
}

// take skips n bytes.
func (d *decoder) take(n uint64) error {
	if n > uint64(len(d.b)-d.pos) {
		return errShort
	}
	d.pos += int(n)
	return nil
}

// fields reads a struct, calling fn with each field's id and type; fn
// reads or skips the field's value.
func (d *decoder) fields(fn func(id int16, typ byte) error) error {
	if d.depth++; d.depth > maxDepth {
		return fmt.Errorf("values nest deeper than %d", maxDepth)
	}
	defer func() { d.depth-- }()
	var last int16
	for {
		h, err := d.byte()
		if err != nil {
			return err
		}
		typ := h & 0x0f
		if typ == tStop {
			return nil
		}
		id := last + int16(h>>4)
		if h>>4 == 0 {
			v, err := d.zigzag()
			if err != nil {
				return err
			}
			id = int16(v)
		}
		if typ > tStruct {
			return fmt.Errorf("field %d has unknown type %d", id, typ)
		}
		last = id
		if err := fn(id, typ); err != nil {
			return err
		}
	}
}

// list reads a list or set header and calls fn once for each element with
// the elements' type; fn reads or skips the element.
func (d *decoder) list(fn func(elemType byte) error) error {
	if d.depth++; d.depth > maxDepth {
		return fmt.Errorf("values nest deeper than %d", maxDepth)
	}
	defer func() { d.depth-- }()
	h, err := d.byte()
	if err != nil {
		return err
	}
	n, et := uint64(h>>4), h&0x0f
	if n == 15 {
		if n, err = d.varint(); err != nil {
			return err
		}
	}
	if et > tStruct || et == tStop {
		return fmt.Errorf("a list of unknown type %d", et)
	}
	// Each element takes at least one byte: a count beyond the bytes
	// left is a damaged footer, not a reason to loop for long.
	if n > uint64(len(d.b)-d.pos) {
		return errShort
	}
	for range n {
		if et == tTrue || et == tFalse { // a bool element is one byte
			if _, err := d.byte(); err != nil {
				return err
			}
			continue
		}
		if err := fn(et); err != nil {
			return err
		}
	}
	return nil
}

// skip reads past a value of type typ.
func (d *decoder) skip(typ byte) error {
	switch typ {
	case tTrue, tFalse:
		return nil // a bool field's value is its type
	case tByte:
		_, err := d.byte()
		return err
	case tI16, tI32, tI64:
		_, err := d.varint()
		return err
	case tDouble:
		return d.take(8)
	case tBinary:
		n, err := d.varint()
		if err != nil {
			return err
		}
		return d.take(n)
	case tList, tSet:
		return d.list(d.skip)
	case tMap:
		return d.skipMap()
	case tStruct:
		return d.fields(func(_ int16, typ byte) error { return d.skip(typ) })
	}
	return fmt.Errorf("a value of unknown type %d", typ)
}

func (d *decoder) skipMap() error {
	if d.depth++; d.depth > maxDepth {
		return fmt.Errorf("values nest deeper than %d", maxDepth)
	}
	defer func() { d.depth-- }()
	n, err := d.varint()
	if err != nil || n == 0 {
		return err
	}
	kv, err := d.byte()
	if err != nil {
		return err
	}
	if n > uint64(len(d.b)-d.pos) {
		return errShort
	}
	kt, vt := kv>>4, kv&0x0f
	for range n {
		for _, t := range []byte{kt, vt} {
			if t == tTrue || t == tFalse {
				if _, err := d.byte(); err != nil {
					return err
				}
				continue
			}
			if err := d.skip(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// HasMagic reports whether head (a file's first bytes) starts with Magic.
func HasMagic(head []byte) bool { return bytes.HasPrefix(head, []byte(Magic)) }
