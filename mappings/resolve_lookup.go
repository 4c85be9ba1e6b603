package mappings

import "strings"

// Lookups: one row of another table, joined on a unique key (or the
// first in orderBy), whose columns the fields of an entity read as
// lookup.column; no subdocument is written for it. relation resolves the
// join as for every relation; lookups resolves an entity's lookups, and
// fieldRef the column a field names, of the entity's table or of one of
// its lookups.

// lookups resolves the lookups of entity e of node n, by name; a lookup
// that does not resolve is reported and left out.
func (r *resolver) lookups(n *Node, e *Entity) map[string]*Node {
	where := n.Path
	lookups := map[string]*Node{}
	for _, l := range e.Lookups {
		if ln := r.relation(n, l, where+"."+l.Name, NodeLookup); ln != nil {
			lookups[l.Name] = ln
		}
	}
	return lookups
}

// fieldRef is the value that s, a field's column: or key:, names at p: a
// column of n's table, or lookup.column, a column of one of n's lookups.
func (r *resolver) fieldRef(n *Node, lookups map[string]*Node, s string, p Pos) (Ref, bool) {
	where, t := n.Path, n.Table
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
