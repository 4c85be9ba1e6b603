package mappings

import (
	"fmt"
	"strings"
)

// check finds problems of meaning that need no database: conflicting
// keys, duplicate names, subsets without an order.
func (f *File) check() Problems {
	c := checker{file: f.Path}
	names := map[string]Pos{}
	for _, col := range f.Collections {
		if prev, dup := names[col.Name]; dup {
			c.add(col.pos.at("name"), "collection %q is already defined at line %d", col.Name, prev.Line)
		} else {
			names[col.Name] = col.pos.at("name")
		}
		c.entity(&col.Entity, col.Name)
	}
	return c.ps
}

type checker struct {
	file string
	ps   Problems
}

func (c *checker) add(p Pos, format string, args ...any) {
	c.ps = append(c.ps, Problem{File: c.file, Pos: p, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) entity(e *Entity, where string) {
	lookups := map[string]bool{}
	for _, l := range e.Lookups {
		if lookups[l.Name] {
			c.add(l.pos.at("name"), "%s: lookup %q is defined twice", where, l.Name)
		}
		lookups[l.Name] = true
		if l.As == "array" {
			c.add(l.pos.at("as"), "%s: lookup %q finds one row; it cannot be an array (use an embed)", where, l.Name)
		}
		if l.Limit > 0 || len(l.OrderBy) > 0 {
			c.add(l.pos.self, "%s: lookup %q finds one row; orderBy and limit do not apply", where, l.Name)
		}
		c.relation(l, where+"."+l.Name)
	}
	stars := 0
	for _, fd := range e.Fields {
		if fd.All {
			stars++
			if stars == 2 {
				c.add(fd.pos.self, "%s: \"*\" is listed twice", where)
			}
			continue
		}
		sources := 0
		if fd.Column != "" {
			sources++
		}
		if fd.Embed != nil {
			sources++
		}
		switch {
		case sources == 0:
			c.add(fd.pos.self, "%s: a field needs a column or an embed", where)
		case sources > 1:
			c.add(fd.pos.self, "%s: a field takes either a column or an embed, not both", where)
		}
		if fd.Key != "" && fd.Name != "" {
			c.add(fd.pos.at("key"), "%s: a field takes its name either from name or from key, not both", where)
		}
		if fd.Key != "" && fd.Embed != nil {
			c.add(fd.pos.at("key"), "%s: key (a pivot) applies to a column, not to an embed", where)
		}
		if fd.Embed != nil {
			if fd.Name == "" {
				c.add(fd.pos.self, "%s: an embedded field needs a name", where)
			}
			if fd.Numeric != "" {
				c.add(fd.pos.at("numeric"), "%s: numeric applies to a column, not to an embed", where)
			}
			c.relation(fd.Embed, where+"."+fd.Name)
		}
		for _, ref := range []string{fd.Column, fd.Key} {
			if i := strings.IndexByte(ref, '.'); i >= 0 && !lookups[ref[:i]] {
				c.add(fd.pos.self, "%s: %q refers to lookup %q, which this entity does not define", where, ref, ref[:i])
			}
		}
	}
}

func (c *checker) relation(r *Relation, where string) {
	if r.Limit > 0 && len(r.OrderBy) == 0 {
		c.add(r.pos.at("limit"), "%s: limit needs orderBy, or the subset would be arbitrary", where)
	}
	if r.As == "object" && r.Limit > 0 {
		c.add(r.pos.at("limit"), "%s: limit applies to arrays, not to as: object", where)
	}
	for _, o := range r.OrderBy {
		if _, _, err := parseOrder(o); err != nil {
			c.add(r.pos.at("orderBy"), "%s: %v", where, err)
		}
	}
	c.entity(&r.Entity, where)
}

// parseOrder reads "column", "column asc" or "column desc".
func parseOrder(s string) (col string, desc bool, err error) {
	parts := strings.Fields(s)
	switch {
	case len(parts) == 1:
		return parts[0], false, nil
	case len(parts) == 2 && strings.EqualFold(parts[1], "asc"):
		return parts[0], false, nil
	case len(parts) == 2 && strings.EqualFold(parts[1], "desc"):
		return parts[0], true, nil
	}
	return "", false, fmt.Errorf("orderBy entry %q must be \"column\", \"column asc\" or \"column desc\"", s)
}

// CamelCase turns a column name into the default field name:
// first_name -> firstName.
func CamelCase(col string) string {
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
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	if b.Len() == 0 {
		return col
	}
	return b.String()
}
