package mappings

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr/vm"
)

// This file holds the compiled plan: what Resolve makes of a mapping file
// and a catalog, and what every other package reads. extract reads the
// tables, columns and joins the plan's nodes name, transform builds
// documents by following their fields, pipeline and report walk them (see
// walk.go).
//
// Contracts that hold for every plan Resolve returns:
//   - A plan is immutable once built and safe to share between goroutines.
//     Callers that need a variant (plan's sampling filter) copy the structs
//     they change; they never change a shared node.
//   - Every index into Columns (IDCols, OrderCol.Col, Value, Ref.Col,
//     ExprVar.Col, ParentCols) is valid for the node it refers to.
//   - A row of a node is a []any of len(Columns)+len(JoinKeyCols) values:
//     the node's Columns in order, then its JoinKeyCols. A root row has no
//     JoinKeyCols.
//
// Words used with one meaning each in the plan:
//   - stream order: the total order the root table is read in
//     (CollectionPlan.StreamOrder); a stream position is a tuple of its
//     values.
//   - id columns: the root columns that name a root row (IDCols), the
//     _id of a document collection.
//   - join key: the values that match a related row to its parent row
//     (JoinCols in the row, ParentCols in the parent, JoinKeyCols when they
//     are not among Columns).
//   - pivot: a field whose name comes from a column's value (the mapping
//     file's key:).
//   - lookup: a relation declared under lookups: (NodeLookup), at most one
//     row whose columns fields and expressions read; Ref.Lookup and
//     ExprVar.Lookup point at such nodes.

// Plan is a mapping resolved against the catalog: every table, column and
// join known, every field compiled.
type Plan struct {
	// File is the mapping file the plan was compiled from.
	File *File
	// Collections holds one plan per collection entry, in file order.
	// Several entries may write to one target collection (document types
	// told apart by a discriminator); see CollectionNames.
	Collections []*CollectionPlan
	// Indexes holds the indexes and shard key of each target collection,
	// in CollectionNames order: declared and default ones (index.go).
	Indexes []IndexSet
	// Notices are what Resolve found about the source that the user
	// should know though the mapping is valid (validate and plan show
	// them as warnings), in file order.
	Notices []Notice
}

// Notice is something true of the source that changes what a valid
// mapping reads: a table whose inheritance children are not read, an
// unqualified name that other schemas of the search_path also hold.
type Notice struct {
	File string
	// Pos is where the table is named; Collection the entry naming it.
	Pos        Pos
	Collection string
	// Rule names the kind of notice: "inheritance" or "search-path".
	Rule string
	// Table is the table concerned (Table.QualifiedName).
	Table      string
	Msg        string
	Suggestion string
}

// String is the notice as validate prints it: file:line:col: warning: ...
func (n Notice) String() string {
	return Problem{File: n.File, Pos: n.Pos, Msg: "warning: " + n.Msg + "; " + n.Suggestion}.String()
}

// CollectionPlan builds the documents of one collection entry. Several
// entries may share a target collection (document types told apart by a
// discriminator).
type CollectionPlan struct {
	// Name is the target collection.
	Name string
	// Pos is where the entry is declared.
	Pos Pos
	// Root reads the entry's root table: one root row per document, or,
	// for a bucket collection, one root row per bucket item.
	Root *Node
	// IDCols holds the indexes in Root.Columns of the _id columns, the
	// stream order of a document collection. For a bucket collection it
	// is the stream order's columns (see Bucket.StreamOrder), which name a
	// root row in messages; a page's _id is made from Bucket.By.
	IDCols []int
	// IDNames are the field names inside a composite _id (len(IDCols) > 1).
	IDNames []string
	// IDKeys are, for each of IDCols of a document collection, the index
	// in Root.Columns of the value PostgreSQL compares: the id column
	// itself, or a key column computed by PostgreSQL (Column.Canon) when
	// values equal to PostgreSQL may differ in bytes (numeric 1.0 and
	// 1.00). Empty for a bucket collection (see BucketPlan.ByKeys).
	IDKeys []int
	// IDPrefix, when set, makes _id the string IDPrefix followed by the
	// text of the IDKeys values (see transform.ID).
	IDPrefix string
	// Discriminator and DiscriminatorValue are set when the collection
	// holds several document types: each document has Discriminator =
	// DiscriminatorValue, and writes replace only documents of their type.
	Discriminator      string
	DiscriminatorValue any
	// Bucket is set for bucket collections.
	Bucket *BucketPlan
	// OnDelete says what sync does with a document whose root row is
	// gone (deleted, or no longer passing the root filter): delete it,
	// keep it (ignore), or keep it with Tombstone, a top-level field no
	// other field of the document takes, set to the time sync found it
	// gone (ondelete.go). The entries of a shared collection agree.
	OnDelete  OnDeleteMode
	Tombstone string
}

