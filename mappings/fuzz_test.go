package mappings

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fuzzCatalog is every table of the resolve corpus's catalogs (examples,
// Pagila and the cases' own), one catalog a fuzzed mapping resolves
// against without a database. A table several cases define is taken from
// the first, in file name order.
func fuzzCatalog(tb testing.TB) *Catalog {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.txtar"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no resolve corpus: %v", err)
	}
	cat := &Catalog{Tables: map[string]*Table{}}
	for _, f := range files {
		c, err := loadCase(f)
		if err != nil {
			tb.Fatal(err)
		}
		for name, t := range c.catalog.Tables {
			if _, ok := cat.Tables[name]; !ok {
				cat.Tables[name] = t
			}
		}
	}
	return cat
}

// FuzzResolve feeds arbitrary mapping files through everything validate
// does without a database: Parse (YAML, schema, meaning) and Resolve
// against fuzzCatalog. No input may panic; a failure is always a
// Problems list, each problem with a position or a file. The seeds are
// the examples, the invalid corpus, the resolve corpus's mappings and
// testdata/fuzz/FuzzResolve (numbers at and beyond every bound).
func FuzzResolve(f *testing.F) {
	seeds := append(mustGlob("examples/*.yaml"), mustGlob("testdata/invalid/*.yaml")...)
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(data)
		}
	}
	for _, p := range mustGlob(filepath.Join(corpusDir, "*.txtar")) {
		if c, err := loadCase(p); err == nil && c.example == "" {
			f.Add(c.mapping)
		}
	}
	cat := fuzzCatalog(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !IsProblems(err) {
				t.Fatalf("Parse: error is not a Problems list: %v", err)
			}
			return
		}
		plan, ps := ResolveAll(file, cat)
		if plan == nil {
			t.Fatal("ResolveAll returned no plan")
		}
		for _, p := range ps {
			if p.File == "" {
				t.Fatalf("problem without a file: %v", p)
			}
		}
	})
}

// FuzzMappingNumbers puts fuzzed scalars where a mapping file takes
// numbers (a bucket's size and skipLast, a subset's limit, a constant, a
// partial index's filter) and checks the rule of mappings/README.md
// "Numbers": either Parse refuses the file, or every number it took is
// within its bound and is exactly the number written.
func FuzzMappingNumbers(f *testing.F) {
	for _, s := range [][4]string{
		{"100", "0", "3", "book"},
		{"9223372036854775807", "1000001", "0", ".nan"},
		{"1e3", "1_000", "0x10", "1e400"},
		{"1000000", "1000000", "1000000", "18446744073709551616"},
		{"012", "-1", "2.5", "1e-400"},
		{"0b11", "0o7", "+5", "-9223372036854775808"},
		{"1.0", "0.0", "1e6", "4.9e-324"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	cat := fuzzCatalog(f)
	f.Fuzz(func(t *testing.T, size, skip, limit, value string) {
		for _, s := range []string{size, skip, limit, value} {
			// One plain scalar each: no YAML structure from the fuzzer.
			if s == "" || strings.ContainsAny(s, "\n\r\t{}[],:#&*!|>'\"%@`") || strings.TrimSpace(s) != s {
				return
			}
		}
		src := fmt.Sprintf(`version: 1
collections:
  - name: comments
    table: comment
    bucket: {by: post_id, size: %s, skipLast: %s}
  - name: posts
    table: post
    fields:
      - {name: c, value: %s}
      - name: recent
        embed: {table: comment, join: {post_id: id}, orderBy: id, limit: %s}
    indexes:
      - {keys: name, partial: {name: {$gt: %s}}}
`, size, skip, value, limit, value)
		file, err := Parse("fuzz.yaml", []byte(src))
		if err != nil {
			if !IsProblems(err) {
				t.Fatalf("Parse: error is not a Problems list: %v", err)
			}
			return
		}
		b := file.Collections[0].Bucket
		lim := file.Collections[1].Fields[1].Embed.Limit
		if b.Size < 1 || b.Size > MaxRows || b.SkipLast < 0 || b.SkipLast > MaxRows || lim < 1 || lim > MaxRows {
			t.Fatalf("numbers out of bounds taken: size %d, skipLast %d, limit %d", b.Size, b.SkipLast, lim)
		}
		for what, got := range map[string]int{"size": b.Size, "skipLast": b.SkipLast, "limit": lim} {
			text := map[string]string{"size": size, "skipLast": skip, "limit": limit}[what]
			if !sameNumber(text, float64(got)) {
				t.Fatalf("%s %q was taken as %d", what, text, got)
			}
		}
		c := file.Collections[1].Fields[0].Value.V
		pv := file.Collections[1].Indexes[0].Partial[0].Value.(Partial)[0].Value
		if c != pv {
			t.Fatalf("the constant %q is %#v, in the partial filter %#v", value, c, pv)
		}
		switch x := c.(type) {
		case int32:
			if !sameInt(value, int64(x)) {
				t.Fatalf("constant %q was taken as %d", value, x)
			}
		case int64:
			if !sameInt(value, x) {
				t.Fatalf("constant %q was taken as %d", value, x)
			}
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) || !sameNumber(value, x) {
				t.Fatalf("constant %q was taken as %v", value, x)
			}
		case string:
			if x != value {
				t.Fatalf("constant %q was taken as the string %q", value, x)
			}
			if _, err := strconv.ParseFloat(strings.ReplaceAll(x, "_", ""), 64); err == nil && yamlFloat.MatchString(strings.ReplaceAll(x, "_", "")) {
				t.Fatalf("constant %q, a number, was taken as a string", value)
			}
		}
		if _, ps := ResolveAll(file, cat); ps != nil {
			for _, p := range ps {
				if p.File == "" {
					t.Fatalf("problem without a file: %v", p)
				}
			}
		}
	})
}

// sameInt reports whether text, a YAML integer, is exactly v.
func sameInt(text string, v int64) bool {
	n, ok := new(big.Int).SetString(strings.ReplaceAll(text, "_", ""), 0)
	return ok && n.IsInt64() && n.Int64() == v
}

// sameNumber reports whether text, a YAML number, has v as its nearest
// double, and is zero only when v is.
func sameNumber(text string, v float64) bool {
	t := strings.ReplaceAll(text, "_", "")
	if n, ok := new(big.Int).SetString(t, 0); ok {
		f, acc := new(big.Float).SetInt(n).Float64()
		return acc == big.Exact && f == v
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f != v {
		return false
	}
	return f != 0 || !strings.ContainsAny(strings.SplitN(strings.ToLower(t), "e", 2)[0], "123456789")
}
