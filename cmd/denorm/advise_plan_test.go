package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform/report"
)

// Issue 28: advise drafts what runs and what plan agrees with.
//
// "Contradicts", concretely, by plan's suggestion kinds (its rules):
//
//   - opposing: a finding whose suggestion undoes a choice the draft made,
//     or says the draft does not run: unbounded-embed and hot-embed (the
//     draft embedded), hot-copy (it copied a label), unbounded-ids (it
//     drew an id array), join-table-collection (it made a join table a
//     collection), high-fanout (a choice of its makes sync rewrite too
//     many documents), dangling-reference (it put ref: on values that
//     point nowhere), size-limit, unstorable, id-collision (the documents
//     cannot be stored); and decimal128 on a draft made for a target
//     without Decimal128. Each must be absent.
//   - agreeing: a finding the draft itself states in its comments, with
//     the same choice: decimal128 when the draft says it drafts
//     Decimal128 (no target, or one that stores it), timestamp-precision
//     when the draft says its timestamps are BSON dates rounding digits
//     below the millisecond, uncovered when the draft's header counts the
//     same rows reaching no document.
//   - additive: reference-read-with-parent (info): keep the reference and,
//     if every read needs it, copy a few fields beside it; never where the
//     draft already copies them (plan says it only for bare references).
//   - about the source, not the draft: inheritance, row-security,
//     search-path.
//
// Any other rule fails the test until it is classified here.
var (
	opposing = []string{"unbounded-embed", "hot-embed", "hot-copy", "unbounded-ids", "join-table-collection", "high-fanout",
		"dangling-reference", "size-limit", "unstorable", "id-collision"}
	aboutSource = []string{"inheritance", "row-security", "search-path"}
)

// planAgrees runs plan on the draft at path (text) and fails on every
// finding that contradicts it; noDecimal says the draft was made for a
// target without Decimal128. It returns plan's report.
func planAgrees(t *testing.T, src, path, text string, noDecimal bool) *report.Report {
	t.Helper()
	rep := planJSON(t, "--mapping", path, "--source", src)
	for _, w := range rep.Warnings {
		what := fmt.Sprintf("%s [%s] %s.%s: %s (suggestion: %s)", w.Severity, w.Rule, w.Collection, w.Path, w.Message, w.Suggestion)
		switch {
		case slices.Contains(opposing, w.Rule):
			t.Errorf("plan contradicts the fresh draft: %s", what)
		case w.Rule == "decimal128":
			if noDecimal || !said(text, "NUMERIC columns are drafted as Decimal128 (numeric: decimal, the format's default)") {
				t.Errorf("plan says to change the numeric mode the draft chose without saying so: %s", what)
			}
		case w.Rule == "timestamp-precision":
			if !said(text, "Timestamps are drafted as BSON dates (timestamp: date, the format's default), which hold milliseconds") {
				t.Errorf("plan finds rounded timestamps the draft does not mention: %s", what)
			}
		case w.Rule == "uncovered":
			if !said(text, fmt.Sprintf("Coverage, counted on the data: %s", report.Plural(rep.Totals.Uncovered, "row", "rows"))) {
				t.Errorf("plan finds %d rows in no document, which the draft does not count: %s", rep.Totals.Uncovered, what)
			}
		case w.Rule == "reference-read-with-parent":
			if w.Severity != "info" {
				t.Errorf("an additive hint is not info: %s", what)
			}
		case slices.Contains(aboutSource, w.Rule):
		default:
			t.Errorf("plan finding of a kind this test does not classify (opposing the draft or not?): %s", what)
		}
	}
	return rep
}

// draftRuns drafts a mapping for src for the FerretDB target, checks that
// it validates against the source and the target and migrates into the
// target (exit 0 each), and that plan agrees with it. It returns the
// parsed draft, its text, the target's URI and plan's report.
func draftRuns(t *testing.T, src string) (*mappings.File, string, *mongo.Database, *report.Report) {
	t.Helper()
	uri, db := testenv.MongoDB(t)
	path, text := adviseMapping(t, src, "--target", uri)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("drafted mapping:\n%s", text)
		}
	})
	f, err := mappings.Load(path)
	if err != nil {
		t.Fatalf("the draft does not parse: %v", err)
	}
	if f.Numeric != "" && f.Numeric != mappings.NumericDouble || !strings.Contains(text, "\nnumeric: double\n") && hasNumeric(t, src) {
		t.Errorf("the draft for FerretDB says numeric %q, want double", f.Numeric)
	}
	if code, out, errs := runCLI(t, "validate", "--mapping", path, "--source", src, "--target", uri); code != 0 {
		t.Fatalf("validate --target exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", path, "--source", src, "--target", uri); code != 0 {
		t.Fatalf("migrate into FerretDB exit %d\n%s%s", code, out, errs)
	}
	rep := planAgrees(t, src, path, text, true)
	return f, text, db, rep
}

