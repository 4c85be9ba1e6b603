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
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/denorm/denorm/internal/digits"
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
// document). A slot holds the name's string itself, and a hit is the same
// string: the same bytes in memory and the same length. Strings do not
// change, and the slot's reference keeps that memory from being reused
// for another name while the slot remembers it (comparing the names' bytes
// instead, against a copy, cost 5% of the CPU of a migration of a
// 24-column table). The nil *keyTexts remembers nothing.
//
// A name may sit in any of keyWays slots from its hash on, and a new name
// takes a free one of them, or else one not met lately: three names
// whose hash met in a pair of slots, as the two slots a name once had
// allowed, pushed each other out in every document (a 41-column table
// copied and escaped two names a document, and allocated their copies).
// A name is remembered the second time it is missed at the same address
// (seen holds the addresses of names missed once, by the same windows): a
// mapping's names are the same strings in every document, while names
// from data (jsonb keys) are new strings in every row, and remembering
// them cost two copies each and pushed the mapping's names out (the json
// family of the typed benchmark: a quarter of its CPU in appendKey).
type keyTexts struct {
	names  [keySlots]keyText
	seen   [keySlots]uint64
	misses int // names written without their remembered text
	// lists are the lists of names met in documents found distinct.
	lists transform.NameLists
}

type keyText struct {
	key  string
	text string // `"key":`
	used bool   // met since a new name last looked for a slot here
}

const (
	keySlots = 512 // the hash's top 9 bits
	keyWays  = 8
)

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
		id := (uint64(p) + uint64(len(key))) * 0x9e3779b97f4a7c15
		h := id >> 55
		var free *keyText
		for i := range uint64(keyWays) {
			s := &c.names[(h+i)%keySlots]
			if s.text == "" {
				if free == nil {
					free = s
				}
				continue
			}
			if len(s.key) == len(key) && unsafe.StringData(s.key) == unsafe.StringData(key) {
				s.used = true
				return append(dst, s.text...), nil
			}
		}
		c.misses++
		if c.seenBefore(h, id) { // missed at this address before: remember it
			e = c.slotFor(h, free)
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
		e.key, e.text, e.used = key, string(dst[start:]), true
	}
	return dst, nil
}

// slotFor is the slot a name to remember takes in the window from h: a
// free one, or else the first not met since the last look (a clock's
// second chance: a mapping's names are met in every document, others
// seldom again); when all were, the look cleared them, and the first
// goes.
func (c *keyTexts) slotFor(h uint64, free *keyText) *keyText {
	if free != nil {
		return free
	}
	for i := range uint64(keyWays) {
		s := &c.names[(h+i)%keySlots]
		if !s.used {
			return s
		}
		s.used = false
	}
	return &c.names[h%keySlots]
}

// seenBefore tells whether the name id was missed before, in the
// window of keyWays slots from h, and otherwise notes it there: in a free
// slot, or when there is none (names from data fill them) in one taken
// in turn. A slot of its own would let two names that share it push each
// other out of seen, and neither would ever be remembered.
func (c *keyTexts) seenBefore(h, id uint64) bool {
	var free *uint64
	for i := range uint64(keyWays) {
		s := &c.seen[(h+i)%keySlots]
		if *s == id {
			*s = 0
			return true
		}
		if *s == 0 && free == nil {
			free = s
		}
	}
	if free == nil {
		free = &c.seen[(h+uint64(c.misses)%keyWays)%keySlots]
	}
	*free = id
	return false
}