// StreamOrder returns the columns and directions the root table is
// streamed in: the id columns ascending, or a bucket collection's full
// order. It is a total order of the root rows (the columns form a unique
// key), so a stream position (the values of the last row read) resumes
// it exactly. The caller must not change the returned slice.
func (cp *CollectionPlan) StreamOrder() []OrderCol {
	if cp.Bucket != nil {
		return cp.Bucket.StreamOrder
	}
	out := make([]OrderCol, len(cp.IDCols))
	for i, c := range cp.IDCols {
		out[i] = OrderCol{Col: c}
	}
	return out
}

// BucketPlan describes the pages of a bucket collection: the root rows
// grouped by parent (By), cut into pages of Size items in stream order.
type BucketPlan struct {
	// By holds the indexes in Root.Columns of the parent key columns, and
	// ByNames their field names.
	By      []int
	ByNames []string
	// ByKeys are, for each of By, the index in Root.Columns of the value
	// PostgreSQL compares (see CollectionPlan.IDKeys): rows whose parent
	// keys are equal to PostgreSQL belong to one parent, and page ids are
	// made of these values.
	ByKeys []int
	// Size is the number of items of a full page.
	Size int
	// Items and Page name the array and page number fields.
	Items, Page string
	// SkipLast leaves out each parent's last SkipLast items (those the
	// parent document embeds itself).
	SkipLast int
	// StreamOrder is the root's stream order: By ascending, then the
	// bucket's orderBy, then the primary key; it is total, so pages are
	// deterministic.
	StreamOrder []OrderCol
}

// NodeKind tells how a node's rows are used.
type NodeKind int

const (
	// NodeRoot is a collection's root table.
	NodeRoot NodeKind = iota
	// NodeEmbed rows become embedded documents (an array or an object).
	NodeEmbed
	// NodeLookup gives at most one row whose columns fields use.
	NodeLookup
	// NodeIds rows become their Value column: an id array.
	NodeIds
	// NodeAggregate gives one row per parent: the aggregate's value.
	NodeAggregate
)

// Node is one table read for a collection: the root, an embedded relation,
// a lookup, an id array or an aggregate. Nodes form a tree from the
// collection's Root through Children; Parent points back up.
type Node struct {
	Kind NodeKind
	// Path names the node for messages: "people.contactDetails.type".
	Path string
	// Pos is where the node is declared in the mapping file.
	Pos   Pos
	Table *Table
	// Columns are the columns of Table read, in SELECT order. For an
	// aggregate it is one column: the aggregate's result.
	Columns []Column
	// Numeric says, per column, how NUMERIC values are written; it has
	// the length of Columns.
	Numeric []NumericMode
	// Filter is an SQL condition on Table's rows (alias-free text from the
	// mapping), empty for none.
	Filter string
	// FilterPos is where Filter is declared.
	FilterPos Pos
	// Through is the join table the rows are reached through, if any.
	Through *ThroughPlan
	// On is the join to the parent as the mapping declares it, by column
	// names: Column of Table (of Through's table when there is one),
	// Parent of the parent's table, compared by PostgreSQL's own =. The
	// builder matches by JoinCols and ParentCols instead; On is for
	// readers that let PostgreSQL join (verify's oracle, coverage).
	On []JoinPair
	// JoinKeyCols are the join key columns selected after Columns, when
	// the join key is not among Columns: the join table's columns
	// (Through) or an aggregate's group columns. Rows hold
	// len(Columns)+len(JoinKeyCols) values.
	JoinKeyCols []Column
	// JoinCols are the indexes in a row of its join key values, and
	// ParentCols the indexes in the parent's Columns they equal, pair by
	// pair. Both are empty for a root. Where PostgreSQL's = is not byte
	// equality of the values read (see joinkey.go), both point at key
	// columns computed by PostgreSQL (Column.Canon): a JoinKeyCols entry
	// of the row, a column added to the parent's Columns.
	JoinCols, ParentCols []int
	// ParamTypes are, pair by pair, the SQL types the text of a parent's
	// key values (the values at ParentCols) is cast to when the relation's
	// rows are fetched for given parents, so that PostgreSQL compares them
	// with the join columns by the join's own =.
	ParamTypes []string
	// keyExtra holds, pair by pair while resolving, the index in
	// JoinKeyCols of a key column JoinCols must point at once Columns is
	// complete, or -1.
	keyExtra []int
	// Order orders the rows of one parent (for a bucket root: the items of
	// one parent); readers break ties by the table's primary key.
	Order []OrderCol
	// Limit keeps the first Limit rows per parent (a subset, or 1 for a
	// lookup or object embed that picks the first row in Order); 0 keeps
	// them all.
	Limit int
	// Object: the relation gives at most one row, embedded as a document.
	Object bool
	// Value is the index in Columns of an id array's value. An id array
	// of composite keys (a link over a composite foreign key) has Values
	// instead: each item is a document of those columns named ValueNames,
	// the referenced collection's _id.
	Value      int
	Values     []int
	ValueNames []string
	// Agg describes an aggregate node.
	Agg *AggPlan
	// Parent is the enclosing node (nil for a root).
	Parent *Node
	// Children are the relations read for each row of this node, in
	// declaration order: embeds, lookups, id arrays and aggregates.
	Children []*Node
	// Fields are the fields of the (sub)document a row makes, in document
	// order (a root's _id excluded: it comes from CollectionPlan.ID). Only
	// roots and embeds have fields.
	Fields []FieldPlan
	// ExprEnv lists the columns and lookups expressions of this node read.
	ExprEnv []ExprVar
}

