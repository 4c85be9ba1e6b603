package mappings

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Fields: entity resolves the fields of a document or embedded document
// (columns, "*", embeds, id arrays, aggregates, expressions, sql:,
// constants, links) and checks the names they write.

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
	lookups := r.lookups(n, e)
	ref := func(s string, p Pos) (Ref, bool) { return r.fieldRef(n, lookups, s, p) }
	// pivot sets fp's pivot, the column fd's key: names (no key: true);
	// false when it names no column (reported).
	pivot := func(fd *Field, fp *FieldPlan) bool {
		if fd.Key == "" {
			return true
		}
		k, ok := ref(fd.Key, fd.pos.at("key"))
		if ok {
			fp.Pivot = &k
		}
		return ok
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
				if !pivot(fd, &fp) {
					continue
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
			if !pivot(fd, &fp) {
				continue
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
			if !pivot(fd, &fp) {
				continue
			}
			if fd.Key == "" && fp.Name == "" {
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
