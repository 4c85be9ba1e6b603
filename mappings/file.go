// Package mappings defines denorm's mapping file: the YAML format, its
// parser (every problem reported at once, each as file:line:col), the JSON
// Schema that checks its structure, the checks of its meaning, and Resolve,
// which checks a mapping against the live catalog and compiles it into the
// Plan that extract and transform execute (plan.go; walk.go, the one
// walker of its tree). It also holds the types every layer shares about
// the source: the Catalog and a table's activity (TableActivity), which
// extract reads and which plan's warnings and advise weigh.
//
// The package does no I/O besides reading the mapping file; the catalog is
// passed in by the caller.
package mappings

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// CurrentVersion is the mapping format version this build reads.
const CurrentVersion = 1

// Pos is a position in the mapping file, 1-based.
type Pos struct {
	Line, Col int
}

// positions records where each key of a YAML mapping and its value sit.
type positions struct {
	self Pos
	keys map[string]Pos
	vals map[string]Pos
}

func positionsOf(n *yaml.Node) positions {
	p := positions{self: Pos{n.Line, n.Column}, keys: map[string]Pos{}, vals: map[string]Pos{}}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p.keys[k.Value] = Pos{k.Line, k.Column}
			p.vals[k.Value] = Pos{v.Line, v.Column}
		}
	}
	return p
}

// at returns the position of key's value, or of the node itself when the
// key is absent.
func (p positions) at(key string) Pos {
	if v, ok := p.vals[key]; ok {
		return v
	}
	return p.self
}

// File is a parsed mapping file.
type File struct {
	Path    string
	Version int `yaml:"version"`
	// Numeric is the default for NUMERIC columns: decimal, double or string.
	Numeric NumericMode `yaml:"numeric"`
	// Char says whether char(n) values keep their blank padding: trim
	// (the default) or keep.
	Char CharMode `yaml:"char"`
	// Timestamp says how timestamp and timestamptz values are written:
	// date (BSON dates, milliseconds; the default) or string (ISO 8601
	// text with microseconds).
	Timestamp   TimestampMode `yaml:"timestamp"`
	Collections []*Collection `yaml:"collections"`
	// Links replace join tables by id arrays on one or both sides.
	Links []*Link `yaml:"links"`
	pos   positions
}

// UnmarshalYAML implements yaml.Unmarshaler to record positions.
func (f *File) UnmarshalYAML(n *yaml.Node) error {
	type plain File
	if err := n.Decode((*plain)(f)); err != nil {
		return err
	}
	f.pos = positionsOf(n)
	return nil
}

// Entity is what collections and relations share: rows of one table turned
// into (sub)documents.
type Entity struct {
	// Table is "table" or "schema.table", written as SQL writes a table
	// name (tablename.go).
	Table string `yaml:"table"`
	// Filter is an SQL boolean expression over the table's columns that rows
	// must satisfy.
	Filter string `yaml:"filter"`
	// Fields lists the document's fields in order; nil means ["*"].
	Fields []*Field `yaml:"fields"`
	// Lookups are many-to-one relations whose columns fields may use as
	// "name.column", as values or as keys.
	Lookups []*Relation `yaml:"lookups"`
	// Rename maps column names to field names for columns taken by "*" or
	// listed without a name.
	Rename map[string]string `yaml:"rename"`
	// Exclude lists columns "*" leaves out.
	Exclude []string `yaml:"exclude"`
}

// Collection is one target collection built from a root table.
type Collection struct {
	// Name is the target collection.
	Name   string `yaml:"name"`
	Entity `yaml:",inline"`
	// ID lists the columns whose values make _id; default: the primary key.
	// One column gives a scalar _id, several give an embedded document.
	ID StringList `yaml:"id"`
	// Discriminator names the constant field (a field with value:) that
	// tells the document types of a shared collection apart.
	Discriminator string `yaml:"discriminator"`
	// IDPrefix makes _id the string IDPrefix followed by the id's text,
	// so that document types sharing a collection never share an _id.
	IDPrefix string `yaml:"idPrefix"`
	// OnDelete says what sync does with a document whose root row is
	// gone (ondelete.go); nil: delete it.
	OnDelete *OnDelete `yaml:"onDelete"`
	// Bucket makes this a bucket collection: the table's rows grouped by
	// parent key and written in pages of a fixed size.
	Bucket *Bucket `yaml:"bucket"`
	// Indexes are the target collection's indexes besides the defaults
	// (index.go); ShardKey its shard key, set before the first write.
	Indexes  []*IndexSpec `yaml:"indexes"`
	ShardKey StringList   `yaml:"shardKey"`
	pos      positions
}

