package extract

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/shortreal"
	"github.com/denorm/denorm/mappings"
)

// The reference of the numeric decoders: the wire's text
// (appendNumericWire) through numericValue, the path every numeric took
// before the digits were converted directly. ok is false where the decoder
// must decline (the codec path then decides).
func numericReference(col *mappings.Column, src []byte, mode mappings.NumericMode) (v any, ok bool) {
	buf, _, ok := appendNumericWire(nil, nil, src, numericScale(col.Type))
	if !ok {
		return nil, false
	}
	v, err := numericValue(col, string(buf), mode)
	return v, err == nil
}

// checkNumericWire decodes src in every numeric mode and requires the
// reference's result: the same float64 bits, the same decimal text, the
// same string; for doubles also strconv.ParseFloat of the text.
func checkNumericWire(t *testing.T, col *mappings.Column, src []byte) {
	t.Helper()
	for _, mode := range []mappings.NumericMode{mappings.NumericDouble, mappings.NumericDecimal, mappings.NumericString} {
		dec := numericDecoder(col, mode)
		got, ok := dec(&arena{}, src)
		want, wok := numericReference(col, src, mode)
		if ok != wok {
			t.Fatalf("%s %s %x: direct ok=%v %#v, reference ok=%v %#v", col.Type, mode, src, ok, got, wok, want)
		}
		if !ok {
			continue
		}
		switch w := want.(type) {
		case float64:
			g, isFloat := got.(float64)
			if !isFloat || math.Float64bits(g) != math.Float64bits(w) {
				t.Fatalf("%s %s %x: direct %#v (%x), reference %v (%x)", col.Type, mode, src, got, math.Float64bits(g), w, math.Float64bits(w))
			}
			text, _, _ := appendNumericWire(nil, nil, src, numericScale(col.Type))
			if p, err := strconv.ParseFloat(string(text), 64); err != nil || math.Float64bits(p) != math.Float64bits(g) {
				t.Fatalf("%s %x: direct %v, strconv.ParseFloat(%q) %v %v", col.Type, src, g, text, p, err)
			}
		default:
			if got != want {
				t.Fatalf("%s %s %x: direct %#v, reference %#v", col.Type, mode, src, got, want)
			}
		}
	}
}

