package digits

import (
	"strconv"
	"testing"
)

func TestPairsAndLen(t *testing.T) {
	for n := range 100 {
		if got, want := Pairs[2*n:2*n+2], strconv.Itoa(100 + n)[1:]; got != want {
			t.Fatalf("Pairs at %d: %q, want %q", n, got, want)
		}
	}
	for v := range uint64(1_000_000) {
		if got, want := Len(v), len(strconv.FormatUint(v, 10)); got != want {
			t.Fatalf("Len(%d) = %d, want %d", v, got, want)
		}
	}
}
