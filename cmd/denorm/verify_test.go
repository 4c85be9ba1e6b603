package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
)

// verifyDatasets lists every example mapping that has a dataset, one line
// per example: the mapping under mappings/examples and the SQL files that
// load its data (run with psql, so COPY ... FROM stdin works).
var verifyDatasets = []struct {
	mapping string
	sql     []string
}{
	{"person", []string{"testdata/examples/seed.sql"}},
	{"blog", []string{"testdata/examples/seed.sql"}},
	{"portfolio", []string{"testdata/examples/seed.sql"}},
	{"portfolio-embedded", []string{"testdata/examples/seed.sql"}},
	{"publishing", []string{"testdata/examples/seed.sql"}},
	{"authors-books", []string{"testdata/examples/seed.sql"}},
	{"hybrid", []string{"testdata/examples/seed.sql"}},
	{"catalog", []string{"testdata/examples/seed.sql"}},
	{"pagila", []string{"testdata/pagila/pagila-schema.sql", "testdata/pagila/pagila-data.sql"}},
}

// loadedDBs caches one loaded database per SQL file list within a test.
type loadedDBs map[string]string

// get returns a database holding the files, loading it with psql once.
func (l loadedDBs) get(t *testing.T, files []string) string {
	t.Helper()
	key := strings.Join(files, "\x00")
	if db, ok := l[key]; ok {
		return db
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = repoPath(t, f)
	}
	db := testenv.LoadedDB(t, paths...)
	l[key] = db
	return db
}

// TestVerifyExamples migrates every example dataset to a directory and to
// the server, then verify must find them identical (exit 0) and count every
// expected document as identical.
func TestVerifyExamples(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	// Every example with expected documents must be in the table.
	for _, name := range examples(t) {
		if !slices.ContainsFunc(verifyDatasets, func(d struct {
			mapping string
			sql     []string
		}) bool {
			return d.mapping == name
		}) {
			t.Errorf("example %s has a dataset but no line in verifyDatasets", name)
		}
	}
	dbs := loadedDBs{}
	srcs := make([]string, len(verifyDatasets))
	for i, ds := range verifyDatasets { // loaded here: a subtest's database is dropped when it ends
		srcs[i] = dbs.get(t, ds.sql)
	}
	for i, ds := range verifyDatasets {
		t.Run(ds.mapping, func(t *testing.T) {
			src := srcs[i]
			mapping := example(t, ds.mapping)
			uri, _ := testenv.MongoDB(t)
			for _, target := range []string{t.TempDir(), uri} {
				code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", target)
				if code != 0 {
					t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
				}
				report := filepath.Join(t.TempDir(), "report.json")
				code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", target, "--report", report)
				if code != 0 || !strings.Contains(out, "result: identical") {
					t.Fatalf("verify %s: exit %d, want 0\n%s%s", target, code, out, errs)
				}
				rep := readReport(t, report)
				if !rep.Identical || len(rep.Differences) != 0 || len(rep.Collections) == 0 {
					t.Fatalf("report: identical=%v, %d differences, %d collections", rep.Identical, len(rep.Differences), len(rep.Collections))
				}
				for _, c := range rep.Collections {
					if c.Identical != c.Expected || c.Found != c.Expected || c.Expected == 0 && c.Exists {
						t.Errorf("%s: expected %d, found %d, identical %d", c.Collection, c.Expected, c.Found, c.Identical)
					}
				}
			}
		})
	}
}

