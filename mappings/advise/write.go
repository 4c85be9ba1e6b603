package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// out is the mapping text being written.
type out struct {
	b strings.Builder
}

// line writes one line at indent.
func (o *out) line(indent int, format string, args ...any) {
	o.b.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(&o.b, format, args...)
	o.b.WriteByte('\n')
}

// comment writes text as YAML comment lines at indent, wrapped.
func (o *out) comment(indent int, text string) {
	const width = 96
	cur := ""
	for _, w := range strings.Fields(commentText(text)) {
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

// scope is where an entity's rows are written.
type scope struct {
	kind  string   // root, bucket (a page's items), embed, copy
	path  []string // qualified tables from the document's root, for cycles
	where string   // the field path, for the report
	// home is the table whose document or pages hold the rows: references
	// to other rows stored there are values, not refs.
	home string
	// items and page are a bucket page's array and page number fields.
	items, page string
	// subset: the rows are the most recent few of a bucketed table (the
	// bucket collection holds them all).
	subset bool
}

func (sc scope) in(q, field string) scope {
	return scope{kind: sc.kind, path: append(slices.Clone(sc.path), q), where: sc.where + "." + field, home: sc.home, subset: sc.subset}
}

// docPath is the path of field name in the document of scope sc (where
// starts with the collection's name, which holds no dot).
func (sc scope) docPath(name string) string {
	_, p, _ := strings.Cut(sc.where+"."+name, ".")
	return p
}

// place records where a table's rows are written, for the report.
func (a *advisor) place(r *role, where string) {
	if !slices.Contains(r.places, where) {
		r.places = append(r.places, where)
	}
}

func (a *advisor) write() string {
	o := &out{}
	o.comment(0, fmt.Sprintf("Drafted by `denorm advise` from schema %q: the catalog (keys, foreign keys, join tables) and the data's statistics (rows, children per parent, changes since statistics reset). Review every choice: each comment gives its reason and numbers. Columns that look like secrets or search internals are left out, each with a comment; char(n) values are written without their blank padding (the mapping's default, char: trim). Check the draft with `denorm validate --source ...`, then `denorm plan`.", a.in.Schema))
	if h := a.coverageHeader(); h != "" {
		o.comment(0, h)
	}
	numeric, why := a.numericMode()
	if why != "" {
		o.comment(0, why)
	}
	if cols := a.fineTimestamps(); len(cols) > 0 {
		o.comment(0, fmt.Sprintf("Timestamps are drafted as BSON dates (timestamp: date, the format's default), which hold milliseconds: values of %s with digits below the millisecond are written rounded (`denorm plan` counts them, timestamp-precision); set `timestamp: string` (for the file, or per field) to keep every digit as ISO 8601 text", strings.Join(cols, ", ")))
	}
	o.line(0, "version: 1")
	if numeric != "" {
		o.line(0, "numeric: %s", numeric)
	}
	o.line(0, "collections:")
	for _, q := range a.names {
		switch r := a.roles[q]; r.action {
		case "collection":
			a.writeCollection(o, r)
		case "bucket":
			a.writeBucket(o, r)
		}
	}
	o.b.WriteString("\n")
	for _, q := range a.names {
		r := a.roles[q]
		switch r.action {
		case "lookup", "skip", "inline":
			o.comment(0, r.t.Name+": "+r.reason)
		case "link":
			// A join table's id arrays have their own comments; its reason
			// is written here when no side gets one, or when rows of it
			// reach no document.
			if sides, _ := a.linkSides(r); len(sides) == 0 || a.in.Coverage[q].Unreached > 0 {
				o.comment(0, r.t.Name+": "+r.reason)
			}
		}
	}
	return o.b.String()
}

// numericMode is the numeric mode to write (empty: the format's default,
// decimal) and why, when the schema has NUMERIC columns or the mode is
// given: --numeric as given; for a target without Decimal128 (FerretDB)
// double, which it stores; otherwise decimal, exact on MongoDB, saying
// whether the target is known.
func (a *advisor) numericMode() (mappings.NumericMode, string) {
	tg := a.in.Target
	server := "the target"
	if tg != nil && tg.Server != "" {
		server = "the target (" + tg.Server + ")"
	}
	switch {
	case a.in.Numeric != "":
		return a.in.Numeric, ""
	case !a.hasNumeric():
		return "", ""
	case tg != nil && tg.NoDecimal128:
		return mappings.NumericDouble, fmt.Sprintf("numeric: double: %s cannot store BSON Decimal128 (numeric: decimal, the default, which it would refuse), so NUMERIC columns are drafted as doubles: numbers the target can compare and sum, rounded to about 15 significant digits; set `numeric: string` instead (for the file, or per field) to keep every digit as text", server)
	case tg != nil && tg.Server == "":
		return "", "NUMERIC columns are drafted as Decimal128 (numeric: decimal, the format's default): exact, and what the directory target writes as {\"$numberDecimal\": ...}; FerretDB cannot store Decimal128: draft with --target pointing at it to get a mode it can store"
	case tg != nil:
		return "", fmt.Sprintf("NUMERIC columns are drafted as Decimal128 (numeric: decimal, the format's default), which %s stores exactly", server)
	}
	return "", "NUMERIC columns are drafted as Decimal128 (numeric: decimal, the format's default): no --target was given, and MongoDB stores it exactly; FerretDB cannot store Decimal128: for it, draft with --target (advise then drafts numeric: double), or set `numeric: double` or `numeric: string`"
}

// fineTimestamps lists the timestamp columns of the schema (up to a few,
// then "..."), whose type holds digits below the millisecond: timestamp
// and timestamptz of the default precision (6), or of 4 to 6.
func (a *advisor) fineTimestamps() []string {
	var out []string
	for _, q := range a.names {
		r := a.roles[q]
		if r.action == "skip" {
			continue
		}
		for _, c := range r.t.Columns {
			if !strings.HasPrefix(c.Type, "timestamp") || secret(c.Name) {
				continue
			}
			if p, ok := strings.CutPrefix(c.Type, "timestamp("); ok && p != "" && p[0] >= '0' && p[0] <= '3' {
				continue
			}
			if len(out) == 4 {
				return append(out, "...")
			}
			out = append(out, r.t.Name+"."+c.Name)
		}
	}
	return out
}

// hasNumeric reports whether a table of the schema has a NUMERIC column
// (or an array of them).
func (a *advisor) hasNumeric() bool {
	for _, q := range a.names {
		for _, c := range a.roles[q].t.Columns {
			if c.TypeName == "numeric" || c.TypeName == "_numeric" {
				return true
			}
		}
	}
	return false
}

// tableRef is the table as the mapping names it, in SQL's syntax (quoted
// when it needs to be): qualified when not in public.
func (a *advisor) tableRef(t *mappings.Table) string {
	if t.Schema == "public" {
		return y(mappings.QuoteIdent(t.Name))
	}
	return y(t.QualifiedName())
}

func names(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = y(c)
	}
	return strings.Join(q, ", ")
}

func (a *advisor) writeCollection(o *out, r *role) {
	o.b.WriteString("\n")
	o.comment(1, r.t.Name+": "+r.reason)
	o.line(1, "- name: %s", y(r.coll))
	o.line(2, "table: %s", a.tableRef(r.t))
	k := key(r.t)
	if len(r.t.PrimaryKey) == 0 {
		o.line(2, "id: [%s]", names(k))
	}
	var keyNames []string
	if len(k) > 1 {
		keyNames = k // they name the fields of the _id document
	}
	a.writeEntity(o, 2, r, k, keyNames, scope{kind: "root", path: []string{r.q}, where: r.coll, home: r.q})
	a.writeIndexes(o, 2)
}

func (a *advisor) writeBucket(o *out, r *role) {
	o.b.WriteString("\n")
	o.comment(1, r.t.Name+": "+r.reason)
	o.line(1, "- name: %s", y(r.coll))
	o.line(2, "table: %s", a.tableRef(r.t))
	by := r.owner.Columns
	order := []string{r.time}
	for _, c := range key(r.t) {
		if !slices.Contains(order, c) && orderable(c) {
			order = append(order, c)
		}
	}
	items := fieldName(pluralName(r.t.Name))
	if items == "page" {
		items = "pages"
	}
	o.line(2, "bucket: {by: [%s], size: %d, orderBy: [%s], items: %s}", names(by), BucketSize, names(order), y(items))
	a.writeEntity(o, 2, r, by, by, scope{kind: "bucket", path: []string{r.q}, where: r.coll + "." + items, home: r.owner.RefTable, items: items, page: "page"})
	a.writeIndexes(o, 2)
}

// colOut is what one column becomes in a document.
type colOut struct {
	col  mappings.Column
	kind string // plain, ref, value, label, copy, secret, search, binary
	fk   *rel
	to   *role  // the referenced table
	note string // comment written before the field
	name string // field name
	// lookup and labelCol name the lookup a label comes from; labelName
	// is the label copied next to a reference.
	lookup, labelCol, labelName string
}

// secretWords are the words of column names left out as secrets.
var secretWords = []string{"password", "passwd", "pwd", "hash", "hashed", "token", "secret", "salt", "apikey", "credential", "credentials"}

// cardWords are the words, and cardPhrases the runs of words, of column
// names left out as payment card data or personal identifiers: a card
// number (PAN), its verification code (CVV, CVC: PCI DSS forbids storing
// it after authorisation), a PIN, a bank account (IBAN), a social
// security number.
var (
	cardWords   = []string{"cvv", "cvv2", "cvc", "cvc2", "cvn", "pan", "pin", "iban", "ssn"}
	cardPhrases = []string{"card_number", "card_num", "card_no", "cardnumber", "cardno", "cc_number", "cc_num", "cc_no", "credit_card",
		"creditcard", "security_code", "social_security", "account_number", "bank_account", "routing_number", "passport_number"}
)

// secret reports whether a column's name looks like it holds a secret.
func secret(col string) bool { return secretKind(col) != "" }

// secretKind is "credential" when a column's name looks like it holds a
// password, token, hash or key, "card" when it looks like payment card
// data or a personal identifier (card number, CVV, IBAN, SSN), "" when
// neither.
func secretKind(col string) string {
	var words []string
	cur := []rune{}
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(col)
	for i, r := range rs {
		switch {
		case !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			flush()
			continue
		case i > 0 && r >= 'A' && r <= 'Z' && rs[i-1] >= 'a' && rs[i-1] <= 'z':
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	joined := strings.Join(words, "_")
	for _, w := range words {
		if slices.Contains(secretWords, w) {
			return "credential"
		}
	}
	if strings.Contains(joined, "api_key") || strings.Contains(joined, "private_key") {
		return "credential"
	}
	for _, w := range words {
		if slices.Contains(cardWords, w) {
			return "card"
		}
	}
	padded := "_" + joined + "_"
	for _, p := range cardPhrases {
		if strings.Contains(padded, "_"+p+"_") {
			return "card"
		}
	}
	return ""
}

// canCopy reports whether the row fk references is copied into the
// document as an object: a one-to-one reference to a collection or inline
// table that holds nothing of its own, rarely changes, and is not already
// on the way from the document's root.
func (a *advisor) canCopy(fk *rel, sc scope) bool {
	p := a.roles[fk.RefTable]
	return a.oneToOne(fk) && (p.action == "collection" || p.action == "inline") && !a.hot(p.t) &&
		len(a.kids(p, "embed", "bucket")) == 0 && !slices.Contains(sc.path, p.q)
}

// columns decides what each column of r outside skip becomes in scope sc.
func (a *advisor) columns(r *role, skip []string, sc scope) []colOut {
	var cols []colOut
	for _, c := range r.t.Columns {
		if slices.Contains(skip, c.Name) {
			continue
		}
		co := colOut{col: c, kind: "plain"}
		switch {
		case secretKind(c.Name) == "credential":
			co.kind = "secret"
			co.note = fmt.Sprintf("%s: left out: its name says it holds a secret (password, token, hash, key...); copying credentials into documents spreads them. Add it back deliberately if the documents need it", c.Name)
		case secretKind(c.Name) == "card":
			co.kind = "secret"
			co.note = fmt.Sprintf("%s: left out: its name says it holds a secret: payment card data or a personal identifier (card number, CVV/CVC, PIN, IBAN, SSN...); copying it into documents spreads it (PCI DSS forbids keeping a card's verification code at all, and a card number only where it is protected). Add it back deliberately, masked or tokenised, if the documents need it", c.Name)
		case c.TypeName == "tsvector" || c.TypeName == "tsquery":
			co.kind = "search"
			co.note = fmt.Sprintf("%s: left out: a %s is PostgreSQL's full-text search internals, not data; use the target's own text index on the fields it was built from", c.Name, c.TypeName)
		case sc.kind == "copy" && c.TypeName == "bytea":
			co.kind = "binary"
			co.note = fmt.Sprintf("%s: left out of this copy: binary data stays in %s's own rows", c.Name, r.t.Name)
		}
		if co.kind == "plain" {
			a.reference(&co, r, sc)
		}
		cols = append(cols, co)
	}
	return cols
}

// reference fills in what a column that is a foreign key becomes.
func (a *advisor) reference(co *colOut, r *role, sc scope) {
	var fk *rel
	for _, f := range a.out[r.q] {
		if slices.Contains(f.Columns, co.col.Name) {
			fk = f
			break
		}
	}
	if fk == nil {
		return
	}
	p := a.roles[fk.RefTable]
	co.fk, co.to = fk, p
	how := ""
	if fk.implied {
		how = fmt.Sprintf(" (no declared foreign key: read as one because %s is named after %s and its key)", co.col.Name, p.t.Name)
	}
	switch {
	case p == nil:
		co.kind = "value"
	case len(fk.Columns) > 1:
		co.kind = "value"
		co.note = fmt.Sprintf("%s: part of the composite foreign key (%s) to %s: kept as a value (ref: takes one column)", co.col.Name, strings.Join(fk.Columns, ", "), p.t.Name)
	case p.action == "lookup":
		co.kind, co.labelCol = "label", label(p.t)
		co.note = fmt.Sprintf("%s: %s from lookup table %s%s", co.col.Name, co.labelCol, p.t.Name, how)
	case a.canCopy(fk, sc):
		co.kind = "copy"
		f := a.fan(fk)
		co.note = fmt.Sprintf("%s: one-to-one (each %s is used by at most one %s: %d of %d %s rows referenced): the %s is copied here as an object, read with the %s%s", co.col.Name, p.t.Name, r.t.Name, f.Parents, a.rows(p.t), p.t.Name, p.t.Name, r.t.Name, how)
		if p.action == "collection" {
			co.note += fmt.Sprintf("; the reference is kept beside it (%s is also its own collection)", p.t.Name)
		}
	case p.action == "collection" && slices.Equal(key(p.t), fk.RefColumns):
		co.kind = "ref"
		if how != "" {
			co.note = co.col.Name + ": a reference to " + p.coll + how
		}
		// Rows shown inside another document show the name of what they
		// refer to: copy it next to the reference (partial
		// denormalization), unless it changes often.
		if l := displayLabel(p.t); l != "" && sc.kind != "root" && !a.hot(p.t) {
			co.labelCol = l
			co.note = strings.TrimPrefix(co.note+"; ", "; ") + fmt.Sprintf("%s: a reference to %s, with its %s copied beside it, shown wherever %s rows are (%s rarely changes: %s)", co.col.Name, p.coll, l, r.t.Name, p.t.Name, a.changes(p.t))
		}
	case (p.action == "embed" || p.action == "bucket") && p.owner != nil && p.owner.RefTable == sc.home:
		co.kind = "value"
		co.note = fmt.Sprintf("%s: the %s of the same %s, stored in its %s: kept as a value (a ref: needs a collection keyed by %s)", co.col.Name, p.t.Name, a.tname(sc.home), map[string]string{"embed": "document", "bucket": "pages"}[p.action], strings.Join(fk.RefColumns, ", "))
	default:
		co.kind = "value"
		co.note = fmt.Sprintf("%s: refers to %s, which is not a collection keyed by %s (%s): kept as a value", co.col.Name, p.t.Name, strings.Join(fk.RefColumns, ", "), p.action)
	}
}

// writeEntity writes the lookups and fields of r's rows in scope sc,
// leaving out the columns in skip (the _id, a bucket's parent key, an
// embed's join columns); keyNames are skipped columns whose field names
// still appear (a composite _id's fields, a bucket's parent key).
func (a *advisor) writeEntity(o *out, ind int, r *role, skip, keyNames []string, sc scope) {
	cols := a.columns(r, skip, sc)
	// Key fields (a composite _id's, a bucket's parent key beside its
	// page and items) and the row's fields are named apart.
	keyUsed := map[string]bool{"_id": true, sc.page: sc.page != "", sc.items: sc.items != ""}
	rename := map[string]string{}
	var renameOrder []string
	var keyFields []string
	for _, k := range keyNames {
		n := uniqueName(fieldName(k), keyUsed)
		if n != mappings.CamelCase(k) {
			rename[k] = n
			renameOrder = append(renameOrder, k)
		}
		keyFields = append(keyFields, n)
	}
	if sc.kind == "bucket" {
		a.proposeBucket(keyFields, sc.page, a.tname(sc.home))
	}
	used := map[string]bool{"_id": true}
	lookupsUsed := map[string]bool{}
	var star []string
	for i := range cols {
		co := &cols[i]
		switch co.kind {
		case "secret", "search", "binary":
			continue
		case "label", "copy":
			co.name = uniqueName(fieldName(relationName(co.col.Name)), used)
		default:
			co.name = uniqueName(fieldName(co.col.Name), used)
			if strings.Contains(co.col.Name, ".") {
				// "a.b" in column: would name lookup a's column b: take
				// it through "*" and rename instead.
				star = append(star, co.col.Name)
				rename[co.col.Name] = co.name
				renameOrder = append(renameOrder, co.col.Name)
				if co.kind == "ref" {
					co.note = strings.TrimPrefix(co.note+"; ", "; ") + co.col.Name + ": its name holds a dot, so it is taken through \"*\" with rename, without ref:"
				}
			}
		}
		if co.kind == "label" || co.labelCol != "" {
			co.lookup = uniqueName(safeWord(relationName(co.col.Name)), lookupsUsed)
		}
		if co.kind == "ref" && co.labelCol != "" {
			base := relationName(co.col.Name)
			switch {
			case strings.HasPrefix(normName(co.labelCol), normName(base)):
				base = co.labelCol // product_id, product_name: productName
			case co.labelCol != co.to.t.Name:
				base += "_" + co.labelCol
			}
			co.labelName = uniqueName(fieldName(base), used)
		}
	}
	// lookups: a lookup table's label, or the label copied beside a reference
	var lookups []colOut
	for _, co := range cols {
		if co.lookup != "" {
			lookups = append(lookups, co)
		}
	}
	if len(lookups) > 0 {
		o.line(ind, "lookups:")
		for _, l := range lookups {
			o.line(ind+1, "- {name: %s, table: %s, join: {%s: %s}}", y(l.lookup), a.tableRef(l.to.t), y(key(l.to.t)[0]), y(l.col.Name))
		}
	}
	if len(renameOrder) > 0 {
		o.line(ind, "rename:")
		for _, c := range renameOrder {
			o.line(ind+1, "%s: %s", y(c), y(rename[c]))
		}
	}
	if len(star) > 0 {
		// "*" takes every column not listed by name: exclude all but the
		// dotted ones.
		var excl []string
		for _, co := range cols {
			listed := (co.kind == "plain" || co.kind == "value" || co.kind == "ref") && !strings.Contains(co.col.Name, ".")
			if !slices.Contains(star, co.col.Name) && !listed {
				excl = append(excl, co.col.Name)
			}
		}
		if len(excl) > 0 {
			o.line(ind, "exclude: [%s]", names(excl))
		}
	}
	f := &out{}
	n := 0
	field := func(format string, args ...any) {
		n++
		f.line(ind+1, format, args...)
	}
	for _, co := range cols {
		if co.note != "" {
			f.comment(ind+1, co.note)
		}
		if slices.Contains(star, co.col.Name) {
			continue
		}
		switch co.kind {
		case "plain", "value":
			if co.name == mappings.CamelCase(co.col.Name) && co.col.Name != "*" {
				field("- %s", y(co.col.Name))
			} else {
				field("- %s", columnField(co.name, co.col.Name, ""))
			}
		case "ref":
			field("- %s", columnField(co.name, co.col.Name, co.to.coll))
			switch {
			case sc.kind == "root":
				a.proposeRef(co.name, co.to.coll, r.t.Name)
			case sc.kind == "embed" && !sc.subset:
				a.proposeEmbeddedRef(sc.docPath(co.name), co.to.coll, r.t.Name)
			}
			if co.labelName != "" {
				field("- %s", columnField(co.labelName, co.lookup+"."+co.labelCol, ""))
				a.place(co.to, sc.where+"."+co.labelName+" (label copy)")
			}
		case "label":
			field("- %s", columnField(co.name, co.lookup+"."+co.labelCol, ""))
			a.place(co.to, sc.where+"."+co.name)
		case "copy":
			if co.to.action == "collection" {
				ref := uniqueName(fieldName(co.col.Name), used)
				field("- %s", columnField(ref, co.col.Name, co.to.coll))
				if sc.kind == "root" {
					a.proposeRef(ref, co.to.coll, r.t.Name)
				}
			}
			field("- name: %s", y(co.name))
			f.line(ind+2, "embed:")
			f.line(ind+3, "table: %s", a.tableRef(co.to.t))
			f.line(ind+3, "join: {%s: %s}", y(co.fk.RefColumns[0]), y(co.col.Name))
			f.line(ind+3, "as: object")
			inner := sc.in(co.to.q, co.name)
			inner.kind = "copy"
			a.place(co.to, inner.where)
			a.writeEntity(f, ind+3, co.to, co.fk.RefColumns, nil, inner)
		}
	}
	if len(star) > 0 {
		field("- \"*\"   # the columns renamed above")
	}
	if sc.kind == "root" {
		n += a.writeLinks(f, ind+1, r, used, sc)
	}
	n += a.writeChildren(f, ind+1, r, used, sc)
	if n == 0 {
		o.line(ind, "fields: []") // the document is its _id
		return
	}
	o.line(ind, "fields:")
	o.b.WriteString(f.b.String())
}

// columnField writes a field taking a column (or "lookup.column"), with
// its name when it is not the default one, and its ref when given.
func columnField(name, col, ref string) string {
	var parts []string
	if name != mappings.CamelCase(col) || strings.Contains(col, ".") {
		parts = append(parts, "name: "+y(name))
	}
	parts = append(parts, "column: "+y(col))
	if ref != "" {
		parts = append(parts, "ref: "+y(ref))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// writeLinks writes the id arrays of the join tables r is a side of,
// with ref: to the other side's collection.
func (a *advisor) writeLinks(o *out, ind int, r *role, used map[string]bool, sc scope) int {
	n := 0
	for _, q := range a.names {
		l := a.roles[q]
		if l.action != "link" {
			continue
		}
		sides, fans := a.linkSides(l)
		fks := a.out[q]
		for _, i := range sides {
			if fks[i].RefTable != r.q {
				continue
			}
			mine, other := fks[i], fks[1-i]
			op := a.roles[other.RefTable]
			base := pluralName(op.t.Name)
			if other.RefTable == r.q { // both sides are this table: name it after the column
				base = pluralName(relationName(other.Columns[0]))
			}
			name := uniqueName(fieldName(base), used)
			o.comment(ind, fmt.Sprintf("%s: id arrays through the join table %s (up to %d per %s, p99 %d)", name, l.t.Name, fans[i].Max, r.t.Name, fans[i].P99))
			o.line(ind, "- name: %s", y(name))
			o.line(ind+1, "ids: {table: %s, join: {%s: %s}, column: %s}", a.tableRef(l.t), y(mine.Columns[0]), y(mine.RefColumns[0]), y(other.Columns[0]))
			if op.action == "collection" && slices.Equal(key(op.t), other.RefColumns) {
				o.line(ind+1, "ref: %s", y(op.coll))
			}
			a.place(l, sc.where+"."+name)
			n++
		}
	}
	return n
}

// orderDesc is a descending orderBy entry for col.
func orderDesc(col string) string {
	if plainName.MatchString(col) {
		return col + " desc"
	}
	return y(col + " desc")
}

// writeChildren writes r's embedded children and the recent subsets of
// its bucketed ones.
func (a *advisor) writeChildren(o *out, ind int, r *role, used map[string]bool, sc scope) int {
	n := 0
	for _, k := range a.kids(r, "embed", "bucket") {
		if slices.Contains(sc.path, k.q) {
			continue
		}
		join := make([]string, len(k.owner.Columns))
		for i, c := range k.owner.Columns {
			join[i] = y(c) + ": " + y(k.owner.RefColumns[i])
		}
		base := fieldName(pluralName(k.t.Name))
		if k.action == "bucket" {
			base = fieldName("recent_" + base)
		}
		name := uniqueName(base, used)
		o.comment(ind, k.t.Name+": "+k.reason)
		o.line(ind, "- name: %s", y(name))
		o.line(ind+1, "embed:")
		o.line(ind+2, "table: %s", a.tableRef(k.t))
		o.line(ind+2, "join: {%s}", strings.Join(join, ", "))
		var order []string
		switch {
		case k.action == "bucket":
			order = append(order, orderDesc(k.time))
			for _, c := range key(k.t) {
				if c != k.time && orderable(c) {
					order = append(order, orderDesc(c))
				}
			}
		case unique(k.t, k.owner.Columns):
			o.line(ind+2, "as: object")
		case k.keyless:
			// No key to order by: its time, then its other plain columns,
			// so that the array's order does not depend on the plan.
			if tc := timeColumn(k.t); tc != "" {
				order = append(order, y(tc))
			}
			for _, c := range k.t.Columns {
				if !slices.Contains(k.owner.Columns, c.Name) && orderable(c.Name) && c.Name != timeColumn(k.t) && c.Category != "" && strings.Contains("NSDB", c.Category) && !secret(c.Name) {
					order = append(order, y(c.Name))
				}
			}
		default:
			for _, c := range key(k.t) {
				if orderable(c) {
					order = append(order, y(c))
				}
			}
		}
		if len(order) > 0 {
			o.line(ind+2, "orderBy: [%s]", strings.Join(order, ", "))
		}
		if k.action == "bucket" {
			o.line(ind+2, "limit: %d", RecentItems)
		}
		inner := sc.in(k.q, name)
		inner.kind = "embed"
		inner.subset = inner.subset || k.action == "bucket"
		a.place(k, inner.where)
		a.writeEntity(o, ind+2, k, k.owner.Columns, nil, inner)
		n++
	}
	return n
}
