package mappings

import (
	"fmt"
	"slices"
	"strings"
)

// Id arrays: a field holding the keys of related rows (ids:), and the id
// arrays that links (a join table between two collections) add to the
// root of each side. resolveLinks turns every link side into an id-array
// relation before the collections are resolved; entity places it where a
// link: field names it, collection at the end of the root otherwise.

// linkField is one side of a link, resolved to a relation of the side's
// root table.
type linkField struct {
	name  string
	table string // join table
	rel   *Relation
	// values and names are the value columns and item field names of an
	// id array of composite keys (see Node.Values); ref the collection the
	// ids are of ("" for a one-sided link).
	values, names []string
	ref           string
	placed        bool
}

// resolveLinks turns every link side into an id-array relation of its
// collection's root table. A side is a foreign key of the join table to
// the side's root table, of one column or several (a composite key: the
// id array then holds documents, the other side's _ids); the id array
// references the other side's collection (ref).
func (r *resolver) resolveLinks() map[string][]*linkField {
	out := map[string][]*linkField{}
	for _, l := range r.file.Links {
		jt := r.table(l.Table, l.pos.at("table"))
		if jt == nil {
			continue
		}
		type side struct {
			s       *LinkSide
			cols    []string // join table columns referencing the side's root
			parents []string // the root's columns they reference
			c       *Collection
		}
		var sides []side
		ok := true
		for _, s := range l.Sides {
			c := r.roots[s.Collection]
			if c == nil {
				ok = false // reported by check
				continue
			}
			root := r.cat.Table(c.Table)
			if root == nil {
				ok = false // reported with the collection
				continue
			}
			cols, parents, err := linkColumns(jt, root, s.Column)
			if err != nil {
				r.add(s.pos.self, "links: %s: %v", l.Table, err)
				ok = false
				continue
			}
			sides = append(sides, side{s: s, cols: cols, parents: parents, c: c})
		}
		if !ok {
			continue
		}
		if len(sides) == 1 {
			// The value is the join table's other foreign key.
			var other *ForeignKey
			for i, fk := range jt.ForeignKeys {
				if slices.Equal(fk.Columns, sides[0].cols) {
					continue
				}
				if other != nil {
					r.add(l.pos.self, "links: %s has several other foreign keys; add the second side to say which one holds the ids", l.Table)
					other = nil
					break
				}
				other = &jt.ForeignKeys[i]
			}
			if other == nil {
				continue
			}
			sides = append(sides, side{cols: other.Columns, parents: other.RefColumns})
		}
		for i, s := range sides {
			if s.s == nil {
				continue
			}
			o := sides[1-i]
			name := s.s.Field
			if name == "" && o.s != nil {
				name = o.s.Collection
			}
			rel := &Relation{Entity: Entity{Table: l.Table}, pos: s.s.pos}
			for j, col := range s.cols {
				rel.Join = append(rel.Join, JoinPair{Column: col, Parent: s.parents[j]})
			}
			lf := &linkField{name: name, table: l.Table, rel: rel}
			if len(o.cols) == 1 {
				rel.Column, rel.order = o.cols[0], []string{o.cols[0]}
			} else if values, names, err := linkValueNames(o.c, o.cols, o.parents); err != nil {
				r.add(s.s.pos.self, "links: %s: %v", l.Table, err)
				continue
			} else {
				rel.order = slices.Clone(values)
				lf.values, lf.names = values, names
			}
			if o.c != nil {
				lf.ref = o.c.Name
			}
			out[s.s.Collection] = append(out[s.s.Collection], lf)
		}
	}
	return out
}

// linkValueNames are the value columns and field names of the items of
// an id array of composite keys: the join table's columns cols reference
// the other side's root columns parents, and each item equals the other
// side's _id when there is one (its id columns, named as its _id names
// them, in its order), else is named after parents.
func linkValueNames(other *Collection, cols, parents []string) ([]string, []string, error) {
	if other == nil {
		names := make([]string, len(parents))
		for i, p := range parents {
			names[i] = CamelCase(p)
		}
		return cols, names, nil
	}
	ids := []string(other.ID)
	if len(ids) == 0 {
		ids = parents // the primary key the foreign key references
	}
	if len(ids) != len(parents) {
		return nil, nil, fmt.Errorf("the foreign key to %q references (%s), not the columns of its _id (%s)", other.Table, strings.Join(parents, ", "), strings.Join(ids, ", "))
	}
	names := make([]string, len(ids))
	byParent := map[string]string{}
	for i, p := range parents {
		byParent[p] = cols[i]
	}
	reordered := make([]string, len(ids))
	for i, id := range ids {
		col, ok := byParent[id]
		if !ok {
			return nil, nil, fmt.Errorf("the foreign key to %q references (%s), not the columns of its _id (%s)", other.Table, strings.Join(parents, ", "), strings.Join(ids, ", "))
		}
		reordered[i], names[i] = col, fieldName(&other.Entity, id)
	}
	return reordered, names, nil
}