type verifyReportJSON struct {
	Identical   bool `json:"identical"`
	Differences []struct {
		Collection string          `json:"collection"`
		ID         json.RawMessage `json:"_id"`
		Kind       string          `json:"kind"`
		Source     string          `json:"source"`
		Fields     []struct {
			Path         string          `json:"path"`
			Expected     json.RawMessage `json:"expected"`
			ExpectedType string          `json:"expectedType"`
			Found        json.RawMessage `json:"found"`
			FoundType    string          `json:"foundType"`
			Note         string          `json:"note"`
		} `json:"fields"`
	} `json:"differences"`
	Dangling []struct {
		Collection    string          `json:"collection"`
		ID            json.RawMessage `json:"_id"`
		Path          string          `json:"path"`
		RefCollection string          `json:"refCollection"`
		Ref           json.RawMessage `json:"ref"`
	} `json:"danglingRefs"`
	Collections []struct {
		Collection string `json:"collection"`
		Exists     bool   `json:"exists"`
		Expected   int64  `json:"expected"`
		Found      int64  `json:"found"`
		Identical  int64  `json:"identical"`
		Missing    int64  `json:"missing"`
		Unexpected int64  `json:"unexpected"`
		Different  int64  `json:"different"`
		Dangling   int64  `json:"danglingRefs"`
	} `json:"collections"`
	WritesSince []struct {
		Table  string `json:"table"`
		Column string `json:"column"`
		Rows   int64  `json:"rows"`
	} `json:"writesSince"`
}

func readReport(t *testing.T, path string) verifyReportJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r verifyReportJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report is not valid JSON: %v\n%s", err, b)
	}
	return r
}

// finding is one thing verify must report: a document difference (kind,
// collection, _id and, for "different", a field path and a note or types)
// or, with kind "dangling", a dangling reference (collection, _id, path).
type finding struct {
	kind, coll, id, path, note string
}

// tamper is one way to damage a target: delete, insert or edit (fn changes
// the document) the document of collection coll with _id id (relaxed
// Extended JSON).
type tamper struct {
	op   string
	coll string
	id   string
	doc  string // insert: the document, relaxed Extended JSON
	fn   func(bson.D) bson.D
}

