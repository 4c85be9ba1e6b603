package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
)

// TestRerunDefaultBatchFerretDB reruns a finished job into FerretDB at the
// default settings (batch size 1000), with every source row changed.
// FerretDB 1.24 stalls on a bulk write of 100 or more replaces of
// existing documents, and finds a document by an integer _id by scanning
// the collection, so replacing every document made a rerun hang, then
// quadratic: a fresh run there empties its collections first
// (load.Caps.EmptyFirst) and only inserts. The rerun must finish, write
// every document with the source's new contents, leave none twice, and
// say what it deleted. Both runs' times are logged (not asserted: timings
// belong in benchmarks).
func TestRerunDefaultBatchFerretDB(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	const persons = 5000
	src := personsDB(t, persons)
	target, db := testenv.MongoDB(t)
	args := []string{"migrate", "-q", "--progress", "none", "--mapping", example(t, "person"), "--source", src, "--target", target, "--job", "rerun"}
	timed := func(want ...string) time.Duration {
		t.Helper()
		start := time.Now()
		expectCLI(t, 0, want, args...)
		return time.Since(start)
	}
	first := timed()
	before := testenv.DumpCollection(t, db, "people")
	if len(before) != persons+2 {
		t.Fatalf("first run: %d people, want %d", len(before), persons+2)
	}
	testenv.Exec(t, src, `UPDATE person SET last_name = 'Rerun ' || id`)
	rerun := timed("FerretDB: deleted the 5002 documents of collection people before writing them again (they are the job's: denorm's last run left 5002 there")
	after := testenv.DumpCollection(t, db, "people")
	if len(after) != persons+2 {
		t.Fatalf("rerun: %d people, want %d", len(after), persons+2)
	}
	for _, d := range after {
		if !strings.Contains(d, `"lastName":"Rerun `) && !strings.Contains(d, `"last_name":"Rerun `) {
			t.Fatalf("a document the rerun did not write again: %s", d)
		}
	}
	t.Logf("%d documents at the default batch size into FerretDB: first run %s, rerun %s (%.2fx)",
		persons+2, first.Round(time.Millisecond), rerun.Round(time.Millisecond), rerun.Seconds()/first.Seconds())
}

