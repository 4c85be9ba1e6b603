package mappings

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// dumpPlan writes every decision Resolve made, in a stable text form the
// resolve corpus compares: per entry its ids, stream order, discriminator
// and bucket; per node its table, columns, join, order and fields. Column
// indexes are shown by name (with the join key columns after a "|"), so
// a case reads without counting.
func dumpPlan(p *Plan) string {
	var b strings.Builder
	for i, cp := range p.Collections {
		if i > 0 {
			b.WriteByte('\n')
		}
		dumpCollection(&b, cp)
		Walk(cp.Root, func(n *Node) bool {
			dumpNode(&b, n)
			return true
		})
	}
	for _, set := range p.Indexes {
		if len(set.Indexes) == 0 && set.ShardKey == nil {
			continue
		}
		fmt.Fprintf(&b, "\nindexes of %s\n", set.Collection)
		for _, ix := range set.Indexes {
			fmt.Fprintf(&b, "  %s (%s)", ix.Name, ix.KeyText())
			if ix.Unique {
				b.WriteString(" unique")
			}
			if ix.Partial != nil {
				fmt.Fprintf(&b, " partial %s", ix.Partial)
			}
			if ix.Default {
				fmt.Fprintf(&b, " default: %s", ix.Reason)
			}
			fmt.Fprintf(&b, " (%s)\n", posText(ix.Pos))
		}
		if set.ShardKey != nil {
			fmt.Fprintf(&b, "  shard key (%s)\n", set.ShardKeyText())
		}
	}
	return b.String()
}

func dumpCollection(b *strings.Builder, cp *CollectionPlan) {
	fmt.Fprintf(b, "collection %s (%s)\n", cp.Name, posText(cp.Pos))
	r := cp.Root
	fmt.Fprintf(b, "  id columns: %s\n", colList(r, cp.IDCols))
	if !slices.Equal(cp.IDKeys, cp.IDCols) && cp.Bucket == nil {
		fmt.Fprintf(b, "  id compared as: %s\n", colList(r, cp.IDKeys))
	}
	if len(cp.IDNames) > 1 {
		fmt.Fprintf(b, "  id names: %s\n", strings.Join(cp.IDNames, ", "))
	}
	fmt.Fprintf(b, "  stream order: %s\n", orderText(r, cp.StreamOrder()))
	if cp.Discriminator != "" {
		fmt.Fprintf(b, "  discriminator: %s = %#v\n", cp.Discriminator, cp.DiscriminatorValue)
	}
	switch cp.OnDelete {
	case OnDeleteTombstone:
		fmt.Fprintf(b, "  on delete: tombstone %s\n", cp.Tombstone)
	case OnDeleteIgnore:
		fmt.Fprintf(b, "  on delete: ignore\n")
	}
	if bp := cp.Bucket; bp != nil {
		fmt.Fprintf(b, "  bucket: by %s as %s; size %d; items %q, page %q; skip last %d\n",
			colList(r, bp.By), strings.Join(bp.ByNames, ", "), bp.Size, bp.Items, bp.Page, bp.SkipLast)
		if !slices.Equal(bp.ByKeys, bp.By) {
			fmt.Fprintf(b, "  bucket parents compared as: %s\n", colList(r, bp.ByKeys))
		}
	}
}

