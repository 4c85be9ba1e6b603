package extract

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/denorm/denorm/internal/shortreal"
)

// shortest32Exact is the shortest decimal of the real of bits b by its
// definition (shortreal.Exact).
func shortest32Exact(b uint32) (uint32, int32) { return shortreal.Exact(math.Float32frombits(b)) }

// shortest32Strconv is the shortest decimal of a real as strconv formats
// it ('e', -1, 32), read back as digits and a power of ten. strconv (Go
// 1.26: Dragonbox) breaks the ties of the shorter intervals, below a
// power of two, upwards where PostgreSQL's Ryū breaks them to even: 2^-12
// is 0.00024414063 in Go and 0.00024414062 in PostgreSQL; and it takes a
// decimal on the midpoint to a neighbour when the significand is even,
// which PostgreSQL's does not: 74617344 is 7.461734e+07 in Go and
// 7.4617344e+07 in PostgreSQL.
func shortest32Strconv(b uint32) (uint32, int32) {
	s := strconv.FormatFloat(float64(math.Float32frombits(b)), 'e', -1, 32)
	mant, exp, _ := strings.Cut(s, "e")
	e, err := strconv.Atoi(exp)
	if err != nil {
		panic(s)
	}
	digits := strings.Replace(mant, ".", "", 1)
	d, err := strconv.ParseUint(digits, 10, 32)
	if err != nil {
		panic(s)
	}
	return uint32(d), int32(e - (len(digits) - 1))
}

// checkShortest32 compares shortest32 on the real of bits b with strconv's
// shortest decimal and, where they differ, with shortest32Exact, which
// must then agree with shortest32. It returns whether shortest32 is
// right, and whether strconv differs.
func checkShortest32(b uint32) (ok, strconvDiffers bool) {
	d, e := shortest32(b)
	if sd, se := shortest32Strconv(b); d == sd && e == se {
		return true, false
	}
	xd, xe := shortest32Exact(b)
	return d == xd && e == xe, true
}

// TestShortest32 checks shortest32: on the ends of every binade, every
// power of two, reals of short decimals and random reals, against strconv
// and, where strconv differs, the exact definition; with
// DENORM_SHORTEST32_ALL=1, on every positive finite real (2^31 of them,
// several minutes on two cores), printing how many strconv differs on.
func TestShortest32(t *testing.T) {
	strconvDiffers := 0
	check := func(b uint32) bool {
		ok, differs := checkShortest32(b)
		if differs {
			strconvDiffers++
		}
		if !ok {
			d, e := shortest32(b)
			xd, xe := shortest32Exact(b)
			t.Errorf("%#x (%g): %de%d, exactly %de%d", b, math.Float32frombits(b), d, e, xd, xe)
		}
		return ok
	}
	if os.Getenv("DENORM_SHORTEST32_ALL") == "1" {
		const last = 0x7F7FFFFF // the largest finite real
		var wg sync.WaitGroup
		var fails, differs atomic.Int64
		workers := uint32(runtime.GOMAXPROCS(0))
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := 1 + w; b <= last; b += workers {
					ok, d := checkShortest32(b)
					if !ok {
						fails.Add(1)
					}
					if d {
						differs.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("all %d positive finite reals: strconv differs on %d", last, differs.Load())
		if fails.Load() > 0 {
			t.Fatalf("%d reals wrong", fails.Load())
		}
		return
	}
	r := rand.New(rand.NewPCG(32, 10))
	for exp := uint32(0); exp < 255; exp++ {
		for _, mant := range []uint32{0, 1, 2, 3, 0x7FFFFF, 0x7FFFFE, 0x400000, 0x3FFFFF} {
			if b := exp<<23 | mant; b != 0 && !check(b) {
				return
			}
		}
		for range 2000 {
			if b := exp<<23 | r.Uint32()&0x7FFFFF; b != 0 && !check(b) {
				return
			}
		}
	}
	for i := 1; i < 200000; i++ {
		for _, f := range []float32{float32(i) / 100, float32(i) / 1000, float32(i) * 1e-7, float32(i) * 1e20} {
			if !check(math.Float32bits(f)) {
				return
			}
		}
	}
	// The exact definition itself, on reals whose shortest decimals are
	// known: PostgreSQL prints 2^-12 as 0.00024414062, 0.1 as 0.1,
	// 74617344 and 50331648 (shorter decimals on a midpoint) as they are.
	for _, c := range []struct {
		f    float32
		d    uint32
		e    int32
		name string
	}{{0.000244140625, 24414062, -11, "2^-12"}, {0.1, 1, -1, "0.1"}, {16777216, 16777216, 0, "2^24"}, {math.MaxFloat32, 34028235, 31, "the largest real"}, {math.SmallestNonzeroFloat32, 1, -45, "the smallest real"},
		{74617344, 74617344, 0, "74617344"}, {50331648, 50331648, 0, "1.5 x 2^25"}} {
		b := math.Float32bits(c.f)
		if d, e := shortest32Exact(b); d != c.d || e != c.e {
			t.Errorf("%s: exactly %de%d, want %de%d", c.name, d, e, c.d, c.e)
		}
		if d, e := shortest32(b); d != c.d || e != c.e {
			t.Errorf("%s: %de%d, want %de%d", c.name, d, e, c.d, c.e)
		}
	}
	t.Logf("strconv differs on %d of the reals checked", strconvDiffers)
}

// BenchmarkFloat32To64 is the cost of widening a real (digits as the
// typed benchmark's reals have: thirds, sevenths, a few exact), by
// float32To64 and by the reference (the shortest text, parsed).
func BenchmarkFloat32To64(b *testing.B) {
	vals := make([]float32, 1024)
	for i := range vals {
		vals[i] = float32(i+1) / 7
	}
	for _, c := range []struct {
		name string
		fn   func(float32) float64
	}{{"ryu", float32To64}, {"text", float32To64Reference}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var sink float64
			for i := 0; b.Loop(); i++ {
				sink += c.fn(vals[i%len(vals)])
			}
			_ = sink
		})
	}
}
