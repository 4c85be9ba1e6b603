package testenv

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func raw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func iter(docs []bson.Raw) func() (bson.Raw, error) {
	return func() (bson.Raw, error) {
		if len(docs) == 0 {
			return nil, nil
		}
		d := docs[0]
		docs = docs[1:]
		return d, nil
	}
}

// TestCompareSorted: every kind of difference is found and described with
// its path, both values and their BSON types.
func TestCompareSorted(t *testing.T) {
	doc := func(d bson.D) bson.Raw { return raw(t, d) }
	cases := []struct {
		name      string
		want, got []bson.Raw
		diffs     []DocDiff // Want/Got left out of the comparison
	}{
		{
			name: "identical",
			want: []bson.Raw{doc(bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: "x"}})},
			got:  []bson.Raw{doc(bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: "x"}})},
		},
		{
			name: "number type only",
			want: []bson.Raw{doc(bson.D{{Key: "_id", Value: int32(1)}, {Key: "n", Value: int32(100)}})},
			got:  []bson.Raw{doc(bson.D{{Key: "_id", Value: int32(1)}, {Key: "n", Value: 100.0}})},
			diffs: []DocDiff{{Collection: "c", ID: `{"$numberInt":"1"}`, Kind: "different", NumberTypesOnly: true,
				Fields: []FieldDiff{{Path: "n", Want: `32-bit integer {"$numberInt":"100"}`, Got: `double {"$numberDouble":"100.0"}`, TypeOnly: true}}}},
		},
		{
			name: "field order",
			want: []bson.Raw{doc(bson.D{{Key: "_id", Value: "a"}, {Key: "x", Value: true}, {Key: "y", Value: false}})},
			got:  []bson.Raw{doc(bson.D{{Key: "_id", Value: "a"}, {Key: "y", Value: false}, {Key: "x", Value: true}})},
			diffs: []DocDiff{{Collection: "c", ID: `"a"`, Kind: "different",
				Fields: []FieldDiff{{Want: "fields in order _id, x, y", Got: "_id, y, x"}}}},
		},
		{
			name: "nested array item, length and absent field",
			want: []bson.Raw{doc(bson.D{{Key: "_id", Value: int32(2)}, {Key: "c", Value: bson.A{bson.D{{Key: "x", Value: int32(1)}}, bson.D{{Key: "x", Value: int32(2)}, {Key: "z", Value: "q"}}}}})},
			got:  []bson.Raw{doc(bson.D{{Key: "_id", Value: int32(2)}, {Key: "c", Value: bson.A{bson.D{{Key: "x", Value: int32(1)}}, bson.D{{Key: "x", Value: int32(3)}}, "extra"}}})},
			diffs: []DocDiff{{Collection: "c", ID: `{"$numberInt":"2"}`, Kind: "different",
				Fields: []FieldDiff{
					{Path: "c", Want: "2 items", Got: "3 items"},
					{Path: "c[1].x", Want: `32-bit integer {"$numberInt":"2"}`, Got: `32-bit integer {"$numberInt":"3"}`},
					{Path: "c[1].z", Want: `string "q"`, Got: "absent"},
					{Path: "c[2]", Want: "absent", Got: `string "extra"`},
				}}},
		},
		{
			name: "missing and unexpected, ids of several types in server order",
			want: []bson.Raw{doc(bson.D{{Key: "_id", Value: int32(1)}}), doc(bson.D{{Key: "_id", Value: int64(5)}}), doc(bson.D{{Key: "_id", Value: "b"}})},
			got:  []bson.Raw{doc(bson.D{{Key: "_id", Value: 1.0}}), doc(bson.D{{Key: "_id", Value: "a"}}), doc(bson.D{{Key: "_id", Value: "b"}})},
			diffs: []DocDiff{
				{Collection: "c", ID: `{"$numberInt":"1"}`, Kind: "different", NumberTypesOnly: true,
					Fields: []FieldDiff{{Path: "_id", Want: `32-bit integer {"$numberInt":"1"}`, Got: `double {"$numberDouble":"1.0"}`, TypeOnly: true}}},
				{Collection: "c", ID: `{"$numberLong":"5"}`, Kind: "missing"},
				{Collection: "c", ID: `"a"`, Kind: "unexpected"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &TargetDiff{Docs: map[string][2]int{}}
			if err := compareSorted("c", iter(c.want), iter(c.got), d, CompareOptions{Show: 10, Fields: 12}); err != nil {
				t.Fatal(err)
			}
			for i := range d.Diffs {
				d.Diffs[i].Want, d.Diffs[i].Got = nil, nil
			}
			if d.Count != len(c.diffs) {
				t.Errorf("Count %d, want %d", d.Count, len(c.diffs))
			}
			if diff := cmp.Diff(c.diffs, d.Diffs); diff != "" {
				t.Errorf("diffs (-want +got):\n%s\n%s", diff, d)
			}
			if n := d.Docs["c"]; n[0] != len(c.want) || n[1] != len(c.got) {
				t.Errorf("counted %v documents, want %d/%d", n, len(c.want), len(c.got))
			}
		})
	}
}

