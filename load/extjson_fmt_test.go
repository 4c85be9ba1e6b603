package load

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/denorm/denorm/transform"
)

// benchDoubles are money-like values (numeric(15,2) read as double) below
// 10^5, which take the fast path's %f form, up to 10^11 (mostly its %e
// form: 1.2345678901E+09), and x/7 values (17 significant digits), which
// fall back to strconv.
func benchDoubles() map[string][]float64 {
	r := rand.New(rand.NewPCG(15, 2))
	money := make([]float64, 1024)
	large := make([]float64, 1024)
	seventh := make([]float64, 1024)
	for i := range money {
		money[i] = float64(r.Int64N(10_000_000)) / 100
		large[i] = float64(r.Int64N(10_000_000_000_000)) / 100
		seventh[i] = float64(r.Int64N(1_000_000)) / 7
	}
	return map[string][]float64{"money": money, "large": large, "seventh": seventh}
}

func BenchmarkAppendJSONDouble(b *testing.B) {
	for _, name := range []string{"money", "large", "seventh"} {
		vals := benchDoubles()[name]
		for _, impl := range []struct {
			name string
			f    func([]byte, float64) []byte
		}{{"old", oldAppendJSONDouble}, {"new", appendJSONDouble}} {
			b.Run(name+"/"+impl.name, func(b *testing.B) {
				buf := make([]byte, 0, 64)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					buf = impl.f(buf[:0], vals[i&1023])
					i++
				}
			})
		}
	}
}

// benchDates are instants on distinct days (1970..2100) or on 8 days, at
// random times of day, a third on whole seconds; or, midnight set, the
// distinct days at midnight (a date column's values).
func benchDates(days int64, midnight bool) []int64 {
	r := rand.New(rand.NewPCG(19, 70))
	ms := make([]int64, 1024)
	for i := range ms {
		d := r.Int64N(47_482)
		if days != 0 {
			d = 20_000 + r.Int64N(days)
		}
		ms[i] = d*86_400_000 + r.Int64N(86_400_000)
		if midnight {
			ms[i] = d * 86_400_000
		}
		if i%3 == 0 {
			ms[i] -= ms[i] % 1000
		}
	}
	return ms
}

func BenchmarkAppendDate(b *testing.B) {
	for _, set := range []struct {
		name     string
		days     int64
		midnight bool
	}{{"distinct", 0, false}, {"repeated", 8, false}, {"midnight", 0, true}} {
		ms := benchDates(set.days, set.midnight)
		for _, impl := range []struct {
			name string
			f    func([]byte, int64) []byte
		}{
			{"old", new(oldDays).appendDate},
			{"new", appendJSONDate},
			{"old-nocache", (*oldDays)(nil).appendDate},
		} {
			b.Run(set.name+"/"+impl.name, func(b *testing.B) {
				buf := make([]byte, 0, 64)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					buf = impl.f(buf[:0], ms[i&1023])
					i++
				}
			})
		}
	}
}

// checkDouble holds appendJSONDouble to the old formatting of f, after a
// prefix (the new code writes past len(dst)).
func checkDouble(t testing.TB, buf *[2][]byte, f float64) {
	got := appendJSONDouble(append((*buf)[0][:0], "x:"...), f)
	want := oldAppendJSONDouble(append((*buf)[1][:0], "x:"...), f)
	if !bytes.Equal(got, want) {
		t.Fatalf("%v (bits %#x): got %s, want %s", f, math.Float64bits(f), got, want)
	}
	(*buf)[0], (*buf)[1] = got, want
}

func TestJSONDoubleEdges(t *testing.T) {
	var buf [2][]byte
	fs := []float64{
		0, math.Copysign(0, -1), math.NaN(), math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0xfff0000000000001),
		math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 2.225073858507201e-308,
		1e-4, math.Nextafter(1e-4, 0), math.Nextafter(1e-4, 1), 0.00010000000000000002, 0.0001000000000001, 0.000100000000000001,
		1e-5, 9.99999999999999e-5, 0.00099999999999999, 0.001, 0.01, 0.1, 0.2, 0.3, 0.1 + 0.2, 0.7, 0.07,
		1, 2, 9.999999999999999, 10, 99.99999999999999, 100, 1e5, 999999, 999999.5, 999999.99, 999999.999999999,
		999999.9999999999, 999999.99999999999, 999999.9999999999999, 1e6, math.Nextafter(1e6, 0), math.Nextafter(1e6, 2e6), 1000000.0000000001,
		1e7, 1e15, 1e21, 1 << 53, 1<<53 + 1, 1<<53 - 1, 1 << 52, 4503599627370495.5, 123456789012345, 12345678901234.5,
		1234.56, 12.5, 980.1, 0.123456789012345, 0.1234567890123456, 0.12345678901234567, 123456.789012345, 123456.7890123456,
		123456.78901234567, 1.5e-7, 1 / 3.0, 2 / 3.0, 1e-4 / 3, 0.00012, 0.000123456789012345, 0.0001234567890123456, 5e-324,
		// the exponent form of the fast path: 1e-8..1e-4 and 1e6..1e15
		1e-8, 1e-7, 1e-6, 1e-5, 9.99999999999999e-9, 1.00000000000001e-8, 1.23456789012345e-7, 1234567, 1234567.5, 12345678.9,
		1e14, 1e15 - 1, 1e15 - 0.5, 1e15 + 1, 999999999999999, 99999999999999.9, 123456789012345, 1234567890123456, 12345678901234.5,
		2e11, 200000600001, 98765432109.87, 1.5e8, 5e14, 9.99999999999999e14,
	}
	for _, f := range fs {
		checkDouble(t, &buf, f)
		checkDouble(t, &buf, -f)
		checkDouble(t, &buf, math.Nextafter(f, math.Inf(1)))
		checkDouble(t, &buf, math.Nextafter(f, math.Inf(-1)))
	}
	for p := -330; p <= 310; p++ {
		f, _ := strconv.ParseFloat("1e"+strconv.Itoa(p), 64)
		for _, g := range []float64{f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)), 9.999999999999999 * f / 10, 5 * f, 0.5 * f} {
			checkDouble(t, &buf, g)
			checkDouble(t, &buf, -g)
		}
	}
}