// TestNumericFerretDB: FerretDB 1.24 closes the connection on a BSON
// Decimal128, which denorm would take for an outage and retry for the
// whole --retry-for. A mapping writing NUMERIC in numeric mode decimal
// (the default) is refused by validate --target and by migrate before
// anything is written, naming each field and the two ways out; with
// numeric: string or double the same data migrates; a Decimal128 only
// the data makes (a jsonb number beyond a double's precision) rejects its
// row, and the rest is written.
func TestNumericFerretDB(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `CREATE TABLE acct (id int PRIMARY KEY, name text NOT NULL, balance numeric(12,2), doc jsonb);
CREATE TABLE line (id int PRIMARY KEY, acct_id int NOT NULL REFERENCES acct, amount numeric);
INSERT INTO acct SELECT g, 'a' || g, g * 1.25, '{"n": 1}' FROM generate_series(1, 50) g;
INSERT INTO line SELECT g, 1 + g % 50, g / 4.0 FROM generate_series(1, 120) g;
UPDATE acct SET doc = '{"big": 1234567890123456789012.5}' WHERE id = 7;`)
	target, db := testenv.MongoDB(t)
	dir := t.TempDir()
	mapping := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const body = `collections:
  - name: accounts
    table: acct
    fields:
      - name
      - balance
      - name: lines
        embed: {table: line, join: {acct_id: id}, orderBy: id, fields: [amount]}
      - {name: total, aggregate: {table: line, join: {acct_id: id}, fn: sum, column: amount}}
`
	decimal := mapping("decimal.yaml", "version: 1\n"+body)
	want := []string{"decimal.yaml:", "accounts.balance: NUMERIC is written as BSON Decimal128", "accounts.lines[].amount:", "accounts.total:",
		"which the target (FerretDB", "cannot store", "`numeric: double`", "`numeric: string`"}
	expectCLI(t, 2, want, "validate", "--mapping", decimal, "--source", src, "--target", target)
	expectCLI(t, 2, []string{"--target needs --source"}, "validate", "--mapping", decimal, "--target", target)
	start := time.Now()
	expectCLI(t, 2, want, "migrate", "-q", "--progress", "none", "--mapping", decimal, "--source", src, "--target", target, "--job", "n")
	if took := time.Since(start); took > time.Minute {
		t.Errorf("migrate took %s to refuse (--retry-for is 5 minutes)", took)
	}
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil || len(names) != 0 {
		t.Fatalf("the refused migrate wrote collections %v (%v)", names, err)
	}
	for _, mode := range []string{"string", "double"} {
		m := mapping(mode+".yaml", "version: 1\nnumeric: "+mode+"\n"+body)
		expectCLI(t, 0, []string{"valid against the source database"}, "validate", "--mapping", m, "--source", src, "--target", target)
		// --drop: the other mode's documents are another mapping file's,
		// which --restart would not delete.
		expectCLI(t, 0, nil, "migrate", "-q", "--progress", "none", "--mapping", m, "--source", src, "--target", target, "--job", mode, "--drop")
		docs := testenv.DumpCollection(t, db, "accounts")
		wantBalance := `"balance":"3.75"`
		if mode == "double" {
			wantBalance = `"balance":3.75`
		}
		if len(docs) != 50 || !slices.ContainsFunc(docs, func(d string) bool { return strings.Contains(d, wantBalance) }) {
			t.Errorf("numeric: %s: %d documents, none with %s: %v", mode, len(docs), wantBalance, docs[:min(2, len(docs))])
		}
	}

	// No NUMERIC column: only row 7's jsonb holds a Decimal128.
	onlyJSON := mapping("json.yaml", "version: 1\ncollections:\n  - name: docs\n    table: acct\n    fields: [name, doc]\n")
	expectCLI(t, 0, nil, "validate", "--mapping", onlyJSON, "--source", src, "--target", target)
	rejects := filepath.Join(dir, "rejects.jsonl")
	start = time.Now()
	expectCLI(t, exitRejected, []string{"1 row was rejected"}, "migrate", "--progress", "none", "--mapping", onlyJSON, "--source", src, "--target", target, "--rejects", rejects)
	if took := time.Since(start); took > time.Minute {
		t.Errorf("migrate took %s", took)
	}
	lines := testenv.ReadLines(t, rejects)
	if len(lines) != 1 || !strings.Contains(lines[0], "Decimal128") || !strings.Contains(lines[0], "numeric: double") || !strings.Contains(lines[0], "7") {
		t.Errorf("rejects: %v", lines)
	}
	if docs := testenv.DumpCollection(t, db, "docs"); len(docs) != 49 {
		t.Errorf("%d documents written, want the 49 without a Decimal128", len(docs))
	}
}

