package load

// The target conformance suite: the same contract tests (see Target) run
// against every kind of target — a directory, and a database of the test
// server (FerretDB). Where the kinds differ by design (Caps, what Sync
// returns), the table says what each kind must answer, and a target
// without a capability must answer exactly *UnsupportedError.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// conformTarget is one kind of target under test.
type conformTarget struct {
	name string
	// fresh returns the URI of a new, empty target, and a function that
	// stores text as the checkpoint record id, bypassing Save (corrupt
	// records).
	fresh func(t *testing.T) (uri string, plant func(id, text string))
	caps  Caps
	// server: needs the test server (skipped in the short suite).
	server bool
	// syncLengths: Sync returns the files' lengths (else nil).
	syncLengths bool
	// partialIndexes: the target takes partial filters and hashed keys
	// (FerretDB 1.24 has neither); shardNote is in the note of a shard
	// key it cannot apply.
	partialIndexes bool
	shardNote      string
}

var conformTargets = []conformTarget{
	{
		name: "directory",
		fresh: func(t *testing.T) (string, func(id, text string)) {
			dir := filepath.Join(t.TempDir(), "out")
			return dir, func(id, text string) {
				p := filepath.Join(dir, RecordCollection, id+".json")
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
		syncLengths:    true,
		partialIndexes: true,
		shardNote:      "directory target has no shard key",
	},
	{
		name:   "ferretdb",
		server: true,
		fresh: func(t *testing.T) (string, func(id, text string)) {
			uri, db := testenv.MongoDB(t)
			return uri, func(id, text string) {
				coll := db.Collection(RecordCollection)
				doc := bson.D{{Key: "_id", Value: id}, {Key: "job", Value: id}, {Key: "checkpoint", Value: text}}
				if _, err := coll.DeleteOne(context.Background(), bson.D{{Key: "_id", Value: id}}); err != nil {
					t.Fatal(err)
				}
				if _, err := coll.InsertOne(context.Background(), doc); err != nil {
					t.Fatal(err)
				}
			}
		},
		// The test server is FerretDB (buildInfo's ferretdbVersion).
		caps:      Caps{Parallel: true, Delete: true, NoDecimal128: true, NoQuoteInNames: true, EmptyFirst: true, Server: "FerretDB"},
		shardNote: "FerretDB has no sharding",
	},
}

// TestTargetConformance runs every contract test against every kind of
// target.
func TestTargetConformance(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, k conformTarget)
	}{
		{"caps and reopen", testCapsReopen},
		{"rerun gives the same documents", testRerun},
		{"replay after a checkpoint writes each document once", testResumeReplay},
		{"documents over the size limit are rejected", testRejectTooLarge},
		{"delete by id", testDeleteIDs},
		{"delete by id of one document type", testDeleteType},
		{"runs of one shared collection replace only their types", testSharedTypes},
		{"delete a bucket parent's pages from page n", testDeletePages},
		{"empty collections for a restart", testEmpty},
		{"record store", testRecords},
		{"scan gives what normalize predicts", testScanNormalize},
		{"indexes are created and listed back", testIndexes},
		{"indexes of other runs stay; other options are refused", testIndexesMerge},
		{"drop removes a collection and its indexes", testDrop},
		{"shard key", testShard},
		{"one lease holder per job", testLeases},
		{"lease expiry and takeover", testLeaseExpiry},
	}
	for _, k := range conformTargets {
		t.Run(k.name, func(t *testing.T) {
			if k.server && testing.Short() {
				t.Skip("integration test: skipped in the short suite")
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, k) })
			}
		})
	}
}

