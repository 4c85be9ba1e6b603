package load

// Relaxed Extended JSON written straight from document values, the hot path
// of directory targets. The bytes are exactly those of the driver's
// bson.MarshalExtJSON(raw, false, false) for the same document (a test holds
// the two together over random documents), without the round trip through
// BSON and the driver's reflection-based writer, which cost 40% of a
// migration's CPU time in profiles.
//
//	nil                null
//	int32, int64       the number
//	float64            shortest round-trip form, with ".0" on integers;
//	                   {"$numberDouble":"NaN"} (and ±Infinity)
//	string             JSON string (no HTML escaping; U+2028/U+2029 and
//	                   control characters escaped, invalid UTF-8 as U+FFFD)
//	bool               true / false
//	time.Time          {"$date":"2006-01-02T15:04:05.999Z"} in 1970..9999,
//	                   {"$date":{"$numberLong":"ms"}} outside
//	transform.Decimal  {"$numberDecimal":"..."} (text as Decimal128 prints it)
//	transform.UUID     {"$binary":{"base64":"...","subType":"04"}}
//	transform.Binary   {"$binary":{"base64":"...","subType":"00"}}

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/denorm/denorm/transform"
)

// AppendExtJSON appends d as relaxed Extended JSON (no trailing newline).
// Values the BSON encoder refuses are refused here too, with the same
// messages.
func AppendExtJSON(dst []byte, d transform.Doc) ([]byte, error) {
	dst, _, err := (*keyTexts)(nil).doc(dst, d, 0)
	return dst, fieldErr(err)
}

// AppendExtJSONSized is AppendExtJSON also returning the length of d's
// BSON encoding, added up in the same walk (what a size limit checks).
func AppendExtJSONSized(dst []byte, d transform.Doc) ([]byte, int, error) {
	dst, size, err := (*keyTexts)(nil).doc(dst, d, 0)
	return dst, size, fieldErr(err)
}

// keyTexts remembers the JSON text of the field names a writer met last,
// in slots chosen by where a name's bytes are. A mapping's field names are
// the same strings in every document it builds: their text is copied, not
// checked and escaped again (the wide benchmark writes 75 names a
// document). A slot holds a copy of the name and a hit compares the whole
// name, so a name from data whose bytes are later reused for another is
// never mistaken for it. The nil *keyTexts remembers nothing.
//
// It also remembers the text of the days its dates fell on last
// ("2006-01-02", by the day number): a table's dates cluster, and the
// children of one parent often share theirs.
type keyTexts struct {
	names [keySlots]keyText
	days  [daySlots]dayText
}

type dayText struct {
	day  uint64 // days since 1970-01-01, plus one (0: empty)
	text [10]byte
}

const daySlots = 64 // a power of two

type keyText struct {
	key  string
	text string // `"key":`
}

const keySlots = 256 // the hash's top 8 bits

// errUnstorable is a problem transform.CheckKeys reports, found by a
// checking walk (depth > 0), which does not spell it: its caller asks
// CheckKeys.
var errUnstorable = errors.New("a field name or nesting no target can hold")

// appendKey writes key and its colon. It refuses a name holding NUL (as
// the BSON encoder does: the encoding's limit) and, when check is set, any
// name the field-name rule refuses (transform.NameOK). Only names NameOK
// accepts are remembered.
func (c *keyTexts) appendKey(dst []byte, key string, check bool) ([]byte, error) {
	var e *keyText
	if c != nil {
		p := uintptr(unsafe.Pointer(unsafe.StringData(key)))
		h := ((uint64(p) + uint64(len(key))) * 0x9e3779b97f4a7c15) >> 56
		e = &c.names[h]
		if e.key == key && e.text != "" {
			return append(dst, e.text...), nil
		}
		// A name's second slot, so that two names meeting in one slot do
		// not push each other out.
		if e2 := &c.names[h^1]; e2.key == key && e2.text != "" {
			return append(dst, e2.text...), nil
		} else if e.text != "" {
			e = e2
		}
	}
	ok := transform.NameOK(key) // it refuses NUL too: only a refused name needs the NUL search
	if !ok && check {
		return dst, errUnstorable
	}
	if !ok && strings.IndexByte(key, 0) >= 0 {
		return dst, &pathError{keys: []string{key}, msg: "a BSON key cannot contain a NUL character"}
	}
	start := len(dst)
	dst = append(appendJSONString(dst, key), ':')
	if e != nil && ok {
		e.key, e.text = strings.Clone(key), string(dst[start:])
	}
	return dst, nil
}

