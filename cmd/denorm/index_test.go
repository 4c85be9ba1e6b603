package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/testenv"
)

// indexesOf lists a collection's indexes as "name(keys)[ unique]", the
// _id index left out, sorted.
func indexesOf(t *testing.T, db *mongo.Database, coll string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cur, err := db.Collection(coll).Indexes().List(ctx)
	if err != nil {
		t.Fatalf("list indexes of %s: %v", coll, err)
	}
	var out []string
	for cur.Next(ctx) {
		var ix struct {
			Name   string `bson:"name"`
			Key    bson.D `bson:"key"`
			Unique bool   `bson:"unique"`
		}
		if err := bson.Unmarshal(cur.Current, &ix); err != nil {
			t.Fatal(err)
		}
		if ix.Name == "_id_" {
			continue
		}
		keys := make([]string, len(ix.Key))
		for i, k := range ix.Key {
			keys[i] = k.Key
		}
		s := ix.Name + "(" + strings.Join(keys, ",") + ")"
		if ix.Unique {
			s += " unique"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func wantIndexes(t *testing.T, db *mongo.Database, coll string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := indexesOf(t, db, coll); !slices.Equal(got, want) {
		t.Errorf("indexes of %s = %v, want %v", coll, got, want)
	}
}

// TestIndexLifecycle follows the blog example's indexes on FerretDB: the
// one posts declare and the default of the comments' bucket pages are
// listed by plan, created by migrate (after loading by default, before it
// with --indexes before, not at all with none), and checked by verify: a
// missing index, or one with other options, makes verify exit 1; --drop
// starts over with the declared ones.
func TestIndexLifecycle(t *testing.T) {
	src := seedDB(t)
	uri, db := testenv.MongoDB(t)
	mapping := example(t, "blog")
	ctx := context.Background()

	// plan lists them, in text and JSON.
	code, out, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", src)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"indexes migrate creates:", "posts: name_1 (name)\n",
		"comments: postId_1_page_1 (postId, page) unique; default: bucket pages are read by parent (postId)"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan's text report lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI(t, "plan", "-q", "--mapping", mapping, "--source", src, "--format", "json")
	if code != 0 {
		t.Fatalf("plan exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Indexes []struct {
			Collection, Name, Keys string
			Unique, Default        bool
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Indexes) != 2 || rep.Indexes[0].Name != "name_1" || rep.Indexes[0].Default ||
		rep.Indexes[1].Name != "postId_1_page_1" || !rep.Indexes[1].Unique || !rep.Indexes[1].Default || rep.Indexes[1].Keys != "postId, page" {
		t.Errorf("plan's JSON indexes = %+v", rep.Indexes)
	}

	migrate := func(extra ...string) (int, string, string) {
		return runCLI(t, append([]string{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", uri}, extra...)...)
	}
	verify := func() (int, string) {
		code, out, errs := runCLI(t, "verify", "-q", "--mapping", mapping, "--source", src, "--target", uri)
		return code, out + errs
	}

	// --indexes none: documents but no indexes, which verify reports.
	if code, out, errs := migrate("--indexes", "none"); code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	wantIndexes(t, db, "posts")
	wantIndexes(t, db, "comments")
	code, vout := verify()
	if code != 1 || !strings.Contains(vout, "indexes: 0 of 2 as declared") || !strings.Contains(vout, "comments: index postId_1_page_1 (postId, page) is missing") ||
		!strings.Contains(vout, "result: identical documents; 2 indexes missing or different") {
		t.Errorf("verify without indexes: exit %d, want 1 with both missing:\n%s", code, vout)
	}

	// After loading (the default): created, and verify is satisfied.
	code, out, errs = migrate()
	if code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "creating 1 index on comments: postId_1_page_1") || !strings.Contains(out, "indexes of comments: postId_1_page_1") {
		t.Errorf("migrate does not say which indexes it creates:\n%s%s", out, errs)
	}
	wantIndexes(t, db, "posts", "name_1(name)")
	wantIndexes(t, db, "comments", "postId_1_page_1(postId,page) unique")
	if code, vout := verify(); code != 0 || !strings.Contains(vout, "indexes: 2 of 2 as declared") || !strings.Contains(vout, "result: identical") {
		t.Errorf("verify after migrate: exit %d, want 0:\n%s", code, vout)
	}

	// A missing index makes verify exit 1.
	if err := db.Collection("comments").Indexes().DropOne(ctx, "postId_1_page_1"); err != nil {
		t.Fatal(err)
	}
	code, vout = verify()
	if code != 1 || !strings.Contains(vout, "comments: index postId_1_page_1 (postId, page) is missing") {
		t.Errorf("verify with an index dropped: exit %d, want 1 naming it:\n%s", code, vout)
	}
	// So does one with other options (made by hand, not unique).
	if _, err := db.Collection("comments").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "postId", Value: 1}, {Key: "page", Value: 1}},
		Options: options.Index().SetName("postId_1_page_1")}); err != nil {
		t.Fatal(err)
	}
	code, vout = verify()
	if code != 1 || !strings.Contains(vout, "comments: index postId_1_page_1 (postId, page) differs: unique true, found false") {
		t.Errorf("verify with a non-unique index: exit %d, want 1 saying what differs:\n%s", code, vout)
	}

	// --drop (with --indexes before) starts over: it says what it drops,
	// and the declared indexes are back.
	code, out, errs = migrate("--drop", "--indexes", "before")
	if code != 0 {
		t.Fatalf("migrate --drop exit %d\n%s%s", code, out, errs)
	}
	for _, c := range []string{"posts", "comments"} {
		if !strings.Contains(errs, "--drop: dropped collection "+c) {
			t.Errorf("migrate --drop does not say it drops %s:\n%s", c, errs)
		}
	}
	wantIndexes(t, db, "comments", "postId_1_page_1(postId,page) unique")
	if code, vout := verify(); code != 0 {
		t.Errorf("verify after --drop: exit %d, want 0:\n%s", code, vout)
	}
}

// TestIndexesSharedAndUnsupported: the catalog example's shared
// collection gets its default index on what books and reviews share, and
// its shard key is reported as not applied on FerretDB (no sharding); a
// partial index FerretDB cannot build fails the run, naming the index,
// after the documents are written.
func TestIndexesSharedAndUnsupported(t *testing.T) {
	src := seedDB(t)
	uri, db := testenv.MongoDB(t)
	code, out, errs := runCLI(t, "migrate", "--progress", "none", "--mapping", example(t, "catalog"), "--source", src, "--target", uri)
	if code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	wantIndexes(t, db, "catalog", "bookId_1_type_1(bookId,type)")
	if !strings.Contains(errs, "shard key (bookId) of collection catalog not applied: FerretDB has no sharding") {
		t.Errorf("migrate does not say the shard key was not applied:\n%s", errs)
	}

	mapping := filepath.Join(t.TempDir(), "partial.yaml")
	if err := os.WriteFile(mapping, []byte(`version: 1
collections:
  - name: people
    table: person
    fields: [first_name, last_name]
    indexes:
      - {keys: lastName}
      - {keys: firstName, partial: {lastName: {$exists: true}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", uri)
	if code != 1 || !strings.Contains(errs, `index firstName_1 (firstName) on "people": the target does not support this kind of index`) {
		t.Errorf("a partial index on FerretDB: exit %d, want 1 naming the index:\n%s%s", code, out, errs)
	}
	wantIndexes(t, db, "people", "lastName_1(lastName)")
	if n, err := db.Collection("people").CountDocuments(context.Background(), bson.D{}); err != nil || n != 2 {
		t.Errorf("people holds %d documents (%v), want the 2 written before the index failed", n, err)
	}
}

// TestIndexesDirectory: a directory target gets each collection's
// createIndexes command beside its file; verify checks it; and the file,
// run as it is against a server (as mongosh would after mongoimport),
// creates the indexes.
func TestIndexesDirectory(t *testing.T) {
	src := seedDB(t)
	dir := t.TempDir()
	mapping := example(t, "blog")
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	file := filepath.Join(dir, "comments.indexes.json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no indexes file: %v", err)
	}
	if code, out, errs := runCLI(t, "verify", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 || !strings.Contains(out, "indexes: 2 of 2 as declared") {
		t.Errorf("verify of the directory: exit %d, want 0:\n%s%s", code, out, errs)
	}

	_, db := testenv.MongoDB(t)
	var cmd bson.D
	if err := bson.UnmarshalExtJSON(b, false, &cmd); err != nil {
		t.Fatalf("%s is not Extended JSON: %v\n%s", file, err, b)
	}
	if _, err := db.Collection("comments").InsertOne(context.Background(), bson.D{{Key: "postId", Value: 1}, {Key: "page", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(context.Background(), cmd).Err(); err != nil {
		t.Fatalf("running %s as a command: %v", file, err)
	}
	wantIndexes(t, db, "comments", "postId_1_page_1(postId,page) unique")

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "verify", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 1 || !strings.Contains(out, "is missing") {
		t.Errorf("verify without the indexes file: exit %d, want 1:\n%s", code, out)
	}
}