// TestFreshRunKeepsForeignDocuments: a fresh run on FerretDB deletes the
// job's documents before writing them again, and no others. A document
// denorm did not write (in the collection before the first run, or added
// after a run) is kept, and the run says so, with the count, the
// collection, why, and --drop as the way to start afresh; the job's
// documents are then replaced by _id, and the result is the source's plus
// the foreign document. In a shared collection, a foreign document of the
// job's own type is kept the same way, and other types are never
// touched. --drop deletes them, and the next fresh run empties the
// collection again, saying how many documents it deleted and why; a run
// of another mapping file writing the collection does not take them for
// its own.
func TestFreshRunKeepsForeignDocuments(t *testing.T) {
	src := seedDB(t)
	target, db := testenv.MongoDB(t)
	ctx := context.Background()
	migrate := func(flags []string, want ...string) string {
		t.Helper()
		return expectCLI(t, 0, want, append([]string{"migrate", "-q", "--progress", "none", "--mapping", example(t, "person"), "--source", src, "--target", target}, flags...)...)
	}
	foreign := bson.D{{Key: "_id", Value: "mine"}, {Key: "note", Value: "written by another program"}}
	if _, err := db.Collection("people").InsertOne(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	// Before the first run.
	out := migrate(nil, "collection people holds 1 document, not all known to be the job's (denorm has no record of writing them", "none is deleted", "--drop")
	if strings.Contains(out, "deleted the") {
		t.Errorf("the first run says it deleted documents:\n%s", out)
	}
	people := testenv.DumpCollection(t, db, "people")
	if len(people) != 3 || !slices.ContainsFunc(people, func(d string) bool { return strings.Contains(d, `"mine"`) }) {
		t.Fatalf("after the first run: %v, want the 2 persons and the foreign document", people)
	}
	// A rerun: the collection is still not known to be the job's.
	migrate(nil, "collection people holds 3 documents, not all known to be the job's")
	if got := testenv.DumpCollection(t, db, "people"); !slices.Equal(got, people) {
		t.Errorf("after a rerun: %v, want %v", got, people)
	}
	// --drop starts afresh; the next fresh run empties the collection.
	migrate([]string{"--drop"}, "--drop: dropped collection people")
	migrate(nil, "FerretDB: deleted the 2 documents of collection people before writing them again (they are the job's: denorm's last run left 2 there")
	// Another mapping file writing the collection: the documents are not
	// its job's.
	other := filepath.Join(t.TempDir(), "person-copy.yaml")
	if err := os.WriteFile(other, readFile(t, example(t, "person")), 0o644); err != nil {
		t.Fatal(err)
	}
	expectCLI(t, 0, []string{"collection people holds 2 documents, not all known to be the job's (denorm's record in _denorm says another mapping file wrote them, " + example(t, "person")},
		"migrate", "-q", "--progress", "none", "--mapping", other, "--source", src, "--target", target)
	migrate([]string{"--drop"}, "--drop: dropped collection people")
	// A foreign document added after a run: kept, and said.
	if _, err := db.Collection("people").InsertOne(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	migrate(nil, "collection people holds 3 documents, not all known to be the job's (denorm's last run left 2 there, so documents were written or deleted there by something else since)")
	if got := testenv.DumpCollection(t, db, "people"); !slices.Equal(got, people) {
		t.Errorf("after a run with a foreign document added: %v, want %v", got, people)
	}

	// A shared collection: the catalog example (books and reviews), and
	// a foreign book and a document of a third type.
	catalog := func(want ...string) {
		t.Helper()
		expectCLI(t, 0, want, "migrate", "-q", "--progress", "none", "--mapping", example(t, "catalog"), "--source", src, "--target", target)
	}
	catalog()
	if _, err := db.Collection("catalog").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "fb"}, {Key: "type", Value: "book"}, {Key: "name", Value: "not from the source"}},
		bson.D{{Key: "_id", Value: "o1"}, {Key: "type", Value: "other"}},
	}); err != nil {
		t.Fatal(err)
	}
	catalog("collection catalog (documents of type type=book) holds 6 documents, not all known to be the job's",
		"FerretDB: deleted the 2 documents of collection catalog (documents of type type=review) before writing them again")
	got := testenv.DumpCollection(t, db, "catalog")
	for _, id := range []string{`"fb"`, `"o1"`, `"b1"`, `"r1"`} {
		if !slices.ContainsFunc(got, func(d string) bool { return strings.Contains(d, `"_id":`+id) }) {
			t.Errorf("catalog lacks %s after the run: %v", id, got)
		}
	}
	if len(got) != 9 {
		t.Errorf("catalog holds %d documents, want 5 books, 2 reviews, the foreign book and the other type: %v", len(got), got)
	}
}

