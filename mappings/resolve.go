package mappings

import (
	"fmt"
	"slices"
	"strings"
)

// Plan is a mapping resolved against the catalog: every table, column and
// join known, every field compiled. extract reads what the plan's nodes
// name; transform builds documents following their fields. Plans are
// immutable once built and safe to share between goroutines.
type Plan struct {
	File        *File
	Collections []*CollectionPlan
}

// CollectionPlan builds one target collection.
type CollectionPlan struct {
	Name string
	Root *Node
	// ID holds the indexes in Root.Columns of the _id columns; the root
	// table is read in this key order.
	ID []int
	// IDNames are the field names inside a composite _id (len(ID) > 1).
	IDNames []string
}

// Node is one table read for a collection: the root, an embedded relation
// or a lookup.
type Node struct {
	// Path names the node for messages: "people.contactDetails.type".
	Path string
	// Pos is where the node is declared in the mapping file.
	Pos   Pos
	Table *Table
	// Columns are the columns read, in SELECT order.
	Columns []Column
	// Numeric says, per column, how NUMERIC values are written.
	Numeric []NumericMode
	Filter  string
	// JoinCols are indexes in Columns of this node's join columns, and
	// ParentCols the indexes in the parent's Columns they equal.
	JoinCols, ParentCols []int
	Order                []OrderCol
	Limit                int
	// Object: the relation gives at most one row, embedded as a document.
	Object bool
	// Lookup: the rows only feed the parent's fields.
	Lookup   bool
	Parent   *Node
	Children []*Node
	Fields   []FieldPlan
}

// OrderCol orders a relation's rows.
type OrderCol struct {
	Col  int
	Desc bool
}

// FieldKind tells what a compiled field does.
type FieldKind int

const (
	// FieldColumn writes a column value (of the row or of a lookup).
	FieldColumn FieldKind = iota
	// FieldEmbed writes related rows as an array or a document.
	FieldEmbed
)

// FieldPlan is one compiled field.
type FieldPlan struct {
	Kind FieldKind
	// Name is the field name; empty when Key names it.
	Name string
	// Value is the column written (FieldColumn).
	Value Ref
	// Key, when set, is the column whose value names the field (a pivot).
	Key *Ref
	// Embed is the relation written (FieldEmbed).
	Embed *Node
}

// Ref points to a column of the current row (Lookup nil) or of the row a
// lookup found.
type Ref struct {
	Lookup *Node
	Col    int
}

