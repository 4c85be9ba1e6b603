// Package digits holds the two-digit texts the number writers look up:
// the load package's JSON writer and the extract package's numerics.
package digits

// Pairs is "00" to "99": the text of n < 100 is Pairs[2n:2n+2].
const Pairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// Len is the number of decimal digits of v, for v < 10^6 (0 has one).
func Len(v uint64) int {
	switch {
	case v < 10:
		return 1
	case v < 100:
		return 2
	case v < 1000:
		return 3
	case v < 10_000:
		return 4
	case v < 100_000:
		return 5
	}
	return 6
}