// TestCompareSortedOrder: a stream out of _id order is an error, not a
// list of false differences.
func TestCompareSortedOrder(t *testing.T) {
	docs := []bson.Raw{raw(t, bson.D{{Key: "_id", Value: "b"}}), raw(t, bson.D{{Key: "_id", Value: "a"}})}
	d := &TargetDiff{Docs: map[string][2]int{}}
	err := compareSorted("c", iter(docs), iter(docs), d, CompareOptions{})
	if err == nil || !strings.Contains(err.Error(), "out of the comparison's order") {
		t.Fatalf("err %v", err)
	}
}

// TestCompareTargets: two databases on the MongoDB-wire server, compared
// whole; the server's _id order is the comparison's (mixed numeric types,
// strings, bucket ids), a collection on one side only is all missing, and
// ignored collections are left out.
func TestCompareTargets(t *testing.T) {
	ctx := context.Background()
	_, a := MongoDB(t)
	_, b := MongoDB(t)
	docs := []any{
		bson.D{{Key: "_id", Value: "10-0"}, {Key: "v", Value: int32(1)}},
		bson.D{{Key: "_id", Value: "1-0"}, {Key: "v", Value: int32(1)}},
		bson.D{{Key: "_id", Value: "1-1"}, {Key: "v", Value: int32(1)}},
		bson.D{{Key: "_id", Value: int32(3)}, {Key: "v", Value: int32(1)}},
		bson.D{{Key: "_id", Value: int64(2)}, {Key: "v", Value: int32(1)}},
		bson.D{{Key: "_id", Value: -1.5}, {Key: "v", Value: int32(1)}},
	}
	if _, err := a.Collection("same").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Collection("same").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Collection("changed").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	changed := append([]any{}, docs...)
	changed[2] = bson.D{{Key: "_id", Value: "1-1"}, {Key: "v", Value: int64(1)}}
	if _, err := b.Collection("changed").InsertMany(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Collection("onlyA").InsertOne(ctx, bson.D{{Key: "_id", Value: int32(1)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Collection("_denorm").InsertOne(ctx, bson.D{{Key: "_id", Value: "job"}}); err != nil {
		t.Fatal(err)
	}

	d, err := CompareTargets(ctx, a, b, CompareOptions{Ignore: []string{"_denorm"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", d)
	if d.Count != 2 || len(d.Diffs) != 2 {
		t.Fatalf("%d differences, want 2:\n%s", d.Count, d)
	}
	if dd := d.Diffs[0]; dd.Collection != "changed" || dd.ID != `"1-1"` || dd.Kind != "different" || !dd.NumberTypesOnly {
		t.Errorf("first difference %+v", dd)
	}
	if dd := d.Diffs[1]; dd.Collection != "onlyA" || dd.Kind != "missing" {
		t.Errorf("second difference %+v", dd)
	}
	if n := d.Docs["same"]; n != [2]int{6, 6} {
		t.Errorf("same: %v documents", n)
	}
	if _, ok := d.Docs["_denorm"]; ok {
		t.Error("_denorm was compared though ignored")
	}
	for _, want := range []string{`changed _id "1-1": different (numbers equal by value`, `v: want 32-bit integer {"$numberInt":"1"}, found 64-bit integer {"$numberLong":"1"}`, "onlyA _id {\"$numberInt\":\"1\"}: missing from the target"} {
		if !strings.Contains(d.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, d)
		}
	}
	if d, err := CompareTargets(ctx, a, a, CompareOptions{}); err != nil || !d.Equal() {
		t.Errorf("a database differs from itself: %v %v", err, d)
	}
}