// exactDecimal is the exact decimal text of the rational x.
func exactDecimal(x *big.Rat) string {
	s := x.FloatString(1100)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// TestWireDoubleDifferential feeds random and edge numerics through the
// direct decoders and the text path and requires identical results:
// random digits, weights and scales; the halfway points between adjacent
// doubles and their neighbours (the rounding boundaries); 2^53+1;
// 1e22 and 1e23; tiny and huge exponents; negative zero; NaN and
// ±Infinity; 1000 digits; and random raw bytes of the wire layout.
func TestWireDoubleDifferential(t *testing.T) {
	cols := []mappings.Column{numericCol("numeric"), numericCol("numeric(15,2)"), numericCol("numeric(38,10)")}
	check := func(src []byte) {
		for i := range cols {
			checkNumericWire(t, &cols[i], src)
		}
	}
	edges := []string{"0", "0.00", "-0.0", "NaN", "Infinity", "-Infinity", "0.1", "0.2", "0.3", "0.30000000000000004",
		"9007199254740991", "9007199254740992", "9007199254740993", "9007199254740994", "9007199254740995",
		"-9007199254740993", "18014398509481985", "10000000000000000000000", "100000000000000000000000",
		"99999999999999999999999", "1000000000000000000000000000000000000", "123456789012345678901234567890",
		"4.9406564584124654e-324", "0.000001", "1234567890123.45", "-9999999999999.99", "0.01", "42.10",
		"179769313486231570000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
		"1" + strings.Repeat("0", 308), "1" + strings.Repeat("0", 309), "0." + strings.Repeat("0", 322) + "5",
		"0." + strings.Repeat("0", 323) + "2", "0." + strings.Repeat("0", 400) + "1",
		strings.Repeat("9", 1000), "0." + strings.Repeat("3", 1000), strings.Repeat("7", 500) + "." + strings.Repeat("1", 500)}
	for _, e := range edges {
		if strings.Contains(e, "e") {
			f, _ := strconv.ParseFloat(e, 64)
			e = exactDecimal(new(big.Rat).SetFloat64(f))
		}
		check(numericWire(e))
	}
	// negative zero and odd signs on the wire
	for _, sign := range []uint16{0x4000, 0x8000, 0x1234} {
		check(binary.BigEndian.AppendUint16([]byte{0, 0, 0, 0}, sign)[:6:6])
		b := binary.BigEndian.AppendUint16([]byte{0, 0, 0, 0}, sign)
		check(append(b, 0, 2))
		b = binary.BigEndian.AppendUint16([]byte{0, 1, 0, 0}, sign)
		check(append(b, 0, 0, 0, 7))
	}
	r := rand.New(rand.NewPCG(29, 53))
	// rounding boundaries: the midpoint between a double and the next,
	// and the decimals just below and above it
	for range 3000 {
		var f float64
		switch r.IntN(3) {
		case 0:
			f = math.Float64frombits(r.Uint64() &^ (1 << 63))
		case 1:
			f = float64(r.Int64N(1<<54)) * math.Pow(10, float64(r.IntN(40)-20))
		default:
			f = r.Float64() * math.Pow(10, float64(r.IntN(60)-30))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			continue
		}
		next := math.Nextafter(f, math.Inf(1))
		if math.IsInf(next, 0) {
			continue
		}
		mid := new(big.Rat).Add(new(big.Rat).SetFloat64(f), new(big.Rat).SetFloat64(next))
		mid.Quo(mid, big.NewRat(2, 1))
		s := exactDecimal(mid)
		check(numericWire(s))
		check(numericWire("-" + s))
		check(numericWire(exactDecimal(new(big.Rat).SetFloat64(f))))
		// a last digit up and down: just off the midpoint
		if i := strings.LastIndexAny(s, "012345678"); i >= 0 && len(s) < 40 {
			check(numericWire(s[:i] + string(s[i]+1) + s[i+1:]))
		}
		if strings.Contains(s, ".") {
			check(numericWire(s + "1"))
		}
	}
	// significands of 54 to 64 bits with powers of ten from -19 to 19:
	// the integer rounding, with its ties (the midpoints between doubles
	// over 2^53 are integers) and the decimals around them
	for range 30000 {
		var m uint64
		switch r.IntN(3) {
		case 0:
			m = 1<<53 + r.Uint64N(1<<11)
		case 1:
			// a double over 2^53 and the midpoint to the next one
			d := float64(1<<53) * math.Pow(2, float64(r.IntN(11)))
			d = math.Nextafter(d+float64(r.Uint64N(1<<50))*math.Pow(2, float64(r.IntN(11)+1)), math.Inf(1))
			if d >= 1<<64 {
				continue
			}
			ulp := math.Nextafter(d, math.Inf(1)) - d
			m = uint64(d) + uint64(ulp/2) + uint64(r.IntN(3)) - 1
		default:
			m = r.Uint64()>>r.IntN(11) | 1<<53
		}
		text := strconv.FormatUint(m, 10)
		switch k := r.IntN(39) - 19; {
		case k > 0:
			text += strings.Repeat("0", k)
		case k < 0:
			for len(text) <= -k {
				text = "0" + text
			}
			text = text[:len(text)+k] + "." + text[len(text)+k:]
		}
		if r.IntN(2) == 0 {
			text = "-" + text
		}
		check(numericWire(text))
	}
	// random decimals of every size and scale
	for range 30000 {
		intDigits, fracDigits := r.IntN(30), r.IntN(25)
		if r.IntN(50) == 0 {
			intDigits, fracDigits = r.IntN(400), r.IntN(400)
		}
		var b strings.Builder
		if r.IntN(2) == 0 {
			b.WriteByte('-')
		}
		b.WriteString(digits(r, intDigits+1))
		if fracDigits > 0 {
			b.WriteByte('.')
			b.WriteString(digits(r, fracDigits))
		}
		s := b.String()
		// strip the integer part's leading zeros as PostgreSQL prints it
		neg := strings.HasPrefix(s, "-")
		body := strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
		if body == "" || body[0] == '.' {
			body = "0" + body
		}
		if neg {
			body = "-" + body
		}
		check(numericWire(body))
	}
	for range 30000 {
		check(randNumericBytes(r, 40, 60))
	}
}

// randNumericBytes is random bytes in a numeric's wire layout: weights
// from -weights to weights, display scales from -5 to scales (shorter
// than the digits too), zero digits, digits over 9999, every sign, now
// and then a byte short.
func randNumericBytes(r *rand.Rand, weights, scales int) []byte {
	n := r.IntN(7)
	b := binary.BigEndian.AppendUint16(nil, uint16(n))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(r.IntN(2*weights)-weights)))
	b = binary.BigEndian.AppendUint16(b, []uint16{0, 0, 0x4000, 0xC000, 0xD000, 0xF000, 0x1000}[r.IntN(7)])
	b = binary.BigEndian.AppendUint16(b, uint16(int16(r.IntN(scales+5)-5)))
	for range n {
		g := uint16(r.IntN(10000))
		switch r.IntN(20) {
		case 0:
			g = 0
		case 1:
			g = uint16(10000 + r.IntN(100))
		}
		b = binary.BigEndian.AppendUint16(b, g)
	}
	if r.IntN(30) == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// FuzzWireNumeric is TestWireDoubleDifferential on arbitrary bytes.
