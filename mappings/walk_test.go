package mappings

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// corpusPlan resolves a case of the resolve corpus that has no problems.
func corpusPlan(t *testing.T, name string) *Plan {
	t.Helper()
	c, err := loadCase(filepath.Join(corpusDir, name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(c.mappingPath, c.mapping)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(f, c.catalog)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func entry(t *testing.T, p *Plan, name string) *CollectionPlan {
	t.Helper()
	for _, cp := range p.Collections {
		if cp.Name == name {
			return cp
		}
	}
	t.Fatalf("no entry %q", name)
	return nil
}

func TestWalk(t *testing.T) {
	p := corpusPlan(t, "hybrid")
	paths := func(root *Node, skip string) []string {
		var out []string
		Walk(root, func(n *Node) bool {
			out = append(out, n.Path)
			return n.Path != skip
		})
		return out
	}
	for _, tc := range []struct {
		name, entry, skip string
		want              []string
	}{
		{"every node, parents first", "books", "", []string{"books", "books.authors", "books.authors.thumbnail"}},
		{"false skips the subtree", "books", "books.authors", []string{"books", "books.authors"}},
		{"false at the root", "books", "books", []string{"books"}},
		{"children in declaration order", "authors", "", []string{"authors", "authors.countOfBooks", "authors.books", "authors.images"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, paths(entry(t, p, tc.entry).Root, tc.skip)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestWalkFields(t *testing.T) {
	for _, tc := range []struct {
		name, plan, entry string
		want              []string
	}{
		// images holds only a pivot: its name comes from the data.
		{"arrays get [], pivots are left out", "hybrid", "authors", []string{"firstName", "lastName", "countOfBooks", "books", "images"}},
		{"fields inside an embedded array", "hybrid", "books", []string{"name", "authors", "authors[].id", "authors[].name", "authors[].thumbnailUrl"}},
		{"objects nest without []", "pagila", "stores", []string{"manager", "manager.staffId", "manager.firstName", "manager.lastName", "manager.email",
			"address", "address.address", "address.district", "address.phone", "address.city", "address.city.name", "address.city.country", "address.city.country.name",
			"staff", "customerCount", "inventoryCount"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			WalkFields(entry(t, corpusPlan(t, tc.plan), tc.entry).Root, func(f *FieldPlan, path []string) {
				if path[len(path)-1] != f.Name {
					t.Errorf("path %v does not end with the field's name %q", path, f.Name)
				}
				got = append(got, strings.ReplaceAll(strings.Join(path, "."), ".[]", "[]"))
			})
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestCollectionNamesAndRefTarget(t *testing.T) {
	if d := cmp.Diff([]string{"catalog"}, corpusPlan(t, "catalog").CollectionNames()); d != "" {
		t.Errorf("two entries of one collection: (-want +got):\n%s", d)
	}
	pagila := corpusPlan(t, "pagila")
	if d := cmp.Diff([]string{"films", "actors", "customers", "rentals", "payments", "stores", "staff"}, pagila.CollectionNames()); d != "" {
		t.Errorf("pagila: (-want +got):\n%s", d)
	}
	blog := corpusPlan(t, "blog")
	if got := blog.RefTarget("posts"); got != blog.Collections[0] {
		t.Errorf("RefTarget(posts) = %v, want the posts entry", got)
	}
	if got := blog.RefTarget("comments"); got != nil {
		t.Errorf("RefTarget(comments) = %s, want nil: a bucket collection holds no referenced documents", got.Name)
	}
	cat := corpusPlan(t, "catalog")
	if got := cat.RefTarget("catalog"); got != cat.Collections[0] {
		t.Errorf("RefTarget(catalog) is not the first entry of the collection")
	}
}

func TestTables(t *testing.T) {
	var got []string
	for _, tb := range corpusPlan(t, "hybrid").Tables() {
		got = append(got, tb.QualifiedName())
	}
	// Each once, first reader first; book_author comes in as an aggregate's
	// table, an id array's table and a join table.
	want := []string{"public.author", "public.book_author", "public.author_image", "public.book"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	got = nil
	for _, tb := range entry(t, corpusPlan(t, "hybrid"), "books").Tables() {
		got = append(got, tb.QualifiedName())
	}
	// The embed's table, then its join table, then its lookup's.
	want = []string{"public.book", "public.author", "public.book_author", "public.author_image"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("one entry: (-want +got):\n%s", d)
	}
}

func TestDependents(t *testing.T) {
	type dep struct {
		Entry   int
		Coll    string
		Path    string
		Kind    NodeKind
		Through bool
	}
	for _, tc := range []struct {
		name, plan, table string
		want              []dep
	}{
		{"aggregate, id array and join table", "hybrid", "book_author", []dep{
			{0, "authors", "authors.countOfBooks", NodeAggregate, false},
			{0, "authors", "authors.books", NodeIds, false},
			{1, "books", "books.authors", NodeEmbed, true},
		}},
		{"root, embed and lookup; qualified name", "hybrid", "public.author_image", []dep{
			{0, "authors", "authors.images", NodeEmbed, false},
			{1, "books", "books.authors.thumbnail", NodeLookup, false},
		}},
		{"root and the embed of another entry", "hybrid", "author", []dep{
			{0, "authors", "authors", NodeRoot, false},
			{1, "books", "books.authors", NodeEmbed, false},
		}},
		{"bucket root, embed in bucket items, aggregate", "pagila", "payment", []dep{
			{2, "customers", "customers.totalPaid", NodeAggregate, false},
			{3, "rentals", "rentals.payments", NodeEmbed, false},
			{4, "payments", "payments", NodeRoot, false},
		}},
		{"a link's id arrays on both sides", "pagila", "film_actor", []dep{
			{0, "films", "films.actorCount", NodeAggregate, false},
			{0, "films", "films.actors", NodeIds, false},
			{1, "actors", "actors.filmCount", NodeAggregate, false},
			{1, "actors", "actors.films", NodeIds, false},
		}},
		{"ids through a join table read both tables", "pagila", "film_category", []dep{
			{0, "films", "films.categories", NodeIds, true},
		}},
		{"object embeds at any depth", "pagila", "country", []dep{
			{2, "customers", "customers.address.city.country", NodeEmbed, false},
			{5, "stores", "stores.address.city.country", NodeEmbed, false},
		}},
		{"a table nothing reads", "pagila", "nosuch", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := corpusPlan(t, tc.plan)
			var got []dep
			for _, d := range p.Dependents(tc.table) {
				if p.Collections[d.Entry] != d.Collection {
					t.Errorf("Entry %d is not %s's index", d.Entry, d.Collection.Name)
				}
				got = append(got, dep{d.Entry, d.Collection.Name, d.Node.Path, d.Node.Kind, d.Through})
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	type ref struct {
		Path, Coll string
	}
	for _, tc := range []struct {
		name, plan, entry string
		want              []ref
	}{
		{"an id array", "hybrid", "authors", []ref{{"books.[]", "books"}}},
		{"a column inside an embedded array", "hybrid", "books", []ref{{"authors.[].id", "authors"}}},
		{"an id array at the root", "pagila", "stores", []ref{{"staff.[]", "staff"}}},
		{"a root column", "pagila", "customers", []ref{{"storeId", "stores"}}},
		{"a link's id array", "pagila", "films", []ref{{"actors.[]", "actors"}}},
		{"none", "pagila", "payments", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []ref
			for _, r := range entry(t, corpusPlan(t, tc.plan), tc.entry).References() {
				if !slices.Contains([]FieldKind{FieldColumn, FieldIds}, r.Field.Kind) || r.Field.RefCollection != r.Collection {
					t.Errorf("reference %v: field %+v", r.Path, r.Field)
				}
				got = append(got, ref{strings.Join(r.Path, "."), r.Collection})
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
