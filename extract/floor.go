package extract

import (
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// FullReads are the queries that read, in full, every relation cp's
// documents are built from: the root table in stream order, and each
// relation below it (embedded, lookup, id array, aggregate, at any depth)
// as one query ordered by its join key, the way a merge stream reads it;
// a subset (a relation with a limit) as the rows it keeps, the first few
// per row of its parent's table, in the parent's key order. Filters apply.
// The benchmark copies them out with
// COPY ... (FORMAT binary) to measure what the source itself takes to send
// the rows (the floor under any reader), so they select the same columns
// in the same order as the reader's own queries.
func FullReads(cp *mappings.CollectionPlan) []string {
	sql, _ := rootQuery(cp, nil, 0, nil, nil)
	out := []string{sql}
	streamed := Streamable(cp)
	var walk func(n *mappings.Node)
	walk = func(n *mappings.Node) {
		for _, c := range n.Children {
			var sql string
			switch {
			case c.Limit > 0 && slices.Contains(streamed, c):
				// The reader's own subset stream.
				sql, _ = subsetStreamQuery(cp, c, nil, Part{})
			case c.Limit > 0 && c.Kind != mappings.NodeAggregate:
				sql = subsetRead(c)
			case slices.Contains(streamed, c) && ordered(cp, c):
				// The reader's own merge stream.
				sql, _ = streamQuery(c, nil, Part{}, rootFilter(cp))
			case slices.Contains(streamed, c):
				sql, _ = equalStreamQuery(cp, c, nil, Part{})
			default:
				sql, _ = streamQuery(c, nil, Part{}, "")
			}
			out = append(out, sql)
			walk(c)
		}
	}
	walk(cp.Root)
	return out
}

// subsetRead is the query reading subset n's rows for every row of its
// parent's table: the first Limit rows in n's order, parents in key order.
func subsetRead(n *mappings.Node) string {
	keys := keyRefs(n)
	cond := make([]string, len(keys))
	parent := make([]string, len(keys))
	for i, pc := range n.ParentCols {
		col, _ := keyColumn(n.Parent, pc)
		parent[i] = qualRef("p", col.Name)
		cond[i] = keys[i] + " = " + parent[i]
	}
	if n.Filter != "" {
		cond = append(cond, "("+n.Filter+")")
	}
	return fmt.Sprintf("SELECT x.* FROM %s AS p CROSS JOIN LATERAL (SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %d) AS x ORDER BY %s",
		tableRef(n.Parent.Table), selectList(n), fromClause(n), strings.Join(cond, " AND "),
		strings.Join(orderList(n), ", "), n.Limit, strings.Join(parent, ", "))
}
