package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// classify decides every table's role: first what the table is by itself
// (join table, lookup table, no key), then each table's owner, then what
// each child wants (embed, bucket, collection), then the constraints
// between them until nothing changes, then which collections are only
// ever copied (inline).
func (a *advisor) classify() {
	a.fixedRoles()
	for _, q := range a.names {
		if r := a.roles[q]; r.action == "" {
			r.owner, r.ownerWhy = a.chooseOwner(r)
		}
	}
	a.breakOwnerCycles()
	for _, q := range a.names {
		if r := a.roles[q]; r.action == "" {
			a.want(r)
		}
	}
	for a.enforce() {
	}
	for _, q := range a.names {
		// Tables decided before the ones referencing them: name every
		// reference kept, now that all roles are known.
		if r := a.roles[q]; r.action == "collection" && strings.HasPrefix(r.reason, referencedBy) {
			r.reason = a.referencedReason(r)
		}
	}
	a.inline()
	a.nameCollections()
	for _, q := range a.names {
		if r := a.roles[q]; r.action == "link" {
			r.reason = a.linkReason(r)
		}
	}
}

func (a *advisor) fixedRoles() {
	for _, q := range a.names {
		r := a.roles[q]
		switch {
		case a.isJoinTable(r):
			r.action = "link"
		case key(r.t) == nil && a.hasParent(r):
			// Embedded rows need no _id: drafted under their parent when
			// bounded (want), else skipped.
			r.keyless = true
		case key(r.t) == nil:
			r.action = "skip"
			r.reason = "no primary key or unique NOT NULL key to make _id from: add one to migrate this table"
		}
	}
	for _, q := range a.names {
		r := a.roles[q]
		if r.action == "" && a.isLookup(r) {
			r.action = "lookup"
			r.reason = fmt.Sprintf("lookup table (%d rows, a key and a label, rarely changes: %s): its label %q is copied as a value into the referencing documents; it is not a collection, so rows nothing references are not migrated", a.rows(r.t), a.changes(r.t), label(r.t))
		}
	}
}

// hasParent reports whether r has a foreign key to another table that has
// a key: a parent its rows could be embedded in.
func (a *advisor) hasParent(r *role) bool {
	return slices.ContainsFunc(a.out[r.q], func(fk *rel) bool {
		p := a.in.Catalog.Tables[fk.RefTable]
		return p != nil && p != r.t && key(p) != nil
	})
}

// keylessSkip is why a table without a key is not migrated although it
// has a parent.
func keylessSkip(why string) string {
	return "no primary key or unique NOT NULL key to make _id from, so it can only be embedded in its parent, and " + why + ": not migrated; add a key to make it a collection of its own"
}

// isJoinTable: exactly two foreign keys, the key made of their columns, and
// no other data than a timestamp.
func (a *advisor) isJoinTable(r *role) bool {
	t, fks := r.t, a.out[r.q]
	if len(fks) != 2 || len(t.PrimaryKey) == 0 {
		return false
	}
	fkCols := map[string]bool{}
	for _, fk := range fks {
		if len(fk.Columns) != 1 || a.in.Catalog.Tables[fk.RefTable] == nil {
			return false
		}
		fkCols[fk.Columns[0]] = true
	}
	for _, c := range t.PrimaryKey {
		if !fkCols[c] {
			return false
		}
	}
	for _, c := range t.Columns {
		if !fkCols[c.Name] && c.Category != "D" {
			return false
		}
	}
	return true
}

// isLookup: a surrogate integer key and one label (plus timestamps),
// small, shared by the data tables referencing it, no references of its
// own. A natural key (text) marks an entity instead.
func (a *advisor) isLookup(r *role) bool {
	t, k := r.t, key(r.t)
	if len(a.out[r.q]) > 0 || len(k) != 1 || label(t) == "" || a.hot(t) || a.rows(t) > LookupMaxRows {
		return false
	}
	if kc := t.Column(k[0]); kc == nil || kc.Category != "N" {
		return false
	}
	other := 0
	for _, c := range t.Columns {
		if !slices.Contains(k, c.Name) && c.Category != "D" {
			other++
		}
	}
	// Referenced by data tables, and shared: its label is unique, or its
	// rows are referenced by several rows each on average.
	refByData, shared := false, unique(t, []string{label(t)})
	for _, rf := range a.refBy[r.q] {
		if a.roles[qual(rf.child)].action != "link" && len(rf.Columns) == 1 {
			refByData = true
			shared = shared || a.fan(rf).Avg >= 2
		}
	}
	return refByData && shared && other <= 1
}

