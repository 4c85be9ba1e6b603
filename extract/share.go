package extract

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Part is one of N disjoint parts of a root stream (N <= 1: all of it).
// Rows are assigned by a hash of their partition key — the _id columns, or
// a bucket collection's parent columns, so one parent's pages are built by
// one part — which does not depend on the snapshot: processes on different
// machines, each with its own snapshot, split the rows the same way.
type Part struct{ I, N int }

// NewPartReader is NewReader reading only part p of the stream.
func NewPartReader(snap *Snapshot, plan *mappings.CollectionPlan, batchSize int, after Key, p Part) *Reader {
	r := NewReader(snap, plan, batchSize, after)
	r.part = p
	return r
}

// partPredicate is the SQL condition selecting part p's rows.
func partPredicate(plan *mappings.CollectionPlan, p Part) []string {
	if p.N <= 1 {
		return nil
	}
	var cols []int
	if plan.Bucket != nil {
		// the parent key as PostgreSQL compares it (numeric 1.0 and 1.00,
		// char padding, citext case): one parent, one part, whichever
		// spelling each row holds
		cols = plan.Bucket.ByKeys
	} else {
		for _, k := range plan.StreamOrder() {
			cols = append(cols, k.Col)
		}
	}
	refs := make([]string, len(cols))
	for i, c := range cols {
		col := plan.Root.Columns[c]
		refs[i] = colRef(col.Name)
		if col.Canon != "" {
			refs[i] = mappings.CanonSQL(col.Canon, refs[i])
		}
	}
	return []string{partCondition(refs, p)}
}

// partCondition selects part p by the hash of the values refs (SQL
// expressions): the same values give the same part whichever table they
// are read from, which lets a merge stream of a relation read only the
// rows of its part's parents.
func partCondition(refs []string, p Part) string {
	h := fmt.Sprintf("hashtextextended(ROW(%s)::text, 0)", strings.Join(refs, ", "))
	return fmt.Sprintf("mod(mod(%s, %d) + %d, %d) = %d", h, p.N, p.N, p.N, p.I)
}
