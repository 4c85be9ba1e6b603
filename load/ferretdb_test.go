package load

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/transform"
)

// TestServerRerunDefaults writes 3,000 documents in batches of 1,000 (a
// migrate's default batch) with the default options, then writes them
// all again with new contents, as a resume's replayed batches or a sync
// do. On FerretDB 1.24 a bulk write of 100 or more replaces of existing
// documents stalls the server, and a replace by integer _id scans the
// collection: there the existing documents are deleted and inserted again,
// one deleteMany per batch (serverTarget.reinsert). Every document must
// end with the new contents, once. Both passes' times are logged.
func TestServerRerunDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Open(ctx, uri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	const n, batch = 3000, 1000
	pass := func(v string) time.Duration {
		start := time.Now()
		for from := int32(1); from <= n; from += batch {
			var docs []transform.Document
			for i := from; i < from+batch; i++ {
				docs = append(docs, doc(i, transform.Field{Key: "v", Value: v}, transform.Field{Key: "pad", Value: fmt.Sprintf("%0200d", i)}))
			}
			rejects, err := s.Write(ctx, "c", docs)
			if err != nil || len(rejects) > 0 {
				t.Fatalf("Write (%s): %v, rejects %v", v, err, rejects)
			}
		}
		return time.Since(start)
	}
	first := pass("first")
	rerun := pass("rerun")
	t.Logf("%d documents in batches of %d: first run %s, rerun %s (%.2fx)", n, batch, first.Round(time.Millisecond), rerun.Round(time.Millisecond), rerun.Seconds()/first.Seconds())
	got := testenv.DumpCollection(t, db, "c")
	if len(got) != n {
		t.Fatalf("%d documents after the rerun, want %d", len(got), n)
	}
	for _, d := range got {
		if want := `"v":"rerun"`; !strings.Contains(d, want) {
			t.Fatalf("a document the rerun did not replace: %s", d)
		}
	}
}

// TestFerretDBEmptyCollection: on FerretDB, emptying a whole collection
// (--restart, a fresh run's EmptyFirst) drops a plain one (-1: not
// counted), and deletes the documents of one with an index of its own,
// which keeps the index. A missing collection is no error.
func TestFerretDBEmptyCollection(t *testing.T) {
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
	if c := s.Caps(); !c.EmptyFirst || !c.NoDecimal128 || !strings.HasPrefix(c.Server, "FerretDB") {
		t.Fatalf("Caps = %+v: FerretDB not recognised", c)
	}
	for _, coll := range []string{"plain", "indexed"} {
		var docs []transform.Document
		for i := int32(1); i <= 5; i++ {
			docs = append(docs, doc(i, transform.Field{Key: "v", Value: "x"}))
		}
		if rejects, err := s.Write(ctx, coll, docs); err != nil || len(rejects) > 0 {
			t.Fatalf("Write: %v, rejects %v", err, rejects)
		}
	}
	if _, err := db.Collection("indexed").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Delete(ctx, "plain", Selection{}); err != nil || n != -1 {
		t.Errorf("empty plain: %d, %v; want -1 (dropped)", n, err)
	}
	if n, err := s.Delete(ctx, "indexed", Selection{}); err != nil || n != 5 {
		t.Errorf("empty indexed: %d, %v; want 5 deleted", n, err)
	}
	if n, err := s.Delete(ctx, "never", Selection{}); err != nil || n != 0 {
		t.Errorf("empty a missing collection: %d, %v", n, err)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil || slices.Contains(names, "plain") || !slices.Contains(names, "indexed") {
		t.Errorf("collections after emptying: %v (%v)", names, err)
	}
	if got := testenv.DumpCollection(t, db, "indexed"); len(got) != 0 {
		t.Errorf("indexed still holds %v", got)
	}
	specs, err := db.Collection("indexed").Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 {
		t.Errorf("indexes of the emptied collection: %v (%v); want _id_ and v_1", specs, err)
	}
}
