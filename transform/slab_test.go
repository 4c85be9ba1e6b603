package transform

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/internal/poison"
)

// TestSlabReuse builds batches of documents with embedded arrays and id
// arrays from one slab reset between batches, and checks each batch
// against documents built on their own; after the first batches the slab
// allocates nothing for fields, arrays and boxes. A slab never reset keeps
// only its current blocks.
func TestSlabReuse(t *testing.T) {
	cp := plan(t, `
version: 1
collections:
  - name: people
    table: person
    fields:
      - first_name
      - name: contactDetails
        embed:
          table: contact_detail
          join: {person_id: id}
          orderBy: id
          fields: [detail, extension]
      - name: contactIds
        ids: {table: contact_detail, join: {person_id: id}, orderBy: id, column: id}
`).Collections[0]
	cd := cp.Root.Fields[1].Embed
	ids := cp.Root.Fields[2].Embed
	batch := func(b int) ([][]any, fixedRel) {
		var roots [][]any
		var rows [][]any
		for i := range 200 {
			roots = append(roots, row(t, cp.Root, map[string]any{"id": int32(b*100 + i), "first_name": fmt.Sprint("p", b, i)}))
		}
		for i := range 3 + b%4 {
			rows = append(rows, row(t, cd, map[string]any{"id": int32(i), "person_id": int32(1), "detail": fmt.Sprint("d", b, i), "extension": int32(i)}))
		}
		idRows := [][]any{row(t, ids, map[string]any{"id": int32(b)})}
		return roots, fixedRel{cd: rows, ids: idRows}
	}
	var s Slab
	for b := range 20 {
		roots, rel := batch(b)
		got, errs := BuildIn(&s, cp, roots, rel)
		want, _ := Build(cp, roots, rel)
		if len(errs) > 0 || len(got) != len(want) {
			t.Fatalf("batch %d: %d documents, %v; want %d", b, len(got), errs, len(want))
		}
		for i := range got {
			if diff := cmp.Diff(flat(want[i].Body), flat(got[i].Body)); diff != "" {
				t.Fatalf("batch %d, document %d (-want +got):\n%s", b, i, diff)
			}
		}
		s.Reset()
	}
	roots, rel := batch(3)
	// One allocation per document (its source key) and one for the batch
	// (under denorm_poison, Reset lets the blocks go).
	if n := testing.AllocsPerRun(20, func() { BuildIn(&s, cp, roots, rel); s.Reset() }); n > float64(len(roots)+1) && !poison.On {
		t.Errorf("BuildIn with a reused slab: %.0f allocations per batch of %d documents, want %d", n, len(roots), len(roots)+1)
	}
	var once Slab
	for b := range 20 {
		roots, rel := batch(b)
		BuildIn(&once, cp, roots, rel)
	}
	if n := len(once.fields.all) + len(once.items.all) + len(once.docs.all) + len(once.arrays.all); n > 4 {
		t.Errorf("a slab never reset holds %d blocks, want one per kind", n)
	}
}

// BenchmarkSlab hands out and boxes a document and an array per
// iteration from a slab reset every thousand: the hot path of BuildIn.
func BenchmarkSlab(b *testing.B) {
	var s Slab
	b.ReportAllocs()
	var sink []any
	i := 0
	for b.Loop() {
		d := append(s.doc(2), Field{Key: "a", Value: "x"}, Field{Key: "b", Value: "y"})
		a := append(s.array(2), "x", "y")
		sink = append(sink, s.boxDoc(d), s.boxArray(a))
		if i++; i%1000 == 0 {
			sink = sink[:0]
			s.Reset()
		}
	}
	_ = sink
}
