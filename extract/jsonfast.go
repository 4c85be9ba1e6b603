package extract

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// JSON text straight into document values. parseJSONText reads a json or
// jsonb value through encoding/json's tokens: an interface, a string and
// often a map per token, near a hundred allocations for a small object.
// jsonFast reads the same text in one pass into the arena (strings in its
// byte blocks, numbers, arrays and documents in its slabs) and gives the
// value parseJSONText gives (a number beyond 18 digits or a double's
// precision through jsonNumber itself). It declines (ok false) whatever
// it is not sure to read the same way - a key that repeats, more than
// maxJSONFastKeys keys, a \u escape of an unpaired surrogate, invalid
// UTF-8, nesting deeper than maxJSONDepth, and every syntax error - and
// parseJSONText then decides. TestJSONFastDifferential and FuzzJSONFast
// hold the two to the same results.

// maxJSONDepth is the deepest nesting jsonFast reads.
const maxJSONDepth = 200

// maxJSONFastKeys is the most keys of an object jsonFast reads (it looks
// for a repeated key pairwise).
const maxJSONFastKeys = 64

// jsonFast is the parser's state: the scratch stacks of the elements and
// fields of the arrays and objects being read, reused from value to value.
type jsonFast struct {
	mode   mappings.NumericMode
	a      *arena
	src    []byte
	pos    int
	items  []any
	fields []transform.Field
	buf    []byte
}

// parse reads src as one JSON value.
func (p *jsonFast) parse(a *arena, src []byte) (v any, ok bool) {
	p.a, p.src, p.pos = a, src, 0
	p.items, p.fields = p.items[:0], p.fields[:0]
	v, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, false
	}
	// drop the references the scratch stacks hold
	clear(p.items[:cap(p.items)])
	clear(p.fields[:cap(p.fields)])
	return v, true
}

func (p *jsonFast) space() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonFast) value(depth int) (any, bool) {
	p.space()
	if p.pos >= len(p.src) || depth > maxJSONDepth {
		return nil, false
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		return p.a.string(s), true
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *jsonFast) literal(word string) bool {
	if len(p.src)-p.pos < len(word) || string(p.src[p.pos:p.pos+len(word)]) != word {
		return false
	}
	p.pos += len(word)
	return true
}

func (p *jsonFast) array(depth int) (any, bool) {
	p.pos++ // '['
	base := len(p.items)
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return p.a.boxArray(transform.Array{}), true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		p.items = append(p.items, v)
		p.space()
		if p.pos >= len(p.src) {
			return nil, false
		}
		c := p.src[p.pos]
		p.pos++
		if c == ']' {
			break
		}
		if c != ',' {
			return nil, false
		}
	}
	out := p.a.array(len(p.items) - base)
	copy(out, p.items[base:])
	p.items = p.items[:base]
	return p.a.boxArray(out), true
}

func (p *jsonFast) object(depth int) (any, bool) {
	p.pos++ // '{'
	base := len(p.fields)
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return p.a.boxDoc(transform.Doc{}), true
	}
	for {
		p.space()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		key := p.a.text(k)
		for _, f := range p.fields[base:] {
			if f.Key == key {
				return nil, false // a repeated key: parseJSONText keeps the last
			}
		}
		if len(p.fields)-base >= maxJSONFastKeys {
			return nil, false
		}
		p.space()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, false
		}
		p.pos++
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		p.fields = append(p.fields, transform.Field{Key: key, Value: v})
		p.space()
		if p.pos >= len(p.src) {
			return nil, false
		}
		c := p.src[p.pos]
		p.pos++
		if c == '}' {
			break
		}
		if c != ',' {
			return nil, false
		}
	}
	out := p.a.doc(len(p.fields) - base)
	copy(out, p.fields[base:])
	p.fields = p.fields[:base]
	return p.a.boxDoc(out), true
}

