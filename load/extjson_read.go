package load

// Reading relaxed Extended JSON back into BSON, for verify's scan of a
// directory target: the driver's reader (bson.UnmarshalExtJSON) builds a
// token per value and took half of verify's CPU time. parseExtJSON reads
// the JSON this package writes (AppendExtJSON) directly into BSON bytes:
// plain JSON values, and the wrappers $numberDecimal, $date (ISO text or
// $numberLong), $binary (subtypes 00 and 04) and $numberDouble as
// AppendExtJSON writes them. Anything else - another wrapper, a key
// starting with '$', a number, escape or date it does not read exactly as
// the driver would - makes it give up, and the driver reads the line.
// TestParseExtJSON and FuzzParseExtJSON hold it to the driver's results.

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// UnmarshalExtJSON appends the BSON document of one line of relaxed
// Extended JSON to dst, as bson.UnmarshalExtJSON(line, false, &raw) would.
func UnmarshalExtJSON(dst []byte, line []byte) ([]byte, error) {
	if out, ok := parseExtJSON(dst, line); ok {
		return out, nil
	}
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON(line, false, &raw); err != nil {
		return dst, err
	}
	return append(dst, raw...), nil
}

// parseExtJSON is the fast path of UnmarshalExtJSON; ok is false when it
// leaves the line to the driver (dst may then hold partial output).
func parseExtJSON(dst, line []byte) ([]byte, bool) {
	p := jsonParser{s: line}
	p.space()
	if !p.eat('{') {
		return dst, false
	}
	dst, ok := p.document(dst)
	if !ok {
		return dst, false
	}
	p.space()
	return dst, p.i == len(p.s)
}

type jsonParser struct {
	s   []byte
	i   int
	key []byte // scratch for keys and string values
	val []byte // scratch for the string values of wrappers
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// eat consumes c (after white space) when it is next.
func (p *jsonParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// document reads the members of an object whose '{' was read, as a BSON
// document appended to dst.
func (p *jsonParser) document(dst []byte) ([]byte, bool) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	if !p.eat('}') {
		for {
			var ok bool
			if dst, ok = p.member(dst); !ok {
				return dst, false
			}
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				break
			}
			return dst, false
		}
	}
	dst, err := bsoncore.AppendDocumentEnd(dst, idx)
	return dst, err == nil
}

// member reads `"key": value`.
func (p *jsonParser) member(dst []byte) ([]byte, bool) {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return dst, false
	}
	p.i++
	var ok bool
	p.key, ok = p.str(p.key[:0])
	if !ok || len(p.key) > 0 && p.key[0] == '$' || !p.eat(':') {
		return dst, false
	}
	for _, c := range p.key {
		if c == 0 {
			return dst, false
		}
	}
	// The key is written after the value's type byte: remember where.
	typePos := len(dst)
	dst = append(dst, 0)
	dst = append(dst, p.key...)
	dst = append(dst, 0)
	t, dst, ok := p.value(dst)
	if !ok {
		return dst, false
	}
	dst[typePos] = byte(t)
	return dst, true
}

