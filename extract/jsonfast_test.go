package extract

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// identical is exact equality of document values: floats by their bits
// (-0 is not 0, NaN is NaN), arrays and documents element by element,
// nil slices apart from empty ones, and the dynamic types alike.
func identical(a, b any) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	switch x := a.(type) {
	case float64:
		return math.Float64bits(x) == math.Float64bits(b.(float64))
	case transform.Array:
		y := b.(transform.Array)
		if len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !identical(x[i], y[i]) {
				return false
			}
		}
		return true
	case transform.Doc:
		y := b.(transform.Doc)
		if len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if x[i].Key != y[i].Key || !identical(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// checkJSONFast requires jsonFast to give what parseJSONText gives for
// text, or to decline; it reports whether it read the text.
func checkJSONFast(t *testing.T, p *jsonFast, text []byte) bool {
	t.Helper()
	got, ok := p.parse(&arena{}, text)
	want, err := parseJSONText(text, p.mode)
	if ok && err != nil {
		t.Fatalf("%s %q: jsonFast gives %s, parseJSONText fails: %v", p.mode, text, short(got), err)
	}
	if ok && !identical(got, want) {
		t.Fatalf("%s %q: jsonFast %s, parseJSONText %s", p.mode, text, short(got), short(want))
	}
	return ok
}

var jsonNumbers = []string{"0", "-0", "1", "-1", "2147483647", "2147483648", "-2147483648", "-2147483649",
	"999999999999999999", "-999999999999999999", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
	"123456789012345678901234567890", "0.5", "-0.0", "0.1", "0.30000000000000004", "1e22", "1e23", "1E+2", "1e-7",
	"5e-324", "4e-324", "1e-400", "1e309", "1.7976931348623157e308", "12.50", "100.000", "1e00007", "1e100000",
	"9007199254740993", "9007199254740993.0", "0.1000000000000000055511151231257827", "123.456", "-7.25e-3", "1.5E3"}

var jsonStrings = []string{`""`, `"a"`, `"caf\u00e9"`, `"é日本😀"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, `"\ud83dx"`,
	`"\ud83d\u0041"`, `"\"\\\/\b\f\n\r\t"`, `"\u0000"`, `"\u2028"`, `"\uFFFD"`, "\"\xff\"", "\"\xed\xa0\x80\"", "\"a\tb\"",
	`"\x"`, `"\u12"`, `"\u12g4"`, `"unterminated`, `"a\"b"`, `"key"`}

// randJSONText is random JSON text, valid most of the time, in jsonb's
// layout (", " and ": ") or a compact or spaced one.
func randJSONText(r *rand.Rand, depth int) string {
	sep := []string{"", " ", "\n  ", "\t"}[r.IntN(4)]
	switch k := r.IntN(10); {
	case depth > 3 || k < 4:
		switch r.IntN(6) {
		case 0:
			return []string{"null", "true", "false", "nul", "True"}[r.IntN(5)]
		case 1, 2:
			if r.IntN(2) == 0 {
				return jsonNumbers[r.IntN(len(jsonNumbers))]
			}
			f := r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
			return strconv.FormatFloat(f, []byte("gef")[r.IntN(3)], -1, 64)
		default:
			if r.IntN(3) == 0 {
				return jsonStrings[r.IntN(len(jsonStrings))]
			}
			return strconv.Quote(randText(r, 8))
		}
	case k < 7:
		var parts []string
		keys := []string{`"a"`, `"id"`, `"name"`, `"é"`, `"a\nb"`, `"tags"`, `"\u0041"`}
		for i := r.IntN(5); i > 0; i-- {
			key := keys[r.IntN(len(keys))]
			if r.IntN(3) == 0 {
				key = strconv.Quote(randText(r, 4))
			}
			parts = append(parts, key+sep+":"+sep+randJSONText(r, depth+1))
		}
		return "{" + sep + strings.Join(parts, ","+sep) + sep + "}"
	default:
		var parts []string
		for i := r.IntN(5); i > 0; i-- {
			parts = append(parts, randJSONText(r, depth+1))
		}
		return "[" + strings.Join(parts, ","+sep) + "]"
	}
}

// TestJSONFastDifferential feeds random JSON (numbers of every kind,
// escapes, surrogates, invalid UTF-8, repeated keys, every layout) and
// mutations of it (cut, a byte changed) to jsonFast and parseJSONText in
// every numeric mode and requires the same values, or jsonFast declining.
func TestJSONFastDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 7))
	read, valid := 0, 0
	for _, mode := range []mappings.NumericMode{mappings.NumericDecimal, mappings.NumericDouble, mappings.NumericString} {
		p := &jsonFast{mode: mode}
		for _, s := range append(append([]string{"{}", "[]", " [ ] ", "{\"a\": {}}", `{"a": 1, "a": 2}`, "[1,]", "{,}", "01", "1.", ".5", "-", "1 2", "[1x]", "truex",
			strings.Repeat("[", 300) + strings.Repeat("]", 300)}, jsonNumbers...), jsonStrings...) {
			checkJSONFast(t, p, []byte(s))
		}
		for range 20000 {
			s := randJSONText(r, 0)
			if _, err := parseJSONText([]byte(s), mode); err == nil {
				valid++
				if checkJSONFast(t, p, []byte(s)) {
					read++
				}
			} else {
				checkJSONFast(t, p, []byte(s))
			}
			b := []byte(s)
			switch r.IntN(3) {
			case 0:
				b = b[:r.IntN(len(b)+1)]
			case 1:
				if len(b) > 0 {
					b[r.IntN(len(b))] = "{}[],:\"\\ 0-e.ux\xff"[r.IntN(16)]
				}
			}
			checkJSONFast(t, p, b)
		}
	}
	// Most valid JSON must take the direct path, or the test proves
	// nothing about it.
	if read < valid/2 {
		t.Errorf("jsonFast read only %d of %d valid texts", read, valid)
	}
	t.Logf("jsonFast read %d of %d valid texts", read, valid)
}

// FuzzJSONFast is TestJSONFastDifferential on arbitrary text.
func FuzzJSONFast(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x"], "b": null}`, `"\ud83d\ude00"`, `[1e22, -0, 0.1]`, `{"a": 1, "a": 2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		for _, mode := range []mappings.NumericMode{mappings.NumericDecimal, mappings.NumericDouble, mappings.NumericString} {
			checkJSONFast(t, &jsonFast{mode: mode}, text)
		}
	})
}

// TestShortDecimal checks number's path for short decimals against the
// check it skips: ParseFloat, and strconv's shortest form of the double
// having the decimal's own digits. Decimals of 1 to 20 significant digits
// with zeros before, inside and after them, the point anywhere, with and
// without exponents; it must take every one of at most 15 digits whose
// value m·10^q has |q| <= 22, and give ParseFloat's double, bit for bit.
func TestShortDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 22))
	taken := 0
	for range 300_000 {
		// significant digits: the first and last nonzero
		n := 1 + r.IntN(20)
		sig := make([]byte, n)
		for i := range sig {
			sig[i] = byte('0' + r.IntN(10))
			if r.IntN(4) == 0 {
				sig[i] = '0'
			}
		}
		sig[0] = byte('1' + r.IntN(9))
		sig[n-1] = byte('1' + r.IntN(9))
		zero := r.IntN(20) == 0
		if zero {
			sig = []byte("0")
		}
		digits := string(sig)
		lead, trail := r.IntN(4), r.IntN(25)
		if r.IntN(2) == 0 {
			trail = 0
		}
		all := strings.Repeat("0", lead) + digits + strings.Repeat("0", trail)
		point := r.IntN(len(all) + 1) // digits before the point
		intPart, fracPart := all[:point], all[point:]
		intPart = strings.TrimLeft(intPart, "0")
		if intPart == "" {
			intPart = "0"
		}
		num := intPart
		if fracPart != "" || r.IntN(3) > 0 {
			if fracPart == "" {
				fracPart = "0"
			}
			num += "." + fracPart
		}
		e := 0
		if r.IntN(2) == 0 || !strings.Contains(num, ".") {
			e = r.IntN(61) - 30
			num += []string{"e", "E"}[r.IntN(2)]
			switch {
			case e < 0:
				num += "-"
			case r.IntN(2) == 0:
				num += "+"
			}
			num += strings.Repeat("0", r.IntN(2)) + strconv.Itoa(max(e, -e))
		}
		if r.IntN(2) == 0 {
			num = "-" + num
		}
		// the value is m·10^q, m the digits between the first and the
		// last nonzero one
		whole := intPart + fracPart
		m := strings.Trim(whole, "0")
		q := e - len(fracPart) + len(whole) - len(strings.TrimRight(whole, "0"))
		if len(m) != len(digits) && !zero {
			t.Fatalf("%s: %d significant digits, made with %d", num, len(m), len(digits))
		}
		f, ok := shortDecimal([]byte(num))
		want := (zero || len(digits) <= 15 && q >= -22 && q <= 22) && len(strconv.Itoa(max(e, -e))) <= 3
		if ok != want && !zero {
			t.Fatalf("%s (%d digits, q %d): shortDecimal ok %v, want %v", num, len(digits), q, ok, want)
		}
		if !ok {
			continue
		}
		taken++
		pf, err := strconv.ParseFloat(num, 64)
		if err != nil {
			t.Fatalf("%s: %v", num, err)
		}
		if math.Float64bits(f) != math.Float64bits(pf) {
			t.Fatalf("%s: shortDecimal %v (%#x), ParseFloat %v (%#x)", num, f, math.Float64bits(f), pf, math.Float64bits(pf))
		}
		if !sameDecimalBytes([]byte(num), strconv.AppendFloat(nil, pf, 'g', -1, 64)) {
			t.Fatalf("%s: shortDecimal takes it, but strconv writes its double as %s", num, strconv.FormatFloat(pf, 'g', -1, 64))
		}
	}
	if taken < 100_000 {
		t.Errorf("shortDecimal took %d of 300,000 decimals", taken)
	}
}
