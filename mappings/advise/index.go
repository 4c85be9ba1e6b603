package advise

import (
	"fmt"
	"strings"
)

// Indexes the draft proposes: a document collection's references are
// looked up from the other side (the rentals of a customer, the staff of
// a store), so each reference field kept at a document's top level gets
// an index; a bucket collection's pages are read by parent and page, the
// index denorm creates by default for it, written out with its reason.

// indexProposal is one index of the collection being written.
type indexProposal struct {
	keys   []string
	unique bool
	reason string
}

// proposeRef records an index on a top-level reference field.
func (a *advisor) proposeRef(field, coll, table string) {
	a.indexes = append(a.indexes, indexProposal{keys: []string{field},
		reason: fmt.Sprintf("%s: a reference to %s; finding the %s rows of one of them (the other side of the relation) reads this index instead of every document", field, coll, table)})
}

// proposeEmbeddedRef records an index on a reference field inside
// embedded rows (orderDetails.productId): finding the documents holding a
// row that refers to one of them (the orders of a product) reads it, a
// multikey index when the rows are an array.
func (a *advisor) proposeEmbeddedRef(path, coll, table string) {
	a.indexes = append(a.indexes, indexProposal{keys: []string{path},
		reason: fmt.Sprintf("%s: a reference to %s inside the embedded %s rows; finding the documents whose %s rows refer to one of them reads this index (one entry per embedded row) instead of every document", path, coll, table, table)})
}

// proposeBucket records the index of a bucket collection's pages.
func (a *advisor) proposeBucket(by []string, page, parent string) {
	keys := append(append([]string(nil), by...), page)
	a.indexes = append(a.indexes, indexProposal{keys: keys, unique: true,
		reason: fmt.Sprintf("pages are read by their %s (%s) and page number, one page each: denorm's default index of a bucket collection, written out", parent, strings.Join(by, ", "))})
}

// writeIndexes writes the proposals gathered for one collection, and
// forgets them.
func (a *advisor) writeIndexes(o *out, ind int) {
	if len(a.indexes) == 0 {
		return
	}
	o.line(ind, "indexes:")
	for _, p := range a.indexes {
		o.comment(ind+1, p.reason)
		keys := make([]string, len(p.keys))
		for i, k := range p.keys {
			keys[i] = y(k)
		}
		entry := "- {keys: [" + strings.Join(keys, ", ") + "]"
		if p.unique {
			entry += ", unique: true"
		}
		o.line(ind+1, "%s}", entry)
	}
	a.indexes = nil
}
