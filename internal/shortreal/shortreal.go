// Package shortreal is the shortest decimal of a real (float4) as
// PostgreSQL prints it, by its definition: the fewest significant digits
// strictly inside the real's rounding interval (between the midpoints to
// its neighbours, which PostgreSQL's Ryū leaves out whatever the
// mantissa's parity, so that its text reads back under either rule for
// ties), of those the closest to it, a tie to the even one.
//
// strconv's shortest text is the same decimal for every real except two
// kinds: a tie in the shorter interval below a power of two, which
// strconv (Go 1.26, Dragonbox) breaks upwards (2^-12 is 0.00024414063 in
// Go and 0.00024414062 in PostgreSQL), and a decimal on a midpoint, which
// strconv takes when the mantissa is even (74617344 is 7.461734e+07 in Go
// and 7.4617344e+07 in PostgreSQL). The verify oracle writes reals through
// Text; migrate computes the decimal with its own Ryū (extract), tested
// against Exact.
package shortreal

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Exact is the shortest decimal d x 10^e of the finite, non-zero real f
// (its sign ignored), in exact arithmetic (math/big): for n = 1, 2, ...
// digits, the n-digit decimals next to the real strictly between the
// midpoints to its neighbours, the closest to it, a tie to the even one.
// It is slow (microseconds): a definition to test against.
func Exact(f float32) (d uint32, e int32) {
	f = float32(math.Abs(float64(f)))
	x := new(big.Rat).SetFloat64(float64(f))
	lo, hi := midpoints(f)
	exact := new(big.Float).SetPrec(200).SetRat(x)
	for n := 1; n <= 9; n++ {
		mant, exp, _ := strings.Cut(exact.Text('e', n-1), "e")
		digits := strings.Replace(mant, ".", "", 1)
		near, err1 := strconv.ParseInt(digits, 10, 64)
		p10, err2 := strconv.Atoi(exp)
		if err1 != nil || err2 != nil {
			return 0, 0
		}
		p10 -= n - 1
		var best int64
		var bestDist *big.Rat
		for _, c := range []int64{near - 1, near, near + 1} {
			if c <= 0 {
				continue
			}
			dist := decimal(c, p10)
			if dist.Cmp(lo) <= 0 || dist.Cmp(hi) >= 0 {
				continue
			}
			dist.Sub(dist, x).Abs(dist)
			if bestDist == nil || dist.Cmp(bestDist) < 0 || dist.Cmp(bestDist) == 0 && c%2 == 0 {
				best, bestDist = c, dist
			}
		}
		if bestDist != nil {
			for best%10 == 0 {
				best /= 10
				p10++
			}
			return uint32(best), int32(p10)
		}
	}
	return 0, 0 // unreachable: 9 digits always read back
}

// midpoints are the midpoints between the positive real f and its
// neighbours, exactly: below the smallest real, half of it; above the
// largest, as far as the one below.
func midpoints(f float32) (lo, hi *big.Rat) {
	x := new(big.Rat).SetFloat64(float64(f))
	half := big.NewRat(1, 2)
	prev := new(big.Rat).SetFloat64(float64(math.Nextafter32(f, 0)))
	lo = new(big.Rat).Add(x, prev)
	lo.Mul(lo, half)
	next := math.Nextafter32(f, float32(math.Inf(1)))
	if math.IsInf(float64(next), 0) {
		hi = new(big.Rat).Sub(x, lo)
		return lo, hi.Add(hi, x)
	}
	hi = new(big.Rat).Add(x, new(big.Rat).SetFloat64(float64(next)))
	return lo, hi.Mul(hi, half)
}

// decimal is c x 10^e, exactly.
func decimal(c int64, e int) *big.Rat {
	v := new(big.Rat).SetInt64(c)
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(e, -e))), nil))
	if e < 0 {
		return v.Quo(v, p)
	}
	return v.Mul(v, p)
}

// Text is the shortest decimal of the real f as PostgreSQL prints it, as
// text that strconv.ParseFloat reads: strconv's 'g' format, or for a power
// of two Exact's digits and power of ten ("24414062e-11" for 2^-12). The
// number is PostgreSQL's, the layout not always.
func Text(f float32) string {
	b := math.Float32bits(f)
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || f == 0 {
		return strconv.FormatFloat(float64(f), 'g', -1, 32)
	}
	if b&(1<<23-1) != 0 {
		s := strconv.FormatFloat(float64(f), 'g', -1, 32)
		if insideMidpoints(f, s) {
			return s
		}
	}
	d, e := Exact(f)
	s := strconv.FormatUint(uint64(d), 10) + "e" + strconv.Itoa(int(e))
	if b>>31 != 0 {
		s = "-" + s
	}
	return s
}

// insideMidpoints tells whether the decimal s of the real f lies strictly
// between the midpoints to its neighbours. The midpoints are doubles
// (a real's 24 bits and one more), and rounding is monotonic: the double
// nearest s strictly between them puts s strictly between them; only when
// it is one of them is the question settled exactly (math/big).
func insideMidpoints(f float32, s string) bool {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	a := math.Abs(float64(f))
	v = math.Abs(v)
	lo := (a + float64(math.Nextafter32(float32(a), 0))) / 2
	next := float64(math.Nextafter32(float32(a), float32(math.Inf(1))))
	hi := a + (a - lo)
	if !math.IsInf(next, 0) {
		hi = (a + next) / 2
	}
	if lo < v && v < hi {
		return true
	}
	r, ok := new(big.Rat).SetString(strings.TrimPrefix(s, "-"))
	if !ok {
		return false
	}
	rlo, rhi := midpoints(float32(a))
	return r.Cmp(rlo) > 0 && r.Cmp(rhi) < 0
}
