package difftest

import (
	"fmt"
	"strings"
	"unicode"
)

// mapping draws the mapping file: file-level modes, one to four
// collections (plain, bucket, shared by two document types), links.
func (g *gen) mapping() {
	m := M("version", 1)
	g.c.Mapping = m
	switch g.weighted(4, 3, 1, 1) {
	case 0:
		m.Set("numeric", "double")
	case 1:
		m.Set("numeric", "string")
	case 2:
		m.Set("numeric", "decimal")
		g.c.Ferret = false
	default:
		g.c.Ferret = false // the default: decimal
	}
	if g.chance(0.4) {
		m.Set("char", pick(g.rng, "trim", "keep"))
	}
	if g.chance(0.3) {
		m.Set("timestamp", pick(g.rng, "string", "date"))
	}
	g.rootColl = map[*Table]string{}
	colls := L()
	var roots []*Table
	for _, t := range g.c.Tables {
		if len(t.IDCols()) > 0 {
			roots = append(roots, t)
		}
	}
	// plain collections first, so that refs and links can point to them
	shuffle(g.rng, roots)
	for i, t := range roots {
		if i > 0 && !g.chance(0.6) {
			continue
		}
		name := g.collName(t)
		g.rootColl[t] = name
	}
	for _, t := range roots {
		name, ok := g.rootColl[t]
		if !ok {
			continue
		}
		colls.Items = append(colls.Items, g.plain(t, name))
	}
	for k := g.weighted(3, 2, 1); k > 0; k-- {
		if b := g.bucket(); b != nil {
			colls.Items = append(colls.Items, b)
		}
	}
	if g.chance(0.25) {
		colls.Items = append(colls.Items, g.shared()...)
	}
	if len(colls.Items) == 0 {
		// no table with an id: a collection validate must refuse
		t := g.c.Tables[0]
		colls.Items = append(colls.Items, M("name", "noid", "table", t.MappingName()))
		g.note("root without id")
	}
	m.Set("collections", colls)
	if links := g.links(); links != nil {
		m.Set("links", links)
	}
}

// collName draws a collection name (unique in the mapping).
func (g *gen) collName(t *Table) string {
	base := strings.Map(func(r rune) rune {
		if r == '"' || r == ';' || r == '$' || r == '.' || r == '/' {
			return '_'
		}
		return r
	}, t.Name)
	if g.chance(0.1) {
		base = pick(g.rng, "Ünï coll", "with space", "a-b", "x.y")
	}
	for i := 0; ; i++ {
		n := base
		if i > 0 {
			n = fmt.Sprintf("%s%d", base, i)
		}
		if !g.collNames[n] {
			if g.collNames == nil {
				g.collNames = map[string]bool{}
			}
			g.collNames[n] = true
			return n
		}
	}
}

