package oracle

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/vm"

	"github.com/denorm/denorm/mappings"
)

// Query is one collection entry compiled into one SQL statement that has
// PostgreSQL build the entry's documents as JSON.
type Query struct {
	// Entry is the collection entry compiled.
	Entry *mappings.CollectionPlan
	// SQL returns one row per document, two text columns: the source row's
	// name and the document as JSON. For a bucket collection it returns one
	// row per item, in stream order, four columns: the source row's name,
	// the parent key's text, the parent's key values as a JSON array and
	// the item as JSON; the oracle cuts the pages itself (Pages).
	SQL string
	// Unchecked lists the fields whose value the oracle does not compute
	// independently of the builder.
	Unchecked []Unchecked
	// Parts is the number of parts the entry was split into (Options.Parts,
	// or 1 when it could not be split).
	Parts int

	doc    *docShape
	bucket *bucketShape
}

// Unchecked is a field the oracle cannot check independently, and why.
type Unchecked struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// docShape says what the JSON of one (sub)document holds, field by field,
// in order. PostgreSQL builds it as an array of the field values in
// document order, each marked with its name in a comment
// (json_build_array keeps the order; it costs PostgreSQL about a third
// less than json_build_object, and the names are the oracle's to know),
// and the reader walks the fields by position. A document of more than
// maxValues fields is an array of such arrays (json_build_array takes at
// most 100 arguments).
type docShape struct {
	fields []*fieldShape
}

// maxValues is the most values one json_build_array call takes.
const maxValues = 100

type fieldKind int

const (
	fColumn fieldKind = iota
	fArray            // embedded array of documents (sub)
	fObject           // embedded document (sub)
	fIds              // array of values (vt)
	fIdDocs           // array of documents of composite ids (sub)
	fAggregate
	fExpr
	fConst
	fPrefixID // _id: prefix + key text
)

type fieldShape struct {
	kind fieldKind
	name string
	// path names the field in messages: "people.addresses.city".
	path string
	// pivot: the value is [name value, field value]; pivotType is the
	// type of the name's value.
	pivot     bool
	pivotType valueType
	vt        valueType
	sub       *docShape
	// zero is an aggregate's value over no rows (nil: left out).
	zero any
	// docID: the field is a document's _id, kept even when NULL (an
	// embedded object's field named _id is a field as any other: left
	// out when NULL).
	docID bool
	// An expression: its program and the variables it reads.
	prog   *vm.Program
	source string
	env    []envVar
	konst  any
	prefix string
}

// envVar is one name an expression reads: a column, or a lookup's row as
// an object of its columns.
type envVar struct {
	name   string
	vt     valueType
	lookup bool
	cols   []envCol
}

type envCol struct {
	name string
	vt   valueType
}

// bucketShape is how a bucket collection's rows become pages.
type bucketShape struct {
	by       []*fieldShape
	size     int
	skipLast int
	items    string
	page     string
}

// Options tune the compiled statements.
type Options struct {
	// SampleRoots, when positive, has each statement build the documents of
	// that many root rows chosen at random (of a bucket collection: that
	// many parents, all their pages), not all of them.
	SampleRoots int
	// Bounds, when set, has the statement build one part of an entry's
	// documents: those whose root's first key column (a bucket
	// collection: its parent key) lies in [Bounds[Part-1], Bounds[Part])
	// (the first part from the lowest, the last to the highest, NULLs
	// with it), for several connections to build the parts at once. The
	// bounds are values of that column as text, ascending, as SplitSQL's
	// statement gives them. An entry that cannot be split so (SplitSQL
	// returns "") is compiled whole: Query.Parts says which.
	Bounds []string
	Part   int
}

