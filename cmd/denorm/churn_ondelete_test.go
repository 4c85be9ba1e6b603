package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.yaml.in/yaml/v3"

	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// TestChurnRoundsOnDelete runs randomized rounds (internal/churn) of both
// sync methods on copies of example mappings whose collections keep the
// documents of deleted roots (onDelete: a tombstone, or ignore): hybrid
// with authors tombstoned and books ignored, and catalog, a shared
// collection, tombstoned. A fresh migrate cannot hold those documents, so
// each round's reference (ondeleteRef) is:
//   - the documents whose root exists equal a fresh migrate's, byte for
//     byte (a tombstone among them is a difference);
//   - every other document of a tombstone collection holds its field, a
//     date; in an ignore collection it may be anything;
//   - no document of those collections is ever deleted, one kept in the
//     last round is kept unchanged (its tombstone's date too), and one
//     whose root went in this round is as it was in the last round (with
//     the date added, for a tombstone);
//   - `denorm verify` exits 0 (it counts them as retained);
//   - the diff method's target equals the logical one's but for the
//     tombstones' dates.
//
// One seed each, 5 rounds: well under a minute; DENORM_TEST_SEED and
// DENORM_TEST_ROUNDS work as for TestChurnRounds.
func TestChurnRoundsOnDelete(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	root := testenv.Root(t)
	for _, tc := range []struct {
		mapping string
		// keep is each kept collection's onDelete: "ignore" or a
		// tombstone's field.
		keep map[string]string
	}{
		{"hybrid", map[string]string{"authors": "deletedAt", "books": "ignore"}},
		{"catalog", map[string]string{"catalog": "removedAt"}},
	} {
		t.Run(tc.mapping, func(t *testing.T) {
			t.Parallel()
			mapping := withOnDelete(t, filepath.Join(root, "mappings", "examples", tc.mapping+".yaml"), tc.keep)
			file, err := mappings.Load(mapping)
			if err != nil {
				t.Fatal(err)
			}
			ref := &ondeleteRef{keep: tc.keep}
			cfg := churn.Config{
				Mapping: mapping,
				Tables:  file.Tables(),
				Ignore:  []string{load.RecordCollection},
				Seeds:   1,
				Rounds:  5,
				Step: func(ctx context.Context, r *churn.Run) error {
					if err := syncBothMethods(ctx, r); err != nil {
						return err
					}
					return ref.sameMethods(ctx, r)
				},
				Migrate: churnMigrate,
				Verify:  churnVerify,
				Compare: ref.compare,
				Cleanup: roundsCleanup(t),
			}
			cfg.SQL = []string{filepath.Join(root, "testdata", "examples", "seed.sql"), filepath.Join(root, identityFull)}
			churn.RunRounds(t, cfg)
			for coll := range tc.keep {
				if ref.most[coll] == 0 {
					t.Errorf("coverage: no document of %s was ever kept (no root of it deleted)", coll)
				}
			}
			t.Logf("documents kept at most, by collection: %v", ref.most)
		})
	}
}