// value reads a value and appends its BSON encoding (without type byte).
func (p *jsonParser) value(dst []byte) (bson.Type, []byte, bool) {
	p.space()
	if p.i >= len(p.s) {
		return 0, dst, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		p.i++
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst, ok := p.str(dst)
		if !ok {
			return 0, dst, false
		}
		n := len(dst) - start - 4 + 1
		dst = append(dst, 0)
		dst[start], dst[start+1], dst[start+2], dst[start+3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
		return bson.TypeString, dst, true
	case c == '{':
		p.i++
		p.space()
		if p.i+1 < len(p.s) && p.s[p.i] == '"' && p.s[p.i+1] == '$' {
			return p.wrapper(dst)
		}
		dst, ok := p.document(dst)
		return bson.TypeEmbeddedDocument, dst, ok
	case c == '[':
		p.i++
		dst, ok := p.array(dst)
		return bson.TypeArray, dst, ok
	case c == 't':
		if p.word("true") {
			return bson.TypeBoolean, append(dst, 1), true
		}
	case c == 'f':
		if p.word("false") {
			return bson.TypeBoolean, append(dst, 0), true
		}
	case c == 'n':
		if p.word("null") {
			return bson.TypeNull, dst, true
		}
	case c == '-' || c >= '0' && c <= '9':
		return p.number(dst)
	}
	return 0, dst, false
}

func (p *jsonParser) word(w string) bool {
	if len(p.s)-p.i >= len(w) && string(p.s[p.i:p.i+len(w)]) == w {
		p.i += len(w)
		return true
	}
	return false
}

// array reads the items of an array whose '[' was read.
func (p *jsonParser) array(dst []byte) ([]byte, bool) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	if !p.eat(']') {
		for i := 0; ; i++ {
			typePos := len(dst)
			dst = append(dst, 0)
			dst = append(dst, indexKey(i)...)
			dst = append(dst, 0)
			t, out, ok := p.value(dst)
			dst = out
			if !ok {
				return dst, false
			}
			dst[typePos] = byte(t)
			if p.eat(',') {
				continue
			}
			if p.eat(']') {
				break
			}
			return dst, false
		}
	}
	dst, err := bsoncore.AppendDocumentEnd(dst, idx)
	return dst, err == nil
}

// number reads a JSON number as the driver does: an integer is an int32
// when it fits, else an int64; a fraction or exponent makes a double.
func (p *jsonParser) number(dst []byte) (bson.Type, []byte, bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := p.digits()
	if digits == 0 || digits > 1 && p.s[p.i-digits] == '0' {
		return 0, dst, false // no digits, or a leading zero
	}
	float := false
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return 0, dst, false
		}
		float = true
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return 0, dst, false
		}
		float = true
	}
	text := string(p.s[start:p.i])
	if !float {
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return 0, dst, false
		}
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return bson.TypeInt32, bsoncore.AppendInt32(dst, int32(v)), true
		}
		return bson.TypeInt64, bsoncore.AppendInt64(dst, v), true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, dst, false
	}
	return bson.TypeDouble, bsoncore.AppendDouble(dst, f), true
}

func (p *jsonParser) digits() int {
	n := 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// str reads the rest of a string whose opening quote was read and appends
// its bytes to dst. It gives up on control characters, invalid UTF-8 and
// \u escapes of surrogates (where the driver substitutes).
func (p *jsonParser) str(dst []byte) ([]byte, bool) {
	for {
		start := p.i
		ascii := true
		for p.i < len(p.s) {
			c := p.s[p.i]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			if c >= utf8.RuneSelf {
				ascii = false
			}
			p.i++
		}
		if !ascii && !utf8.Valid(p.s[start:p.i]) {
			return dst, false
		}
		dst = append(dst, p.s[start:p.i]...)
		if p.i >= len(p.s) {
			return dst, false
		}
		switch p.s[p.i] {
		case '"':
			p.i++
			return dst, true
		case '\\':
			p.i++
			if p.i >= len(p.s) {
				return dst, false
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				if len(p.s)-p.i < 4 {
					return dst, false
				}
				r, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 16)
				if err != nil || r >= 0xD800 && r <= 0xDFFF {
					return dst, false
				}
				p.i += 4
				dst = utf8.AppendRune(dst, rune(r))
			default:
				return dst, false
			}
		default:
			return dst, false // a control character
		}
	}
}

