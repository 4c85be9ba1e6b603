package transform

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Decimal text to double: NUMERIC values in numeric mode double, JSON
// numbers (json, jsonb and sql: fields) that numeric mode double writes
// as doubles, and NUMERIC values as expressions see them. The rule, the
// one PostgreSQL's float8 input follows (docs/types.md):
//
//   - the value is the double nearest to the decimal (ties to even),
//     subnormals included: 4e-324 is 5e-324;
//   - NaN, Infinity and -Infinity (NUMERIC's special values) are
//     themselves;
//   - a finite value beyond a double's range (1e309) has no double: an
//     error (ErrDoubleOverflow);
//   - a non-zero value whose nearest double is 0 (1e-991, -1e-400) has
//     no double either: an error (ErrDoubleUnderflow). Zero (0, 0.000,
//     -0) is 0.

// ErrDoubleOverflow and ErrDoubleUnderflow are DecimalToDouble's errors.
var (
	ErrDoubleOverflow  = errors.New("out of range for a double")
	ErrDoubleUnderflow = errors.New("too small for a double (its nearest double is 0)")
)

// DecimalToDouble is the double of the decimal text s (a NUMERIC's text
// or a JSON number), or an error wrapping ErrDoubleOverflow or
// ErrDoubleUnderflow when the value has none.
func DecimalToDouble(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
			return 0, ErrDoubleOverflow
		}
		return 0, fmt.Errorf("not a number: %q", s)
	}
	if f == 0 && nonZeroMantissa(s) {
		return 0, ErrDoubleUnderflow
	}
	return f, nil
}

// nonZeroMantissa reports whether the decimal s has a digit other than 0
// before its exponent.
func nonZeroMantissa(s string) bool {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	return strings.ContainsAny(s, "123456789")
}