// plain is a collection of t's rows.
func (g *gen) plain(t *Table, name string) *Node {
	n := M("name", name, "table", t.MappingName())
	if len(t.PK) == 0 || g.chance(0.1) {
		n.Set("id", t.IDCols())
	}
	filter := ""
	if g.chance(0.25) {
		filter = g.filter(t)
		n.Set("filter", filter)
	}
	g.curColl, g.curFilter = name, filter
	g.entity(n, ectx{t: t, root: true, skip: t.IDCols()})
	g.curColl, g.curFilter = "", ""
	g.addCheck(Check{Collection: name, What: "documents", SQL: fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", t.From(), orTrue(filter))})
	if g.chance(0.2) {
		g.indexes(n)
	}
	return n
}

func orTrue(f string) string {
	if f == "" {
		return "true"
	}
	return "(" + f + ")"
}

// indexes declares an index on a field the documents have.
func (g *gen) indexes(n *Node) {
	f := n.Get("fields")
	if f == nil {
		return
	}
	for _, it := range f.Items {
		if it.Value != nil && it.Str() != "*" {
			g.note("index")
			n.Set("indexes", L(M("keys", camel(it.Str())+pick(g.rng, "", " desc"))))
			return
		}
	}
}

// camel is the mapping reference's default field name of a column
// (first_name -> firstName), written again here because internal packages
// import no layer (mappings.CamelCase is the product's): the first letter
// of each later part upper-cased as a rune, as the reference says.
func camel(col string) string {
	parts := strings.Split(col, "_")
	var b strings.Builder
	for i, p := range parts {
		if p == "" {
			continue
		}
		if i == 0 || b.Len() == 0 {
			b.WriteString(p)
			continue
		}
		r := []rune(p)
		b.WriteRune(unicode.ToUpper(r[0]))
		b.WriteString(string(r[1:]))
	}
	if b.Len() == 0 {
		return col
	}
	return b.String()
}

// bucket is a bucket collection of a child table's rows by its parent
// key (or by any key-typed column).
func (g *gen) bucket() *Node {
	var cands []*Table
	for _, t := range g.c.Tables {
		// pages need a key to order rows by: a table without one is
		// refused (drawn now and then)
		if len(t.FKs) > 0 && t.Parent == nil && (len(t.IDCols()) > 0 || g.chance(0.1)) {
			cands = append(cands, t)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	t := cands[g.n(len(cands))]
	fk := t.FKs[g.n(len(t.FKs))]
	by := fk.Cols
	size := pick[any](g.rng, 1, 1, 2, 3, 10, 100000, 1000000)
	if g.open("mappingnumbers") && g.chance(0.03) {
		size = pick[any](g.rng, int64(9223372036854775807), int64(1)<<53, int64(2147483648), 1000001)
	}
	b := M("by", by, "size", size)
	if !g.tieFree(t) {
		return nil
	}
	if ob := g.orderBy(t, true); len(ob) > 0 && g.chance(0.8) && (g.open("arraykey") && g.open("infkey") || keyTypes(t, ob)) {
		// a bucket's orderBy columns are keys of its pages' stream: jsonb
		// and arrays there are class 14's (see Classes)
		b.Set("orderBy", ob)
	}
	if g.chance(0.3) {
		b.Set("items", pick(g.rng, "rows", "Ünï", "items2"))
	}
	if g.chance(0.2) {
		b.Set("page", pick(g.rng, "p", "pageNo"))
	}
	skip := 0
	if g.chance(0.2) {
		skip = pick(g.rng, 0, 1, 3)
		b.Set("skipLast", skip)
	}
	name := g.collName(t)
	n := M("name", name, "table", t.MappingName(), "bucket", b)
	filter := ""
	if g.chance(0.2) {
		filter = g.filter(t)
		n.Set("filter", filter)
	}
	g.entity(n, ectx{t: t, root: false, skip: by})
	if sz, ok := size.(int); ok {
		var nn []string
		for _, c := range by {
			nn = append(nn, ident(c))
		}
		g.addCheck(Check{Collection: name, What: "bucket pages", SQL: fmt.Sprintf(
			"SELECT coalesce(sum(ceil(greatest(n - %d, 0) / %d::numeric)), 0)::bigint FROM (SELECT count(*) n FROM %s WHERE %s AND (%s) IS NOT NULL GROUP BY %s) s",
			skip, sz, t.From(), orTrue(filter), rowNotNull(by), strings.Join(nn, ", "))})
	}
	g.note("bucket size %v", size)
	return n
}

// rowNotNull is an SQL condition true when every column is set.
func rowNotNull(cols []string) string {
	var parts []string
	for _, c := range cols {
		parts = append(parts, ident(c)+" IS NOT NULL")
	}
	return strings.Join(parts, " AND ")
}

// shared is two document types in one collection, told apart by a
// discriminator, their _ids kept apart by idPrefix (or not: validate then
// refuses equal ids).
func (g *gen) shared() []*Node {
	var cands []*Table
	for _, t := range g.c.Tables {
		if len(t.IDCols()) > 0 {
			cands = append(cands, t)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	name := g.collName(&Table{Name: "shared"})
	disc := pick(g.rng, "docType", "t", "Ünï")
	prefix := g.chance(0.7)
	var out []*Node
	var checks []string
	for i := 0; i < 2; i++ {
		t := cands[g.n(len(cands))]
		n := M("name", name, "table", t.MappingName(), "discriminator", disc)
		if len(t.PK) == 0 {
			n.Set("id", t.IDCols())
		}
		if prefix {
			n.Set("idPrefix", pick(g.rng, "a-", "b:", "ü", "x/")+fmt.Sprint(i))
		}
		g.entity(n, ectx{t: t, root: false, skip: t.IDCols()})
		f := n.Get("fields")
		if f == nil {
			f = L("*")
			n.Set("fields", f)
		}
		f.Items = append(f.Items, M("name", disc, "value", pick[any](g.rng, "t", "U", 1, true)))
		if i == 1 {
			// distinct values
			f.Items[len(f.Items)-1].Set("value", "second")
		}
		out = append(out, n)
		checks = append(checks, fmt.Sprintf("(SELECT count(*) FROM %s)", t.From()))
	}
	g.addCheck(Check{Collection: name, What: "documents", SQL: "SELECT " + strings.Join(checks, " + ")})
	g.note("shared collection prefix=%v", prefix)
	return out
}

// links replaces join tables by id arrays on the collections of both
// sides.
func (g *gen) links() *Node {
	var out []any
	for _, j := range g.c.Tables {
		if !j.Join || len(j.FKs) < 2 || !g.chance(0.5) {
			continue
		}
		a, b := j.FKs[0], j.FKs[1]
		ca, okA := g.rootColl[a.Ref]
		cb, okB := g.rootColl[b.Ref]
		if !okA && !okB {
			continue
		}
		sides := L()
		if okA {
			s := M("collection", ca, "column", a.Cols)
			if g.chance(0.3) || !okB {
				s.Set("field", pick(g.rng, "linked", "Ünï"))
			}
			sides.Items = append(sides.Items, s)
		}
		if okB && (ca != cb || !okA) {
			s := M("collection", cb, "column", b.Cols)
			if !okA || g.chance(0.2) {
				s.Set("field", pick(g.rng, "linked2", "Ünï2"))
			}
			sides.Items = append(sides.Items, s)
		}
		if len(sides.Items) == 1 && sides.Items[0].Get("field") == nil {
			sides.Items[0].Set("field", "linked")
		}
		out = append(out, M("table", j.MappingName(), "sides", sides))
		g.note("link")
	}
	if len(out) == 0 {
		return nil
	}
	return L(out...)
}

func (g *gen) addCheck(c Check) {
	for i, old := range g.c.Checks {
		if old.Collection == c.Collection && old.Field == "" && c.Field == "" {
			// a second entry of a collection: documents add up
			g.c.Checks[i].SQL = "SELECT (" + old.SQL + ") + (" + c.SQL + ")"
			return
		}
	}
	g.c.Checks = append(g.c.Checks, c)
}

// arrayCheck: each root document's array field name holds as many items
// as the relation's rows matching its row (at most limit).
func (g *gen) arrayCheck(x ectx, name string, child *Table, fk *FK, rel *Node) {
	coll := g.curColl
	if coll == "" {
		return
	}
	limit := "NULL"
	if l := rel.Get("limit"); l != nil {
		limit = l.Str()
	}
	what := "*"
	if c := rel.Get("column"); c != nil {
		what = "c." + ident(c.Str()) // an id array leaves NULLs out
	}
	g.c.Checks = append(g.c.Checks, Check{Collection: coll, Field: name, What: "array length", SQL: fmt.Sprintf(
		"SELECT least((SELECT count(%s) FROM (SELECT * FROM %s WHERE %s) c WHERE %s), %s) FROM (SELECT * FROM %s WHERE %s) r",
		what, child.From(), orTrue(rel.Get("filter").Str()), joinCond(fk), limit, x.t.From(), orTrue(g.curFilter))})
}

// countCheck: each root document's count aggregate.
func (g *gen) countCheck(x ectx, name string, child *Table, fk *FK, agg *Node) {
	coll := g.curColl
	if coll == "" {
		return
	}
	what := "*"
	if c := agg.Get("column"); c != nil {
		what = "c." + ident(c.Str())
	}
	g.c.Checks = append(g.c.Checks, Check{Collection: coll, Field: name, What: "count", SQL: fmt.Sprintf(
		"SELECT (SELECT count(%s) FROM (SELECT * FROM %s WHERE %s) c WHERE %s) FROM (SELECT * FROM %s WHERE %s) r",
		what, child.From(), orTrue(agg.Get("filter").Str()), joinCond(fk), x.t.From(), orTrue(g.curFilter))})
}

func joinCond(fk *FK) string {
	var parts []string
	for i := range fk.Cols {
		parts = append(parts, "c."+ident(fk.Cols[i])+" = r."+ident(fk.RefCols[i]))
	}
	return strings.Join(parts, " AND ")
}

// keyTypes says whether every orderBy entry names a column of a type
// denorm can use as a key (not jsonb, arrays, composites...: class 14),
// and no date or timestamp (±infinity as a key: class 13).
func keyTypes(t *Table, ob []string) bool {
	for _, o := range ob {
		c := t.col(strings.Fields(o)[0])
		if c == nil || !(c.T.Key || c.T.Int > 0 || c.T.Bool || c.T.Text || strings.Contains(c.T.Fam, "double") || c.T.Fam == "real") {
			return false
		}
		if strings.Contains(c.T.Fam, "date") || strings.Contains(c.T.Fam, "timestamp") {
			return false // ±infinity values: class 13 (infkey)
		}
	}
	return true
}
