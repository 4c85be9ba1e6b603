package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

func doc(id int32, fields ...transform.Field) transform.Document {
	body := append(transform.Doc{{Key: "_id", Value: id}}, fields...)
	return transform.Document{Collection: "c", ID: id, Body: body, Source: "t (id)=(" + string(rune('0'+id)) + ")"}
}

func typed(id int32, kind, name string) transform.Document {
	d := doc(id, transform.Field{Key: "type", Value: kind}, transform.Field{Key: "name", Value: name})
	d.Discriminator = &transform.Field{Key: "type", Value: kind}
	return d
}

// writeWays are the two ways to store documents by _id: Write (insert
// first, write again the duplicates) and Rewrite (sync's rebuilt
// documents: straight to the profile's rewrite).
var writeWays = []struct {
	name  string
	write func(s Target, ctx context.Context, coll string, docs []transform.Document) ([]transform.Reject, error)
}{
	{"Write", func(s Target, ctx context.Context, coll string, docs []transform.Document) ([]transform.Reject, error) {
		return s.Write(ctx, coll, docs)
	}},
	{"Rewrite", func(s Target, ctx context.Context, coll string, docs []transform.Document) ([]transform.Reject, error) {
		return Rewriting(s).Write(ctx, coll, docs)
	}},
}