// withOnDelete writes a copy of the mapping file src whose collections
// named in keep get onDelete: ignore, or {tombstone: field}, and returns
// its path.
func withOnDelete(t *testing.T, src string, keep map[string]string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	top := doc.Content[0]
	set := 0
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "collections" {
			continue
		}
		for _, c := range top.Content[i+1].Content {
			name := ""
			for j := 0; j+1 < len(c.Content); j += 2 {
				if c.Content[j].Value == "name" {
					name = c.Content[j+1].Value
				}
			}
			field, ok := keep[name]
			if !ok {
				continue
			}
			var v yaml.Node
			if field == "ignore" {
				v = yaml.Node{Kind: yaml.ScalarNode, Value: "ignore"}
			} else {
				v = yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{
					{Kind: yaml.ScalarNode, Value: "tombstone"}, {Kind: yaml.ScalarNode, Value: field}}}
			}
			c.Content = append(c.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "onDelete"}, &v)
			set++
		}
	}
	if set == 0 {
		t.Fatalf("%s: no collection of %v", src, keep)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ondeleteRef is the reference of the onDelete rounds (see
// TestChurnRoundsOnDelete): the documents of the kept collections in the
// last round, which it compares with this round's.
type ondeleteRef struct {
	keep map[string]string
	mu   sync.Mutex
	// last holds, by collection and _id (Extended JSON), the documents of
	// the kept collections after the last round; kept says which of them
	// had no root then.
	last, kept map[string]map[string]bson.Raw
	// most is the most documents each collection kept in a round.
	most map[string]int
}

// tombstone is coll's tombstone field; "" for ignore or a collection
// that keeps nothing.
func (o *ondeleteRef) tombstone(coll string) string {
	if f := o.keep[coll]; f != "ignore" {
		return f
	}
	return ""
}

// compare is the round's comparison of r.Target with the fresh migrate.
func (o *ondeleteRef) compare(ctx context.Context, r *churn.Run, fresh string) (*testenv.TargetDiff, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	client, err := mongo.Connect(options.Client().ApplyURI(r.Target))
	if err != nil {
		return nil, err
	}
	defer client.Disconnect(ctx)
	target := client.Database(lastPath(r.Target))
	all, err := testenv.CompareTargets(ctx, client.Database(lastPath(fresh)), target, testenv.CompareOptions{Ignore: []string{load.RecordCollection}, Show: 1 << 30})
	if err != nil {
		return nil, err
	}
	out := &testenv.TargetDiff{Docs: all.Docs}
	add := func(d testenv.DocDiff) {
		out.Count++
		if len(out.Diffs) < 10 {
			out.Diffs = append(out.Diffs, d)
		}
	}
	kept := map[string]map[string]bson.Raw{}
	for _, d := range all.Diffs {
		_, keeps := o.keep[d.Collection]
		if d.Kind != "unexpected" || !keeps {
			add(d) // a tombstone whose root exists is "different"
			continue
		}
		if f := o.tombstone(d.Collection); f != "" {
			if v, err := d.Got.LookupErr(f); err != nil || v.Type != bson.TypeDateTime {
				add(testenv.DocDiff{Collection: d.Collection, ID: d.ID, Kind: "different", Got: d.Got,
					Fields: []testenv.FieldDiff{{Path: f, Want: "a date: the root row is gone, this is a tombstone", Got: fmt.Sprint(v)}}})
				continue
			}
		}
		if kept[d.Collection] == nil {
			kept[d.Collection] = map[string]bson.Raw{}
		}
		kept[d.Collection][d.ID] = d.Got
	}
	now := map[string]map[string]bson.Raw{}
	for coll := range o.keep {
		now[coll], err = readAll(ctx, target, coll)
		if err != nil {
			return nil, err
		}
		if o.most == nil {
			o.most = map[string]int{}
		}
		o.most[coll] = max(o.most[coll], len(kept[coll]))
		f := o.tombstone(coll)
		for id, before := range o.last[coll] {
			cur, ok := now[coll][id]
			var why string
			_, wasKept := o.kept[coll][id]
			_, isKept := kept[coll][id]
			switch {
			case !ok:
				why = "deleted from a collection whose onDelete keeps documents"
			case !isKept:
				continue // its root exists: compared with the fresh migrate
			case wasKept && !bytes.Equal(before, cur):
				why = "kept since an earlier round, but changed"
			case !wasKept && f == "" && !bytes.Equal(before, cur):
				why = "its root went in this round, but it is not as it was (onDelete: ignore)"
			case !wasKept && f != "" && !bytes.Equal(before, without(cur, f)):
				why = "its root went in this round, but the tombstone is not the last document with " + f + " added"
			}
			if why != "" {
				add(testenv.DocDiff{Collection: coll, ID: id, Kind: "different", Want: before, Got: cur,
					Fields: []testenv.FieldDiff{{Path: "(document)", Want: "as in the last round", Got: why}}})
			}
		}
	}
	o.last, o.kept = now, kept
	return out, nil
}

// sameMethods compares the diff method's target with the logical one's:
// equal but for the dates of their tombstones, which each method sets
// when it finds the root gone.
func (o *ondeleteRef) sameMethods(ctx context.Context, r *churn.Run) error {
	client, err := mongo.Connect(options.Client().ApplyURI(r.Target))
	if err != nil {
		return err
	}
	defer client.Disconnect(ctx)
	all, err := testenv.CompareTargets(ctx, client.Database(lastPath(r.Target)), client.Database(lastPath(diffTarget(r))),
		testenv.CompareOptions{Ignore: []string{load.RecordCollection}, Show: 1 << 30})
	if err != nil {
		return err
	}
	var bad []string
	for _, d := range all.Diffs {
		f := o.tombstone(d.Collection)
		if d.Kind == "different" && f != "" && isDate(d.Want, f) && isDate(d.Got, f) && bytes.Equal(without(d.Want, f), without(d.Got, f)) {
			continue
		}
		bad = append(bad, d.String())
	}
	if len(bad) > 0 {
		return fmt.Errorf("sync --method diff gave another target than --method logical (want: logical, found: diff), besides tombstone dates: %d documents\n  %s", len(bad), bad[:min(len(bad), 10)])
	}
	return nil
}

func isDate(doc bson.Raw, field string) bool {
	v, err := doc.LookupErr(field)
	return err == nil && v.Type == bson.TypeDateTime
}

// without is doc without its top-level field.
func without(doc bson.Raw, field string) bson.Raw {
	elems, err := doc.Elements()
	if err != nil {
		return doc
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	for _, e := range elems {
		if e.Key() != field {
			b = append(b, e...)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// readAll reads every document of coll, by _id as Extended JSON (as
// testenv.DocDiff names them).
func readAll(ctx context.Context, db *mongo.Database, coll string) (map[string]bson.Raw, error) {
	cur, err := db.Collection(coll).Find(ctx, bson.D{})
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	out := map[string]bson.Raw{}
	for cur.Next(ctx) {
		doc := slices.Clone(cur.Current)
		out[testenv.IDText(doc.Lookup("_id"))] = doc
	}
	return out, cur.Err()
}

// TestSyncVerifyOnDeleteCLI: through the command line, sync --method diff
// keeps a deleted author's document as a tombstone and a deleted book's
// as it was; the summary says so, verify exits 0 and counts them as
// retained; a tombstone whose author exists makes verify exit 1.
func TestSyncVerifyOnDeleteCLI(t *testing.T) {
	src := seedDB(t)
	mapping := withOnDelete(t, example(t, "hybrid"), map[string]string{"authors": "deletedAt", "books": "ignore"})
	uri, db := testenv.MongoDB(t)
	sync := func() string {
		t.Helper()
		code, out, errs := runCLI(t, "sync", "--mapping", mapping, "--source", src, "--target", uri, "--job", "od", "--method", "diff", "--once")
		if code != 0 {
			t.Fatalf("sync exit %d\n%s%s", code, out, errs)
		}
		return out
	}
	sync()
	testenv.Exec(t, src, `DELETE FROM author_image WHERE author_id = 'a2';
		DELETE FROM book_author WHERE author_id = 'a2' OR book_id = 'b4';
		DELETE FROM author WHERE id = 'a2';
		DELETE FROM book WHERE id = 'b4';`)
	if out := sync(); !strings.Contains(out, "authors: 1 document whose root row is gone kept as tombstones (onDelete), not deleted") {
		t.Errorf("sync's summary does not tell of the tombstone:\n%s", out)
	}
	ctx := context.Background()
	var author, book bson.M
	if err := db.Collection("authors").FindOne(ctx, bson.D{{Key: "_id", Value: "a2"}}).Decode(&author); err != nil || author["deletedAt"] == nil || author["lastName"] != "Wakefield" {
		t.Errorf("authors a2: %v, %v; want its content and deletedAt", author, err)
	}
	if err := db.Collection("books").FindOne(ctx, bson.D{{Key: "_id", Value: "b4"}}).Decode(&book); err != nil || book["deletedAt"] != nil {
		t.Errorf("books b4: %v, %v; want it kept as it was", book, err)
	}
	code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", uri)
	if code != 0 || !strings.Contains(out, "authors: 1 document whose root row is gone, kept by the collection's onDelete") ||
		!strings.Contains(out, "books: 1 document whose root row is gone, kept by the collection's onDelete") {
		t.Errorf("verify exit %d, want 0 with the retained documents told\n%s%s", code, out, errs)
	}
	if _, err := db.Collection("authors").UpdateOne(ctx, bson.D{{Key: "_id", Value: "a1"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "deletedAt", Value: bson.NewDateTimeFromTime(time.Now())}}}}); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", uri)
	if code != 1 || !strings.Contains(out, `authors _id="a1": different`) {
		t.Errorf("verify of a tombstone whose author exists: exit %d, want 1 and the document different\n%s%s", code, out, errs)
	}
}
