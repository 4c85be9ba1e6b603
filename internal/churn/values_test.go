package churn

import (
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func rng() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// TestBetween: a value strictly between two others, for every orderable
// kind, and none when there is no room.
func TestBetween(t *testing.T) {
	cases := []struct {
		name string
		col  column
		a, b string
		ok   bool
	}{
		{"int", column{kind: kInt, bits: 32}, "10", "20", true},
		{"int reversed", column{kind: kInt, bits: 32}, "20", "10", true},
		{"int adjacent", column{kind: kInt, bits: 32}, "10", "11", false},
		{"numeric", column{kind: kNumeric, prec: 5, scale: 2}, "1.00", "1.05", true},
		{"numeric adjacent", column{kind: kNumeric, prec: 5, scale: 2}, "1.00", "1.01", false},
		{"float", column{kind: kFloat}, "1.5", "2", true},
		{"timestamptz", column{kind: kTimestamptz}, "2024-01-01 00:01:00+00", "2024-01-01 00:02:00.5+00", true},
		{"timestamp", column{kind: kTimestamp}, "2022-02-14 15:16:03", "2022-02-14 15:16:04", true},
		{"date", column{kind: kDate}, "2024-01-01", "2024-01-05", true},
		{"date adjacent", column{kind: kDate}, "2024-01-01", "2024-01-02", false},
		{"text has no between", column{kind: kText}, "a", "c", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rng()
			for i := 0; i < 50; i++ {
				v, ok := between(r, &c.col, c.a, c.b)
				if ok != c.ok {
					t.Fatalf("between(%s, %s) ok=%v", c.a, c.b, ok)
				}
				if !ok {
					return
				}
				lo, _ := compareText(&c.col, v, c.a)
				hi, _ := compareText(&c.col, v, c.b)
				if lo*hi != -1 {
					t.Fatalf("between(%s, %s) = %s, not strictly inside", c.a, c.b, v)
				}
			}
		})
	}
}

// TestPerturbStaysValid: nearby values keep the sign of positive numbers,
// fit numeric(p,s), and read back.
func TestPerturbStaysValid(t *testing.T) {
	r := rng()
	num := &column{kind: kNumeric, prec: 4, scale: 2}
	for i := 0; i < 500; i++ {
		if v := *perturb(r, &column{kind: kInt, bits: 16}, "1"); v == "0" || strings.HasPrefix(v, "-") {
			t.Fatalf("int 1 perturbed to %s", v)
		}
		v := *perturb(r, num, "99.99")
		n, ok := parseScaled(v, 2)
		if !ok || n > 9999 || n < 0 {
			t.Fatalf("numeric(4,2) 99.99 perturbed to %s", v)
		}
		ts := *perturb(r, &column{kind: kTimestamptz}, "2022-07-27 10:39:20.739759+00")
		if _, ok := parseTime(kTimestamptz, ts); !ok {
			t.Fatalf("timestamptz perturbed to unreadable %q", ts)
		}
	}
}

func TestScaled(t *testing.T) {
	for _, c := range []struct {
		in    string
		scale int
		n     int64
		out   string
	}{
		{"12.34", 2, 1234, "12.34"},
		{"-0.5", 2, -50, "-0.50"},
		{"7", 0, 7, "7"},
		{"1.239", 2, 123, "1.23"},
	} {
		n, ok := parseScaled(c.in, c.scale)
		if !ok || n != c.n {
			t.Errorf("parseScaled(%q, %d) = %d, %v", c.in, c.scale, n, ok)
		}
		if got := formatScaled(n, c.scale); got != c.out {
			t.Errorf("formatScaled(%d, %d) = %q, want %q", n, c.scale, got, c.out)
		}
	}
}

