package advise

import (
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/mappings"
)

func TestAdvisePlural(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"category", "categories"}, {"categories", "categories"},
		{"order", "orders"}, {"orders", "orders"},
		{"employee", "employees"}, {"employees", "employees"},
		{"person", "people"}, {"people", "people"}, {"persons", "persons"}, {"sales_person", "sales_people"},
		{"address", "addresses"}, {"addresses", "addresses"},
		{"status", "statuses"}, {"statuses", "statuses"},
		{"box", "boxes"}, {"match", "matches"}, {"class", "classes"}, {"quiz", "quizzes"}, {"bus", "buses"},
		{"day", "days"}, {"key", "keys"}, {"country", "countries"}, {"city", "cities"}, {"inventory", "inventories"},
		{"analysis", "analyses"}, {"child", "children"}, {"datum", "data"}, {"leaf", "leaves"},
		{"menu", "menus"}, {"menus", "menus"}, {"movie", "movies"}, {"photo", "photos"}, {"hero", "heroes"},
		{"staff", "staff"}, {"news", "news"}, {"series", "series"},
		{"order_line", "order_lines"}, {"film_category", "film_categories"}, {"contact_detail", "contact_details"},
		{"OrderLine", "OrderLines"}, {"ORDER", "ORDERS"}, {"Person", "People"}, {"iPhone", "iPhones"},
		{"order line", "order lines"}, {"x", "xes"},
	} {
		if got := plural(tc.in); got != tc.want {
			t.Errorf("plural(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := plural(plural(tc.in)); again != plural(tc.in) {
			t.Errorf("plural(plural(%q)) = %q: pluralized twice", tc.in, again)
		}
	}
}

