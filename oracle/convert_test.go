package oracle

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/mappings"
)

func dt(t time.Time) bson.DateTime { return bson.DateTime(t.UnixMilli()) }

func dec(s string) bson.Decimal128 {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}

// TestTypesTable holds the oracle's conversions to the README's Types
// table, one named case per row (and per edge the table names), from the
// JSON PostgreSQL's json_build_object gives for a value of the type.
func TestTypesTable(t *testing.T) {
	uuid := bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte{0x00, 0xa6, 0x94, 0x6b, 0xbc, 0xb5, 0x4f, 0xef, 0x88, 0x42, 0x55, 0x67, 0x55, 0xd9, 0x4e, 0x29}}
	cases := []struct {
		name string
		col  mappings.Column
		mode mappings.NumericMode
		json string
		want any
		bad  string // the value is unbuildable, with this in the reason
	}{
		{name: "smallint", col: mappings.Column{TypeName: "int2"}, json: `-32768`, want: int32(-32768)},
		{name: "integer", col: mappings.Column{TypeName: "int4"}, json: `2147483647`, want: int32(math.MaxInt32)},
		{name: "bigint", col: mappings.Column{TypeName: "int8"}, json: `9223372036854775807`, want: int64(math.MaxInt64)},
		{name: "bigint small", col: mappings.Column{TypeName: "int8"}, json: `1`, want: int64(1)},
		{name: "numeric decimal", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDecimal, json: `1.50`, want: dec("1.50")},
		{name: "numeric decimal NaN", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDecimal, json: `"NaN"`, want: dec("NaN")},
		{name: "numeric decimal too many digits", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDecimal, json: `1234567890123456789012345678901234567`, bad: "does not fit a Decimal128"},
		{name: "numeric decimal trailing zeros beyond 34 digits", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDecimal, json: `1.500000000000000000000000000000000000000`, want: dec("1.5000000000000000000000000000000000")},
		{name: "numeric string", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericString, json: `1.50`, want: "1.50"},
		{name: "numeric string infinity", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericString, json: `"Infinity"`, want: "Infinity"},
		{name: "numeric double", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDouble, json: `0.1`, want: 0.1},
		{name: "numeric double overflow", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDouble, json: `1e999`, bad: "out of range for a double"},
		{name: "numeric double underflow", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDouble, json: "0." + strings.Repeat("0", 990) + "1", bad: "too small for a double"},
		{name: "numeric double zero", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDouble, json: `0.000`, want: 0.0},
		{name: "numeric double subnormal kept", col: mappings.Column{TypeName: "numeric"}, mode: mappings.NumericDouble, json: `1e-320`, want: 1e-320},
		{name: "real through its shortest text", col: mappings.Column{TypeName: "float4"}, json: `0.1`, want: 0.1},
		{name: "double", col: mappings.Column{TypeName: "float8"}, json: `1.2345678901234568e+17`, want: 1.2345678901234568e+17},
		{name: "double negative zero", col: mappings.Column{TypeName: "float8"}, json: `-0`, want: math.Copysign(0, -1)},
		{name: "double NaN", col: mappings.Column{TypeName: "float8"}, json: `"NaN"`, want: math.NaN()},
		{name: "double -Infinity", col: mappings.Column{TypeName: "float8"}, json: `"-Infinity"`, want: math.Inf(-1)},
		{name: "text", col: mappings.Column{TypeName: "text"}, json: `"a\"b\\c\u00e9\ud83d\ude00\u0001"`, want: "a\"b\\cé😀\x01"},
		{name: "char trimmed", col: mappings.Column{TypeName: "bpchar"}, json: `"ab   "`, want: "ab"},
		{name: "char keep", col: mappings.Column{TypeName: "bpchar", KeepPadding: true}, json: `"ab   "`, want: "ab   "},
		{name: "boolean", col: mappings.Column{TypeName: "bool"}, json: `false`, want: false},
		{name: "date", col: mappings.Column{TypeName: "date"}, json: `"2024-02-29"`, want: dt(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC))},
		{name: "date BC", col: mappings.Column{TypeName: "date"}, json: `"0044-03-15 BC"`, want: dt(time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC))},
		{name: "date after 9999", col: mappings.Column{TypeName: "date"}, json: `"12345-01-01"`, want: dt(time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC))},
		{name: "date infinity", col: mappings.Column{TypeName: "date"}, json: `"infinity"`, bad: "no infinity"},
		{name: "timestamp millis rounded toward the past", col: mappings.Column{TypeName: "timestamp"}, json: `"2024-01-01T10:00:00.123999"`, want: bson.DateTime(time.Date(2024, 1, 1, 10, 0, 0, 123e6, time.UTC).UnixMilli())},
		{name: "timestamp before 1970 rounded toward the past", col: mappings.Column{TypeName: "timestamp"}, json: `"1969-12-31T23:59:59.9995"`, want: bson.DateTime(-1)},
		{name: "timestamptz offset", col: mappings.Column{TypeName: "timestamptz"}, json: `"2024-01-01T10:00:00.5+05:30"`, want: dt(time.Date(2024, 1, 1, 4, 30, 0, 5e8, time.UTC))},
		{name: "timestamptz LMT offset", col: mappings.Column{TypeName: "timestamptz"}, json: `"1850-01-01T00:00:00-04:56:02"`, want: dt(time.Date(1850, 1, 1, 4, 56, 2, 0, time.UTC))},
		{name: "timestamp -infinity", col: mappings.Column{TypeName: "timestamp"}, json: `"-infinity"`, bad: "no infinity"},
		{name: "uuid", col: mappings.Column{TypeName: "uuid"}, json: `"00a6946b-bcb5-4fef-8842-556755d94e29"`, want: uuid},
		{name: "bytea", col: mappings.Column{TypeName: "bytea"}, json: `"\\x00ff10"`, want: bson.Binary{Subtype: 0, Data: []byte{0, 0xff, 0x10}}},
		{name: "jsonb key order and numbers", col: mappings.Column{TypeName: "jsonb"}, json: `{"b": 1, "a": [2147483648, 1.5, 1e2, null, "x", true]}`,
			want: bson.D{{Key: "b", Value: int32(1)}, {Key: "a", Value: bson.A{int64(2147483648), 1.5, 100.0, nil, "x", true}}}},
		{name: "json duplicate key keeps its first place and last value", col: mappings.Column{TypeName: "json"}, json: `{"a": 1, "b": 2, "a": 3}`,
			want: bson.D{{Key: "a", Value: int32(3)}, {Key: "b", Value: int32(2)}}},
		{name: "json number beyond a double's digits as the numeric mode says", col: mappings.Column{TypeName: "jsonb"}, mode: mappings.NumericString, json: `0.1000000000000000000001`, want: "0.1000000000000000000001"},
		{name: "json integer beyond int64 as decimal", col: mappings.Column{TypeName: "jsonb"}, mode: mappings.NumericDecimal, json: `9223372036854775808`, want: dec("9223372036854775808")},
		{name: "json number out of a double's range in double mode", col: mappings.Column{TypeName: "jsonb"}, mode: mappings.NumericDouble, json: `1e400`, bad: "out of range"},
		{name: "enum and other types as their text", col: mappings.Column{TypeName: "mood", Category: "E"}, json: `"happy"`, want: "happy"},
		{name: "interval as its text", col: mappings.Column{TypeName: "interval"}, json: `"1 day 02:00:00"`, want: "1 day 02:00:00"},
		{name: "array", col: mappings.Column{TypeName: "_int4", Category: "A", ElemTypeName: "int4"}, json: `[1, null, 3]`, want: bson.A{int32(1), nil, int32(3)}},
		{name: "array of char trimmed", col: mappings.Column{TypeName: "_bpchar", Category: "A", ElemTypeName: "bpchar"}, json: `["a  ", "b"]`, want: bson.A{"a", "b"}},
		{name: "array not starting at 1", col: mappings.Column{TypeName: "_int4", Category: "A", ElemTypeName: "int4", Type: "integer[]"}, json: `{"dims" : "[5:7]"}`, bad: "[5:7]"},
		{name: "sql field", col: mappings.Column{SQL: "x", TypeName: "text"}, json: `{"n": 1.25}`, want: bson.D{{Key: "n", Value: 1.25}}},
		{name: "NULL", col: mappings.Column{TypeName: "int4"}, json: `null`, want: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vt := typeOf(c.col, c.mode)
			got, err := value(&reader{b: []byte(c.json)}, vt, "f")
			if c.bad != "" {
				if !IsUnbuildable(err) || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("got %v, %v; want unbuildable with %q", got, err, c.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := c.want.(float64); ok {
				g, ok := got.(float64)
				if !ok || !(g == f && math.Signbit(g) == math.Signbit(f) || math.IsNaN(g) && math.IsNaN(f)) {
					t.Fatalf("got %#v, want %v", got, f)
				}
				return
			}
			if diff := cmp.Diff(c.want, got, cmpopts.EquateComparable(bson.Decimal128{})); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestDaysSinceEpoch holds the oracle's calendar to Go's over random dates
// from 4713 BC to year 300000.
func TestDaysSinceEpoch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		y := int64(r.IntN(304713) - 4712)
		m := 1 + r.IntN(12)
		d := 1 + r.IntN(28)
		want := time.Date(int(y), time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400
		if got := daysSinceEpoch(y, m, d); got != want {
			t.Fatalf("%d-%d-%d: %d days, want %d", y, m, d, got, want)
		}
		gy, gm, gd := civilFromDays(want)
		if gy != y || gm != m || gd != d {
			t.Fatalf("civilFromDays(%d) = %d-%d-%d, want %d-%d-%d", want, gy, gm, gd, y, m, d)
		}
	}
}

// TestSameNumber: the rule that picks a double for a JSON number.
func TestSameNumber(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"1.0", "1e+00", true},
		{"0.1", "1e-01", true},
		{"100", "1e+02", true},
		{"-0.0", "0e+00", true},
		{"0.1000000000000000000001", "1e-01", false},
		{"12.50", "1.25e+01", true},
		{"1e99999999999", "1e+00", false},
	} {
		if got := sameNumber(c.a, c.b); got != c.want {
			t.Errorf("sameNumber(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestCheckNames: the field name rule, apart from transform's.
func TestCheckNames(t *testing.T) {
	deep := bson.D{{Key: "x", Value: int32(1)}}
	for range maxDepth - 1 {
		deep = bson.D{{Key: "x", Value: deep}}
	}
	for _, c := range []struct {
		name string
		doc  bson.D
		bad  string
	}{
		{"fine", bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}}}}}, ""},
		{"dollar", bson.D{{Key: "a", Value: bson.D{{Key: "$where", Value: 1}}}}, `"a.$where"`},
		{"dot", bson.D{{Key: "a.b", Value: 1}}, "holding"},
		{"empty", bson.D{{Key: "", Value: 1}}, "empty"},
		{"duplicate", bson.D{{Key: "a", Value: 1}, {Key: "a", Value: 2}}, "two fields"},
		{"depth 100", deep, ""},
		{"depth 101", bson.D{{Key: "y", Value: deep}}, "nested deeper"},
	} {
		err := checkNames(c.doc, "", 1)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%s: %v, want %q", c.name, err, c.bad)
		}
	}
}

