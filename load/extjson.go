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
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/denorm/denorm/transform"
)

// AppendExtJSON appends d as relaxed Extended JSON (no trailing newline).
// Values the BSON encoder refuses are refused here too, with the same
// messages.
func AppendExtJSON(dst []byte, d transform.Doc) ([]byte, error) {
	dst, err := appendJSONDoc(dst, d)
	return dst, fieldErr(err)
}

func appendJSONDoc(dst []byte, d transform.Doc) ([]byte, error) {
	dst = append(dst, '{')
	var err error
	for i := range d {
		f := &d[i]
		if strings.IndexByte(f.Key, 0) >= 0 {
			return dst, &pathError{keys: []string{f.Key}, msg: "a BSON key cannot contain a NUL character"}
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, f.Key)
		dst = append(dst, ':')
		dst, err = appendJSONValue(dst, f.Key, f.Value)
		if err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func appendJSONValue(dst []byte, key string, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendJSONString(dst, x), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		return appendJSONDouble(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case time.Time:
		return appendJSONDate(dst, x.UnixMilli()), nil
	case transform.Decimal:
		dst = append(dst, `{"$numberDecimal":"`...)
		dst, err := appendDecimalText(dst, string(x))
		if err != nil {
			return dst, decimalError(key, x)
		}
		return append(dst, `"}`...), nil
	case transform.UUID:
		return appendJSONBinary(dst, x[:], "04"), nil
	case transform.Binary:
		return appendJSONBinary(dst, x, "00"), nil
	case transform.Doc:
		dst, err := appendJSONDoc(dst, x)
		return dst, under(key, err)
	case transform.Array:
		dst = append(dst, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, err = appendJSONValue(dst, indexKey(i), e)
			if err != nil {
				return dst, under(key, err)
			}
		}
		return append(dst, ']'), nil
	}
	return dst, unsupportedError(key, v)
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

// appendJSONDate writes a BSON date (milliseconds since the epoch).
func appendJSONDate(dst []byte, ms int64) []byte {
	t := time.Unix(ms/1e3, ms%1e3*1e6).UTC()
	if y := t.Year(); y < 1970 || y > 9999 {
		dst = append(dst, `{"$date":{"$numberLong":"`...)
		dst = strconv.AppendInt(dst, ms, 10)
		return append(dst, `"}}`...)
	}
	dst = append(dst, `{"$date":"`...)
	dst = t.AppendFormat(dst, "2006-01-02T15:04:05.999Z07:00")
	return append(dst, `"}`...)
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

// appendJSONString writes s as a JSON string the way the driver does:
// control characters, quote and backslash escaped, U+2028 and U+2029
// escaped, invalid UTF-8 replaced by \ufffd, everything else verbatim.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
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

// DocumentSize is the length of d's BSON encoding, computed without
// encoding it; it fails where AppendDocument would.
func DocumentSize(d transform.Doc) (int, error) {
	n, err := docSize(d)
	return n, fieldErr(err)
}

func docSize(d transform.Doc) (int, error) {
	n := 5 // int32 length + terminating NUL
	for i := range d {
		f := &d[i]
		if strings.IndexByte(f.Key, 0) >= 0 {
			return 0, &pathError{keys: []string{f.Key}, msg: "a BSON key cannot contain a NUL character"}
		}
		s, err := elementSize(f.Key, f.Value)
		if err != nil {
			return 0, err
		}
		n += s
	}
	return n, nil
}

// elementSize is the size of one BSON element: type byte, key, NUL, value.
func elementSize(key string, v any) (int, error) {
	head := 2 + len(key)
	switch x := v.(type) {
	case nil:
		return head, nil
	case string:
		return head + 4 + len(x) + 1, nil
	case int32:
		return head + 4, nil
	case int64, float64, time.Time:
		return head + 8, nil
	case bool:
		return head + 1, nil
	case transform.Decimal:
		if !validDecimal(x) {
			return 0, decimalError(key, x)
		}
		return head + 16, nil
	case transform.UUID:
		return head + 5 + len(x), nil
	case transform.Binary:
		return head + 5 + len(x), nil
	case transform.Doc:
		s, err := docSize(x)
		return head + s, under(key, err)
	case transform.Array:
		n := 5
		for i, e := range x {
			s, err := elementSize(indexKey(i), e)
			if err != nil {
				return 0, under(key, err)
			}
			n += s
		}
		return head + n, nil
	}
	return 0, unsupportedError(key, v)
}
