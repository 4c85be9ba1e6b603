package difftest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The mapping generator: collections over the generated tables using
// every pattern of the mapping reference (embeds nested to depth 3 and
// more, lookups and pivots, subsets, buckets, id arrays, aggregates,
// links, shared collections, computed fields, filters, orderings with
// ties, numeric and char modes per file and per field).

// ectx is where an entity's fields are drawn.
type ectx struct {
	t       *Table
	depth   int
	anc     []*Table // tables above, the nearest last
	through bool     // reached through a join table
	root    bool
	skip    []string // columns "*" leaves out here (the join's, the id's)
}

var exprIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var exprKeywords = map[string]bool{"in": true, "not": true, "and": true, "or": true, "matches": true, "contains": true, "startsWith": true,
	"endsWith": true, "nil": true, "true": true, "false": true, "let": true, "if": true, "else": true, "len": true, "abs": true, "all": true,
	"none": true, "any": true, "one": true, "filter": true, "map": true, "count": true, "sum": true, "type": true, "int": true, "float": true,
	"string": true, "env": true, "now": true, "date": true, "duration": true, "max": true, "min": true, "first": true, "last": true, "get": true}

// orderable are t's columns an orderBy may name.
func orderable(t *Table) []*Column {
	var out []*Column
	for _, c := range t.Cols {
		if c.T.Order && !strings.ContainsAny(c.Name, " \t\n") && c.T.elem == nil {
			out = append(out, c)
		}
	}
	return out
}

// orderBy draws an orderBy over t: one to three columns, some
// descending; ties are common (few distinct values). unique ends it with
// the table's id columns when it has them (no ties).
func (g *gen) orderBy(t *Table, unique bool) []string {
	cols := orderable(t)
	if len(cols) == 0 {
		return nil
	}
	var out []string
	for k := g.between(1, 3); k > 0; k-- {
		c := cols[g.n(len(cols))]
		e := c.Name
		if g.chance(0.35) {
			e += pick(g.rng, " desc", " DESC", " asc")
		}
		if !slices.ContainsFunc(out, func(s string) bool { return strings.Fields(s)[0] == c.Name }) {
			out = append(out, e)
		}
	}
	if unique {
		for _, k := range t.IDCols() {
			if !slices.Contains(out, k) && !strings.ContainsAny(k, " \t") {
				out = append(out, k)
			}
		}
	}
	return out
}

// tieFree says whether rows of t come in one order whatever their
// physical order: denorm breaks ties by the primary key; a table without
// one has ties only the open class "ties" may draw.
func (g *gen) tieFree(t *Table) bool { return len(t.PK) > 0 || g.open("ties") }

// filter draws an SQL condition on t's columns (alias-free).
func (g *gen) filter(t *Table) string {
	if len(t.Cols) == 0 {
		return ""
	}
	c := t.Cols[g.n(len(t.Cols))]
	q := ident(c.Name)
	switch {
	case c.T.Int > 0 || c.T.Fam == "numeric":
		return pick(g.rng, q+" > 0", q+" IS NOT NULL", q+" % 2 = 0", "coalesce("+q+", 0) <= 5")
	case c.T.Text:
		return pick(g.rng, q+" <> ''", "length("+q+") > 2", q+" IS NULL", q+" < 'm'")
	case c.T.Bool:
		return pick(g.rng, q, "NOT "+q, q+" IS NOT FALSE")
	default:
		return pick(g.rng, q+" IS NOT NULL", q+" IS NULL")
	}
}

// children are the foreign keys of other tables pointing to t.
func (g *gen) children(t *Table) (out []struct {
	c  *Table
	fk *FK
}) {
	for _, c := range g.c.Tables {
		for _, fk := range c.FKs {
			if fk.Ref == t && c.Parent == nil {
				out = append(out, struct {
					c  *Table
					fk *FK
				}{c, fk})
			}
		}
	}
	return out
}

// joinMap is {relation column: enclosing column} of fk seen from the
// referenced table (child side first when childSide).
func joinMap(fk *FK, childSide bool) *Node {
	m := M()
	for i := range fk.Cols {
		if childSide {
			m.Set(fk.Cols[i], fk.RefCols[i])
		} else {
			m.Set(fk.RefCols[i], fk.Cols[i])
		}
	}
	return m
}

