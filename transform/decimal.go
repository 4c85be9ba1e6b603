package transform

import (
	"errors"
	"strconv"
	"strings"
)

// A BSON Decimal128 holds a coefficient of at most 34 decimal digits
// times a power of ten from 10^-6176 to 10^6111. A NUMERIC holds up to
// 131,072 digits before its point and 16,383 after it, so numeric mode
// decimal (the default) cannot write every NUMERIC: such a value rejects
// its row when it is read, as a double out of range does in numeric mode
// double, never the whole document holding it (a bucket page holds the
// rows of many).
const (
	decimal128Digits = 34
	decimal128MaxExp = 6111
	decimal128MinExp = -6176
)

// ErrDecimal128 is DecimalFits's error.
var ErrDecimal128 = errors.New("not exactly a Decimal128 (at most 34 significant digits, exponent from -6176 to 6111)")

// DecimalFits reports (as nil) whether the decimal text s (a NUMERIC's
// text or a JSON number: sign, digits, an optional point and fraction,
// an optional exponent; NaN and ±Infinity) is exactly a Decimal128. Zero
// fits (but for an exponent beyond an int64, which no one writes). Text that is no number is an error too.
func DecimalFits(s string) error {
	switch s {
	case "NaN", "Infinity", "-Infinity", "+Infinity", "inf", "-inf", "+inf":
		return nil
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return ErrDecimal128
	}
	var exp int64
	if i := strings.IndexAny(body, "eE"); i >= 0 {
		e, ok := exponent(body[i+1:])
		if !ok {
			return ErrDecimal128
		}
		exp, body = e, body[:i]
	}
	intPart, frac, _ := strings.Cut(body, ".")
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return ErrDecimal128
	}
	// The significant digits of intPart+frac (without building it: no
	// allocation per value): lead zeros before them, trail after.
	total := len(intPart) + len(frac)
	lead := len(intPart) - len(strings.TrimLeft(intPart, "0"))
	if lead == len(intPart) {
		lead += len(frac) - len(strings.TrimLeft(frac, "0"))
	}
	if lead == total {
		return nil // zero
	}
	trail := len(frac) - len(strings.TrimRight(frac, "0"))
	if trail == len(frac) {
		trail += len(intPart) - len(strings.TrimRight(intPart, "0"))
	}
	if exp > 1<<40 || exp < -1<<40 {
		return ErrDecimal128 // far beyond the range, whatever the digits
	}
	exp += int64(trail - len(frac))
	n := int64(total - lead - trail)
	// the coefficient trimmed*10^k (k from 0 to 34-n) with exponent exp-k
	// must have an exponent within the range
	if n > decimal128Digits || exp < decimal128MinExp || exp-(decimal128Digits-n) > decimal128MaxExp {
		return ErrDecimal128
	}
	return nil
}

// exponent parses an exponent's text (optional sign, digits) as
// strconv.ParseInt does; ok is false when it is no int64.
func exponent(s string) (int64, bool) {
	if s == "" || !allDigits(strings.TrimLeft(s[:1], "+-")+s[1:]) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