// TestVerifyFindsTampering damages a freshly migrated target in every way
// a migration or a foreign writer can, on both kinds of target, and checks
// that verify exits 1 and names each damaged document (collection, _id,
// path) in its output and report, and nothing else.
func TestVerifyFindsTampering(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	cases := []struct {
		name    string
		example string
		tamper  []tamper
		want    []finding
	}{
		{"delete a document", "blog",
			[]tamper{{op: "delete", coll: "posts", id: "2"}},
			[]finding{{kind: "missing", coll: "posts", id: "2"}}},
		{"add a document", "blog",
			[]tamper{{op: "insert", coll: "posts", doc: `{"_id": 99, "name": "spam"}`}},
			[]finding{{kind: "unexpected", coll: "posts", id: "99"}}},
		{"change an embedded field", "blog",
			[]tamper{{op: "edit", coll: "posts", id: "1", fn: set("recentComments.1.author", "mallory")}},
			[]finding{{kind: "different", coll: "posts", id: "1", path: "recentComments.1.author"}}},
		{"drop an array item", "hybrid",
			[]tamper{{op: "edit", coll: "books", id: `"b1"`, fn: dropItem("authors", 0)}},
			[]finding{{kind: "different", coll: "books", id: `"b1"`, path: "authors", note: "array has 1 items, expected 2"}}},
		{"reorder an array", "authors-books",
			[]tamper{{op: "edit", coll: "authors", id: `"a1"`, fn: reverse("books")}},
			[]finding{{kind: "different", coll: "authors", id: `"a1"`, path: "books", note: "same items in a different order"}}},
		{"change a type from int to string", "person",
			[]tamper{{op: "edit", coll: "people", id: "1", fn: set("addresses.0.zip", "98012")}},
			[]finding{{kind: "different", coll: "people", id: "1", path: "addresses.0.zip", note: "int32 -> string"}}},
		{"remove a bucket page", "blog",
			[]tamper{{op: "delete", coll: "comments", id: `"1-1"`}},
			[]finding{{kind: "missing", coll: "comments", id: `"1-1"`}}},
		{"change an item of a bucket page", "blog",
			[]tamper{{op: "edit", coll: "comments", id: `"1-2"`, fn: set("comments.49.comment", "edited")}},
			[]finding{{kind: "different", coll: "comments", id: `"1-2"`, path: "comments.49.comment"}}},
		{"alter an aggregate", "hybrid",
			[]tamper{{op: "edit", coll: "authors", id: `"a1"`, fn: set("countOfBooks", int32(4))}},
			[]finding{{kind: "different", coll: "authors", id: `"a1"`, path: "countOfBooks"}}},
		{"change an id array item", "publishing",
			[]tamper{{op: "edit", coll: "publishers", id: `"mspress"`, fn: set("books.2", "b9")}},
			[]finding{{kind: "different", coll: "publishers", id: `"mspress"`, path: "books.2"},
				{kind: "dangling", coll: "publishers", id: `"mspress"`, path: "books.2"}}},
		{"change a document type's field in a shared collection", "catalog",
			[]tamper{{op: "edit", coll: "catalog", id: `"r1"`, fn: set("type", "book")}},
			[]finding{{kind: "different", coll: "catalog", id: `"r1"`, path: "type"}}},
		{"reorder fields", "person",
			[]tamper{{op: "edit", coll: "people", id: "2", fn: swapFirstFields}},
			[]finding{{kind: "different", coll: "people", id: "2", note: "field order differs"}}},
		{"remove a field", "portfolio",
			[]tamper{{op: "edit", coll: "stocks", id: "2", fn: unset("pe")}},
			[]finding{{kind: "different", coll: "stocks", id: "2", path: "pe", note: "missing field"}}},
		{"int32 to double of the same value (1 and 1.0 differ)", "portfolio",
			[]tamper{{op: "edit", coll: "people", id: "1", fn: set("holdings.0.numberHeld", 100.0)}},
			[]finding{{kind: "different", coll: "people", id: "1", path: "holdings.0.numberHeld", note: "int32 -> double"}}},
		{"referenced document deleted", "publishing",
			[]tamper{{op: "delete", coll: "publishers", id: `"mspress"`}},
			[]finding{{kind: "missing", coll: "publishers", id: `"mspress"`},
				{kind: "dangling", coll: "books", id: `"b1"`, path: "pubId"},
				{kind: "dangling", coll: "books", id: `"b2"`, path: "pubId"},
				{kind: "dangling", coll: "books", id: `"b4"`, path: "pubId"},
				{kind: "dangling", coll: "books", id: `"b5"`, path: "pubId"}}},
	}
	src := seedDB(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mapping := example(t, tc.example)
			for _, kind := range []string{"directory", "server"} {
				t.Run(kind, func(t *testing.T) {
					var target string
					var db *mongo.Database
					if kind == "directory" {
						target = t.TempDir()
					} else {
						target, db = testenv.MongoDB(t)
					}
					if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", target); code != 0 {
						t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
					}
					for _, tm := range tc.tamper {
						if db != nil {
							tamperServer(t, db, tm)
						} else {
							tamperDir(t, target, tm)
						}
					}
					report := filepath.Join(t.TempDir(), "report.json")
					code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", target, "--report", report)
					if code != 1 {
						t.Fatalf("verify exit %d, want 1 (different)\n%s%s", code, out, errs)
					}
					rep := readReport(t, report)
					checkFindings(t, rep, tc.want, out)
				})
			}
		})
	}
}

