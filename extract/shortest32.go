package extract

import (
	"math/big"
	"math/bits"
)

// The shortest decimal of a real (float4), without text: Ulf Adams's Ryū
// ("Ryū: fast float-to-string conversion", PLDI 2018) for 32-bit floats,
// as PostgreSQL's float4out runs it (src/common/f2s.c, without
// STRICTLY_SHORTEST). float32To64 needs the decimal, not its text:
// formatting it and parsing it back took a quarter of the CPU of a
// migration of reals.
//
// shortest32 returns the fewest significant digits strictly inside the
// real's rounding interval, which read back as the same real whichever way
// a tie rounds (and of those, the closest to it; a tie to the even digit),
// as an integer d and a power of ten e, the real being d x 10^e. It
// differs from strconv's shortest for the reals whose shorter decimal sits
// exactly on a midpoint to a neighbour (0.6% of random reals above 2^24).
// The reals a mapping reads are what PostgreSQL prints, and the oracle
// reads some of them as that text: the differential fuzzer found a real[]
// element that way.

const (
	float32MantBits = 23
	float32Bias     = 127
	// The precision of the tables: 5^-q and 5^i kept as 59- and 61-bit
	// fractions.
	pow5InvBits = 59
	pow5Bits    = 61
)

// pow5InvSplit[q] is 2^(pow5bits(q)-1+pow5InvBits) / 5^q, rounded up;
// pow5Split[i] is 5^i scaled to pow5Bits bits (truncated). Computed
// exactly at start-up: 80 numbers.
var pow5InvSplit, pow5Split = pow5Tables()

func pow5Tables() (inv [32]uint64, pow [48]uint64) {
	p := big.NewInt(1)
	five := big.NewInt(5)
	for i := range len(pow) {
		if i > 0 {
			p.Mul(p, five)
		}
		b := pow5bits(int32(i))
		if i < len(inv) {
			q := new(big.Int).Lsh(big.NewInt(1), uint(b-1+pow5InvBits))
			q.Quo(q, p)
			inv[i] = q.Uint64() + 1
		}
		s := new(big.Int)
		if b >= pow5Bits {
			s.Rsh(p, uint(b-pow5Bits))
		} else {
			s.Lsh(p, uint(pow5Bits-b))
		}
		pow[i] = s.Uint64()
	}
	return inv, pow
}

// pow5bits is the number of bits of 5^e (e <= 3528), 1 for e = 0.
func pow5bits(e int32) int32 { return int32((uint32(e)*1217359)>>19) + 1 }

// log10Pow2 is floor(log10(2^e)), log10Pow5 floor(log10(5^e)) (e >= 0).
func log10Pow2(e int32) int32 { return int32((uint32(e) * 78913) >> 18) }
func log10Pow5(e int32) int32 { return int32((uint32(e) * 732923) >> 20) }

func pow5Factor(v uint32) int32 {
	n := int32(0)
	for v%5 == 0 {
		v /= 5
		n++
	}
	return n
}

// mulShift is (m * factor) >> shift, for 32 < shift < 96.
func mulShift(m uint32, factor uint64, shift int32) uint32 {
	hi, lo := bits.Mul64(uint64(m), factor)
	if shift >= 64 {
		return uint32(hi >> (shift - 64))
	}
	return uint32(hi<<(64-shift) | lo>>shift)
}

// shortest32 is the shortest decimal d x 10^e of the finite, non-zero,
// positive real whose bits are b.
func shortest32(b uint32) (d uint32, e int32) {
	mant := b & (1<<float32MantBits - 1)
	exp := int32(b >> float32MantBits)
	var e2 int32
	var m2 uint32
	if exp == 0 {
		e2, m2 = 1-float32Bias-float32MantBits-2, mant
	} else {
		e2, m2 = exp-float32Bias-float32MantBits-2, mant|1<<float32MantBits
	}
	// The real and the midpoints to its neighbours, times 4: the interval
	// of decimals that read back as it, the midpoints left out whatever
	// the mantissa's parity (PostgreSQL's Ryū: acceptBounds false, so that
	// the text reads back under either rule for ties; strconv takes a
	// midpoint when the mantissa is even, and 74617344 would be
	// 7.461734e+07, where PostgreSQL prints 7.4617344e+07).
	mv := 4 * m2
	mp := 4*m2 + 2
	mmShift := uint32(0)
	if mant != 0 || exp <= 1 {
		mmShift = 1
	}
	mm := 4*m2 - 1 - mmShift

	var vr, vp, vm uint32
	var e10 int32
	vrTrailingZeros := false
	lastRemoved := uint32(0)
	if e2 >= 0 {
		q := log10Pow2(e2)
		e10 = q
		k := pow5InvBits + pow5bits(q) - 1
		i := -e2 + q + k
		vr = mulShift(mv, pow5InvSplit[q], i)
		vp = mulShift(mp, pow5InvSplit[q], i)
		vm = mulShift(mm, pow5InvSplit[q], i)
		if q != 0 && (vp-1)/10 <= vm/10 {
			// The digit removed last, which the loops below may not see.
			l := pow5InvBits + pow5bits(q-1) - 1
			lastRemoved = mulShift(mv, pow5InvSplit[q-1], -e2+q-1+l) % 10
		}
		if q <= 9 {
			// Only one of mp, mv and mm can be a multiple of 5, if any.
			switch {
			case mv%5 == 0:
				vrTrailingZeros = pow5Factor(mv) >= q
			case pow5Factor(mp) >= q:
				vp-- // the upper midpoint left out
			}
		}
	} else {
		q := log10Pow5(-e2)
		e10 = q + e2
		i := -e2 - q
		k := pow5bits(i) - pow5Bits
		j := q - k
		vr = mulShift(mv, pow5Split[i], j)
		vp = mulShift(mp, pow5Split[i], j)
		vm = mulShift(mm, pow5Split[i], j)
		if q != 0 && (vp-1)/10 <= vm/10 {
			j = q - 1 - (pow5bits(i+1) - pow5Bits)
			lastRemoved = mulShift(mv, pow5Split[i+1], j) % 10
		}
		switch {
		case q <= 1:
			// mv = 4 * m2 has at least 2 trailing zero bits; mp = mv + 2
			// at least 1, and the upper midpoint is left out.
			vrTrailingZeros = true
			vp--
		case q < 31:
			vrTrailingZeros = mv&(1<<(q-1)-1) == 0
		}
	}

	// Remove the digits the interval leaves free.
	removed := int32(0)
	if vrTrailingZeros {
		// The rare case: the real may end in zeros.
		for vp/10 > vm/10 {
			vrTrailingZeros = vrTrailingZeros && lastRemoved == 0
			lastRemoved = vr % 10
			vr, vp, vm = vr/10, vp/10, vm/10
			removed++
		}
		if vrTrailingZeros && lastRemoved == 5 && vr%2 == 0 {
			lastRemoved = 4 // exactly halfway: round to even
		}
		d = vr
		if vr == vm || lastRemoved >= 5 { // vm, the lower midpoint, left out
			d++
		}
	} else {
		for vp/10 > vm/10 {
			lastRemoved = vr % 10
			vr, vp, vm = vr/10, vp/10, vm/10
			removed++
		}
		d = vr
		if vr == vm || lastRemoved >= 5 {
			d++
		}
	}
	return d, e10 + removed
}
