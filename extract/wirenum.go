package extract

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Numeric to double straight from the binary format. A numeric on the wire
// is its base-10000 digits with a weight: when the digits make a decimal
// significand m of at most 2^53 and a power of ten 10^e with |e| <= 22,
// both m and 10^|e| are exact doubles, so one multiplication or division,
// which IEEE arithmetic rounds correctly, is the double nearest to the
// decimal (Clinger's fast path, the one strconv.ParseFloat takes first):
// the same double as the decimal text through transform.DecimalToDouble.
// A significand over 2^53 that fits in 64 bits, with a power of ten of at
// most 19 either way, is rounded exactly in integer arithmetic
// (roundedDouble). Every other value (more significant digits, larger
// exponents) goes through the text. TestWireDoubleDifferential holds the two to the same
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
	// m: the digits as an integer; tz: the trailing zeros of the last
	// base-10000 digit, left out of m so that 20 significant digits fit
	var m uint64
	tz := 0
	for i := range n {
		g := uint64(binary.BigEndian.Uint16(src[8+2*i:]))
		if g > 9999 {
			return 0, false
		}
		mul := uint64(10000)
		if i == n-1 {
			for mul > 1 && g%10 == 0 {
				g /= 10
				mul /= 10
				tz++
			}
		}
		hi, lo := bits.Mul64(m, mul)
		lo, carry := bits.Add64(lo, g, 0)
		if hi != 0 || carry != 0 {
			return 0, false
		}
		m = lo
	}
	if m == 0 {
		return 0, false // only zero digits: appendNumericWire declines them
	}
	exp := (weight-n+1)*4 + tz
	if frac := (n - weight - 1) * 4; dscale > 0 && dscale < frac {
		// digits beyond the display scale are cut, as appendNumericWire
		// does (PostgreSQL sends only zeros there); the tz zeros are
		// already out of m
		if cut := frac - dscale - tz; cut > 0 {
			if cut >= len(uintPow10) || m < uintPow10[cut] {
				return 0, false // cut to nothing: declined
			}
			m /= uintPow10[cut]
			exp += cut
		}
	}
	for m%10 == 0 {
		m /= 10
		exp++
	}
	if m > maxExactMantissa {
		// more significant bits than a double holds: rounded in
		// integer arithmetic
		if f, ok = roundedDouble(m, exp); !ok {
			return 0, false
		}
		if sign != 0 {
			f = -f
		}
		return f, true
	}
	if f, ok = exactDouble(m, exp); !ok {
		return 0, false
	}
	if sign != 0 {
		f = -f
	}
	return f, true
}

// exactDouble is the double nearest to m x 10^exp (m at most
// maxExactMantissa) by Clinger's fast path, when it applies: m and 10^|exp|
// (exp within +-22) are exact doubles, so the one rounding of their product
// or quotient is the nearest double; beyond 10^22, 10^(exp-22) moves into
// the significand while it stays exact.
func exactDouble(m uint64, exp int) (float64, bool) {
	switch {
	case exp == 0:
		return float64(m), true
	case exp < 0 && exp >= -22:
		return float64(m) / exactPow10[-exp], true
	case exp > 0 && exp <= 22:
		return float64(m) * exactPow10[exp], true
	case exp > 22 && exp-22 < len(uintPow10) && m <= maxExactMantissa/uintPow10[exp-22]:
		return float64(m*uintPow10[exp-22]) * 1e22, true
	}
	return 0, false
}

// roundedDouble is the double nearest to m x 10^exp (ties to even), for
// exp from -19 to 19 (ok false otherwise): the exact product m x 10^exp
// in 128 bits, or the quotient m x 2^s / 10^-exp to 64 bits with its
// remainder, rounded to 53 bits. m is over 2^53.
func roundedDouble(m uint64, exp int) (float64, bool) {
	switch {
	case exp >= 0 && exp < len(uintPow10):
		hi, lo := bits.Mul64(m, uintPow10[exp])
		if hi == 0 {
			return roundBits(lo, false, 0)
		}
		// the top 64 bits, and whether any bit below them is set
		k := bits.Len64(hi)
		top, dropped := hi, lo
		if k < 64 {
			top = hi<<(64-k) | lo>>k
			dropped = lo & (1<<k - 1)
		}
		return roundBits(top, dropped != 0, k)
	case exp < 0 && -exp < len(uintPow10):
		d := uintPow10[-exp]
		// m x 2^s has 63 + len(d) bits: the quotient has 63 or 64, and
		// the numerator's high word stays below d (bits.Div64)
		s := 64 - bits.Len64(m) + bits.Len64(d) - 1
		var hi, lo uint64
		if s >= 64 {
			hi = m << (s - 64)
		} else {
			hi, lo = m>>(64-s), m<<s
		}
		q, r := bits.Div64(hi, lo, d)
		return roundBits(q, r != 0, -s)
	}
	return 0, false
}

// roundBits is the double nearest to (q + a fraction) x 2^scale, where the
// fraction is zero when sticky is false and strictly between 0 and 1 when
// it is true; q has more than 53 bits, or sticky is false.
func roundBits(q uint64, sticky bool, scale int) (float64, bool) {
	n := bits.Len64(q)
	if n <= 53 {
		if sticky {
			return 0, false
		}
		return math.Ldexp(float64(q), scale), true
	}
	shift := uint(n - 53)
	mant := q >> shift
	rem := q & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rem > half || rem == half && (sticky || mant&1 == 1) {
		mant++
		if mant == 1<<53 {
			mant >>= 1
			shift++
		}
	}
	return math.Ldexp(float64(mant), int(shift)+scale), true
}