// fieldName draws a field name: mostly plain, sometimes odd (unicode,
// blanks; now and then one a target cannot hold). base (often made of a
// table's name) is made storable first.
func (g *gen) fieldName(used map[string]bool, base string) string {
	base = strings.NewReplacer(".", "_", "$", "_").Replace(base)
	for i := 0; ; i++ {
		n := base
		switch g.weighted(8, 1, 1) {
		case 1:
			n = pick(g.rng, "Ünï "+base, base+" x", "日本")
		case 2:
			if g.chance(0.08) {
				n = pick(g.rng, "a.b", "$x", "_id", "a.b", "$x", "_id", "")
			}
		}
		if i > 0 {
			n = fmt.Sprintf("%s%d", base, i)
		}
		if n != "" && !used[n] {
			used[n] = true
			return n
		}
		if n == "" {
			return n
		}
	}
}

// entity fills an entity's fields (and lookups, rename, exclude) into n.
func (g *gen) entity(n *Node, x ectx) {
	t := x.t
	used := map[string]bool{}
	fields := L()
	var lookups []*Node
	star := g.chance(0.5)
	if star {
		fields.Items = append(fields.Items, &Node{Value: "*"})
	}
	// plain columns
	for _, c := range t.Cols {
		if slices.Contains(x.skip, c.Name) || (star && g.chance(0.7)) || !g.chance(0.5) {
			continue
		}
		if strings.Contains(c.Name, ".") && g.chance(0.9) {
			continue // read as lookup.column: loud, drawn now and then
		}
		f := g.columnField(c, used, x)
		if f != nil {
			fields.Items = append(fields.Items, f)
		}
	}
	// relations, computed fields, constants
	for k := g.weighted(2, 3, 3, 2, 1); k > 0; k-- {
		var f *Node
		switch g.weighted(5, 2, 2, 2, 3, 2, 2, 1, 2) {
		case 0:
			if x.depth < 4 {
				f = g.embedChild(x, used)
			}
		case 1:
			if x.depth < 4 {
				f = g.embedParent(x, used)
			}
		case 2:
			if x.depth < 4 {
				f = g.embedThrough(x, used)
			}
		case 3:
			f = g.idsField(x, used)
		case 4:
			f = g.aggregate(x, used)
		case 5:
			var lk *Node
			lk, f = g.lookup(x, used)
			if lk != nil {
				lookups = append(lookups, lk)
			}
		case 6:
			f = g.exprField(x, used)
		case 7:
			f = g.sqlField(x, used)
		default:
			f = g.constant(used)
		}
		if f != nil {
			fields.Items = append(fields.Items, f)
		}
	}
	if g.chance(0.15) {
		f := g.pivot(x, used)
		if f != nil {
			fields.Items = append(fields.Items, f)
		}
	}
	shuffle(g.rng, fields.Items)
	if len(fields.Items) > 0 || g.chance(0.2) {
		n.Set("fields", fields)
	}
	if len(lookups) > 0 {
		n.Set("lookups", L(anys(lookups)...))
	}
	rename := M()
	if star && g.chance(0.3) && len(t.Cols) > 0 {
		c := t.Cols[g.n(len(t.Cols))]
		rename.Set(c.Name, g.fieldName(used, "renamed"))
	}
	for _, c := range t.Cols {
		// a column "*" would name with a "." or a "$": rename it (mostly)
		if star && strings.ContainsAny(c.Name, ".$") && rename.Get(c.Name) == nil && !slices.Contains(x.skip, c.Name) && g.chance(0.9) {
			rename.Set(c.Name, g.fieldName(used, "r"+c.Name))
		}
	}
	if len(rename.Keys) > 0 {
		n.Set("rename", rename)
	}
	if star && g.chance(0.2) && len(t.Cols) > 0 {
		n.Set("exclude", L(t.Cols[g.n(len(t.Cols))].Name))
	}
}

