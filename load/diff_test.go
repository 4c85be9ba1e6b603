package load

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func rawDoc(t *testing.T, ext string) bson.Raw {
	t.Helper()
	var r bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(ext), true, &r); err != nil {
		t.Fatalf("%s: %v", ext, err)
	}
	return r
}

// TestDiffer checks the field differences verify reports for each kind of
// change, on canonical Extended JSON (so BSON types are explicit).
func TestDiffer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, got string
		diffs     []FieldDiff
	}{
		{"identical", `{"a": {"$numberInt": "1"}}`, `{"a": {"$numberInt": "1"}}`, nil},
		{"int32 to string", `{"a": {"$numberInt": "1"}}`, `{"a": "1"}`,
			[]FieldDiff{{Path: "a", Expected: json.RawMessage(`1`), ExpectedType: "int32", Found: json.RawMessage(`"1"`), FoundType: "string"}}},
		{"int32 to int64 of the same value", `{"a": {"$numberInt": "1"}}`, `{"a": {"$numberLong": "1"}}`,
			[]FieldDiff{{Path: "a", Expected: json.RawMessage(`1`), ExpectedType: "int32", Found: json.RawMessage(`1`), FoundType: "int64"}}},
		{"int32 to double of the same value", `{"a": {"$numberInt": "1"}}`, `{"a": {"$numberDouble": "1.0"}}`,
			[]FieldDiff{{Path: "a", Expected: json.RawMessage(`1`), ExpectedType: "int32", Found: json.RawMessage(`1.0`), FoundType: "double"}}},
		{"nested field", `{"a": [{"b": "x"}, {"b": "y"}]}`, `{"a": [{"b": "x"}, {"b": "z"}]}`,
			[]FieldDiff{{Path: "a.1.b", Expected: json.RawMessage(`"y"`), ExpectedType: "string", Found: json.RawMessage(`"z"`), FoundType: "string"}}},
		{"missing and unexpected fields", `{"a": "x", "b": "y"}`, `{"a": "x", "c": "y"}`,
			[]FieldDiff{
				{Path: "b", Expected: json.RawMessage(`"y"`), ExpectedType: "string", Note: "missing field"},
				{Path: "c", Found: json.RawMessage(`"y"`), FoundType: "string", Note: "unexpected field"}}},
		{"field order", `{"a": "x", "b": "y"}`, `{"b": "y", "a": "x"}`,
			[]FieldDiff{{Path: "", Note: "field order differs: expected a,b, found b,a"}}},
		{"dropped item", `{"a": ["x", "y"]}`, `{"a": ["y"]}`,
			[]FieldDiff{
				{Path: "a", Note: "array has 1 items, expected 2"},
				{Path: "a.0", Expected: json.RawMessage(`"x"`), ExpectedType: "string", Found: json.RawMessage(`"y"`), FoundType: "string"},
				{Path: "a.1", Expected: json.RawMessage(`"y"`), ExpectedType: "string", Note: "missing item"}}},
		{"reordered items", `{"a": ["x", "y"]}`, `{"a": ["y", "x"]}`,
			[]FieldDiff{
				{Path: "a", Note: "same items in a different order"},
				{Path: "a.0", Expected: json.RawMessage(`"x"`), ExpectedType: "string", Found: json.RawMessage(`"y"`), FoundType: "string"},
				{Path: "a.1", Expected: json.RawMessage(`"y"`), ExpectedType: "string", Found: json.RawMessage(`"x"`), FoundType: "string"}}},
		{"object to array", `{"a": {"b": "x"}}`, `{"a": ["x"]}`,
			[]FieldDiff{{Path: "a", Expected: json.RawMessage(`{"b":"x"}`), ExpectedType: "object", Found: json.RawMessage(`["x"]`), FoundType: "array"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := DiffDocuments(rawDoc(t, tc.want), rawDoc(t, tc.got), 10)
			if diff := cmp.Diff(tc.diffs, got); diff != "" {
				t.Errorf("field differences (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDifferCap keeps at most max differences and counts the rest.
func TestDifferCap(t *testing.T) {
	out, more := DiffDocuments(rawDoc(t, `{"a": [1, 2, 3, 4, 5]}`), rawDoc(t, `{"a": [5, 4, 3, 2, 1]}`), 2)
	if len(out) != 2 || more != 3 {
		t.Errorf("kept %d, more %d; want 2 and 3 (1 note + 4 items - 2)", len(out), more)
	}
}