// str reads a string at p.pos (at its opening quote) and returns its
// bytes, unescaped: a slice of src when it has no escape, else of p.buf
// (valid until the next call).
func (p *jsonFast) str() ([]byte, bool) {
	p.pos++ // '"'
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return p.src[start : p.pos-1], true
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.src[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, false // encoding/json writes U+FFFD
			}
			p.pos += size
		default:
			p.pos++
		}
	}
	return nil, false
}

// escaped reads the rest of a string that has an escape at p.pos.
func (p *jsonFast) escaped(start int) ([]byte, bool) {
	p.buf = append(p.buf[:0], p.src[start:p.pos]...)
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return p.buf, true
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return nil, false
			}
			e := p.src[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				p.buf = append(p.buf, e)
			case 'b':
				p.buf = append(p.buf, '\b')
			case 'f':
				p.buf = append(p.buf, '\f')
			case 'n':
				p.buf = append(p.buf, '\n')
			case 'r':
				p.buf = append(p.buf, '\r')
			case 't':
				p.buf = append(p.buf, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return nil, false
				}
				if r >= 0xD800 && r < 0xDC00 {
					// a high surrogate: the low one must follow
					if p.pos+1 >= len(p.src) || p.src[p.pos] != '\\' || p.src[p.pos+1] != 'u' {
						return nil, false
					}
					p.pos += 2
					lo, ok := p.hex4()
					if !ok || lo < 0xDC00 || lo >= 0xE000 {
						return nil, false
					}
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				} else if r >= 0xDC00 && r < 0xE000 {
					return nil, false
				}
				p.buf = utf8.AppendRune(p.buf, r)
			default:
				return nil, false
			}
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.src[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, false
			}
			p.buf = append(p.buf, p.src[p.pos:p.pos+size]...)
			p.pos += size
		default:
			p.buf = append(p.buf, c)
			p.pos++
		}
	}
	return nil, false
}

func (p *jsonFast) hex4() (rune, bool) {
	if len(p.src)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.src[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

// number reads a JSON number: an integer of at most 18 digits as
// jsonNumber gives it (int32 or int64), a decimal a double holds exactly
// as that double; any other declines.
func (p *jsonFast) number() (any, bool) {
	start := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	nInt := p.pos - intStart
	if nInt == 0 || nInt > 1 && p.src[intStart] == '0' {
		return nil, false
	}
	isInt := true
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		isInt = false
		p.pos++
		fs := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == fs {
			return nil, false
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		isInt = false
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		es := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == es {
			return nil, false
		}
	}
	num := p.src[start:p.pos]
	if isInt {
		if nInt > 18 {
			return p.slowNumber(num)
		}
		var n int64
		for _, c := range num[intStart-start:] {
			n = n*10 + int64(c-'0')
		}
		if num[0] == '-' {
			n = -n
		}
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			return p.a.int32(int32(n)), true
		}
		return p.a.int64(n), true
	}
	if f, ok := shortDecimal(num); ok {
		return p.a.float64(f), true
	}
	// (ParseFloat keeps nothing of its argument.)
	s := unsafe.String(&num[0], len(num))
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return p.slowNumber(num)
	}
	var buf [32]byte
	if !sameDecimalBytes(num, strconv.AppendFloat(buf[:0], f, 'g', -1, 64)) {
		return p.slowNumber(num) // a double may not hold it
	}
	return p.a.float64(f), true
}

