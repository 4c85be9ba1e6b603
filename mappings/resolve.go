package mappings

import (
	"slices"
	"strings"
)

// Resolving: Resolve checks a parsed file against the catalog and
// compiles its Plan. This file holds the walk every pattern shares: the
// links first, then each collection's root and _id (its fields go to
// entity), and the columns each node reads (need). Each pattern is
// resolved in its own file:
//
//	resolve_table.go      tables a mapping names, and notices about them
//	resolve_fields.go     the fields of a document or embedded document
//	resolve_relation.go   the join of every relation to its parent
//	resolve_embed.go      embeds (the cycle check)
//	resolve_lookup.go     lookups, and the lookup.column a field reads
//	resolve_ids.go        id arrays and links
//	resolve_aggregate.go  aggregates
//	resolve_bucket.go     bucket collections
//
// Discriminators are checked in check.go (discriminatorValue) and set on
// the plan by ResolveAll; the indexes they need are in index.go.

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
		r.resolveOnDelete(cp, c)
		if len(r.ps) > before {
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