// checkFindings checks that the report holds exactly the wanted findings
// (per document; a differing document may list several fields) and that
// stdout names each one's collection, _id and path.
func checkFindings(t *testing.T, rep verifyReportJSON, want []finding, out string) {
	t.Helper()
	if rep.Identical {
		t.Error("report says identical")
	}
	var wantDocs, wantRefs int
	for _, w := range want {
		if w.kind == "dangling" {
			wantRefs++
			found := false
			for _, d := range rep.Dangling {
				if d.Collection == w.coll && string(d.ID) == w.id && d.Path == w.path {
					found = true
				}
			}
			if !found {
				t.Errorf("no dangling reference %s _id=%s %s in %+v", w.coll, w.id, w.path, rep.Dangling)
			}
			if !strings.Contains(out, w.coll+" _id="+w.id+": dangling reference "+w.path) {
				t.Errorf("stdout does not name dangling %s _id=%s %s:\n%s", w.coll, w.id, w.path, out)
			}
			continue
		}
		wantDocs++
		found := false
		for _, d := range rep.Differences {
			if d.Kind != w.kind || d.Collection != w.coll || string(d.ID) != w.id {
				continue
			}
			if w.kind != "different" {
				found = true
				break
			}
			for _, f := range d.Fields {
				note := f.Note
				if f.ExpectedType != "" && f.FoundType != "" {
					note += " " + f.ExpectedType + " -> " + f.FoundType
				}
				if (w.path == "" || f.Path == w.path) && strings.Contains(note, w.note) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no %s difference %s _id=%s path %q note %q in report %+v", w.kind, w.coll, w.id, w.path, w.note, rep.Differences)
		}
		line := "  " + w.coll + " _id=" + w.id + ": " + w.kind
		if !strings.Contains(out, line) || w.path != "" && !strings.Contains(out, "      "+w.path+":") {
			t.Errorf("stdout does not name %q and path %q:\n%s", line, w.path, out)
		}
	}
	if len(rep.Differences) != wantDocs {
		t.Errorf("report has %d differing documents, want %d: %+v", len(rep.Differences), wantDocs, rep.Differences)
	}
	if len(rep.Dangling) != wantRefs {
		t.Errorf("report has %d dangling references, want %d: %+v", len(rep.Dangling), wantRefs, rep.Dangling)
	}
}

func idOf(t *testing.T, d bson.D) string {
	t.Helper()
	for _, e := range d {
		if e.Key == "_id" {
			b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: e.Value}}, false, false)
			if err != nil {
				t.Fatal(err)
			}
			return string(b[5 : len(b)-1])
		}
	}
	t.Fatalf("document without _id: %v", d)
	return ""
}

func tamperServer(t *testing.T, db *mongo.Database, tm tamper) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	coll := db.Collection(tm.coll)
	if tm.op == "insert" {
		var d bson.D
		if err := bson.UnmarshalExtJSON([]byte(tm.doc), false, &d); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertOne(ctx, d); err != nil {
			t.Fatal(err)
		}
		return
	}
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if idOf(t, d) != tm.id {
			continue
		}
		filter := bson.D{{Key: "_id", Value: d[0].Value}}
		if tm.op == "delete" {
			if _, err := coll.DeleteOne(ctx, filter); err != nil {
				t.Fatal(err)
			}
			return
		}
		// Delete and insert rather than replace: FerretDB skips a replace
		// whose document equals the stored one by value (100 and 100.0).
		if _, err := coll.DeleteOne(ctx, filter); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertOne(ctx, tm.fn(d)); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s has no document with _id %s", tm.coll, tm.id)
}