// hasNumeric reports whether the source's public schema has a NUMERIC
// column.
func hasNumeric(t *testing.T, src string) bool {
	return sqlRows(t, src, `SELECT count(*)::text FROM information_schema.columns WHERE table_schema = 'public' AND data_type = 'numeric'`)[0][0] != "0"
}

// TestAdvisePlanAgrees: on the bundled examples' database and on Pagila,
// a fresh draft for FerretDB validates against it, migrates into it, and
// plan makes no suggestion contradicting it (see opposing above).
func TestAdvisePlanAgrees(t *testing.T) {
	t.Run("seed", func(t *testing.T) {
		src := seedDB(t)
		testenv.Exec(t, src, "ANALYZE")
		_, _, _, rep := draftRuns(t, src)
		if len(rep.Collections) == 0 {
			t.Error("plan reports no collection")
		}
	})
	t.Run("pagila", func(t *testing.T) {
		src := pagilaDB(t)
		_, text, _, rep := draftRuns(t, src)
		var rules []string
		for _, w := range rep.Warnings {
			rules = append(rules, w.Rule)
		}
		t.Logf("plan's findings on the Pagila draft: %v", rules)
		if !slices.Contains(rules, "timestamp-precision") || !said(text, "Timestamps are drafted as BSON dates") {
			t.Error("Pagila's microsecond timestamps: neither the draft nor plan says so")
		}
	})
}

// TestAdviseNorthwind drafts a mapping for a Northwind-like schema
// (testdata/advise/northwind.sql) for FerretDB and checks issue 28's
// points on it: the draft runs and plan agrees (draftRuns); line items
// carry the product's name though the table is "products" and the column
// "product_name", and their reference is indexed; the empty join table
// gives no id arrays; the customer history without a key is embedded in
// its customer; country (cities hang off it, its capital a nullable
// reference to a city) is a collection with a reference; card numbers and
// CVVs are left out; numeric is double, said why.
func TestAdviseNorthwind(t *testing.T) {
	src := testenv.PostgresDB(t, filepath.Join("testdata", "advise", "northwind.sql"))
	f, text, db, _ := draftRuns(t, src)
	if f.Numeric != mappings.NumericDouble || !said(text, "numeric: double: the target (FerretDB") || !said(text, "cannot store BSON Decimal128") {
		t.Errorf("numeric %q, and the draft does not say why", f.Numeric)
	}
	// 2: line items carry the product's name
	if _, fd := entry(t, f, "orders.orderDetails"); fd.Embed == nil || fd.Embed.Table != "order_details" {
		t.Fatalf("order_details is not embedded in orders: %+v", fd)
	}
	if _, fd := entry(t, f, "orders.orderDetails.product_id"); fd.Ref != "products" {
		t.Errorf("orderDetails.product_id: %+v", fd)
	}
	if _, fd := entry(t, f, "orders.orderDetails.productName"); fd.Column != "product.product_name" {
		t.Errorf("orderDetails.productName: %+v", fd)
	}
	// 4: the embedded reference's index
	orders, _ := entry(t, f, "orders")
	var keys []string
	for _, ix := range orders.Indexes {
		keys = append(keys, strings.Join(ix.Keys, ","))
	}
	if !slices.Contains(keys, "orderDetails.productId") {
		t.Errorf("orders' indexes %v: no orderDetails.productId", keys)
	}
	// 3: the empty join table draws no always-empty id arrays
	for _, c := range []string{"customers", "customerDemographics"} {
		coll, _ := entry(t, f, c)
		for _, fd := range coll.Fields {
			if fd.Ids != nil {
				t.Errorf("%s has an id array through the empty join table: %+v", c, fd.Ids)
			}
		}
	}
	if !said(text, "customer_customer_demo: join table with no rows: no id array drafted, since every document would hold an always-empty array") {
		t.Error("the draft does not say why the empty join table draws no id array")
	}
	// 5: the keyless history is embedded in its customer
	if _, fd := entry(t, f, "customers.customerHistories"); fd.Embed == nil || fd.Embed.Table != "customer_history" {
		t.Errorf("customer_history is not embedded in customers: %+v", fd)
	}
	// 6: country stays a collection with a reference to its capital; cities
	// reference their country
	if _, fd := entry(t, f, "countries.capital"); fd.Ref != "cities" {
		t.Errorf("countries.capital: %+v", fd)
	}
	if _, fd := entry(t, f, "cities.country_code"); fd.Ref != "countries" {
		t.Errorf("cities.country_code: %+v", fd)
	}
	entry(t, f, "countries.countryLanguages")
	// 7: payment card data is left out
	for _, s := range []string{"# card_number: left out: its name says it holds a secret: payment card data", "# cvv: left out: its name says it holds a secret: payment card data"} {
		if !said(text, s) {
			t.Errorf("the draft does not say %q", s)
		}
	}
	// employees: the self-reference is a reference
	if _, fd := entry(t, f, "employees.reports_to"); fd.Ref != "employees" {
		t.Errorf("employees.reports_to: %+v", fd)
	}

	// What FerretDB holds: every order with its lines and their product
	// names, every customer with its history, no card number anywhere.
	lines := map[string]int{}
	for _, r := range sqlRows(t, src, `SELECT order_id::text, count(*)::text FROM order_details GROUP BY 1`) {
		var n int
		fmt.Sscan(r[1], &n)
		lines[r[0]] = n
	}
	docs := testenv.DumpCollection(t, db, "orders")
	if len(docs) != 830 {
		t.Errorf("%d orders in FerretDB, want 830", len(docs))
	}
	total := 0
	for _, d := range docs {
		total += strings.Count(d, `"productName":"Product `)
	}
	if total != 4126 {
		t.Errorf("%d order lines with their product's name in FerretDB, want 4126", total)
	}
	customers := strings.Join(testenv.DumpCollection(t, db, "customers"), "\n")
	if n := strings.Count(customers, `"changed":"city"`); n != 150 {
		t.Errorf("%d history rows embedded in the customers, want 150", n)
	}
	if strings.Contains(customers, "4111 1111") || strings.Contains(customers, `"cvv"`) {
		t.Error("card data reached FerretDB")
	}
	if ixs := indexesOf(t, db, "orders"); !slices.Contains(ixs, "orderDetails.productId_1(orderDetails.productId)") {
		t.Errorf("orders' indexes in FerretDB: %v", ixs)
	}
}

