package extract

import (
	"testing"
	"time"
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
