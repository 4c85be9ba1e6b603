package load

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/denorm/denorm/transform"
)

// checkParse holds parseExtJSON to the driver on line: when it reads the
// line, the driver reads it too, to the same bytes. It reports whether the
// fast path read it.
func checkParse(t testing.TB, line []byte) bool {
	t.Helper()
	got, ok := parseExtJSON([]byte("prefix"), line)
	if !ok {
		return false
	}
	var want bson.Raw
	if err := bson.UnmarshalExtJSON(line, false, &want); err != nil {
		t.Fatalf("%s: parseExtJSON reads it, the driver fails: %v", line, err)
	}
	want = quietNaNs(t, want)
	if !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("%s:\nparseExtJSON %x\ndriver       %x", line, got[len("prefix"):], []byte(want))
	}
	return true
}

// quietNaNs is doc with every NaN as QuietNaN, which parseExtJSON reads
// "NaN" as (the driver reads it as math.NaN(), of other bits).
func quietNaNs(t testing.TB, doc bson.Raw) bson.Raw {
	t.Helper()
	var walk func(dst []byte, d bsoncore.Document, array bool) []byte
	walk = func(dst []byte, d bsoncore.Document, array bool) []byte {
		elems, err := d.Elements()
		if err != nil {
			t.Fatal(err)
		}
		var idx int32
		if array {
			idx, dst = bsoncore.AppendArrayStart(dst)
		} else {
			idx, dst = bsoncore.AppendDocumentStart(dst)
		}
		for _, e := range elems {
			v := e.Value()
			switch {
			case v.Type == bsoncore.TypeDouble && v.Double() != v.Double():
				dst = bsoncore.AppendDoubleElement(dst, e.Key(), QuietNaN)
			case v.Type == bsoncore.TypeEmbeddedDocument || v.Type == bsoncore.TypeArray:
				dst = bsoncore.AppendHeader(dst, v.Type, e.Key())
				dst = walk(dst, bsoncore.Document(v.Data), v.Type == bsoncore.TypeArray)
			default:
				dst = bsoncore.AppendValueElement(dst, e.Key(), v)
			}
		}
		if array {
			dst, _ = bsoncore.AppendArrayEnd(dst, idx)
		} else {
			dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
		}
		return dst
	}
	return walk(nil, bsoncore.Document(doc), false)
}

// spaced puts white space between the tokens of a JSON line.
func spaced(r *rand.Rand, line []byte) []byte {
	var out []byte
	inString := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		out = append(out, c)
		switch {
		case inString && c == '\\':
			i++
			out = append(out, line[i])
		case c == '"':
			inString = !inString
		case !inString && strings.IndexByte("{}[],:", c) >= 0 && r.IntN(3) == 0:
			out = append(out, []string{" ", "\n", "\t ", "\r\n"}[r.IntN(4)]...)
		}
	}
	return out
}

// TestParseExtJSON reads back what AppendExtJSON writes for random
// documents (every value type, nested documents and arrays, strings with
// escapes and non-ASCII text, dates on both sides of the ISO range),
// compact and with white space, and edge cases the fast path must leave to
// the driver.
func TestParseExtJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 55))
	fast := 0
	const n = 4000
	for seed := range uint64(n) {
		d := randomDoc(rand.New(rand.NewPCG(seed, 7)), 3)
		for i := range d { // NUL in keys is refused by both writers
			d[i].Key = strings.ReplaceAll(d[i].Key, "\x00", "")
		}
		d = append(d, transform.Field{Key: "dates", Value: transform.Array{
			time.UnixMilli(r.Int64N(253402300800000)).UTC(), time.UnixMilli(-r.Int64N(1e13)).UTC(),
		}})
		line, err := AppendExtJSON(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		if checkParse(t, line) {
			fast++
		}
		checkParse(t, spaced(r, line))
	}
	// Every line the writer makes is read by the fast path.
	if fast != n {
		t.Errorf("the fast path read %d of %d lines", fast, n)
	}
	for _, line := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":-0}`, `{"a":2147483648}`, `{"a":-2147483649}`, `{"a":9223372036854775808}`,
		`{"a":1.5e400}`, `{"a":1e2}`, `{"a":1E-2}`, `{"a":0.0}`, `{"a":-0.0}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`,
		`{"a":"\u00e9\u0000\/\b\f\n\r\t"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\ud83d"}`, `{"a":"\uZZZZ"}`, `{"a":"x` + "\x01" + `"}`,
		`{"a":"` + "\xff" + `"}`, `{"a\u0000b":1}`, `{"$a":1}`, `{"a":{"$b":1}}`, `{"a":{"b":1,"$c":2}}`,
		`{"a":{"$numberDecimal":"1.50"}}`, `{"a":{"$numberDecimal":"1E+5"}}`, `{"a":{"$numberDecimal":"x"}}`,
		`{"a":{"$numberDouble":"NaN"}}`, `{"a":{"$numberDouble":"-Infinity"}}`, `{"a":{"$numberDouble":"1.5"}}`,
		`{"a":{"$date":"2024-02-29T12:00:00Z"}}`, `{"a":{"$date":"2024-02-29T12:00:00.5Z"}}`, `{"a":{"$date":"2024-02-29T12:00:00.123Z"}}`,
		`{"a":{"$date":"2023-02-29T12:00:00Z"}}`, `{"a":{"$date":"2024-02-29T12:00:00+01:00"}}`, `{"a":{"$date":"1969-12-31T23:59:59Z"}}`,
		`{"a":{"$date":{"$numberLong":"-5"}}}`, `{"a":{"$date":{"$numberLong":"x"}}}`, `{"a":{"$date":1}}`,
		`{"a":{"$binary":{"base64":"AAEC","subType":"00"}}}`, `{"a":{"$binary":{"subType":"00","base64":"AAEC"}}}`,
		`{"a":{"$binary":{"base64":"oO68mZwLTvi7bWu5vTgKEQ==","subType":"04"}}}`, `{"a":{"$binary":{"base64":"AAEC","subType":"05"}}}`,
		`{"a":{"$oid":"5f1b2c3d4e5f6a7b8c9d0e1f"}}`, `{"a":[1,[2,[3]],{"b":[]}]}`, `{"a":1,"a":2}`, `{"a":1,}`, `{"a":1}x`,
		`[1]`, `{"a":tru}`, `{"a":nul}`, `{"a" 1}`, `{"a":1 "b":2}`,
	} {
		checkParse(t, []byte(line))
	}
}

func FuzzParseExtJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,null,{"c":"x"}]}`, `{"a":{"$numberDecimal":"12.50"}}`, `{"a":{"$date":"2024-02-29T12:00:00.5Z"}}`,
		`{"a":{"$date":{"$numberLong":"-5"}}}`, `{"a":{"$binary":{"base64":"AAEC","subType":"00"}}}`, `{"a":{"$numberDouble":"NaN"}}`,
		`{"a":-0.0,"b":1e300,"c":"\u00e9\n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkParse(t, line)
	})
}

func BenchmarkUnmarshalExtJSON(b *testing.B) {
	line, err := AppendExtJSON(nil, benchDoc())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		var out []byte
		for b.Loop() {
			out, _ = UnmarshalExtJSON(out[:0], line)
		}
	})
	b.Run("driver", func(b *testing.B) {
		for b.Loop() {
			var raw bson.Raw
			if err := bson.UnmarshalExtJSON(line, false, &raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