// distinct is transform.DistinctNames(d), from the lists of names met
// before when c remembers.
func (c *keyTexts) distinct(d transform.Doc) bool {
	if c == nil {
		return transform.DistinctNames(d)
	}
	return c.lists.Distinct(d)
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
	if depth > 0 && (depth > transform.MaxDepth || !c.distinct(d)) {
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
		return appendJSONDate(dst, x.UnixMilli()), 8, nil
	case transform.Decimal:
		dst = append(dst, `{"$numberDecimal":"`...)
		dst, err := appendDecimalText(dst, string(x))
		if err != nil {
			return dst, 0, decimalError(key, x)
		}
		return append(dst, `"}`...), 16, nil
	case transform.UUID:
		return appendJSONUUID(dst, &x), 5 + len(x), nil
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

// appendJSONDouble writes f as the driver does: strconv's shortest 'G'
// form, with ".0" added to a number with neither '.' nor 'E', and
// {"$numberDouble":...} for NaN and the infinities. Numbers of magnitude
// 1e-8 to 1e15 with at most 15 significant digits (money, measures, most
// numerics read as double) take a fast path; all others go to
// appendJSONFinite (shortest64.go), which writes strconv's bytes without
// it.
func appendJSONDouble(dst []byte, f float64) []byte {
	if out, ok := appendShortDouble(dst, f); ok {
		return out
	}
	switch {
	case math.IsNaN(f):
		return append(dst, `{"$numberDouble":"NaN"}`...)
	case math.IsInf(f, 1):
		return append(dst, `{"$numberDouble":"Infinity"}`...)
	case math.IsInf(f, -1):
		return append(dst, `{"$numberDouble":"-Infinity"}`...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	return appendJSONFinite(dst, f)
}

// appendShortDouble is appendJSONDouble's fast path: it writes f and
// returns true when |f| is the double nearest a decimal D = n/10^s with
// 10^14 <= n < 10^15 and 0 <= s <= 22 (so 1e-8 <= D < 1e15, at most 15
// significant digits), and returns dst unchanged and false otherwise.
//
// Why the bytes are strconv's. Let a = |f| and let n, s be as above with
// float64(n)/10^s == a. Both operands are exact (n < 2^53, 10^s exact for
// s <= 22) and IEEE division rounds correctly, so a = RN(D): D parses to a.
// Let D have k <= 15 significant digits and leading digit at 10^e
// (e = 14-s, as n has 15 digits). Any other decimal D' with at most k
// significant digits is at least 10^(e-15) from D: in D's decade both are
// multiples of 10^(e-k+1) (distance >= 10^(e-14)); above it D' >= 10^(e+1)
// while D <= 10^(e+1) - 10^(e-k+1); below it D' <= 10^e - 10^(e-k) while
// D >= 10^e. The decimals that parse to a lie in an interval of width at
// most ulp(a) <= 2^-52·a, and a < 10^(e+1)·(1+2^-53) (or, in the third
// case, a < 10^e + ulp(a)), so the width is below 10^(e-14) (below
// 10^(e-15) in the third case): D' never parses to a. So D is the one
// shortest decimal that round-trips, the digits strconv's shortest mode
// prints (it minimises the digit count first, and would only then choose
// the nearest). 'G' with shortest precision prints D's digits in %f form
// when e is in -4..5: the integer part ("0" when D < 1), and a fraction of
// D's digits after the point, leading zeros kept, trailing zeros dropped
// (an integral D has no point, hence ".0" from appendJSONDouble); and in
// %e form otherwise: the first digit, the point and the others when there
// are others, 'E', the exponent's sign and at least two digits.
//
// Finding n: e, the decade of D, is the k with RN(10^k) <= a < RN(10^(k+1))
// (rounding is monotonic, and a D of at most 15 digits below 10^k is more
// than an ulp from it), found from the binary exponent and one comparison;
// s = 14-e, n = round(a·10^s). When a = RN(D) for such a D, a·10^s is within
// n·2^-53 + 1/16 < 0.2 of n after the product's own rounding, so the
// rounding finds it; any other a fails the check (or the range of n) and
// falls back.
//
// Writing %f: the integer part of D is int64(a), since a and D lie on the
// same side of every integer (D is an integer, so a = D, or D is at least
// 10^-s = 10^(e-14) from each integer, more than half an ulp of a); the
// fraction n - ip·10^s is checked to be below 10^s anyway.
func appendShortDouble(dst []byte, f float64) ([]byte, bool) {
	a := math.Abs(f)
	if !(a >= 1e-8 && a < 1e15) { // NaN too
		return dst, false
	}
	// a is in [2^e2, 2^(e2+1)), which holds one power of ten at most:
	// floor(e2·log10 2) or one more.
	e2 := int(math.Float64bits(a)>>52) - 1023
	e := (e2 * 78913) >> 18 // floor(e2·log10(2)) for |e2| < 2^10
	if a >= float10[e+1+8] {
		e++
	}
	if e < -8 || e > 14 {
		return dst, false
	}
	s := 14 - e
	// int64, not uint64: the signed conversions are single instructions.
	n := int64(a*float10[s+8] + 0.5)
	if n < 1e14 || n >= 1e15 || float64(n)/float10[s+8] != a {
		return dst, false
	}
	// "-999999." and 18 fraction digits at most; "-9.99999999999999E-08".
	start := len(dst)
	dst = slices.Grow(dst, 32)
	b := dst[start : start+32]
	i := 0
	if f < 0 {
		b[0] = '-'
		i = 1
	}
	if e < -4 || e > 5 {
		// The layout of appendJSONFinite's %e, written here again: shared
		// through a function, this path took 37 ns instead of 28.
		m, k := stripZeros(uint64(n), 15)
		putDigits(b[i+1:i+1+k], m)
		b[i] = b[i+1]
		if k > 1 {
			b[i+1] = '.'
			i++
		}
		i += k
		b[i], b[i+1] = 'E', '+'
		if e < 0 {
			b[i+1] = '-'
			e = -e
		}
		b[i+2], b[i+3] = digits2[2*e], digits2[2*e+1]
		return dst[:start+i+4], true
	}
	ip := int64(a)
	frac := uint64(n - ip*int64(uint10[s]))
	if frac >= uint10[s] {
		return dst, false
	}
	i += putUint(b[i:], uint64(ip))
	b[i] = '.'
	i++
	if frac == 0 {
		b[i] = '0'
		return dst[:start+i+1], true
	}
	// s fraction digits, leading zeros included, less the trailing zeros
	frac, w := stripZeros(frac, s)
	putDigits(b[i:i+w], frac)
	return dst[:start+i+w], true
}

// stripZeros drops v's trailing zeros (v > 0, below 10^15: 14 at most,
// which 8+4+2+1 strips) and returns it with its digit count k less them.
// It is inlined into the fast double path; stripZeros64, the general one,
// cost money-like values there 18.7 -> 20.8 ns.
func stripZeros(v uint64, k int) (uint64, int) {
	if v%100_000_000 == 0 {
		v /= 100_000_000
		k -= 8
	}
	if v%10_000 == 0 {
		v /= 10_000
		k -= 4
	}
	if v%100 == 0 {
		v /= 100
		k -= 2
	}
	if v%10 == 0 {
		v /= 10
		k--
	}
	return v, k
}

// float10 is RN(10^(i-8)), the double nearest 10^(i-8), for i in 0..31
// (10^-8..10^23; exact from 10^0 to 10^22); uint10 is 10^i.
var float10 = [...]float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23}

var uint10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// digits2 is "00".."99".
const digits2 = digits.Pairs

// putUint writes v (< 10^6) at the start of b and returns its length.
func putUint(b []byte, v uint64) int {
	n := digits.Len(v)
	putDigits(b[:n], v)
	return n
}

// putDigits fills b with v's last len(b) decimal digits, zeros in front.
func putDigits(b []byte, v uint64) {
	i := len(b)
	for i >= 2 {
		d := v % 100 * 2
		v /= 100
		b[i-1] = digits2[d+1]
		b[i-2] = digits2[d]
		i -= 2
	}
	if i == 1 {
		b[0] = byte('0' + v%10)
	}
}

// putDigitsLong is putDigits for up to 20 digits: eight at a time, in two
// independent halves, then putDigits.
func putDigitsLong(b []byte, v uint64) {
	i := len(b)
	for i > 8 {
		x := uint32(v % 100_000_000)
		v /= 100_000_000
		hi, lo := x/10_000, x%10_000
		h1, h2, l1, l2 := hi/100*2, hi%100*2, lo/100*2, lo%100*2
		_ = b[i-8]
		b[i-1], b[i-2] = digits2[l2+1], digits2[l2]
		b[i-3], b[i-4] = digits2[l1+1], digits2[l1]
		b[i-5], b[i-6] = digits2[h2+1], digits2[h2]
		b[i-7], b[i-8] = digits2[h1+1], digits2[h1]
		i -= 8
	}
	putDigits(b[:i], v)
}

// appendJSONDate writes a BSON date (milliseconds since the epoch): ISO
// 8601 in UTC for the years 1970..9999, as the driver does (layout
// "2006-01-02T15:04:05.999Z07:00"), formatted here without time.Time. It
// grows dst once and stores the 32 to 36 bytes of
// {"$date":"2006-01-02T15:04:05.999Z"} in place, the day's text from
// dayTexts up to 2099.
func appendJSONDate(dst []byte, ms int64) []byte {
	if uint64(ms) >= maxISODateMillis { // negative too
		dst = append(dst, `{"$date":{"$numberLong":"`...)
		dst = strconv.AppendInt(dst, ms, 10)
		return append(dst, `"}}`...)
	}
	days, t := uint32(uint64(ms)/86_400_000), uint32(uint64(ms)%86_400_000)
	start := len(dst)
	dst = slices.Grow(dst, 36)
	b := (*[36]byte)(dst[start : start+36])
	*(*[10]byte)(b[0:10]) = [10]byte{'{', '"', '$', 'd', 'a', 't', 'e', '"', ':', '"'}
	if days < dayTextDays {
		*(*[10]byte)(b[10:20]) = *dayTexts.day(days)
	} else {
		putDay((*[10]byte)(b[10:20]), days)
	}
	if t == 0 { // midnight: every date, and many timestamps
		*(*[12]byte)(b[20:32]) = [12]byte{'T', '0', '0', ':', '0', '0', ':', '0', '0', 'Z', '"', '}'}
		return dst[:start+32]
	}
	h := t / 3_600_000
	t -= h * 3_600_000
	m := t / 60_000
	t -= m * 60_000
	sec := t / 1000
	frac := t - sec*1000
	b[20] = 'T'
	b[21], b[22] = digits2[2*h], digits2[2*h+1]
	b[23] = ':'
	b[24], b[25] = digits2[2*m], digits2[2*m+1]
	b[26] = ':'
	b[27], b[28] = digits2[2*sec], digits2[2*sec+1]
	n := 29
	if frac != 0 {
		// ".999": milliseconds without trailing zeros
		r := frac % 100
		b[29] = '.'
		b[30] = byte('0' + frac/100)
		b[31], b[32] = digits2[2*r], digits2[2*r+1]
		switch {
		case r%10 != 0:
			n = 33
		case r != 0:
			n = 32
		default:
			n = 31
		}
	}
	b[n], b[n+1], b[n+2] = 'Z', '"', '}'
	return dst[:start+n+3]
}

// dayTexts holds the text ("2006-01-02") of every day of 1970 to 2099,
// nearly all the dates real tables hold: computing a day's text took half
// of a date's writing (the date benchmark writes a new day in every value,
// as a table of orders by date does), copying it from here a tenth. The
// 464 KiB are filled a block of 1,024 days at a time, when a date first
// falls in the block, so that a run pays for the years its dates span
// (about 10 µs a block) and a run without dates nothing; a filled block is
// never written again, so every writer shares the table.
const (
	dayTextDays  = 47_482 // 1970-01-01 to 2099-12-31
	dayTextBlock = 1 << 10
)

var dayTexts dayTextTable

type dayTextTable struct {
	blocks [(dayTextDays + dayTextBlock - 1) / dayTextBlock]dayTextBlockState
	text   [dayTextDays][10]byte
}

type dayTextBlockState struct {
	filled atomic.Bool
	mu     sync.Mutex
}

// day returns the text of a day before dayTextDays.
func (tb *dayTextTable) day(days uint32) *[10]byte {
	if !tb.blocks[days/dayTextBlock].filled.Load() {
		tb.fill(days / dayTextBlock)
	}
	return &tb.text[days]
}

// fill writes block i's texts, once: the first writer fills it, any other
// waits for it.
func (tb *dayTextTable) fill(i uint32) {
	blk := &tb.blocks[i]
	blk.mu.Lock()
	defer blk.mu.Unlock()
	if blk.filled.Load() {
		return
	}
	for d := i * dayTextBlock; d < min((i+1)*dayTextBlock, dayTextDays); d++ {
		putDay(&tb.text[d], d)
	}
	blk.filled.Store(true)
}

// putDay writes the date of a day count since 1970-01-01 (before the year
// 10000) as "2006-01-02".
func putDay(b *[10]byte, days uint32) {
	y, m, d := civilDate(days)
	y1, y2 := y/100, y%100
	b[0], b[1] = digits2[2*y1], digits2[2*y1+1]
	b[2], b[3] = digits2[2*y2], digits2[2*y2+1]
	b[4] = '-'
	b[5], b[6] = digits2[2*m], digits2[2*m+1]
	b[7] = '-'
	b[8], b[9] = digits2[2*d], digits2[2*d+1]
}

// maxISODateMillis is 10000-01-01T00:00:00Z: later dates, and those before
// 1970, are written as $numberLong.
const maxISODateMillis = 253402300800000

// civilDate is the proleptic Gregorian date of a day count since
// 1970-01-01, for days before 10000-01-01, by Neri and Schneider's
// algorithm ("Euclidean affine functions and their application to
// calendar algorithms", 2022): days counted from 0000-03-01 in a calendar
// whose years start in March, centuries and years found with one multiply
// each and months and days with one more, then mapped to January-based
// years. All products stay below 2^32 (2^64 for the one 64-bit product).
func civilDate(days uint32) (year, month, day uint32) {
	n := days + 719468 // 1970-01-01 is day 719468 from 0000-03-01
	n1 := 4*n + 3
	cent := n1 / 146097
	nc := n1 % 146097 / 4
	p2 := uint64(2939745) * uint64(4*nc+3)
	z := uint32(p2 >> 32)          // year of the century
	ny := uint32(p2) / 2939745 / 4 // day of the (March-based) year
	n3 := 2141*ny + 197913
	year, month, day = 100*cent+z, n3>>16, n3&0xffff/2141+1
	if ny >= 306 { // January or February: the next civil year
		year++
		month -= 12
	}
	return year, month, day
}

// appendJSONUUID is appendJSONBinary(dst, u[:], "04"), grown once and
// stored in place: a uuid column's values are all this size, and the
// general encoder's setup cost as much as its 16 bytes (29 ns against 15).
func appendJSONUUID(dst []byte, u *transform.UUID) []byte {
	const (
		head = `{"$binary":{"base64":"`
		tail = `==","subType":"04"}}`
		n    = len(head) + 22 + len(tail)
	)
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	b := (*[n]byte)(dst[start:])
	*(*[len(head)]byte)(b[:len(head)]) = [len(head)]byte([]byte(head))
	o := (*[22]byte)(b[len(head) : len(head)+22])
	put4 := func(o *[4]byte, v uint32) {
		o[0], o[1], o[2], o[3] = base64Std[v>>18&63], base64Std[v>>12&63], base64Std[v>>6&63], base64Std[v&63]
	}
	hi := binary.BigEndian.Uint64(u[0:8])
	lo := binary.BigEndian.Uint64(u[8:16])
	put4((*[4]byte)(o[0:4]), uint32(hi>>40))
	put4((*[4]byte)(o[4:8]), uint32(hi>>16))
	put4((*[4]byte)(o[8:12]), uint32(hi<<8|lo>>56))
	put4((*[4]byte)(o[12:16]), uint32(lo>>32))
	put4((*[4]byte)(o[16:20]), uint32(lo>>8))
	o[20], o[21] = base64Std[lo>>2&63], base64Std[lo&3<<4]
	*(*[len(tail)]byte)(b[len(head)+22:]) = [len(tail)]byte([]byte(tail))
	return dst
}

// base64Std is the standard base64 alphabet (RFC 4648), which Extended
// JSON's $binary uses.
const base64Std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

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