func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// columnField is a column as a field: bare, renamed, with a per-field
// numeric or char mode, or a reference to a collection.
func (g *gen) columnField(c *Column, used map[string]bool, x ectx) *Node {
	switch {
	case c.T.Fam == "numeric" && g.chance(0.3):
		mode := pick(g.rng, "string", "double", "decimal")
		if mode == "decimal" {
			g.c.Ferret = false
		}
		return M("column", c.Name, "numeric", mode)
	case strings.HasPrefix(c.T.SQL, "char(") && g.chance(0.4):
		return M("column", c.Name, "char", pick(g.rng, "keep", "trim"))
	case (strings.Contains(c.T.Fam, "timestamp") || c.T.Fam == "array/timestamp" || c.T.Fam == "array/timestamptz") && g.chance(0.4):
		return M("column", c.Name, "timestamp", pick(g.rng, "string", "date"))
	case g.chance(0.2):
		return M("name", g.fieldName(used, "f"+c.Name), "column", c.Name)
	}
	if ref := g.refTo(x.t, c.Name); ref != "" && g.chance(0.5) {
		return M("column", c.Name, "ref", ref)
	}
	return &Node{Value: c.Name}
}

// refTo is the collection c's column col points to (a single-column
// foreign key to a collection's root without idPrefix), or "".
func (g *gen) refTo(t *Table, col string) string {
	for _, fk := range t.FKs {
		if len(fk.Cols) == 1 && fk.Cols[0] == col {
			if name, ok := g.rootColl[fk.Ref]; ok {
				return name
			}
		}
	}
	return ""
}

// embedChild embeds the rows of a table pointing to x.t: an array
// (ordered, limited, filtered) or one object.
func (g *gen) embedChild(x ectx, used map[string]bool) *Node {
	ch := g.children(x.t)
	if len(ch) == 0 {
		return nil
	}
	k := ch[g.n(len(ch))]
	rel := M("table", k.c.MappingName(), "join", joinMap(k.fk, true))
	asObject := g.chance(0.2)
	if asObject {
		rel.Set("as", "object")
		if !k.fk.Unique || g.chance(0.3) {
			ob := g.orderBy(k.c, true)
			if !g.tieFree(k.c) || len(ob) == 0 {
				return nil
			}
			rel.Set("orderBy", ob)
		}
	} else {
		if g.chance(0.6) {
			if ob := g.orderBy(k.c, !g.open("ties")); len(ob) > 0 && (g.tieFree(k.c) || len(k.c.IDCols()) > 0) {
				rel.Set("orderBy", ob)
				if g.chance(0.4) {
					rel.Set("limit", g.limit())
				}
			}
		}
		if rel.Get("orderBy") == nil && !g.tieFree(k.c) {
			return nil // rows in physical order: class 9
		}
	}
	if g.chance(0.25) {
		rel.Set("filter", g.filter(k.c))
	}
	g.entity(rel, ectx{t: k.c, depth: x.depth + 1, anc: append(slices.Clone(x.anc), x.t), skip: k.fk.Cols})
	name := g.fieldName(used, "kids"+k.c.Name)
	g.note("embed child depth %d", x.depth+1)
	if x.root && !asObject {
		g.arrayCheck(x, name, k.c, k.fk, rel)
	}
	return M("name", name, "embed", rel)
}

// limit draws a subset size: 1, small, or huge.
func (g *gen) limit() any {
	if g.open("mappingnumbers") && g.chance(0.03) {
		return pick[any](g.rng, int64(9223372036854775807), int64(2147483648), int64(1)<<53, 1000001)
	}
	return pick[any](g.rng, 1, 1, 2, 3, 5, 1000000)
}

// embedParent embeds the row x.t points to, as an object (or a one-item
// array).
func (g *gen) embedParent(x ectx, used map[string]bool) *Node {
	if len(x.t.FKs) == 0 {
		return nil
	}
	fk := x.t.FKs[g.n(len(x.t.FKs))]
	if slices.Contains(x.anc, fk.Ref) && g.chance(0.8) {
		return nil // embedding the parent back: a cycle validate refuses
	}
	rel := M("table", fk.Ref.MappingName(), "join", joinMap(fk, false))
	if g.chance(0.7) {
		rel.Set("as", "object")
	}
	g.entity(rel, ectx{t: fk.Ref, depth: x.depth + 1, anc: append(slices.Clone(x.anc), x.t)})
	g.note("embed parent")
	return M("name", g.fieldName(used, "parent"+fk.Ref.Name), "embed", rel)
}

