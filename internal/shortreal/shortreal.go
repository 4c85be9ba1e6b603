// Package shortreal is the shortest decimal of a real (float4) as
// PostgreSQL prints it, by its definition: the fewest significant digits
// that read back as the same real, of those the closest to it, a tie to
// the even one. PostgreSQL's float4out computes it with Ryū.
//
// strconv's shortest text is the same decimal for every real except at a
// tie in the shorter interval below a power of two, which strconv (Go
// 1.26, Dragonbox) breaks upwards: 2^-12 is 0.00024414063 in Go and
// 0.00024414062 in PostgreSQL. The verify oracle writes reals through
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
// digits, the n-digit decimals next to the real that read back as it
// (strconv.ParseFloat, 32 bits), the closest to it, a tie to the even one.
// It is slow (microseconds): a definition to test against.
func Exact(f float32) (d uint32, e int32) {
	f = float32(math.Abs(float64(f)))
	x := new(big.Rat).SetFloat64(float64(f))
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
			if g, err := strconv.ParseFloat(strconv.FormatInt(c, 10)+"e"+strconv.Itoa(p10), 32); err != nil || float32(g) != f {
				continue
			}
			dist := decimal(c, p10)
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
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || f == 0 || b&(1<<23-1) != 0 {
		return strconv.FormatFloat(float64(f), 'g', -1, 32)
	}
	d, e := Exact(f)
	s := strconv.FormatUint(uint64(d), 10) + "e" + strconv.Itoa(int(e))
	if b>>31 != 0 {
		s = "-" + s
	}
	return s
}
