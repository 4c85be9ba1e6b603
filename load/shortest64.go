package load

import (
	"math"
	"math/bits"
	"slices"
)

// The shortest decimal of a double, without strconv: Raffaello
// Giulietti's Schubfach ("The Schubfach way to render doubles", 2020).
// strconv's shortest 'G' form cost a double of 17 significant digits (a
// quotient, a measure) 60 ns, half of it in the general formatter around
// the digits; a migration of such columns spent a seventh of its CPU
// there.
//
// A positive double v = c·2^q rounds back from every decimal in its
// rounding interval: from v - 2^(q-1) to v + 2^(q-1) (from v - 2^(q-2)
// below a power of two, where the neighbour below is closer), the ends
// included when c is even (a tie rounds to the even significand). With
// k = floor(log10 of the interval's width), the interval holds at least
// one multiple of 10^k and at most one of 10^(k+1). So the shortest
// decimal is that multiple of 10^(k+1) when there is one; otherwise it is
// s·10^k or (s+1)·10^k, s = floor(v/10^k), whichever lies inside, the
// closer of the two when both do (the even one on a tie), which is
// strconv's choice too: fewest digits first, then the nearest.
//
// All of it needs v·10^-k to about 2 bits beyond the integer part, and to
// know whether anything is left below: the scaled ends 4·v_l·10^-k and
// 4·v_r·10^-k are compared with integers. pow10x126[-k] holds 10^-k to 126
// bits, rounded up, so each product is two 64x64 multiplications, kept
// to its integer part with a sticky bit for "something below" (rounding
// to odd); Giulietti proves 126 bits make every comparison exact for
// doubles. TestShortest64 holds the result to strconv's on the ends of
// every binade, the subnormals and millions of random doubles.

// shortest64 returns the shortest decimal of v > 0 (finite, not zero) as
// m·10^e, m without trailing zeros, and nd, the count of m's digits.
func shortest64(v float64) (m uint64, e, nd int) {
	b := math.Float64bits(v)
	be := int(b >> 52 & 0x7ff)
	c := b & (1<<52 - 1)
	q := -1074
	if be != 0 {
		c |= 1 << 52
		q = be - 1075
	}
	odd := c & 1
	cb := c << 2
	cbr := cb + 2
	var cbl uint64
	var k int
	if c != 1<<52 || be == 1 {
		cbl = cb - 2
		k = floorLog10Pow2(q)
	} else {
		// The neighbour below is 2^(q-1) away, not 2^q.
		cbl = cb - 1
		k = floorLog10ThreeQuartersPow2(q)
	}
	h := q + floorLog2Pow10(-k) + 2 // 1..4
	g := &pow10x126[-k-pow10x126Min]
	vb := roundOdd(g, cb<<h)
	vbl := roundOdd(g, cbl<<h) + odd
	vbr := roundOdd(g, cbr<<h) - odd
	s := vb >> 2
	d := s
	switch {
	case s >= 10 && inside(vbl, vbr, s/10*10, s/10*10+10, &d):
		// the one multiple of 10^(k+1) inside (Giulietti's Java code asks
		// s >= 100 here: Java's Double.toString prints two digits at
		// least, strconv's shortest form one)
	case inside(vbl, vbr, s, s+1, &d):
	default:
		// Both inside: the closer; 4·v against 4·(s+1/2).
		d = s
		if mid := (s + s + 1) << 1; vb > mid || vb == mid && s&1 != 0 {
			d = s + 1
		}
	}
	m, e = stripZeros64(d, k)
	return m, e, len64(m)
}

// inside reports whether exactly one of lo·10^k and hi·10^k lies in the
// interval whose scaled ends are vbl and vbr (odd significands' ends
// already moved in), and stores it in d.
func inside(vbl, vbr, lo, hi uint64, d *uint64) bool {
	loIn := vbl <= lo<<2
	hiIn := hi<<2 <= vbr
	if loIn == hiIn {
		return false
	}
	*d = hi
	if loIn {
		*d = lo
	}
	return true
}

// roundOdd is floor(g·cp / 2^127), its lowest bit set when the product
// had anything below that (rounding to odd); g is the 126-bit g[0]·2^63 +
// g[1].
func roundOdd(g *[2]uint64, cp uint64) uint64 {
	x1, _ := bits.Mul64(g[1], cp)
	y1, y0 := bits.Mul64(g[0], cp)
	z := y0>>1 + x1
	return y1 + z>>63 | (z&(1<<63-1)+(1<<63-1))>>63
}

