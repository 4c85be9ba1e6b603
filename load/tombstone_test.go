package load

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/transform"
)

// TestServerTombstone sets a tombstone field on chosen documents of a
// shared collection: only those of the selection's type get it, a second
// call leaves the first date alone (a replayed batch changes nothing),
// and the documents keep their content. A directory refuses.
func TestServerTombstone(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, uri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var docs []transform.Document
	for i := int32(1); i <= 6; i++ {
		kind := "book"
		if i > 4 {
			kind = "review"
		}
		docs = append(docs, typed(i, kind, "n"))
	}
	if rejects, err := s.Write(ctx, "c", docs); err != nil || len(rejects) > 0 {
		t.Fatalf("Write: %v, rejects %v", err, rejects)
	}
	book := []transform.Field{{Key: "type", Value: "book"}}
	first := time.Date(2026, 1, 2, 3, 4, 5, 6_789_000, time.UTC)
	n, err := s.Tombstone(ctx, "c", Selection{IDs: []any{int32(2), int32(3), int32(5), int32(99)}, Match: book}, "deletedAt", first)
	if err != nil || n != 2 {
		t.Fatalf("Tombstone = %d, %v; want 2 (5 is a review, 99 does not exist)", n, err)
	}
	n, err = s.Tombstone(ctx, "c", Selection{IDs: []any{int32(3), int32(4)}, Match: book}, "deletedAt", first.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("second Tombstone = %d, %v; want 1 (3 holds it already)", n, err)
	}
	want := map[int32]time.Time{2: first.Truncate(time.Millisecond), 3: first.Truncate(time.Millisecond), 4: first.Add(time.Hour).Truncate(time.Millisecond)}
	cur, err := db.Collection("c").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d documents, want 6", len(got))
	}
	for _, d := range got {
		id := d["_id"].(int32)
		if d["name"] != "n" {
			t.Errorf("document %d lost its content: %v", id, d)
		}
		at, has := d["deletedAt"]
		w, tomb := want[id]
		switch {
		case has != tomb:
			t.Errorf("document %d: deletedAt %v, want it set: %v", id, at, tomb)
		case tomb:
			dt, ok := at.(bson.DateTime)
			if !ok || !dt.Time().Equal(w) {
				t.Errorf("document %d: deletedAt = %#v, want the date %s", id, at, w)
			}
		}
	}

	dir, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close(ctx)
	if _, err := dir.Tombstone(ctx, "c", Selection{IDs: []any{int32(1)}}, "deletedAt", first); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("directory Tombstone: %v, want an unsupported error", err)
	}
}
