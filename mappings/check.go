package mappings

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// check finds problems of meaning that need no database: conflicting
// keys, duplicate names, subsets without an order, impossible buckets.
func (f *File) check() Problems {
	c := checker{file: f.Path}
	byName := map[string][]*Collection{}
	var order []string
	for _, col := range f.Collections {
		if _, seen := byName[col.Name]; !seen {
			order = append(order, col.Name)
		}
		byName[col.Name] = append(byName[col.Name], col)
		c.collection(col)
	}
	for _, name := range order {
		if why := CollectionNameProblem(name); why != "" {
			c.add(byName[name][0].pos.at("name"), "collection name %q cannot be used: %s", name, why)
		}
		c.shared(byName[name])
		c.checkShardKeys(byName[name])
	}
	for _, l := range f.Links {
		c.link(l, byName)
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

func (c *checker) collection(col *Collection) {
	where := col.Name
	if b := col.Bucket; b != nil {
		where = col.Name + ".bucket"
		if len(col.ID) > 0 {
			c.add(col.pos.at("id"), "%s: a bucket collection's _id is \"<parent key>-<page>\"; id does not apply", col.Name)
		}
		if col.Discriminator != "" {
			c.add(col.pos.at("discriminator"), "%s: a bucket collection cannot share its collection with other document types", col.Name)
		}
		if col.IDPrefix != "" {
			c.add(col.pos.at("idPrefix"), "%s: a bucket collection's _id is \"<parent key>-<page>\"; idPrefix does not apply", col.Name)
		}
		c.orderBy(b.OrderBy, b.pos.at("orderBy"), where)
		items, page := b.ItemsField(), b.PageField()
		if items == page {
			c.add(b.pos.self, "%s: items and page are both named %q", where, items)
		}
		if items == "_id" || page == "_id" {
			c.add(b.pos.self, "%s: items and page cannot be named \"_id\"", where)
		}
		c.fieldName(b.pos.at("items"), where, items)
		c.fieldName(b.pos.at("page"), where, page)
	}
	if col.Discriminator != "" {
		found := false
		for _, fd := range col.Fields {
			if fd.Name == col.Discriminator {
				found = true
				if fd.Value == nil {
					c.add(fd.pos.self, "%s: the discriminator field %q must be a constant (value: ...)", col.Name, fd.Name)
				}
			}
		}
		if !found {
			c.add(col.pos.at("discriminator"), "%s: discriminator %q names no field; add {name: %s, value: ...} to fields", col.Name, col.Discriminator, col.Discriminator)
		}
	}
	c.checkOnDelete(col)
	c.tableName(col.pos.at("table"), col.Name, col.Table)
	c.entity(&col.Entity, col.pos, col.Name, col.Bucket == nil)
	c.checkIndexes(col)
}

// tableName reports a table name SQL could not read (tablename.go); an
// empty one is the JSON Schema's to report.
func (c *checker) tableName(p Pos, where, name string) {
	if name == "" {
		return
	}
	if _, err := ParseTableName(name); err != nil {
		c.add(p, "%s: table %s: %v", where, quoteWritten(name), err)
	}
}

// shared checks the entries that write to one collection: several
// document types need the same discriminator field with distinct values.
func (c *checker) shared(cols []*Collection) {
	if len(cols) < 2 {
		return
	}
	first := cols[0]
	c.idPrefixes(cols)
	c.sameOnDelete(cols)
	values := map[any]int{}
	for i, col := range cols {
		if first.Discriminator == "" || col.Discriminator == "" || col.Bucket != nil {
			if i == 0 {
				continue
			}
			c.add(col.pos.at("name"), "collection %q is already defined at line %d; several document types in one collection need a discriminator (discriminator: type, and a field {name: type, value: ...} in each)", col.Name, first.pos.at("name").Line)
			continue
		}
		if col.Discriminator != first.Discriminator {
			c.add(col.pos.at("discriminator"), "%s: every document type of a collection needs the same discriminator field; line %d uses %q", col.Name, first.pos.at("name").Line, first.Discriminator)
			continue
		}
		v := col.discriminatorValue()
		if v == nil {
			continue
		}
		// Numbers are one value for MongoDB whatever their type: 1 and
		// 1.0 would select each other's documents.
		k := numberKey(v)
		if line, dup := values[k]; dup {
			c.add(col.pos.at("discriminator"), "%s: discriminator value %v is already used by the document type at line %d (MongoDB compares numbers by value)", col.Name, v, line)
		}
		values[k] = col.pos.at("name").Line
	}
}

// idPrefixes checks the idPrefix of the entries sharing a collection:
// set on none (their _ids must not meet, see validate), or on every one,
// each distinct and none the beginning of another, so that no two
// entries can give one _id.
func (c *checker) idPrefixes(cols []*Collection) {
	set := 0
	for _, col := range cols {
		if col.IDPrefix != "" && col.Bucket == nil {
			set++
		}
	}
	if set == 0 {
		return
	}
	for i, col := range cols {
		if col.Bucket != nil {
			continue
		}
		if col.IDPrefix == "" {
			c.add(col.pos.at("name"), "%s: other document types of this collection set idPrefix; set one here too, or an _id of this type may equal one of theirs", col.Name)
			continue
		}
		for _, other := range cols[:i] {
			if other.IDPrefix != "" && other.Bucket == nil && (strings.HasPrefix(col.IDPrefix, other.IDPrefix) || strings.HasPrefix(other.IDPrefix, col.IDPrefix)) {
				c.add(col.pos.at("idPrefix"), "%s: idPrefix %q and %q (line %d) can begin the same _id; make neither the beginning of the other", col.Name, col.IDPrefix, other.IDPrefix, other.pos.at("idPrefix").Line)
			}
		}
	}
}

func (col *Collection) discriminatorValue() any {
	for _, fd := range col.Fields {
		if fd.Name == col.Discriminator && fd.Value != nil {
			return fd.Value.V
		}
	}
	return nil
}

func (c *checker) link(l *Link, byName map[string][]*Collection) {
	c.tableName(l.pos.at("table"), "links", l.Table)
	fields := map[string]bool{}
	for _, s := range l.Sides {
		cols := byName[s.Collection]
		if len(cols) == 0 {
			c.add(s.pos.at("collection"), "links: collection %q is not defined in this file", s.Collection)
			continue
		}
		if cols[0].Bucket != nil {
			c.add(s.pos.at("collection"), "links: %q is a bucket collection; id arrays go on document collections", s.Collection)
		}
		if len(l.Sides) == 1 && s.Field == "" {
			c.add(s.pos.self, "links: a one-sided link needs field: the name of the id array")
		}
		if s.Field != "" {
			c.fieldName(s.pos.at("field"), "links", s.Field)
		}
		key := s.Collection + "\x00" + s.Field
		if s.Field != "" && fields[key] {
			c.add(s.pos.self, "links: %s.%s is given twice", s.Collection, s.Field)
		}
		fields[key] = true
	}
}

// fieldName reports a field name no target can store (FieldNameProblem).
func (c *checker) fieldName(p Pos, where, name string) {
	if why := FieldNameProblem(name); why != "" {
		c.add(p, "%s: field name %q cannot be stored: %s", where, name, why)
	}
}

// kinds lists the sources a field sets.
func (fd *Field) kinds() []string {
	var k []string
	if fd.Column != "" {
		k = append(k, "column")
	}
	if fd.Embed != nil {
		k = append(k, "embed")
	}
	if fd.Ids != nil {
		k = append(k, "ids")
	}
	if fd.Aggregate != nil {
		k = append(k, "aggregate")
	}
	if fd.Expr != "" {
		k = append(k, "expr")
	}
	if fd.SQL != "" {
		k = append(k, "sql")
	}
	if fd.Value != nil {
		k = append(k, "value")
	}
	if fd.Link != "" {
		k = append(k, "link")
	}
	return k
}

// entity checks an entity's lookups and fields; document says whether its
// fields make a document whose _id comes first.
func (c *checker) entity(e *Entity, pos positions, where string, document bool) {
	for _, col := range slices.Sorted(maps.Keys(e.Rename)) {
		c.fieldName(pos.at("rename"), where, e.Rename[col])
	}
	lookups := map[string]bool{}
	for _, l := range e.Lookups {
		if lookups[l.Name] {
			c.add(l.pos.at("name"), "%s: lookup %q is defined twice", where, l.Name)
		}
		lookups[l.Name] = true
		c.relation(l, where+"."+l.Name, "lookup")
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
		kinds := fd.kinds()
		switch {
		case len(kinds) == 0:
			c.add(fd.pos.self, "%s: a field needs one of column, embed, ids, aggregate, expr, sql, value or link", where)
		case len(kinds) > 1:
			c.add(fd.pos.self, "%s: a field takes one of column, embed, ids, aggregate, expr, sql, value or link, not %s", where, strings.Join(kinds, " and "))
		}
		kind := ""
		if len(kinds) > 0 {
			kind = kinds[0]
		}
		if fd.Key != "" && fd.Name != "" {
			c.add(fd.pos.at("key"), "%s: a field takes its name either from name or from key, not both", where)
		}
		if fd.Key != "" && kind != "column" && kind != "expr" && kind != "aggregate" {
			c.add(fd.pos.at("key"), "%s: key (a pivot) names a column, expr or aggregate field, not %s", where, kind)
		}
		if fd.Name == "" && fd.Key == "" && kind != "column" && kind != "link" && kind != "" {
			c.add(fd.pos.self, "%s: a field made with %s needs a name", where, kind)
		}
		if fd.Name != "" {
			c.fieldName(fd.pos.at("name"), where, fd.Name)
		}
		if document && fd.Name == "_id" {
			c.add(fd.pos.at("name"), "%s: _id is made from the id columns; choose another field name", where)
		}
		if fd.Numeric != "" && kind != "column" && kind != "aggregate" && kind != "sql" {
			c.add(fd.pos.at("numeric"), "%s: numeric applies to a column, an aggregate or an sql field, not to %s", where, kind)
		}
		if kind == "sql" {
			if err := CheckSQLExpr(fd.SQL); err != nil {
				c.add(fd.pos.at("sql"), "%s: sql: %v", where, err)
			}
		}
		if fd.Char != "" && kind != "column" {
			c.add(fd.pos.at("char"), "%s: char applies to a column, not to %s", where, kind)
		}
		if fd.Timestamp != "" && kind != "column" && kind != "aggregate" {
			c.add(fd.pos.at("timestamp"), "%s: timestamp applies to a column or an aggregate, not to %s", where, kind)
		}
		if kind == "link" {
			c.tableName(fd.pos.at("link"), where, fd.Link)
		}
		if fd.Ref != "" && kind != "column" && kind != "ids" {
			c.add(fd.pos.at("ref"), "%s: ref applies to a column or an id array, not to %s", where, kind)
		}
		switch kind {
		case "embed":
			c.relation(fd.Embed, where+"."+fd.Name, "embed")
		case "ids":
			c.relation(fd.Ids, where+"."+fd.Name, "ids")
		case "aggregate":
			c.relation(fd.Aggregate, where+"."+fd.Name, "aggregate")
		}
		for _, ref := range []string{fd.Column, fd.Key} {
			if i := strings.IndexByte(ref, '.'); i >= 0 && !lookups[ref[:i]] {
				c.add(fd.pos.self, "%s: %q refers to lookup %q, which this entity does not define", where, ref, ref[:i])
			}
		}
	}
}

func (c *checker) orderBy(list StringList, p Pos, where string) {
	for _, o := range list {
		if _, _, err := parseOrder(o); err != nil {
			c.add(p, "%s: %v", where, err)
		}
	}
}

func (c *checker) relation(r *Relation, where, kind string) {
	c.tableName(r.pos.at("table"), where, r.Table)
	if r.Through != nil {
		c.tableName(r.Through.pos.at("table"), where+": through", r.Through.Table)
	}
	if r.Limit > 0 && len(r.OrderBy) == 0 && kind == "embed" {
		c.add(r.pos.at("limit"), "%s: limit needs orderBy, or the subset would be arbitrary", where)
	}
	if r.As == "object" && r.Limit > 0 {
		c.add(r.pos.at("limit"), "%s: limit applies to arrays, not to as: object", where)
	}
	if kind == "aggregate" && r.Fn != "count" && r.Column == "" {
		c.add(r.pos.self, "%s: aggregate %s needs column: the column it reads", where, r.Fn)
	}
	c.orderBy(r.OrderBy, r.pos.at("orderBy"), where)
	if kind == "embed" {
		c.entity(&r.Entity, r.pos, where, false)
	}
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
		r, size := utf8.DecodeRuneInString(p) // a letter, not its first byte
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(p[size:])
	}
	if b.Len() == 0 {
		return col
	}
	return b.String()
}
