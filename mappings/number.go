package mappings

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Numbers in the mapping file. YAML decides by a scalar's spelling
// whether it is a number, and the YAML library quietly turns numbers it
// cannot hold into something else: 1e400 into the string "1e400",
// 99999999999999999999 into the double 1e20, 1e-400 into 0, 012 into
// the octal 10. A mapping file is exact or refused: scalarValue reads
// every scalar the way the rest of the parser sees it and refuses, at
// the scalar's position, every number that would not be the value
// written. The rules (mappings/README.md, "Numbers"):
//
//   - an integer (decimal, 0x, 0o or 0b; _ separators allowed) must be
//     within int64; a decimal integer with a leading zero (012) is
//     refused, since YAML 1.1 reads it as octal and YAML 1.2 as decimal;
//   - a number with a fraction or an exponent is a double, the one
//     nearest to the text; one beyond a double's range (1e400) or a
//     non-zero one whose double is 0 (1e-400) is refused;
//   - .nan, .inf and -.inf are refused: no mapping value needs them;
//   - a quoted scalar ('1e400') is always a string.

var (
	// yamlFloat is the YAML library's test for a float's spelling
	// (after removing _).
	yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	// yamlInt is a decimal, hexadecimal, octal or binary integer.
	yamlInt = regexp.MustCompile(`^[-+]?([0-9]+|0x[0-9a-fA-F]+|0o[0-7]+|0b[01]+)$`)
	// leadingZero is a decimal integer written with a leading zero.
	leadingZero = regexp.MustCompile(`^[-+]?0[0-9]+$`)
)

// scalarValue is the value of a scalar node as the schema check sees
// it: nil, bool, int64, float64 or string.
func scalarValue(n *yaml.Node) (any, error) {
	text := strings.ReplaceAll(n.Value, "_", "")
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("%q is not a boolean", n.Value)
		}
		return b, nil
	case "!!int":
		if leadingZero.MatchString(text) {
			return nil, leadingZeroError(n.Value)
		}
		var i int64
		if err := n.Decode(&i); err != nil {
			if yamlInt.MatchString(text) {
				return nil, intRangeError(n.Value)
			}
			return nil, fmt.Errorf("%q is not an integer", n.Value)
		}
		return i, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("%q is not a number", n.Value)
		}
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return nil, fmt.Errorf("%s is not accepted: a mapping file takes finite numbers only (quote it, %q, for the text)", n.Value, n.Value)
		case leadingZero.MatchString(text):
			return nil, leadingZeroError(n.Value)
		case yamlInt.MatchString(text):
			// An integer the YAML library could not hold, read as a
			// double: not the number written.
			return nil, intRangeError(n.Value)
		case f == 0 && nonZeroDigits(text):
			return nil, fmt.Errorf("%s is too small for a double: it would become 0 (write 0, or quote it for the text)", n.Value)
		}
		return f, nil
	case "!!str":
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) == 0 {
			// A plain scalar spelled as a number that the YAML library
			// left as a string: a number out of range.
			if yamlInt.MatchString(text) {
				return nil, intRangeError(n.Value)
			}
			if yamlFloat.MatchString(text) {
				return nil, fmt.Errorf("%s is beyond the range of a double (about ±1.8e308): quote it, %q, for the text", n.Value, n.Value)
			}
		}
		return n.Value, nil
	}
	return n.Value, nil
}

func intRangeError(text string) error {
	return fmt.Errorf("%s is beyond the range of a 64-bit integer (%d to %d): quote it, %q, for the text", text, int64(math.MinInt64), int64(math.MaxInt64), text)
}

func leadingZeroError(text string) error {
	t := strings.TrimLeft(strings.TrimLeft(text, "+-"), "0_")
	if t == "" {
		t = "0"
	}
	return fmt.Errorf("%s has a leading zero, which YAML 1.1 reads as octal and YAML 1.2 as decimal: write %s (decimal) or 0o%s (octal), or quote it for the text", text, t, t)
}

// nonZeroDigits reports whether a number's mantissa has a digit other
// than 0.
func nonZeroDigits(text string) bool {
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		text = text[:i]
	}
	return strings.ContainsAny(text, "123456789")
}

// describePointer names a JSON pointer of the mapping for messages:
// /collections/0/fields/2/value -> collections[0].fields[2].value.
func describePointer(ptr string) string {
	if ptr == "" {
		return describe(nil)
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return describe(parts)
}

// numberKey is the key under which a constant is compared with others
// as MongoDB compares values: numbers by value (1, 1.0 and an int64 1
// are one value), other values by type and value.
func numberKey(v any) any {
	var f float64
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	case float64:
		f = x
	default:
		return v
	}
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return int64(f)
	}
	return floatKey(strconv.FormatFloat(f, 'g', -1, 64))
}

// floatKey is a non-integral number's numberKey, apart from strings.
type floatKey string

// MaxRows bounds every row count a mapping file gives: bucket.size,
// bucket.skipLast and a relation's limit (schema.json says the same).
// A document holds at most about a million of the smallest items
// within MongoDB's 16 MiB (an empty embedded document takes 13 bytes
// as the millionth element of an array), so a larger count could never
// be written, and the builder holds that many rows in memory (a page,
// the rows skipLast holds back).
const MaxRows = 1_000_000

// boundReason says why a number of the mapping file has its maximum.
func boundReason(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	switch loc[len(loc)-1] {
	case "size":
		return ": a page is one document, and a document holds at most about a million of the smallest items within 16 MiB"
	case "skipLast":
		return ": it leaves out the rows a subset embeds in the parent, and a subset holds at most that many"
	case "limit":
		return ": a subset is embedded in one document, which holds at most about a million of the smallest items within 16 MiB"
	}
	return ""
}