func dumpNode(b *strings.Builder, n *Node) {
	ind := strings.Repeat("  ", n.Depth()+1)
	kind := map[NodeKind]string{NodeRoot: "root", NodeEmbed: "embed", NodeLookup: "lookup", NodeIds: "ids", NodeAggregate: "aggregate"}[n.Kind]
	fmt.Fprintf(b, "%s%s %s <- %s (%s)\n", ind, kind, n.Path, n.Table.QualifiedName(), posText(n.Pos))
	ind += "  "
	var cols []string
	for i, c := range n.Columns {
		s := c.Name + " " + c.Type
		switch {
		case c.Canon != "":
			s = colName(c)
		case c.SQL != "":
			s = colName(c)
		case c.Domain != "":
			s += " (domain " + c.Domain + ")"
		}
		if c.TypeName == "numeric" {
			s += " as " + string(n.Numeric[i])
		}
		cols = append(cols, s)
	}
	for _, c := range n.JoinKeyCols {
		if c.Canon != "" {
			cols = append(cols, "| "+colName(c))
			continue
		}
		cols = append(cols, "| "+c.Name+" "+c.Type)
	}
	fmt.Fprintf(b, "%scolumns: %s\n", ind, strings.Join(cols, ", "))
	if n.Filter != "" {
		fmt.Fprintf(b, "%sfilter: %s (%s)\n", ind, n.Filter, posText(n.FilterPos))
	}
	if t := n.Through; t != nil {
		var on []string
		for _, o := range t.On {
			on = append(on, o[0]+" = "+o[1])
		}
		fmt.Fprintf(b, "%sthrough: %s on %s\n", ind, t.Table.QualifiedName(), strings.Join(on, ", "))
	}
	if n.Parent != nil {
		var join []string
		for i := range n.JoinCols {
			join = append(join, rowCol(n, n.JoinCols[i])+" = "+colName(n.Parent.Columns[n.ParentCols[i]]))
		}
		fmt.Fprintf(b, "%sjoin: %s\n", ind, strings.Join(join, ", "))
		fmt.Fprintf(b, "%sparent keys cast to: %s\n", ind, strings.Join(n.ParamTypes, ", "))
	}
	if len(n.Order) > 0 {
		fmt.Fprintf(b, "%sorder: %s\n", ind, orderText(n, n.Order))
	}
	var shape []string
	if n.Object {
		shape = append(shape, "object")
	}
	if n.Limit > 0 {
		shape = append(shape, fmt.Sprintf("limit %d", n.Limit))
	}
	if n.Kind == NodeIds && len(n.Values) > 0 {
		shape = append(shape, fmt.Sprintf("values %s as %s", colList(n, n.Values), strings.Join(n.ValueNames, ", ")))
	} else if n.Kind == NodeIds {
		shape = append(shape, "value "+n.Columns[n.Value].Name)
	}
	if a := n.Agg; a != nil {
		s := a.Fn + "(" + a.Column + ")"
		if a.Column == "" {
			s = a.Fn + "(*)"
		}
		if a.Zero {
			s += ", 0 over no rows"
		}
		shape = append(shape, s)
	}
	if len(shape) > 0 {
		fmt.Fprintf(b, "%s%s\n", ind, strings.Join(shape, "; "))
	}
	for _, v := range n.ExprEnv {
		if v.Lookup == nil {
			fmt.Fprintf(b, "%sexpr reads %s\n", ind, n.Columns[v.Col].Name)
			continue
		}
		var names []string
		for c := range v.Cols {
			names = append(names, c)
		}
		sort.Strings(names)
		fmt.Fprintf(b, "%sexpr reads %s = %s {%s}\n", ind, v.Name, v.Lookup.Path, strings.Join(names, ", "))
	}
	for _, f := range n.Fields {
		fmt.Fprintf(b, "%sfield %s\n", ind, fieldText(n, &f))
	}
}

func fieldText(n *Node, f *FieldPlan) string {
	name := f.Name
	if f.Pivot != nil {
		name = "[" + refText(n, *f.Pivot) + "]"
	}
	var what string
	switch f.Kind {
	case FieldColumn:
		what = "column " + refText(n, f.Value)
	case FieldEmbed:
		what = "embed " + f.Embed.Path
	case FieldIds:
		what = "ids " + f.Embed.Path
	case FieldAggregate:
		what = "aggregate " + f.Embed.Path
	case FieldExpr:
		what = "expr `" + f.Source + "`"
	case FieldConst:
		what = fmt.Sprintf("value %#v", f.Const)
	}
	if f.RefCollection != "" {
		what += " ref " + f.RefCollection
	}
	return fmt.Sprintf("%s: %s (%s)", name, what, posText(f.Pos))
}

func refText(n *Node, r Ref) string {
	if r.Lookup != nil {
		return r.Lookup.Path[len(n.Path)+1:] + "." + r.Lookup.Columns[r.Col].Name
	}
	return n.Columns[r.Col].Name
}

// rowCol names value i of a row of n: a column, or a join key column.
func rowCol(n *Node, i int) string {
	if i < len(n.Columns) {
		return colName(n.Columns[i])
	}
	return "|" + colName(n.JoinKeyCols[i-len(n.Columns)])
}

// colName names a column: a key column computed by PostgreSQL as
// key(column as type), a computed field as sql(name: expression).
func colName(c Column) string {
	switch {
	case c.Canon != "":
		return "key(" + c.Name + " as " + c.Canon + ")"
	case c.SQL != "":
		return "sql(" + c.Name + ": " + c.SQL + ")"
	}
	return c.Name
}

func colList(n *Node, cols []int) string {
	var out []string
	for _, c := range cols {
		out = append(out, colName(n.Columns[c]))
	}
	return strings.Join(out, ", ")
}

func orderText(n *Node, order []OrderCol) string {
	var out []string
	for _, o := range order {
		s := n.Columns[o.Col].Name
		if o.Desc {
			s += " desc"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func posText(p Pos) string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }
