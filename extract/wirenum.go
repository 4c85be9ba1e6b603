package extract

import (
	"encoding/binary"
	"math"
)

// Numeric to double straight from the binary format. A numeric on the wire
// is its base-10000 digits with a weight: when the digits make a decimal
// significand m of at most 2^53 and a power of ten 10^e with |e| <= 22,
// both m and 10^|e| are exact doubles, so one multiplication or division,
// which IEEE arithmetic rounds correctly, is the double nearest to the
// decimal (Clinger's fast path, the one strconv.ParseFloat takes first):
// the same double as the decimal text through transform.DecimalToDouble.
// Every other value (more significant digits, larger exponents) goes
// through the text. TestWireDoubleDifferential holds the two to the same
// bits.

// maxExactMantissa is the largest significand every double holds exactly
// together with all smaller ones.
const maxExactMantissa = 1 << 53

// exactPow10 are the powers of ten that are exact doubles.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// uintPow10 are the powers of ten of a uint64.
var uintPow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// wireDouble is the double of the numeric src (binary format) as
// appendNumericWire's text gives it through transform.DecimalToDouble,
// when it can be computed exactly from the digits (ok); otherwise ok is
// false and the text decides (it may also decline the bytes).
func wireDouble(src []byte) (f float64, ok bool) {
	if len(src) < 8 {
		return 0, false
	}
	n := int(binary.BigEndian.Uint16(src))
	weight := int(int16(binary.BigEndian.Uint16(src[2:])))
	sign := binary.BigEndian.Uint16(src[4:])
	dscale := int(int16(binary.BigEndian.Uint16(src[6:])))
	switch sign {
	case numericNaN:
		return math.NaN(), true
	case numericPosInf:
		return math.Inf(1), true
	case numericNegInf:
		return math.Inf(-1), true
	}
	if n == 0 {
		return 0, true // a zero (of any display scale, and "-0") is +0
	}
	if len(src) != 8+2*n {
		return 0, false
	}
	var m uint64
	for i := range n {
		g := uint64(binary.BigEndian.Uint16(src[8+2*i:]))
		if g > 9999 || m > (math.MaxUint64-9999)/10000 {
			return 0, false
		}
		m = m*10000 + g
	}
	if m == 0 {
		return 0, false // only zero digits: appendNumericWire declines them
	}
	exp := (weight - n + 1) * 4
	if frac := (n - weight - 1) * 4; dscale > 0 && dscale < frac {
		// digits beyond the display scale are cut, as appendNumericWire
		// does (PostgreSQL sends only zeros there)
		cut := frac - dscale
		if cut >= len(uintPow10) || m < uintPow10[cut] {
			return 0, false // cut to nothing: declined
		}
		m /= uintPow10[cut]
		exp += cut
	}
	for m%10 == 0 {
		m /= 10
		exp++
	}
	if m > maxExactMantissa {
		return 0, false
	}
	switch {
	case exp == 0:
		f = float64(m)
	case exp < 0 && exp >= -22:
		f = float64(m) / exactPow10[-exp]
	case exp > 0 && exp <= 22:
		f = float64(m) * exactPow10[exp]
	case exp > 22 && exp-22 < len(uintPow10) && m <= maxExactMantissa/uintPow10[exp-22]:
		// 10^(exp-22) moves into the significand, which stays exact
		f = float64(m*uintPow10[exp-22]) * 1e22
	default:
		return 0, false
	}
	if sign != 0 {
		f = -f
	}
	return f, true
}