// wrapper reads an Extended JSON wrapper object whose '{' was read.
func (p *jsonParser) wrapper(dst []byte) (bson.Type, []byte, bool) {
	p.i++ // '"'
	var ok bool
	p.key, ok = p.str(p.key[:0])
	if !ok || !p.eat(':') {
		return 0, dst, false
	}
	switch string(p.key) {
	case "$numberDecimal":
		s, ok := p.stringValue()
		if !ok || !p.eat('}') {
			return 0, dst, false
		}
		d, err := parseDecimal(s)
		if err != nil {
			return 0, dst, false
		}
		hi, lo := d.GetBytes()
		return bson.TypeDecimal128, bsoncore.AppendDecimal128(dst, hi, lo), true
	case "$numberDouble":
		s, ok := p.stringBytes()
		if !ok || !p.eat('}') {
			return 0, dst, false
		}
		var f float64
		switch string(s) {
		case "NaN":
			f = QuietNaN
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			return 0, dst, false
		}
		return bson.TypeDouble, bsoncore.AppendDouble(dst, f), true
	case "$date":
		var ms int64
		if p.eat('{') {
			if !p.eat('"') {
				return 0, dst, false
			}
			p.key, ok = p.str(p.key[:0])
			if !ok || string(p.key) != "$numberLong" || !p.eat(':') {
				return 0, dst, false
			}
			s, ok := p.stringValue()
			if !ok || !p.eat('}') {
				return 0, dst, false
			}
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, dst, false
			}
			ms = v
		} else {
			s, ok := p.stringBytes()
			if !ok {
				return 0, dst, false
			}
			if ms, ok = parseISODate(s); !ok {
				return 0, dst, false
			}
		}
		if !p.eat('}') {
			return 0, dst, false
		}
		return bson.TypeDateTime, bsoncore.AppendDateTime(dst, ms), true
	case "$binary":
		// {"base64": "...", "subType": "00" or "04"}
		if !p.eat('{') || !p.eat('"') {
			return 0, dst, false
		}
		p.key, ok = p.str(p.key[:0])
		if !ok || string(p.key) != "base64" || !p.eat(':') {
			return 0, dst, false
		}
		b64, ok := p.stringValue()
		if !ok || !p.eat(',') || !p.eat('"') {
			return 0, dst, false
		}
		p.key, ok = p.str(p.key[:0])
		if !ok || string(p.key) != "subType" || !p.eat(':') {
			return 0, dst, false
		}
		sub, ok := p.stringValue()
		if !ok || !p.eat('}') || !p.eat('}') {
			return 0, dst, false
		}
		var subtype byte
		switch sub {
		case "00":
			subtype = bson.TypeBinaryGeneric
		case "04":
			subtype = bson.TypeBinaryUUID
		default:
			return 0, dst, false
		}
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || subtype == bson.TypeBinaryUUID && len(data) != 16 {
			return 0, dst, false
		}
		return bson.TypeBinary, bsoncore.AppendBinary(dst, subtype, data), true
	}
	return 0, dst, false
}

// stringBytes reads a JSON string value (after white space) into the
// parser's scratch memory, valid until the next call: what a wrapper
// only parses needs no string of its own (a directory's dates, read by
// verify, were an allocation each).
func (p *jsonParser) stringBytes() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	var ok bool
	p.val, ok = p.str(p.val[:0])
	return p.val, ok
}

// stringValue reads a JSON string value (after white space).
func (p *jsonParser) stringValue() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	b, ok := p.str(nil)
	return string(b), ok
}

// parseISODate reads exactly the form appendJSONDate writes for the years
// 1970..9999, "2006-01-02T15:04:05Z" with one to three fractional digits
// or none, as milliseconds since the epoch.
func parseISODate[T string | []byte](s T) (int64, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return 0, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	d, ok3 := num(8, 10)
	h, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59 {
		return 0, false
	}
	ms := 0
	if rest := s[19 : len(s)-1]; len(rest) != 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 4 {
			return 0, false
		}
		f, ok := num(20, len(s)-1)
		if !ok {
			return 0, false
		}
		for n := len(rest) - 1; n < 3; n++ {
			f *= 10
		}
		ms = f
	}
	days := daysFromCivil(y, mo, d)
	return ((days*24+int64(h))*60+int64(mi))*60_000 + int64(sec)*1000 + int64(ms), true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the day count since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's days-from-civil), the inverse of civilDate.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}
