package transform

import (
	"errors"
	"math"
	"testing"
)

func TestDecimalToDouble(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		err  error
	}{
		{"12.50", 12.5, nil},
		{"0.1", 0.1, nil},
		{"0", 0, nil},
		{"0.000", 0, nil},
		{"-0", math.Copysign(0, -1), nil},
		{"0e-991", 0, nil},
		{"4e-324", 5e-324, nil},
		{"2.4703282292062328e-324", 5e-324, nil},
		{"1e-320", 1e-320, nil},
		{"1.7976931348623157e308", math.MaxFloat64, nil},
		{"NaN", math.NaN(), nil},
		{"Infinity", math.Inf(1), nil},
		{"-Infinity", math.Inf(-1), nil},
		{"1e-991", 0, ErrDoubleUnderflow},
		{"-1e-400", 0, ErrDoubleUnderflow},
		{"2e-324", 0, ErrDoubleUnderflow},
		{"0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001", 0, ErrDoubleUnderflow},
		{"1e309", 0, ErrDoubleOverflow},
		{"-1e400", 0, ErrDoubleOverflow},
	} {
		got, err := DecimalToDouble(c.in)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("%s: error %v, want %v", c.in, err, c.err)
			continue
		}
		if c.err == nil && !(got == c.want && math.Signbit(got) == math.Signbit(c.want) || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%s = %v, want %v", c.in, got, c.want)
		}
	}
}