// through finds a join table from x.t to another table: the join
// table's foreign key to x.t and the one to the other side.
func (g *gen) through(t *Table) (j *Table, near, far *FK) {
	var opts [][3]any
	for _, c := range g.c.Tables {
		if !c.Join || len(c.FKs) < 2 {
			continue
		}
		for a := 0; a < 2; a++ {
			if c.FKs[a].Ref == t {
				opts = append(opts, [3]any{c, c.FKs[a], c.FKs[1-a]})
			}
		}
	}
	if len(opts) == 0 {
		return nil, nil, nil
	}
	o := opts[g.n(len(opts))]
	return o[0].(*Table), o[1].(*FK), o[2].(*FK)
}

func throughNode(j *Table, near, far *FK) (*Node, *Node) {
	return M("table", j.MappingName(), "join", joinMap(near, true)), joinMap(far, false)
}

// embedThrough embeds the rows of a table reached through a join table.
func (g *gen) embedThrough(x ectx, used map[string]bool) *Node {
	j, near, far := g.through(x.t)
	if j == nil {
		return nil
	}
	th, jm := throughNode(j, near, far)
	rel := M("table", far.Ref.MappingName(), "through", th, "join", jm)
	if g.tieFree(j) {
		if ob := g.orderBy(far.Ref, true); len(ob) > 0 && g.chance(0.5) {
			rel.Set("orderBy", ob)
			if g.chance(0.3) {
				rel.Set("limit", g.limit())
			}
		}
	} else if !g.open("ties") {
		return nil
	}
	if g.chance(0.2) {
		rel.Set("filter", g.filter(far.Ref))
	}
	g.entity(rel, ectx{t: far.Ref, depth: x.depth + 1, anc: append(slices.Clone(x.anc), x.t), through: true})
	g.note("embed through")
	return M("name", g.fieldName(used, "many"+far.Ref.Name), "embed", rel)
}

// related draws the rows related to x's table for an id array or an
// aggregate: through a join table (with chance through), else a child
// table by its foreign key (fk). rel is nil when there are none.
func (g *gen) related(x ectx, through float64) (rel *Node, target *Table, fk *FK) {
	if g.chance(through) {
		j, near, far := g.through(x.t)
		if j == nil {
			return nil, nil, nil
		}
		th, jm := throughNode(j, near, far)
		return M("table", far.Ref.MappingName(), "through", th, "join", jm), far.Ref, nil
	}
	ch := g.children(x.t)
	if len(ch) == 0 {
		return nil, nil, nil
	}
	k := ch[g.n(len(ch))]
	return M("table", k.c.MappingName(), "join", joinMap(k.fk, true)), k.c, k.fk
}

// idsField is an id array of related rows (children, or through a join
// table).
func (g *gen) idsField(x ectx, used map[string]bool) *Node {
	rel, target, fk := g.related(x, 0.3)
	if rel == nil {
		return nil
	}
	if len(target.PK) != 1 || g.chance(0.3) {
		cols := target.Cols
		c := cols[g.n(len(cols))]
		rel.Set("column", c.Name)
	}
	if !g.tieFree(target) && !g.open("ties") {
		return nil
	}
	if g.chance(0.4) {
		if ob := g.orderBy(target, true); len(ob) > 0 {
			rel.Set("orderBy", ob)
			if g.chance(0.4) {
				rel.Set("limit", g.limit())
			}
		}
	}
	if g.chance(0.2) {
		rel.Set("filter", g.filter(target))
	}
	name := g.fieldName(used, "ids"+target.Name)
	f := M("name", name, "ids", rel)
	if ref, ok := g.rootColl[target]; ok && rel.Get("column") == nil && g.chance(0.5) {
		f.Set("ref", ref)
	}
	if x.root && fk != nil && (rel.Get("column") == nil || rel.Get("limit") == nil) {
		// a NULL value gives no id: count the values (after limit, which
		// the check's count cannot follow)
		g.arrayCheck(x, name, target, fk, rel)
	}
	g.note("ids")
	return f
}