// Bucket describes a bucket collection: one document per page of Size
// rows of the same parent, {_id: "<parent>-<page>", <by>, page, <items>}.
type Bucket struct {
	// By lists the columns of the table holding the parent key.
	By StringList `yaml:"by"`
	// Size is the number of rows per page.
	Size int `yaml:"size"`
	// OrderBy orders each parent's rows (ties broken by the primary key).
	OrderBy StringList `yaml:"orderBy"`
	// Items names the array field holding a page's rows (default "items").
	Items string `yaml:"items"`
	// Page names the page number field (default "page"); pages count from 0.
	Page string `yaml:"page"`
	// SkipLast leaves out each parent's last SkipLast rows in OrderBy
	// order: the rows a subset embeds in the parent document.
	SkipLast int `yaml:"skipLast"`
	pos      positions
}

// UnmarshalYAML implements yaml.Unmarshaler to record positions.
func (b *Bucket) UnmarshalYAML(n *yaml.Node) error {
	type plain Bucket
	if err := n.Decode((*plain)(b)); err != nil {
		return err
	}
	b.pos = positionsOf(n)
	return nil
}

// Link replaces a join table (many-to-many) by id arrays: each side's
// collection gets a field holding the ids of the rows of the other side.
type Link struct {
	// Table is the join table; it is not copied.
	Table string      `yaml:"table"`
	Sides []*LinkSide `yaml:"sides"`
	pos   positions
}

// UnmarshalYAML implements yaml.Unmarshaler to record positions.
func (l *Link) UnmarshalYAML(n *yaml.Node) error {
	type plain Link
	if err := n.Decode((*plain)(l)); err != nil {
		return err
	}
	l.pos = positionsOf(n)
	return nil
}

// LinkSide is one side of a link.
type LinkSide struct {
	// Collection gets the id array.
	Collection string `yaml:"collection"`
	// Column is the join table's column (or columns, for a composite key)
	// referencing that collection's root table; default: the one foreign
	// key of the join table to it.
	Column StringList `yaml:"column"`
	// Field names the id array (default: the other side's collection name).
	Field string `yaml:"field"`
	pos   positions
}

// UnmarshalYAML implements yaml.Unmarshaler to record positions.
func (l *LinkSide) UnmarshalYAML(n *yaml.Node) error {
	type plain LinkSide
	if err := n.Decode((*plain)(l)); err != nil {
		return err
	}
	l.pos = positionsOf(n)
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler to record positions.
func (c *Collection) UnmarshalYAML(n *yaml.Node) error {
	type plain Collection
	if err := n.Decode((*plain)(c)); err != nil {
		return err
	}
	c.pos = positionsOf(n)
	return nil
}

// Relation is a related table: embedded rows, a lookup, an id array or an
// aggregate.
type Relation struct {
	// Name names a lookup (fields refer to "name.column"); unused for embeds.
	Name   string `yaml:"name"`
	Entity `yaml:",inline"`
	// Join pairs columns of this relation's table (keys) with columns of the
	// enclosing entity's table (values): {person_id: id}.
	Join JoinSpec `yaml:"join"`
	// As is "array" (default for embeds) or "object" (at most one row).
	As string `yaml:"as"`
	// OrderBy lists "column" or "column desc" entries ordering an array.
	OrderBy StringList `yaml:"orderBy"`
	// Limit keeps only the first Limit rows in OrderBy order (a subset).
	Limit int `yaml:"limit"`
	// Through reaches the table through a join table: Through.Join pairs
	// the join table's columns with the enclosing table's, and Join pairs
	// this table's columns with the join table's.
	Through *Through `yaml:"through"`
	// Column is the value of an id array (default: the single-column
	// primary key) or the column an aggregate reads.
	Column string `yaml:"column"`
	// Fn is an aggregate's function: count, sum, min, max or avg.
	Fn string `yaml:"fn"`
	// values are the value columns of an id array of composite keys (a
	// link's, see Node.Values).
	values []string
	// order names the columns ordering an id array that Resolve orders
	// itself (a link's values, an id array's value by default), as they
	// are: a name may hold blanks, which an orderBy entry cannot.
	order []string
	pos   positions
}

// Through is the join table a relation is reached through.
type Through struct {
	Table string   `yaml:"table"`
	Join  JoinSpec `yaml:"join"`
	pos   positions
}

// UnmarshalYAML implements yaml.Unmarshaler to record positions.
func (t *Through) UnmarshalYAML(n *yaml.Node) error {
	type plain Through
	if err := n.Decode((*plain)(t)); err != nil {
		return err
	}
	t.pos = positionsOf(n)
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler to record positions.
func (r *Relation) UnmarshalYAML(n *yaml.Node) error {
	type plain Relation
	if err := n.Decode((*plain)(r)); err != nil {
		return err
	}
	r.pos = positionsOf(n)
	return nil
}

// Field is one field of a document. Exactly one source must be set:
// Column, Embed, Ids, Aggregate, Expr, SQL, Value or Link; Key makes the field's
// name come from the data (a pivot).
type Field struct {
	// Name is the field name; default: the column name in camelCase.
	Name string `yaml:"name"`
	// Column is "column" or "lookup.column".
	Column string `yaml:"column"`
	// Key is "column" or "lookup.column" whose value names the field.
	Key string `yaml:"key"`
	// Embed embeds related rows as an array or an object.
	Embed *Relation `yaml:"embed"`
	// Ids writes the key (or Column) of each related row: an id array.
	Ids *Relation `yaml:"ids"`
	// Aggregate writes count/sum/min/max/avg over related rows.
	Aggregate *Relation `yaml:"aggregate"`
	// Expr computes the value from the row's columns (expr-lang syntax).
	Expr string `yaml:"expr"`
	// Value is a constant (string, number or boolean).
	Value *Const `yaml:"value"`
	// Link places the id array of a link (named by its join table) here.
	Link string `yaml:"link"`
	// SQL computes the value in PostgreSQL: an SQL expression over the
	// row's own columns (see sqlexpr.go), read-only.
	SQL string `yaml:"sql"`
	// Ref names the collection this field's values reference (weak link),
	// for dangling-reference reports.
	Ref string `yaml:"ref"`
	// Numeric overrides the file's numeric mode for this column.
	Numeric NumericMode `yaml:"numeric"`
	// Char overrides the file's char mode for this column.
	Char CharMode `yaml:"char"`
	// Timestamp overrides the file's timestamp mode for this column (or
	// aggregate).
	Timestamp TimestampMode `yaml:"timestamp"`
	// All is set for the "*" entry.
	All bool `yaml:"-"`
	pos positions
}

// UnmarshalYAML accepts "column", "*" or a mapping.
func (f *Field) UnmarshalYAML(n *yaml.Node) error {
	f.pos = positionsOf(n)
	if n.Kind == yaml.ScalarNode {
		if n.Value == "*" {
			f.All = true
		} else {
			f.Column = n.Value
		}
		return nil
	}
	type plain Field
	return n.Decode((*plain)(f))
}

// Const is a constant field value from the mapping file.
type Const struct {
	// V is a string, int32, int64, float64 or bool.
	V any
}

// UnmarshalYAML decodes a scalar, keeping integers as int32 when they fit.
func (c *Const) UnmarshalYAML(n *yaml.Node) error {
	v, err := instanceOf(n, "", map[string]*yaml.Node{})
	if err != nil {
		return err
	}
	switch x := v.(type) {
	case int64:
		if x >= -1<<31 && x < 1<<31 {
			c.V = int32(x)
		} else {
			c.V = x
		}
	case string, float64, bool:
		c.V = x
	default:
		return fmt.Errorf("value must be a string, a number or a boolean")
	}
	return nil
}

// StringList accepts one string or a list of strings.
type StringList []string

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *StringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = StringList{n.Value}
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return err
	}
	*s = l
	return nil
}

