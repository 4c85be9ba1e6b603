package mappings

import "fmt"

// Aggregates: a field computed over the related rows of a table (count,
// sum, avg, min, max), grouped by the join columns. relation resolves the
// join as for every relation; aggregate resolves the node's result and
// aggregateType its SQL type, as PostgreSQL types it.

// aggregate resolves an aggregate node: Columns is its result, JoinKeyCols
// (already set) the group columns matched to the parent.
func (r *resolver) aggregate(n *Node, rel *Relation, path string) bool {
	agg := &AggPlan{Fn: rel.Fn, Column: rel.Column}
	var src *Column
	if rel.Column != "" {
		src = n.Table.Column(rel.Column)
		if src == nil {
			r.add(rel.pos.at("column"), "%s: table %q has no column %q", path, n.Table.Name, rel.Column)
			return false
		}
	}
	res, err := aggregateType(rel.Fn, src)
	if err != nil {
		r.add(rel.pos.at("fn"), "%s: %v", path, err)
		return false
	}
	agg.Zero = rel.Fn == "count" || (rel.Fn == "sum" && res.Category == "N" && res.TypeName != "money")
	n.Agg = agg
	res.TimestampText = r.file.Timestamp == TimestampString
	n.Columns = []Column{res}
	n.Numeric = []NumericMode{r.file.Numeric}
	n.JoinCols = n.JoinCols[:0]
	for i := range n.JoinKeyCols {
		n.JoinCols = append(n.JoinCols, 1+i)
	}
	n.keyExtra = nil
	return true
}

// aggregateType is the SQL type of fn over a column of type src.
func aggregateType(fn string, src *Column) (Column, error) {
	bigint := Column{Name: fn, Type: "bigint", TypeName: "int8", Category: "N", NotNull: true}
	numeric := Column{Name: fn, Type: "numeric", TypeName: "numeric", Category: "N"}
	double := Column{Name: fn, Type: "double precision", TypeName: "float8", Category: "N"}
	if fn == "count" {
		return bigint, nil
	}
	c := *src
	c.Name, c.NotNull = fn, false
	switch fn {
	case "min", "max":
		if c.Category == "A" || c.TypeName == "json" || c.TypeName == "bool" {
			return Column{}, fmt.Errorf("%s of a %s column is not supported", fn, src.Type)
		}
		return c, nil
	case "sum":
		switch src.TypeName {
		case "int2", "int4":
			return bigint, nil
		case "int8", "numeric":
			return numeric, nil
		case "float4", "float8", "money", "interval":
			return c, nil // a sum of reals is a real, as PostgreSQL's
		}
	case "avg":
		switch src.TypeName {
		case "int2", "int4", "int8", "numeric":
			return numeric, nil
		case "float4", "float8":
			return double, nil
		case "interval":
			return c, nil
		}
	}
	return Column{}, fmt.Errorf("%s of a %s column is not supported", fn, src.Type)
}