// shortDecimal is number's path for the decimals most JSON holds: num
// (a JSON number with a fraction or an exponent, its syntax checked) is
// m·10^q with m of at most 15 significant digits and |q| <= 22, and f is
// its double. Otherwise ok is false and number asks strconv.
//
// Why f is what number's check would accept: m and 10^q are exact
// doubles (m < 2^53, 10^q for q <= 22), so one multiplication or
// division rounds m·10^q correctly, as ParseFloat does; and the value
// (0 or 1e-22 to 1e37) is a normal double, where two decimals of at most
// 15 significant digits never round to the same double (15 digits is
// float64's guaranteed decimal precision), so no shorter decimal reads
// back as f and the shortest form strconv writes is num's own digits,
// which the check compares. Zero keeps num's sign, as ParseFloat's does.
func shortDecimal(num []byte) (f float64, ok bool) {
	neg := num[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	var (
		m      uint64
		digits int // m's digits, from its first nonzero one
		zeros  int // zeros after m's last nonzero digit, not in m yet
		q      int
		frac   bool
	)
	for ; i < len(num); i++ {
		c := num[i]
		if c == '.' {
			frac = true
			continue
		}
		if c == 'e' || c == 'E' {
			break
		}
		if frac {
			q--
		}
		if c == '0' {
			if digits > 0 {
				zeros++
			}
			continue
		}
		if digits+zeros+1 > 15 {
			return 0, false
		}
		digits += zeros + 1
		for ; zeros > 0; zeros-- {
			m *= 10
		}
		m = m*10 + uint64(c-'0')
	}
	q += zeros
	if i < len(num) { // the exponent
		i++
		eneg := false
		if num[i] == '+' || num[i] == '-' {
			eneg = num[i] == '-'
			i++
		}
		if len(num)-i > 4 {
			return 0, false
		}
		e := 0
		for ; i < len(num); i++ {
			e = e*10 + int(num[i]-'0')
		}
		if eneg {
			e = -e
		}
		q += e
	}
	switch {
	case m == 0:
		f = 0
	case q >= 0 && q < len(exactPow10):
		f = float64(m) * exactPow10[q]
	case q < 0 && -q < len(exactPow10):
		f = float64(m) / exactPow10[-q]
	default:
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

// slowNumber is jsonNumber of the number num (whose syntax is checked).
func (p *jsonFast) slowNumber(num []byte) (any, bool) {
	v, err := jsonNumber(p.a.text(num), p.mode)
	return v, err == nil
}

// sameDecimalBytes is sameDecimal of two numbers of at most 40 significant
// digits and an exponent of at most 4 digits (false otherwise), without
// an allocation.
func sameDecimalBytes(a, b []byte) bool {
	var da, db [40]byte
	na, ea, sa, oka := normDecimalBytes(da[:0], a)
	nb, eb, sb, okb := normDecimalBytes(db[:0], b)
	if !oka || !okb {
		return false
	}
	return string(na) == string(nb) && (len(na) == 0 || ea == eb && sa == sb)
}

// normDecimalBytes is normDecimal appending the digits to dst (ok false
// when they do not fit in its capacity or the exponent is long).
func normDecimalBytes(dst, s []byte) (digits []byte, exp int, neg, ok bool) {
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	} else if len(s) > 0 && s[0] == '+' {
		s = s[1:]
	}
	for i, c := range s {
		if c == 'e' || c == 'E' {
			e := s[i+1:]
			eneg := false
			if len(e) > 0 && (e[0] == '+' || e[0] == '-') {
				eneg, e = e[0] == '-', e[1:]
			}
			if len(e) == 0 || len(e) > 4 {
				return nil, 0, neg, false
			}
			for _, d := range e {
				if d < '0' || d > '9' {
					return nil, 0, neg, false
				}
				exp = exp*10 + int(d-'0')
			}
			if eneg {
				exp = -exp
			}
			s = s[:i]
			break
		}
	}
	frac := false
	for _, c := range s {
		switch {
		case c == '.':
			frac = true
		case c < '0' || c > '9':
			return nil, 0, neg, false
		default:
			if frac {
				exp--
			}
			if len(dst) == 0 && c == '0' {
				continue // leading zero
			}
			if len(dst) == cap(dst) {
				return nil, 0, neg, false
			}
			dst = append(dst, c)
		}
	}
	for len(dst) > 0 && dst[len(dst)-1] == '0' {
		dst = dst[:len(dst)-1]
		exp++
	}
	return dst, exp, neg, true
}
