package mappings

import (
	"slices"
	"strings"
)

// Relations: embeds, lookups, id arrays and aggregates each join a table
// to their parent node. relation resolves that join (direct, or through a
// join table), the order and the one-row rules; joinPair, needKey and
// identity the key columns a join is matched on in Go, exactly as
// PostgreSQL's = would match them (see joinkey.go).

// relation resolves an embed, lookup, id array or aggregate of parent.
func (r *resolver) relation(parent *Node, rel *Relation, path string, kind NodeKind) *Node {
	t := r.table(rel.Table, rel.pos.at("table"))
	if t == nil {
		return nil
	}
	n := &Node{Kind: kind, Path: path, Pos: rel.pos.self, Table: t, Filter: rel.Filter, FilterPos: rel.pos.at("filter"), Parent: parent,
		Limit: rel.Limit, Object: rel.As == "object" || kind == NodeLookup}
	ok := true
	// Where the join's other side lives: the parent, or the join table.
	other, otherName := parent.Table, parent.Table.Name
	if rel.Through != nil {
		jt := r.table(rel.Through.Table, rel.Through.pos.at("table"))
		if jt == nil {
			return nil
		}
		n.Through = &ThroughPlan{Table: jt}
		other, otherName = jt, jt.Name
	}
	var joinCols []string
	// rules: how each pair matched in Go compares (rel.Join, or the
	// through join's pairs for a relation reached through a join table).
	var rules []keyRule
	for _, j := range rel.Join {
		a := t.Column(j.Column)
		if a == nil {
			r.add(rel.pos.at("join"), "%s: join: table %q has no column %q", path, t.Name, j.Column)
			ok = false
		}
		b := other.Column(j.Parent)
		if b == nil {
			r.add(rel.pos.at("join"), "%s: join: table %q has no column %q", path, otherName, j.Parent)
			ok = false
		}
		if a != nil && b != nil {
			if rel.Through != nil {
				// Joined inside PostgreSQL's query: its own = applies.
				if !comparable(*a, *b) {
					r.add(rel.pos.at("join"), "%s: join: %s.%s (%s) and %s.%s (%s) have incompatible types", path, t.Name, a.Name, a.Type, otherName, b.Name, b.Type)
					ok = false
				}
			} else if rule, err := joinKeyRule(*a, *b); err != nil {
				r.joinProblem(rel.pos.at("join"), path, t.Name, a, otherName, b, err)
				ok = false
			} else {
				rules = append(rules, rule)
			}
		}
		joinCols = append(joinCols, j.Column)
	}
	if !ok {
		return nil
	}
	n.On = slices.Clone(rel.Join)
	if rel.Through != nil {
		n.On = slices.Clone(rel.Through.Join)
		for _, j := range rel.Join {
			n.Through.On = append(n.Through.On, [2]string{j.Column, j.Parent})
		}
		// The parent side of the join table.
		for _, j := range rel.Through.Join {
			a := n.Through.Table.Column(j.Column)
			if a == nil {
				r.add(rel.Through.pos.at("join"), "%s: through: join: table %q has no column %q", path, n.Through.Table.Name, j.Column)
				ok = false
			}
			p := parent.Table.Column(j.Parent)
			if p == nil {
				r.add(rel.Through.pos.at("join"), "%s: through: join: table %q has no column %q", path, parent.Table.Name, j.Parent)
				ok = false
			}
			if a == nil || p == nil {
				continue
			}
			rule, err := joinKeyRule(*a, *p)
			if err != nil {
				r.joinProblem(rel.Through.pos.at("join"), path+": through", n.Through.Table.Name, a, parent.Table.Name, p, err)
				ok = false
				continue
			}
			r.joinPair(n, parent, *a, *p, rule, true)
		}
	} else if kind != NodeAggregate {
		for i, j := range rel.Join {
			a, b := *t.Column(j.Column), *other.Column(j.Parent)
			r.joinPair(n, parent, a, b, rules[i], rules[i].canon != "")
		}
	}
	if !ok {
		return nil
	}
	if kind == NodeAggregate {
		if rel.Through == nil {
			// The group columns: the join columns, as PostgreSQL compares
			// them.
			for i, j := range rel.Join {
				a, b := *t.Column(j.Column), *other.Column(j.Parent)
				r.joinPair(n, parent, a, b, rules[i], true)
			}
		}
		if !r.aggregate(n, rel, path) {
			return nil
		}
	}
	// Order: the declared order; an id array defaults to its values,
	// named as they are (order).
	orderBy, order := rel.OrderBy, rel.order
	if kind == NodeIds && len(rel.values) > 0 {
		for _, col := range rel.values {
			n.Values = append(n.Values, r.need(n, col))
		}
	} else if kind == NodeIds {
		col, ok := r.idsColumn(n, rel, path)
		if !ok {
			return nil
		}
		n.Value = r.need(n, col)
		if len(orderBy) == 0 && len(order) == 0 {
			order = []string{col}
		}
	}
	if kind != NodeAggregate {
		for _, o := range orderBy {
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
		for _, col := range order {
			c := r.need(n, col)
			if c < 0 {
				r.add(rel.pos.self, "%s: table %q has no column %q", path, t.Name, col)
				continue
			}
			n.Order = append(n.Order, OrderCol{Col: c})
		}
	}
	if n.Object {
		unique := rel.Through == nil && isUniqueKey(t, joinCols)
		switch {
		case unique:
		case len(rel.OrderBy) > 0:
			n.Limit = 1 // the first row in order
		case kind == NodeLookup:
			r.add(rel.pos.at("join"), "%s: join columns (%s) are not a unique key of %q, so several rows may match; join on a unique key, or add orderBy to use the first row in that order", path, strings.Join(joinCols, ", "), t.Name)
			return nil
		default:
			r.add(rel.pos.at("join"), "%s: join columns (%s) are not a unique key of %q, so several rows may match; use an array embed, join on a unique key, or add orderBy to embed the first row in that order", path, strings.Join(joinCols, ", "), t.Name)
			return nil
		}
	}
	if kind == NodeEmbed && r.cycle(n, rel) {
		r.add(rel.pos.at("join"), "%s: cycle of embeddings: this embeds %q back into its own child through the same join, so the document would contain itself", path, t.Name)
		return nil
	}
	parent.Children = append(parent.Children, n)
	if kind == NodeEmbed {
		r.entity(n, &rel.Entity, rel.pos, joinCols, nil)
	}
	return n
}

// joinPair adds one pair of join columns matched in Go: a of n's table
// (or of its join table), b of parent's, compared by rule. extra puts n's
// side among JoinKeyCols (a join table's column, an aggregate's group
// column, or a key computed by PostgreSQL) rather than among Columns.
func (r *resolver) joinPair(n, parent *Node, a, b Column, rule keyRule, extra bool) {
	if rule.canon != "" {
		n.ParentCols = append(n.ParentCols, r.needKey(parent, b.Name, rule.canon))
		n.ParamTypes = append(n.ParamTypes, CanonParamType(rule.canon, b))
		a = keyColumnOf(a, rule.canon)
	} else {
		n.ParentCols = append(n.ParentCols, r.need(parent, b.Name))
		n.ParamTypes = append(n.ParamTypes, b.Type)
	}
	if !extra {
		n.JoinCols = append(n.JoinCols, r.need(n, a.Name))
		n.keyExtra = append(n.keyExtra, -1)
		return
	}
	a.KeepPadding = r.file.Char == CharKeep
	a.TimestampText = r.file.Timestamp == TimestampString
	n.JoinKeyCols = append(n.JoinKeyCols, a)
	n.JoinCols = append(n.JoinCols, -1) // set by finishJoinKeys
	n.keyExtra = append(n.keyExtra, len(n.JoinKeyCols)-1)
}

// joinProblem reports a pair of join columns that cannot be matched as
// PostgreSQL matches them.
func (r *resolver) joinProblem(p Pos, path, ta string, a *Column, tb string, b *Column, err error) {
	if err == errIncompatible {
		r.add(p, "%s: join: %s.%s (%s) and %s.%s (%s) have incompatible types", path, ta, a.Name, typeText(*a), tb, b.Name, typeText(*b))
		return
	}
	r.add(p, "%s: join: %s.%s (%s) and %s.%s (%s): %v", path, ta, a.Name, typeText(*a), tb, b.Name, typeText(*b), err)
}

// keyColumnOf is the key column computed by PostgreSQL for column c
// compared as type canon (see Column.Canon).
func keyColumnOf(c Column, canon string) Column {
	return Column{Name: c.Name, Type: "text", TypeName: "text", Category: "S", NotNull: c.NotNull, Canon: canon}
}

// needKey returns the index in n.Columns of the key column of col
// compared as type canon, adding it.
func (r *resolver) needKey(n *Node, col, canon string) int {
	for i, c := range n.Columns {
		if c.Name == col && c.Canon == canon {
			return i
		}
	}
	c := n.Table.Column(col)
	if c == nil {
		return -1
	}
	n.Columns = append(n.Columns, keyColumnOf(*c, canon))
	n.Numeric = append(n.Numeric, r.file.Numeric)
	return len(n.Columns) - 1
}

// identity is the index in n.Columns of the value that identifies column
// col's values as PostgreSQL compares them: the column, or its key column
// (numeric 1.0 and 1.00 are one key).
func (r *resolver) identity(n *Node, col int) int {
	if canon := canonFor(n.Columns[col]); canon != "" {
		return r.needKey(n, n.Columns[col].Name, canon)
	}
	return col
}

// comparable reports whether two columns can be joined: same category
// (numbers with numbers, strings with strings) or the same type.
func comparable(a, b Column) bool {
	return a.TypeName == b.TypeName || (a.Category == b.Category && a.Category != "U" && a.Category != "A")
}