// label is a lookup table's label column: its first text column outside
// the key.
func label(t *mappings.Table) string {
	k := key(t)
	for _, c := range t.Columns {
		if c.Category == "S" && !slices.Contains(k, c.Name) {
			return c.Name
		}
	}
	return ""
}

// displayLabel is the column every view of a row shows, when the table has
// one by name: name, title, label, full_name, display_name, then the
// table's own name in the singular or plural, alone or with _name, _title
// or _label (products.product_name, categories.category_name,
// film.title), company_name, and last the only text column named
// *_name; names compare without case or underscores (ProductName).
func displayLabel(t *mappings.Table) string {
	k := key(t)
	text := map[string]string{} // normalised name -> column
	var named []string          // text columns named *name
	for _, c := range t.Columns {
		if c.Category != "S" || slices.Contains(k, c.Name) {
			continue
		}
		n := normName(c.Name)
		if _, ok := text[n]; !ok {
			text[n] = c.Name
		}
		if strings.HasSuffix(n, "name") {
			named = append(named, c.Name)
		}
	}
	cands := []string{"name", "title", "label", "full_name", "display_name"}
	for _, base := range []string{t.Name, singular(t.Name)} {
		cands = append(cands, base, base+"_name", base+"_title", base+"_label")
	}
	cands = append(cands, "company_name")
	for _, n := range cands {
		if c, ok := text[normName(n)]; ok {
			return c
		}
	}
	if len(named) == 1 {
		return named[0]
	}
	return ""
}