// linkColumns finds the join table's columns referencing root: the given
// ones, or the columns of the one foreign key of the join table to root.
// It returns them and the root columns they reference.
func linkColumns(jt, root *Table, given []string) ([]string, []string, error) {
	rootName := root.QualifiedName()
	if len(given) > 0 {
		for _, col := range given {
			if jt.Column(col) == nil {
				return nil, nil, fmt.Errorf("table %q has no column %q", jt.Name, col)
			}
		}
		for _, fk := range jt.ForeignKeys {
			if fk.RefTable == rootName && slices.Equal(fk.Columns, given) {
				return slices.Clone(fk.Columns), slices.Clone(fk.RefColumns), nil
			}
		}
		if len(root.PrimaryKey) != len(given) {
			return nil, nil, fmt.Errorf("%s.%s is no foreign key to %q, and %q has no primary key of %d columns for it to reference", jt.Name, strings.Join(given, ", "), root.Name, root.Name, len(given))
		}
		return slices.Clone([]string(given)), slices.Clone(root.PrimaryKey), nil
	}
	var found []ForeignKey
	for _, fk := range jt.ForeignKeys {
		if fk.RefTable == rootName {
			found = append(found, fk)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil, fmt.Errorf("no foreign key of %s references %s; give column: the join table's column(s) that do", jt.QualifiedName(), root.QualifiedName())
	case 1:
		return slices.Clone(found[0].Columns), slices.Clone(found[0].RefColumns), nil
	}
	return nil, nil, fmt.Errorf("several foreign keys of %s reference %s; give column: to say which one", jt.QualifiedName(), root.QualifiedName())
}

// refCollection checks a field's ref and returns it.
func (r *resolver) refCollection(fd *Field) string {
	if fd.Ref == "" {
		return ""
	}
	for _, c := range r.file.Collections {
		if c.Name == fd.Ref && c.Bucket == nil && c.IDPrefix != "" {
			r.add(fd.pos.at("ref"), "ref: collection %q makes its _ids with idPrefix %q, which the values of this field do not have, so they could not be checked", fd.Ref, c.IDPrefix)
			return ""
		}
		if c.Name == fd.Ref {
			return fd.Ref
		}
	}
	r.add(fd.pos.at("ref"), "ref: collection %q is not defined in this file", fd.Ref)
	return ""
}

func (r *resolver) addLinkField(n *Node, lf *linkField, p Pos) {
	r.addLinkFieldWith(n, lf, p, func(fp FieldPlan) { n.Fields = append(n.Fields, fp) })
}

func (r *resolver) addLinkFieldWith(n *Node, lf *linkField, p Pos, add func(FieldPlan)) {
	lf.placed = true
	lf.rel.values = lf.values
	if en := r.relation(n, lf.rel, n.Path+"."+lf.name, NodeIds); en != nil {
		en.ValueNames = lf.names
		add(FieldPlan{Kind: FieldIds, Name: lf.name, Embed: en, RefCollection: lf.ref, Pos: p})
	}
}

// idsColumn is the value column of an id array: column:, or the single
// column primary key.
func (r *resolver) idsColumn(n *Node, rel *Relation, path string) (string, bool) {
	if rel.Column != "" {
		if n.Table.Column(rel.Column) == nil {
			r.add(rel.pos.at("column"), "%s: table %q has no column %q", path, n.Table.Name, rel.Column)
			return "", false
		}
		return rel.Column, true
	}
	if len(n.Table.PrimaryKey) != 1 {
		r.add(rel.pos.self, "%s: table %q has no single-column primary key; give column: the value to write", path, n.Table.Name)
		return "", false
	}
	return n.Table.PrimaryKey[0], true
}
