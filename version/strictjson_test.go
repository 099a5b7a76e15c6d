package version

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// jnode is a JSON value as strictJSON reads it: an object's members by
// name, an array's elements; other values only say what they are.
type jnode struct {
	kind byte              // '{', '[', '"', 'n' (null), 'v' (number, true, false)
	obj  map[string]*jnode // kind '{'
	arr  []*jnode          // kind '['
}

// strictJSON parses b as RFC 8259 text, as docs/spec.md says a record is
// read: valid UTF-8 (no escaped lone surrogate either), no member name
// given twice in one object, nothing after the value but white space.
// It is the fuzz targets' oracle, written independently of the decoder
// ParseRecord uses, so that a change of that decoder or of its options
// that lets a broken record through fails the fuzz targets.
func strictJSON(b []byte) (*jnode, error) {
	p := &jparser{b: b}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(b) {
		return nil, p.fail("text after the value")
	}
	return v, nil
}

type jparser struct {
	b []byte
	i int
}

var errJSON = errors.New("not strict RFC 8259 JSON")

func (p *jparser) fail(why string) error { return fmt.Errorf("byte %d: %s: %w", p.i, why, errJSON) }

func (p *jparser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *jparser) value(depth int) (*jnode, error) {
	if depth > 1000 {
		return nil, p.fail("nested too deep")
	}
	p.ws()
	if p.i >= len(p.b) {
		return nil, p.fail("a value is missing")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		p.i++
		n := &jnode{kind: '['}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return n, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.arr = append(n.arr, v)
			p.ws()
			if p.i >= len(p.b) {
				return nil, p.fail("an array is not closed")
			}
			if p.b[p.i] == ']' {
				p.i++
				return n, nil
			}
			if p.b[p.i] != ',' {
				return nil, p.fail("',' or ']' expected")
			}
			p.i++
		}
	case c == '"':
		if _, err := p.str(); err != nil {
			return nil, err
		}
		return &jnode{kind: '"'}, nil
	case c == 't', c == 'f', c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
				p.i += len(lit)
				if lit == "null" {
					return &jnode{kind: 'n'}, nil
				}
				return &jnode{kind: 'v'}, nil
			}
		}
		return nil, p.fail("not a literal")
	default:
		return p.number()
	}
}

func (p *jparser) object(depth int) (*jnode, error) {
	p.i++ // '{'
	n := &jnode{kind: '{', obj: map[string]*jnode{}}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return n, nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("a member name expected")
		}
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		if _, dup := n.obj[name]; dup {
			return nil, p.fail(fmt.Sprintf("member %q given twice", name))
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("':' expected")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.obj[name] = v
		p.ws()
		if p.i >= len(p.b) {
			return nil, p.fail("an object is not closed")
		}
		if p.b[p.i] == '}' {
			p.i++
			return n, nil
		}
		if p.b[p.i] != ',' {
			return nil, p.fail("',' or '}' expected")
		}
		p.i++
	}
}

// str reads a string at p.i (its opening quote) and returns its value.
func (p *jparser) str() (string, error) {
	p.i++
	var out []rune
	for {
		if p.i >= len(p.b) {
			return "", p.fail("a string is not closed")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("a control character in a string")
		case c == '\\':
			p.i++
			if p.i >= len(p.b) {
				return "", p.fail("an escape is cut")
			}
			e := p.b[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				out = append(out, rune(e))
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("\\u takes four hex digits")
				}
				switch {
				case r >= 0xdc00 && r <= 0xdfff:
					return "", p.fail("a lone low surrogate")
				case r >= 0xd800 && r <= 0xdbff:
					if p.i+1 >= len(p.b) || p.b[p.i] != '\\' || p.b[p.i+1] != 'u' {
						return "", p.fail("a lone high surrogate")
					}
					p.i += 2
					lo, ok := p.hex4()
					if !ok || lo < 0xdc00 || lo > 0xdfff {
						return "", p.fail("a high surrogate without its low one")
					}
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				}
				out = append(out, r)
			default:
				return "", p.fail("an unknown escape")
			}
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("invalid UTF-8")
			}
			out = append(out, r)
			p.i += size
		}
	}
}

func (p *jparser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// number reads RFC 8259's number: -? int frac? exp?
func (p *jparser) number() (*jnode, error) {
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	start := p.i
	if n := digits(); n == 0 || (n > 1 && p.b[start] == '0') {
		return nil, p.fail("not a number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("a fraction without digits")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("an exponent without digits")
		}
	}
	return &jnode{kind: 'v'}, nil
}