// floorLog10Pow2 is floor(q·log10(2)), floorLog10ThreeQuartersPow2
// floor(log10(3/4·2^q)), floorLog2Pow10 floor(e·log2(10)), each exact over
// the exponents doubles need (TestShortest64Logs checks them all).
// The products need 64 bits: int64, so that 32-bit platforms build too.
func floorLog10Pow2(q int) int { return int(int64(q) * 661_971_961_083 >> 41) }

func floorLog10ThreeQuartersPow2(q int) int {
	return int((int64(q)*661_971_961_083 - 274_743_187_321) >> 41)
}

func floorLog2Pow10(e int) int { return int(int64(e) * 913_124_641_741 >> 38) }

// stripZeros64 drops d's trailing zeros (d > 0, below 10^17) and returns
// it with e, the power of ten, raised by their count. A test of
// divisibility by 10^j and the quotient in one multiplication (Granlund
// and Montgomery): d·5^-j mod 2^64 is d/5^j when 5^j divides d, and
// rotated right by j it is d/10^j, at most (2^64-1)/10^j, exactly when
// 10^j divides d.
func stripZeros64(d uint64, e int) (uint64, int) {
	if d%10 != 0 { // most doubles' decimals: 17 digits and no zeros
		return d, e
	}
	for i := range zeroSteps {
		z := &zeroSteps[i]
		if r := bits.RotateLeft64(d*z.inv5, -z.j); r <= z.max {
			d = r
			e += z.j
		}
	}
	return d, e
}

// zeroSteps are the steps of stripZeros64: 16, 8, 4, 2 and 1 zeros, with
// 5^-j mod 2^64 and (2^64-1)/10^j.
var zeroSteps = func() (s [5]struct {
	inv5 uint64
	j    int
	max  uint64
}) {
	for i, j := range []int{16, 8, 4, 2, 1} {
		p5 := uint64(1)
		for range j {
			p5 *= 5
		}
		inv := p5 // Newton's iteration doubles the correct low bits: 3, 6, ..., 96
		for range 5 {
			inv *= 2 - p5*inv
		}
		s[i].inv5, s[i].j, s[i].max = inv, j, math.MaxUint64/uint10[j]
	}
	return s
}()

// len64 is the count of m's decimal digits, 0 < m < 10^19.
func len64(m uint64) int {
	t := bits.Len64(m) * 1233 >> 12 // floor(bits·log10 2): the count or one less
	if m >= uint10[t] {
		t++
	}
	return t
}

// appendJSONFinite writes v, finite and not zero, as appendJSONDouble
// does: strconv.AppendFloat(dst, v, 'G', -1, 64)'s bytes, %f form when the
// leading digit's power of ten is -4..5 and %e form (at least two exponent
// digits) otherwise, and ".0" after an integer.
func appendJSONFinite(dst []byte, v float64) []byte {
	m, e, nd := shortest64(math.Abs(v))
	exp := e + nd - 1 // the leading digit's power of ten
	start := len(dst)
	// "-0.0000" and 17 digits; "-1.2345678901234567E-308"; "-123456.0"
	dst = slices.Grow(dst, 32)
	b := dst[start : start+32]
	i := 0
	if v < 0 {
		b[0] = '-'
		i = 1
	}
	switch {
	case exp < -4 || exp > 5:
		putDigitsLong(b[i+1:i+1+nd], m)
		b[i] = b[i+1]
		if nd > 1 {
			b[i+1] = '.'
			i++
		}
		i += nd
		b[i], b[i+1] = 'E', '+'
		if exp < 0 {
			b[i+1] = '-'
			exp = -exp
		}
		i += 2
		if exp >= 100 {
			b[i] = byte('0' + exp/100)
			i++
			exp %= 100
		}
		b[i], b[i+1] = digits2[2*exp], digits2[2*exp+1]
		i += 2
	case exp < 0:
		// 0.000ddd
		b[i], b[i+1] = '0', '.'
		i += 2
		for range -exp - 1 {
			b[i] = '0'
			i++
		}
		putDigitsLong(b[i:i+nd], m)
		i += nd
	case nd <= exp+1:
		// an integer: its digits, e zeros and ".0"
		putDigitsLong(b[i:i+nd], m)
		i += nd
		for range e {
			b[i] = '0'
			i++
		}
		b[i], b[i+1] = '.', '0'
		i += 2
	default:
		// ddd.ddd: exp+1 digits before the point. The integer part of
		// the shortest decimal is the double's: an integer between them
		// would be a shorter decimal reading back as v.
		ip := uint64(math.Abs(v))
		fd := nd - exp - 1
		i += putUint(b[i:], ip)
		b[i] = '.'
		putDigitsLong(b[i+1:i+1+fd], m-ip*uint10[fd])
		i += fd + 1
	}
	return dst[:start+i]
}
