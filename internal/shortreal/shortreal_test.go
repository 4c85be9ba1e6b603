package shortreal

import (
	"math"
	"strconv"
	"testing"
)

// TestAsPostgreSQL checks Text against what PostgreSQL 15 prints for the
// same reals (SELECT x::real::text, copied here): powers of two, where
// strconv's tie rule differs at 2^-12, and reals of other kinds. Every
// power of two from 2^-149 to 2^127 was compared with PostgreSQL once,
// with none differing (the note of issue 29).
func TestAsPostgreSQL(t *testing.T) {
	for _, c := range []struct {
		f  float32
		pg string
	}{
		{float32(math.Ldexp(1, -149)), "1e-45"},
		{float32(math.Ldexp(1, -126)), "1.1754944e-38"},
		{float32(math.Ldexp(1, -77)), "6.617445e-24"},
		{float32(math.Ldexp(1, -20)), "9.536743e-07"},
		{float32(math.Ldexp(1, -12)), "0.00024414062"},
		{float32(math.Ldexp(-1, -12)), "-0.00024414062"},
		{0.5, "0.5"},
		{1, "1"},
		{float32(math.Ldexp(1, 24)), "1.6777216e+07"},
		{float32(math.Ldexp(1, 30)), "1.0737418e+09"},
		{float32(math.Ldexp(1, 127)), "1.7014118e+38"},
		{0.1, "0.1"},
		{math.MaxFloat32, "3.4028235e+38"},
		{1.0 / 3, "0.33333334"},
		// a shorter decimal on the midpoint to a neighbour, which
		// PostgreSQL leaves out (strconv: 5.033165e+07, 7.461734e+07,
		// -1.2887878e+08)
		{50331648, "5.0331648e+07"},
		{74617344, "7.4617344e+07"},
		{-128878784, "-1.28878784e+08"},
		{1.0995116e12, "1.0995116e+12"},
	} {
		got, err := strconv.ParseFloat(Text(c.f), 64)
		want, _ := strconv.ParseFloat(c.pg, 64)
		if err != nil || got != want {
			t.Errorf("%g: Text %q, PostgreSQL %s", c.f, Text(c.f), c.pg)
		}
	}
	if s := Text(float32(math.Ldexp(1, -12))); s != "24414062e-11" {
		t.Errorf("2^-12: Text %q, want Exact's digits", s)
	}
}

// TestExactReadsBack checks Exact's defining properties on reals of every
// binade: its decimal reads back as the real and lies strictly between
// the midpoints to the real's neighbours, and no decimal of fewer digits
// does (the decimals one digit shorter next to the real, both ways, lie
// on a midpoint or beyond: 1.5 x 2^25 = 50331648, whose 5.033165e+07 is
// on the lower midpoint, is one).
func TestExactReadsBack(t *testing.T) {
	for exp := -149; exp <= 127; exp += 3 {
		for _, m := range []float64{1, 1.1, 1.5, 1.9999999} {
			f := float32(math.Ldexp(m, exp))
			if f == 0 || math.IsInf(float64(f), 0) {
				continue
			}
			d, e := Exact(f)
			if g, _ := strconv.ParseFloat(strconv.FormatUint(uint64(d), 10)+"e"+strconv.Itoa(int(e)), 32); float32(g) != f {
				t.Fatalf("%g: %de%d reads back as %g", f, d, e, g)
			}
			lo, hi := midpoints(f)
			if v := decimal(int64(d), int(e)); v.Cmp(lo) <= 0 || v.Cmp(hi) >= 0 {
				t.Fatalf("%g: %de%d is not strictly between the midpoints", f, d, e)
			}
			if d < 10 {
				continue
			}
			for _, shorter := range []int64{int64(d) / 10, int64(d)/10 + 1} {
				if v := decimal(shorter, int(e)+1); v.Cmp(lo) > 0 && v.Cmp(hi) < 0 {
					t.Fatalf("%g: %de%d is shorter than %de%d and between the midpoints", f, shorter, e+1, d, e)
				}
			}
		}
	}
}