// deeper is the depth of what a document or array at depth holds; 0 (no
// checks) stays 0.
func deeper(depth int) int {
	if depth == 0 {
		return 0
	}
	return depth + 1
}

// doc writes d and returns its BSON size. With depth > 0, d's depth in
// its document, it also checks what transform.CheckKeys checks, failing
// with errUnstorable: one walk instead of two.
func (c *keyTexts) doc(dst []byte, d transform.Doc, depth int) ([]byte, int, error) {
	if depth > 0 && (depth > transform.MaxDepth || !transform.DistinctNames(d)) {
		return dst, 0, errUnstorable
	}
	dst = append(dst, '{')
	size := 5 // int32 length + terminating NUL
	for i := range d {
		f := &d[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = c.appendKey(dst, f.Key, depth > 0); err != nil {
			return dst, 0, err
		}
		var n int
		dst, n, err = c.value(dst, f.Key, f.Value, depth)
		if err != nil {
			return dst, 0, err
		}
		size += 2 + len(f.Key) + n // type byte, key, NUL, value
	}
	return append(dst, '}'), size, nil
}

// value writes v, found in a document at depth (0: no checks), and returns
// the size of its BSON value.
func (c *keyTexts) value(dst []byte, key string, v any, depth int) ([]byte, int, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), 0, nil
	case string:
		return appendJSONString(dst, x), 4 + len(x) + 1, nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), 4, nil
	case int64:
		return strconv.AppendInt(dst, x, 10), 8, nil
	case float64:
		return appendJSONDouble(dst, x), 8, nil
	case bool:
		return strconv.AppendBool(dst, x), 1, nil
	case time.Time:
		return c.appendDate(dst, x.UnixMilli()), 8, nil
	case transform.Decimal:
		dst = append(dst, `{"$numberDecimal":"`...)
		dst, err := appendDecimalText(dst, string(x))
		if err != nil {
			return dst, 0, decimalError(key, x)
		}
		return append(dst, `"}`...), 16, nil
	case transform.UUID:
		return appendJSONBinary(dst, x[:], "04"), 5 + len(x), nil
	case transform.Binary:
		return appendJSONBinary(dst, x, "00"), 5 + len(x), nil
	case transform.Doc:
		dst, n, err := c.doc(dst, x, deeper(depth))
		return dst, n, under(key, err)
	case transform.Array:
		if depth > 0 && depth+1 > transform.MaxDepth {
			return dst, 0, errUnstorable
		}
		dst = append(dst, '[')
		size := 5
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			k := indexKey(i)
			var n int
			var err error
			dst, n, err = c.value(dst, k, e, deeper(depth))
			if err != nil {
				return dst, 0, under(key, err)
			}
			size += 2 + len(k) + n
		}
		return append(dst, ']'), size, nil
	}
	return dst, 0, unsupportedError(key, v)
}

// pathError is a value the encoders refuse, with the keys leading to it
// gathered innermost first as the error travels up: the happy path
// allocates nothing to track where it is.
type pathError struct {
	keys []string
	msg  string
}

func (e *pathError) Error() string {
	keys := make([]string, len(e.keys))
	for i, k := range e.keys {
		keys[len(keys)-1-i] = k
	}
	return fmt.Sprintf("field %q: %s", strings.Join(keys, "."), e.msg)
}

// under adds the enclosing key to a pathError.
func under(key string, err error) error {
	if pe, ok := err.(*pathError); ok {
		pe.keys = append(pe.keys, key)
	}
	return err
}

// fieldErr turns a pathError into a plain error for callers.
func fieldErr(err error) error {
	if pe, ok := err.(*pathError); ok {
		return fmt.Errorf("%s", pe.Error())
	}
	return err
}

func decimalError(key string, x transform.Decimal) error {
	return &pathError{keys: []string{key}, msg: fmt.Sprintf("decimal %s does not fit a BSON Decimal128 (34 significant digits, exponent -6176..6111); use numeric mode string or double", decimalAbbrev(string(x)))}
}

func unsupportedError(key string, v any) error {
	return &pathError{keys: []string{key}, msg: fmt.Sprintf("unsupported value type %T", v)}
}

func appendJSONDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `{"$numberDouble":"NaN"}`...)
	case math.IsInf(f, 1):
		return append(dst, `{"$numberDouble":"Infinity"}`...)
	case math.IsInf(f, -1):
		return append(dst, `{"$numberDouble":"-Infinity"}`...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'G', -1, 64)
	for _, c := range dst[start:] {
		if c == 'E' || c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

// appendJSONDate writes a BSON date (milliseconds since the epoch): ISO
// 8601 in UTC for the years 1970..9999, as the driver does (layout
// "2006-01-02T15:04:05.999Z07:00"), formatted here without time.Time.
func appendJSONDate(dst []byte, ms int64) []byte {
	return (*keyTexts)(nil).appendDate(dst, ms)
}

// appendDate is appendJSONDate, taking the day's text from the slots of
// c when it is there.
func (c *keyTexts) appendDate(dst []byte, ms int64) []byte {
	if ms < 0 || ms >= maxISODateMillis {
		dst = append(dst, `{"$date":{"$numberLong":"`...)
		dst = strconv.AppendInt(dst, ms, 10)
		return append(dst, `"}}`...)
	}
	days, rest := uint64(ms/86_400_000), ms%86_400_000
	dst = append(dst, `{"$date":"`...)
	if c == nil {
		dst = appendDay(dst, days)
	} else {
		e := &c.days[days%daySlots]
		if e.day != days+1 {
			appendDay(e.text[:0], days)
			e.day = days + 1
		}
		dst = append(dst, e.text[:]...)
	}
	dst = append(dst, 'T')
	dst = append2(dst, int(rest/3_600_000))
	dst = append(dst, ':')
	dst = append2(dst, int(rest/60_000%60))
	dst = append(dst, ':')
	dst = append2(dst, int(rest/1000%60))
	if frac := int(rest % 1000); frac != 0 {
		// ".999": milliseconds without trailing zeros
		dst = append(dst, '.', byte('0'+frac/100))
		if frac%100 != 0 {
			dst = append(dst, byte('0'+frac/10%10))
			if frac%10 != 0 {
				dst = append(dst, byte('0'+frac%10))
			}
		}
	}
	return append(dst, `Z"}`...)
}

// appendDay writes the date of a day count since 1970-01-01 (before the
// year 10000) as "2006-01-02".
func appendDay(dst []byte, days uint64) []byte {
	y, m, d := civilDate(days)
	dst = append4(dst, y)
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	return append2(dst, d)
}

// maxISODateMillis is 10000-01-01T00:00:00Z: later dates, and those before
// 1970, are written as $numberLong.
const maxISODateMillis = 253402300800000

// civilDate is the proleptic Gregorian date of a day count since
// 1970-01-01 (>= 0), by Howard Hinnant's days-to-civil algorithm.
// Unsigned, its divisions by constants take fewer instructions (11 -> 8 ns).
func civilDate(days uint64) (year, month, day int) {
	z := days + 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day = int(doy - (153*mp+2)/5 + 1)
	month = int(mp + 3)
	if month > 12 {
		month -= 12
	}
	year = int(yoe + era*400)
	if month <= 2 {
		year++
	}
	return year, month, day
}

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

func append4(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

func appendJSONBinary(dst, b []byte, subtype string) []byte {
	dst = append(dst, `{"$binary":{"base64":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, b)
	dst = append(dst, `","subType":"`...)
	dst = append(dst, subtype...)
	return append(dst, `"}}`...)
}

// jsonSafe marks the ASCII bytes written as they are inside a JSON string.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// Bytes of a word, for safe8.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// safe8 reports whether none of the 8 bytes of s needs attention in a JSON
// string: no control character, quote, backslash or non-ASCII byte.
func safe8(s string) bool {
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	hasZero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	less := (x - ones*0x20) &^ x & highs // a byte below 0x20
	return (less | hasZero(x^(ones*'"')) | hasZero(x^(ones*'\\')) | x&highs) == 0
}

// appendJSONString writes s as a JSON string the way the driver does:
// control characters, quote and backslash escaped, U+2028 and U+2029
// escaped, invalid UTF-8 replaced by \ufffd, everything else verbatim.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while they need no escaping.
		for i+8 <= len(s) && safe8(s[i:i+8]) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