func openTarget(t *testing.T, uri string, opt Options) Target {
	t.Helper()
	tg, err := Open(context.Background(), uri, opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	return tg
}

func prepare(t *testing.T, tg Target, acked map[string]int64, collections ...string) {
	t.Helper()
	if err := tg.Prepare(context.Background(), Collections(collections...), acked); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
}

// write writes docs and fails on any reject.
func write(t *testing.T, tg Target, coll string, docs ...transform.Document) {
	t.Helper()
	rejects, err := tg.Write(context.Background(), coll, docs)
	if err != nil || len(rejects) > 0 {
		t.Fatalf("Write %s: %v, rejects %v", coll, err, rejects)
	}
}

func closeTarget(t *testing.T, tg Target) {
	t.Helper()
	if err := tg.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// contents scans a collection into relaxed Extended JSON lines, sorted
// (duplicates kept: a replay that wrote twice shows).
func contents(t *testing.T, tg Target, coll string) []string {
	t.Helper()
	var out []string
	_, err := tg.Scan(context.Background(), coll, func(doc []byte) error {
		j, err := bson.MarshalExtJSON(bson.Raw(doc), false, false)
		out = append(out, string(j))
		return err
	})
	if err != nil {
		t.Fatalf("Scan %s: %v", coll, err)
	}
	slices.Sort(out)
	return out
}

func wantContents(t *testing.T, tg Target, coll string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if diff := cmp.Diff(want, contents(t, tg, coll)); diff != "" {
		t.Errorf("collection %s (-want +got):\n%s", coll, diff)
	}
}

func docs(from, to int32, v string) []transform.Document {
	var out []transform.Document
	for i := from; i <= to; i++ {
		out = append(out, doc(i, transform.Field{Key: "v", Value: v}))
	}
	return out
}

func lines(from, to int32, v string) []string {
	var out []string
	for _, d := range docs(from, to, v) {
		j, _ := AppendExtJSON(nil, d.Body)
		out = append(out, string(j))
	}
	return out
}

// wantUnsupported checks that err is exactly the answer of a target
// without the capability.
func wantUnsupported(t *testing.T, err error) {
	t.Helper()
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("err = %v, want an *UnsupportedError", err)
	}
}

func testCapsReopen(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	tg := openTarget(t, uri, Options{})
	if got := tg.Caps(); got != k.caps {
		t.Fatalf("Caps = %+v, want %+v", got, k.caps)
	}
	prepare(t, tg, nil, "c")
	other, err := tg.Reopen(ctx)
	if !k.caps.Parallel {
		wantUnsupported(t, err)
		return
	}
	if err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	prepare(t, other, nil, "c")
	write(t, tg, "c", docs(1, 2, "a")...)
	write(t, other, "c", docs(3, 4, "b")...)
	closeTarget(t, other)
	wantContents(t, tg, "c", append(lines(1, 2, "a"), lines(3, 4, "b")...)...)
}

// testRerun: a second run writing the same _ids with new contents, plus
// new _ids, leaves each document once with the new contents; a third,
// identical run changes nothing. Small byte caps split the batches.
func testRerun(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	opt := Options{BatchBytes: 200}
	run := func(batches ...[]transform.Document) {
		tg := openTarget(t, uri, opt)
		prepare(t, tg, nil, "c")
		for _, b := range batches {
			write(t, tg, "c", b...)
		}
		closeTarget(t, tg)
	}
	run(docs(1, 6, "old"))
	run(docs(1, 9, "new"))
	run(docs(1, 4, "new"), docs(5, 9, "new"))
	wantContents(t, openTarget(t, uri, opt), "c", lines(1, 9, "new")...)
}

// testResumeReplay: documents written after a checkpoint are written again
// when the run resumes from it (Prepare with what Sync returned); each
// ends up once.
func testResumeReplay(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	tg := openTarget(t, uri, Options{})
	prepare(t, tg, nil, "a", "b")
	write(t, tg, "a", docs(1, 3, "x")...)
	acked, err := tg.Sync(ctx)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	var wantAcked map[string]int64
	if k.syncLengths {
		wantAcked = map[string]int64{"a.jsonl": int64(len(strings.Join(lines(1, 3, "x"), "\n")) + 1), "b.jsonl": 0}
	}
	if diff := cmp.Diff(wantAcked, acked); diff != "" {
		t.Errorf("Sync (-want +got):\n%s", diff)
	}
	// Written after the checkpoint; then the run stops.
	write(t, tg, "a", docs(4, 5, "x")...)
	write(t, tg, "b", docs(9, 9, "x")...)
	closeTarget(t, tg)

	re := openTarget(t, uri, Options{})
	prepare(t, re, acked, "a", "b")
	write(t, re, "a", docs(4, 6, "x")...)
	write(t, re, "b", docs(9, 9, "x")...)
	wantContents(t, re, "a", lines(1, 6, "x")...)
	wantContents(t, re, "b", lines(9, 9, "x")...)
}

func testRejectTooLarge(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	tg := openTarget(t, uri, Options{MaxDocSize: 60})
	prepare(t, tg, nil, "c")
	big := doc(2, transform.Field{Key: "v", Value: strings.Repeat("x", 100)})
	rejects, err := tg.Write(context.Background(), "c", []transform.Document{doc(1), big, doc(3)})
	if err != nil {
		t.Fatal(err)
	}
	var tl *TooLargeError
	if len(rejects) != 1 || rejects[0].ID != int32(2) || rejects[0].Collection != "c" || rejects[0].Source != big.Source ||
		!errors.As(rejects[0].Err, &tl) || !strings.Contains(rejects[0].Err.Error(), "over the target's limit of 60 bytes") {
		t.Fatalf("rejects = %v, want _id 2 over the size limit", rejects)
	}
	wantContents(t, tg, "c", `{"_id":1}`, `{"_id":3}`)
}

func testDeleteIDs(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	tg := openTarget(t, uri, Options{})
	prepare(t, tg, nil, "c")
	write(t, tg, "c", docs(1, 5, "x")...)
	n, err := tg.Delete(ctx, "c", Selection{IDs: []any{int32(2), int64(4), int32(99)}})
	if !k.caps.Delete {
		wantUnsupported(t, err)
		wantContents(t, tg, "c", lines(1, 5, "x")...)
		return
	}
	if err != nil || n != 2 {
		t.Fatalf("Delete = %d, %v; want 2 (an int64 id matches an int32 _id)", n, err)
	}
	// An empty, non-nil id list picks nothing.
	if n, err := tg.Delete(ctx, "c", Selection{IDs: []any{}}); err != nil || n != 0 {
		t.Fatalf("Delete of no ids = %d, %v", n, err)
	}
	wantContents(t, tg, "c", `{"_id":1,"v":"x"}`, `{"_id":3,"v":"x"}`, `{"_id":5,"v":"x"}`)
}

func testDeleteType(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	tg := openTarget(t, uri, Options{})
	prepare(t, tg, nil, "c")
	write(t, tg, "c", typed(1, "book", "A"), typed(2, "review", "R"), typed(3, "book", "B"))
	n, err := tg.Delete(context.Background(), "c", Selection{IDs: []any{int32(1), int32(2)}, Match: []transform.Field{{Key: "type", Value: "book"}}})
	if !k.caps.Delete {
		wantUnsupported(t, err)
		return
	}
	if err != nil || n != 1 {
		t.Fatalf("Delete = %d, %v; want 1 (_id 2 is a review)", n, err)
	}
	wantContents(t, tg, "c", `{"_id":2,"type":"review","name":"R"}`, `{"_id":3,"type":"book","name":"B"}`)
}

// testSharedTypes: two runs write the two document types of one
// collection (two mappings, or two runs with --collections), each
// Prepared with its own type: each fresh run replaces only documents of
// its type, whatever the order, so the collection holds both; a document
// without the discriminator stays too. (A document of its type that a
// run does not write again goes on a directory, whose fresh run rewrites
// its type's lines, and stays on a server, which replaces by _id.) A resume truncates back to the
// checkpoint without touching the other type; deleting one type (a
// --restart or --drop of that mapping) leaves the other.
func testSharedTypes(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	book := []Collection{{Name: "c", Types: []transform.Field{{Key: "type", Value: "book"}}}}
	review := []Collection{{Name: "c", Types: []transform.Field{{Key: "type", Value: "review"}}}}
	run := func(colls []Collection, acked map[string]int64, docs ...transform.Document) map[string]int64 {
		t.Helper()
		tg := openTarget(t, uri, Options{})
		defer closeTarget(t, tg)
		if err := tg.Prepare(ctx, colls, acked); err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		write(t, tg, "c", docs...)
		got, err := tg.Sync(ctx)
		if err != nil {
			t.Fatalf("Sync: %v", err)
		}
		return got
	}
	// A document no mapping wrote, without the discriminator.
	run(Collections("c"), nil, doc(9, transform.Field{Key: "name", Value: "foreign"}))
	run(book, nil, typed(1, "book", "A"), typed(2, "book", "B"))
	run(review, nil, typed(11, "review", "R1"))
	run(book, nil, typed(1, "book", "A2"), typed(2, "book", "B2"), typed(3, "book", "C"))
	wantContents(t, openTarget(t, uri, Options{}), "c", `{"_id":9,"name":"foreign"}`,
		`{"_id":1,"type":"book","name":"A2"}`, `{"_id":2,"type":"book","name":"B2"}`, `{"_id":3,"type":"book","name":"C"}`,
		`{"_id":11,"type":"review","name":"R1"}`)

	// A review run checkpointed after one document, then resumed: the
	// replay writes the second once; books stay.
	acked := run(review, nil, typed(11, "review", "R1b"))
	tg := openTarget(t, uri, Options{})
	if err := tg.Prepare(ctx, review, acked); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	write(t, tg, "c", typed(12, "review", "R2"))
	closeTarget(t, tg) // "crash" after the write, before a checkpoint
	run(review, acked, typed(12, "review", "R2"))
	wantContents(t, openTarget(t, uri, Options{}), "c", `{"_id":9,"name":"foreign"}`,
		`{"_id":1,"type":"book","name":"A2"}`, `{"_id":2,"type":"book","name":"B2"}`, `{"_id":3,"type":"book","name":"C"}`,
		`{"_id":11,"type":"review","name":"R1b"}`, `{"_id":12,"type":"review","name":"R2"}`)

	tg = openTarget(t, uri, Options{})
	n, err := tg.Delete(ctx, "c", Selection{Match: []transform.Field{{Key: "type", Value: "book"}}})
	if err != nil || n != 3 {
		t.Fatalf("Delete of the books = %d, %v; want 3", n, err)
	}
	wantContents(t, tg, "c", `{"_id":9,"name":"foreign"}`, `{"_id":11,"type":"review","name":"R1b"}`, `{"_id":12,"type":"review","name":"R2"}`)
}

func page(parent int32, n int32) transform.Document {
	id := string(rune('0'+parent)) + "-" + string(rune('0'+n))
	return transform.Document{Collection: "pages", ID: id, Body: transform.Doc{
		{Key: "_id", Value: id}, {Key: "post", Value: parent}, {Key: "page", Value: n}, {Key: "items", Value: transform.Array{n}}}}
}

func testDeletePages(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	tg := openTarget(t, uri, Options{})
	prepare(t, tg, nil, "pages")
	write(t, tg, "pages", page(7, 0), page(7, 1), page(7, 2), page(7, 3), page(8, 0), page(8, 1), page(8, 2))
	// Parent 7 now has two pages: pages 2 and 3 go; parent 8 keeps its.
	n, err := tg.Delete(context.Background(), "pages", Selection{
		Match: []transform.Field{{Key: "post", Value: int64(7)}},
		Min:   &transform.Field{Key: "page", Value: int32(2)},
	})
	if !k.caps.Delete {
		wantUnsupported(t, err)
		return
	}
	if err != nil || n != 2 {
		t.Fatalf("Delete = %d, %v; want 2", n, err)
	}
	var want []string
	for _, d := range []transform.Document{page(7, 0), page(7, 1), page(8, 0), page(8, 1), page(8, 2)} {
		j, _ := AppendExtJSON(nil, d.Body)
		want = append(want, string(j))
	}
	wantContents(t, tg, "pages", want...)

	// Several parents at once (Any): parent 7 keeps one page, 8 keeps two,
	// and 9, which has none, selects nothing.
	n, err = tg.Delete(context.Background(), "pages", Selection{Any: []Selection{
		{Match: []transform.Field{{Key: "post", Value: int32(7)}}, Min: &transform.Field{Key: "page", Value: int32(1)}},
		{Match: []transform.Field{{Key: "post", Value: int32(8)}}, Min: &transform.Field{Key: "page", Value: int64(2)}},
		{Match: []transform.Field{{Key: "post", Value: int32(9)}}, Min: &transform.Field{Key: "page", Value: int32(0)}},
	}})
	if err != nil || n != 2 {
		t.Fatalf("Delete of Any = %d, %v; want 2", n, err)
	}
	want = want[:0]
	for _, d := range []transform.Document{page(7, 0), page(8, 0), page(8, 1)} {
		j, _ := AppendExtJSON(nil, d.Body)
		want = append(want, string(j))
	}
	wantContents(t, tg, "pages", want...)
}

// testEmpty: the zero Selection (what --restart deletes) works on every
// target, on collections written by an earlier run, by this handle, or
// never.
func testEmpty(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	tg := openTarget(t, uri, Options{})
	prepare(t, tg, nil, "c", "d")
	write(t, tg, "c", docs(1, 3, "x")...)
	write(t, tg, "d", docs(1, 1, "x")...)
	closeTarget(t, tg)

	tg = openTarget(t, uri, Options{})
	if _, err := tg.Delete(ctx, "c", Selection{}); err != nil {
		t.Fatalf("Delete all: %v", err)
	}
	if _, err := tg.Delete(ctx, "never", Selection{}); err != nil {
		t.Fatalf("Delete all of a missing collection: %v", err)
	}
	wantContents(t, tg, "c")
	wantContents(t, tg, "d", lines(1, 1, "x")...)

	// Emptying a collection this handle is writing.
	prepare(t, tg, nil, "e")
	write(t, tg, "e", docs(1, 2, "x")...)
	if _, err := tg.Delete(ctx, "e", Selection{}); err != nil {
		t.Fatalf("Delete all: %v", err)
	}
	write(t, tg, "e", docs(3, 3, "x")...)
	wantContents(t, tg, "e", lines(3, 3, "x")...)
}

// testRecords: the record store keeps bytes under an id, replaces them
// whole, lists them by id and deletes them; a record the store cannot
// read is an *UnreadableRecordError (what a body says is the job
// package's to judge: job's tests plant corrupt ones).
func testRecords(t *testing.T, k conformTarget) {
	uri, plant := k.fresh(t)
	ctx := context.Background()
	store := openTarget(t, uri, Options{}).Records()
	if store.Where() == "" {
		t.Error("Where is empty")
	}
	if r, err := store.Load(ctx, "j"); r != nil || err != nil {
		t.Fatalf("empty store: %v, %v", r, err)
	}
	if list, bad, err := store.List(ctx); len(list) != 0 || len(bad) != 0 || err != nil {
		t.Fatalf("empty store lists %v %v %v", list, bad, err)
	}
	rec := func(id, body string) *Record {
		return &Record{ID: id, Job: id, Updated: time.Unix(1, 0).UTC(), Body: []byte(body)}
	}
	if err := store.Save(ctx, rec("j", `{"a": 1}`)); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, rec("j", "{\"a\": 2,\n \"b\": \"é\"}")); err != nil { // replaces
		t.Fatal(err)
	}
	if err := store.Save(ctx, rec("k", `{}`)); err != nil {
		t.Fatal(err)
	}
	got, err := store.Load(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.ID != "j" || strings.TrimSpace(string(got.Body)) != "{\"a\": 2,\n \"b\": \"é\"}" {
		t.Fatalf("round trip: %+v", got)
	}
	list, bad, err := store.List(ctx)
	if err != nil || len(bad) != 0 || len(list) != 2 || list[0].ID != "j" || list[1].ID != "k" {
		t.Fatalf("List = %v, %v, %v; want j and k", list, bad, err)
	}
	if err := store.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, "k"); err != nil {
		t.Fatalf("deleting a missing record: %v", err)
	}
	if r, err := store.Load(ctx, "k"); r != nil || err != nil {
		t.Fatalf("after Delete: %v, %v", r, err)
	}
	// Any bytes come back as they were planted: judging them is not the
	// store's business.
	plant("j", `{"id": "j", "format": 1, "job"`)
	if got, err := store.Load(ctx, "j"); err != nil || strings.TrimSpace(string(got.Body)) != `{"id": "j", "format": 1, "job"` {
		t.Fatalf("planted record: %+v, %v", got, err)
	}
	if k.server {
		// A document whose body is not text cannot be read.
		db := openTarget(t, uri, Options{}).(*serverTarget).db
		if _, err := db.Collection(RecordCollection).UpdateOne(ctx, bson.D{{Key: "_id", Value: "j"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "checkpoint", Value: 7}}}}); err != nil {
			t.Fatal(err)
		}
		var ue *UnreadableRecordError
		if _, err := store.Load(ctx, "j"); !errors.As(err, &ue) || ue.ID != "j" {
			t.Fatalf("Load = %v, want an UnreadableRecordError", err)
		}
		if list, bad, err := store.List(ctx); err != nil || len(list) != 0 || len(bad) != 1 || !errors.As(bad[0], &ue) {
			t.Fatalf("List = %v, %v, %v; want the unreadable record beside none", list, bad, err)
		}
	}
}

