package load

import (
	"math/bits"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Decimals are the commonest values of business tables (amounts, prices,
// quantities), and the driver parses them with a regular expression and a
// big.Int. The decimals PostgreSQL prints ("-12.50", "1000", "0.001") are
// parsed here directly; anything else (exponents, NaN, more than 34
// significant digits, ...) goes to the driver. TestDecimalFastPath and
// FuzzDecimal hold the two to the same results.

// maxDecimalDigits is the significand precision of a Decimal128.
const maxDecimalDigits = 34

// plainDecimal splits s when it is a plain decimal: an optional '-', one or
// more digits, optionally a '.' and one or more digits, with at most
// maxDecimalDigits significant digits and at most -MinDecimal128Exp
// fractional digits (so that the Decimal128 holds it exactly, with the
// exponent -len(frac)).
func plainDecimal(s string) (neg bool, intPart, frac string, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start {
		return false, "", "", false
	}
	intPart = s[start:i]
	if i < len(s) {
		if s[i] != '.' {
			return false, "", "", false
		}
		i++
		fstart := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == fstart || i != len(s) {
			return false, "", "", false
		}
		frac = s[fstart:]
	}
	if len(frac) > -bson.MinDecimal128Exp {
		return false, "", "", false
	}
	// significant digits: intPart+frac without leading zeros
	n := len(intPart) + len(frac)
	for j := 0; j < len(intPart) && intPart[j] == '0'; j++ {
		n--
	}
	if n == len(frac) { // integer part all zeros: skip the fraction's leading zeros
		for j := 0; j < len(frac) && frac[j] == '0'; j++ {
			n--
		}
	}
	if n > maxDecimalDigits {
		return false, "", "", false
	}
	return neg, intPart, frac, true
}

// parseDecimal is bson.ParseDecimal128(s).
func parseDecimal(s string) (bson.Decimal128, error) {
	neg, intPart, frac, ok := plainDecimal(s)
	if !ok {
		return bson.ParseDecimal128(s)
	}
	var hi, lo uint64
	add := func(part string) {
		for j := 0; j < len(part); j++ {
			// (hi, lo) = (hi, lo) * 10 + digit; at most 34 significant
			// digits, so it stays below 2^113.
			h1, l1 := bits.Mul64(lo, 10)
			var carry uint64
			lo, carry = bits.Add64(l1, uint64(part[j]-'0'), 0)
			hi = hi*10 + h1 + carry
		}
	}
	add(intPart)
	add(frac)
	exp := -len(frac)
	hi |= uint64(exp-bson.MinDecimal128Exp) << 49
	if neg {
		hi |= 1 << 63
	}
	return bson.NewDecimal128(hi, lo), nil
}

// appendDecimalText appends Decimal128.String() of the decimal s (which
// must parse): for plain decimals whose string form is plain too, the
// digits themselves, without building the Decimal128.
func appendDecimalText(dst []byte, s string) ([]byte, error) {
	neg, intPart, frac, ok := plainDecimal(s)
	if ok {
		// The significand's digits: the integer part without leading
		// zeros, then the fraction (without leading zeros when the
		// integer part is zero).
		for len(intPart) > 0 && intPart[0] == '0' {
			intPart = intPart[1:]
		}
		f := frac
		if intPart == "" {
			for len(f) > 0 && f[0] == '0' {
				f = f[1:]
			}
		}
		ndigits := len(intPart) + len(f)
		if ndigits == 0 {
			ndigits = 1 // zero
		}
		// Decimal128.String() writes plain notation when the exponent
		// (-len(frac)) is at most zero and the adjusted exponent
		// (exponent + digits - 1) is at least -6.
		if -len(frac)+ndigits-1 >= -6 {
			if neg {
				dst = append(dst, '-')
			}
			if intPart == "" {
				dst = append(dst, '0')
			} else {
				dst = append(dst, intPart...)
			}
			if frac != "" {
				dst = append(dst, '.')
				dst = append(dst, frac...)
			}
			return dst, nil
		}
	}
	d, err := parseDecimal(s)
	if err != nil {
		return dst, err
	}
	return append(dst, d.String()...), nil
}