// IsLookup reports whether n is a lookup: it only feeds its parent's
// fields.
func (n *Node) IsLookup() bool { return n.Kind == NodeLookup }

// Depth is the number of nodes above n: 0 for a root.
func (n *Node) Depth() int {
	d := 0
	for p := n.Parent; p != nil; p = p.Parent {
		d++
	}
	return d
}

// ThroughPlan is a join table between a node's parent and its table.
type ThroughPlan struct {
	Table *Table
	// On pairs a column name of the node's table with one of the join
	// table: t.On[i][0] = j.On[i][1].
	On [][2]string
}

// AggPlan is an aggregate over related rows.
type AggPlan struct {
	// Fn is count, sum, min, max or avg.
	Fn string
	// Column is the column read (empty for count(*)).
	Column string
	// Zero: the aggregate over no rows is 0 (count, and sum of numbers
	// written as numbers: not money, written as its text), rather than
	// NULL (left out).
	Zero bool
}

// OrderCol orders rows by a column of Columns.
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
	// FieldIds writes the Value column of related rows as an array.
	FieldIds
	// FieldAggregate writes an aggregate over related rows.
	FieldAggregate
	// FieldExpr writes a computed value.
	FieldExpr
	// FieldConst writes a constant.
	FieldConst
)

// FieldPlan is one compiled field.
type FieldPlan struct {
	Kind FieldKind
	// Name is the field name; empty when Pivot names it.
	Name string
	// Value is the column written (FieldColumn).
	Value Ref
	// Pivot, when set, is the column whose value names the field.
	Pivot *Ref
	// Embed is the relation written (FieldEmbed, FieldIds, FieldAggregate);
	// it is one of the owning node's Children.
	Embed *Node
	// Program is the compiled expression (FieldExpr), and Source its text.
	// A Program is safe for concurrent runs (each with its own env).
	Program *vm.Program
	Source  string
	// Reads names the columns and lookups this expression reads (the
	// node's ExprEnv holds those of all its expressions), in name order.
	Reads []string
	// Const is the constant (FieldConst).
	Const any
	// RefCollection names the collection the values reference, if declared.
	RefCollection string
	// Pos is where the field is declared.
	Pos Pos
}

// Ref points to a column of the current row (Lookup nil) or of the row a
// lookup found (Lookup is then one of the row's node's Children).
type Ref struct {
	Lookup *Node
	Col    int
}

// ExprVar is one name an expression reads: a column of the row (Lookup
// nil), or a lookup whose columns it reads as name.column.
type ExprVar struct {
	Name   string
	Col    int
	Lookup *Node
	// Cols are the lookup's columns, by name.
	Cols map[string]int
}

// String describes the plan for debug output: each node's path and
// table, indented by depth.
func (p *Plan) String() string {
	var b strings.Builder
	for _, c := range p.Collections {
		Walk(c.Root, func(n *Node) bool {
			fmt.Fprintf(&b, "%s%s <- %s.%s (%d columns)\n", strings.Repeat("  ", n.Depth()), n.Path, n.Table.Schema, n.Table.Name, len(n.Columns))
			return true
		})
	}
	return b.String()
}

// OnDeleteOf returns the onDelete of target collection name, which its
// entries share: delete when the plan has no entry of that name.
func (p *Plan) OnDeleteOf(name string) (mode OnDeleteMode, tombstone string) {
	for _, cp := range p.Collections {
		if cp.Name == name {
			return cp.OnDelete, cp.Tombstone
		}
	}
	return OnDeleteDelete, ""
}