// TestJSONDoubleDecimals: every n/100 and n/10000 below 10^5 (the fast
// path takes each), x/7 (it takes none), integers n·1000003 and n/10^11
// (the exponent form), and random decimals n/10^s and their neighbours
// (the fast path must take every one of at most 15 digits in its range).
func TestJSONDoubleDecimals(t *testing.T) {
	var buf [2][]byte
	limit := 10_000_000
	if testing.Short() || raceEnabled {
		limit = 2_000_000
	}
	for n := 1; n < limit; n++ {
		f := float64(n) / 100
		if _, ok := appendShortDouble(nil, f); !ok {
			t.Fatalf("%v: not on the fast path", f)
		}
		checkDouble(t, &buf, f)
		checkDouble(t, &buf, float64(n)/10000)
		if n%8 == 0 {
			checkDouble(t, &buf, -float64(n)/7)
			if _, ok := appendShortDouble(nil, float64(n)*1000003); !ok {
				t.Fatalf("%v: not on the fast path", float64(n)*1000003)
			}
			checkDouble(t, &buf, float64(n)*1000003) // integers to 1e13: the exponent form
			checkDouble(t, &buf, float64(n)/1e11)    // 1e-11..2e-4
		}
	}
	r := rand.New(rand.NewPCG(14, 15))
	fast := 0
	for range limit / 4 {
		digits := 1 + r.IntN(17)
		n := r.Int64N(int64(uint10[digits]))
		s := r.IntN(23)
		f := float64(n) / math.Pow10(s)
		if r.IntN(2) == 0 {
			f = -f
		}
		if _, ok := appendShortDouble(nil, f); ok {
			fast++
		} else if digits <= 15 && n != 0 && math.Abs(f) >= 1e-8 && math.Abs(f) < 1e15 {
			t.Fatalf("%d/10^%d: not on the fast path", n, s)
		}
		checkDouble(t, &buf, f)
		checkDouble(t, &buf, math.Nextafter(f, math.Inf(1)))
		checkDouble(t, &buf, math.Nextafter(f, math.Inf(-1)))
	}
	if fast < limit/20 {
		t.Fatalf("%d random decimals on the fast path: too few to test it", fast)
	}
}

// TestJSONDoubleRandom: random bit patterns, and random doubles spread
// over the fast path's range.
func TestJSONDoubleRandom(t *testing.T) {
	var buf [2][]byte
	count := 2_000_000
	if testing.Short() || raceEnabled {
		count = 300_000
	}
	r := rand.New(rand.NewPCG(64, 1))
	for range count {
		checkDouble(t, &buf, math.Float64frombits(r.Uint64()))
		checkDouble(t, &buf, math.Pow(10, r.Float64()*26-10))
		checkDouble(t, &buf, math.Float64frombits(math.Float64bits(1e-9)+r.Uint64N(math.Float64bits(1e16)-math.Float64bits(1e-9))))
	}
}

func FuzzJSONDouble(f *testing.F) {
	f.Add(math.Float64bits(1234.56), uint64(123456), uint8(2))
	f.Add(math.Float64bits(1e-4), uint64(999999999999999), uint8(9))
	f.Add(math.Float64bits(math.NaN()), uint64(1), uint8(4))
	f.Fuzz(func(t *testing.T, bits, n uint64, s uint8) {
		var buf [2][]byte
		checkDouble(t, &buf, math.Float64frombits(bits))
		d := float64(n%100_000_000_000_000_000) / math.Pow10(int(s)%23)
		checkDouble(t, &buf, d)
		checkDouble(t, &buf, -d)
		checkDouble(t, &buf, math.Nextafter(d, math.Inf(1)))
		checkDouble(t, &buf, math.Nextafter(d, 0))
	})
}

