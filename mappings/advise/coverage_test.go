package advise

import (
	"strings"
	"testing"

	"github.com/denorm/denorm/mappings"
)

// TestAdviseCoverageRules: given the coverage of a draft, a table stored
// under a parent whose rows have no parent row (a NULL or dangling key;
// here dangling: a NOT NULL capital naming no city, since a NULLABLE one
// no longer makes an owner of an entity others hang off, see
// TestAdviseNullableOwner)
// becomes a collection of its own (Promotions), other reasons do not
// (rows under a parent that reaches nothing: the parent's own promotion
// fixes them); what stays left out is said at the table with its count,
// tables not read at all with their row count, and the header sums it up.
func TestAdviseCoverageRules(t *testing.T) {
	cat := catalog(
		&mappings.Table{Name: "city", Columns: []mappings.Column{col("id", 'N', true), col("name", 'S', true)}, PrimaryKey: []string{"id"}, Estimate: 100},
		&mappings.Table{Name: "country", Columns: []mappings.Column{col("code", 'S', true), col("name", 'S', true), col("capital", 'N', true)}, PrimaryKey: []string{"code"},
			ForeignKeys: []mappings.ForeignKey{fk("capital", "city", "id")}, Estimate: 10},
		&mappings.Table{Name: "language", Columns: []mappings.Column{col("country_code", 'S', true), col("language", 'S', true)}, PrimaryKey: []string{"country_code", "language"},
			ForeignKeys: []mappings.ForeignKey{fk("country_code", "country", "code")}, Estimate: 30},
		&mappings.Table{Name: "log", Columns: []mappings.Column{col("at", 'D', true), col("msg", 'S', true)}, Estimate: 5},
	)
	in := Input{Schema: "public", Catalog: cat, Activity: map[string]mappings.TableActivity{"public.log": {Rows: 5}}, Fanout: map[string]Fanout{
		"public.country(capital)":       {Parents: 8, Avg: 1, P99: 1, Max: 1},
		"public.language(country_code)": {Parents: 10, Avg: 3, P99: 3, Max: 3},
	}}
	_, f, got := draft(t, in)
	wantActions(t, got, map[string]string{"city": "collection", "country": "embed", "language": "embed", "log": "skip"})
	if len(f.Collections) != 1 {
		t.Fatalf("the first draft has %d collections, want cities alone", len(f.Collections))
	}
	cov := []mappings.TableCoverage{
		{Table: "public.city", Rows: 100, Reached: 100},
		{Table: "public.country", Rows: 10, Reached: 8, Unreached: 2, Reasons: []mappings.Uncovered{
			{Reason: mappings.ReasonNoParent, Node: "cities.countries", Rows: 2, Message: "no city row has city.id equal to their country.capital (cities.countries)", Samples: []string{"(code)=(AQ)", "(code)=(BV)"}}}},
		{Table: "public.language", Rows: 30, Reached: 24, Unreached: 6, Reasons: []mappings.Uncovered{
			{Reason: mappings.ReasonParentUnreached, Node: "cities.countries.languages", Rows: 6, Message: "their country rows reach no document themselves (cities.countries.languages)"}}},
	}
	promote := Promotions(in, cov)
	if len(promote) != 1 || !strings.Contains(promote["public.country"], "it would be embedded in city (capital -> id), but 2 of its 10 rows have no city row to be stored under (2 rows: no city row has city.id equal to their country.capital") {
		t.Fatalf("promotions: %v", promote)
	}
	in.Promote = promote
	if again := Promotions(in, cov); len(again) != 0 {
		t.Errorf("a promoted table is promoted again: %v", again)
	}
	_, f, got = draft(t, in)
	wantActions(t, got, map[string]string{"city": "collection", "country": "collection", "language": "embed", "log": "skip"})
	if c := find(t, f, "countries"); c.Table != "country" {
		t.Errorf("countries reads %s", c.Table)
	}

	// The final draft's coverage: every country now reaches a document;
	// say what is still left out (a language under no country, say).
	in.Coverage = map[string]mappings.TableCoverage{
		"public.city":    {Table: "public.city", Rows: 100, Reached: 100},
		"public.country": {Table: "public.country", Rows: 10, Reached: 10},
		"public.language": {Table: "public.language", Rows: 30, Reached: 29, Unreached: 1, Reasons: []mappings.Uncovered{
			{Reason: mappings.ReasonNoParent, Rows: 1, Message: "no country row has country.code equal to their language.country_code (countries.languages)", Samples: []string{"(country_code, language)=(XX, Klingon)"}}}},
	}
	text, _, _ := draft(t, in)
	for _, want := range []string{
		"Coverage, counted on the data: 1 row of 1 table (language) reaches no document in this draft",
		"Not migrated at all: log (5 rows).",
		"NOTE: 1 of its 30 rows reaches no document in this draft: 1 row: no country row has country.code equal to their language.country_code (countries.languages) (e.g. (country_code, language)=(XX, Klingon))",
		"log: no primary key or unique NOT NULL key to make _id from: add one to migrate this table; NOTE: none of its 5 rows is migrated",
	} {
		if !said(text, want) {
			t.Errorf("the draft does not say %q:\n%s", want, text)
		}
	}
	in.Coverage["public.language"] = mappings.TableCoverage{Table: "public.language", Rows: 30, Reached: 30}
	if text, _, _ := draft(t, in); !said(text, "Coverage, counted on the data: every row of the 3 tables this draft reads reaches a document.") || strings.Contains(text, "NOTE: 1 of") {
		t.Errorf("a draft leaving no row out:\n%s", text)
	}
}