func FuzzWireNumeric(f *testing.F) {
	for _, s := range []string{"12.50", "-0.1", "9007199254740993", "1" + strings.Repeat("0", 30), "NaN"} {
		f.Add(numericWire(s))
	}
	cols := []mappings.Column{numericCol("numeric"), numericCol("numeric(15,2)")}
	f.Fuzz(func(t *testing.T, src []byte) {
		for i := range cols {
			checkNumericWire(t, &cols[i], src)
		}
	})
}

// TestWireDoubleFastPath checks that the common numerics take the exact
// path (no text): the differential test alone would pass if none did.
func TestWireDoubleFastPath(t *testing.T) {
	for _, s := range []string{"1234567890123.45", "-0.01", "42", "9007199254740992", "1" + strings.Repeat("0", 30), "0.0000000000000000000001", "NaN", "-Infinity", "0.00",
		// over 2^53: rounded in integer arithmetic
		"9007199254740993", "-123456789012345678.9", "12345678901234567.891", "18446744073709551615", "0.1234567890123456789"} {
		if _, ok := wireDouble(numericWire(s)); !ok {
			t.Errorf("%s: not on the direct path", s)
		}
	}
	for _, s := range []string{"1" + strings.Repeat("0", 40), "0.00000000000000000000001", "12345678901234567890.1", "1234567890123456789012345678.0123456789"} {
		if _, ok := wireDouble(numericWire(s)); ok {
			t.Errorf("%s: on the direct path, which cannot round it", s)
		}
	}
}

// float32To64Reference is float32To64 as it was, the shortest text of the
// real parsed by strconv.ParseFloat, but with the text of
// shortreal.Text: strconv's except for a power of two, where strconv
// breaks a tie upwards and PostgreSQL to even (the one class of reals
// where they differ: TestShortest32 with DENORM_SHORTEST32_ALL=1).
func float32To64Reference(f float32) float64 {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || f == 0 {
		return float64(f)
	}
	d, err := strconv.ParseFloat(shortreal.Text(f), 64)
	if err != nil {
		return float64(f)
	}
	return d
}

// TestFloat32To64Differential compares float32To64 with the reference
// bit for bit on every exponent and sign: random reals, the ends of each
// binade, subnormals, the largest and smallest, and zeros.
func TestFloat32To64Differential(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 32))
	check := func(b uint32) {
		f := math.Float32frombits(b)
		got, want := float32To64(f), float32To64Reference(f)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("%x (%g): %v (%x), reference %v (%x)", b, f, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for exp := uint32(0); exp < 256; exp++ {
		for _, sign := range []uint32{0, 1 << 31} {
			base := sign | exp<<23
			for _, mant := range []uint32{0, 1, 2, 0x7FFFFF, 0x7FFFFE, 0x400000} {
				check(base | mant)
			}
			for range 2000 {
				check(base | r.Uint32()&0x7FFFFF)
			}
		}
	}
	for range 200000 {
		check(r.Uint32())
	}
	// the reals of short decimals: 0.1, 3.3, 12.25, ...
	for i := range 100000 {
		check(math.Float32bits(float32(i) / 100))
	}
}