func TestAdviseSafeNames(t *testing.T) {
	for _, tc := range []struct{ in, field, coll string }{
		{"contact_details", "contactDetails", "contactDetails"},
		{"a.b", "aB", "aB"},
		{"$price", "price", "price"},
		{"_id", "id_", "id_"},
		{"*", "field", "field"},
		{"line\nbreak", "lineBreak", "lineBreak"},
		{"naïve", "naïve", "naïve"},
		{"_denorm", "denorm", "denorm"},
		{"system.profiles", "systemProfiles", "tSystemProfiles"},
		{"../../etc", "etc", "etc"},
		{"x|y", "xY", "xY"},
	} {
		if got := fieldName(tc.in); got != tc.field {
			t.Errorf("fieldName(%q) = %q, want %q", tc.in, got, tc.field)
		}
		if got := collectionName(tc.in); got != tc.coll {
			t.Errorf("collectionName(%q) = %q, want %q", tc.in, got, tc.coll)
		}
	}
	used := map[string]bool{}
	if a, b, c := uniqueName("userId", used), uniqueName("userId", used), uniqueName("userId", used); a != "userId" || b != "userId2" || c != "userId3" {
		t.Errorf("uniqueName: %s %s %s", a, b, c)
	}
	for in, want := range map[string]string{"type_id": "type", "original_language_id": "original_language", "code": "code_ref"} {
		if got := relationName(in); got != want {
			t.Errorf("relationName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"order": "order", "a.b": `"a.b"`, "yes": `"yes"`, "Null": `"Null"`, "a b": `"a b"`, "line\nbreak": `"line\nbreak"`, "*": `"*"`} {
		if got := y(in); got != want {
			t.Errorf("y(%q) = %s, want %s", in, got, want)
		}
	}
	if got := commentText("a\nb\x07c"); got != "a b?c" {
		t.Errorf("commentText: %q", got)
	}
}

func TestAdviseSecret(t *testing.T) {
	for name, want := range map[string]bool{
		"password": true, "password_hash": true, "passwd": true, "pwd": true, "hash": true, "api_key": true, "apiKey": true,
		"APIKey": true, "auth_token": true, "refreshToken": true, "client_secret": true, "salt": true, "private_key": true, "credentials": true,
		"username": false, "email": false, "hashtag_count": false, "passage": false, "tokenizer": false, "salty": false,
	} {
		if got := secret(name); got != want {
			t.Errorf("secret(%q) = %v, want %v", name, got, want)
		}
	}
	// Payment card data and personal identifiers are secrets too (issue
	// 28): left out like password hashes, with their own reason.
	for name, want := range map[string]string{
		"card_number": "card", "cardNumber": "card", "CardNo": "card", "cc_number": "card", "credit_card_number": "card", "creditCard": "card",
		"cvv": "card", "CVC": "card", "card_cvv2": "card", "security_code": "card", "pan": "card", "iban": "card", "IBAN": "card",
		"ssn": "card", "social_security_number": "card", "pin": "card", "bank_account_number": "card", "password": "credential",
		"card_holder": "", "card_type": "", "expiry": "", "panel": "", "company": "", "pinned": "", "discount": "", "card_id": "", "span": "",
	} {
		if got := secretKind(name); got != want {
			t.Errorf("secretKind(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestAdviseMarkdownText(t *testing.T) {
	for in, want := range map[string]string{
		"order_line":             `order\_line`,
		"a|b":                    `a\|b`,
		"`x`":                    "\\`x\\`",
		"*bold*":                 `\*bold\*`,
		"<script>alert</script>": "&lt;script&gt;alert&lt;/script&gt;",
		"a&b \"q\"":              "a&amp;b &quot;q&quot;",
		"[link](x)":              `\[link\]\(x\)`,
		"two\nlines":             "two lines",
		`back\slash`:             `back\\slash`,
	} {
		if got := MarkdownText(in); got != want {
			t.Errorf("MarkdownText(%q) = %q, want %q", in, got, want)
		}
	}
	r := Report("s|x", []Choice{{Table: "public.x|y", Action: "collection", Target: "xYs", Reason: "<b>why</b>"}})
	for _, want := range []string{"# denorm advise: schema s\\|x", "| public.x\\|y | collection | xYs | &lt;b&gt;why&lt;/b&gt; |"} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q:\n%s", want, r)
		}
	}
	if row := strings.Split(r, "\n")[4]; strings.Count(row, "|")-strings.Count(row, `\|`) != 5 {
		t.Errorf("a name's pipe splits the row into more cells:\n%s", r)
	}
}

// col makes a column: N integer, S text, D timestamptz, d date, M numeric,
// T tsvector, B bytea.
func col(name string, kind byte, notNull bool) mappings.Column {
	c := map[byte]mappings.Column{
		'N': {Type: "integer", TypeName: "int4", Category: "N"},
		'S': {Type: "text", TypeName: "text", Category: "S"},
		'D': {Type: "timestamp with time zone", TypeName: "timestamptz", Category: "D"},
		'd': {Type: "date", TypeName: "date", Category: "D"},
		'M': {Type: "numeric(10,2)", TypeName: "numeric", Category: "N"},
		'T': {Type: "tsvector", TypeName: "tsvector", Category: "U"},
		'B': {Type: "bytea", TypeName: "bytea", Category: "U"},
	}[kind]
	c.Name, c.NotNull = name, notNull
	return c
}

func fk(cols, table, ref string) mappings.ForeignKey {
	return mappings.ForeignKey{Columns: strings.Split(cols, ","), RefTable: mappings.QualifiedTableName("public", table), RefColumns: strings.Split(ref, ",")}
}

func catalog(tables ...*mappings.Table) *mappings.Catalog {
	cat := &mappings.Catalog{Tables: map[string]*mappings.Table{}}
	for _, tb := range tables {
		tb.Schema = "public"
		cat.Tables[tb.QualifiedName()] = tb
	}
	return cat
}

// draft drafts a mapping and checks that it is valid: it parses (YAML,
// JSON Schema, meaning) and resolves against the catalog it was drafted
// from, with every name it gives the target safe and unique. It returns
// the text, the parsed file and the actions by table name.
func draft(t *testing.T, in Input) (string, *mappings.File, map[string]Choice) {
	t.Helper()
	text, choices, err := Draft(in)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mappings.Parse("advised.yaml", []byte(text))
	if err != nil {
		t.Fatalf("the draft does not parse: %v\n%s", err, text)
	}
	plan, err := mappings.Resolve(f, in.Catalog)
	if err != nil {
		t.Fatalf("the draft does not resolve: %v\n%s", err, text)
	}
	for _, cp := range plan.Collections {
		checkName(t, "collection", cp.Name)
		if strings.HasPrefix(cp.Name, "system") || cp.Name == "_denorm" {
			t.Errorf("collection name %q is reserved by the target", cp.Name)
		}
		checkFields(t, cp.Name, cp.Root)
	}
	byTable := map[string]Choice{}
	for _, c := range choices {
		name := c.Table
		if _, n, err := mappings.SplitQualifiedName(c.Table); err == nil {
			name = n
		}
		byTable[name] = c
	}
	return text, f, byTable
}

func checkName(t *testing.T, what, n string) {
	t.Helper()
	if n == "" || strings.ContainsAny(n, ".$\x00") || strings.ContainsFunc(n, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		t.Errorf("%s name %q is not safe for the target", what, n)
	}
}

func checkFields(t *testing.T, where string, n *mappings.Node) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range n.Fields {
		checkName(t, "field", f.Name)
		if f.Name == "_id" || seen[f.Name] {
			t.Errorf("%s: field %q is _id or given twice", where, f.Name)
		}
		seen[f.Name] = true
		if f.Embed != nil {
			checkFields(t, where+"."+f.Name, f.Embed)
		}
	}
}

// find returns the collection entry named name.
func find(t *testing.T, f *mappings.File, name string) *mappings.Collection {
	t.Helper()
	for _, c := range f.Collections {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no collection %q in the draft", name)
	return nil
}

// field returns the field named name (or taking column name) of fields.
func field(t *testing.T, fields []*mappings.Field, name string) *mappings.Field {
	t.Helper()
	for _, fd := range fields {
		if fd.Name == name || fd.Name == "" && (fd.Column == name || mappings.CamelCase(fd.Column) == name) {
			return fd
		}
	}
	t.Fatalf("no field %q", name)
	return nil
}

func wantActions(t *testing.T, got map[string]Choice, want map[string]string) {
	t.Helper()
	actions := map[string]string{}
	for k := range want {
		actions[k] = got[k].Action
	}
	if d := cmp.Diff(want, actions); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
		for k := range want {
			t.Logf("%s: %s: %s", k, got[k].Action, got[k].Reason)
		}
	}
}

// TestAdviseDraftRules applies every rule to a small synthetic schema.
func TestAdviseDraftRules(t *testing.T) {
	cat := catalog(
		&mappings.Table{Name: "kind", Columns: []mappings.Column{col("id", 'N', true), col("name", 'S', true)}, PrimaryKey: []string{"id"}, Unique: [][]string{{"name"}}, Estimate: 3},
		&mappings.Table{Name: "owner", Columns: []mappings.Column{col("id", 'N', true), col("name", 'S', true), col("email", 'S', false), col("password", 'S', false), col("search", 'T', false)}, PrimaryKey: []string{"id"}, Estimate: 10},
		&mappings.Table{Name: "pet", Columns: []mappings.Column{col("id", 'N', true), col("owner_id", 'N', true), col("kind_id", 'N', true), col("name", 'S', true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{fk("owner_id", "owner", "id"), fk("kind_id", "kind", "id")}},
		&mappings.Table{Name: "event", Columns: []mappings.Column{col("id", 'N', true), col("owner_id", 'N', true), col("at", 'D', true), col("what", 'S', true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{fk("owner_id", "owner", "id")}},
		&mappings.Table{Name: "club", Columns: []mappings.Column{col("id", 'N', true), col("title", 'S', true), col("city", 'S', true)}, PrimaryKey: []string{"id"}},
		&mappings.Table{Name: "club_owner", Columns: []mappings.Column{col("club_id", 'N', true), col("owner_id", 'N', true)}, PrimaryKey: []string{"club_id", "owner_id"},
			ForeignKeys: []mappings.ForeignKey{fk("club_id", "club", "id"), fk("owner_id", "owner", "id")}},
		&mappings.Table{Name: "log", Columns: []mappings.Column{col("at", 'D', true), col("msg", 'S', true)}},
	)
	in := Input{Schema: "public", Catalog: cat, Activity: map[string]mappings.TableActivity{}, Fanout: map[string]Fanout{
		"public.pet(owner_id)":        {Parents: 10, Avg: 2, P99: 4, Max: 4},
		"public.pet(kind_id)":         {Parents: 3, Avg: 8, P99: 12, Max: 12},
		"public.event(owner_id)":      {Parents: 10, Avg: 500, P99: 4000, Max: 4000},
		"public.club_owner(club_id)":  {Parents: 5, Avg: 300, P99: 900, Max: 900},
		"public.club_owner(owner_id)": {Parents: 10, Avg: 2, P99: 3, Max: 3},
	}}
	text, f, got := draft(t, in)
	wantActions(t, got, map[string]string{"kind": "lookup", "owner": "collection", "pet": "embed", "event": "bucket", "club": "collection", "club_owner": "link", "log": "skip"})

	owners := find(t, f, "owners")
	pets := field(t, owners.Fields, "pets").Embed
	if pets == nil || pets.Table != "pet" || pets.Join[0] != (mappings.JoinPair{Column: "owner_id", Parent: "id"}) {
		t.Errorf("pets are not embedded in owners by owner_id: %+v", pets)
	}
	if kind := field(t, pets.Fields, "kind"); kind.Column != "kind.name" {
		t.Errorf("the kind's label is not copied: %+v", kind)
	}
	if b := find(t, f, "events").Bucket; b == nil || b.By[0] != "owner_id" || b.Size != BucketSize || strings.Join(b.OrderBy, ",") != "at,id" || b.Items != "events" {
		t.Errorf("events bucket: %+v", b)
	}
	if recent := field(t, owners.Fields, "recentEvents").Embed; recent == nil || recent.Limit != RecentItems || strings.Join(recent.OrderBy, ",") != "at desc,id desc" {
		t.Errorf("recent events: %+v", recent)
	}
	clubs := field(t, owners.Fields, "clubs")
	if clubs.Ids == nil || clubs.Ids.Table != "club_owner" || clubs.Ids.Column != "club_id" || clubs.Ref != "clubs" {
		t.Errorf("owners lack the club id array with ref: %+v", clubs)
	}
	for _, fd := range find(t, f, "clubs").Fields {
		if fd.Ids != nil {
			t.Errorf("the unbounded side of the join table got an id array: %+v", fd.Ids)
		}
	}
	for _, left := range []string{"password", "search"} {
		for _, fd := range owners.Fields {
			if fd.Column == left {
				t.Errorf("owners copy %s", left)
			}
		}
		if !strings.Contains(text, "# "+left+": left out: ") {
			t.Errorf("no comment says why %s is left out", left)
		}
	}
	if !strings.Contains(got["club_owner"].Reason, "each owner has up to 3 (avg 2.0, p99 3) -> id array") || !strings.Contains(got["club_owner"].Reason, "each club has up to 900") {
		t.Errorf("join table reason: %s", got["club_owner"].Reason)
	}
	if t.Failed() {
		t.Log(text)
	}

	// a pet that changes often is referenced, not embedded
	in.Activity["public.pet"] = mappings.TableActivity{Rows: 20, Updates: 500}
	_, f, got = draft(t, in)
	if c := got["pet"]; c.Action != "collection" || !strings.Contains(c.Reason, "changes often (20 rows, 500 updates") {
		t.Errorf("hot pet: %+v", c)
	}
	if owner := field(t, find(t, f, "pets").Fields, "owner_id"); owner.Ref != "owners" {
		t.Errorf("the pets collection's reference to owners has no ref: %+v", owner)
	}
	if _, _, err := Draft(Input{Schema: "empty", Catalog: &mappings.Catalog{Tables: map[string]*mappings.Table{}}}); err == nil || !strings.Contains(err.Error(), "--schema") {
		t.Errorf("empty schema: %v", err)
	}
}

// shop is a schema with line items: order lines refer to their order and
// to a product; orders grow with time under their customer.
func shop(lines Fanout) Input {
	cat := catalog(
		&mappings.Table{Name: "customer", Columns: []mappings.Column{col("id", 'N', true), col("name", 'S', true), col("email", 'S', false)}, PrimaryKey: []string{"id"}},
		&mappings.Table{Name: "product", Columns: []mappings.Column{col("id", 'N', true), col("name", 'S', true), col("price", 'M', true)}, PrimaryKey: []string{"id"}},
		&mappings.Table{Name: "order", Columns: []mappings.Column{col("id", 'N', true), col("customer_id", 'N', true), col("ordered_at", 'D', true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{fk("customer_id", "customer", "id")}},
		&mappings.Table{Name: "order_line", Columns: []mappings.Column{col("id", 'N', true), col("order_id", 'N', true), col("product_id", 'N', true), col("quantity", 'N', true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{fk("order_id", "order", "id"), fk("product_id", "product", "id")}},
		&mappings.Table{Name: "invoice", Columns: []mappings.Column{col("id", 'N', true), col("customer_id", 'N', true), col("issued_on", 'd', true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{fk("customer_id", "customer", "id")}},
		&mappings.Table{Name: "invoice_line", Columns: []mappings.Column{col("invoice_id", 'N', true), col("line_no", 'N', true), col("product_id", 'N', true), col("amount", 'M', true)}, PrimaryKey: []string{"invoice_id", "line_no"},
			ForeignKeys: []mappings.ForeignKey{fk("invoice_id", "invoice", "id"), fk("product_id", "product", "id")}},
	)
	return Input{Schema: "public", Catalog: cat, Activity: map[string]mappings.TableActivity{"public.product": {Rows: 30}}, Fanout: map[string]Fanout{
		"public.order(customer_id)":       {Parents: 20, Avg: 10, P99: 10, Max: 10},
		"public.invoice(customer_id)":     {Parents: 20, Avg: 5, P99: 5, Max: 5},
		"public.order_line(order_id)":     lines,
		"public.order_line(product_id)":   {Parents: 30, Avg: 21, P99: 35, Max: 40},
		"public.invoice_line(invoice_id)": {Parents: 100, Avg: 2.5, P99: 4, Max: 4},
		"public.invoice_line(product_id)": {Parents: 30, Avg: 8, P99: 15, Max: 15},
	}}
}

// TestAdviseDraftLineItems: line items that also refer to a product are
// embedded in their order or invoice, the product's name copied beside the
// reference; bounds are judged on p99, not on one outlier order.
func TestAdviseDraftLineItems(t *testing.T) {
	text, f, got := draft(t, shop(Fanout{Parents: 200, Avg: 3.1, P99: 5, Max: 25}))
	wantActions(t, got, map[string]string{"customer": "collection", "product": "collection", "order": "collection", "order_line": "embed", "invoice": "collection", "invoice_line": "embed"})
	for _, tc := range []struct{ coll, lines string }{{"orders", "orderLines"}, {"invoices", "invoiceLines"}} {
		c := find(t, f, tc.coll)
		if cust := field(t, c.Fields, "customer_id"); cust.Ref != "customers" {
			t.Errorf("%s: the reference to customers has no ref: %+v", tc.coll, cust)
		}
		lines := field(t, c.Fields, tc.lines).Embed
		if lines == nil {
			t.Fatalf("%s: no embedded %s", tc.coll, tc.lines)
		}
		if p := field(t, lines.Fields, "product_id"); p.Ref != "products" {
			t.Errorf("%s.%s: product_id has no ref: %+v", tc.coll, tc.lines, p)
		}
		if n := field(t, lines.Fields, "productName"); n.Column != "product.name" || len(lines.Lookups) != 1 || lines.Lookups[0].Table != "product" {
			t.Errorf("%s.%s: the product's name is not looked up: %+v %+v", tc.coll, tc.lines, n, lines.Lookups)
		}
	}
	r := got["order_line"].Reason
	for _, s := range []string{"of order, product it belongs to order: order records when it starts (ordered_at) and product does not",
		"order_lines per order: p99 5, avg 3.1, max 25 over 200 orders (the largest, 25, is an outlier: 99% of orders have at most 5, and none more than 100)"} {
		if !strings.Contains(r, s) {
			t.Errorf("order_line's reason lacks %q: %s", s, r)
		}
	}
	if !strings.Contains(got["invoice_line"].Reason, "its key starts with the key of invoice") {
		t.Errorf("invoice_line's reason: %s", got["invoice_line"].Reason)
	}
	if !strings.Contains(got["order"].Reason, "grows with time under customer") || !strings.Contains(got["order"].Reason, "has rows of its own (order_line)") {
		t.Errorf("order's reason: %s", got["order"].Reason)
	}
	if t.Failed() {
		t.Log(text)
	}

	// One order with 500 lines: unbounded, whatever the p99.
	_, _, got = draft(t, shop(Fanout{Parents: 200, Avg: 5, P99: 5, Max: 500}))
	if c := got["order_line"]; c.Action != "collection" || !strings.Contains(c.Reason, "the largest has 500, over 100: unbounded") {
		t.Errorf("an order with 500 lines: %+v", c)
	}
	// Orders without an event time: the lines belong where they are bounded.
	in := shop(Fanout{Parents: 200, Avg: 3.1, P99: 5, Max: 25})
	order := in.Catalog.Tables["public.order"]
	order.Columns = order.Columns[:2]
	_, _, got = draft(t, in)
	if c := got["order_line"]; c.Action != "embed" || !strings.Contains(c.Reason, "of order, product it belongs to order: it is bounded per order (p99 5), not per product (p99 35)") {
		t.Errorf("lines of orders without a time: %+v", c)
	}
	// p99 over 20: too many to embed, and nothing to page by.
	_, _, got = draft(t, shop(Fanout{Parents: 200, Avg: 12, P99: 30, Max: 40}))
	if c := got["order_line"]; c.Action != "collection" || !strings.Contains(c.Reason, "too many per order to embed") {
		t.Errorf("order lines with p99 30: %+v", c)
	}
}

// TestAdviseDraftGrowth: children with an event time their parent lacks grow
// with time and are bucketed even while few; an audit column both have is
// no event.
func TestAdviseDraftGrowth(t *testing.T) {
	mk := func(postTime bool) Input {
		post := &mappings.Table{Name: "post", Columns: []mappings.Column{col("id", 'N', true), col("title", 'S', true), col("body", 'S', true)}, PrimaryKey: []string{"id"}}
		if postTime {
			post.Columns = append(post.Columns, col("created_at", 'D', true))
		}
		return Input{Schema: "public", Catalog: catalog(post,
			&mappings.Table{Name: "comment", Columns: []mappings.Column{col("id", 'N', true), col("post_id", 'N', true), col("body", 'S', true), col("created_at", 'D', true), col("updated_at", 'D', true)}, PrimaryKey: []string{"id"},
				ForeignKeys: []mappings.ForeignKey{fk("post_id", "post", "id")}}),
			Fanout: map[string]Fanout{"public.comment(post_id)": {Parents: 50, Avg: 2, P99: 5, Max: 6}}}
	}
	_, f, got := draft(t, mk(false))
	if c := got["comment"]; c.Action != "bucket" || !strings.Contains(c.Reason, "grows with time under post: an append-only history (its event time created_at, which post does not have), so today's comments per post: p99 5") {
		t.Errorf("growing comments: %+v", c)
	}
	if b := find(t, f, "comments").Bucket; b == nil || b.OrderBy[0] != "created_at" {
		t.Errorf("comments are not paged by created_at: %+v", b)
	}
	_, _, got = draft(t, mk(true))
	if c := got["comment"]; c.Action != "embed" {
		t.Errorf("comments with an audit created_at like their post's: %+v", c)
	}
}

// TestAdviseDraftOwner: the owner among several parents, as on Pagila: a
// payment belongs to its customer, not to the rental that itself refers to
// the customer, nor to the clerk every payment shares; references between
// rows stored under the same customer are values; a row referenced
// one-to-one is copied into its referencing document; a column named
// after a table is read as a reference when no foreign key is declared.
func TestAdviseDraftOwner(t *testing.T) {
	cat := catalog(
		&mappings.Table{Name: "address", Columns: []mappings.Column{col("address_id", 'N', true), col("address", 'S', true), col("phone", 'S', true)}, PrimaryKey: []string{"address_id"}},
		&mappings.Table{Name: "staff", Columns: []mappings.Column{col("staff_id", 'N', true), col("name", 'S', true), col("picture", 'B', false)}, PrimaryKey: []string{"staff_id"}},
		&mappings.Table{Name: "customer", Columns: []mappings.Column{col("customer_id", 'N', true), col("name", 'S', true), col("address_id", 'N', true), col("create_date", 'd', true)}, PrimaryKey: []string{"customer_id"},
			ForeignKeys: []mappings.ForeignKey{fk("address_id", "address", "address_id")}},
		&mappings.Table{Name: "film", Columns: []mappings.Column{col("film_id", 'N', true), col("title", 'S', true), col("description", 'S', false)}, PrimaryKey: []string{"film_id"}},
		&mappings.Table{Name: "inventory", Columns: []mappings.Column{col("inventory_id", 'N', true), col("film_id", 'N', true)}, PrimaryKey: []string{"inventory_id"},
			ForeignKeys: []mappings.ForeignKey{fk("film_id", "film", "film_id")}},
		&mappings.Table{Name: "rental", Columns: []mappings.Column{col("rental_id", 'N', true), col("rental_date", 'D', true), col("inventory_id", 'N', true), col("customer_id", 'N', true), col("staff_id", 'N', true)}, PrimaryKey: []string{"rental_id"},
			ForeignKeys: []mappings.ForeignKey{fk("inventory_id", "inventory", "inventory_id"), fk("customer_id", "customer", "customer_id"), fk("staff_id", "staff", "staff_id")}},
		// payment declares no foreign keys (Pagila's are on its partitions)
		&mappings.Table{Name: "payment", Columns: []mappings.Column{col("payment_id", 'N', true), col("customer_id", 'N', true), col("staff_id", 'N', true), col("rental_id", 'N', true), col("amount", 'M', true), col("payment_date", 'D', true)}, PrimaryKey: []string{"payment_date", "payment_id"}},
	)
	in := Input{Schema: "public", Catalog: cat, Activity: map[string]mappings.TableActivity{"public.address": {Rows: 599}, "public.film": {Rows: 1000}}, Fanout: map[string]Fanout{
		"public.customer(address_id)": {Parents: 599, Avg: 1, P99: 1, Max: 1},
		"public.inventory(film_id)":   {Parents: 958, Avg: 4.8, P99: 8, Max: 8},
		"public.rental(inventory_id)": {Parents: 4580, Avg: 3.5, P99: 5, Max: 5},
		"public.rental(customer_id)":  {Parents: 599, Avg: 26.8, P99: 40, Max: 46},
		"public.rental(staff_id)":     {Parents: 2, Avg: 8022, P99: 8040, Max: 8040},
		"public.payment(customer_id)": {Parents: 599, Avg: 26.8, P99: 40, Max: 46},
		"public.payment(staff_id)":    {Parents: 2, Avg: 8024, P99: 8040, Max: 8040},
		"public.payment(rental_id)":   {Parents: 16044, Avg: 1, P99: 1, Max: 6},
	}}
	if fks := ForeignKeys(cat, cat.Tables["public.payment"]); len(fks) != 3 {
		t.Errorf("implied foreign keys of payment: %+v", fks)
	}
	text, f, got := draft(t, in)
	wantActions(t, got, map[string]string{"customer": "collection", "rental": "bucket", "payment": "bucket", "staff": "collection", "inventory": "collection", "address": "inline", "film": "collection"})
	for _, s := range []string{"of customer, staff, rental it belongs to customer: rental itself refers to customer, staff; a few staff share most rows (avg 8024.0 per staff)"} {
		if !strings.Contains(got["payment"].Reason, s) {
			t.Errorf("payment's reason lacks %q: %s", s, got["payment"].Reason)
		}
	}
	if !strings.Contains(got["rental"].Reason, "customer records when it starts (create_date) and inventory does not") {
		t.Errorf("rental's reason: %s", got["rental"].Reason)
	}
	payments := find(t, f, "payments")
	if payments.Bucket == nil || payments.Bucket.By[0] != "customer_id" || strings.Join(payments.Bucket.OrderBy, ",") != "payment_date,payment_id" {
		t.Errorf("payments bucket: %+v", payments.Bucket)
	}
	if s := field(t, payments.Fields, "staff_id"); s.Ref != "staff" {
		t.Errorf("payments' implied reference to staff has no ref: %+v", s)
	}
	if r := field(t, payments.Fields, "rental_id"); r.Ref != "" || !strings.Contains(text, "rental_id: the rental of the same customer, stored in its pages: kept as a value") {
		t.Errorf("rental_id of a payment: %+v", r)
	}
	customers := find(t, f, "customers")
	addr := field(t, customers.Fields, "address").Embed
	if addr == nil || addr.As != "object" || addr.Table != "address" {
		t.Fatalf("the customer's address is not copied as an object: %+v", addr)
	}
	if got["address"].Target != "customers.address" {
		t.Errorf("address target: %q", got["address"].Target)
	}
	rentals := find(t, f, "rentals")
	if inv := field(t, rentals.Fields, "inventory_id"); inv.Ref != "inventories" {
		t.Errorf("rentals' reference to inventories: %+v", inv)
	}
	if t.Failed() {
		t.Log(text)
	}
}

// TestAdviseOneToOne: a row referenced one-to-one by an entity (others
// refer to it) is copied into it; by a leaf table (an account's balance)
// the referencing row depends on it instead and is embedded in it.
func TestAdviseOneToOne(t *testing.T) {
	mk := func(referenced bool) Input {
		tables := []*mappings.Table{
			{Name: "account", Columns: []mappings.Column{col("id", 'N', true), col("owner", 'S', true), col("opened", 'd', false)}, PrimaryKey: []string{"id"}},
			{Name: "balance", Columns: []mappings.Column{col("id", 'N', true), col("account_id", 'N', true), col("amount", 'M', true)}, PrimaryKey: []string{"id"},
				ForeignKeys: []mappings.ForeignKey{fk("account_id", "account", "id")}},
		}
		fan := map[string]Fanout{"public.balance(account_id)": {Parents: 50, Avg: 1, P99: 1, Max: 1}}
		if referenced {
			tables = append(tables, &mappings.Table{Name: "audit", Columns: []mappings.Column{col("id", 'N', true), col("balance_id", 'N', true), col("note", 'S', true)}, PrimaryKey: []string{"id"},
				ForeignKeys: []mappings.ForeignKey{fk("balance_id", "balance", "id")}})
			fan["public.audit(balance_id)"] = Fanout{Parents: 50, Avg: 300, P99: 400, Max: 500}
		}
		return Input{Schema: "public", Catalog: catalog(tables...), Activity: map[string]mappings.TableActivity{"public.account": {Rows: 50}}, Fanout: fan}
	}
	_, f, got := draft(t, mk(false))
	wantActions(t, got, map[string]string{"account": "collection", "balance": "embed"})
	if b := field(t, find(t, f, "accounts").Fields, "balances").Embed; b == nil || b.Table != "balance" {
		t.Errorf("the balance is not embedded in its account: %+v", b)
	}
	_, f, got = draft(t, mk(true))
	wantActions(t, got, map[string]string{"account": "inline", "balance": "collection", "audit": "collection"})
	if a := field(t, find(t, f, "balances").Fields, "account").Embed; a == nil || a.Table != "account" || a.As != "object" {
		t.Errorf("the account is not copied into the balance it is part of: %+v", a)
	}
}

// TestAdviseDraftHostileNames: names the mapping language or the target would
// misread still give a valid draft with safe names (draft checks both).
func TestAdviseDraftHostileNames(t *testing.T) {
	var cols []mappings.Column
	names := []string{"id", "user_id", "userId", "a.b", "$price", "_id", "*", "weird col", "yes", "x|y", "line\nbreak", "naïve", "select", "#note", "", "item_count", "itemCount", "recentABs"}
	for _, n := range names {
		if n != "" {
			cols = append(cols, col(n, 'S', false))
		}
	}
	cols[0].Category, cols[0].Type, cols[0].TypeName = "N", "integer", "int4"
	cat := catalog(
		&mappings.Table{Name: "order", Columns: cols, PrimaryKey: []string{"id"}},
		&mappings.Table{Name: "orders", Columns: []mappings.Column{col("id", 'N', true)}, PrimaryKey: []string{"id"}},
		&mappings.Table{Name: "a.b", Columns: []mappings.Column{col("ev.id", 'N', true), col("page", 'N', true), col("at", 'D', true), col("a.b", 'S', false)}, PrimaryKey: []string{"ev.id"},
			ForeignKeys: []mappings.ForeignKey{fk("page", "order", "id")}},
		&mappings.Table{Name: "order line", Columns: []mappings.Column{col("order id", 'N', true), col("line no", 'N', true)}, PrimaryKey: []string{"order id", "line no"},
			ForeignKeys: []mappings.ForeignKey{fk("order id", "order", "id")}},
		&mappings.Table{Name: "_denorm", Columns: []mappings.Column{col("id", 'N', true)}, PrimaryKey: []string{"id"}},
		&mappings.Table{Name: "employee", Columns: []mappings.Column{col("id", 'N', true), col("manager_id", 'N', false), col("name", 'S', true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{fk("manager_id", "employee", "id")}},
		&mappings.Table{Name: "élan", Columns: []mappings.Column{col("id", 'N', true), col("order id", 'N', true), col("at", 'D', true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{fk("order id", "order", "id")}},
		&mappings.Table{Name: "system.users", Columns: []mappings.Column{col("id", 'N', true)}, PrimaryKey: []string{"id"}},
	)
	in := Input{Schema: "public", Catalog: cat, Fanout: map[string]Fanout{
		"public.a.b(page)":            {Parents: 2, Avg: 150, P99: 150, Max: 150},
		"public.order line(order id)": {Parents: 6, Avg: 2, P99: 2, Max: 2},
		"public.élan(order id)":       {Parents: 6, Avg: 200, P99: 300, Max: 300},
	}}
	text, f, got := draft(t, in)
	wantActions(t, got, map[string]string{"order": "collection", "a.b": "bucket", "order line": "embed", "_denorm": "collection", "system.users": "collection"})
	order := find(t, f, "orders")
	if find(t, f, "orders2").Table != "orders" {
		t.Error("the table orders does not get its own collection name")
	}
	if order.Rename["a.b"] != "aB" {
		t.Errorf("the dotted column is not renamed: %v", order.Rename)
	}
	for fieldName, column := range map[string]string{"userId": "user_id", "userId2": "userId", "itemCount": "item_count", "itemCount2": "itemCount", "price": "$price", "id_": "_id", "field": "*", "weirdCol": "weird col", "lineBreak": "line\nbreak", "note": "#note"} {
		if fd := field(t, order.Fields, fieldName); fd.Column != column {
			t.Errorf("field %s takes %q, want %q", fieldName, fd.Column, column)
		}
	}
	if rb := field(t, order.Fields, "recentABs2").Embed; rb == nil || rb.Table != `"a.b"` {
		t.Errorf("the recent subset does not get a name of its own beside the column recentABs: %+v", rb)
	}
	b := find(t, f, "aBs")
	if b.Bucket == nil || b.Rename["page"] != "page2" || b.Rename["ev.id"] != "evId" {
		t.Errorf("bucket parent key named like the page field: %+v %v", b.Bucket, b.Rename)
	}
	if find(t, f, "denorms").Table != "_denorm" || find(t, f, "tSystemUsers").Table != `"system.users"` {
		t.Error("reserved collection names")
	}
	if m := field(t, find(t, f, "employees").Fields, "manager_id"); m.Ref != "employees" {
		t.Errorf("a reference to the same table: %+v", m)
	}
	if e := field(t, order.Fields, "recentÉlans").Embed; e == nil || find(t, f, "élans").Bucket == nil {
		t.Errorf("a bucketed table whose name starts with a non-ASCII letter: %+v", e)
	}
	if t.Failed() {
		t.Log(text)
	}
}

// TestAdviseSingular: the singular of a table name, to find the name
// columns named after it (products.product_name).
func TestAdviseSingular(t *testing.T) {
	for in, want := range map[string]string{
		"products": "product", "product": "product", "categories": "category", "order_details": "order_detail", "addresses": "address",
		"address": "address", "status": "status", "people": "person", "staff": "staff", "boxes": "box", "matches": "match",
		"Products": "Product", "OrderDetails": "OrderDetail", "Categories": "Category", "news": "news", "analysis": "analysis", "bus": "bus",
	} {
		if got := singular(in); got != want {
			t.Errorf("singular(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAdviseDisplayLabel: the name column is found under plural table
// names and prefixed names (issue 28: Northwind's products.product_name
// was missed, so line items carried no product name).
func TestAdviseDisplayLabel(t *testing.T) {
	tbl := func(name string, cols ...string) *mappings.Table {
		tb := &mappings.Table{Schema: "public", Name: name, PrimaryKey: []string{"id"}, Columns: []mappings.Column{col("id", 'N', true)}}
		for _, c := range cols {
			tb.Columns = append(tb.Columns, col(c, 'S', false))
		}
		return tb
	}
	for _, tc := range []struct {
		t    *mappings.Table
		want string
	}{
		{tbl("products", "quantity_per_unit", "product_name"), "product_name"},
		{tbl("product", "code", "name"), "name"},
		{tbl("Products", "QuantityPerUnit", "ProductName"), "ProductName"},
		{tbl("categories", "description", "category_name"), "category_name"},
		{tbl("film", "description", "title"), "title"},
		{tbl("suppliers", "contact_name", "company_name", "city"), "company_name"},
		{tbl("shippers", "phone", "shipper_name"), "shipper_name"},
		{tbl("tracks", "composer", "track_title"), "track_title"},
		{tbl("employees", "first_name", "last_name"), ""},
		{tbl("regions", "region_description"), ""},
		{tbl("country", "country"), "country"},
	} {
		if got := displayLabel(tc.t); got != tc.want {
			t.Errorf("displayLabel(%s %v) = %q, want %q", tc.t.Name, tc.t.Columns, got, tc.want)
		}
	}
}

// TestAdviseIssue28Rules: on a small shop schema, the rules issue 28 added
// to the draft: line items carry the product's name found under a plural
// table name (products.product_name) and their reference gets an index
// (orderLines.productId); a join table with no rows draws no id array,
// saying why; a table without a key but with a parent is embedded when
// bounded and skipped, saying why, when not; the numeric mode follows the
// target (double on a target without Decimal128, decimal said in the
// header otherwise).
func TestAdviseIssue28Rules(t *testing.T) {
	cat := catalog(
		&mappings.Table{Name: "orders", Columns: []mappings.Column{col("order_id", 'N', true), col("total", 'M', true)}, PrimaryKey: []string{"order_id"}},
		&mappings.Table{Name: "products", Columns: []mappings.Column{col("product_id", 'N', true), col("product_name", 'S', true), col("quantity_per_unit", 'S', false)}, PrimaryKey: []string{"product_id"}},
		&mappings.Table{Name: "order_lines", Columns: []mappings.Column{col("order_id", 'N', true), col("product_id", 'N', true), col("qty", 'N', true)}, PrimaryKey: []string{"order_id", "product_id"},
			ForeignKeys: []mappings.ForeignKey{fk("order_id", "orders", "order_id"), fk("product_id", "products", "product_id")}},
		&mappings.Table{Name: "tags", Columns: []mappings.Column{col("tag_id", 'N', true), col("tag", 'S', true), col("about", 'S', true)}, PrimaryKey: []string{"tag_id"}},
		&mappings.Table{Name: "order_tags", Columns: []mappings.Column{col("order_id", 'N', true), col("tag_id", 'N', true)}, PrimaryKey: []string{"order_id", "tag_id"},
			ForeignKeys: []mappings.ForeignKey{fk("order_id", "orders", "order_id"), fk("tag_id", "tags", "tag_id")}},
		&mappings.Table{Name: "order_notes", Columns: []mappings.Column{col("order_id", 'N', true), col("at", 'D', true), col("note", 'S', true)},
			ForeignKeys: []mappings.ForeignKey{fk("order_id", "orders", "order_id")}},
		&mappings.Table{Name: "order_clicks", Columns: []mappings.Column{col("order_id", 'N', true), col("what", 'S', true)},
			ForeignKeys: []mappings.ForeignKey{fk("order_id", "orders", "order_id")}},
		&mappings.Table{Name: "kind", Columns: []mappings.Column{col("id", 'N', true), col("name", 'S', true)}, PrimaryKey: []string{"id"}, Unique: [][]string{{"name"}}, Estimate: 3},
		&mappings.Table{Name: "kind_log", Columns: []mappings.Column{col("kind_id", 'N', true), col("msg", 'S', true)},
			ForeignKeys: []mappings.ForeignKey{fk("kind_id", "kind", "id")}},
	)
	in := Input{Schema: "public", Catalog: cat, Activity: map[string]mappings.TableActivity{"public.orders": {Rows: 100}, "public.products": {Rows: 50}}, Fanout: map[string]Fanout{
		"public.order_lines(order_id)":   {Parents: 100, Avg: 3, P99: 6, Max: 8},
		"public.order_lines(product_id)": {Parents: 50, Avg: 6, P99: 20, Max: 30},
		"public.order_tags(order_id)":    {},
		"public.order_tags(tag_id)":      {},
		"public.order_notes(order_id)":   {Parents: 40, Avg: 1.5, P99: 3, Max: 3},
		"public.order_clicks(order_id)":  {Parents: 100, Avg: 300, P99: 900, Max: 1000},
		"public.kind_log(kind_id)":       {Parents: 3, Avg: 10, P99: 12, Max: 12},
	}}
	text, f, got := draft(t, in)
	wantActions(t, got, map[string]string{"orders": "collection", "products": "collection", "order_lines": "embed", "tags": "collection", "order_tags": "link", "order_notes": "embed", "order_clicks": "skip", "kind": "lookup", "kind_log": "skip"})
	orders := find(t, f, "orders")
	lines := field(t, orders.Fields, "orderLines").Embed
	if name := field(t, lines.Fields, "productName"); name.Column != "product.product_name" {
		t.Errorf("line items' product name: %+v", name)
	}
	var keys []string
	for _, ix := range orders.Indexes {
		keys = append(keys, strings.Join(ix.Keys, ","))
	}
	if !strings.Contains(strings.Join(keys, " "), "orderLines.productId") {
		t.Errorf("orders' indexes %v: no orderLines.productId", keys)
	}
	for _, c := range []string{"orders", "tags"} {
		for _, fd := range find(t, f, c).Fields {
			if fd.Ids != nil {
				t.Errorf("%s: an id array through the empty join table: %+v", c, fd.Ids)
			}
		}
	}
	if !said(text, "order_tags: join table with no rows: no id array drafted, since every document would hold an always-empty array; when it has rows, draft again or add to orders: `- {name: tags, ids: {table: order_tags, join: {order_id: order_id}, column: tag_id}, ref: tags}`") {
		t.Errorf("the empty join table's comment:\n%s", text)
	}
	if notes := field(t, orders.Fields, "orderNotes").Embed; notes == nil || notes.Table != "order_notes" || strings.Join(notes.OrderBy, ",") != "at,note" {
		t.Errorf("the keyless notes: %+v", notes)
	}
	if !strings.Contains(got["order_clicks"].Reason, "no primary key or unique NOT NULL key to make _id from, so it can only be embedded in its parent, and it is too many per orders to embed") {
		t.Errorf("order_clicks: %s", got["order_clicks"].Reason)
	}
	if strings.Contains(text, "\nnumeric:") || !said(text, "NUMERIC columns are drafted as Decimal128 (numeric: decimal, the format's default): no --target was given") {
		t.Errorf("no target: numeric %q\n%s", f.Numeric, text)
	}
	in.Target = &Target{Server: "FerretDB 1.24.0", NoDecimal128: true}
	if text, f, _ = draft(t, in); f.Numeric != mappings.NumericDouble || !said(text, "numeric: double: the target (FerretDB 1.24.0) cannot store BSON Decimal128") {
		t.Errorf("FerretDB: numeric %q\n%s", f.Numeric, text)
	}
	in.Target = &Target{Server: "MongoDB 7.0.14"}
	if text, f, _ = draft(t, in); strings.Contains(text, "\nnumeric:") || !said(text, "which the target (MongoDB 7.0.14) stores exactly") {
		t.Errorf("MongoDB: numeric %q\n%s", f.Numeric, text)
	}
}

// TestAdviseImpliedPlural: a column named after a table in the plural
// (product_id, table products keyed by product_id) with no declared
// foreign key is read as a reference to it, as one named after a singular
// table is.
func TestAdviseImpliedPlural(t *testing.T) {
	cat := catalog(
		&mappings.Table{Name: "products", Columns: []mappings.Column{col("product_id", 'N', true), col("product_name", 'S', true)}, PrimaryKey: []string{"product_id"}},
		&mappings.Table{Name: "categories", Columns: []mappings.Column{col("id", 'N', true), col("category_name", 'S', true)}, PrimaryKey: []string{"id"}},
		&mappings.Table{Name: "reviews", Columns: []mappings.Column{col("review_id", 'N', true), col("product_id", 'N', true), col("main_category_id", 'N', true), col("stars", 'N', true)}, PrimaryKey: []string{"review_id"}},
	)
	fks := ForeignKeys(cat, cat.Tables["public.reviews"])
	var got []string
	for _, fk := range fks {
		got = append(got, strings.Join(fk.Columns, ",")+"->"+fk.RefTable+"("+strings.Join(fk.RefColumns, ",")+")")
	}
	if want := "product_id->public.products(product_id) main_category_id->public.categories(id)"; strings.Join(got, " ") != want {
		t.Errorf("implied foreign keys of reviews: %v, want %s", got, want)
	}
}
