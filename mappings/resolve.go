package mappings

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Resolve checks the file against the catalog and compiles the plan. It
// reports every problem found, as Problems.
func Resolve(f *File, cat *Catalog) (*Plan, error) {
	plan, ps := ResolveAll(f, cat)
	if len(ps) > 0 {
		return nil, ps
	}
	return plan, nil
}

// ResolveAll is Resolve that also returns, with the problems, the plan of
// the collection entries that resolved without any, so that callers can
// go on checking those (validate has PostgreSQL check their queries).
func ResolveAll(f *File, cat *Catalog) (*Plan, Problems) {
	r := resolver{checker: checker{file: f.Path}, file: f, cat: cat, roots: map[string]*Collection{}, noticed: map[string]bool{}}
	for _, c := range f.Collections {
		if _, ok := r.roots[c.Name]; !ok && c.Bucket == nil {
			r.roots[c.Name] = c
		}
	}
	r.where = "links"
	r.links = r.resolveLinks()
	plan := &Plan{File: f}
	shared := map[string]int{}
	for _, c := range f.Collections {
		shared[c.Name]++
	}
	linkProblems := len(r.ps)
	for _, c := range f.Collections {
		before := len(r.ps)
		r.where = c.Name
		cp := r.collection(c)
		if cp == nil || len(r.ps) > before {
			continue
		}
		if shared[c.Name] > 1 || c.Discriminator != "" {
			cp.Discriminator, cp.DiscriminatorValue = c.Discriminator, c.discriminatorValue()
		}
		Walk(cp.Root, finishJoinKeys)
		plan.Collections = append(plan.Collections, cp)
	}
	if linkProblems > 0 {
		plan.Collections = nil
	}
	r.resolveIndexes(plan)
	plan.Notices = r.notices
	slices.SortStableFunc(plan.Notices, func(a, b Notice) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	return plan, r.ps.sorted()
}

// finishJoinKeys points JoinCols at the JoinKeyCols they name, placed
// after the node's columns now that every column is known.
func finishJoinKeys(n *Node) bool {
	for i, x := range n.keyExtra {
		if x >= 0 {
			n.JoinCols[i] = len(n.Columns) + x
		}
	}
	n.keyExtra = nil
	return true
}

type resolver struct {
	checker
	file  *File
	cat   *Catalog
	roots map[string]*Collection
	// where names the collection entry being resolved, for notices;
	// notices are those found, noticed the tables and names told of.
	where   string
	notices []Notice
	noticed map[string]bool
	// links maps a collection name to the id arrays links add to it.
	links map[string][]*linkField
}

// table is the table a name of the mapping resolves to, or nil after
// reporting why there is none.
func (r *resolver) table(name string, p Pos) *Table {
	t := r.cat.Table(name)
	if t != nil {
		r.notice(name, t, p)
		return t
	}
	if res, ok := r.cat.Names[name]; ok && res.Problem != "" {
		r.add(p, "table %s: %s", quoteWritten(name), res.Problem)
		return nil
	}
	if _, err := ParseTableName(name); err != nil {
		r.add(p, "table %s: %v", quoteWritten(name), err)
		return nil
	}
	r.add(p, "table %s does not exist in the source database", quoteWritten(name))
	return nil
}

// notice records what the user should know of table t, named name at p:
// once per name, that other schemas of the search_path hold a table of
// that name too; once per table, that its inheritance children are not
// read.
func (r *resolver) notice(name string, t *Table, p Pos) {
	q := t.QualifiedName()
	if res := r.cat.Names[name]; len(res.Shadowed) > 0 && !r.noticed["name "+name] {
		r.noticed["name "+name] = true
		r.notices = append(r.notices, Notice{File: r.file.Path, Pos: p, Collection: r.where, Rule: "search-path", Table: q,
			Msg: fmt.Sprintf("table %s resolves to %s, the first on the role's search_path (%s); %s %s too", quoteWritten(name), q,
				strings.Join(quoteIdents(r.cat.SearchPath), ", "), strings.Join(res.Shadowed, " and "), plural(len(res.Shadowed), "exists", "exist")),
			Suggestion: "qualify the name (schema.table) to say which one is meant whatever the search_path"})
	}
	if t.RowSecurity != nil && !r.noticed["rls "+q] {
		r.noticed["rls "+q] = true
		policies := "no policy lets it read any row"
		if len(t.RowSecurity.Policies) > 0 {
			policies = plural(len(t.RowSecurity.Policies), "policy ", "policies ") + strings.Join(t.RowSecurity.Policies, ", ")
		}
		r.notices = append(r.notices, Notice{File: r.file.Path, Pos: p, Collection: r.where, Rule: "row-security", Table: q,
			Msg:        fmt.Sprintf("row-level security shows the source role only some rows of %s (%s): what is read holds only those", q, policies),
			Suggestion: "connect as a role that reads every row (the table's owner, or a role with BYPASSRLS) to migrate them all"})
	}
	if len(t.Children) > 0 && t.OwnRowsOnly() && !r.noticed["table "+q] {
		r.noticed["table "+q] = true
		children := make([]string, len(t.Children))
		for i, c := range t.Children {
			children[i] = c.Name
			if c.Estimate >= 0 {
				children[i] += fmt.Sprintf(" (~%d rows)", c.Estimate)
			}
		}
		r.notices = append(r.notices, Notice{File: r.file.Path, Pos: p, Collection: r.where, Rule: "inheritance", Table: q,
			Msg: fmt.Sprintf("reads only %s's own rows; its inheritance %s %s %s not read", q, plural(len(children), "child", "children"),
				strings.Join(children, ", "), plural(len(children), "is", "are")),
			Suggestion: "map a child as its own collection, or a view that unions them"})
	}
}

func quoteIdents(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = QuoteIdent(s)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (r *resolver) collection(c *Collection) *CollectionPlan {
	t := r.table(c.Table, c.pos.at("table"))
	if t == nil {
		return nil
	}
	n := &Node{Kind: NodeRoot, Path: c.Name, Pos: c.pos.self, Table: t, Filter: c.Filter, FilterPos: c.pos.at("filter")}
	cp := &CollectionPlan{Name: c.Name, Pos: c.pos.self, Root: n, IDPrefix: c.IDPrefix}
	if c.Bucket != nil {
		if !r.bucket(cp, c) {
			return nil
		}
		r.entity(n, &c.Entity, c.pos, c.Bucket.By, nil)
		return cp
	}
	idCols := []string(c.ID)
	if len(idCols) == 0 {
		idCols = t.PrimaryKey
		if len(idCols) == 0 && t.Kind != "" {
			r.add(c.pos.at("table"), "%s: %q is a %s, which has no primary key; set id to the columns that name a row (they must be unique and not null; denorm cannot check it, verify reports duplicate _ids)", c.Name, c.Table, t.Kind)
			return nil
		}
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
		if !isUniqueKey(t, idCols) && t.Kind == "" {
			// (A view's uniqueness cannot be checked: see the README.)
			r.add(c.pos.at("id"), "%s: id columns (%s) are not a primary key or a unique key of NOT NULL columns of %q, so _id would not be unique", c.Name, strings.Join(idCols, ", "), c.Table)
		}
	}
	ok := true
	for _, col := range idCols {
		if what, why := keyTypeProblem(*t.Column(col)); what != "" {
			p := c.pos.at("id")
			if len(c.ID) == 0 {
				p = c.pos.at("table")
			}
			r.add(p, "collection %s: _id column %s is %s: %s; name other id columns with id:, or map a view whose columns make a usable key", c.Name, col, what, why)
			ok = false
		}
	}
	if !ok {
		return nil
	}
	for _, col := range idCols {
		i := r.need(n, col)
		cp.IDCols = append(cp.IDCols, i)
		cp.IDNames = append(cp.IDNames, fieldName(&c.Entity, col))
		if why := FieldNameProblem(cp.IDNames[len(cp.IDNames)-1]); why != "" && len(idCols) > 1 {
			r.nameProblem(c.pos.at("id"), c.Name+"._id", cp.IDNames[len(cp.IDNames)-1], why)
		}
	}
	for _, i := range cp.IDCols {
		cp.IDKeys = append(cp.IDKeys, r.identity(n, i))
	}
	r.entity(n, &c.Entity, c.pos, idCols, r.links[c.Name])
	for _, lf := range r.links[c.Name] {
		if !lf.placed {
			r.addLinkField(n, lf, c.pos.self)
		}
	}
	return cp
}

// need returns the index of column col in n.Columns, adding it.
func (r *resolver) need(n *Node, col string) int {
	for i, c := range n.Columns {
		if c.Name == col && c.Canon == "" && c.SQL == "" {
			return i
		}
	}
	c := n.Table.Column(col)
	if c == nil {
		return -1
	}
	n.Columns = append(n.Columns, *c)
	n.Columns[len(n.Columns)-1].KeepPadding = r.file.Char == CharKeep
	n.Columns[len(n.Columns)-1].TimestampText = r.file.Timestamp == TimestampString
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

// fieldNames detects duplicate field names within one (sub)document.
type fieldNames struct {
	r     *resolver
	where string
	seen  map[string]Pos
}

func (fn *fieldNames) add(name string, p Pos) {
	if name == "" {
		return
	}
	if why := FieldNameProblem(name); why != "" {
		fn.r.nameProblem(p, fn.where, name, why)
		return
	}
	if prev, dup := fn.seen[name]; dup {
		fn.r.add(p, "%s: field %q is already defined at line %d", fn.where, name, prev.Line)
		return
	}
	fn.seen[name] = p
}

// nameProblem reports a field name made from a column that no target
// can store (FieldNameProblem).
func (r *resolver) nameProblem(p Pos, where, name, why string) {
	r.add(p, "%s: field name %q cannot be stored: %s; name the field (name:, or rename: for the columns \"*\" takes)", where, name, why)
}

// entity compiles fields and lookups of n; skip lists columns "*" leaves
// out (the _id columns of a root, the join columns of a relation); links
// are the id arrays links add to a collection's root.
func (r *resolver) entity(n *Node, e *Entity, pos positions, skip []string, links []*linkField) {
	where := n.Path
	t := n.Table
	for _, col := range slices.Sorted(maps.Keys(e.Rename)) {
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
		if ln := r.relation(n, l, where+"."+l.Name, NodeLookup); ln != nil {
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
	names := &fieldNames{r: r, where: where, seen: map[string]Pos{}}
	if n.Kind == NodeRoot {
		names.seen["_id"] = pos.self
	}
	addField := func(fp FieldPlan) {
		names.add(fp.Name, fp.Pos)
		n.Fields = append(n.Fields, fp)
	}
	for _, fd := range fields {
		p := fd.pos.self
		switch {
		case fd.All:
			for _, c := range t.Columns {
				if listed[c.Name] || slices.Contains(skip, c.Name) || slices.Contains(e.Exclude, c.Name) {
					continue
				}
				i := r.need(n, c.Name)
				addField(FieldPlan{Kind: FieldColumn, Name: fieldName(e, c.Name), Value: Ref{Col: i}, Pos: p})
			}
		case fd.Embed != nil:
			if en := r.relation(n, fd.Embed, where+"."+fd.Name, NodeEmbed); en != nil {
				addField(FieldPlan{Kind: FieldEmbed, Name: fd.Name, Embed: en, Pos: p})
			}
		case fd.Ids != nil:
			if en := r.relation(n, fd.Ids, where+"."+fd.Name, NodeIds); en != nil {
				addField(FieldPlan{Kind: FieldIds, Name: fd.Name, Embed: en, RefCollection: r.refCollection(fd), Pos: p})
			}
		case fd.Aggregate != nil:
			if en := r.relation(n, fd.Aggregate, where+"."+fd.Name, NodeAggregate); en != nil {
				if fd.Numeric != "" {
					en.Numeric[0] = fd.Numeric
				}
				if fd.Timestamp != "" {
					if !r.timestampColumn(en.Columns[0], fd.pos.at("timestamp"), where+"."+fd.Name) {
						continue
					}
					en.Columns[0].TimestampText = fd.Timestamp == TimestampString
				}
				fp := FieldPlan{Kind: FieldAggregate, Name: fd.Name, Embed: en, Pos: p}
				if fd.Key != "" {
					k, ok := ref(fd.Key, fd.pos.at("key"))
					if !ok {
						continue
					}
					fp.Pivot = &k
				}
				addField(fp)
			}
		case fd.Expr != "":
			prog, vars, err := compileExpr(fd.Expr, n, lookups, r)
			if err != nil {
				r.add(fd.pos.at("expr"), "%s: expr: %v", where, err)
				continue
			}
			n.ExprEnv = mergeVars(n.ExprEnv, vars)
			fp := FieldPlan{Kind: FieldExpr, Name: fd.Name, Program: prog, Source: fd.Expr, Pos: p}
			for _, v := range vars {
				fp.Reads = append(fp.Reads, v.Name)
			}
			if fd.Key != "" {
				k, ok := ref(fd.Key, fd.pos.at("key"))
				if !ok {
					continue
				}
				fp.Pivot = &k
			}
			addField(fp)
		case fd.SQL != "":
			// Computed by PostgreSQL as JSON (to_json), whatever its type:
			// numbers exact as the numeric mode says, dates as ISO text.
			n.Columns = append(n.Columns, Column{Name: fd.Name, Type: "json", TypeName: "json", Category: "U", SQL: fd.SQL})
			mode := r.file.Numeric
			if fd.Numeric != "" {
				mode = fd.Numeric
			}
			n.Numeric = append(n.Numeric, mode)
			addField(FieldPlan{Kind: FieldColumn, Name: fd.Name, Value: Ref{Col: len(n.Columns) - 1}, Pos: p})
		case fd.Value != nil:
			addField(FieldPlan{Kind: FieldConst, Name: fd.Name, Const: fd.Value.V, Pos: p})
		case fd.Link != "":
			placed := false
			for _, lf := range links {
				if lf.table == fd.Link || r.cat.Table(lf.table) != nil && r.cat.Table(lf.table) == r.cat.Table(fd.Link) {
					if fd.Name != "" && fd.Name != lf.name {
						continue
					}
					r.addLinkFieldWith(n, lf, p, addField)
					placed = true
					break
				}
			}
			if !placed {
				r.add(fd.pos.at("link"), "%s: no link on table %q gives this collection an id array%s", where, fd.Link, nameSuffix(fd.Name))
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
			if fd.Char != "" {
				owner := n
				if v.Lookup != nil {
					owner = v.Lookup
				}
				owner.Columns[v.Col].KeepPadding = fd.Char == CharKeep
			}
			if fd.Timestamp != "" {
				owner := n
				if v.Lookup != nil {
					owner = v.Lookup
				}
				if !r.timestampColumn(owner.Columns[v.Col], fd.pos.at("timestamp"), where) {
					continue
				}
				owner.Columns[v.Col].TimestampText = fd.Timestamp == TimestampString
			}
			fp := FieldPlan{Kind: FieldColumn, Name: fd.Name, Value: v, RefCollection: r.refCollection(fd), Pos: p}
			if fd.Key != "" {
				k, ok := ref(fd.Key, fd.pos.at("key"))
				if !ok {
					continue
				}
				fp.Pivot = &k
			} else if fp.Name == "" {
				col := fd.Column
				if i := strings.IndexByte(col, '.'); i >= 0 {
					col = col[i+1:]
				}
				fp.Name = fieldName(e, col)
			}
			addField(fp)
		}
	}
}

// timestampColumn reports whether c (a field's column or aggregate)
// holds timestamps, which a field's timestamp: applies to; else it
// reports the problem at p.
func (r *resolver) timestampColumn(c Column, p Pos, where string) bool {
	if IsTimestamp(c) {
		return true
	}
	r.add(p, "%s: timestamp applies to timestamp and timestamptz columns (and arrays of them); %s is %s", where, c.Name, typeText(c))
	return false
}

// IsTimestamp reports whether c holds timestamp or timestamptz values,
// or arrays of them (a domain over them included: c describes the base
// type).
func IsTimestamp(c Column) bool {
	t := c.TypeName
	if c.Category == "A" {
		t = c.ElemTypeName
	}
	return t == "timestamp" || t == "timestamptz"
}

func nameSuffix(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" named %q", name)
}
