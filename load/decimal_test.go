package load

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/transform"
)

// numberText is the syntax of the numbers transform.DecimalFits reads
// (PostgreSQL and JSON never write a leading "+"; the driver misreads a
// long one with it).
var numberText = regexp.MustCompile(`^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// checkDecimal holds parseDecimal and appendDecimalText to
// the driver's ParseDecimal128 and Decimal128.String for s.
func checkDecimal(t testing.TB, s string) {
	t.Helper()
	want, werr := bson.ParseDecimal128(s)
	got, err := parseDecimal(s)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q: parseDecimal error %v, driver error %v", s, err, werr)
	}
	if numberText.MatchString(s) || s == "NaN" || s == "Infinity" || s == "-Infinity" {
		// the builder's check, which rejects a row at read time rather
		// than the document holding it at encode time, says the same
		if fits := transform.DecimalFits(s); (fits == nil) != (werr == nil) {
			t.Fatalf("%q: transform.DecimalFits %v, driver error %v", s, fits, werr)
		}
	}
	text, terr := appendDecimalText([]byte("x"), s)
	if (terr == nil) != (werr == nil) {
		t.Fatalf("%q: appendDecimalText error %v, driver error %v", s, terr, werr)
	}
	if werr != nil {
		return
	}
	if got != want {
		gh, gl := got.GetBytes()
		wh, wl := want.GetBytes()
		t.Fatalf("%q: parseDecimal %016x%016x, driver %016x%016x", s, gh, gl, wh, wl)
	}
	if string(text) != "x"+want.String() {
		t.Fatalf("%q: appendDecimalText %q, driver %q", s, text[1:], want.String())
	}
}

// randDecimalText makes decimal text of every kind the fast path must
// accept or leave to the driver: plain decimals of 1 to 40 digits with
// leading and trailing zeros, negative zeros, long fractions around the
// exponent limit, and forms only the driver takes (exponents, '+', '.5').
func randDecimalText(r *rand.Rand) string {
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		return string(b)
	}
	zeros := func(n int) string { return strings.Repeat("0", n) }
	sign := []string{"", "", "-", "+"}[r.IntN(4)]
	switch r.IntN(11) {
	case 0:
		return sign + zeros(r.IntN(3)) + "." + zeros(r.IntN(10))
	case 1:
		return sign + "0." + zeros(r.IntN(12)) + digits(1+r.IntN(5))
	case 2:
		return sign + digits(1+r.IntN(40))
	case 3:
		return sign + digits(1+r.IntN(20)) + "." + digits(r.IntN(25))
	case 4:
		return sign + "0." + zeros(6170+r.IntN(12)) + digits(1+r.IntN(3))
	case 5:
		return sign + digits(1+r.IntN(5)) + "e" + []string{"", "-", "+"}[r.IntN(3)] + digits(1+r.IntN(4))
	case 6:
		return sign + zeros(r.IntN(4)) + digits(1+r.IntN(34)) + "." + zeros(r.IntN(4))
	case 7:
		return []string{"NaN", "-Infinity", "Infinity", "inf", "", "-", ".", "1.", ".5", "1..2", "1a", "- 1", "0x10", "١"}[r.IntN(14)]
	case 9:
		// near a Decimal128's exponent limits, with trailing zeros that
		// may or may not be absorbed into the coefficient
		exp := []int{6111, 6144, 6176, 6078}[r.IntN(4)] + r.IntN(81) - 40
		return sign + digits(1+r.IntN(34)) + zeros(r.IntN(40)) + "e" + []string{"", "-"}[r.IntN(2)] + strconv.Itoa(exp)
	case 8:
		d := digits(34)
		i := r.IntN(35)
		return sign + d[:i] + "." + d[i:] + zeros(r.IntN(3))
	default:
		return sign + digits(1+r.IntN(6)) + "." + digits(1+r.IntN(6))
	}
}

func TestDecimalFastPath(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "0.00", "-0.00", "12.50", "-12.50", "1000", "0.001", "0.000001", "0.0000001", "-0.0000001", "0.0000000",
		"1.000000000000000000000000000000000", "9999999999999999999999999999999999", "99999999999999999999999999999999999",
		"0.9999999999999999999999999999999999", "0000000000000000000000000000000000001", "100000000000000000000000000000000000",
		"0." + strings.Repeat("0", 6175) + "1", "0." + strings.Repeat("0", 6176) + "1", "0." + strings.Repeat("0", 6176),
		"123456789012345678901234567890.1234", "-0.00100", "007", "7.",
	} {
		checkDecimal(t, s)
	}
	r := rand.New(rand.NewPCG(7, 34))
	for range 20000 {
		checkDecimal(t, randDecimalText(r))
	}
}

func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"12.50", "-0", "0.0000001", "1e5", "99999999999999999999999999999999999", "NaN", ".5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 7000 {
			return
		}
		checkDecimal(t, s)
	})
}

func BenchmarkDecimal(b *testing.B) {
	for _, s := range []string{"12.50", "-1234567.891"} {
		b.Run(s, func(b *testing.B) {
			b.Run("parseDecimal", func(b *testing.B) {
				for b.Loop() {
					parseDecimal(s)
				}
			})
			b.Run("driver", func(b *testing.B) {
				for b.Loop() {
					bson.ParseDecimal128(s)
				}
			})
			b.Run("appendDecimalText", func(b *testing.B) {
				var buf []byte
				for b.Loop() {
					buf, _ = appendDecimalText(buf[:0], s)
				}
			})
		})
	}
}
