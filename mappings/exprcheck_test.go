package mappings

import (
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/vm"
)

// TestCheckedArithmetic runs expressions with checked arithmetic on edge
// values: each gives expr-lang's exact result, or fails with the reason.
func TestCheckedArithmetic(t *testing.T) {
	env := map[string]any{"i4": int32(0), "i8": int64(0), "f": float64(0), "s": "", "t": time.Time{}, "u": time.Time{}, "m": map[string]any{}}
	row := map[string]any{
		"i4": int32(math.MinInt32), "i8": int64(math.MaxInt64), "f": 1e308, "s": "x",
		"t": time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), "u": time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		"m": map[string]any{"n": int64(math.MaxInt64), "x": 2.5, "z": int64(0)},
	}
	for _, c := range []struct {
		src  string
		want any    // the exact result, when it has one
		fail string // the start of the reason, when it fails
	}{
		// Integers compute in 64 bits and fail beyond.
		{src: "i8 + 1", fail: "integer overflow: 9223372036854775807 + 1 is beyond the 64-bit range"},
		{src: "i8 - 1", want: math.MaxInt64 - 1},
		{src: "-i8 - 2", fail: "integer overflow: -9223372036854775807 - 2"},
		{src: "i8 * 2", fail: "integer overflow: 9223372036854775807 * 2"},
		{src: "i8 * -1", want: -math.MaxInt64},
		{src: "(-i8 - 1) * -1", fail: "integer overflow: -9223372036854775808 * -1"},
		{src: "-(-i8 - 1)", fail: "integer overflow: -(-9223372036854775808)"},
		{src: "-i4", want: 2147483648},
		{src: "abs(i4)", want: 2147483648},
		{src: "abs(-i8 - 1)", fail: "integer overflow"},
		{src: "i4 * i4", want: 4611686018427387904},
		{src: "i4 * i4 * -2", want: math.MinInt64},
		{src: "i4 * i4 * 2", fail: "integer overflow: 4611686018427387904 * 2"},
		{src: "i4 * i4 * 4", fail: "integer overflow"},
		{src: "sum([i8, 1])", fail: "integer overflow"},
		{src: "sum([i8, -1])", want: math.MaxInt64 - 1},
		{src: "sum([1, 2, 3], # * i8)", fail: "integer overflow"},
		{src: "reduce([i8, 1], #acc + #)", fail: "integer overflow"},
		{src: "m.n + 1", fail: "integer overflow"},
		{src: "m.n + m.x", want: float64(math.MaxInt64) + 2.5},
		{src: "9223372036854775806 + 1", want: math.MaxInt64},
		// Division and modulo.
		{src: "i8 % 0", fail: "division by zero"},
		{src: "i8 % m.z", fail: "division by zero"},
		{src: "(-i8 - 1) % -1", want: 0},
		{src: "i8 / 0", fail: "division by zero"},
		{src: "f / 0.0", fail: "division by zero"},
		{src: "i8 / 2", want: float64(math.MaxInt64) / 2},
		// Doubles: finite operands give a finite result.
		{src: "f * 10", fail: "overflow: 1e+308 * 10 is beyond a double's range"},
		{src: "f + f", fail: "overflow"},
		{src: "f / 1e-10", fail: "overflow"},
		{src: "f * 0", want: 0.0},
		{src: "2 ** 0.5", want: math.Sqrt2},
		{src: "(i4 / i4 - 9) ** 0.5", fail: "-8 ** 0.5 has no real value"},
		{src: "2 ** 62", want: float64(1 << 62)},
		{src: "f ^ 2", fail: "overflow"},
		{src: "m.n * 2", fail: "integer overflow"},
		{src: "-(m.n + 0 - m.n - 9223372036854775807 - 1)", fail: "integer overflow"},
		{src: "-m.x", want: -2.5},
		{src: "map([i4, 1], # * 2)[1]", want: 2},
		{src: "map([i8, 1], # * 2)[0]", fail: "integer overflow"},
		// int() truncates toward zero within int64.
		{src: "int(f)", fail: "int(1e+308) is beyond the 64-bit integer range"},
		{src: "int(2 ** 63)", fail: "int(9.223372036854776e+18) is beyond"},
		{src: "int(-(2 ** 63))", want: math.MinInt64},
		{src: "int(-2.7)", want: -2},
		{src: "int('99999999999999999999')", fail: `int("99999999999999999999"): not an integer`},
		{src: "int('42')", want: 42},
		{src: "int(i8)", want: math.MaxInt64},
		// Ranges.
		{src: "len(1..3)", want: 3},
		{src: "len(-i8..i8)", fail: "the range -9223372036854775807..9223372036854775807 has more than 1000000 numbers"},
		{src: "len(i4..0)", fail: "the range"},
		{src: "2 in 1..i8", fail: "the range"},
		// Times and durations.
		{src: "(u - t).Hours()", fail: "2024-01-01T00:00:00Z - 0001-01-01T00:00:00Z is beyond a duration"},
		{src: "t - u", fail: "0001-01-01T00:00:00Z - 2024-01-01T00:00:00Z is beyond a duration"},
		{src: "(u - date('2023-01-01')).Hours()", want: 8760.0},
		// Untouched: strings, comparisons, literals.
		{src: `s + "y"`, want: "xy"},
		{src: "i8 > 0 ? -1 : 1", want: -1},
		{src: "-5", want: -5},
		{src: "i8 == 9223372036854775807", want: true},
		// Every other run-time error is a one-line reason too.
		{src: "m.missing.x", fail: "cannot fetch x from nil"},
	} {
		t.Run(c.src, func(t *testing.T) {
			prog, err := compileChecked(c.src, env)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := RunExpr(prog, row)
			if c.fail != "" {
				if err == nil {
					t.Fatalf("= %#v, want a failure %q", got, c.fail)
				}
				if !strings.HasPrefix(err.Error(), c.fail) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %q, want one line starting %q", err, c.fail)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v, want %#v", err, c.want)
			}
			switch w := c.want.(type) {
			case int:
				if got != any(w) {
					t.Fatalf("= %#v, want int %d", got, w)
				}
			default:
				if got != c.want {
					t.Fatalf("= %#v, want %#v", got, c.want)
				}
			}
		})
	}
}

