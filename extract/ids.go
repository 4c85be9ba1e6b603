package extract

import (
	"context"
	"fmt"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// IDCollision is what the source holds today for a pair of document
// entries whose _ids may meet (mappings.IDOverlap): how many _id values
// both entries give, and one of them; and whether the ranges of their
// _ids overlap (so that a new row may give an _id the other has).
type IDCollision struct {
	mappings.IDOverlap
	// Count is the number of _ids both entries give now; Example is one
	// of them, as text.
	Count   int64
	Example string
	// Overlap: the ranges of the two entries' _ids, RangeA and RangeB
	// (lowest and highest, as text), overlap.
	Overlap        bool
	RangeA, RangeB [2]string
}

// Message says what the collision means.
func (c IDCollision) Message() string {
	what := fmt.Sprintf("collection %q: the %s and %s document types (tables %s and %s) both have %s _ids", c.A.Name, c.A.Root.Table.Name, c.B.Root.Table.Name, c.A.Root.Table.Name, c.B.Root.Table.Name, c.Kind)
	if c.Count > 0 {
		return fmt.Sprintf("%s, and %d of them are equal (e.g. %s): a directory target would hold two documents with one _id, a server refuses the second", what, c.Count, c.Example)
	}
	return fmt.Sprintf("%s in overlapping ranges (%s..%s and %s..%s); none is equal today, but a new row could give an _id the other type has", what, c.RangeA[0], c.RangeA[1], c.RangeB[0], c.RangeB[1])
}

// IDCollisionSuggestion says how to keep the _ids apart.
const IDCollisionSuggestion = "set idPrefix on each entry of the collection (e.g. idPrefix: \"book-\" and idPrefix: \"review-\"): _ids become distinct strings"

// CheckIDCollisions compares, for every pair of document entries whose
// _ids may meet (plan.IDOverlaps), the _id values both give in the
// snapshot - their id values compared as MongoDB compares _ids (numbers
// by value, strings by their bytes), each entry's filter applied - and
// their ranges. It lists the pairs with equal _ids or overlapping ranges.
func CheckIDCollisions(ctx context.Context, s *Snapshot, plan *mappings.Plan) ([]IDCollision, error) {
	var out []IDCollision
	for _, o := range plan.IDOverlaps() {
		c := IDCollision{IDOverlap: o}
		sql := fmt.Sprintf(`WITH a(k) AS (%s), b(k) AS (%s), both_ids AS (SELECT k FROM a INTERSECT SELECT k FROM b),
  lo_a AS (SELECT k FROM a ORDER BY k LIMIT 1), hi_a AS (SELECT k FROM a ORDER BY k DESC LIMIT 1),
  lo_b AS (SELECT k FROM b ORDER BY k LIMIT 1), hi_b AS (SELECT k FROM b ORDER BY k DESC LIMIT 1)
SELECT (SELECT count(*) FROM both_ids), coalesce((SELECT k::text FROM both_ids ORDER BY k LIMIT 1), ''),
  coalesce((SELECT k FROM lo_a) <= (SELECT k FROM hi_b) AND (SELECT k FROM lo_b) <= (SELECT k FROM hi_a), false),
  coalesce((SELECT k::text FROM lo_a), ''), coalesce((SELECT k::text FROM hi_a), ''),
  coalesce((SELECT k::text FROM lo_b), ''), coalesce((SELECT k::text FROM hi_b), '')`, idValues(o.A), idValues(o.B))
		err := s.tx.QueryRow(ctx, sql).Scan(&c.Count, &c.Example, &c.Overlap, &c.RangeA[0], &c.RangeA[1], &c.RangeB[0], &c.RangeB[1])
		if err != nil {
			return nil, fmt.Errorf("compare the _ids of %q and %q in %q: %w", o.A.Root.Table.Name, o.B.Root.Table.Name, o.A.Name, err)
		}
		if c.Count > 0 || c.Overlap {
			out = append(out, c)
		}
	}
	return out, nil
}

// idValues selects entry cp's _id values in a form whose equality is
// MongoDB's for _ids, as one row value.
func idValues(cp *mappings.CollectionPlan) string {
	n := cp.Root
	exprs := make([]string, len(cp.IDCols))
	for i, c := range cp.IDCols {
		ref := colRef(n.Columns[c].Name)
		// By the kind the values become (mappings.ValueKind), not by the
		// column's type category: oid, regclass and money are in the
		// numeric category, yet written as strings (and oid has no cast
		// to numeric).
		switch mappings.ValueKind(cp, c) {
		case "number":
			exprs[i] = ref + "::pg_catalog.numeric"
		case "uuid", "binary", "boolean":
			exprs[i] = ref
		case "date":
			exprs[i] = ref + "::pg_catalog.timestamp"
		default:
			exprs[i] = ref + "::pg_catalog.text COLLATE \"C\""
		}
	}
	where := ""
	if n.Filter != "" {
		where = " WHERE (" + n.Filter + ")"
	}
	return fmt.Sprintf("SELECT ROW(%s) FROM %s AS t%s", strings.Join(exprs, ", "), tableRef(n.Table), where)
}
