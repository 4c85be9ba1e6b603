package extract

import "github.com/denorm/denorm/mappings"

// FullReads are the queries that read, in full, every relation cp's
// documents are built from: the root table in stream order, and each
// relation below it (embedded, lookup, id array, aggregate, at any depth)
// as one query ordered by its join key, the way a merge stream reads it.
// Filters apply; subset limits do not (a relation's rows are read whole,
// each row once). The benchmark copies them out with
// COPY ... (FORMAT binary) to measure what the source itself takes to send
// the rows (the floor under any reader), so they select the same columns
// in the same order as the reader's own queries.
func FullReads(cp *mappings.CollectionPlan) []string {
	sql, _ := rootQuery(cp, nil, 0)
	out := []string{sql}
	var walk func(n *mappings.Node)
	walk = func(n *mappings.Node) {
		for _, c := range n.Children {
			sql, _ := streamQuery(c, nil, Part{}, "")
			out = append(out, sql)
			walk(c)
		}
	}
	walk(cp.Root)
	return out
}