// testScanNormalize: what Scan gives back is what Normalize predicts from
// the encoded document, for every value type both targets keep; a
// collection never written does not exist.
func testScanNormalize(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	tg := openTarget(t, uri, Options{})
	ts := time.Date(2024, 2, 29, 12, 30, 45, 123_000_000, time.UTC)
	bodies := []transform.Doc{
		{{Key: "_id", Value: int32(1)}, {Key: "s", Value: "text é"}, {Key: "b", Value: true}, {Key: "null", Value: nil}},
		{{Key: "_id", Value: int64(2)}, {Key: "small", Value: int64(7)}, {Key: "big", Value: int64(1) << 40}, {Key: "f", Value: 2.5}, {Key: "t", Value: ts}},
		{{Key: "_id", Value: "three"}, {Key: "nested", Value: transform.Doc{{Key: "n", Value: int64(7)}, {Key: "arr", Value: transform.Array{int64(1), int32(2), 3.0, "x", nil}}}},
			{Key: "u", Value: transform.UUID{1, 2, 3}}, {Key: "bin", Value: transform.Binary{0, 255}}, {Key: "empty", Value: transform.Doc{}}},
	}
	want := map[string][]byte{}
	var batch []transform.Document
	for _, b := range bodies {
		raw, err := AppendDocument(nil, b)
		if err != nil {
			t.Fatal(err)
		}
		norm, err := tg.Normalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := DocumentID(norm)
		want[string(AppendKey(nil, id))] = norm
		batch = append(batch, transform.Document{ID: b[0].Value, Body: b})
	}
	prepare(t, tg, nil, "c")
	write(t, tg, "c", batch...)
	seen := 0
	exists, err := tg.Scan(ctx, "c", func(doc []byte) error {
		seen++
		id, err := DocumentID(doc)
		if err != nil {
			return err
		}
		w := want[string(AppendKey(nil, id))]
		if diffs, _ := DiffDocuments(w, doc, 10); len(diffs) > 0 || string(w) != string(doc) {
			t.Errorf("_id %s: scanned document differs from the normalized one: %+v", id.JSON(), diffs)
		}
		return nil
	})
	if err != nil || !exists || seen != len(bodies) {
		t.Fatalf("Scan: exists %v, %d documents, %v; want %d", exists, seen, err, len(bodies))
	}
	exists, err = tg.Scan(ctx, "never", func([]byte) error { t.Error("a document in a missing collection"); return nil })
	if err != nil || exists {
		t.Fatalf("Scan of a missing collection: exists %v, %v", exists, err)
	}
}

