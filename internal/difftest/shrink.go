package difftest

import (
	"slices"
	"strings"
	"time"
)

// Shrink reduces a failing case while fails stays true: it drops
// collections, mapping entries, tables, rows, columns and types, and
// simplifies values, keeping each step that still fails, until no step
// does or the deadline passes. A step that breaks the case (a mapping
// validate refuses, SQL that no longer loads) does not fail the same way,
// so fails rejects it: the shrinker needs no knowledge of what is valid.
func Shrink(c *Case, fails func(*Case) bool, deadline time.Time) *Case {
	cur := c.clone()
	try := func(cand *Case) bool {
		if time.Now().After(deadline) {
			return false
		}
		if fails(cand) {
			cur = cand
			return true
		}
		return false
	}
	// checks other than the failing kind only slow each run down
	if len(cur.Checks) > 0 {
		x := cur.clone()
		x.Checks = nil
		try(x)
	}
	for progress := true; progress && time.Now().Before(deadline); {
		progress = false
		// the mapping: remove whole entries first, then their parts
		for _, path := range mappingPaths(cur.Mapping) {
			x := cur.clone()
			if removeAt(x.Mapping, path) && try(x) {
				progress = true
			}
		}
		// tables (not the ones the mapping names would fail to validate)
		for i := len(cur.Tables) - 1; i >= 0; i-- {
			if i >= len(cur.Tables) {
				continue
			}
			x := cur.clone()
			x.Tables = slices.Delete(x.Tables, i, i+1)
			if try(x) {
				progress = true
			}
		}
		// rows: halves, then quarters, ... then one at a time
		for ti := range cur.Tables {
			for size := len(cur.Tables[ti].Rows); size >= 1; size /= 2 {
				for start := 0; ti < len(cur.Tables) && start < len(cur.Tables[ti].Rows); start += size {
					x := cur.clone()
					rows := x.Tables[ti].Rows
					x.Tables[ti].Rows = slices.Delete(slices.Clone(rows), start, min(start+size, len(rows)))
					if try(x) {
						progress = true
						start -= size
					}
				}
			}
		}
		// columns outside the keys
		for ti := range cur.Tables {
			for ci := len(cur.Tables[ti].Cols) - 1; ci >= 0; ci-- {
				if ti >= len(cur.Tables) || ci >= len(cur.Tables[ti].Cols) {
					continue
				}
				x := cur.clone()
				if x.Tables[ti].dropColumn(ci) && try(x) {
					progress = true
				}
			}
		}
		// types no longer used
		for i := len(cur.Types) - 1; i >= 0; i-- {
			if i >= len(cur.Types) {
				continue
			}
			x := cur.clone()
			x.Types = slices.Delete(x.Types, i, i+1)
			if try(x) {
				progress = true
			}
		}
		// values: NULL, or a short one
		for ti := range cur.Tables {
			for ri := range cur.Tables[ti].Rows {
				for vi := range cur.Tables[ti].Rows[ri] {
					if ti >= len(cur.Tables) || ri >= len(cur.Tables[ti].Rows) || vi >= len(cur.Tables[ti].Rows[ri]) {
						continue
					}
					v := cur.Tables[ti].Rows[ri][vi]
					for _, s := range simpler(v) {
						x := cur.clone()
						x.Tables[ti].Rows[ri][vi] = s
						if try(x) {
							progress = true
							break
						}
					}
				}
			}
		}
		// the run's settings
		if cur.BatchSize != 1000 {
			x := cur.clone()
			x.BatchSize = 1000
			if try(x) {
				progress = true
			}
		}
		if cur.Workers != 1 {
			x := cur.clone()
			x.Workers = 1
			if try(x) {
				progress = true
			}
		}
		if cur.Ferret {
			x := cur.clone()
			x.Ferret = false
			if try(x) {
				progress = true
			}
		}
	}
	return cur
}

// simpler are shorter stand-ins for a literal, simplest first.
func simpler(v string) []string {
	if v == "NULL" {
		return nil
	}
	out := []string{"NULL"}
	if len(v) > 12 && strings.HasPrefix(v, "'") {
		out = append(out, "'x'", v[:7]+"'")
	}
	return out
}

// mappingPaths lists every removable place of the mapping tree: list
// items and map entries, outermost first.
func mappingPaths(n *Node) [][]int {
	var out [][]int
	var walk func(n *Node, path []int, depth int)
	var levels [][][]int
	walk = func(n *Node, path []int, depth int) {
		for i, it := range n.Items {
			p := append(slices.Clone(path), i)
			for len(levels) <= depth {
				levels = append(levels, nil)
			}
			levels[depth] = append(levels[depth], p)
			walk(it, p, depth+1)
		}
	}
	walk(n, nil, 0)
	for _, l := range levels {
		// later items first, so that removing one keeps the earlier
		// paths valid
		for i := len(l) - 1; i >= 0; i-- {
			out = append(out, l[i])
		}
	}
	return out
}

// removeAt removes the item or entry at path; false when there is none.
func removeAt(n *Node, path []int) bool {
	for _, i := range path[:len(path)-1] {
		if i >= len(n.Items) {
			return false
		}
		n = n.Items[i]
	}
	i := path[len(path)-1]
	if i >= len(n.Items) {
		return false
	}
	if n.Keys != nil {
		if n.Keys[i] == "version" {
			return false
		}
		n.Keys = slices.Delete(n.Keys, i, i+1)
	}
	n.Items = slices.Delete(n.Items, i, i+1)
	return true
}

// dropColumn removes column i and its values; false for a key column.
func (t *Table) dropColumn(i int) bool {
	c := t.Cols[i]
	if slices.Contains(t.PK, c.Name) || t.Parent != nil {
		return false
	}
	for _, u := range t.Unique {
		if slices.Contains(u, c.Name) {
			return false
		}
	}
	ins := slices.Index(t.Insertable(), c)
	t.Cols = slices.Delete(t.Cols, i, i+1)
	for j, fk := range t.FKs {
		if slices.Contains(fk.Cols, c.Name) {
			t.FKs = slices.Delete(t.FKs, j, j+1)
			break
		}
	}
	if ins >= 0 {
		for r := range t.Rows {
			t.Rows[r] = slices.Delete(t.Rows[r], ins, ins+1)
		}
	}
	return true
}

// clone is a deep copy (tables' references to each other follow).
func (c *Case) clone() *Case {
	x := *c
	x.Types = slices.Clone(c.Types)
	x.Notes = slices.Clone(c.Notes)
	x.Checks = slices.Clone(c.Checks)
	x.Mapping = c.Mapping.Clone()
	tables := map[*Table]*Table{}
	for _, t := range c.Tables {
		nt := *t
		tables[t] = &nt
	}
	x.Tables = nil
	for _, t := range c.Tables {
		nt := tables[t]
		nt.Cols = slices.Clone(t.Cols)
		nt.PK = slices.Clone(t.PK)
		nt.Unique = slices.Clone(t.Unique)
		nt.FKs = nil
		for _, fk := range t.FKs {
			nf := *fk
			if r, ok := tables[fk.Ref]; ok {
				nf.Ref = r
			}
			nt.FKs = append(nt.FKs, &nf)
		}
		nt.Rows = make([][]string, len(t.Rows))
		for i, r := range t.Rows {
			nt.Rows[i] = slices.Clone(r)
		}
		if t.Parent != nil {
			if p, ok := tables[t.Parent]; ok {
				nt.Parent = p
			}
		}
		x.Tables = append(x.Tables, nt)
	}
	return &x
}
