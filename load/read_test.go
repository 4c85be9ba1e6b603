package load

import (
	"bytes"
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/transform"
)

// TestNormalizeIsJSONRoundTrip: a directory target's Normalize gives
// exactly the bytes a relaxed Extended JSON round trip (what the target
// writes and Scan parses) gives, for every value type.
func TestNormalizeIsJSONRoundTrip(t *testing.T) {
	ts := time.Date(2024, 2, 29, 12, 30, 45, 123_000_000, time.UTC)
	docs := []transform.Doc{
		{{Key: "_id", Value: int32(1)}, {Key: "s", Value: "text é"}},
		{{Key: "_id", Value: int64(5)}, {Key: "big", Value: int64(math.MaxInt32 + 1)}, {Key: "neg", Value: int64(math.MinInt32)},
			{Key: "negBig", Value: int64(math.MinInt32 - 1)}, {Key: "max", Value: int64(math.MaxInt64)}},
		{{Key: "_id", Value: "a"}, {Key: "nested", Value: transform.Doc{{Key: "n", Value: int64(7)}, {Key: "arr", Value: transform.Array{int64(1), int32(2), 3.0, "x", nil, transform.Array{int64(9)}}}}}},
		{{Key: "_id", Value: 2.5}, {Key: "f", Value: 1.0}, {Key: "z", Value: math.Copysign(0, -1)}, {Key: "nan", Value: math.NaN()},
			{Key: "inf", Value: math.Inf(-1)}, {Key: "small", Value: 1e-300}, {Key: "large", Value: 1e300}, {Key: "frac", Value: 0.1 + 0.2}},
		// PostgreSQL's NaN (float8 and float4 alike, on x86) has its sign bit set
		{{Key: "_id", Value: int32(4)}, {Key: "pgNaN", Value: math.Float64frombits(0xfff8000000000000)},
			{Key: "in", Value: transform.Array{transform.Doc{{Key: "x", Value: math.Float64frombits(0x7ff8000000000002)}}}}},
		{{Key: "_id", Value: int32(3)}, {Key: "t", Value: ts}, {Key: "old", Value: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)},
			{Key: "far", Value: time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)}, {Key: "b", Value: true},
			{Key: "d", Value: transform.Decimal("12.50")}, {Key: "u", Value: transform.UUID{1, 2, 3}}, {Key: "bin", Value: transform.Binary{0, 255}},
			{Key: "empty", Value: transform.Doc{}}, {Key: "emptyArr", Value: transform.Array{}}},
	}
	r := openDir(t.TempDir(), Options{})
	for _, d := range docs {
		raw, err := EncodeDocument(d)
		if err != nil {
			t.Fatal(err)
		}
		js, err := driverRelaxedJSON(nil, raw)
		if err != nil {
			t.Fatal(err)
		}
		var want bsonRaw
		if err := unmarshalExtJSON(js, &want); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		want = quietNaNs(t, want) // as Scan's parser reads "NaN"
		got, err := r.Normalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\nNormalize  %v\nround trip %v", js, got, want)
		}
	}
}

type bsonRaw = bson.Raw

func unmarshalExtJSON(b []byte, out *bson.Raw) error { return bson.UnmarshalExtJSON(b, false, out) }