// TestServerTargetRerun writes documents, then the same _ids with other
// contents plus new ones (a rerun, or a batch replayed on resume; sync's
// rebuilt documents, in no order): the new contents replace the old,
// nothing is duplicated.
func TestServerTargetRerun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	for _, way := range writeWays {
		t.Run(way.name, func(t *testing.T) {
			uri, db := testenv.MongoDB(t)
			ctx := context.Background()
			s, err := Open(ctx, uri, Options{BatchBytes: 200})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			if _, ok := Rewriting(s).(Target); way.name == "Rewrite" && ok {
				t.Fatal("a server target's Rewriting is the target itself, not its rewrite")
			}
			var first, second []transform.Document
			for i := int32(1); i <= 6; i++ {
				first = append(first, doc(i, transform.Field{Key: "v", Value: "old"}))
			}
			for _, i := range []int32{9, 4, 7, 6, 5, 8} { // 4-6 exist, 7-9 are new
				second = append(second, doc(i, transform.Field{Key: "v", Value: "new"}))
			}
			for _, docs := range [][]transform.Document{first, second} {
				rejects, err := way.write(s, ctx, "c", docs)
				if err != nil || len(rejects) > 0 {
					t.Fatalf("%s: %v, rejects %v", way.name, err, rejects)
				}
			}
			got := testenv.DumpCollection(t, db, "c")
			want := []string{
				`{"_id":1,"v":"old"}`, `{"_id":2,"v":"old"}`, `{"_id":3,"v":"old"}`,
				`{"_id":4,"v":"new"}`, `{"_id":5,"v":"new"}`, `{"_id":6,"v":"new"}`,
				`{"_id":7,"v":"new"}`, `{"_id":8,"v":"new"}`, `{"_id":9,"v":"new"}`,
			}
			if !slices.Equal(got, want) {
				t.Fatalf("collection after two writes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestServerTargetDiscriminator: in a shared collection a document replaces
// only one of its own type; an _id taken by another type is rejected, and
// the other document is left alone.
func TestServerTargetDiscriminator(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	for _, way := range writeWays {
		t.Run(way.name, func(t *testing.T) {
			uri, db := testenv.MongoDB(t)
			ctx := context.Background()
			s, err := Open(ctx, uri, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			if rejects, err := way.write(s, ctx, "c", []transform.Document{typed(1, "book", "A"), typed(2, "review", "R")}); err != nil || len(rejects) > 0 {
				t.Fatalf("%s: %v, rejects %v", way.name, err, rejects)
			}
			rejects, err := way.write(s, ctx, "c", []transform.Document{typed(1, "book", "A2"), typed(2, "book", "clash"), typed(3, "review", "R3")})
			if err != nil {
				t.Fatal(err)
			}
			if len(rejects) != 1 || rejects[0].ID != int32(2) || !strings.Contains(rejects[0].Err.Error(), "already taken by another document type") {
				t.Fatalf("rejects = %v, want one for _id 2 taken by another type", rejects)
			}
			got := testenv.DumpCollection(t, db, "c")
			want := []string{`{"_id":1,"type":"book","name":"A2"}`, `{"_id":2,"type":"review","name":"R"}`, `{"_id":3,"type":"review","name":"R3"}`}
			if !slices.Equal(got, want) {
				t.Fatalf("collection:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestSortIDs: integer and string _ids are sorted as servers order them
// (so a delete's chunks span narrow ranges); mixed lists stay as given.
func TestSortIDs(t *testing.T) {
	ints := []any{int32(9), int64(-3), int32(4), int64(1 << 40), int32(0)}
	sortIDs(ints)
	if want := []any{int64(-3), int32(0), int32(4), int32(9), int64(1 << 40)}; !slices.Equal(ints, want) {
		t.Errorf("integers sorted %v, want %v", ints, want)
	}
	strs := []any{"b", "a10", "a9"}
	sortIDs(strs)
	if want := []any{"a10", "a9", "b"}; !slices.Equal(strs, want) {
		t.Errorf("strings sorted %v, want %v", strs, want)
	}
	mixed := []any{int32(2), "a", int32(1)}
	sortIDs(mixed)
	if want := []any{int32(2), "a", int32(1)}; !slices.Equal(mixed, want) {
		t.Errorf("mixed list %v, want it unchanged", mixed)
	}
}

// TestServerTargetRefused: a document the server refuses for another reason
// than a duplicate key is rejected with the server's message, and the rest
// of its batch is written.
func TestServerTargetRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx := context.Background()
	s, err := Open(ctx, uri, Options{MaxDocSize: 60})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	big := doc(2, transform.Field{Key: "v", Value: strings.Repeat("x", 100)})
	rejects, err := s.Write(ctx, "c", []transform.Document{doc(1), big, doc(3)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejects) != 1 || rejects[0].ID != int32(2) || !strings.Contains(rejects[0].Err.Error(), "over the target's limit of 60 bytes") {
		t.Fatalf("rejects = %v, want _id 2 over the size limit", rejects)
	}
	if got := testenv.DumpCollection(t, db, "c"); !slices.Equal(got, []string{`{"_id":1}`, `{"_id":3}`}) {
		t.Fatalf("collection: %v", got)
	}
}

// TestShardCommands checks the commands that set a shard key, which no
// test server here can run (FerretDB has no sharding): MongoDB's
// shardCollection, and Cosmos DB's CreateCollection with one field.
func TestShardCommands(t *testing.T) {
	key := []mappings.IndexKey{{Field: "bookId", Order: "hashed"}, {Field: "type", Order: "asc"}}
	got, err := bson.MarshalExtJSON(shardCommand("shop", "catalog", key), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"shardCollection":"shop.catalog","key":{"bookId":"hashed","type":1}}`; string(got) != want {
		t.Errorf("shardCollection = %s, want %s", got, want)
	}
	cmd, err := cosmosCommand("catalog", key[:1])
	if err != nil {
		t.Fatal(err)
	}
	got, _ = bson.MarshalExtJSON(cmd, false, false)
	if want := `{"customAction":"CreateCollection","collection":"catalog","shardKey":"bookId"}`; string(got) != want {
		t.Errorf("CreateCollection = %s, want %s", got, want)
	}
	if _, err := cosmosCommand("catalog", key); err == nil || !strings.Contains(err.Error(), "one field") {
		t.Errorf("a two-field shard key for Cosmos DB: err = %v, want a refusal", err)
	}
}

// TestFerretDBSharding records what FerretDB does with the two commands
// that set a shard key: it has neither (CommandNotFound, code 59), and
// neither creates the collection; Shard then applies nothing, says why,
// and a two-field key (which Cosmos DB would refuse) is told the same
// way, not as an error.
func TestFerretDBSharding(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx := context.Background()
	key := []mappings.IndexKey{{Field: "bookId", Order: "asc"}}
	for name, run := range map[string]func() error{
		"shardCollection": func() error {
			return db.Client().Database("admin").RunCommand(ctx, shardCommand(db.Name(), "catalog", key)).Err()
		},
		"customAction CreateCollection": func() error {
			cmd, err := cosmosCommand("catalog", key)
			if err != nil {
				t.Fatal(err)
			}
			return db.RunCommand(ctx, cmd).Err()
		},
	} {
		err := run()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 59 || !notFound(err) {
			t.Errorf("%s on FerretDB: %v; want CommandNotFound (59)", name, err)
		}
		t.Logf("%s on FerretDB: %v", name, err)
	}
	if names, err := db.ListCollectionNames(ctx, bson.D{}); err != nil || slices.Contains(names, "catalog") {
		t.Errorf("collections after the refused commands: %v, %v", names, err)
	}
	s, err := Open(ctx, uri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	for _, k := range [][]mappings.IndexKey{key, {{Field: "bookId", Order: "asc"}, {Field: "type", Order: "asc"}}} {
		out, err := s.Shard(ctx, "catalog", k)
		if err != nil || out.Applied || !strings.Contains(out.Note, "FerretDB has no sharding") {
			t.Errorf("Shard(%v) = %+v, %v; want not applied, with FerretDB named", k, out, err)
		}
	}
}

// TestFerretDBIndexKinds records which kinds of index FerretDB 1.24
// builds: unique, descending and dotted keys (as the conformance suite
// shows), but no hashed key and no partial filter, each refused on its
// own as unsupported, naming the index; the indexes beside them are
// built.
func TestFerretDBIndexKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, _ := testenv.MongoDB(t)
	ctx := context.Background()
	s, err := Open(ctx, uri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if _, err := s.Write(ctx, "c", []transform.Document{doc(1, transform.Field{Key: "v", Value: "x"})}); err != nil {
		t.Fatal(err)
	}
	plain := mappings.Index{Name: "v_-1", Keys: []mappings.IndexKey{{Field: "v", Order: "desc"}}, Unique: true}
	hashed := mappings.Index{Name: "h", Keys: []mappings.IndexKey{{Field: "v", Order: "hashed"}}}
	partial := mappings.Index{Name: "p", Keys: []mappings.IndexKey{{Field: "w", Order: "asc"}},
		Partial: mappings.Partial{{Key: "v", Value: mappings.Partial{{Key: "$exists", Value: true}}}}}
	err = s.CreateIndexes(ctx, "c", []mappings.Index{plain, hashed, partial})
	refused := map[string]bool{}
	for _, e := range unjoin(err) {
		var ie *IndexError
		if !errors.As(e, &ie) || !ie.Unsupported {
			t.Errorf("error %v, want an unsupported *IndexError", e)
			continue
		}
		refused[ie.Index.Name] = true
		t.Logf("refused: %v", e)
	}
	if !refused["h"] || !refused["p"] || len(refused) != 2 {
		t.Errorf("refused %v, want the hashed and the partial index", refused)
	}
	got, _, err := s.Indexes(ctx, "c")
	if err != nil || len(got) != 1 || got[0].Name != "v_-1" || !got[0].Unique {
		t.Errorf("indexes built: %+v, %v; want v_-1 alone", got, err)
	}
}

// unjoin lists the errors errors.Join put together (err itself when it
// is not joined; none for nil).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestIndexDocRoundTrip: an index as createIndexes takes it reads back
// as the same index, partial filter included (numbers by value).
func TestIndexDocRoundTrip(t *testing.T) {
	ix := mappings.Index{Name: "x", Keys: []mappings.IndexKey{{Field: "a", Order: "asc"}, {Field: "b.c", Order: "desc"}}, Unique: true,
		Partial: mappings.Partial{{Key: "a", Value: mappings.Partial{{Key: "$gt", Value: int32(5)}}}, {Key: "s", Value: []any{"x", true, nil}}}}
	raw, err := bson.Marshal(indexDoc(ix))
	if err != nil {
		t.Fatal(err)
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	back := indexFromDoc(d)
	if back.Name != ix.Name || !mappings.SameKeys(back.Keys, ix.Keys) || !back.Unique || !SamePartial(back.Partial, ix.Partial) {
		t.Errorf("round trip gave %+v, want %+v", back, ix)
	}
	other := mappings.Partial{{Key: "a", Value: mappings.Partial{{Key: "$gt", Value: 5.0}}}, {Key: "s", Value: []any{"x", true, nil}}}
	if !SamePartial(ix.Partial, other) {
		t.Error("SamePartial: int32 5 and double 5 must compare equal")
	}
	if SamePartial(ix.Partial, other[:1]) || SamePartial(ix.Partial, nil) {
		t.Error("SamePartial: different filters compare equal")
	}
}

// TestRewriteRuns: a rewrite's integer _ids go to one delete when they
// are few, in runs of about the square root of
// scanComparisons times their number when spread over a wide range,
// never more than rewriteChunk; other _ids deleteChunk a command; every
// _id in exactly one run, in order.
func TestRewriteRuns(t *testing.T) {
	seq := func(from, n, step int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = int32(from + i*step)
		}
		return out
	}
	strs := make([]any, 2500)
	for i := range strs {
		strs[i] = fmt.Sprintf("k%05d", i)
	}
	for _, c := range []struct {
		name string
		ids  []any
		want []int // lengths of the runs
	}{
		{"few", seq(1, 10, 1), []int{10}},
		// 20,000 consecutive: runs of sqrt(300 * 20,000) ~ 2,449.
		{"dense", seq(1, 20_000, 1), []int{2449, 2449, 2449, 2449, 2449, 2449, 2449, 2449, 408}},
		// 1,000 spread over 100,000: runs of sqrt(300 * 1000) ~ 547.
		{"spread", seq(1, 1000, 100), []int{547, 453}},
		{"wide", seq(1, 100_000, 1), nil},
		{"strings", strs, []int{1000, 1000, 500}},
		{"mixed", []any{int32(1), int32(2), "a"}, []int{3}},
	} {
		runs := rewriteRuns(c.ids)
		if c.want == nil {
			for _, r := range runs {
				if len(r) > rewriteChunk {
					t.Errorf("%s: a run of %d _ids, over rewriteChunk", c.name, len(r))
				}
			}
			continue
		}
		var lens []int
		var all []any
		for _, r := range runs {
			lens = append(lens, len(r))
			all = append(all, r...)
		}
		if !slices.Equal(lens, c.want) || !slices.Equal(all, c.ids) {
			t.Errorf("%s: runs of %v, want %v (every _id once, in order: %v)", c.name, lens, c.want, slices.Equal(all, c.ids))
		}
	}
}