// Compile compiles every collection entry of plan.
func Compile(plan *mappings.Plan, opt Options) ([]*Query, error) {
	out := make([]*Query, 0, len(plan.Collections))
	for _, cp := range plan.Collections {
		q, err := CompileEntry(cp, opt)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// CompileEntry compiles one collection entry.
func CompileEntry(cp *mappings.CollectionPlan, opt Options) (q *Query, err error) {
	c := &compiler{}
	if len(opt.Bounds) > 0 && opt.SampleRoots == 0 {
		c.split = splitPlan(cp, opt.Bounds, opt.Part)
	}
	defer func() {
		if r := recover(); r != nil {
			ce, ok := r.(compileError)
			if !ok {
				panic(r)
			}
			q, err = nil, ce
		}
	}()
	q = &Query{Entry: cp}
	root := c.source(cp.Root)
	q.Parts = 1
	if opt.SampleRoots > 0 {
		root.where = sampleCond(cp, opt.SampleRoots)
	}
	if c.split != nil {
		root.where = c.split.cond("t."+quoteIdent(c.split.col), true)
		q.Parts = len(opt.Bounds) + 1
	}
	if cp.Bucket != nil {
		q.SQL, q.bucket, q.doc = c.bucketQuery(cp, root)
	} else {
		q.SQL, q.doc = c.docQuery(cp, root)
	}
	q.Unchecked = c.unchecked
	return q, nil
}

type compileError struct{ msg string }

func (e compileError) Error() string { return "oracle: " + e.msg }

func fail(format string, args ...any) { panic(compileError{fmt.Sprintf(format, args...)}) }

type compiler struct {
	aliases   int
	unchecked []Unchecked
	split     *split
}

// split is how a statement builds one part of an entry's documents: the
// root rows whose first key column (col) lies in the part's range, and
// the rows of the root's relations joined on that column (of the same
// type and collation, so that values equal to PostgreSQL fall in one
// range) filtered by the same range of their own join column, so that no
// part aggregates another's. Ranges keep PostgreSQL's estimates and
// index range scans (a hash of the column would not).
type split struct {
	col        string
	typ        string // the column's SQL type, for the bounds' literals
	lo, hi     string // the part's bounds; "" for none
	first, end bool
}

// cond is the condition keeping the part's rows on ref, a column inside a
// row source; root: the root's rows, of which the last part also keeps
// those with a NULL key (a relation's rows with a NULL key join nothing).
func (sp *split) cond(ref string, root bool) string {
	var cs []string
	if !sp.first {
		cs = append(cs, fmt.Sprintf("%s >= %s::%s", ref, quoteLiteral(sp.lo), sp.typ))
	}
	if !sp.end {
		cs = append(cs, fmt.Sprintf("%s < %s::%s", ref, quoteLiteral(sp.hi), sp.typ))
	}
	c := strings.Join(cs, " AND ")
	if root && sp.end {
		c = "(" + c + " OR " + ref + " IS NULL)"
	}
	return c
}

// splitColumn is the root column an entry splits on: the first id column
// (a bucket collection: the first parent key column), when its type has
// an order consistent with its = (integers, numeric, text under a
// deterministic collation, char, uuid, dates and timestamps).
func splitColumn(cp *mappings.CollectionPlan) *mappings.Column {
	cols := cp.IDCols
	if cp.Bucket != nil {
		cols = cp.Bucket.By
	}
	if len(cols) == 0 {
		return nil
	}
	col := cp.Root.Columns[cols[0]]
	c := cp.Root.Table.Column(col.Name)
	if c == nil || col.SQL != "" || isArray(*c) || c.NonDeterministic {
		return nil
	}
	switch c.TypeName {
	case "int2", "int4", "int8", "numeric", "text", "varchar", "bpchar", "uuid", "date", "timestamp", "timestamptz":
		return c
	}
	return nil
}

// SplitSQL is the statement giving, one a row as text, the bounds that cut
// entry cp's documents into parts of about equal numbers of root rows
// (Options.Bounds), or "" when the entry cannot be split (splitPlan).
func SplitSQL(cp *mappings.CollectionPlan, parts int) string {
	if parts < 2 || splitPlan(cp, []string{""}, 0) == nil {
		return ""
	}
	col := splitColumn(cp)
	fr := make([]string, parts-1)
	for i := range fr {
		fr[i] = fmt.Sprintf("%g", float64(i+1)/float64(parts))
	}
	where := "t." + quoteIdent(col.Name) + " IS NOT NULL"
	if cp.Root.Filter != "" {
		where += " AND (" + cp.Root.Filter + ")"
	}
	return fmt.Sprintf("SELECT DISTINCT u.b::pg_catalog.text AS bound, u.b AS v FROM pg_catalog.unnest((SELECT pg_catalog.percentile_disc(ARRAY[%s]) WITHIN GROUP (ORDER BY t.%s) FROM %s AS t WHERE %s)) AS u(b) ORDER BY v",
		strings.Join(fr, ", "), quoteIdent(col.Name), only(cp.Root.Table), where)
}

// splitPlan is how entry cp's part part of len(bounds)+1 is cut, or nil
// when the entry does not split: it needs a split column (splitColumn),
// and every relation must either be joined to the root on that column
// (filtered by the same range), be a lookup or object embed on a unique
// key of one type (a plain join), or be an identity-grouped relation of
// the root (grouped over the root's own rows, filtered by the range).
// Anything deeper would be aggregated whole by every part.
func splitPlan(cp *mappings.CollectionPlan, bounds []string, part int) *split {
	col := splitColumn(cp)
	if col == nil {
		return nil
	}
	sp := &split{col: col.Name, typ: col.Type, first: part == 0, end: part == len(bounds)}
	if !sp.first {
		sp.lo = bounds[part-1]
	}
	if !sp.end {
		sp.hi = bounds[part]
	}
	ok := true
	mappings.Walk(cp.Root, func(n *mappings.Node) bool {
		if n.Parent == nil || !ok {
			return ok
		}
		unique := n.Object && n.Limit == 0 && n.Through == nil && sameKeyTypes(n, n.Parent)
		switch {
		case unique:
		case n.Parent.Parent == nil && sp.pushable(n) != "":
		case n.Parent.Parent == nil && !sameKeyTypes(n, n.Parent) && identity(n.Parent, cp) != nil:
		default:
			ok = false
		}
		return ok
	})
	if !ok {
		return nil
	}
	return sp
}

// pushable is the column of relation n (of its join table, with one)
// joined to the split column, when the join is keyed (one type on both
// sides), or "".
func (sp *split) pushable(n *mappings.Node) string {
	if !sameKeyTypes(n, n.Parent) {
		return ""
	}
	for _, p := range n.On {
		if p.Parent == sp.col {
			return p.Column
		}
	}
	return ""
}

func (c *compiler) alias(prefix string) string {
	c.aliases++
	return prefix + strconv.Itoa(c.aliases)
}

// rowSource is the rows of one node: a subquery over the node's table
// (joined to its join table, if any) that applies the node's filter and
// selects, under short names, only what the rest of the query uses. Its
// select list grows while the query is compiled; it is rendered last.
type rowSource struct {
	alias string
	n     *mappings.Node
	items []string
	names map[string]string
	// plain: the table's rows alone (no join table, no filter), to find
	// the rows a relation's rows join by the mapping's join.
	plain bool
	// where is one more condition on the rows (a sample).
	where string
	// fence keeps PostgreSQL from pulling the subquery up (OFFSET 0):
	// its sql: fields are computed on the rows its conditions keep, not
	// below an outer join on every row of the table (reachedOnly).
	fence bool
}

func (c *compiler) source(n *mappings.Node) *rowSource {
	return &rowSource{alias: c.alias("r"), n: n, names: map[string]string{}}
}

func (s *rowSource) add(key, expr, prefix string) string {
	if name, ok := s.names[key]; ok {
		return s.alias + "." + name
	}
	name := prefix + strconv.Itoa(len(s.items)+1)
	s.items = append(s.items, expr+" AS "+name)
	s.names[key] = name
	return s.alias + "." + name
}

// col is the reference of a column of the node's table.
func (s *rowSource) col(name string) string {
	if s.n.Table.Column(name) == nil {
		fail("%s: table %s has no column %q", s.n.Path, tableRef(s.n.Table), name)
	}
	return s.add("c:"+name, "t."+quoteIdent(name), "c")
}

// through is the reference of a column of the node's join table.
func (s *rowSource) through(name string) string {
	return s.add("j:"+name, "j."+quoteIdent(name), "k")
}

// sql is the reference of an sql: field's value, computed over the row.
func (s *rowSource) sql(expr string) string {
	return s.add("s:"+expr, "("+expr+")", "s")
}

// column is the reference of plan column col of the node: a column of the
// table, or an sql: field.
func (s *rowSource) column(col mappings.Column) string {
	if col.SQL != "" {
		return s.sql(col.SQL)
	}
	return s.col(col.Name)
}

func (s *rowSource) render() string {
	items := s.items
	if len(items) == 0 {
		items = []string{"1 AS one"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "(SELECT %s FROM %s AS t", strings.Join(items, ", "), only(s.n.Table))
	if th := s.n.Through; th != nil && !s.plain {
		on := make([]string, len(th.On))
		for i, p := range th.On {
			on[i] = "t." + quoteIdent(p[0]) + " = j." + quoteIdent(p[1])
		}
		fmt.Fprintf(&b, " JOIN %s AS j ON %s", only(th.Table), strings.Join(on, " AND "))
	}
	var where []string
	if s.n.Filter != "" && !s.plain {
		where = append(where, "("+s.n.Filter+")")
	}
	if s.where != "" {
		where = append(where, s.where)
	}
	if len(where) > 0 {
		fmt.Fprintf(&b, " WHERE %s", strings.Join(where, " AND "))
	}
	if s.fence {
		b.WriteString(" OFFSET 0")
	}
	fmt.Fprintf(&b, ") AS %s", s.alias)
	return b.String()
}

// only is the FROM item of table t: the table's own rows, not those of
// tables inheriting from it (a partitioned table is read whole: its rows
// are all in its partitions).
func only(t *mappings.Table) string {
	if t.OwnRowsOnly() {
		return "ONLY " + tableRef(t)
	}
	return tableRef(t)
}

// join is a relation's rows aggregated per row of its parent and joined
// to the parent's rows. Grouped (set-based): the relation's rows are
// joined to the parent's table by the mapping's join, grouped by the
// parent row's identity (its primary key, or its ctid) and hash-joined
// back on it; a parent without an identity (a view inside a document)
// gets a LEFT JOIN LATERAL, run once per parent row. Rendered last.
type join struct {
	alias   string
	grouped bool
	// outer are the references of the parent row's identity, pair by pair
	// with the body's columns g1, g2, ...
	outer []string
	body  func() string
	// A lookup's columns parent fields read, selected from src.
	src   *rowSource
	items []string
	names map[string]string
}

func (j *join) render() string {
	if !j.grouped {
		return fmt.Sprintf("LEFT JOIN LATERAL (%s) AS %s ON true", j.body(), j.alias)
	}
	on := make([]string, len(j.outer))
	for i, o := range j.outer {
		on[i] = fmt.Sprintf("%s.g%d = %s", j.alias, i+1, o)
	}
	return fmt.Sprintf("LEFT JOIN (%s) AS %s ON %s", j.body(), j.alias, strings.Join(on, " AND "))
}

// lookupCol is the reference of column col of a lookup's row.
func (j *join) lookupCol(col mappings.Column) string {
	key := col.Name
	if col.SQL != "" {
		key = "sql:" + col.SQL
	}
	if name, ok := j.names[key]; ok {
		return j.alias + "." + name
	}
	name := "v" + strconv.Itoa(len(j.items)+1)
	j.items = append(j.items, j.src.column(col)+" AS "+name)
	j.names[key] = name
	return j.alias + "." + name
}

// nodeSQL is one node's compiled rows: the node's row source and the
// joins its fields read.
type nodeSQL struct {
	n       *mappings.Node
	src     *rowSource
	joins   []*join
	lookups map[*mappings.Node]*join
	// identity names what identifies one of the node's rows (rowSource.key
	// keys); nil when nothing does.
	identity []string
}

// joinsSQL renders the joins of the node's rows.
func (ns *nodeSQL) joinsSQL() string {
	var b strings.Builder
	for _, j := range ns.joins {
		b.WriteString("\n  ")
		b.WriteString(j.render())
	}
	return b.String()
}

func (ns *nodeSQL) from() string { return ns.src.render() + ns.joinsSQL() }

// identity is what identifies a row of node n: the primary key of a
// table; the physical row (ctid, with tableoid in a partitioned table)
// of a table or materialized view without one; a root view's id columns
// (which the mapping says identify its rows). nil: nothing does.
func identity(n *mappings.Node, cp *mappings.CollectionPlan) []string {
	t := n.Table
	var keys []string
	switch {
	case len(t.PrimaryKey) > 0 && t.Kind == "":
		for _, k := range t.PrimaryKey {
			keys = append(keys, "c:"+k)
		}
	case t.Kind == "" || t.Kind == mappings.KindMaterializedView:
		if t.Partitioned {
			keys = append(keys, "tableoid")
		}
		keys = append(keys, "ctid")
	case n.Parent == nil && cp != nil:
		for _, ci := range cp.IDCols {
			keys = append(keys, "c:"+n.Columns[ci].Name)
		}
	}
	return keys
}

// key is the reference of an identity key (see identity).
func (s *rowSource) key(k string) string {
	switch k {
	case "ctid":
		return s.add("ctid", "t.ctid", "i")
	case "tableoid":
		return s.add("tableoid", "t.tableoid", "i")
	}
	return s.col(strings.TrimPrefix(k, "c:"))
}

// rel is one relation of a node being compiled: its rows (src) and how
// they meet the parent's rows.
type rel struct {
	j   *join
	src *rowSource
	// keyed: the rows are grouped by their own join key values (group),
	// which the parent's rows meet by the join's = (outer): valid when each
	// pair of join columns has one type, so that = is an equivalence.
	keyed bool
	// unique: keyed, and at most one row has a key (a lookup or object
	// embed on a unique key): no grouping needed.
	unique bool
	// Otherwise, grouped by the parent row's identity (j.grouped): keys is
	// the parent's table joined to the rows by cond, group the identity's
	// references in it; or, without an identity, cond joins the rows to
	// the parent's row itself (LATERAL).
	cond  string
	keys  *rowSource
	group []string
}

// relation prepares the join of child, a relation of the node ns
// compiles.
func (c *compiler) relation(ns *nodeSQL, child *mappings.Node) *rel {
	r := &rel{j: &join{alias: c.alias("x")}, src: c.source(child)}
	if sameKeyTypes(child, ns.n) {
		r.keyed, r.j.grouped = true, true
		r.unique = child.Object && child.Limit == 0 && child.Through == nil
		for _, p := range child.On {
			var ref string
			if child.Through != nil {
				ref = r.src.through(p.Column)
			} else {
				ref = r.src.col(p.Column)
			}
			r.group = append(r.group, ref)
			r.j.outer = append(r.j.outer, ns.src.col(p.Parent))
			if c.split != nil && ns.n.Parent == nil && !r.unique && p.Parent == c.split.col {
				q := "t."
				if child.Through != nil {
					q = "j."
				}
				r.src.where = c.split.cond(q+quoteIdent(p.Column), false)
			}
		}
		if reached := reachedOnly(child); reached != "" {
			if r.src.where != "" {
				reached = r.src.where + " AND " + reached
			}
			r.src.where, r.src.fence = reached, true
		}
		return r
	}
	if ns.identity == nil {
		r.cond = c.joinCond(child, r.src, ns.src)
		return r
	}
	r.j.grouped = true
	r.keys = &rowSource{alias: c.alias("p"), n: ns.n, names: map[string]string{}, plain: true}
	if c.split != nil && ns.n.Parent == nil {
		r.keys.where = c.split.cond("t."+quoteIdent(c.split.col), true)
	}
	for _, k := range ns.identity {
		r.j.outer = append(r.j.outer, ns.src.key(k))
		r.group = append(r.group, r.keys.key(k))
	}
	r.cond = c.joinCond(child, r.src, r.keys)
	return r
}

// reachedOnly is, for a node with sql: fields read by keyed grouping
// (which reads the whole table), the condition that a row of it (t) is
// joined by a row of its parent that its own filter, and its ancestors'
// joins and filters up to a join table, keep: "" when it has no sql:
// field. migrate computes an sql: field only on the rows it reads for a
// document, and PostgreSQL may fail on others (a date past timestamp's
// range in date_part): the oracle must not compute it on rows no document
// holds.
func reachedOnly(n *mappings.Node) string {
	sql := false
	for _, col := range n.Columns {
		sql = sql || col.SQL != ""
	}
	if !sql {
		return ""
	}
	return joinedBy(n, "t", 0)
}

// joinedBy is the condition that the row alias (of node n) is joined by
// a row of n's parent kept by the parent's filter and, recursively, by
// its own parent; "" at the root or past a join table.
func joinedBy(n *mappings.Node, alias string, depth int) string {
	p := n.Parent
	if p == nil || n.Through != nil || len(n.On) == 0 || depth > 8 {
		return ""
	}
	a := "a" + strconv.Itoa(depth)
	var mine, theirs []string
	for _, o := range n.On {
		mine = append(mine, alias+"."+quoteIdent(o.Column))
		theirs = append(theirs, a+"."+quoteIdent(o.Parent))
	}
	var where []string
	if p.Filter != "" {
		where = append(where, "("+p.Filter+")")
	}
	if up := joinedBy(p, a, depth+1); up != "" {
		where = append(where, up)
	}
	q := fmt.Sprintf("(%s) IN (SELECT %s FROM %s AS %s", strings.Join(mine, ", "), strings.Join(theirs, ", "), only(p.Table), a)
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + ")"
}

// sameKeyTypes reports whether every pair of child's join columns (with
// its parent's) has one type and one deterministic collation, so that
// PostgreSQL's = between them is an equivalence that GROUP BY follows.
func sameKeyTypes(child, parent *mappings.Node) bool {
	if len(child.On) == 0 {
		return false
	}
	for _, p := range child.On {
		t := child.Table
		if child.Through != nil {
			t = child.Through.Table
		}
		a, b := t.Column(p.Column), parent.Table.Column(p.Parent)
		if a == nil || b == nil || a.TypeName != b.TypeName || a.Collation != b.Collation || a.NonDeterministic || b.NonDeterministic || isArray(*a) {
			return false
		}
	}
	return true
}

// groupSelect is the select items of the identity (g1, g2, ...) and the
// list to group or partition by.
func (r *rel) groupSelect() (string, string) {
	items := make([]string, len(r.group))
	for i, g := range r.group {
		items[i] = fmt.Sprintf("%s AS g%d", g, i+1)
	}
	return strings.Join(items, ", "), strings.Join(r.group, ", ")
}

// fromWhere is the FROM (and WHERE) clause of the relation's rows, with
// the joins cjoins of its own rows.
func (r *rel) fromWhere(cjoins string) string {
	switch {
	case r.keyed:
		return fmt.Sprintf("FROM %s%s", r.src.render(), cjoins)
	case r.j.grouped:
		return fmt.Sprintf("FROM %s JOIN %s ON %s%s", r.keys.render(), r.src.render(), r.cond, cjoins)
	}
	return fmt.Sprintf("FROM %s%s WHERE %s", r.src.render(), cjoins, r.cond)
}

// aggregated sets the body of a relation whose rows give one value per
// parent row: agg over the rows (json_agg, count, ...).
func (r *rel) aggregated(agg, name, cjoins func() string) {
	r.j.body = func() string {
		if !r.j.grouped {
			return fmt.Sprintf("SELECT %s AS %s %s", agg(), name(), r.fromWhere(cjoins()))
		}
		gsel, glist := r.groupSelect()
		return fmt.Sprintf("SELECT %s, %s AS %s %s GROUP BY %s", gsel, agg(), name(), r.fromWhere(cjoins()), glist)
	}
}

// limited sets the body of a relation aggregated over its first limit
// rows in order: each row's value (val) and whether it counts (keep, a
// condition; "true" for all), aggregated by json_agg in order.
func (r *rel) limited(val, keep, order func() string, limit int, cjoins func() string) {
	r.j.body = func() string {
		if !r.j.grouped {
			return fmt.Sprintf("SELECT pg_catalog.json_agg(q.o ORDER BY q.n) FILTER (WHERE q.keep) AS j FROM (SELECT %s AS o, %s AS keep, pg_catalog.row_number() OVER (ORDER BY %s) AS n %s ORDER BY %s LIMIT %d) AS q",
				val(), keep(), order(), r.fromWhere(cjoins()), order(), limit)
		}
		gsel, glist := r.groupSelect()
		gs := make([]string, len(r.group))
		for i := range r.group {
			gs[i] = fmt.Sprintf("q.g%d", i+1)
		}
		qg := strings.Join(gs, ", ")
		return fmt.Sprintf("SELECT %s, pg_catalog.json_agg(q.o ORDER BY q.n) FILTER (WHERE q.keep) AS j FROM (SELECT %s, %s AS o, %s AS keep, pg_catalog.row_number() OVER (PARTITION BY %s ORDER BY %s) AS n %s) AS q WHERE q.n <= %d GROUP BY %s",
			qg, gsel, val(), keep(), glist, order(), r.fromWhere(cjoins()), limit, qg)
	}
}

// first sets the body of a relation that gives its first row in order
// per parent row: the select items items.
func (r *rel) first(items, order, cjoins func() string) {
	r.j.body = func() string {
		if !r.j.grouped {
			return fmt.Sprintf("SELECT %s %s ORDER BY %s LIMIT 1", items(), r.fromWhere(cjoins()), order())
		}
		gsel, glist := r.groupSelect()
		if r.unique {
			return fmt.Sprintf("SELECT %s, %s %s", gsel, items(), r.fromWhere(cjoins()))
		}
		return fmt.Sprintf("SELECT DISTINCT ON (%s) %s, %s %s ORDER BY %s, %s", glist, gsel, items(), r.fromWhere(cjoins()), glist, order())
	}
}

func constant(s string) func() string { return func() string { return s } }

// object compiles node n's fields over the rows of src: the SQL of a
// row's JSON object, its shape, and what the FROM clause needs.
func (c *compiler) object(n *mappings.Node, src *rowSource) (string, *docShape, *nodeSQL) {
	return c.objectWith(n, src, nil, nil)
}

// objectWith is object with a first field (a root's _id) made by lead over
// the node's rows.
func (c *compiler) objectWith(n *mappings.Node, src *rowSource, cp *mappings.CollectionPlan, lead func(*nodeSQL) (string, *fieldShape)) (string, *docShape, *nodeSQL) {
	ns := &nodeSQL{n: n, src: src, lookups: map[*mappings.Node]*join{}, identity: identity(n, cp)}
	shape := &docShape{}
	var pairs [][2]string
	if lead != nil {
		expr, fs := lead(ns)
		pairs = append(pairs, [2]string{fs.name, expr})
		shape.fields = append(shape.fields, fs)
	}
	for i := range n.Fields {
		f := &n.Fields[i]
		fs, expr := c.field(n, ns, f)
		name := f.Name
		if f.Pivot != nil {
			name = "(" + refName(n, *f.Pivot) + ")"
		}
		pairs = append(pairs, [2]string{name, expr})
		shape.fields = append(shape.fields, fs)
	}
	return buildObject(pairs), shape, ns
}

// buildObject is the SQL of the JSON of a document (or an expression's
// inputs): the values of the given name/SQL pairs in order, each after a
// comment naming it, in arrays of at most maxValues (see docShape).
func buildObject(pairs [][2]string) string {
	chunk := func(ps [][2]string) string {
		args := make([]string, 0, len(ps))
		for _, p := range ps {
			args = append(args, "/* "+strings.ReplaceAll(p[0], "*/", "*\\/")+" */ "+p[1])
		}
		return "pg_catalog.json_build_array(" + strings.Join(args, ", ") + ")"
	}
	if len(pairs) <= maxValues {
		return chunk(pairs)
	}
	var parts []string
	for len(pairs) > 0 {
		k := min(maxValues, len(pairs))
		parts = append(parts, chunk(pairs[:k]))
		pairs = pairs[k:]
	}
	return "pg_catalog.json_build_array(" + strings.Join(parts, ", ") + ")"
}

func refName(n *mappings.Node, r mappings.Ref) string {
	if r.Lookup == nil {
		return n.Columns[r.Col].Name
	}
	return r.Lookup.Path[strings.LastIndexByte(r.Lookup.Path, '.')+1:] + "." + r.Lookup.Columns[r.Col].Name
}

// ref is the SQL reference and type of a field's column: of the row, or of
// a lookup's row.
func (c *compiler) ref(n *mappings.Node, ns *nodeSQL, r mappings.Ref) (string, mappings.Column, valueType) {
	if r.Lookup == nil {
		col := n.Columns[r.Col]
		return ns.src.column(col), col, typeOf(col, n.Numeric[r.Col])
	}
	l := c.lookup(ns, r.Lookup)
	col := r.Lookup.Columns[r.Col]
	return l.lookupCol(col), col, typeOf(col, r.Lookup.Numeric[r.Col])
}

// field compiles one field: its shape and its SQL value.
func (c *compiler) field(n *mappings.Node, ns *nodeSQL, f *mappings.FieldPlan) (*fieldShape, string) {
	fs := &fieldShape{name: f.Name, path: n.Path + "." + f.Name}
	var expr string
	switch f.Kind {
	case mappings.FieldColumn:
		ref, col, vt := c.ref(n, ns, f.Value)
		fs.kind, fs.vt, expr = fColumn, vt, sqlValue(col, ref)
	case mappings.FieldConst:
		fs.kind, fs.konst, expr = fConst, f.Const, constSQL(f.Const)
	case mappings.FieldExpr:
		fs.kind, fs.prog, fs.source = fExpr, f.Program, f.Source
		var pairs [][2]string
		for _, v := range n.ExprEnv {
			ev := envVar{name: v.Name}
			if v.Lookup == nil {
				col := n.Columns[v.Col]
				ev.vt = typeOf(col, n.Numeric[v.Col])
				pairs = append(pairs, [2]string{v.Name, sqlValue(col, ns.src.column(col))})
			} else {
				l := c.lookup(ns, v.Lookup)
				ev.lookup = true
				var sub [][2]string
				for _, name := range slices.Sorted(maps.Keys(v.Cols)) {
					col := v.Lookup.Columns[v.Cols[name]]
					ev.cols = append(ev.cols, envCol{name: name, vt: typeOf(col, v.Lookup.Numeric[v.Cols[name]])})
					sub = append(sub, [2]string{name, sqlValue(col, l.lookupCol(col))})
				}
				pairs = append(pairs, [2]string{v.Name, fmt.Sprintf("CASE WHEN %s.found IS NULL THEN NULL ELSE %s END", l.alias, buildObject(sub))})
			}
			fs.env = append(fs.env, ev)
		}
		expr = buildObject(pairs)
		c.unchecked = append(c.unchecked, Unchecked{Path: fs.path, Why: "expr: evaluated by the shared expression engine (expr-lang) on the inputs the oracle read and converted itself"})
	case mappings.FieldEmbed:
		child := f.Embed
		r := c.relation(ns, child)
		obj, shape, cns := c.object(child, r.src)
		fs.sub = shape
		order := c.order(child, r.src)
		switch {
		case child.Object:
			fs.kind = fObject
			r.first(constant(obj+" AS j"), constant(order), cns.joinsSQL)
			expr = r.j.alias + ".j"
		case child.Limit > 0:
			fs.kind = fArray
			r.limited(constant(obj), constant("true"), constant(order), child.Limit, cns.joinsSQL)
			expr = "COALESCE(" + r.j.alias + ".j, '[]'::pg_catalog.json)"
		default:
			fs.kind = fArray
			r.aggregated(constant("pg_catalog.json_agg("+obj+" ORDER BY "+order+")"), constant("j"), cns.joinsSQL)
			expr = "COALESCE(" + r.j.alias + ".j, '[]'::pg_catalog.json)"
		}
		ns.joins = append(ns.joins, r.j)
	case mappings.FieldIds:
		child := f.Embed
		r := c.relation(ns, child)
		var val, notNull string
		if len(child.Values) > 0 {
			fs.kind = fIdDocs
			fs.sub = &docShape{}
			var pairs [][2]string
			var conds []string
			for i, vi := range child.Values {
				col := child.Columns[vi]
				ref := r.src.column(col)
				pairs = append(pairs, [2]string{child.ValueNames[i], sqlValue(col, ref)})
				conds = append(conds, notNullSQL(col, ref))
				fs.sub.fields = append(fs.sub.fields, &fieldShape{kind: fColumn, name: child.ValueNames[i], path: fs.path + "." + child.ValueNames[i], vt: typeOf(col, child.Numeric[vi])})
			}
			val, notNull = buildObject(pairs), strings.Join(conds, " AND ")
		} else {
			fs.kind = fIds
			col := child.Columns[child.Value]
			ref := r.src.column(col)
			fs.vt = typeOf(col, child.Numeric[child.Value])
			val, notNull = sqlValue(col, ref), notNullSQL(col, ref)
		}
		order := c.order(child, r.src)
		if child.Limit > 0 {
			r.limited(constant(val), constant(notNull), constant(order), child.Limit, constant(""))
		} else {
			r.aggregated(constant("pg_catalog.json_agg("+val+" ORDER BY "+order+") FILTER (WHERE "+notNull+")"), constant("j"), constant(""))
		}
		ns.joins = append(ns.joins, r.j)
		expr = "COALESCE(" + r.j.alias + ".j, '[]'::pg_catalog.json)"
	case mappings.FieldAggregate:
		child := f.Embed
		r := c.relation(ns, child)
		res, call, exact := c.aggregate(child, r.src)
		fs.kind, fs.vt = fAggregate, typeOf(res, child.Numeric[0])
		fs.vt.exactSum = exact
		fs.zero = aggregateZero(child.Agg.Fn, res, child.Numeric[0])
		r.aggregated(constant(call), constant("v"), constant(""))
		ns.joins = append(ns.joins, r.j)
		expr = sqlValue(res, r.j.alias+".v")
	default:
		fail("%s: field %q of an unknown kind", n.Path, f.Name)
	}
	if f.Pivot != nil {
		ref, col, vt := c.ref(n, ns, *f.Pivot)
		fs.pivot, fs.pivotType = true, vt
		expr = fmt.Sprintf("pg_catalog.json_build_array(%s, %s)", sqlValue(col, ref), expr)
	}
	return fs, expr
}

// lookup is the join of lookup node l of the node ns compiles: its first
// row (in its order) that joins the node's row, with the columns the
// node's fields read (found is 1 when there is a row).
func (c *compiler) lookup(ns *nodeSQL, l *mappings.Node) *join {
	if j, ok := ns.lookups[l]; ok {
		return j
	}
	r := c.relation(ns, l)
	j := r.j
	j.src, j.names = r.src, map[string]string{}
	order := c.order(l, r.src)
	r.first(func() string { return strings.Join(append([]string{"1 AS found"}, j.items...), ", ") }, constant(order), constant(""))
	ns.lookups[l] = j
	ns.joins = append(ns.joins, j)
	return j
}

// joinCond is the condition joining the rows of child (src) to the
// parent's row (parent), as the mapping declares it, by PostgreSQL's =.
func (c *compiler) joinCond(child *mappings.Node, src, parent *rowSource) string {
	if len(child.On) == 0 {
		fail("%s: no join", child.Path)
	}
	conds := make([]string, len(child.On))
	for i, p := range child.On {
		var ref string
		if child.Through != nil {
			ref = src.through(p.Column)
		} else {
			ref = src.col(p.Column)
		}
		conds[i] = ref + " = " + parent.col(p.Parent)
	}
	return strings.Join(conds, " AND ")
}

// order is the ORDER BY list of node n's rows (see tiebreak).
func (c *compiler) order(n *mappings.Node, src *rowSource) string {
	var items []string
	for _, o := range n.Order {
		dir := " ASC NULLS LAST"
		if o.Desc {
			dir = " DESC NULLS FIRST"
		}
		items = append(items, src.column(n.Columns[o.Col])+dir)
	}
	items = append(items, c.tiebreak(n.Table, src)...)
	return strings.Join(items, ", ")
}

// tiebreak makes an order total: the table's primary key; without one,
// every column of the table in table order, each by its text under the
// "C" collation (values PostgreSQL's ordering calls equal but that print
// differently are ordered too).
func (c *compiler) tiebreak(t *mappings.Table, src *rowSource) []string {
	var items []string
	if len(t.PrimaryKey) > 0 {
		for _, k := range t.PrimaryKey {
			items = append(items, src.col(k))
		}
		return items
	}
	for _, col := range t.Columns {
		items = append(items, "("+src.col(col.Name)+")::pg_catalog.text COLLATE \"C\"")
	}
	return items
}

// aggregate is an aggregate node's result column and SQL call; exact
// says the call gives exactSum's text, not the value.
func (c *compiler) aggregate(n *mappings.Node, src *rowSource) (res mappings.Column, call string, exact bool) {
	a := n.Agg
	var arg string
	var col *mappings.Column
	if a.Column != "" {
		col = n.Table.Column(a.Column)
		arg = src.col(a.Column)
	}
	res = aggregateResult(a.Fn, col)
	if len(n.Columns) > 0 {
		// the mapping's modes for the result (timestamp: string,
		// char: keep), as a column of its type is written
		res.TimestampText, res.KeepPadding = n.Columns[0].TimestampText, n.Columns[0].KeepPadding
	}
	if e := exactSum(a.Fn, arg, col); e != "" {
		return res, e, true
	}
	call = a.Fn + "(*)"
	if arg != "" {
		call = a.Fn + "(" + arg
		if f := familyOf(col.TypeName); (a.Fn == "min" || a.Fn == "max") && (f == famFloat4 || f == famFloat8 || col.TypeName == "numeric" || col.TypeName == "citext" || col.TypeName == "interval") {
			// Of equal values that print differently (1.0 and 1.00), the
			// first in tie-break order: min and max keep the last they
			// are given.
			var desc []string
			for _, o := range c.tiebreak(n.Table, src) {
				desc = append(desc, o+" DESC")
			}
			call += " ORDER BY " + strings.Join(desc, ", ")
		}
		call += ")"
	}
	return res, call, false
}

// exactSum is the SQL of a sum or an average of a real, double precision
// or interval column arg (col) as text the converter rounds (scalar), or
// "". The README's rule: such sums are exact, rounded once, and a result
// beyond the type's range rejects the row.
//
//   - real, double precision: NaN when a NaN is summed or both
//     infinities are, else the infinity summed, else the exact NUMERIC
//     sum of the values' texts (their shortest decimals); an average
//     follows it with "/" and the number of values;
//   - interval: PostgreSQL adds intervals field by field (months, days,
//     microseconds). Each field's exact sum; "overflow" when one leaves
//     its range (int32, int32, int64), else the interval of the three
//     (an average: divided by the count as PostgreSQL's avg divides).
func exactSum(fn, arg string, col *mappings.Column) string {
	if col == nil || (fn != "sum" && fn != "avg") {
		return ""
	}
	switch familyOf(col.TypeName) {
	case famFloat4, famFloat8:
		has := func(v string) string {
			return "count(*) FILTER (WHERE " + arg + " = '" + v + "'::pg_catalog.float8) > 0"
		}
		exact := "sum((" + arg + ")::pg_catalog.text::pg_catalog.numeric) FILTER (WHERE pg_catalog.float8(" + arg + ") NOT IN ('NaN'::pg_catalog.float8, 'Infinity'::pg_catalog.float8, '-Infinity'::pg_catalog.float8))"
		text := "(" + exact + ")::pg_catalog.text"
		if fn == "avg" {
			text = "pg_catalog.concat(" + exact + ", '/', count(" + arg + "))"
		}
		return "CASE WHEN count(" + arg + ") = 0 THEN NULL" +
			" WHEN " + has("NaN") + " OR (" + has("Infinity") + " AND " + has("-Infinity") + ") THEN 'NaN'" +
			" WHEN " + has("Infinity") + " THEN 'Infinity'" +
			" WHEN " + has("-Infinity") + " THEN '-Infinity'" +
			" ELSE " + text + " END"
	}
	if col.TypeName != "interval" {
		return ""
	}
	field := func(unit string) string { return "EXTRACT(" + unit + " FROM " + arg + ")::pg_catalog.numeric" }
	months := "sum(" + field("YEAR") + " * 12 + " + field("MONTH") + ")"
	days := "sum(" + field("DAY") + ")"
	micros := "sum(" + field("HOUR") + " * 3600000000 + " + field("MINUTE") + " * 60000000 + " + field("MICROSECONDS") + ")"
	hours := "trunc(" + micros + " / 3600000000)"
	half := "trunc(" + hours + " / 2)"
	rest := "((" + micros + " - " + hours + " * 3600000000) / 1000000)::pg_catalog.float8"
	total := "pg_catalog.make_interval(months => (" + months + ")::pg_catalog.int4, days => (" + days + ")::pg_catalog.int4)" +
		" + pg_catalog.make_interval(hours => (" + half + ")::pg_catalog.int4)" +
		" + pg_catalog.make_interval(hours => (" + hours + " - " + half + ")::pg_catalog.int4, secs => " + rest + ")"
	if fn == "avg" {
		total = "(" + total + ") / count(" + arg + ")::pg_catalog.float8"
	}
	const int32Range, int64Range = "BETWEEN -2147483648 AND 2147483647", "BETWEEN -9223372036854775808 AND 9223372036854775807"
	return "CASE WHEN count(" + arg + ") = 0 THEN NULL" +
		" WHEN " + months + " " + int32Range + " AND " + days + " " + int32Range + " AND " + micros + " " + int64Range +
		" THEN (" + total + ")::pg_catalog.text ELSE '" + intervalOverflow + "' END"
}

// intervalOverflow is exactSum's text for an interval sum out of range.
const intervalOverflow = "overflow"

// aggregateResult is PostgreSQL's result type of fn over a column of
// type col (count(*) when col is nil).
func aggregateResult(fn string, col *mappings.Column) mappings.Column {
	bigint := mappings.Column{Type: "bigint", TypeName: "int8", Category: "N"}
	numeric := mappings.Column{Type: "numeric", TypeName: "numeric", Category: "N"}
	double := mappings.Column{Type: "double precision", TypeName: "float8", Category: "N"}
	if fn == "count" || col == nil {
		return bigint
	}
	switch fn {
	case "sum":
		switch col.TypeName {
		case "int2", "int4":
			return bigint
		case "int8", "numeric":
			return numeric
		case "float4":
			return mappings.Column{Type: "real", TypeName: "float4", Category: "N"}
		case "float8":
			return double
		}
	case "avg":
		switch col.TypeName {
		case "int2", "int4", "int8", "numeric":
			return numeric
		case "float4", "float8":
			return double
		}
	}
	r := *col
	r.NotNull = false
	return r
}

// aggregateZero is fn's value over no rows: 0 for count, and for a sum
// of numbers 0 in the sum's type (as the numeric mode writes a NUMERIC);
// nil (the field is left out) otherwise.
func aggregateZero(fn string, res mappings.Column, mode mappings.NumericMode) any {
	if fn != "count" && fn != "sum" {
		return nil
	}
	switch familyOf(res.TypeName) {
	case famInt64:
		return int64(0)
	case famInt32:
		return int32(0)
	case famFloat4, famFloat8:
		return float64(0)
	case famNumeric:
		v, _ := numeric("0", mode, "")
		return v
	}
	return nil
}

func constSQL(v any) string {
	switch x := v.(type) {
	case string:
		return quoteLiteral(x)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "NULL"
	}
	return fmt.Sprint(v)
}

// docQuery is the statement of a document collection entry.
func (c *compiler) docQuery(cp *mappings.CollectionPlan, root *rowSource) (string, *docShape) {
	obj, shape, ns := c.objectWith(cp.Root, root, cp, func(*nodeSQL) (string, *fieldShape) { return c.id(cp, root) })
	return fmt.Sprintf("SELECT %s AS src,\n  %s AS doc\nFROM %s", c.sourceName(cp, root), obj, ns.from()), shape
}

// id is the _id's SQL and shape.
func (c *compiler) id(cp *mappings.CollectionPlan, root *rowSource) (string, *fieldShape) {
	n := cp.Root
	fs := &fieldShape{name: "_id", path: cp.Name + "._id", docID: true}
	if cp.IDPrefix != "" {
		fs.kind, fs.prefix = fPrefixID, cp.IDPrefix
		return keysText(n, root, cp.IDCols), fs
	}
	if len(cp.IDCols) == 1 {
		col := n.Columns[cp.IDCols[0]]
		fs.kind, fs.vt = fColumn, typeOf(col, n.Numeric[cp.IDCols[0]])
		return sqlValue(col, root.column(col)), fs
	}
	fs.kind, fs.sub = fObject, &docShape{}
	var pairs [][2]string
	for i, ci := range cp.IDCols {
		col := n.Columns[ci]
		pairs = append(pairs, [2]string{cp.IDNames[i], sqlValue(col, root.column(col))})
		fs.sub.fields = append(fs.sub.fields, &fieldShape{kind: fColumn, name: cp.IDNames[i], path: fs.path + "." + cp.IDNames[i], vt: typeOf(col, n.Numeric[ci])})
	}
	return buildObject(pairs), fs
}

// keysText is the SQL of the text of key columns cols of a root row, as
// page ids and prefixed _ids hold it: each value as PostgreSQL compares it
// (keyText); several values each with "%" and "-" escaped (%25, %2D) and
// joined by "-". NULL when a value is NULL.
func keysText(n *mappings.Node, src *rowSource, cols []int) string {
	var parts, refs []string
	for _, ci := range cols {
		col := n.Columns[ci]
		ref := src.column(col)
		refs = append(refs, ref)
		t := keyText(col, ref)
		if len(cols) > 1 {
			t = "pg_catalog.replace(pg_catalog.replace(" + t + ", '%', '%25'), '-', '%2D')"
		}
		parts = append(parts, t)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	nulls := make([]string, len(refs))
	for i, r := range refs {
		nulls[i] = r + " IS NULL"
	}
	return fmt.Sprintf("CASE WHEN %s THEN NULL ELSE %s END", strings.Join(nulls, " OR "), strings.Join(parts, " || '-' || "))
}

// keyText is the SQL of one key value's text: the value as PostgreSQL
// compares it with others of its type - a numeric without trailing zeros,
// a double with -0 as 0, char(n) without its padding, citext in lower
// case, dates and timestamps as the session prints them, a uuid in its
// 8-4-4-4-12 form, bytea as lower-case hex, anything else as its text.
func keyText(col mappings.Column, ref string) string {
	switch familyOf(col.TypeName) {
	case famNumeric:
		return "pg_catalog.trim_scale(" + ref + ")::pg_catalog.text"
	case famFloat4, famFloat8:
		return "((" + ref + ")::pg_catalog.float8 + 0::pg_catalog.float8)::pg_catalog.text"
	case famBytea:
		return "pg_catalog.encode(" + ref + ", 'hex')"
	case famString:
		if col.TypeName == "citext" {
			return "pg_catalog.lower((" + ref + ")::pg_catalog.text COLLATE pg_catalog.\"default\")"
		}
	}
	return "(" + ref + ")::pg_catalog.text"
}

// sourceName is the SQL of a root row's name in messages:
// `person (id)=(42)`, as transform.SourceKey names it: a NULL is NULL, and
// a column a bucket's stream order names twice is named once.
func (c *compiler) sourceName(cp *mappings.CollectionPlan, root *rowSource) string {
	var names, vals []string
	for i, ci := range cp.IDCols {
		if slices.Contains(cp.IDCols[:i], ci) {
			continue
		}
		col := cp.Root.Columns[ci]
		names = append(names, col.Name)
		vals = append(vals, "COALESCE(("+root.column(col)+")::pg_catalog.text, 'NULL')")
	}
	return fmt.Sprintf("%s || pg_catalog.concat_ws(', ', %s) || ')'", quoteLiteral(cp.Root.Table.Name+" ("+strings.Join(names, ", ")+")=("), strings.Join(vals, ", "))
}

// bucketQuery is the statement of a bucket collection entry: its items in
// stream order.
func (c *compiler) bucketQuery(cp *mappings.CollectionPlan, root *rowSource) (string, *bucketShape, *docShape) {
	b := cp.Bucket
	obj, shape, ns := c.objectWith(cp.Root, root, cp, nil)
	bs := &bucketShape{size: b.Size, skipLast: b.SkipLast, items: b.Items, page: b.Page}
	var byVals, order []string
	for i, ci := range b.By {
		col := cp.Root.Columns[ci]
		ref := root.column(col)
		byVals = append(byVals, sqlValue(col, ref))
		order = append(order, ref+" ASC NULLS LAST")
		bs.by = append(bs.by, &fieldShape{kind: fColumn, name: b.ByNames[i], path: cp.Name + "." + b.ByNames[i], vt: typeOf(col, cp.Root.Numeric[ci])})
	}
	for _, o := range cp.Root.Order {
		dir := " ASC NULLS LAST"
		if o.Desc {
			dir = " DESC NULLS FIRST"
		}
		order = append(order, root.column(cp.Root.Columns[o.Col])+dir)
	}
	// A bucket's stream order ends with the primary key, or the first
	// unique key of NOT NULL columns (a table with neither is refused).
	if t := cp.Root.Table; len(t.PrimaryKey) == 0 && len(t.Unique) > 0 {
		for _, k := range t.Unique[0] {
			order = append(order, root.col(k))
		}
	} else {
		order = append(order, c.tiebreak(t, root)...)
	}
	sql := fmt.Sprintf("SELECT %s AS src,\n  %s AS pkey,\n  pg_catalog.json_build_array(%s) AS parent,\n  %s AS item\nFROM %s\nORDER BY %s",
		c.sourceName(cp, root), keysText(cp.Root, root, b.By), strings.Join(byVals, ", "), obj, ns.from(), strings.Join(order, ", "))
	return sql, bs, shape
}

// sampleCond is the condition that keeps n random root rows of cp (of a
// bucket collection: the rows of n random parents).
func sampleCond(cp *mappings.CollectionPlan, n int) string {
	var cols []int
	if cp.Bucket != nil {
		cols = cp.Bucket.By
	} else {
		cols = cp.IDCols
	}
	refs := make([]string, len(cols))
	for i, ci := range cols {
		refs[i] = "t." + quoteIdent(cp.Root.Columns[ci].Name)
	}
	list := strings.Join(refs, ", ")
	filter := ""
	if cp.Root.Filter != "" {
		filter = " WHERE (" + cp.Root.Filter + ")"
	}
	inner := fmt.Sprintf("SELECT %s FROM %s AS t%s", list, only(cp.Root.Table), filter)
	if cp.Bucket != nil {
		inner = "SELECT DISTINCT " + strings.TrimPrefix(inner, "SELECT ")
	}
	return fmt.Sprintf("(%s) IN (SELECT * FROM (%s) AS t ORDER BY pg_catalog.random() LIMIT %d)", list, inner, n)
}
