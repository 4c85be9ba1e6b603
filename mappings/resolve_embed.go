package mappings

// Embeds: a related row or array of rows written inside its parent's
// document. relation resolves an embed's join as for every relation, and
// entity its fields; what is an embed's own is the refusal of a cycle, a
// child that would embed its own parent.

// cycle reports whether embed n joins back to its grandparent through the
// reverse of the join that led to its parent: the child would embed its
// own parent.
func (r *resolver) cycle(n *Node, rel *Relation) bool {
	p := n.Parent
	if p != nil && p.Parent != nil && p.Through != nil && n.Through != nil && p.Kind == NodeEmbed {
		return cycleThrough(n, rel)
	}
	if p == nil || p.Parent == nil || p.Through != nil || n.Through != nil || p.Kind != NodeEmbed {
		return false
	}
	gp := p.Parent
	if n.Table != gp.Table || len(rel.Join) != len(p.JoinCols) {
		return false
	}
	for i, j := range rel.Join {
		// p joined gp by p.JoinCols[i] = gp.ParentCols[i]; n joins p by
		// j.Column (in n's table = gp's) = j.Parent (in p's table).
		if joinColName(p, i) != j.Parent || gp.Columns[p.ParentCols[i]].Name != j.Column {
			return false
		}
	}
	return true
}

// joinColName is the name of n's column in its i-th join pair while n is
// resolved: a key computed by PostgreSQL (a date, a numeric...) is still
// among JoinKeyCols, its JoinCols entry set only by finishJoinKeys.
func joinColName(n *Node, i int) string {
	if c := n.JoinCols[i]; c >= 0 {
		return n.Columns[c].Name
	}
	if i < len(n.keyExtra) && n.keyExtra[i] >= 0 {
		return n.JoinKeyCols[n.keyExtra[i]].Name
	}
	return ""
}

// cycleThrough is cycle for a many-to-many embed: n reaches its
// grandparent's table through the same join table, by the reverse of both
// joins that led to its parent (a book embeds its authors, each embedding
// their books: the book would contain itself).
func cycleThrough(n *Node, rel *Relation) bool {
	p := n.Parent
	gp := p.Parent
	if n.Table != gp.Table || n.Through.Table != p.Through.Table ||
		len(rel.Through.Join) != len(p.Through.On) || len(rel.Join) != len(p.JoinKeyCols) {
		return false
	}
	// p's table joined the join table by p.Through.On {p column, join
	// table column}; n's through join must be {join table column: p column}.
	back := map[[2]string]bool{}
	for _, on := range p.Through.On {
		back[[2]string{on[1], on[0]}] = true
	}
	for _, j := range rel.Through.Join {
		if !back[[2]string{j.Column, j.Parent}] {
			return false
		}
	}
	// The join table met gp by p.JoinKeyCols[i] = gp.Columns[p.ParentCols[i]];
	// n's join must be {gp column: join table column}.
	back = map[[2]string]bool{}
	for i, k := range p.JoinKeyCols {
		back[[2]string{gp.Columns[p.ParentCols[i]].Name, k.Name}] = true
	}
	for _, j := range rel.Join {
		if !back[[2]string{j.Column, j.Parent}] {
			return false
		}
	}
	return true
}