// TestAdviseTarget: advise knows the target. Without one, it drafts the
// format's default (decimal) and says so; for a directory too; for
// FerretDB (found by connecting, as migrate does) numeric: double, saying
// why; --numeric decimal for FerretDB is refused (exit 2) before reading
// the source; an unreachable target fails with the reason.
func TestAdviseTarget(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `CREATE TABLE item (id integer PRIMARY KEY, price numeric(10,2) NOT NULL); INSERT INTO item VALUES (1, 9.99);`)
	_, text := adviseMapping(t, src)
	if strings.Contains(text, "\nnumeric:") || !said(text, "NUMERIC columns are drafted as Decimal128 (numeric: decimal, the format's default): no --target was given") {
		t.Errorf("no target:\n%s", text)
	}
	_, text = adviseMapping(t, src, "--target", t.TempDir())
	if strings.Contains(text, "\nnumeric:") || !said(text, "NUMERIC columns are drafted as Decimal128 (numeric: decimal, the format's default): exact, and what the directory target writes") {
		t.Errorf("directory target:\n%s", text)
	}
	uri, _ := testenv.MongoDB(t)
	_, text = adviseMapping(t, src, "--target", uri)
	if !strings.Contains(text, "\nnumeric: double\n") || !said(text, "numeric: double: the target (FerretDB") {
		t.Errorf("FerretDB target:\n%s", text)
	}
	_, text = adviseMapping(t, src, "--target", uri, "--numeric", "string")
	if !strings.Contains(text, "\nnumeric: string\n") {
		t.Errorf("--numeric string for FerretDB:\n%s", text)
	}
	if code, _, errs := runCLI(t, "advise", "--source", src, "--target", uri, "--numeric", "decimal"); code != 2 || !strings.Contains(errs, "cannot store BSON Decimal128") {
		t.Errorf("--numeric decimal for FerretDB: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "advise", "--source", src, "--target", "mongodb://127.0.0.1:1/x?serverSelectionTimeoutMS=500"); code == 0 || !strings.Contains(errs, "--target: cannot reach the target") {
		t.Errorf("unreachable target: exit %d\n%s", code, errs)
	}
}