func testIndexes(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	tg := openTarget(t, uri, Options{})
	if _, exists, err := tg.Indexes(ctx, "c"); err != nil || exists {
		t.Fatalf("Indexes of a missing collection = exists %v, %v; want false, nil", exists, err)
	}
	prepare(t, tg, nil, "c")
	write(t, tg, "c", docs(1, 3, "x")...)
	want := []mappings.Index{
		{Name: "v_1__id_-1", Keys: []mappings.IndexKey{{Field: "v", Order: "asc"}, {Field: "_id", Order: "desc"}}, Unique: true},
		{Name: "byV", Keys: []mappings.IndexKey{{Field: "v.w", Order: "asc"}}},
	}
	for range 2 { // creating them again changes nothing
		if err := tg.CreateIndexes(ctx, "c", want); err != nil {
			t.Fatalf("CreateIndexes: %v", err)
		}
	}
	got, exists, err := tg.Indexes(ctx, "c")
	if err != nil || !exists {
		t.Fatalf("Indexes = exists %v, %v", exists, err)
	}
	// Servers list indexes in their own order.
	byName := func(a, b mappings.Index) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(got, byName)
	if diff := cmp.Diff(slices.SortedFunc(slices.Values(want), byName), got); diff != "" {
		t.Errorf("indexes (-want +got):\n%s", diff)
	}

	partial := mappings.Index{Name: "p", Keys: []mappings.IndexKey{{Field: "v", Order: "hashed"}},
		Partial: mappings.Partial{{Key: "v", Value: mappings.Partial{{Key: "$in", Value: []any{"x", int32(2)}}}}}}
	err = tg.CreateIndexes(ctx, "c", append(want, partial))
	if !k.partialIndexes {
		var ie *IndexError
		if !errors.As(err, &ie) || !ie.Unsupported || ie.Index.Name != "p" {
			t.Fatalf("a partial hashed index on %s: err = %v, want an unsupported *IndexError", k.name, err)
		}
		t.Logf("refused as it should be: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("CreateIndexes: %v", err)
	}
	got, _, _ = tg.Indexes(ctx, "c")
	slices.SortFunc(got, byName)
	if len(got) != 3 || !SamePartial(got[1].Partial, partial.Partial) || got[1].Keys[0].Order != "hashed" {
		t.Errorf("partial index read back as %+v, want %+v", got, partial)
	}
}

// testIndexesMerge: indexes created for one collection by two runs (the
// two document types of a shared collection, each its mapping's) are
// all held; one declared again with the same name but other options, or
// with the keys of another under another name, is refused as a conflict
// naming it, and what was held stays.
func testIndexesMerge(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	tg := openTarget(t, uri, Options{})
	prepare(t, tg, nil, "c")
	write(t, tg, "c", docs(1, 3, "x")...)
	a := mappings.Index{Name: "v_1", Keys: []mappings.IndexKey{{Field: "v", Order: "asc"}}}
	b := mappings.Index{Name: "w_1", Keys: []mappings.IndexKey{{Field: "w", Order: "asc"}}}
	if err := tg.CreateIndexes(ctx, "c", []mappings.Index{a}); err != nil {
		t.Fatal(err)
	}
	if err := tg.CreateIndexes(ctx, "c", []mappings.Index{b}); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		got, _, err := tg.Indexes(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ix := range got {
			out = append(out, ix.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"v_1", "w_1"}) {
		t.Fatalf("indexes after two runs = %v, want both", got)
	}
	for _, bad := range []mappings.Index{
		{Name: "v_1", Keys: a.Keys, Unique: true},
		{Name: "other", Keys: b.Keys},
	} {
		err := tg.CreateIndexes(ctx, "c", []mappings.Index{bad})
		var ie *IndexError
		if !errors.As(err, &ie) || !ie.Conflict || ie.Index.Name != bad.Name {
			t.Errorf("CreateIndexes(%+v) = %v, want a conflict *IndexError naming it", bad, err)
		}
	}
	if got := names(); !slices.Equal(got, []string{"v_1", "w_1"}) {
		t.Errorf("indexes after the refusals = %v, want both unchanged", got)
	}
}

func testDrop(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	ctx := context.Background()
	tg := openTarget(t, uri, Options{})
	prepare(t, tg, nil, "c", "d")
	write(t, tg, "c", docs(1, 3, "x")...)
	write(t, tg, "d", docs(1, 1, "x")...)
	if err := tg.CreateIndexes(ctx, "c", []mappings.Index{{Name: "v_1", Keys: []mappings.IndexKey{{Field: "v", Order: "asc"}}}}); err != nil {
		t.Fatal(err)
	}
	closeTarget(t, tg)

	tg = openTarget(t, uri, Options{})
	if existed, err := tg.Drop(ctx, "c"); err != nil || !existed {
		t.Fatalf("Drop = %v, %v; want true, nil", existed, err)
	}
	if existed, err := tg.Drop(ctx, "c"); err != nil || existed {
		t.Fatalf("Drop again = %v, %v; want false, nil", existed, err)
	}
	if exists, err := tg.Scan(ctx, "c", func([]byte) error { return nil }); err != nil || exists {
		t.Errorf("Scan after Drop = exists %v, %v", exists, err)
	}
	if idx, exists, err := tg.Indexes(ctx, "c"); err != nil || exists || len(idx) > 0 {
		t.Errorf("Indexes after Drop = %v, exists %v, %v", idx, exists, err)
	}
	wantContents(t, tg, "d", lines(1, 1, "x")...)
	// A dropped collection is written afresh, without the old indexes.
	prepare(t, tg, nil, "c")
	write(t, tg, "c", docs(4, 4, "y")...)
	wantContents(t, tg, "c", lines(4, 4, "y")...)
	if idx, _, err := tg.Indexes(ctx, "c"); err != nil || len(idx) > 0 {
		t.Errorf("Indexes of the new collection = %v, %v; want none", idx, err)
	}
}

func testShard(t *testing.T, k conformTarget) {
	uri, _ := k.fresh(t)
	tg := openTarget(t, uri, Options{})
	out, err := tg.Shard(context.Background(), "c", []mappings.IndexKey{{Field: "v", Order: "hashed"}})
	if err != nil || out.Applied || !strings.Contains(out.Note, k.shardNote) {
		t.Fatalf("Shard = %+v, %v; want not applied, with a note saying %q", out, err, k.shardNote)
	}
}