// normName is a name without case and underscores, to compare
// product_name with ProductName.
func normName(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// oneToOne reports whether fk is a one-to-one reference to a row that is
// part of the referencing row, like a customer's address: each referenced
// row is used by at most one referencing row (the column is not declared
// unique, nor part of the primary key: then the referencing row is a
// dependent of the other, or an association), nearly every referenced row
// is used, the referencing table is an entity other tables refer to (a
// leaf table referencing a row one-to-one, like an account's balance,
// depends on it instead), and the referenced table is not a parent of
// rows of its own (no join table and no leaf table points to it with
// several rows per parent). The referenced row is then copied into the
// referencing document as an object.
func (a *advisor) oneToOne(fk *rel) bool {
	p := a.roles[fk.RefTable]
	f := a.fan(fk)
	referenced := slices.ContainsFunc(a.refBy[qual(fk.child)], func(in *rel) bool { return in.child != fk.child })
	if p == nil || !referenced || len(fk.Columns) != 1 || !slices.Equal(key(p.t), fk.RefColumns) || unique(fk.child, fk.Columns) || slices.Contains(fk.child.PrimaryKey, fk.Columns[0]) ||
		f.Parents == 0 || f.Max > 1 || float64(f.Parents) < 0.9*float64(a.rows(p.t)) {
		return false
	}
	for _, in := range a.refBy[p.q] {
		c := a.roles[qual(in.child)]
		if c.action == "link" || len(a.refBy[c.q]) == 0 && a.fan(in).Max > 1 {
			return false
		}
	}
	return true
}

// refersTo reports whether table from has a foreign key to table to.
func (a *advisor) refersTo(from, to string) bool {
	return slices.ContainsFunc(a.out[from], func(r *rel) bool { return r.RefTable == to })
}

func (a *advisor) tname(q string) string { return a.roles[q].t.Name }

// chooseOwner picks the parent a child table belongs to among its foreign
// keys to data tables (not lookups, join tables, itself, or rows it holds
// one-to-one), and says how:
//
//  1. the one whose columns lead the child's primary key;
//  2. leaving out a candidate that itself refers to another candidate
//     (a payment of a rental of a customer belongs to the customer);
//  3. leaving out parents shared by most rows (over 100 children each on
//     average while another candidate has fewer: a reference, not an
//     owner, like the clerk of every rental);
//  4. preferring parents that record when they start (an event time such
//     as created_at or order_date): rows accumulate under accounts and
//     orders, not under catalog items;
//  5. preferring the parent under which the child is bounded (order lines
//     are few per order, many per product).
//
// When several remain, the table belongs to none of them.
func (a *advisor) chooseOwner(r *role) (*rel, string) {
	var cands, optional []*rel
	hangOff := a.hangingOff(r)
	for _, fk := range a.out[r.q] {
		p := a.roles[fk.RefTable]
		if p == nil || p.t == r.t || p.action == "lookup" || p.action == "link" || p.action == "skip" || a.oneToOne(fk) {
			continue
		}
		if len(hangOff) > 0 && a.nullable(fk) {
			// An entity others hang off, pointing at another by an
			// optional key (country.capital -> city): a reference, not
			// its owner.
			optional = append(optional, fk)
			continue
		}
		cands = append(cands, fk)
	}
	switch len(cands) {
	case 0:
		if len(optional) > 0 {
			return nil, fmt.Sprintf("an entity of its own: other tables hang off it (%s) and it points at %s only by a nullable key (%s), so it is not embedded in the row it points at: it keeps a reference",
				hangOff, a.parentNames(optional), a.refColumns(optional))
		}
		return nil, "an entity of its own (no parent table)"
	case 1:
		return cands[0], ""
	}
	for _, fk := range cands {
		if pk := r.t.PrimaryKey; len(pk) > len(fk.Columns) && slices.Equal(pk[:len(fk.Columns)], fk.Columns) {
			return fk, fmt.Sprintf("its key starts with the key of %s", a.tname(fk.RefTable))
		}
	}
	all := a.parentNames(cands)
	var why []string
	narrow := func(keep func(*rel) bool, because func(kept, dropped []*rel) string) {
		if len(cands) < 2 {
			return
		}
		var kept, dropped []*rel
		for _, c := range cands {
			if keep(c) {
				kept = append(kept, c)
			} else {
				dropped = append(dropped, c)
			}
		}
		if len(kept) > 0 && len(dropped) > 0 {
			cands = kept
			why = append(why, because(kept, dropped))
		}
	}
	narrow(func(c *rel) bool {
		return !slices.ContainsFunc(cands, func(o *rel) bool { return o != c && a.refersTo(c.RefTable, o.RefTable) })
	}, func(kept, dropped []*rel) string {
		return fmt.Sprintf("%s itself refers to %s", a.parentNames(dropped), a.parentNames(kept))
	})
	narrow(func(c *rel) bool { return a.fan(c).Avg <= UnboundedMin }, func(_, dropped []*rel) string {
		var s []string
		for _, d := range dropped {
			s = append(s, fmt.Sprintf("a few %s share most rows (avg %.1f per %s): a reference, not an owner", a.tname(d.RefTable), a.fan(d).Avg, a.tname(d.RefTable)))
		}
		return strings.Join(s, "; ")
	})
	narrow(func(c *rel) bool { return eventColumn(a.roles[c.RefTable].t) != "" }, func(kept, dropped []*rel) string {
		var s []string
		for _, k := range kept {
			s = append(s, fmt.Sprintf("%s records when it starts (%s)", a.tname(k.RefTable), eventColumn(a.roles[k.RefTable].t)))
		}
		return fmt.Sprintf("%s and %s does not: rows accumulate under it", strings.Join(s, ", "), a.parentNames(dropped))
	})
	narrow(func(c *rel) bool { return bounded(a.fan(c)) }, func(kept, dropped []*rel) string {
		return fmt.Sprintf("it is bounded per %s (p99 %d), not per %s (p99 %d)", a.parentNames(kept), a.fan(kept[0]).P99, a.parentNames(dropped), a.fan(dropped[0]).P99)
	})
	if len(cands) == 1 {
		return cands[0], fmt.Sprintf("of %s it belongs to %s: %s", all, a.tname(cands[0].RefTable), strings.Join(why, "; "))
	}
	return nil, fmt.Sprintf("refers to several tables (%s) and belongs to none of them", all)
}

// hangingOff names the other tables whose foreign keys point at r.
func (a *advisor) hangingOff(r *role) string {
	var n []string
	for _, in := range a.refBy[r.q] {
		if in.child != r.t && !slices.Contains(n, in.child.Name) {
			n = append(n, in.child.Name)
		}
	}
	return strings.Join(n, ", ")
}

// nullable reports whether a foreign key's columns may be NULL: a row
// may have no such parent.
func (a *advisor) nullable(fk *rel) bool {
	return slices.ContainsFunc(fk.Columns, func(c string) bool { col := fk.child.Column(c); return col != nil && !col.NotNull })
}

func (a *advisor) refColumns(fks []*rel) string {
	var n []string
	for _, fk := range fks {
		n = append(n, fmt.Sprintf("%s.%s -> %s", fk.child.Name, strings.Join(fk.Columns, ", "), a.tname(fk.RefTable)))
	}
	return strings.Join(n, "; ")
}

func (a *advisor) parentNames(fks []*rel) string {
	var n []string
	for _, fk := range fks {
		if s := a.tname(fk.RefTable); !slices.Contains(n, s) {
			n = append(n, s)
		}
	}
	return strings.Join(n, ", ")
}

// breakOwnerCycles clears the owner of tables whose chain of owners comes
// back to them: none of them is embedded in another.
func (a *advisor) breakOwnerCycles() {
	for _, q := range a.names {
		seen := map[string]bool{}
		for cur := a.roles[q]; cur != nil && cur.owner != nil; cur = a.roles[cur.owner.RefTable] {
			if seen[cur.q] {
				for c := cur; c.owner != nil; {
					next := a.roles[c.owner.RefTable]
					c.owner, c.ownerWhy = nil, "its parents form a cycle of foreign keys: its own collection"
					c = next
				}
				break
			}
			seen[cur.q] = true
		}
	}
}

// kids lists the tables whose owner is r.
func (a *advisor) kids(r *role, actions ...string) []*role {
	var out []*role
	for _, q := range a.names {
		c := a.roles[q]
		if c.owner != nil && c.owner.RefTable == r.q && (len(actions) == 0 || slices.Contains(actions, c.action)) {
			out = append(out, c)
		}
	}
	return out
}

func roleNames(rs []*role) string {
	var n []string
	for _, r := range rs {
		n = append(n, r.t.Name)
	}
	return strings.Join(n, ", ")
}

// keptRefs lists the foreign keys to r that documents keep as references,
// so that r must be a collection for them to point to: those of join
// tables (id arrays), of r itself, and of every table that is neither r's
// own child stored under it nor a sibling stored under the same parent.
func (a *advisor) keptRefs(r *role) []*rel {
	var out []*rel
	for _, fk := range a.refBy[r.q] {
		c := a.roles[qual(fk.child)]
		switch {
		case c.action == "skip":
		case c.action == "link", c.t == r.t:
			out = append(out, fk)
		case c.owner == fk && c.action != "collection":
		case r.owner != nil && c.owner != nil && c.owner.RefTable == r.owner.RefTable && c.action != "collection" && r.action != "collection":
		default:
			out = append(out, fk)
		}
	}
	return out
}

const referencedBy = "referenced by "

func (a *advisor) referencedReason(r *role) string {
	return fmt.Sprintf("%s%s, so it is kept once, in its own collection", referencedBy, a.refText(a.keptRefs(r)))
}

func (a *advisor) refText(fks []*rel) string {
	var n []string
	for _, fk := range fks {
		n = append(n, fmt.Sprintf("%s.%s", fk.child.Name, strings.Join(fk.Columns, ",")))
	}
	return strings.Join(n, ", ")
}

// growing returns the event time column of a child that grows with time
// under its owner: an append-only history such as rentals of a customer
// or comments of a post, whose count today is no bound. The owner must
// not have a column of that name: then it is an audit column every table
// has (created_at on orders and on their lines), not an event.
func (a *advisor) growing(r *role) string {
	tc := eventColumn(r.t)
	if tc == "" || r.owner == nil || a.roles[r.owner.RefTable].t.Column(tc) != nil {
		return ""
	}
	return tc
}

// want decides what a table with no fixed role does, from its own figures.
func (a *advisor) want(r *role) {
	if r.keyless && r.owner == nil {
		r.action, r.reason = "skip", keylessSkip("it has no parent to be embedded in ("+r.ownerWhy+")")
		return
	}
	if r.owner == nil {
		r.action, r.reason = "collection", r.ownerWhy+": its own collection"
		return
	}
	p := a.roles[r.owner.RefTable]
	f := a.fan(r.owner)
	ft := fanText(f, plural(r.t.Name), p.t.Name)
	chosen := ""
	if r.ownerWhy != "" {
		chosen = " (" + r.ownerWhy + ")"
	}
	kids := a.kids(r)
	if r.keyless {
		switch {
		case !bounded(f):
			r.action, r.reason = "skip", keylessSkip(fmt.Sprintf("it is too many per %s to embed (%s; one-to-few means p99 at most %d and no parent over %d)", p.t.Name, ft, EmbedMax, UnboundedMin))
		default:
			r.action = "embed"
			r.reason = fmt.Sprintf("embedded in %s%s: it has no primary key or unique NOT NULL key, so it cannot be a collection of its own (no _id), but it has a parent and is bounded one-to-few (%s) (%s); sync --method logical needs REPLICA IDENTITY FULL on it (PostgreSQL refuses UPDATE and DELETE on a published table without a replica identity)", p.t.Name, chosen, ft, a.changes(r.t))
		}
		return
	}
	switch tc := a.growing(r); {
	case a.in.Promote[r.q] != "":
		r.action, r.reason = "collection", a.in.Promote[r.q]
	case len(a.keptRefs(r)) > 0:
		r.action = "collection"
		r.reason = a.referencedReason(r)
	case a.hot(r.t):
		r.action = "collection"
		r.reason = fmt.Sprintf("changes often (%s): referenced, not embedded; %s", a.changes(r.t), ft)
	case tc != "" && len(kids) > 0:
		r.action = "collection"
		r.reason = fmt.Sprintf("grows with time under %s%s (an event time %s, which %s does not have) and has rows of its own (%s): an entity, its own collection referencing %s; %s", p.t.Name, chosen, tc, p.t.Name, roleNames(kids), p.t.Name, ft)
	case tc != "":
		r.action, r.time = "bucket", timeColumn(r.t)
		r.reason = fmt.Sprintf("grows with time under %s%s: an append-only history (its event time %s, which %s does not have), so today's %s is no bound: stored in bucket documents of %d ordered by %s; %s embeds the %d most recent", p.t.Name, chosen, tc, p.t.Name, ft, BucketSize, r.time, p.t.Name, RecentItems)
	case bounded(f):
		r.action = "embed"
		r.reason = fmt.Sprintf("embedded in %s%s: bounded one-to-few (%s), it does not grow with time (no event time of its own) and rarely changes (%s)", p.t.Name, chosen, ft, a.changes(r.t))
	case timeColumn(r.t) != "" && len(kids) == 0:
		r.action, r.time = "bucket", timeColumn(r.t)
		r.reason = fmt.Sprintf("too many per %s to embed (%s; one-to-few means p99 at most %d and no parent over %d): stored in bucket documents of %d read in pages, ordered by %s; %s embeds the %d most recent", p.t.Name, ft, EmbedMax, UnboundedMin, BucketSize, r.time, p.t.Name, RecentItems)
	default:
		r.action = "collection"
		r.reason = fmt.Sprintf("too many per %s to embed (%s; one-to-few means p99 at most %d and no parent over %d) and nothing to page by: its own collection, referencing %s", p.t.Name, ft, EmbedMax, UnboundedMin, p.t.Name)
	}
}

// embedDepth is the nesting level of an embedded table (1 in a root).
func (a *advisor) embedDepth(r *role) int {
	d := 1
	for p := a.roles[r.owner.RefTable]; p.action == "embed" && d <= len(a.names); p = a.roles[p.owner.RefTable] {
		d++
	}
	return d
}

// enforce applies the constraints between roles once and reports whether
// anything changed: a bucket needs its parent to be a collection, an
// embedded table a collection or embedded parent (at most MaxEmbedDepth
// deep), and a table documents keep references to must be a collection.
func (a *advisor) enforce() bool {
	changed := false
	promote := func(r *role, why string) {
		r.action, r.time, r.reason, changed = "collection", "", why, true
		if r.keyless {
			r.action, r.reason = "skip", keylessSkip(why)
		}
	}
	for _, q := range a.names {
		r := a.roles[q]
		if r.action != "embed" && r.action != "bucket" {
			continue
		}
		p := a.roles[r.owner.RefTable]
		switch refs := a.keptRefs(r); {
		case len(refs) > 0:
			promote(r, a.referencedReason(r))
		case r.action == "bucket" && p.action == "embed":
			promote(p, fmt.Sprintf("%s; but the rows of %s grow under it and are stored in pages (a bucket), which need their parent to be a collection: its own collection referencing %s", p.reason, r.t.Name, a.tname(p.owner.RefTable)))
		case p.action != "collection" && (r.action == "bucket" || p.action != "embed"):
			promote(r, fmt.Sprintf("its parent %s is not a collection (%s): its own collection referencing %s", p.t.Name, p.action, p.t.Name))
		case r.action == "embed" && a.embedDepth(r) > MaxEmbedDepth:
			promote(r, fmt.Sprintf("it would be embedded %d levels deep (at most %d): its own collection referencing %s", a.embedDepth(r), MaxEmbedDepth, p.t.Name))
		}
	}
	return changed
}

// inline turns into copies the collections that are only ever copied:
// referenced by one foreign key, one-to-one, from a table whose document
// holds the copy, every row referenced, and nothing stored under them.
func (a *advisor) inline() {
	for _, q := range a.names {
		r := a.roles[q]
		if r.action != "collection" || a.hot(r.t) || len(a.kids(r, "embed", "bucket")) > 0 {
			continue
		}
		refs := slices.DeleteFunc(slices.Clone(a.refBy[q]), func(fk *rel) bool { return a.roles[qual(fk.child)].action == "skip" })
		if len(refs) != 1 || !a.oneToOne(refs[0]) {
			continue
		}
		fk := refs[0]
		c := a.roles[qual(fk.child)]
		if c.action != "collection" && c.action != "embed" && c.action != "bucket" || a.fan(fk).Parents < a.rows(r.t) {
			continue
		}
		r.action = "inline"
		r.reason = fmt.Sprintf("part of %s: each row is used by one %s (%s.%s, one-to-one, all %d rows referenced), so it is copied into it as an object and is not a collection of its own", c.t.Name, c.t.Name, c.t.Name, fk.Columns[0], a.rows(r.t))
	}
}

// nameCollections gives every collection and bucket collection a safe,
// unique name.
func (a *advisor) nameCollections() {
	used := map[string]bool{}
	for _, q := range a.names {
		r := a.roles[q]
		if r.action != "collection" && r.action != "bucket" {
			continue
		}
		base := pluralName(r.t.Name)
		if r.t.Schema != "public" && r.t.Schema != a.in.Schema {
			base = safeWord(r.t.Schema) + "_" + base
		}
		r.coll = uniqueName(collectionName(base), used)
		a.place(r, r.coll)
	}
}

// linkSides decides which sides of a join table get an id array: those
// whose table is a collection and where the number of ids per document
// stays bounded; when both are unbounded, the smaller one.
func (a *advisor) linkSides(r *role) (sides []int, fans [2]Fanout) {
	fks := a.out[r.q]
	for i, fk := range fks {
		fans[i] = a.fan(fk) // ids on side i = rows of the join table per row of side i
	}
	if a.emptyLink(r) {
		return nil, fans
	}
	for i, fk := range fks {
		if a.roles[fk.RefTable].action == "collection" && fans[i].Max <= UnboundedMin {
			sides = append(sides, i)
		}
	}
	if len(sides) == 0 {
		best := -1
		for i, fk := range fks {
			if a.roles[fk.RefTable].action == "collection" && (best < 0 || fans[i].Max < fans[best].Max) {
				best = i
			}
		}
		if best >= 0 {
			sides = []int{best}
		}
	}
	return sides, fans
}

// emptyLink reports whether a join table has no rows: no row of either
// side has an id in it (its fan-out counted on the data), so an id array
// would be empty in every document.
func (a *advisor) emptyLink(r *role) bool {
	for _, fk := range a.out[r.q] {
		if a.fan(fk).Parents > 0 {
			return false
		}
	}
	return a.activity(r.t).Rows == 0
}

func (a *advisor) linkReason(r *role) string {
	sides, fans := a.linkSides(r)
	if a.emptyLink(r) {
		var add []string
		for i, fk := range a.out[r.q] {
			mine, other := fk, a.out[r.q][1-i]
			p, op := a.roles[mine.RefTable], a.roles[other.RefTable]
			if p.action != "collection" || op.action != "collection" {
				continue
			}
			add = append(add, fmt.Sprintf("to %s: `- {name: %s, ids: {table: %s, join: {%s: %s}, column: %s}, ref: %s}`", p.coll, fieldName(pluralName(op.t.Name)),
				a.tableRef(r.t), y(mine.Columns[0]), y(mine.RefColumns[0]), y(other.Columns[0]), y(op.coll)))
		}
		why := "join table with no rows: no id array drafted, since every document would hold an always-empty array"
		if len(add) > 0 {
			why += "; when it has rows, draft again or add " + strings.Join(add, ", or ")
		}
		return why
	}
	if len(sides) == 0 {
		return "join table whose sides are not collections: not migrated"
	}
	var parts []string
	for i, fk := range a.out[r.q] {
		s := fmt.Sprintf("each %s has up to %d (avg %.1f, p99 %d)", a.tname(fk.RefTable), fans[i].Max, fans[i].Avg, fans[i].P99)
		if slices.Contains(sides, i) {
			s += " -> id array with ref:"
		} else {
			s += " -> no id array (unbounded or not a collection)"
		}
		parts = append(parts, s)
	}
	return "join table (glue, not data): replaced by id arrays read through it, not copied; " + strings.Join(parts, "; ")
}

// eventColumn is a NOT NULL date or timestamp column recording when the
// row happened or was created (created_at, order_date, rental_date), not
// when it last changed.
func eventColumn(t *mappings.Table) string {
	for _, c := range t.Columns {
		n := strings.ToLower(c.Name)
		if timeLike(c) && !changeTime(n) && (strings.Contains(n, "creat") || strings.HasSuffix(n, "_at") || strings.Contains(n, "date") || strings.HasSuffix(n, "_on") || strings.HasSuffix(n, "time")) {
			return c.Name
		}
	}
	return ""
}

// timeColumn is the column to page a bucket by: the event time, or any
// other NOT NULL date or timestamp that is not a change time.
func timeColumn(t *mappings.Table) string {
	if c := eventColumn(t); c != "" {
		return c
	}
	for _, c := range t.Columns {
		if timeLike(c) && !changeTime(strings.ToLower(c.Name)) {
			return c.Name
		}
	}
	return ""
}

func timeLike(c mappings.Column) bool {
	return c.Category == "D" && c.NotNull && (strings.HasPrefix(c.Type, "date") || strings.HasPrefix(c.Type, "timestamp")) && orderable(c.Name)
}

func changeTime(n string) bool {
	for _, w := range []string{"updat", "modif", "chang", "last", "delet", "expir", "birth", "valid", "due"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// orderable: an orderBy entry is "column" or "column desc", so a column
// named with white space cannot be ordered by.
func orderable(col string) bool { return !strings.ContainsAny(col, " \t\n\r\v\f") }
