package mappings

import "slices"

// Every traversal of a plan's node tree goes through Walk, and every
// traversal of the documents' fields through WalkFields; the helpers below
// answer the questions several packages ask of a plan (which tables, which
// collections, which reference fields, what reads a table).

// Walk calls fn for n and then for every node below it, depth first:
// a node before its children, children in Children order. When fn returns
// false, the node's children (and everything below them) are skipped.
func Walk(n *Node, fn func(n *Node) bool) {
	if !fn(n) {
		return
	}
	for _, c := range n.Children {
		Walk(c, fn)
	}
}

// WalkFields calls fn for every named field of the (sub)document n makes
// and of the documents it embeds, depth first in document order: an
// embed's field before the fields inside it. path holds the field names
// from n's document down to the field, its own name last, with "[]" after
// each embedded array on the way (never after the field itself). Fields
// named by the data (pivots) are not visited. fn must not keep or change
// path: it is reused once fn returns (clone it to keep it).
func WalkFields(n *Node, fn func(f *FieldPlan, path []string)) {
	walkFields(n, make([]string, 0, 8), fn)
}

func walkFields(n *Node, path []string, fn func(f *FieldPlan, path []string)) {
	for i := range n.Fields {
		f := &n.Fields[i]
		if f.Name == "" {
			continue // a pivot: the name comes from the data
		}
		p := append(path, f.Name)
		fn(f, p)
		if f.Kind == FieldEmbed {
			if !f.Embed.Object {
				p = append(p, "[]")
			}
			walkFields(f.Embed, p, fn)
		}
	}
}

// CollectionNames lists the target collections, each once, in the order
// of their first entry.
func (p *Plan) CollectionNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, cp := range p.Collections {
		if !seen[cp.Name] {
			seen[cp.Name] = true
			names = append(names, cp.Name)
		}
	}
	return names
}

// RefTarget is the entry whose documents a ref: to collection name points
// at: the first document (not bucket) entry of that collection; nil when
// there is none (and for "", which names no collection).
func (p *Plan) RefTarget(name string) *CollectionPlan {
	for _, cp := range p.Collections {
		if cp.Name == name && cp.Bucket == nil {
			return cp
		}
	}
	return nil
}

