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
	migrate(books, "books")
	migrate(reviews, "reviews")
	ctx := context.Background()
	coll := db.Collection("catalog")
	// A book deleted from the source since, and another job's type.
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "gone"}, {Key: "name", Value: "Deleted"}, {Key: "type", Value: "book"}},
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