// TestBounds: partition bounds as pg_get_expr prints them, and values
// made to fit them.
func TestBounds(t *testing.T) {
	cases := map[string]bound{
		"FOR VALUES FROM ('2022-01-01 00:00:00+00') TO ('2022-02-01 00:00:00+00')": {from: "2022-01-01 00:00:00+00", to: "2022-02-01 00:00:00+00"},
		"FOR VALUES FROM (MINVALUE) TO (10)":                                       {from: "", to: "10"},
		"FOR VALUES IN ('a', 'b''c')":                                              {list: []string{"a", "b'c"}},
		"DEFAULT":                                                                  {any: true},
		"FOR VALUES WITH (modulus 4, remainder 1)":                                 {any: true},
	}
	for in, want := range cases {
		if got := parseBound(in); !cmp.Equal(got, want, cmp.AllowUnexported(bound{})) {
			t.Errorf("parseBound(%q) = %+v, want %+v", in, got, want)
		}
	}
	col := &column{kind: kTimestamptz}
	bs := []bound{parseBound("FOR VALUES FROM ('2022-01-01 00:00:00+00') TO ('2022-02-01 00:00:00+00')"),
		parseBound("FOR VALUES FROM ('2022-02-01 00:00:00+00') TO ('2022-03-01 00:00:00+00')")}
	r := rng()
	for i := 0; i < 100; i++ {
		v := inPartition(r, col, bs)
		if v == nil || !inBounds(col, bs, *v) {
			t.Fatalf("inPartition made %v, outside the bounds", v)
		}
	}
	for v, in := range map[string]bool{"2022-02-28 23:59:59+00": true, "2022-03-01 00:00:00+00": false, "2021-12-31 23:59:59+00": false} {
		if inBounds(col, bs, v) != in {
			t.Errorf("inBounds(%s) = %v", v, !in)
		}
	}
}

func TestFreshValues(t *testing.T) {
	r := rng()
	cases := []struct {
		col   column
		check func(string) bool
	}{
		{column{kind: kText, maxLen: 5}, func(s string) bool { return len([]rune(s)) <= 5 && s != "" }},
		{column{kind: kText, pk: true}, func(s string) bool { return !strings.ContainsAny(s, " .$-") }},
		{column{kind: kEnum, labels: []string{"G", "PG"}}, func(s string) bool { return s == "G" || s == "PG" }},
		{column{kind: kInt, bits: 16, unique: true}, func(s string) bool { n, err := strconv.Atoi(s); return err == nil && n <= 32767 }},
		{column{kind: kArray, elem: &column{kind: kText}}, func(s string) bool { return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") }},
		{column{kind: kBytea}, func(s string) bool { return strings.HasPrefix(s, `\x`) }},
		{column{kind: kNumeric, prec: 4, scale: 2}, func(s string) bool { n, ok := parseScaled(s, 2); return ok && n >= 0 && n <= 9999 }},
	}
	for _, c := range cases {
		for i := 0; i < 100; i++ {
			v := fresh(r, &c.col)
			if v == nil || !c.check(*v) {
				t.Fatalf("fresh(%+v) = %v", c.col, v)
			}
		}
	}
	if v := fresh(r, &column{kind: kOther}); v != nil {
		t.Errorf("a type without a generator gave %q", *v)
	}
}

func TestStatementString(t *testing.T) {
	s := Statement{SQL: "UPDATE t SET a = $1, b = $10, c = $2", Args: []*string{ptr("it's"), nil, ptr("3"), ptr("4"), ptr("5"), ptr("6"), ptr("7"), ptr("8"), ptr("9"), ptr("ten")}, Err: "boom"}
	want := "UPDATE t SET a = 'it''s', b = 'ten', c = NULL  -- rolled back: boom"
	if got := s.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := arrayLiteral([]*string{ptr(`a"b`), nil, ptr(`c\d`)}); got != `{"a\"b",NULL,"c\\d"}` {
		t.Errorf("arrayLiteral: %s", got)
	}
}

// TestNoProductionImports: churn is a test helper; no package other than
// tests may import it (it writes to databases and pulls in test-only
// code).
func TestNoProductionImports(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const self = "github.com/denorm/denorm/internal/churn"
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "tools" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if strings.Trim(imp.Path.Value, `"`) == self {
				t.Errorf("%s imports %s, a test helper: only _test.go files may", path, self)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d Go files checked under %s", checked, root)
	}
}
