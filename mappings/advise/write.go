package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// line writes one line at indent.
type out struct {
	b strings.Builder
}

func (o *out) line(indent int, format string, args ...any) {
	o.b.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(&o.b, format, args...)
	o.b.WriteByte('\n')
}

// comment writes text as YAML comment lines at indent, wrapped.
func (o *out) comment(indent int, text string) {
	const width = 96
	words := strings.Fields(text)
	cur := ""
	for _, w := range words {
		if cur != "" && len(cur)+1+len(w) > width-2*indent {
			o.line(indent, "# %s", cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		o.line(indent, "# %s", cur)
	}
}

func (a *advisor) write() string {
	o := &out{}
	o.comment(0, fmt.Sprintf("Drafted by `denorm advise` from schema %q: the catalog (keys, foreign keys, join tables) and the data's statistics (rows, children per parent, changes since statistics reset). Review every choice: each comment gives its reason and numbers. Check it with `denorm validate --source ...`, then `denorm plan`.", a.in.Schema))
	o.line(0, "version: 1")
	if a.in.Numeric != "" {
		o.line(0, "numeric: %s", a.in.Numeric)
	}
	o.line(0, "collections:")
	for _, q := range a.names {
		r := a.roles[q]
		switch r.action {
		case "collection":
			a.writeCollection(o, r)
		case "bucket":
			a.writeBucket(o, r)
		}
	}
	var links []*tableRole
	for _, q := range a.names {
		if r := a.roles[q]; r.action == "link" {
			if sides, _ := a.linkSides(r); len(sides) > 0 {
				links = append(links, r)
			}
		}
	}
	if len(links) > 0 {
		o.line(0, "links:")
		for _, r := range links {
			o.comment(1, r.t.Name+": "+r.reason)
			o.line(1, "- table: %s", a.tableRef(r.t))
			o.line(2, "sides:")
			sides, _ := a.linkSides(r)
			for _, i := range sides {
				fk := r.t.ForeignKeys[i]
				other := a.roles[r.t.ForeignKeys[1-i].RefTable]
				field := other.coll
				if other.coll == "" {
					field = camel(plural(other.t.Name))
				}
				o.line(3, "- {collection: %s, column: %s, field: %s}", y(a.roles[fk.RefTable].coll), y(fk.Columns[0]), y(field))
			}
		}
	}
	o.b.WriteString("\n")
	for _, q := range a.names {
		r := a.roles[q]
		switch r.action {
		case "lookup", "skip":
			o.comment(0, r.t.Name+": "+r.reason)
		case "link":
			if sides, _ := a.linkSides(r); len(sides) == 0 {
				o.comment(0, r.t.Name+": "+r.reason)
			}
		}
	}
	return o.b.String()
}

func (a *advisor) writeCollection(o *out, r *tableRole) {
	o.b.WriteString("\n")
	o.comment(1, r.t.Name+": "+r.reason)
	o.line(1, "- name: %s", y(r.coll))
	o.line(2, "table: %s", a.tableRef(r.t))
	k := key(r.t)
	if len(r.t.PrimaryKey) == 0 {
		o.line(2, "id: [%s]", names(k))
	}
	a.writeEntity(o, 2, r.t, k, nil)
}

func (a *advisor) writeBucket(o *out, r *tableRole) {
	o.b.WriteString("\n")
	o.comment(1, r.t.Name+": "+r.reason)
	o.line(1, "- name: %s", y(r.coll))
	o.line(2, "table: %s", a.tableRef(r.t))
	by := r.owner.Columns
	order := append([]string{r.time}, key(r.t)...)
	o.line(2, "bucket: {by: [%s], size: %d, orderBy: [%s], items: %s}", names(by), BucketSize, names(order), y(camel(plural(r.t.Name))))
	a.writeEntity(o, 2, r.t, by, nil)
}

func names(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = y(c)
	}
	return strings.Join(q, ", ")
}

// writeEntity writes lookups and fields of t, leaving out the columns in
// skip (the _id, a bucket's parent key, an embed's join columns).
func (a *advisor) writeEntity(o *out, ind int, t *mappings.Table, skip []string, _ *tableRole) {
	// lookups for single-column foreign keys to lookup tables
	type lk struct {
		name, field string
		fk          mappings.ForeignKey
		lt          *mappings.Table
	}
	var lookups []lk
	taken := map[string]bool{}
	for _, c := range t.Columns {
		taken[camel(c.Name)] = true
	}
	for _, fk := range t.ForeignKeys {
		p := a.roles[fk.RefTable]
		if p == nil || p.action != "lookup" || len(fk.Columns) != 1 || slices.Contains(skip, fk.Columns[0]) {
			continue
		}
		n := lookupName(fk.Columns[0])
		f := camel(n)
		for taken[f] {
			f += "Name"
		}
		taken[f] = true
		lookups = append(lookups, lk{name: n, field: f, fk: fk, lt: p.t})
	}
	if len(lookups) > 0 {
		o.line(ind, "lookups:")
		for _, l := range lookups {
			o.line(ind+1, "- {name: %s, table: %s, join: {%s: %s}}", y(l.name), a.tableRef(l.lt), y(key(l.lt)[0]), y(l.fk.Columns[0]))
		}
	}
	o.line(ind, "fields:")
	n := 0
	for _, c := range t.Columns {
		if slices.Contains(skip, c.Name) {
			continue
		}
		n++
		if i := slices.IndexFunc(lookups, func(l lk) bool { return l.fk.Columns[0] == c.Name }); i >= 0 {
			l := lookups[i]
			o.line(ind+1, "- {name: %s, column: %s}   # %s from lookup table %s", y(l.field), y(l.name+"."+label(l.lt)), label(l.lt), l.lt.Name)
			continue
		}
		if coll := a.refCollection(t, c.Name); coll != "" {
			o.line(ind+1, "- {column: %s, ref: %s}", y(c.Name), y(coll))
			continue
		}
		o.line(ind+1, "- %s", y(c.Name))
	}
	// embedded children and recent subsets of bucketed ones
	for _, q := range a.names {
		r := a.roles[q]
		if (r.action != "embed" && r.action != "bucket") || r.parent != qual(t) {
			continue
		}
		n++
		join := make([]string, len(r.owner.Columns))
		for i, c := range r.owner.Columns {
			join[i] = y(c) + ": " + y(r.owner.RefColumns[i])
		}
		field := camel(plural(r.t.Name))
		if r.action == "bucket" {
			field = "recent" + strings.ToUpper(field[:1]) + field[1:]
		}
		o.comment(ind+1, r.t.Name+": "+r.reason)
		o.line(ind+1, "- name: %s", y(field))
		o.line(ind+2, "embed:")
		o.line(ind+3, "table: %s", a.tableRef(r.t))
		o.line(ind+3, "join: {%s}", strings.Join(join, ", "))
		if r.action == "bucket" {
			desc := []string{r.time + " desc"}
			for _, c := range key(r.t) {
				desc = append(desc, c+" desc")
			}
			o.line(ind+3, "orderBy: [%s]", strings.Join(desc, ", "))
			o.line(ind+3, "limit: %d", RecentItems)
		} else {
			o.line(ind+3, "orderBy: [%s]", names(key(r.t)))
			if unique(r.t, r.owner.Columns) {
				o.line(ind+3, "as: object")
			}
		}
		a.writeEntity(o, ind+3, r.t, r.owner.Columns, nil)
	}
	if n == 0 {
		o.line(ind+1, "- %s", y(skip[0]))
	}
}

// unique reports whether cols are a key of t (a one-to-one child).
func unique(t *mappings.Table, cols []string) bool {
	same := func(k []string) bool {
		return len(k) == len(cols) && !slices.ContainsFunc(k, func(c string) bool { return !slices.Contains(cols, c) })
	}
	return same(t.PrimaryKey) || slices.ContainsFunc(t.Unique, same)
}

// refCollection is the collection a single-column foreign key of t on col
// points to, if that table is a collection keyed by the referenced column.
func (a *advisor) refCollection(t *mappings.Table, col string) string {
	for _, fk := range t.ForeignKeys {
		if len(fk.Columns) != 1 || fk.Columns[0] != col {
			continue
		}
		p := a.roles[fk.RefTable]
		if p != nil && p.action == "collection" && slices.Equal(key(p.t), fk.RefColumns) {
			return p.coll
		}
	}
	return ""
}
