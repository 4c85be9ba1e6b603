package advise

import (
	"strings"
	"testing"

	"github.com/denorm/denorm/mappings"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct{ in, plural, camel string }{
		{"person", "people", "people"}, {"address", "addresses", "addresses"}, {"category", "categories", "categories"},
		{"contact_detail", "contact_details", "contactDetails"}, {"day", "days", "days"}, {"box", "boxes", "boxes"},
	} {
		if p := plural(tc.in); p != tc.plural || camel(p) != tc.camel {
			t.Errorf("%s: plural %q camel %q, want %q %q", tc.in, p, camel(p), tc.plural, tc.camel)
		}
	}
	for in, want := range map[string]string{"type_id": "type", "original_language_id": "original_language", "code": "code_ref"} {
		if got := lookupName(in); got != want {
			t.Errorf("lookupName(%q) = %q, want %q", in, got, want)
		}
	}
	if y("order") != "order" || y("a.b") != `"a.b"` || y("yes") != `"yes"` {
		t.Error("YAML quoting")
	}
}

func col(name, cat string, notNull bool) mappings.Column {
	return mappings.Column{Name: name, Category: cat, NotNull: notNull, Type: map[string]string{"N": "integer", "S": "text", "D": "timestamp with time zone"}[cat]}
}

// TestDraftRules applies every rule to a small synthetic schema.
func TestDraftRules(t *testing.T) {
	tables := []*mappings.Table{
		{Name: "kind", Columns: []mappings.Column{col("id", "N", true), col("name", "S", true)}, PrimaryKey: []string{"id"}, Unique: [][]string{{"name"}}, Estimate: 3},
		{Name: "owner", Columns: []mappings.Column{col("id", "N", true), col("name", "S", true), col("email", "S", false)}, PrimaryKey: []string{"id"}, Estimate: 10},
		{Name: "pet", Columns: []mappings.Column{col("id", "N", true), col("owner_id", "N", true), col("kind_id", "N", true), col("name", "S", true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{{Columns: []string{"owner_id"}, RefTable: "public.owner", RefColumns: []string{"id"}}, {Columns: []string{"kind_id"}, RefTable: "public.kind", RefColumns: []string{"id"}}}},
		{Name: "event", Columns: []mappings.Column{col("id", "N", true), col("owner_id", "N", true), col("at", "D", true), col("what", "S", true)}, PrimaryKey: []string{"id"},
			ForeignKeys: []mappings.ForeignKey{{Columns: []string{"owner_id"}, RefTable: "public.owner", RefColumns: []string{"id"}}}},
		{Name: "club", Columns: []mappings.Column{col("id", "N", true), col("title", "S", true), col("city", "S", true)}, PrimaryKey: []string{"id"}},
		{Name: "club_owner", Columns: []mappings.Column{col("club_id", "N", true), col("owner_id", "N", true)}, PrimaryKey: []string{"club_id", "owner_id"},
			ForeignKeys: []mappings.ForeignKey{{Columns: []string{"club_id"}, RefTable: "public.club", RefColumns: []string{"id"}}, {Columns: []string{"owner_id"}, RefTable: "public.owner", RefColumns: []string{"id"}}}},
	}
	cat := &mappings.Catalog{Tables: map[string]*mappings.Table{}}
	for _, tb := range tables {
		tb.Schema = "public"
		cat.Tables["public."+tb.Name] = tb
	}
	in := Input{Schema: "public", Catalog: cat, Activity: map[string]mappings.TableActivity{}, Fanout: map[string]Fanout{
		"public.pet(owner_id)":        {Parents: 10, Avg: 2, P99: 4, Max: 4},
		"public.pet(kind_id)":         {Parents: 3, Avg: 8, P99: 12, Max: 12},
		"public.event(owner_id)":      {Parents: 10, Avg: 500, P99: 4000, Max: 4000},
		"public.club_owner(club_id)":  {Parents: 5, Avg: 300, P99: 900, Max: 900},
		"public.club_owner(owner_id)": {Parents: 10, Avg: 2, P99: 3, Max: 3},
	}}
	text, choices, err := Draft(in)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, c := range choices {
		actions[c.Table] = c.Action
	}
	want := map[string]string{"public.kind": "lookup", "public.owner": "collection", "public.pet": "embed", "public.event": "bucket", "public.club": "collection", "public.club_owner": "link"}
	for k, v := range want {
		if actions[k] != v {
			t.Errorf("%s: %s, want %s", k, actions[k], v)
		}
	}
	for _, s := range []string{
		"- name: pets\n        embed:\n          table: pet\n          join: {owner_id: id}",
		"{name: kind, column: \"kind.name\"}",
		"bucket: {by: [owner_id], size: 100, orderBy: [at, id], items: events}",
		"- name: recentEvents",
		"orderBy: [at desc, id desc]",
		"{collection: owners, column: owner_id, field: clubs}",
		"-> no id array (unbounded or not a collection); each owner has up",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("draft lacks %q", s)
		}
	}
	if strings.Contains(text, "{collection: clubs") {
		t.Error("the unbounded side of the link got an id array")
	}
	if t.Failed() {
		t.Log(text)
	}
	// a pet that changes often is referenced, not embedded
	in.Activity["public.pet"] = mappings.TableActivity{Rows: 20, Updates: 500}
	_, choices, _ = Draft(in)
	for _, c := range choices {
		if c.Table == "public.pet" && (c.Action != "collection" || !strings.Contains(c.Reason, "changes often (20 rows, 500 updates")) {
			t.Errorf("hot pet: %+v", c)
		}
	}
	if _, _, err := Draft(Input{Schema: "empty", Catalog: &mappings.Catalog{Tables: map[string]*mappings.Table{}}}); err == nil || !strings.Contains(err.Error(), "--schema") {
		t.Errorf("empty schema: %v", err)
	}
}
