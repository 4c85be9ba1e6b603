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
	"github.com/denorm/denorm/mappings"
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
// (--restart, a fresh run's EmptyFirst) drops it (-1: not counted), and
// makes again the index of one that has an index of its own. A missing
// collection is no error.
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
	if n, err := s.Delete(ctx, "indexed", Selection{}); err != nil || n != -1 {
		t.Errorf("empty indexed: %d, %v; want -1 (dropped, its index made again)", n, err)
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

// TestFerretDBBigDeletes: FerretDB 1.24 fails a delete that matches more
// than 32,766 documents ("too many SQL variables") and deletes nothing.
// In a collection of 34,000 documents of one type and 1,000 of another,
// with an index: deleting the first type (a --restart, --drop or fresh
// run of a shared collection's mapping) deletes exactly those, in chunks;
// a sync's delete of 5,000 _ids too (1,000 at a time, each bounded by its
// range); with a chunk of 400, _ids of three types stored out of order
// (integers and strings by ranges of one kind, doubles by their list);
// emptying the indexed collection (a fresh run or --restart of a
// collection of its own) drops it and keeps its index. Each step's time
// is logged.
func TestFerretDBBigDeletes(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Open(ctx, uri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	const many, few = 34000, 1000
	fill := func() {
		t.Helper()
		var docs []transform.Document
		flush := func() {
			if rejects, err := s.Write(ctx, "c", docs); err != nil || len(rejects) > 0 {
				t.Fatalf("Write: %v, rejects %v", err, rejects)
			}
			docs = docs[:0]
		}
		for i := int32(1); i <= many+few; i++ {
			kind := "book"
			if i > many {
				kind = "review"
			}
			docs = append(docs, typed(i, kind, fmt.Sprint("n", i)))
			if len(docs) == 5000 {
				flush()
			}
		}
		flush()
	}
	count := func(filter bson.D) int64 {
		t.Helper()
		n, err := db.Collection("c").CountDocuments(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	timed := func(what string, sel Selection, want int64) {
		t.Helper()
		start := time.Now()
		n, err := s.Delete(ctx, "c", sel)
		if err != nil || n != want {
			t.Fatalf("%s: Delete = %d, %v; want %d, nil", what, n, err, want)
		}
		t.Logf("%s: %d documents deleted in %s", what, n, time.Since(start).Round(time.Millisecond))
	}
	fill()
	if err := s.CreateIndexes(ctx, "c", []mappings.Index{{Name: "name_1", Keys: []mappings.IndexKey{{Field: "name", Order: "asc"}}}}); err != nil {
		t.Fatal(err)
	}
	timed("one document type", Selection{Match: []transform.Field{{Key: "type", Value: "book"}}}, many)
	if got := count(bson.D{}); got != few {
		t.Fatalf("%d documents left, want the %d reviews", got, few)
	}

	fill()
	ids := make([]any, 0, 5000)
	for i := int32(1001); i <= 6000; i++ {
		ids = append(ids, i)
	}
	timed("by _id", Selection{IDs: ids}, 5000)

	// _ids of three types, stored out of their order: integers and
	// strings deleted by ranges of 400 (one kind each), doubles by
	// their list.
	var mixed []transform.Document
	for i := int32(0); i < 1500; i++ {
		d := typed(100000+(i*7919)%1500, "note", "x")
		switch i % 3 {
		case 0:
			id := fmt.Sprint("s", (i*7919)%1500)
			d.ID, d.Body[0].Value = id, id
		case 1:
			id := float64(i) + 0.5
			d.ID, d.Body[0].Value = id, id
		}
		mixed = append(mixed, d)
	}
	if rejects, err := s.Write(ctx, "c", mixed); err != nil || len(rejects) > 0 {
		t.Fatalf("Write: %v, rejects %v", err, rejects)
	}
	small, err := Open(ctx, uri, Options{DeleteChunk: 400})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close(ctx)
	start := time.Now()
	if n, err := small.Delete(ctx, "c", Selection{Match: []transform.Field{{Key: "type", Value: "note"}}}); err != nil || n != 1500 {
		t.Fatalf("Delete of _ids of three types = %d, %v; want 1500", n, err)
	}
	t.Logf("mixed _ids, chunks of 400: 1500 documents deleted in %s", time.Since(start).Round(time.Millisecond))
	if got := count(bson.D{{Key: "type", Value: "note"}}); got != 0 {
		t.Fatalf("%d notes left", got)
	}

	start = time.Now()
	if _, err := s.Delete(ctx, "c", Selection{}); err != nil {
		t.Fatalf("emptying the collection: %v", err)
	}
	t.Logf("emptying %d documents: %s", many+few-5000, time.Since(start).Round(time.Millisecond))
	if got := count(bson.D{}); got != 0 {
		t.Errorf("%d documents left after emptying", got)
	}
	idx, _, err := s.Indexes(ctx, "c")
	if err != nil || len(idx) != 1 || idx[0].Name != "name_1" {
		t.Errorf("indexes after emptying = %+v, %v; want name_1 kept", idx, err)
	}
}
