package mappings

import (
	"slices"
	"strings"
	"testing"
)

// printsOf resolves the example of a resolve corpus case, after edit
// changed the file's text, against the case's catalog, and returns its
// fingerprints.
func printsOf(t *testing.T, name string, edit func(string) string) []CollectionPrint {
	t.Helper()
	c, err := loadCase("testdata/resolve/" + name + ".txtar")
	if err != nil {
		t.Fatal(err)
	}
	text := string(c.mapping)
	if edit != nil {
		text = edit(text)
		if text == string(c.mapping) {
			t.Fatalf("the edit changed nothing in %s", name)
		}
	}
	f, err := Parse(c.mappingPath, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(f, c.catalog)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return Fingerprints(plan)
}

// replace returns an edit replacing old (which must occur once) by new.
func replace(t *testing.T, old, new string) func(string) string {
	return func(s string) string {
		t.Helper()
		if n := strings.Count(s, old); n != 1 {
			t.Fatalf("%q occurs %d times in the mapping", old, n)
		}
		return strings.Replace(s, old, new, 1)
	}
}

// TestComparePrints: which collections a mapping change touches, for
// every kind of change: a field added or removed, a filter, a lookup,
// onDelete (a tombstone is a field of the documents kept), a
// collection renamed, added or removed, indexes alone, a document type
// of a shared collection, its discriminator, the shard key, and a change
// of the file's layout and comments alone (none).
func TestComparePrints(t *testing.T) {
	type want struct {
		rebuild []string // collection, or collection[type,...]
		removed []string
		indexes []string
		refused string // a substring of the refusal; "" none
	}
	cases := []struct {
		name, example string
		edit          func(t *testing.T) func(string) string
		want          want
	}{
		{"layout and comments", "hybrid", func(t *testing.T) func(string) string {
			return func(s string) string {
				s = strings.ReplaceAll(s, "\n", "\n\n")
				s = strings.ReplaceAll(s, "# Pattern 6", "# another comment\n# Pattern 6")
				return strings.ReplaceAll(s, "fields:\n", "fields:   # the fields\n")
			}
		}, want{}},
		{"field added", "hybrid", func(t *testing.T) func(string) string {
			return replace(t, "      - first_name\n", "      - first_name\n      - {name: firstAgain, column: first_name}\n")
		}, want{rebuild: []string{"authors"}}},
		{"field removed", "hybrid", func(t *testing.T) func(string) string {
			return replace(t, "      - last_name\n", "")
		}, want{rebuild: []string{"authors"}}},
		{"filter changed", "hybrid", func(t *testing.T) func(string) string {
			return replace(t, `filter: "kind = 'thumbnail'"`, `filter: "kind = 'portrait'"`)
		}, want{rebuild: []string{"books"}}},
		{"lookup changed", "hybrid", func(t *testing.T) func(string) string {
			return replace(t, "filter: \"kind = 'thumbnail'\"\n              orderBy: id", "filter: \"kind = 'thumbnail'\"\n              orderBy: id desc")
		}, want{rebuild: []string{"books"}}},
		{"onDelete", "hybrid", func(t *testing.T) func(string) string {
			return replace(t, "    table: book\n", "    table: book\n    onDelete: {tombstone: deletedAt}\n")
		}, want{rebuild: []string{"books"}}},
		{"collection renamed", "blog", func(t *testing.T) func(string) string {
			return replace(t, "name: comments\n", "name: commentPages\n")
		}, want{rebuild: []string{"commentPages"}, removed: []string{"comments"}, indexes: []string{"commentPages"}}},
		{"collection added", "blog", func(t *testing.T) func(string) string {
			return func(s string) string { return s + "  - name: authors\n    table: comment\n    fields: [author]\n" }
		}, want{rebuild: []string{"authors"}}},
		{"collection removed", "blog", func(t *testing.T) func(string) string {
			return func(s string) string { return s[:strings.Index(s, "  - name: comments\n")] }
		}, want{removed: []string{"comments"}}},
		{"index only", "blog", func(t *testing.T) func(string) string {
			return replace(t, "      - keys: name\n", "      - keys: summary\n")
		}, want{indexes: []string{"posts"}}},
		{"one document type", "catalog", func(t *testing.T) func(string) string {
			return replace(t, "      - content\n", "      - content\n      - {name: text, column: content}\n")
		}, want{rebuild: []string{`catalog[type="review"]`}}},
		{"a discriminator value", "catalog", func(t *testing.T) func(string) string {
			return replace(t, "{name: type, value: review}", "{name: type, value: critique}")
		}, want{rebuild: []string{"catalog"}}},
		{"shard key", "catalog", func(t *testing.T) func(string) string {
			return replace(t, "shardKey: bookId", "shardKey: name")
		}, want{refused: "shard key of collection catalog changed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			then := printsOf(t, tc.example, nil)
			now := printsOf(t, tc.example, tc.edit(t))
			r := ComparePrints(then, now)
			var rebuild []string
			for _, b := range r.Rebuild {
				s := b.Collection
				if b.Types != nil {
					s += "[" + strings.Join(b.Types, ",") + "]"
				}
				rebuild = append(rebuild, s)
			}
			if !slices.Equal(rebuild, tc.want.rebuild) || !slices.Equal(r.Removed, tc.want.removed) || !slices.Equal(r.Indexes, tc.want.indexes) {
				t.Errorf("rebuild %q removed %q indexes %q; want %q, %q, %q", rebuild, r.Removed, r.Indexes, tc.want.rebuild, tc.want.removed, tc.want.indexes)
			}
			switch refused := strings.Join(r.Refused, "; "); {
			case tc.want.refused == "" && refused != "":
				t.Errorf("refused: %s", refused)
			case tc.want.refused != "" && !strings.Contains(refused, tc.want.refused):
				t.Errorf("refused %q, want it to say %q", refused, tc.want.refused)
			}
			if got := r.Changed(); got != (tc.name != "layout and comments") {
				t.Errorf("Changed() = %v", got)
			}
		})
	}
	// The fingerprints of one mapping are the same on every run.
	if a, b := printsOf(t, "pagila", nil), printsOf(t, "pagila", nil); !slices.EqualFunc(a, b, func(x, y CollectionPrint) bool {
		return x.Name == y.Name && x.Indexes == y.Indexes && slices.Equal(x.Entries, y.Entries)
	}) {
		t.Errorf("two resolutions of one mapping give other fingerprints:\n%v\n%v", a, b)
	}
}

// TestPrintsIgnoreUnreadColumns: a column the mapping does not read,
// added to a mapped table, and the catalog's row estimates leave the
// fingerprints as they are; a column the mapping reads retyped changes
// its collections'.
func TestPrintsIgnoreUnreadColumns(t *testing.T) {
	c, err := loadCase("testdata/resolve/hybrid.txtar")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(c.mappingPath, c.mapping)
	if err != nil {
		t.Fatal(err)
	}
	prints := func() []CollectionPrint {
		plan, err := Resolve(f, c.catalog)
		if err != nil {
			t.Fatal(err)
		}
		return Fingerprints(plan)
	}
	then := prints()
	author := c.catalog.Tables["public.author"]
	if author == nil {
		t.Fatal("no public.author in the catalog")
	}
	author.Columns = append(author.Columns, Column{Name: "nickname", Type: "text", TypeName: "text", Category: "S"})
	author.Estimate += 1000
	if r := ComparePrints(then, prints()); r.Changed() {
		t.Errorf("an unread column and an estimate changed the prints: %+v", r)
	}
	for i := range author.Columns {
		if author.Columns[i].Name == "last_name" {
			author.Columns[i].Type, author.Columns[i].TypeName = "character varying(80)", "varchar"
		}
	}
	r := ComparePrints(then, prints())
	if got := r.Collections(); !slices.Equal(got, []string{"authors", "books"}) {
		t.Errorf("a read column retyped rebuilds %q, want authors and books", got)
	}
}