// Tables lists the qualified names of every table the file mentions, for
// catalog introspection.
func (f *File) Tables() []string {
	var out []string
	add := func(t string) {
		q := QualifiedName(t)
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	var entity func(e *Entity)
	entity = func(e *Entity) {
		add(e.Table)
		for _, l := range e.Lookups {
			entity(&l.Entity)
		}
		for _, fd := range e.Fields {
			if fd.Embed != nil {
				entity(&fd.Embed.Entity)
			}
		}
	}
	for _, c := range f.Collections {
		entity(&c.Entity)
	}
	return out
}

// Resolve checks the file against the catalog and compiles the plan. It
// reports every problem found, as Problems.
func Resolve(f *File, cat *Catalog) (*Plan, error) {
	r := resolver{checker: checker{file: f.Path}, file: f, cat: cat}
	plan := &Plan{File: f}
	for _, c := range f.Collections {
		if cp := r.collection(c); cp != nil {
			plan.Collections = append(plan.Collections, cp)
		}
	}
	if len(r.ps) > 0 {
		return nil, r.ps.sorted()
	}
	return plan, nil
}

type resolver struct {
	checker
	file *File
	cat  *Catalog
}

func (r *resolver) table(name string, p Pos) *Table {
	t := r.cat.Table(name)
	if t == nil {
		r.add(p, "table %q does not exist in the source database", name)
	}
	return t
}

func (r *resolver) collection(c *Collection) *CollectionPlan {
	t := r.table(c.Table, c.pos.at("table"))
	if t == nil {
		return nil
	}
	n := &Node{Path: c.Name, Pos: c.pos.self, Table: t, Filter: c.Filter}
	cp := &CollectionPlan{Name: c.Name, Root: n}
	idCols := []string(c.ID)
	if len(idCols) == 0 {
		idCols = t.PrimaryKey
		if len(idCols) == 0 {
			r.add(c.pos.at("table"), "%s: table %q has no primary key; set id to columns that are unique and not null", c.Name, c.Table)
			return nil
		}
	} else {
		ok := true
		for _, col := range idCols {
			if t.Column(col) == nil {
				r.add(c.pos.at("id"), "%s: table %q has no column %q", c.Name, c.Table, col)
				ok = false
			}
		}
		if !ok {
			return nil
		}
		if !isUniqueKey(t, idCols) {
			r.add(c.pos.at("id"), "%s: id columns (%s) are not a primary key or a unique key of NOT NULL columns of %q, so _id would not be unique", c.Name, strings.Join(idCols, ", "), c.Table)
		}
	}
	for _, col := range idCols {
		i := r.need(n, col)
		cp.ID = append(cp.ID, i)
		cp.IDNames = append(cp.IDNames, fieldName(&c.Entity, col))
	}
	r.entity(n, &c.Entity, c.pos, idCols)
	return cp
}

// need returns the index of column col in n.Columns, adding it.
func (r *resolver) need(n *Node, col string) int {
	for i, c := range n.Columns {
		if c.Name == col {
			return i
		}
	}
	c := n.Table.Column(col)
	if c == nil {
		return -1
	}
	n.Columns = append(n.Columns, *c)
	n.Numeric = append(n.Numeric, r.file.Numeric)
	return len(n.Columns) - 1
}

func fieldName(e *Entity, col string) string {
	if to, ok := e.Rename[col]; ok {
		return to
	}
	return CamelCase(col)
}

func isUniqueKey(t *Table, cols []string) bool {
	covers := func(key []string) bool {
		if len(key) == 0 {
			return false
		}
		for _, k := range key {
			if !slices.Contains(cols, k) {
				return false
			}
		}
		return true
	}
	if covers(t.PrimaryKey) {
		return true
	}
	for _, u := range t.Unique {
		if covers(u) {
			return true
		}
	}
	return false
}

// entity compiles fields and lookups of n; skip lists columns "*" leaves out
// (the _id columns of a root, the join columns of a relation).
func (r *resolver) entity(n *Node, e *Entity, pos positions, skip []string) {
	where := n.Path
	t := n.Table
	for col := range e.Rename {
		if t.Column(col) == nil {
			r.add(pos.at("rename"), "%s: rename: table %q has no column %q", where, t.Name, col)
		}
	}
	for _, col := range e.Exclude {
		if t.Column(col) == nil {
			r.add(pos.at("exclude"), "%s: exclude: table %q has no column %q", where, t.Name, col)
		}
	}
	lookups := map[string]*Node{}
	for _, l := range e.Lookups {
		ln := r.relation(n, l, where+"."+l.Name)
		if ln != nil {
			ln.Lookup, ln.Object = true, true
			lookups[l.Name] = ln
		}
	}
	ref := func(s string, p Pos) (Ref, bool) {
		if i := strings.IndexByte(s, '.'); i >= 0 {
			ln := lookups[s[:i]]
			if ln == nil {
				return Ref{}, false // reported by check, or the lookup failed to resolve
			}
			c := r.need(ln, s[i+1:])
			if c < 0 {
				r.add(p, "%s: lookup %q (table %q) has no column %q", where, s[:i], ln.Table.Name, s[i+1:])
				return Ref{}, false
			}
			return Ref{Lookup: ln, Col: c}, true
		}
		c := r.need(n, s)
		if c < 0 {
			r.add(p, "%s: table %q has no column %q", where, t.Name, s)
			return Ref{}, false
		}
		return Ref{Col: c}, true
	}
	fields := e.Fields
	if fields == nil {
		fields = []*Field{{All: true, pos: pos}}
	}
	listed := map[string]bool{}
	for _, fd := range fields {
		if fd.Column != "" && !strings.Contains(fd.Column, ".") {
			listed[fd.Column] = true
		}
	}
	names := map[string]Pos{}
	addField := func(fp FieldPlan, p Pos) {
		if fp.Name != "" {
			if prev, dup := names[fp.Name]; dup {
				r.add(p, "%s: field %q is already defined at line %d", where, fp.Name, prev.Line)
			}
			names[fp.Name] = p
		}
		n.Fields = append(n.Fields, fp)
	}
	if n.Parent == nil {
		names["_id"] = pos.self
	}
	for _, fd := range fields {
		switch {
		case fd.All:
			for _, c := range t.Columns {
				if listed[c.Name] || slices.Contains(skip, c.Name) || slices.Contains(e.Exclude, c.Name) {
					continue
				}
				i := r.need(n, c.Name)
				addField(FieldPlan{Kind: FieldColumn, Name: fieldName(e, c.Name), Value: Ref{Col: i}}, fd.pos.self)
			}
		case fd.Embed != nil:
			en := r.relation(n, fd.Embed, where+"."+fd.Name)
			if en != nil {
				addField(FieldPlan{Kind: FieldEmbed, Name: fd.Name, Embed: en}, fd.pos.self)
			}
		case fd.Column != "":
			v, ok := ref(fd.Column, fd.pos.at("column"))
			if !ok {
				continue
			}
			if fd.Numeric != "" {
				owner := n
				if v.Lookup != nil {
					owner = v.Lookup
				}
				owner.Numeric[v.Col] = fd.Numeric
			}
			fp := FieldPlan{Kind: FieldColumn, Name: fd.Name, Value: v}
			if fd.Key != "" {
				k, ok := ref(fd.Key, fd.pos.at("key"))
				if !ok {
					continue
				}
				fp.Key = &k
			} else if fp.Name == "" {
				col := fd.Column
				if i := strings.IndexByte(col, '.'); i >= 0 {
					col = col[i+1:]
				}
				fp.Name = fieldName(e, col)
			}
			addField(fp, fd.pos.self)
		}
	}
}

// relation resolves an embed or lookup of parent.
func (r *resolver) relation(parent *Node, rel *Relation, path string) *Node {
	t := r.table(rel.Table, rel.pos.at("table"))
	if t == nil {
		return nil
	}
	n := &Node{Path: path, Pos: rel.pos.self, Table: t, Filter: rel.Filter, Parent: parent, Limit: rel.Limit, Object: rel.As == "object"}
	ok := true
	var joinCols []string
	for _, j := range rel.Join {
		c := r.need(n, j.Column)
		if c < 0 {
			r.add(rel.pos.at("join"), "%s: join: table %q has no column %q", path, t.Name, j.Column)
			ok = false
		}
		p := r.need(parent, j.Parent)
		if p < 0 {
			r.add(rel.pos.at("join"), "%s: join: table %q has no column %q", path, parent.Table.Name, j.Parent)
			ok = false
		}
		if c >= 0 && p >= 0 {
			a, b := n.Columns[c], parent.Columns[p]
			if !comparable(a, b) {
				r.add(rel.pos.at("join"), "%s: join: %s.%s (%s) and %s.%s (%s) have incompatible types", path, t.Name, a.Name, a.Type, parent.Table.Name, b.Name, b.Type)
				ok = false
			}
		}
		n.JoinCols = append(n.JoinCols, c)
		n.ParentCols = append(n.ParentCols, p)
		joinCols = append(joinCols, j.Column)
	}
	if ok && (n.Object || rel.Name != "") && !isUniqueKey(t, joinCols) && rel.Limit == 0 {
		r.add(rel.pos.at("join"), "%s: join columns (%s) are not a unique key of %q, so several rows may match; use an array embed, or join on a unique key", path, strings.Join(joinCols, ", "), t.Name)
	}
	for _, o := range rel.OrderBy {
		col, desc, err := parseOrder(o)
		if err != nil {
			continue // reported by check
		}
		c := r.need(n, col)
		if c < 0 {
			r.add(rel.pos.at("orderBy"), "%s: orderBy: table %q has no column %q", path, t.Name, col)
			continue
		}
		n.Order = append(n.Order, OrderCol{Col: c, Desc: desc})
	}
	if !ok {
		return nil
	}
	parent.Children = append(parent.Children, n)
	r.entity(n, &rel.Entity, rel.pos, joinCols)
	return n
}

// comparable reports whether two columns can be joined: same category
// (numbers with numbers, strings with strings) or the same type.
func comparable(a, b Column) bool {
	return a.TypeName == b.TypeName || (a.Category == b.Category && a.Category != "U" && a.Category != "A")
}

// String describes the plan for debug output.
func (p *Plan) String() string {
	var b strings.Builder
	var node func(n *Node, depth int)
	node = func(n *Node, depth int) {
		fmt.Fprintf(&b, "%s%s <- %s.%s (%d columns)\n", strings.Repeat("  ", depth), n.Path, n.Table.Schema, n.Table.Name, len(n.Columns))
		for _, c := range n.Children {
			node(c, depth+1)
		}
	}
	for _, c := range p.Collections {
		node(c.Root, 0)
	}
	return b.String()
}