// aggregate is count/sum/min/max/avg over related rows.
func (g *gen) aggregate(x ectx, used map[string]bool) *Node {
	rel, target, fk := g.related(x, 0.25)
	if rel == nil {
		return nil
	}
	fn := pick(g.rng, "count", "count", "sum", "min", "max", "avg")
	var col *Column
	switch fn {
	case "count":
		if g.chance(0.4) && len(target.Cols) > 0 {
			col = target.Cols[g.n(len(target.Cols))]
		}
	default:
		var ok []*Column
		for _, c := range target.Cols {
			if (fn == "sum" || fn == "avg") && c.T.Sum || (fn == "min" || fn == "max") && c.T.MinMax {
				ok = append(ok, c)
			}
		}
		if len(ok) == 0 {
			return nil
		}
		col = ok[g.n(len(ok))]
		if (fn == "sum" || fn == "avg") && col.T.Fam == "money" {
			return nil
		}
	}
	agg := M("fn", fn, "table", rel.Get("table"), "join", rel.Get("join"))
	if th := rel.Get("through"); th != nil {
		agg = M("fn", fn, "table", rel.Get("table"), "through", th, "join", rel.Get("join"))
	}
	if col != nil {
		agg.Set("column", col.Name)
	}
	if g.chance(0.2) {
		agg.Set("filter", g.filter(target))
	}
	name := g.fieldName(used, fn+target.Name)
	if fn == "count" && x.root && fk != nil {
		g.countCheck(x, name, target, fk, agg)
	}
	if fn != "count" && (col.T.Fam == "numeric" || col.T.Int == 64 || fn == "avg") && g.numericMode() == "decimal" {
		g.c.Ferret = false
	}
	g.note("aggregate %s", fn)
	return M("name", name, "aggregate", agg)
}

// lookup is a lookup (a parent, or a child picked by orderBy) and a field
// reading one of its columns.
func (g *gen) lookup(x ectx, used map[string]bool) (*Node, *Node) {
	name := pick(g.rng, "lk", "type", "Lk2", "ünï")
	if used["lookup:"+name] {
		return nil, nil
	}
	var lk *Node
	var target *Table
	if len(x.t.FKs) > 0 && g.chance(0.7) {
		fk := x.t.FKs[g.n(len(x.t.FKs))]
		lk = M("name", name, "table", fk.Ref.MappingName(), "join", joinMap(fk, false))
		target = fk.Ref
	} else {
		ch := g.children(x.t)
		if len(ch) == 0 {
			return nil, nil
		}
		k := ch[g.n(len(ch))]
		target = k.c
		lk = M("name", name, "table", k.c.MappingName(), "join", joinMap(k.fk, true))
		if !k.fk.Unique || g.chance(0.3) {
			if !g.tieFree(k.c) {
				return nil, nil
			}
			ob := g.orderBy(k.c, true)
			if len(ob) == 0 {
				return nil, nil
			}
			lk.Set("orderBy", ob)
		}
	}
	if g.chance(0.2) {
		lk.Set("filter", g.filter(target))
	}
	used["lookup:"+name] = true
	c := target.Cols[g.n(len(target.Cols))]
	var f *Node
	switch g.n(3) {
	case 0:
		f = M("column", name+"."+c.Name)
	case 1:
		f = M("name", g.fieldName(used, "from"+name), "column", name+"."+c.Name)
	default:
		var texts []*Column
		for _, tc := range target.Cols {
			if tc.T.Text {
				texts = append(texts, tc)
			}
		}
		if len(texts) == 0 || len(x.t.Cols) == 0 {
			f = M("column", name+"."+c.Name)
			break
		}
		f = M("key", name+"."+texts[g.n(len(texts))].Name, "column", x.t.Cols[g.n(len(x.t.Cols))].Name)
		g.note("pivot on lookup")
	}
	g.note("lookup")
	return lk, f
}

