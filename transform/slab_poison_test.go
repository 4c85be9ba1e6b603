//go:build denorm_poison

package transform

import (
	"testing"

	"github.com/denorm/denorm/internal/poison"
)

// TestSlabPoisoned keeps a document, an embedded document and an array
// past the Reset that ends their batch: under denorm_poison they read as
// poison, and the document is refused as having a field no document may
// have.
func TestSlabPoisoned(t *testing.T) {
	var s Slab
	inner := append(s.doc(1), Field{Key: "b", Value: "x"})
	arr := append(s.array(2), "y", int32(3))
	d := append(s.doc(3), Field{Key: "a", Value: "v"}, Field{Key: "in", Value: s.boxDoc(inner)}, Field{Key: "arr", Value: s.boxArray(arr)})
	if err := CheckKeys(d); err != nil {
		t.Fatalf("before Reset: %v", err)
	}
	s.Reset()
	for i, f := range d {
		if f.Key != poison.Key || !poison.Is(f.Value) {
			t.Errorf("field %d after Reset: %q = %#v, want poison", i, f.Key, f.Value)
		}
	}
	if inner[0].Key != poison.Key || !poison.Is(arr[0]) || !poison.Is(arr[1]) {
		t.Errorf("after Reset: embedded %v, array %v, want poison", inner, arr)
	}
	if err := CheckKeys(d); err == nil {
		t.Error("a poisoned document passes CheckKeys")
	}
}
