package load

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/denorm/denorm/transform"
)

func TestAppendDocumentValues(t *testing.T) {
	when := time.Date(2024, 2, 29, 23, 59, 59, 123987000, time.FixedZone("x", 3600))
	uuid := transform.UUID{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	cases := []struct {
		name  string
		value any
		typ   bson.Type
		check func(t *testing.T, v bson.RawValue)
	}{
		{"null", nil, bson.TypeNull, func(t *testing.T, v bson.RawValue) {}},
		{"int32", int32(-7), bson.TypeInt32, func(t *testing.T, v bson.RawValue) {
			if v.Int32() != -7 {
				t.Errorf("got %d", v.Int32())
			}
		}},
		{"int64", int64(math.MinInt64), bson.TypeInt64, func(t *testing.T, v bson.RawValue) {
			if v.Int64() != math.MinInt64 {
				t.Errorf("got %d", v.Int64())
			}
		}},
		{"double", 2.5, bson.TypeDouble, func(t *testing.T, v bson.RawValue) {
			if v.Double() != 2.5 {
				t.Errorf("got %v", v.Double())
			}
		}},
		{"double_nan", math.NaN(), bson.TypeDouble, func(t *testing.T, v bson.RawValue) {
			if !math.IsNaN(v.Double()) {
				t.Errorf("got %v", v.Double())
			}
		}},
		{"double_negative_infinity", math.Inf(-1), bson.TypeDouble, func(t *testing.T, v bson.RawValue) {
			if !math.IsInf(v.Double(), -1) {
				t.Errorf("got %v", v.Double())
			}
		}},
		{"string", "héllo", bson.TypeString, func(t *testing.T, v bson.RawValue) {
			if v.StringValue() != "héllo" {
				t.Errorf("got %q", v.StringValue())
			}
		}},
		{"bool", true, bson.TypeBoolean, func(t *testing.T, v bson.RawValue) {
			if !v.Boolean() {
				t.Error("got false")
			}
		}},
		{"datetime_utc_millis", when, bson.TypeDateTime, func(t *testing.T, v bson.RawValue) {
			want := time.Date(2024, 2, 29, 22, 59, 59, 123000000, time.UTC).UnixMilli()
			if v.DateTime() != want {
				t.Errorf("got %d, want %d", v.DateTime(), want)
			}
		}},
		{"datetime_before_epoch_floors", time.Date(1969, 12, 31, 23, 59, 59, 999500000, time.UTC), bson.TypeDateTime, func(t *testing.T, v bson.RawValue) {
			if v.DateTime() != -1 {
				t.Errorf("got %d, want -1", v.DateTime())
			}
		}},
		{"decimal128", transform.Decimal("12345678901234567890.123456789"), bson.TypeDecimal128, func(t *testing.T, v bson.RawValue) {
			if s := v.Decimal128().String(); s != "12345678901234567890.123456789" {
				t.Errorf("got %s", s)
			}
		}},
		{"decimal128_trailing_zeros", transform.Decimal("12.50"), bson.TypeDecimal128, func(t *testing.T, v bson.RawValue) {
			if s := v.Decimal128().String(); s != "12.50" {
				t.Errorf("got %s", s)
			}
		}},
		{"decimal128_nan", transform.Decimal("NaN"), bson.TypeDecimal128, func(t *testing.T, v bson.RawValue) {
			if s := v.Decimal128().String(); s != "NaN" {
				t.Errorf("got %s", s)
			}
		}},
		{"decimal128_negative_infinity", transform.Decimal("-Infinity"), bson.TypeDecimal128, func(t *testing.T, v bson.RawValue) {
			if s := v.Decimal128().String(); s != "-Infinity" {
				t.Errorf("got %s", s)
			}
		}},
		{"decimal128_integer_zeros_beyond_34_digits", transform.Decimal("1" + strings.Repeat("0", 40)), bson.TypeDecimal128, func(t *testing.T, v bson.RawValue) {
			if s := v.Decimal128().String(); s != "1.000000000000000000000000000000000E+40" {
				t.Errorf("got %s", s)
			}
		}},
		{"uuid_subtype_4", uuid, bson.TypeBinary, func(t *testing.T, v bson.RawValue) {
			sub, b := v.Binary()
			if sub != bson.TypeBinaryUUID || !bytes.Equal(b, uuid[:]) {
				t.Errorf("got subtype %#x %x", sub, b)
			}
		}},
		{"binary_subtype_0", transform.Binary{0, 1, 0xff}, bson.TypeBinary, func(t *testing.T, v bson.RawValue) {
			sub, b := v.Binary()
			if sub != bson.TypeBinaryGeneric || !bytes.Equal(b, []byte{0, 1, 0xff}) {
				t.Errorf("got subtype %#x %x", sub, b)
			}
		}},
		{"nested_doc_key_order", transform.Doc{{Key: "z", Value: int32(1)}, {Key: "a", Value: transform.Doc{{Key: "y", Value: "q"}, {Key: "b", Value: nil}}}}, bson.TypeEmbeddedDocument, func(t *testing.T, v bson.RawValue) {
			var keys []string
			elems, err := v.Document().Elements()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range elems {
				keys = append(keys, e.Key())
			}
			inner, err := v.Document().LookupErr("a", "y")
			if err != nil || inner.StringValue() != "q" {
				t.Errorf("a.y = %v, %v", inner, err)
			}
			innerKeys := v.Document().Lookup("a").Document().String()
			if diff := cmp.Diff([]string{"z", "a"}, keys); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			if innerKeys != `{"y": "q","b": null}` {
				t.Errorf("inner document %s", innerKeys)
			}
		}},
		{"array", transform.Array{int32(1), "x", nil, transform.Array{true}, transform.Doc{{Key: "k", Value: 2.5}}}, bson.TypeArray, func(t *testing.T, v bson.RawValue) {
			vals, err := v.Array().Values()
			if err != nil {
				t.Fatal(err)
			}
			if len(vals) != 5 || vals[0].Int32() != 1 || vals[1].StringValue() != "x" || vals[2].Type != bson.TypeNull ||
				vals[3].Array().Index(0).Boolean() != true || vals[4].Document().Lookup("k").Double() != 2.5 {
				t.Errorf("array %s", v.Array())
			}
		}},
		{"array_empty", transform.Array{}, bson.TypeArray, func(t *testing.T, v bson.RawValue) {
			vals, err := v.Array().Values()
			if err != nil || len(vals) != 0 {
				t.Errorf("got %v, %v", vals, err)
			}
		}},
		{"array_over_100_elements", make(transform.Array, 150), bson.TypeArray, func(t *testing.T, v bson.RawValue) {
			if _, err := bson.Raw(v.Array()).LookupErr("149"); err != nil {
				t.Errorf("no element 149: %v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := transform.Doc{{Key: "_id", Value: int32(1)}, {Key: "v", Value: tc.value}, {Key: "after", Value: "end"}}
			// A non-empty dst: the document is appended after it.
			prefix := []byte("prefix")
			b, err := AppendDocument(prefix, doc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, prefix) {
				t.Fatal("prefix overwritten")
			}
			raw := bson.Raw(b[len(prefix):])
			if err := raw.Validate(); err != nil {
				t.Fatalf("invalid BSON: %v", err)
			}
			v, err := raw.LookupErr("v")
			if err != nil {
				t.Fatal(err)
			}
			if v.Type != tc.typ {
				t.Fatalf("type %v, want %v", v.Type, tc.typ)
			}
			tc.check(t, v)
			if s := raw.Lookup("after").StringValue(); s != "end" {
				t.Errorf("field after the value: %q", s)
			}
			// EncodeDocument gives the same bytes.
			enc, err := EncodeDocument(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, raw) {
				t.Error("EncodeDocument differs from AppendDocument")
			}
		})
	}
}

func TestAppendDocumentErrors(t *testing.T) {
	cases := []struct {
		name string
		doc  transform.Doc
		want string
	}{
		{"invalid_decimal", transform.Doc{{Key: "price", Value: transform.Decimal("12,5")}}, `field "price": decimal 12,5 does not fit a BSON Decimal128`},
		{"decimal_too_precise", transform.Doc{{Key: "d", Value: transform.Decimal("1." + strings.Repeat("1", 40))}}, `field "d": decimal 1.1111`},
		{"decimal_exponent_out_of_range", transform.Doc{{Key: "d", Value: transform.Decimal("1E+7000")}}, `field "d": decimal 1E+7000`},
		{"unsupported_int", transform.Doc{{Key: "n", Value: 42}}, `field "n": unsupported value type int`},
		{"unsupported_nested_path", transform.Doc{{Key: "a", Value: transform.Doc{{Key: "b", Value: transform.Array{int32(1), map[string]any{}}}}}}, `field "a.b.1": unsupported value type map[string]interface {}`},
		{"unsupported_slice", transform.Doc{{Key: "s", Value: []any{1}}}, `field "s": unsupported value type []interface {}`},
		{"nul_in_key", transform.Doc{{Key: "x", Value: transform.Doc{{Key: "a\x00b", Value: int32(1)}}}}, `field "x.a\x00b": a BSON key cannot contain a NUL character`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AppendDocument(nil, tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if _, err := EncodeDocument(tc.doc); err == nil {
				t.Fatal("EncodeDocument: no error")
			}
		})
	}
}

func TestAppendExtJSONValues(t *testing.T) {
	uuid := transform.UUID{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	cases := []struct {
		name  string
		value any
		want  string
	}{
		{"int32", int32(1), `1`},
		{"int64", int64(1) << 40, `1099511627776`},
		{"double_integral", 1.0, `1.0`},
		{"double", 2.5, `2.5`},
		{"double_nan", math.NaN(), `{"$numberDouble":"NaN"}`},
		{"double_infinity", math.Inf(1), `{"$numberDouble":"Infinity"}`},
		{"string", `a "q" <b>`, `"a \"q\" <b>"`},
		{"bool", false, `false`},
		{"null", nil, `null`},
		{"date", time.Date(2024, 2, 29, 12, 0, 0, 250000000, time.UTC), `{"$date":"2024-02-29T12:00:00.25Z"}`},
		{"date_before_1970", time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC), `{"$date":{"$numberLong":"-14182980000"}}`},
		{"decimal", transform.Decimal("12.50"), `{"$numberDecimal":"12.50"}`},
		{"uuid", uuid, `{"$binary":{"base64":"oO68mZwLTvi7bWu5vTgKEQ==","subType":"04"}}`},
		{"binary", transform.Binary{1, 2, 3}, `{"$binary":{"base64":"AQID","subType":"00"}}`},
		{"doc", transform.Doc{{Key: "b", Value: int32(1)}, {Key: "a", Value: transform.Array{int32(1), 2.5}}}, `{"b":1,"a":[1,2.5]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendExtJSON([]byte("x"), transform.Doc{{Key: "v", Value: tc.value}})
			if err != nil {
				t.Fatal(err)
			}
			want := `x{"v":` + tc.want + `}`
			if string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func BenchmarkAppendDocument(b *testing.B) {
	doc := transform.Doc{
		{Key: "_id", Value: int64(123456)},
		{Key: "name", Value: "Ada Lovelace"},
		{Key: "born", Value: time.Date(1815, 12, 10, 0, 0, 0, 0, time.UTC)},
		{Key: "balance", Value: transform.Decimal("1234.50")},
		{Key: "contacts", Value: transform.Array{
			transform.Doc{{Key: "kind", Value: "email"}, {Key: "value", Value: "ada@example.org"}},
			transform.Doc{{Key: "kind", Value: "phone"}, {Key: "value", Value: "+44 20 1234"}},
		}},
	}
	var buf []byte
	var err error
	b.ReportAllocs()
	for b.Loop() {
		buf, err = AppendDocument(buf[:0], doc)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeDocumentRoundTrip: every value AppendDocument writes decodes
// to values that encode to the same bytes (sync writes documents it
// spilled as BSON), and types denorm never writes are errors naming the
// field.
func TestDecodeDocumentRoundTrip(t *testing.T) {
	when := time.Date(2024, 2, 29, 23, 59, 59, 123987000, time.UTC)
	doc := transform.Doc{
		{Key: "_id", Value: transform.Doc{{Key: "a", Value: int32(1)}, {Key: "b", Value: "x"}}},
		{Key: "i32", Value: int32(-7)},
		{Key: "i64", Value: int64(math.MaxInt64)},
		{Key: "f", Value: 2.5},
		{Key: "nan", Value: math.NaN()},
		{Key: "inf", Value: math.Inf(1)},
		{Key: "s", Value: "héllo"},
		{Key: "b", Value: false},
		{Key: "t", Value: when},
		{Key: "uuid", Value: transform.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		{Key: "bin", Value: transform.Binary{0, 1, 2}},
		{Key: "null", Value: nil},
		{Key: "arr", Value: transform.Array{int32(1), "two", transform.Doc{{Key: "z", Value: 3.0}}, nil, transform.Array{}}},
		{Key: "empty", Value: transform.Doc{}},
	}
	for _, d := range []string{"12.50", "-3", "1E+3", "0.000", "-0", "NaN", "Infinity", "-Infinity", "1234567890123456789012345678901234", "1.5E-6170"} {
		doc = append(doc, transform.Field{Key: "dec" + d, Value: transform.Decimal(d)})
	}
	want, err := AppendDocument(nil, doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeDocument(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendDocument(nil, back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("round trip changed the document:\nwant %s\ngot  %s", bson.Raw(want), bson.Raw(got))
	}
	// A value read back from the target encodes as stored.
	id := Value{Type: byte(bson.TypeString), Data: bsonString("k")}
	raw, err := AppendDocument(nil, transform.Doc{{Key: "_id", Value: id}})
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := StringField(raw, "_id"); !ok || s != "k" {
		t.Fatalf("a Value encodes as %s", bson.Raw(raw))
	}

	oid, err := bson.Marshal(bson.D{{Key: "x", Value: bson.D{{Key: "y", Value: bson.NewObjectID()}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeDocument(oid); err == nil || !strings.Contains(err.Error(), `"x.y"`) {
		t.Fatalf("an ObjectId decodes with error %v; want one naming x.y", err)
	}
}

func bsonString(s string) []byte {
	b := make([]byte, 4, 5+len(s))
	n := len(s) + 1
	b[0], b[1], b[2], b[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return append(append(b, s...), 0)
}

// TestNaNOneEncoding: every NaN is written as the quiet NaN, so that plain
// verify on a directory target (whose Extended JSON reads "NaN" back as
// that NaN) does not report a real NaN (widened from float32, with other
// payload bits) as different from itself.
func TestNaNOneEncoding(t *testing.T) {
	widened := float64(float32(math.NaN()))
	negative := math.Copysign(math.NaN(), -1)
	for _, f := range []float64{math.NaN(), widened, negative, QuietNaN} {
		b, err := AppendDocument(nil, transform.Doc{{Key: "f", Value: f}})
		if err != nil {
			t.Fatal(err)
		}
		got := math.Float64bits(bsoncore.Document(b).Lookup("f").Double())
		if got != 0x7ff8000000000000 {
			t.Errorf("NaN %#x written as %#x", math.Float64bits(f), got)
		}
	}
	js := []byte(`{"f":{"$numberDouble":"NaN"}}`)
	b, err := UnmarshalExtJSON(nil, js)
	if err != nil {
		t.Fatal(err)
	}
	if got := math.Float64bits(bsoncore.Document(b).Lookup("f").Double()); got != 0x7ff8000000000000 {
		t.Errorf("Extended JSON NaN read as %#x", got)
	}
}