// JoinPair is one column pair of a join.
type JoinPair struct {
	// Column is in the relation's table; Parent in the enclosing entity's.
	Column, Parent string
}

// JoinSpec is an ordered list of join pairs, written as a YAML mapping.
type JoinSpec []JoinPair

// UnmarshalYAML implements yaml.Unmarshaler keeping the mapping's order.
func (j *JoinSpec) UnmarshalYAML(n *yaml.Node) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		*j = append(*j, JoinPair{Column: n.Content[i].Value, Parent: n.Content[i+1].Value})
	}
	return nil
}

// ItemsField is the name of a page's array field.
func (b *Bucket) ItemsField() string {
	if b.Items == "" {
		return "items"
	}
	return b.Items
}

// PageField is the name of the page number field.
func (b *Bucket) PageField() string {
	if b.Page == "" {
		return "page"
	}
	return b.Page
}

// CollectionNames lists the target collections the file declares, each
// once (a shared collection has several entries), in file order.
func (f *File) CollectionNames() []string {
	var names []string
	for _, c := range f.Collections {
		if c != nil && !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	return names
}

// eachRelation calls fn for every relation declared under e, at any
// depth, each before the relations under it.
func (e *Entity) eachRelation(fn func(*Relation)) {
	for _, l := range e.Lookups {
		fn(l)
		l.eachRelation(fn)
	}
	for _, fd := range e.Fields {
		for _, r := range []*Relation{fd.Embed, fd.Ids, fd.Aggregate} {
			if r != nil {
				fn(r)
				r.eachRelation(fn)
			}
		}
	}
}

// Relations is the number of relations (embeds, lookups, id arrays,
// aggregates) declared in c at any depth.
func (c *Collection) Relations() int {
	n := 0
	c.eachRelation(func(*Relation) { n++ })
	return n
}

// Tables lists every table name the file writes (as written, each once),
// for catalog introspection, which resolves them (see Catalog.Names).
func (f *File) Tables() []string {
	var out []string
	add := func(t string) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	entity := func(e *Entity) {
		if e.Table != "" {
			add(e.Table)
		}
	}
	for _, c := range f.Collections {
		entity(&c.Entity)
		c.eachRelation(func(r *Relation) {
			if r.Through != nil {
				add(r.Through.Table)
			}
			entity(&r.Entity)
		})
	}
	for _, l := range f.Links {
		add(l.Table)
	}
	return out
}