// Tables lists every table the plan reads, each once (by qualified
// name), in entry order and then walk order: every node's table, and its
// join table right after it.
func (p *Plan) Tables() []*Table {
	var out []*Table
	seen := map[string]bool{}
	for _, cp := range p.Collections {
		for _, t := range cp.Tables() {
			if q := t.QualifiedName(); !seen[q] {
				seen[q] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// Tables lists every table cp reads, each once, in walk order: every
// node's table, and its join table right after it.
func (cp *CollectionPlan) Tables() []*Table {
	var out []*Table
	add := func(t *Table) {
		if !slices.ContainsFunc(out, func(o *Table) bool { return o.QualifiedName() == t.QualifiedName() }) {
			out = append(out, t)
		}
	}
	Walk(cp.Root, func(n *Node) bool {
		add(n.Table)
		if n.Through != nil {
			add(n.Through.Table)
		}
		return true
	})
	return out
}

// QualifiedName is the table's name with its schema: "public.person",
// each part quoted when it needs to be (QualifiedTableName).
func (t *Table) QualifiedName() string { return QualifiedTableName(t.Schema, t.Name) }

// Dependent is one place where a collection entry reads a table: when
// rows of the table change, the documents (or bucket pages) of Collection
// that Node's rows feed must be rebuilt. Node.Kind tells how the rows are
// used: the root (documents, or bucket items when Collection.Bucket is
// set), an embed, a lookup, an id array or an aggregate.
type Dependent struct {
	// Entry is the index of Collection in Plan.Collections.
	Entry      int
	Collection *CollectionPlan
	Node       *Node
	// Through: the table is Node's join table (Node.Through.Table), which
	// links Node's rows to its parent's, not Node.Table.
	Through bool
}

// Dependents lists every place the plan reads table (a qualified name as
// Table.QualifiedName gives it, or "table" for public.table), in entry order and then walk order. A node
// reading the table both as its table and as its join table is listed
// twice, once with Through.
func (p *Plan) Dependents(table string) []Dependent {
	q := table
	if schema, name, err := SplitQualifiedName(table); err == nil {
		q = QualifiedTableName(schema, name)
	}
	var out []Dependent
	for e, cp := range p.Collections {
		Walk(cp.Root, func(n *Node) bool {
			if n.Table.QualifiedName() == q {
				out = append(out, Dependent{Entry: e, Collection: cp, Node: n})
			}
			if n.Through != nil && n.Through.Table.QualifiedName() == q {
				out = append(out, Dependent{Entry: e, Collection: cp, Node: n, Through: true})
			}
			return true
		})
	}
	return out
}

// Reference is a field declared with ref:, which holds ids of another
// collection's documents.
type Reference struct {
	// Path is the field's place in the entry's documents as WalkFields
	// gives it, with "[]" after every array; for a bucket collection it
	// starts with the page's items array.
	Path []string
	// Collection is the collection referenced.
	Collection string
	Field      *FieldPlan
}

// References lists cp's reference fields (columns and id arrays declared
// with ref:), at any depth of embedding, in document order.
func (cp *CollectionPlan) References() []Reference {
	var out []Reference
	var prefix []string
	if cp.Bucket != nil {
		// A bucket page holds its root rows in the items array.
		prefix = []string{cp.Bucket.Items, "[]"}
	}
	WalkFields(cp.Root, func(f *FieldPlan, path []string) {
		if f.RefCollection == "" || (f.Kind != FieldColumn && f.Kind != FieldIds) {
			return
		}
		p := append(slices.Clone(prefix), path...)
		if f.Kind == FieldIds {
			p = append(p, "[]")
		}
		out = append(out, Reference{Path: p, Collection: f.RefCollection, Field: f})
	})
	return out
}

// DecimalField is a field a plan writes as BSON Decimal128 (see
// DecimalFields).
type DecimalField struct {
	// Collection is the target collection; Path the field's path in its
	// documents ("_id", "total", "lines[].price"; "<pivot>" for a field
	// named by the data).
	Collection, Path string
	// Pos is where the field is declared.
	Pos Pos
}

// DecimalFields lists the fields whose values plan writes as BSON
// Decimal128: NUMERIC columns, arrays of NUMERIC, and aggregates and sql
// fields of type NUMERIC, in numeric mode decimal (the default). A jsonb
// value's numbers beyond a double's precision are Decimal128 too, but
// which ones only the data says.
func (p *Plan) DecimalFields() []DecimalField {
	var out []DecimalField
	for _, cp := range p.Collections {
		for _, i := range cp.IDCols {
			if decimalColumn(cp.Root, i) {
				out = append(out, DecimalField{Collection: cp.Name, Path: "_id", Pos: cp.Pos})
				break
			}
		}
		decimalFields(cp, cp.Root, "", &out)
	}
	return out
}

func decimalFields(cp *CollectionPlan, n *Node, prefix string, out *[]DecimalField) {
	for i := range n.Fields {
		f := &n.Fields[i]
		name := f.Name
		if name == "" {
			name = "<pivot>"
		}
		path := prefix + name
		owner := n
		switch f.Kind {
		case FieldIds:
			owner = f.Embed
		case FieldAggregate:
			if decimalColumn(f.Embed, 0) {
				*out = append(*out, DecimalField{Collection: cp.Name, Path: path, Pos: f.Pos})
			}
			continue
		case FieldEmbed:
			sub := path + "."
			if !f.Embed.Object {
				sub = path + "[]."
			}
			decimalFields(cp, f.Embed, sub, out)
			continue
		case FieldColumn:
		default:
			continue
		}
		if f.Value.Lookup != nil {
			owner = f.Value.Lookup
		}
		if decimalColumn(owner, f.Value.Col) {
			*out = append(*out, DecimalField{Collection: cp.Name, Path: path, Pos: f.Pos})
		}
	}
}

// decimalColumn reports whether n's column i is NUMERIC (or an array of
// it) written in numeric mode decimal.
func decimalColumn(n *Node, i int) bool {
	if n == nil || i < 0 || i >= len(n.Columns) || i >= len(n.Numeric) {
		return false
	}
	c := n.Columns[i]
	return (c.TypeName == "numeric" || c.ElemTypeName == "numeric") && n.Numeric[i] == NumericDecimal
}
