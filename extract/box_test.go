package extract

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/box"
)

// BenchmarkArena boxes one value of each kind the arena keeps per
// iteration: the hot path of decoding a wide row.
func BenchmarkArena(b *testing.B) {
	var a arena
	text := []byte("a value of some length")
	uuid := []byte("0123456789abcdef")
	tm := time.Unix(1700000000, 5).UTC()
	b.ReportAllocs()
	var sink []any
	for b.Loop() {
		sink = append(sink[:0], a.string(text), a.decimal([]byte("12345.678")), a.time(tm),
			a.int32(1<<20), a.int64(1<<40), a.float64(2.5), a.uuid(uuid), a.binary(text))
	}
	_ = sink
}

// TestDateTable decodes the wire date of every day of the day table and a
// year on either side of it, and timestamps at and around midnight of
// every seventh of those days: each must be the time Convert gives (the
// same instant, zone and monotonic reading as time.Unix(...).UTC()),
// whether it comes from the table or from the arena.
func TestDateTable(t *testing.T) {
	var a arena
	src := make([]byte, 4)
	for days := int32(dayTableFirst - 366); days < dayTableEnd+366; days++ {
		binary.BigEndian.PutUint32(src, uint32(days))
		v, ok := decodeDate(&a, src)
		want := time.Unix(int64(days)*secondsPerDay+y2kUnixSeconds, 0).UTC()
		got, isTime := v.(time.Time)
		if !ok || !isTime || got != want || v != any(want) {
			t.Fatalf("day %d: got %#v (ok %v), want %v", days, v, ok, want)
		}
	}
	// Timestamps: midnights come from the table, other times from the
	// arena; both must be the reference time.
	ts := make([]byte, 8)
	for days := int64(dayTableFirst - 366); days < dayTableEnd+366; days += 7 {
		for _, us := range []int64{0, 1, -1, 43_200_000_000} {
			micros := days*usPerDay + us
			binary.BigEndian.PutUint64(ts, uint64(micros))
			v, ok := decodeTimestamp(&a, ts)
			want := time.Unix(y2kUnixSeconds, 0).Add(time.Duration(micros) * time.Microsecond).UTC()
			if got, isTime := v.(time.Time); !ok || !isTime || got != want || v != any(want) {
				t.Fatalf("timestamp %d us: got %#v (ok %v), want %v", micros, v, ok, want)
			}
		}
	}
	first := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	if n := len(dayTable()); n != int(end.Sub(first).Hours()/24) || time.Unix(int64(dayTableFirst)*secondsPerDay+y2kUnixSeconds, 0).UTC() != first {
		t.Fatalf("the table holds %d days from %d: want 1900-01-01 to 2099-12-31", n, dayTableFirst)
	}
}

// BenchmarkDecodeDate decodes dates of the table's years and, beside
// them, dates outside it, which the arena boxes.
func BenchmarkDecodeDate(b *testing.B) {
	for _, c := range []struct {
		name string
		base int32
	}{{"table", 0}, {"arena", dayTableEnd}} {
		b.Run(c.name, func(b *testing.B) {
			var a arena
			src := make([]byte, 4)
			b.ReportAllocs()
			var sink any
			i := int32(0)
			for b.Loop() {
				binary.BigEndian.PutUint32(src, uint32(c.base+i%20000))
				sink, _ = decodeDate(&a, src)
				i++
			}
			_ = sink
		})
	}
}

// TestDecodeTimestampWords: a timestamp's time, its words written
// directly (box.UTCWords), is the time time.Unix gives, word for word,
// for instants before and after 1970 and 2000, at the edges of the range
// accepted, at whole seconds and days and a microsecond either side.
func TestDecodeTimestampWords(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 0))
	minUs := (minTimeUnix - y2kUnixSeconds) * usPerSecond
	endUs := (endTimestampUnix - y2kUnixSeconds) * usPerSecond
	us := []int64{0, 1, -1, usPerSecond, -usPerSecond, usPerDay - 1, -usPerDay + 1, minUs, minUs + 1, endUs - 1,
		-y2kUnixSeconds * usPerSecond, -y2kUnixSeconds*usPerSecond - 1, 4_000_000_000_000_000, endUs, endUs + 1, minUs - 1}
	for range 200_000 {
		switch r.IntN(3) {
		case 0:
			us = append(us, minUs+int64(r.Uint64N(uint64(endUs)-uint64(minUs)))) // (the span is over MaxInt64)
		case 1:
			us = append(us, r.Int64N(200*365*usPerDay)-100*365*usPerDay)
		default:
			us = append(us, (r.Int64N(200*365*86400)-100*365*86400)*usPerSecond+int64(r.IntN(3)-1))
		}
	}
	var a arena
	var src [8]byte
	declined := 0
	for _, u := range us {
		binary.BigEndian.PutUint64(src[:], uint64(u))
		got, ok := decodeTimestamp(&a, src[:])
		want := time.Unix(y2kUnixSeconds+u/usPerSecond, u%usPerSecond*1000).UTC()
		if sec := want.Unix(); sec < minTimeUnix || sec >= endTimestampUnix {
			if ok {
				t.Fatalf("%d µs: decoded %v out of the range accepted", u, got)
			}
			declined++
			continue
		}
		if !ok {
			t.Fatalf("%d µs: declined, want %v", u, want)
		}
		gt, isTime := got.(time.Time)
		gw, _ := box.Words(gt)
		ww, _ := box.Words(want)
		if !isTime || gw != ww || got != any(want) {
			t.Fatalf("%d µs: decoded %v (words %x), want %v (words %x)", u, got, gw, want, ww)
		}
	}
	if declined != 3 {
		t.Errorf("%d instants declined, want the 3 out of the range", declined)
	}
}