// TestCheckedCompileErrors checks that type errors are still reported
// when the expression is validated, as expr-lang gives them.
func TestCheckedCompileErrors(t *testing.T) {
	env := map[string]any{"i8": int64(0), "s": "", "j": nil}
	for _, src := range []string{`s * 2`, `j + 1`, `int(true)`, `abs("x")`, `sum(1)`, `"a" - 1`} {
		if _, err := compileChecked(src, env); err == nil {
			t.Errorf("%s: compiled", src)
		}
	}
	// An operation of literals that fails would fail on every row: it
	// is refused when the mapping is validated.
	for src, want := range map[string]string{
		"i8 + (9223372036854775807 + 1)": "integer overflow: 9223372036854775807 + 1 is beyond the 64-bit range",
		"1 / 0":                          "division by zero: 1 / 0",
		"2 ** 1024":                      "overflow: 2 ** 1024 is beyond a double's range",
		"2 ^ 1024":                       "overflow: 2 ** 1024 is beyond a double's range",
		"0.5 ** 2000":                    "underflow: 0.5 ** 2000 is too small for a double (it would be 0)",
		"0 ** -1":                        "division by zero: 0 ** -1",
		"(-8) ** 0.5":                    "-8 ** 0.5 has no real value",
		"1e-300 * 1e-300":                "underflow: 1e-300 * 1e-300 is too small for a double (it would be 0)",
		"len(1..2000000)":                "the range 1..2000000 has more than 1000000 numbers",
	} {
		_, err := compileChecked(src, env)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
	// Exact ones are folded, as expr-lang does.
	if _, err := compileChecked("i8 + 60 * 60 * 24 - 2 ** 62 + -5", env); err != nil {
		t.Errorf("exact literals: %v", err)
	}
}

// FuzzCheckedIntegers compares the checked integer operations with exact
// arithmetic (math/big): the result is the exact one when it is within
// int64, and a failure otherwise.
func FuzzCheckedIntegers(f *testing.F) {
	for _, p := range [][2]int64{{math.MaxInt64, 1}, {math.MinInt64, -1}, {math.MinInt64, 0}, {-3, 7}, {1 << 32, 1 << 31}, {math.MinInt64, math.MinInt64}} {
		f.Add(p[0], p[1])
	}
	env := map[string]any{"a": int64(0), "b": int64(0), "c": int32(0)}
	progs := map[string]func(x, y *big.Int) *big.Int{
		"a + b":  func(x, y *big.Int) *big.Int { return new(big.Int).Add(x, y) },
		"a - b":  func(x, y *big.Int) *big.Int { return new(big.Int).Sub(x, y) },
		"a * b":  func(x, y *big.Int) *big.Int { return new(big.Int).Mul(x, y) },
		"-a":     func(x, _ *big.Int) *big.Int { return new(big.Int).Neg(x) },
		"abs(a)": func(x, _ *big.Int) *big.Int { return new(big.Int).Abs(x) },
		"a % b": func(x, y *big.Int) *big.Int {
			if y.Sign() == 0 {
				return nil
			}
			return new(big.Int).Rem(x, y) // Go's %: the sign of the dividend
		},
		"c * c - a": func(x, _ *big.Int) *big.Int {
			c := big.NewInt(int64(int32(x.Int64())))
			return new(big.Int).Sub(new(big.Int).Mul(c, c), x)
		},
	}
	compiled := map[string]*vm.Program{}
	for src := range progs {
		p, err := compileChecked(src, env)
		if err != nil {
			f.Fatal(err)
		}
		compiled[src] = p
	}
	f.Fuzz(func(t *testing.T, a, b int64) {
		for src, exact := range progs {
			got, err := RunExpr(compiled[src], map[string]any{"a": a, "b": b, "c": int32(a)})
			want := exact(big.NewInt(a), big.NewInt(b))
			if want == nil || !want.IsInt64() {
				if err == nil {
					t.Fatalf("%s with a=%d b=%d = %v, want a failure (exact %v)", src, a, b, got, want)
				}
				continue
			}
			if err != nil || got != any(int(want.Int64())) {
				t.Fatalf("%s with a=%d b=%d = %#v, %v; want %d", src, a, b, got, err, want)
			}
		}
	})
}

// TestExprWords: an expression failing on a row is reported in a user's
// words - nil for a NULL column with the ?? default that avoids it, no Go
// type names (interface {}, <nil>, reflect) - in the builder and the
// oracle alike, which both run RunExpr (found by the differential fuzzer:
// "interface conversion: interface {} is nil, not bool" in reject files).
func TestExprWords(t *testing.T) {
	env := map[string]any{"b": true, "n": 1, "s": "x", "arr": []any{1}, "i": 5}
	row := map[string]any{"b": nil, "n": nil, "s": nil, "arr": []any{1}, "i": 5}
	for _, c := range []struct{ src, want string }{
		{"b ? 1 : 0", "a nil value where a bool is needed (a NULL column is nil in an expression: give it a default with ??, as in col ?? 0)"},
		{"!b", "a nil value where a bool is needed (a NULL column is nil"},
		{"n + 1", "invalid operation: nil + int (a NULL column is nil"},
		{"upper(s)", "a nil value where a string is needed"},
		{"len(s)", "invalid argument for len (nil)"},
		{"i % 0", "division by zero: 5 % 0"},
	} {
		prog, err := compileChecked(c.src, env)
		if err != nil {
			t.Fatalf("%s: compile: %v", c.src, err)
		}
		_, err = RunExpr(prog, row)
		if err == nil {
			t.Fatalf("%s: no error", c.src)
		}
		if got := err.Error(); !strings.HasPrefix(got, c.want) || strings.Contains(got, "\n") {
			t.Errorf("%s: %q, want one line beginning %q", c.src, got, c.want)
		} else if m := regexp.MustCompile(`interface|<nil>|reflect|runtime error`).FindString(got); m != "" {
			t.Errorf("%s: %q names Go's %q", c.src, got, m)
		}
	}
}