// TestTimestampText: timestamp: string, ISO 8601 in UTC with six
// fractional digits, years outside 0000-9999 in the expanded form.
func TestTimestampText(t *testing.T) {
	vt := valueType{fam: famTimestampTZ, timeText: true}
	for in, want := range map[string]string{
		`"2024-01-01T10:00:00.123456+02:00"`: "2024-01-01T08:00:00.123456Z",
		`"1969-12-31T23:59:59.9995+00:00"`:   "1969-12-31T23:59:59.999500Z",
		`"0044-03-15T10:00:00+00:00 BC"`:     "-000043-03-15T10:00:00.000000Z",
		`"0001-01-01T00:00:00+00:00 BC"`:     "0000-01-01T00:00:00.000000Z",
		`"12345-06-01T01:02:03+00:00"`:       "+012345-06-01T01:02:03.000000Z",
	} {
		got, err := value(&reader{b: []byte(in)}, vt, "f")
		if err != nil || got != want {
			t.Errorf("%s: %v, %v; want %s", in, got, err, want)
		}
	}
	d := valueType{fam: famDate, timeText: true}
	if got, err := value(&reader{b: []byte(`"2024-01-01"`)}, d, "f"); err != nil || got != bson.DateTime(1704067200000) {
		t.Errorf("a date stays a date under timestamp: string: %v, %v", got, err)
	}
}

// TestEncodeIsTheDriversBSON: the oracle's encoder writes the bytes the
// driver's own Marshal writes, for every value kind it makes.
func TestEncodeIsTheDriversBSON(t *testing.T) {
	d := bson.D{
		{Key: "_id", Value: "x"}, {Key: "n", Value: nil}, {Key: "i", Value: int32(-5)}, {Key: "l", Value: int64(1) << 40},
		{Key: "f", Value: 1.5}, {Key: "nan", Value: quietNaN}, {Key: "b", Value: true}, {Key: "t", Value: bson.DateTime(-1)},
		{Key: "dec", Value: dec("1.50")}, {Key: "u", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}},
		{Key: "bin", Value: bson.Binary{Data: []byte{1}}}, {Key: "doc", Value: bson.D{{Key: "a", Value: bson.A{int32(1), "s", bson.D{}, bson.A{}}}}},
	}
	want, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encode(nil, d)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encode: %v\n got %x\nwant %x", err, got, want)
	}
}