func tamperDir(t *testing.T, dir string, tm tamper) {
	t.Helper()
	path := filepath.Join(dir, tm.coll+".jsonl")
	lines := testenv.ReadLines(t, path)
	var out []string
	done := false
	if tm.op == "insert" {
		out, done = append(lines, tm.doc), true
	}
	for _, l := range lines {
		if done || tm.op == "insert" {
			if tm.op != "insert" {
				out = append(out, l)
			}
			continue
		}
		var d bson.D
		if err := bson.UnmarshalExtJSON([]byte(l), false, &d); err != nil {
			t.Fatal(err)
		}
		if idOf(t, d) != tm.id {
			out = append(out, l)
			continue
		}
		done = true
		if tm.op == "delete" {
			continue
		}
		b, err := bson.MarshalExtJSON(tm.fn(d), false, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	if !done {
		t.Fatalf("%s has no document with _id %s", path, tm.id)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, l := range out {
		w.WriteString(l + "\n")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// at applies fn to the value at a dotted path (array items by index).
func at(v any, path []string, fn func(any) any) any {
	if len(path) == 0 {
		return fn(v)
	}
	switch x := v.(type) {
	case bson.D:
		out := slices.Clone(x)
		for i := range out {
			if out[i].Key == path[0] {
				out[i].Value = at(out[i].Value, path[1:], fn)
			}
		}
		return out
	case bson.A:
		i, err := strconv.Atoi(path[0])
		if err != nil || i >= len(x) {
			panic("bad test path " + strings.Join(path, "."))
		}
		out := slices.Clone(x)
		out[i] = at(out[i], path[1:], fn)
		return out
	}
	panic("bad test path " + strings.Join(path, "."))
}

func set(path string, v any) func(bson.D) bson.D {
	return func(d bson.D) bson.D {
		return at(d, strings.Split(path, "."), func(any) any { return v }).(bson.D)
	}
}

func dropItem(path string, i int) func(bson.D) bson.D {
	return func(d bson.D) bson.D {
		return at(d, strings.Split(path, "."), func(v any) any { return slices.Delete(slices.Clone(v.(bson.A)), i, i+1) }).(bson.D)
	}
}

func reverse(path string) func(bson.D) bson.D {
	return func(d bson.D) bson.D {
		return at(d, strings.Split(path, "."), func(v any) any {
			a := slices.Clone(v.(bson.A))
			slices.Reverse(a)
			return a
		}).(bson.D)
	}
}

func unset(key string) func(bson.D) bson.D {
	return func(d bson.D) bson.D {
		return slices.DeleteFunc(slices.Clone(d), func(e bson.E) bool { return e.Key == key })
	}
}

// swapFirstFields swaps the two fields after _id.
func swapFirstFields(d bson.D) bson.D {
	out := slices.Clone(d)
	out[1], out[2] = out[2], out[1]
	return out
}

// TestVerifyLiveSource verifies against a source that took writes after
// the migration: with --since, verify counts the rows changed after that
// time in its snapshot and says the differences may come from them; a
// difference no watermark explains is said to be unexplained.
func TestVerifyLiveSource(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := seedDB(t)
	mapping := example(t, "person")
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	since := time.Now().UTC().Add(time.Second).Truncate(time.Second) // after the seed's updated_at values
	sinceArg := since.Format(time.RFC3339)

	report := filepath.Join(t.TempDir(), "report.json")
	code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--since", sinceArg, "--report", report)
	if code != 0 {
		t.Fatalf("verify before any write: exit %d\n%s%s", code, out, errs)
	}
	rep := readReport(t, report)
	if len(rep.WritesSince) != 3 { // person, contact_detail, address have updated_at
		t.Fatalf("writesSince lists %d tables, want 3: %+v", len(rep.WritesSince), rep.WritesSince)
	}

	// A write after the migration, stamped by the application.
	testenv.Exec(t, src, `UPDATE contact_detail SET detail = 'thomas@new.example', updated_at = timestamptz '`+since.Add(time.Minute).Format(time.RFC3339)+`'
		WHERE person_id = 1 AND detail = 'thomas@andersen.com'`)
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--since", sinceArg, "--report", report)
	if code != 1 {
		t.Fatalf("verify after a write: exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"people _id=1: different",
		"contactDetails.0.email:",
		"source writes after " + sinceArg + ": 1 rows of public.contact_detail (updated_at up to " + since.Add(time.Minute).Format(time.RFC3339) + "), read for people",
		"some differences may be due to writes after the last sync",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	rep = readReport(t, report)
	for _, w := range rep.WritesSince {
		want := int64(0)
		if w.Table == "public.contact_detail" {
			want = 1
		}
		if w.Rows != want || w.Column != "updated_at" {
			t.Errorf("writesSince %s.%s: %d rows, want %d", w.Table, w.Column, w.Rows, want)
		}
	}

	// A difference no later write explains.
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--since", since.Add(time.Hour).Format(time.RFC3339))
	if code != 1 || !strings.Contains(out, "these differences are not explained by later updates") {
		t.Errorf("verify --since after the write: exit %d, want 1 and an unexplained difference\n%s%s", code, out, errs)
	}
}

// TestVerifySample compares a tenth of the documents: the same ones on
// both sides, so an intact target is identical, and a damaged one shows
// some of its damage.
func TestVerifySample(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := personsDB(t, 2000)
	mapping := example(t, "person")
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--sample", "10")
	if code != 0 {
		t.Fatalf("verify --sample 10: exit %d\n%s%s", code, out, errs)
	}
	f := strings.Fields(summaryRow(out, "people"))
	identical, _ := strconv.Atoi(f[2])
	if f[0] != "2002" || f[1] != "2002" || identical < 100 || identical > 300 {
		t.Fatalf("--sample 10 of 2002 documents: expected %s, found %s, compared %d; want all counted and about 200 compared\n%s", f[0], f[1], identical, out)
	}
	// Delete 100 documents from the file: the sample sees about 10.
	path := filepath.Join(dir, "people.jsonl")
	lines := testenv.ReadLines(t, path)
	if err := os.WriteFile(path, []byte(strings.Join(lines[100:], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--sample", "10")
	f = strings.Fields(summaryRow(out, "people"))
	missing, _ := strconv.Atoi(f[3])
	if code != 1 || f[1] != "1902" || missing == 0 || missing >= 50 {
		t.Fatalf("--sample 10 after deleting 100 documents: exit %d, found %s, missing %d; want exit 1, 1902 found, a few missing\n%s%s", code, f[1], missing, out, errs)
	}
}

// TestVerifyExitCodes: a failure to verify (exit 4) is told apart from a
// difference (exit 1) and from bad usage (exit 2).
func TestVerifyExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := seedDB(t)
	mapping := example(t, "person")
	corrupt := t.TempDir()
	if err := os.WriteFile(filepath.Join(corrupt, "people.jsonl"), []byte(`{"_id": 1, "firstName": "Thomas"}`+"\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unreachable server", []string{"--target", "mongodb://127.0.0.1:1/x?serverSelectionTimeoutMS=300", "--retry-for", "1s"}, 4, "verify could not complete: cannot reach the target mongodb://127.0.0.1:1/x?serverSelectionTimeoutMS=300: no server answered within 300ms (serverSelectionTimeoutMS; each connection attempt 10s, connectTimeoutMS): dial tcp 127.0.0.1:1: connect: connection refused"},
		{"no such directory", []string{"--target", filepath.Join(corrupt, "missing")}, 4, "verify could not complete: target directory"},
		{"corrupt file", []string{"--target", corrupt}, 4, "people.jsonl:2: not an Extended JSON document"},
		{"unreachable source", []string{"--target", corrupt, "--source", "postgres://postgres@127.0.0.1:1/x?connect_timeout=1"}, 4, "verify could not complete: connect to source"},
		{"bad sample", []string{"--target", corrupt, "--sample", "0"}, 2, "--sample must be a percentage"},
		{"bad since", []string{"--target", corrupt, "--since", "yesterday"}, 2, "--since: want an RFC 3339 time"},
		{"no mapping", []string{"--target", corrupt, "--mapping", ""}, 2, "no mapping file"},
		{"missing collection", []string{"--target", t.TempDir()}, 1, "the target differs from the source: 2 documents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"verify", "--mapping", mapping, "--source", src}, tc.args...)
			code, out, errs := runCLI(t, args...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Errorf("exit %d, want %d; stderr lacks %q?\n%s%s", code, tc.code, tc.msg, out, errs)
			}
		})
	}
}

// TestRejectedRowsAndOtherKinds: a source row that cannot become a document
// (a contact detail whose type, which names its field, is an empty string)
// makes migrate finish with exit code 3, count it as failed in the summary
// and list it in --rejects; verify names it "unbuildable" (migrate rejected
// it too). A document twice in a directory target's file is a
// "duplicate". Both count in the OTHER column.
func TestRejectedRowsAndOtherKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := seedDB(t)
	testenv.Exec(t, src, `INSERT INTO contact_detail_type (id, name) VALUES (99, '');
INSERT INTO contact_detail (id, person_id, type_id, detail) VALUES (99, 2, 99, 'nameless')`)
	mapping := example(t, "person")
	dir := t.TempDir()
	rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
	code, out, errs := runCLI(t, "migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", dir, "--rejects", rejects)
	if code != exitRejected {
		t.Fatalf("migrate with a rejected row: exit %d, want %d\n%s%s", code, exitRejected, out, errs)
	}
	if !strings.Contains(errs, "denorm: 1 row was rejected") || !strings.Contains(errs, "rejected rows are listed in "+rejects) {
		t.Errorf("stderr does not say a row was rejected and where they are listed:\n%s", errs)
	}
	if f := strings.Fields(summaryLine(out, "people")); len(f) < 5 || f[2] != "2" || f[3] != "1" || f[4] != "1" {
		t.Errorf("summary row %q: want 2 rows read, 1 written, 1 failed\n%s", summaryLine(out, "people"), out)
	}
	lines := testenv.ReadLines(t, rejects)
	if len(lines) != 1 {
		t.Fatalf("rejects file has %d lines, want 1: %v", len(lines), lines)
	}
	var rej struct{ Collection, Source, Error string }
	if err := json.Unmarshal([]byte(lines[0]), &rej); err != nil || rej.Collection != "people" || rej.Source != "person (id)=(2)" || !strings.Contains(rej.Error, "the value is an empty string") {
		t.Errorf("rejects line %s (%v): want people, person (id)=(2) and the empty field name", lines[0], err)
	}
	if got := countLines(t, filepath.Join(dir, "people.jsonl")); got != 1 {
		t.Errorf("people.jsonl has %d documents, want the 1 built", got)
	}

	// verify: the rejected row is unbuildable; then a duplicated line.
	report := filepath.Join(t.TempDir(), "report.json")
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--report", report)
	if code != 1 || !strings.Contains(out, "  people: unbuildable (source person (id)=(2)): ") || summaryRow(out, "people") != "1 1 1 0 0 0 0 1" {
		t.Fatalf("verify: exit %d, want 1 with one unbuildable row and summary 1 1 1 0 0 0 0 1\n%s%s", code, out, errs)
	}
	rep := readReport(t, report)
	if len(rep.Differences) != 1 || rep.Differences[0].Kind != "unbuildable" || rep.Differences[0].Source != "person (id)=(2)" {
		t.Errorf("report differences %+v, want one unbuildable person (id)=(2)", rep.Differences)
	}
	path := filepath.Join(dir, "people.jsonl")
	doc := testenv.ReadLines(t, path)[0]
	if err := os.WriteFile(path, []byte(doc+"\n"+doc+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--report", report)
	if code != 1 || !strings.Contains(out, "  people _id=1: duplicate") || summaryRow(out, "people") != "1 2 1 0 0 0 0 2" {
		t.Fatalf("verify of a file holding a document twice: exit %d, want 1 with a duplicate _id=1 and summary 1 2 1 0 0 0 0 2\n%s%s", code, out, errs)
	}
	kinds := map[string]int{}
	for _, d := range readReport(t, report).Differences {
		kinds[d.Kind]++
	}
	if kinds["duplicate"] != 1 || kinds["unbuildable"] != 1 || len(kinds) != 2 {
		t.Errorf("report differences by kind %v, want one duplicate and one unbuildable", kinds)
	}
}

// summaryLine is the line of migrate's summary for a collection.
func summaryLine(out, coll string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == coll {
			return l
		}
	}
	return ""
}

// TestVerifyShowAndDanglingFlag: --show N prints the first N differences
// and says where the rest are; dangling references alone do not change
// the exit code unless --fail-on-dangling is given.
func TestVerifyShowAndDanglingFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE stock (id integer PRIMARY KEY, symbol text NOT NULL);
CREATE TABLE holding (id integer PRIMARY KEY, stock_id integer);
INSERT INTO stock VALUES (1, 'MSFT'), (2, 'AAPL');
INSERT INTO holding SELECT n, 1 + n % 2 FROM generate_series(1, 20) n;
INSERT INTO holding VALUES (21, 99);`)
	mapping := writeMapping(t, "version: 1\ncollections:\n  - name: stocks\n    table: stock\n  - name: holdings\n    table: holding\n    fields:\n      - {column: stock_id, ref: stocks}\n")
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	dangling := `  holdings _id=21: dangling reference stockId=99: no such document in stocks`
	code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir)
	if code != 0 || !strings.Contains(out, dangling) || summaryRow(out, "holdings") != "21 21 21 0 0 0 1 0" {
		t.Fatalf("verify with a dangling reference only: exit %d, want 0, the reference listed and counted\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--fail-on-dangling")
	if code != 1 || !strings.Contains(out, dangling) || !strings.Contains(errs, "denorm: 1 dangling reference\n") {
		t.Fatalf("verify --fail-on-dangling: exit %d, want 1 naming the dangling reference\n%s%s", code, out, errs)
	}

	// 10 documents missing: --show 3 prints 3 of them.
	path := filepath.Join(dir, "holdings.jsonl")
	lines := testenv.ReadLines(t, path)
	if err := os.WriteFile(path, []byte(strings.Join(lines[10:], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		shown int
		more  string
	}{
		{nil, 11, ""}, // default 20: every difference and the dangling reference
		{[]string{"--show", "3"}, 3, "  ... more (use --report FILE for all of them, or --show N)"},
		{[]string{"--show", "3", "--report", filepath.Join(t.TempDir(), "r.json")}, 3, "  ... more in "},
	} {
		code, out, errs := runCLI(t, append([]string{"verify", "--mapping", mapping, "--source", src, "--target", dir}, tc.args...)...)
		shown := strings.Count(out, ": missing (source holding (id)=(") + strings.Count(out, ": dangling reference ")
		if code != 1 || shown != tc.shown || !strings.Contains(out, tc.more) || (tc.more == "") == strings.Contains(out, "... more") {
			t.Errorf("verify %v: exit %d, %d differences shown, want exit 1 and %d shown, then %q\n%s%s", tc.args, code, shown, tc.shown, tc.more, out, errs)
		}
	}
}

// TestVerifyWatermarkColumns: --since counts writes by the watermark
// columns --watermark-columns names; a table whose only timestamp has
// another name is not counted under the default list.
func TestVerifyWatermarkColumns(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE item (id integer PRIMARY KEY, v text NOT NULL, changed_on timestamptz NOT NULL DEFAULT '2024-01-01');
INSERT INTO item SELECT n, 'v' || n FROM generate_series(1, 5) n;`)
	mapping := writeMapping(t, "version: 1\ncollections:\n  - name: items\n    table: item\n    fields: [v]\n")
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	testenv.Exec(t, src, `UPDATE item SET v = 'changed', changed_on = '2025-06-01' WHERE id = 3`)
	since := "2025-01-01T00:00:00Z"
	base := []string{"verify", "--mapping", mapping, "--source", src, "--target", dir, "--since", since}
	code, out, errs := runCLI(t, base...)
	if code != 1 || strings.Contains(out, "source writes after") || !strings.Contains(out, "these differences are not explained by later updates") {
		t.Errorf("verify --since with the default watermark columns: exit %d, want 1, no writes counted (changed_on is not among them)\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, append(base, "--watermark-columns", "modified,changed_on")...)
	want := "source writes after " + since + ": 1 rows of public.item (changed_on up to 2025-06-01T00:00:00Z), read for items"
	if code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "some differences may be due to writes after the last sync") {
		t.Errorf("verify --watermark-columns modified,changed_on: exit %d, want 1 and %q\n%s%s", code, want, out, errs)
	}
}