// checkDate holds appendJSONDate to the old formatting of ms, twice (the
// second time the day's block of dayTexts is filled).
func checkDate(t testing.TB, buf *[3][]byte, ms int64) {
	want := (*oldDays)(nil).appendDate(append((*buf)[0][:0], "x:"...), ms)
	got := appendJSONDate(append((*buf)[1][:0], "x:"...), ms)
	if !bytes.Equal(got, want) {
		t.Fatalf("%d ms: got %s, want %s", ms, got, want)
	}
	got2 := appendJSONDate(append((*buf)[2][:0], "x:"...), ms)
	if !bytes.Equal(got2, want) {
		t.Fatalf("%d ms, second time: got %s, want %s", ms, got2, want)
	}
	(*buf)[0], (*buf)[1], (*buf)[2] = want, got, got2
}

// TestJSONDateEveryDay: every day of 1970..9999 at midnight, the last
// millisecond, and random times (whole seconds, tenths, hundredths,
// milliseconds), the range's edges, and days in random order with days
// repeated (the remembered texts' slots shared).
func TestJSONDateEveryDay(t *testing.T) {
	var buf [3][]byte
	r := rand.New(rand.NewPCG(1970, 1))
	const lastDay = maxISODateMillis/86_400_000 - 1 // 9999-12-31
	if want := "x:{\"$date\":\"9999-12-31T00:00:00Z\"}"; string(appendJSONDate([]byte("x:"), lastDay*86_400_000)) != want {
		t.Fatalf("last day: got %s", appendJSONDate([]byte("x:"), lastDay*86_400_000))
	}
	step := int64(1)
	if raceEnabled {
		step = 7 // every weekday still meets every month and leap day
	}
	for day := int64(0); day <= lastDay; day += step {
		ms := day * 86_400_000
		checkDate(t, &buf, ms)
		checkDate(t, &buf, ms+86_399_999)
		checkDate(t, &buf, ms+r.Int64N(86_400)*1000)
		checkDate(t, &buf, ms+r.Int64N(86_400_000)/[]int64{1, 10, 100}[r.IntN(3)]*[]int64{1, 10, 100}[r.IntN(3)])
	}
	for _, ms := range []int64{0, 1, 999, 1000, 86_399_999, 86_400_000, -1, -1000, -86_400_000, maxISODateMillis - 1, maxISODateMillis, maxISODateMillis + 1, math.MinInt64, math.MaxInt64, math.MinInt64 + 1} {
		checkDate(t, &buf, ms)
	}
	days := []int64{0, 64, 128, 11_000, 11_064, lastDay}
	for range 200_000 {
		day := r.Int64N(lastDay + 1)
		if r.IntN(2) == 0 {
			day = days[r.IntN(len(days))]
		}
		checkDate(t, &buf, day*86_400_000+r.Int64N(86_400_000))
		checkDate(t, &buf, int64(r.Uint64()))
	}
}

func FuzzJSONDate(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(maxISODateMillis - 1))
	f.Add(int64(1_709_210_096_120))
	f.Fuzz(func(t *testing.T, ms int64) {
		var buf [3][]byte
		checkDate(t, &buf, ms)
		checkDate(t, &buf, ms%maxISODateMillis)
		if ms < 0 {
			checkDate(t, &buf, -(ms % maxISODateMillis))
		}
	})
}

// TestDayTextsShared has writers fill one table's blocks at once, each
// going over the days in an order of its own, and holds every text to
// putDay's: under the race detector, the blocks' filling is safe to share.
func TestDayTextsShared(t *testing.T) {
	tb := new(dayTextTable)
	const writers = 4
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			r := rand.New(rand.NewPCG(uint64(w), 29))
			var want [10]byte
			for _, d := range r.Perm(dayTextDays) {
				putDay(&want, uint32(d))
				if got := tb.day(uint32(d)); *got != want {
					errs <- fmt.Errorf("day %d: got %s, want %s", d, got[:], want[:])
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range tb.blocks {
		if !tb.blocks[i].filled.Load() {
			t.Fatalf("block %d not filled", i)
		}
	}
}

// TestJSONUUID holds appendJSONUUID to the general binary writer (the
// standard library's base64) on random uuids and on all-zero and all-one
// bytes, after a prefix.
func TestJSONUUID(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 4))
	us := []transform.UUID{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for range 100_000 {
		var u transform.UUID
		for i := range u {
			u[i] = byte(r.Uint32())
		}
		us = append(us, u)
	}
	for _, u := range us {
		got := appendJSONUUID([]byte("x:"), &u)
		want := appendJSONBinary([]byte("x:"), u[:], "04")
		if !bytes.Equal(got, want) {
			t.Fatalf("%x: got %s, want %s", u, got, want)
		}
	}
}

func BenchmarkJSONUUID(b *testing.B) {
	u := transform.UUID{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	buf := make([]byte, 0, 128)
	b.Run("uuid", func(b *testing.B) {
		for b.Loop() {
			buf = appendJSONUUID(buf[:0], &u)
		}
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			buf = appendJSONBinary(buf[:0], u[:], "04")
		}
	})
}