// pivot is a field named by the value of one of the row's own text
// columns.
func (g *gen) pivot(x ectx, used map[string]bool) *Node {
	var texts []*Column
	for _, c := range x.t.Cols {
		if c.T.Text {
			texts = append(texts, c)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	g.note("pivot")
	return M("key", texts[g.n(len(texts))].Name, "column", x.t.Cols[g.n(len(x.t.Cols))].Name)
}

// exprField is an expr-lang expression over the row's columns.
func (g *gen) exprField(x ectx, used map[string]bool) *Node {
	var cols []*Column
	for _, c := range x.t.Cols {
		if exprIdent.MatchString(c.Name) && !exprKeywords[c.Name] {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	c := cols[g.n(len(cols))]
	n := c.Name
	var e string
	switch {
	case c.T.Int > 0:
		if g.open("exproverflow") {
			e = pick(g.rng, n+" + 1", n+" * 2", "-"+n, n+" - 1", "("+n+" ?? 0) * 3037000500")
		} else if c.T.Int < 64 {
			e = pick(g.rng, "("+n+" ?? 0) * 2", "("+n+" ?? 0) + 1", n+" == nil ? -1 : "+n+" % 7")
		} else {
			e = pick(g.rng, n+" == nil", "("+n+" ?? 0) % 1000", "("+n+" ?? 0) > 10 ? \"big\" : \"small\"")
		}
	case c.T.Text:
		e = pick(g.rng, "("+n+` ?? "") + "!"`, "upper("+n+` ?? "")`, "len("+n+` ?? "")`, n+` ?? "none"`, n)
	case c.T.Bool:
		e = pick(g.rng, "!("+n+" ?? false)", n+" ? 1 : 0")
	case c.T.Fam == "numeric" || c.T.Sum:
		e = pick(g.rng, "("+n+" ?? 0) * 2", n+" == nil ? 0.5 : "+n, "("+n+" ?? 0) > 1")
	default:
		e = pick(g.rng, n+" == nil", n+" != nil ? \"set\" : \"unset\"", n)
	}
	g.note("expr")
	return M("name", g.fieldName(used, "e"+c.Name), "expr", e)
}

// sqlField is a field computed by PostgreSQL over the row's own columns.
func (g *gen) sqlField(x ectx, used map[string]bool) *Node {
	if len(x.t.Cols) == 0 {
		return nil
	}
	c := x.t.Cols[g.n(len(x.t.Cols))]
	q := ident(c.Name)
	if x.through {
		q = "t." + q
	}
	var e string
	switch {
	case c.T.Int > 0:
		e = pick(g.rng, q+"::numeric * 2", q+"::text", "coalesce("+q+", 0)::bigint / 3", "abs("+q+"::numeric)")
	case strings.HasPrefix(c.T.Fam, "timestamp") || c.T.Fam == "date":
		e = pick(g.rng, "extract(epoch from "+q+")", q+"::text", "extract(year from "+q+")")
		if c.T.Fam == "date" && g.open("sqlerror") && g.chance(0.3) {
			// a date past timestamp's range fails the cast (an error of
			// PostgreSQL's on some rows)
			e = "date_part('year', " + q + ")"
		}
	case c.T.elem != nil:
		e = pick(g.rng, "array_length("+q+", 1)", "array_ndims("+q+")", "cardinality("+q+")", q+"::text")
	case c.T.Fam == "json" || c.T.Fam == "jsonb":
		e = pick(g.rng, q+"::text", "jsonb_typeof("+q+"::jsonb)", q)
	default:
		e = pick(g.rng, q+"::text", "length("+q+"::text)", q+" IS NULL", "md5("+q+"::text)", "to_jsonb("+q+")")
	}
	g.note("sql field")
	return M("name", g.fieldName(used, "s"+c.Name), "sql", e)
}

// constant is a value: field; hostile YAML numbers under yamlconst.
func (g *gen) constant(used map[string]bool) *Node {
	f := M("name", g.fieldName(used, "const"))
	if g.open("yamlconst") && g.chance(0.02) {
		f.Set("value", &Node{Raw: pick(g.rng, ".nan", ".inf", "-.inf", "1e400", "18446744073709551616", "-9223372036854775809", "0x10", "1_000")})
		return f
	}
	f.Set("value", pick[any](g.rng, "text", "", "ünï", 0, -1, 2147483648, int64(9223372036854775807), 1.5, 1e300, true, false, "$x", "a.b", "null", "~"))
	return f
}

// numericMode is the file's numeric mode.
func (g *gen) numericMode() string {
	if v := g.c.Mapping.Get("numeric"); v != nil {
		return v.Str()
	}
	return "decimal"
}
