package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
)

// TestRestartSharedCollection: two jobs write one discriminated
// collection (books, reviews); restarting the books job deletes only
// documents of type book - its stale ones go - and leaves the reviews
// job's documents, and those of a third type, as they were.
func TestRestartSharedCollection(t *testing.T) {
	src := seedDB(t)
	target, db := testenv.MongoDB(t)
	dir := t.TempDir()
	books := filepath.Join(dir, "books.yaml")
	reviews := filepath.Join(dir, "reviews.yaml")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(books, `version: 1
collections:
  - name: catalog
    table: book
    discriminator: type
    fields: [name, {name: bookId, column: id}, {name: type, value: book}]
`)
	write(reviews, `version: 1
collections:
  - name: catalog
    table: review
    discriminator: type
    fields: [content, book_id, {name: type, value: review}]
`)
	migrate := func(mapping, job string, extra ...string) {
		t.Helper()
		expectCLI(t, 0, nil, append([]string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", target, "--job", job}, extra...)...)
	}
	// A book the job writes, deleted from the source since; and another
	// job's type.
	testenv.Exec(t, src, `INSERT INTO book (id, name) VALUES ('gone', 'Deleted')`)
	migrate(books, "books")
	migrate(reviews, "reviews")
	testenv.Exec(t, src, `DELETE FROM book WHERE id = 'gone'`)
	ctx := context.Background()
	coll := db.Collection("catalog")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "x1"}, {Key: "type", Value: "other"}},
	}); err != nil {
		t.Fatal(err)
	}
	byType := func(typ string) []string {
		var out []string
		for _, d := range testenv.DumpCollection(t, db, "catalog") {
			if strings.Contains(d, `"type":"`+typ+`"`) {
				out = append(out, d)
			}
		}
		return out
	}
	wantReviews, wantOther := byType("review"), byType("other")
	if len(wantReviews) == 0 || len(wantOther) != 1 || !slices.ContainsFunc(byType("book"), func(d string) bool { return strings.Contains(d, `"gone"`) }) {
		t.Fatalf("setup: reviews %v, other %v, books %v", wantReviews, wantOther, byType("book"))
	}
	migrate(books, "books", "--restart")
	gotBooks := byType("book")
	if slices.ContainsFunc(gotBooks, func(d string) bool { return strings.Contains(d, `"gone"`) }) || len(gotBooks) == 0 {
		t.Errorf("after the restart, books are %v: want the source's, without the stale one", gotBooks)
	}
	testenv.EqualDocs(t, "reviews after restarting the books job", wantReviews, byType("review"))
	testenv.EqualDocs(t, "another type after restarting the books job", wantOther, byType("other"))
}

// TestSharedCollectionBothTargets: two mappings write the two document
// types of one collection ("catalog": books, reviews) into a directory
// and into FerretDB, by turns and again: each run replaces only its own
// type's documents, so both targets end with the same documents (both
// types). --restart and --drop of one mapping delete its type only, on
// both, and say what --drop deleted. Before, a directory's fresh run
// emptied the shared file: the second mapping erased the first's
// documents with exit 0. verify of one mapping does not count the other's
// documents as unexpected.
func TestSharedCollectionBothTargets(t *testing.T) {
	src := seedDB(t)
	uri, db := testenv.MongoDB(t)
	dir := filepath.Join(t.TempDir(), "out")
	books := writeMapping(t, `version: 1
collections:
  - name: catalog
    table: book
    discriminator: type
    fields: [name, {name: bookId, column: id}, {name: type, value: book}]
`)
	reviews := filepath.Join(filepath.Dir(books), "reviews.yaml")
	if err := os.WriteFile(reviews, []byte(`version: 1
collections:
  - name: catalog
    table: review
    discriminator: type
    fields: [content, {name: bookId, column: book_id}, {name: type, value: review}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	sorted := func(docs []string) []string {
		out := slices.Clone(docs)
		slices.Sort(out)
		return out
	}
	state := func(target string) []string {
		if target == uri {
			return sorted(testenv.DumpCollection(t, db, "catalog"))
		}
		return sorted(testenv.ReadLines(t, filepath.Join(dir, "catalog.jsonl")))
	}
	count := func(docs []string, typ string) int {
		n := 0
		for _, d := range docs {
			if strings.Contains(d, `"type":"`+typ+`"`) {
				n++
			}
		}
		return n
	}
	for _, target := range []string{dir, uri} {
		migrate := func(mapping, job string, want []string, extra ...string) {
			t.Helper()
			expectCLI(t, 0, want, append([]string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", target, "--job", job}, extra...)...)
		}
		migrate(books, "books", nil)
		migrate(reviews, "reviews", nil)
		migrate(books, "books", nil) // a rerun of the first
		got := state(target)
		if count(got, "book") != 5 || count(got, "review") != 2 || len(got) != 7 {
			t.Fatalf("%s after both mappings: want 5 books and 2 reviews, got:\n%s", target, strings.Join(got, "\n"))
		}
		// verify of either mapping compares its own type and leaves the
		// other's documents out, in words
		expectCLI(t, 0, []string{"catalog: 2 documents of other types", "result: identical"}, "verify", "--mapping", books, "--source", src, "--target", target)
		expectCLI(t, 0, []string{"catalog: 5 documents of other types", "result: identical"}, "verify", "--oracle", "sql", "--mapping", reviews, "--source", src, "--target", target)
		migrate(reviews, "reviews", nil, "--restart")
		if after := state(target); !slices.Equal(after, got) {
			t.Errorf("%s after --restart of the reviews: %v, want %v", target, after, got)
		}
		migrate(reviews, "reviews", []string{"--drop: deleted 2 documents of type type=review from shared collection catalog", "documents of other types and the collection's indexes stay"}, "--drop")
		if after := state(target); !slices.Equal(after, got) {
			t.Errorf("%s after --drop of the reviews: %v, want %v", target, after, got)
		}
	}
	testenv.EqualDocs(t, "the directory and FerretDB", state(uri), state(dir))
}