// TestRerunBigFerretDB reruns, at the default settings, migrations into
// FerretDB of more documents than one of its deletes can remove (32,766:
// SQLite's limit of bound variables; the rerun of an indexed 300,000-
// document collection failed with "too many SQL variables"): a
// collection of 40,000 documents with an index, and 40,000 documents of
// one type of a shared collection beside 100 of another and one document
// of a third type (also with the chunk lowered to 7,000 by
// DENORM_DEBUG_DELETE_CHUNK). Each rerun deletes the job's documents first
// (the whole collection by dropping it and making its index again; the
// types in chunks, the third type's document left), says how many, and
// leaves exactly what the first run left. Times are logged.
func TestRerunBigFerretDB(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `CREATE TABLE thing (id int PRIMARY KEY, name text NOT NULL, grp int NOT NULL);
INSERT INTO thing SELECT g, 'thing ' || g, g % 97 FROM generate_series(1, 40000) g;
CREATE TABLE extra (id int PRIMARY KEY, kind text NOT NULL);
INSERT INTO extra SELECT g, 'k' || g FROM generate_series(1, 100) g;
ANALYZE;`)
	target, db := testenv.MongoDB(t)
	plain := writeMapping(t, `version: 1
collections:
  - name: things
    table: thing
    fields: [name, grp]
    indexes:
      - keys: [grp]
`)
	shared := filepath.Join(filepath.Dir(plain), "shared.yaml")
	if err := os.WriteFile(shared, []byte(`version: 1
collections:
  - name: mixed
    table: thing
    idPrefix: "t-"
    discriminator: type
    fields: [name, {name: type, value: thing}]
  - name: mixed
    table: extra
    idPrefix: "x-"
    discriminator: type
    fields: [kind, {name: type, value: extra}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mapping, coll string
		chunk         string // DENORM_DEBUG_DELETE_CHUNK ("": the default)
		want          []string
	}{
		{plain, "things", "", []string{"FerretDB: deleted the 40000 documents of collection things before writing them again (they are the job's: denorm's last run left 40000 there"}},
		{shared, "mixed", "", []string{"FerretDB: deleted the 40000 documents of collection mixed (documents of type type=thing) before writing them again",
			"FerretDB: deleted the 100 documents of collection mixed (documents of type type=extra) before writing them again"}},
		// Runs of 7,000 _ids: six deletes for the 40,000 of one type.
		{shared, "mixed", "7000", []string{"FerretDB: deleted the 40000 documents of collection mixed (documents of type type=thing)"}},
	} {
		if tc.chunk != "" {
			t.Setenv(deleteChunkEnv, tc.chunk)
		}
		if tc.coll == "mixed" && tc.chunk == "" {
			// A third type, another program's: the job's types are then
			// deleted type by type, in chunks, not by emptying the
			// collection.
			if _, err := db.Collection("mixed").InsertOne(context.Background(), bson.D{{Key: "_id", Value: "o-1"}, {Key: "type", Value: "other"}}); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{"migrate", "-q", "--progress", "none", "--mapping", tc.mapping, "--source", src, "--target", target}
		start := time.Now()
		expectCLI(t, 0, nil, args...)
		first := time.Since(start)
		before := testenv.DumpCollection(t, db, tc.coll)
		start = time.Now()
		expectCLI(t, 0, tc.want, args...)
		rerun := time.Since(start)
		after := testenv.DumpCollection(t, db, tc.coll)
		if len(after) != len(before) || !slices.Equal(after, before) {
			t.Errorf("%s: the rerun left %d documents, the first run %d (or other ones)", tc.coll, len(after), len(before))
		}
		t.Logf("%s, %d documents: first run %s, rerun %s", tc.coll, len(after), first.Round(time.Millisecond), rerun.Round(time.Millisecond))
	}
	wantIndexes(t, db, "things", "grp_1(grp)")
}