// TestAdviseNullableOwner: an entity other tables hang off (language
// under country) that points at another entity by a NULLABLE key
// (country.capital -> city) stays a collection with a reference instead
// of being embedded in the row it points at (issue 28); with a NOT NULL
// key, or when nothing hangs off it, the key still makes an owner.
func TestAdviseNullableOwner(t *testing.T) {
	in := func(notNull, languages bool) Input {
		tables := []*mappings.Table{
			{Name: "city", Columns: []mappings.Column{col("id", 'N', true), col("name", 'S', true)}, PrimaryKey: []string{"id"}, Estimate: 100},
			{Name: "country", Columns: []mappings.Column{col("code", 'S', true), col("name", 'S', true), col("capital", 'N', notNull)}, PrimaryKey: []string{"code"},
				ForeignKeys: []mappings.ForeignKey{fk("capital", "city", "id")}, Estimate: 10},
		}
		if languages {
			tables = append(tables, &mappings.Table{Name: "language", Columns: []mappings.Column{col("country_code", 'S', true), col("language", 'S', true)}, PrimaryKey: []string{"country_code", "language"},
				ForeignKeys: []mappings.ForeignKey{fk("country_code", "country", "code")}, Estimate: 30})
		}
		return Input{Schema: "public", Catalog: catalog(tables...), Activity: map[string]mappings.TableActivity{}, Fanout: map[string]Fanout{
			"public.country(capital)":       {Parents: 8, Avg: 1, P99: 1, Max: 1},
			"public.language(country_code)": {Parents: 10, Avg: 3, P99: 3, Max: 3},
		}}
	}
	_, f, got := draft(t, in(false, true))
	wantActions(t, got, map[string]string{"city": "collection", "country": "collection", "language": "embed"})
	if c := got["country"]; !strings.Contains(c.Reason, "other tables hang off it (language) and it points at city only by a nullable key (country.capital -> city)") {
		t.Errorf("country's reason: %s", c.Reason)
	}
	if fd := field(t, find(t, f, "countries").Fields, "capital"); fd.Ref != "cities" {
		t.Errorf("countries.capital is not a reference to cities: %+v", fd)
	}
	field(t, find(t, f, "countries").Fields, "languages")
	_, _, got = draft(t, in(true, true))
	wantActions(t, got, map[string]string{"city": "collection", "country": "embed", "language": "embed"})
	_, _, got = draft(t, in(false, false))
	wantActions(t, got, map[string]string{"city": "collection", "country": "embed"})
}

// said reports whether the draft's comments say phrase: comment marks and
// line wraps are ignored.
func said(text, phrase string) bool {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "#", " ")), " ") }
	return strings.Contains(norm(text), norm(phrase))
}
