package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/transform/report"
)

// planJSON runs plan with --format json and decodes the report.
func planJSON(t *testing.T, args ...string) *report.Report {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plan.json")
	code, stdout, stderr := runCLI(t, append([]string{"plan", "-q", "--format", "json", "--output", out}, args...)...)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	validateReport(t, data)
	var r report.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, data)
	}
	return &r
}

// validateReport checks a JSON report against report.schema.json.
func validateReport(t *testing.T, data []byte) {
	t.Helper()
	sch, err := jsonschema.UnmarshalJSON(bytes.NewReader(report.Schema))
	if err != nil {
		t.Fatalf("report schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("report.schema.json", sch); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatalf("report schema: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("plan JSON: %v", err)
	}
	if err := s.Validate(doc); err != nil {
		t.Errorf("plan JSON does not follow report.schema.json: %v", err)
	}
}

// targetFigures returns, per collection of db, the number of documents and
// the largest raw BSON document's size and _id, as the server returns them.
func targetFigures(t *testing.T, db *mongo.Database) (counts map[string]int64, largest map[string]int, sizeOf map[string]map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	counts, largest, sizeOf = map[string]int64{}, map[string]int{}, map[string]map[string]int{}
	for _, n := range names {
		if n == load.RecordCollection {
			continue // denorm's own records (checkpoints, owners), not the mapping's
		}
		cur, err := db.Collection(n).Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		sizeOf[n] = map[string]int{}
		for cur.Next(ctx) {
			counts[n]++
			largest[n] = max(largest[n], len(cur.Current))
			id, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: cur.Current.Lookup("_id")}}, false, false)
			if err != nil {
				t.Fatal(err)
			}
			sizeOf[n][string(id)] = len(cur.Current)
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		cur.Close(ctx)
	}
	return counts, largest, sizeOf
}

// TestPlanMatchesMigrate runs plan and migrate on every example mapping:
// plan's document counts equal what migrate writes, and the largest
// document's size equals that document's size in the target.
func TestPlanMatchesMigrate(t *testing.T) {
	src := seedDB(t)
	for _, name := range examples(t) { // the examples that run on seed.sql
		mapping := example(t, name)
		t.Run(name, func(t *testing.T) { planMatchesServer(t, mapping, src) })
	}
}

// planMatchesServer plans mapping on src, migrates it into a fresh
// database of the test server and checks plan's figures against what is
// stored there: the document counts, and the size of the largest document
// (plan's largest is the target's largest, byte for byte).
func planMatchesServer(t *testing.T, mapping, src string) {
	t.Helper()
	rep := planJSON(t, "--mapping", mapping, "--source", src)
	uri, db := testenv.MongoDB(t)
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", uri); code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	counts, largest, sizeOf := targetFigures(t, db)
	planned := map[string]int64{}
	plannedMax := map[string]int{}
	plannedID := map[string]string{}
	for _, c := range rep.Collections {
		planned[c.Name] += c.Documents
		if c.Documents != c.Seen || rep.Estimated {
			t.Errorf("%s: a full plan must be exact: documents %d, seen %d, estimated %v", c.Name, c.Documents, c.Seen, rep.Estimated)
		}
		if c.Largest != nil && c.Size.Max > plannedMax[c.Name] {
			plannedMax[c.Name] = c.Size.Max
			plannedID[c.Name] = `{"v":` + c.Largest.ID + `}`
		}
	}
	if len(planned) != len(counts) {
		t.Errorf("plan reports collections %v, migrate wrote %v", planned, counts)
	}
	for name, n := range planned {
		if counts[name] != n {
			t.Errorf("%s: plan counts %d documents, migrate wrote %d", name, n, counts[name])
		}
		if plannedMax[name] != largest[name] {
			t.Errorf("%s: plan's largest document is %d bytes, the target's largest is %d bytes", name, plannedMax[name], largest[name])
		}
		if got, ok := sizeOf[name][plannedID[name]]; !ok || got != plannedMax[name] {
			t.Errorf("%s: plan's largest document %s is %d bytes; in the target it is %d bytes (found %v)", name, plannedID[name], plannedMax[name], got, ok)
		}
		t.Logf("%s: %d documents, largest %d bytes (%s)", name, n, plannedMax[name], plannedID[name])
	}
}

// TestPlanWritesNothing gives plan a target through the environment and
// proves it wrote nothing there: the server database stays empty and no
// output directory appears; --target itself is refused.
func TestPlanWritesNothing(t *testing.T) {
	src := seedDB(t)
	uri, db := testenv.MongoDB(t)
	t.Setenv("DENORM_TARGET", uri)
	dir := t.TempDir()
	t.Chdir(dir) // migrate's default directory target would appear here
	mapping := example(t, "blog")
	code, out, errs := runCLI(t, "plan", "--mapping", mapping, "--source", src)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "posts") || !strings.Contains(out, "comments") {
		t.Errorf("the text report does not name the collections:\n%s", out)
	}
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Errorf("plan created collections %v in the target", names)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("plan wrote files in the working directory: %v", entries)
	}
	code, _, errs = runCLI(t, "plan", "--mapping", mapping, "--source", src, "--target", uri)
	if code != exitUsage || !strings.Contains(errs, "unknown flag: --target") {
		t.Errorf("plan --target: exit %d, %q; want a usage error", code, errs)
	}
	names, _ = db.ListCollectionNames(context.Background(), bson.D{})
	if len(names) != 0 {
		t.Errorf("plan created collections %v in the target", names)
	}
}

// TestPlanUnboundedEmbed embeds 200,000 comments in one post: plan predicts
// the size-limit breach, names the post, and warns that the relation is
// unbounded.
func TestPlanUnboundedEmbed(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 rows: skipped in the short suite")
	}
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE post (id integer PRIMARY KEY, name text NOT NULL);
CREATE TABLE comment (id integer PRIMARY KEY, post_id integer NOT NULL REFERENCES post(id), author text NOT NULL, comment text NOT NULL);
CREATE INDEX ON comment(post_id);
INSERT INTO post VALUES (1, 'small'), (2, 'viral'), (3, 'quiet');
INSERT INTO comment SELECT n, 2, 'user' || n % 1000, repeat('lorem ipsum ', 8) || n FROM generate_series(1, 200000) n;
INSERT INTO comment SELECT 200000 + n, 1, 'anon', 'nice' FROM generate_series(1, 3) n;
ANALYZE;`)
	mapping := writeMapping(t, `version: 1
collections:
  - name: posts
    table: post
    fields:
      - name
      - name: comments
        embed:
          table: comment
          join: {post_id: id}
          orderBy: id
          fields: [id, author, comment]
`)
	rep := planJSON(t, "--mapping", mapping, "--source", src)
	c := rep.Collections[0]
	if c.Documents != 3 {
		t.Errorf("documents = %d, want 3", c.Documents)
	}
	if c.TooLarge.Count != 1 || len(c.TooLarge.Docs) != 1 {
		t.Fatalf("too large = %+v, want the one viral post", c.TooLarge)
	}
	d := c.TooLarge.Docs[0]
	if d.Source != "post (id)=(2)" || d.ID != "2" || d.Size <= 16<<20 {
		t.Errorf("too large document = %+v, want post (id)=(2) over 16 MiB", d)
	}
	if len(c.Arrays) == 0 || c.Arrays[0].Path != "comments" || c.Arrays[0].Max != 200000 || c.Arrays[0].MaxSource != "post (id)=(2)" {
		t.Errorf("largest arrays = %+v", c.Arrays)
	}
	var sizeErr, unbounded bool
	for _, w := range rep.Warnings {
		if w.Rule == "size-limit" && w.Severity == "error" && strings.Contains(w.Message, "post (id)=(2)") {
			sizeErr = true
		}
		if w.Rule == "unbounded-embed" && w.Path == "comments" && strings.Contains(w.Message, "unbounded") && strings.Contains(w.Message, "200000") {
			unbounded = true
		}
	}
	if !sizeErr || !unbounded {
		t.Errorf("warnings lack the size-limit error (%v) or the unbounded-embed warning (%v): %+v", sizeErr, unbounded, rep.Warnings)
	}
	if c.Largest == nil || !c.Largest.Truncated || len(c.Largest.JSON) > report.SampleChars+3 {
		t.Errorf("largest sample is not truncated sensibly: %+v", c.Largest)
	}
	// Cosmos DB's 2 MiB limit, through the text report.
	code, out, errs := runCLI(t, "plan", "--mapping", mapping, "--source", src, "--max-doc-size", "2097152")
	if code != 0 {
		t.Fatalf("plan exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"OVER THE SIZE LIMIT: 1 document\n", "post (id)=(2)", "[unbounded-embed]", "ERROR [size-limit]"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanSample reads a sample: counts are estimates near the truth and
// the report says so.
func TestPlanSample(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `CREATE TABLE item (id integer PRIMARY KEY, v text);
INSERT INTO item SELECT n, 'x' || n FROM generate_series(1, 20000) n;`)
	mapping := writeMapping(t, "version: 1\ncollections:\n  - name: items\n    table: item\n")
	rep := planJSON(t, "--mapping", mapping, "--source", src, "--sample", "10")
	c := rep.Collections[0]
	if !rep.Estimated || rep.SamplePercent != 10 {
		t.Errorf("estimated %v, sample %v", rep.Estimated, rep.SamplePercent)
	}
	if c.Seen < 1500 || c.Seen > 2500 {
		t.Errorf("read %d documents of 20000 at 10%%, want about 2000", c.Seen)
	}
	if c.Documents < 17000 || c.Documents > 23000 {
		t.Errorf("estimated %d documents, want about 20000", c.Documents)
	}
	code, out, _ := runCLI(t, "plan", "--mapping", mapping, "--source", src, "--sample", "10")
	if code != 0 || !strings.Contains(out, "estimates from a 10% sample") {
		t.Errorf("text report does not say figures are estimates (exit %d):\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "plan", "--mapping", mapping, "--source", src, "--sample", "0"); code != exitUsage {
		t.Errorf("--sample 0: exit %d, want %d", code, exitUsage)
	}
}

// TestPlanDanglingReferences: reference values with no row behind them are
// counted and named with their source rows; valid ones are not.
func TestPlanDanglingReferences(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE stock (id integer PRIMARY KEY, symbol text NOT NULL);
CREATE TABLE holding (id integer PRIMARY KEY, stock_id integer, tags integer[]);
INSERT INTO stock VALUES (1, 'MSFT'), (2, 'AAPL');
INSERT INTO holding SELECT n, CASE WHEN n % 500 = 0 THEN 900 + n ELSE 1 + n % 2 END, NULL FROM generate_series(1, 2500) n;
INSERT INTO holding VALUES (9999, NULL, NULL);`)
	mapping := writeMapping(t, `version: 1
collections:
  - name: stocks
    table: stock
  - name: holdings
    table: holding
    fields:
      - {column: stock_id, ref: stocks}
  - name: bySymbol
    table: stock
    fields:
      - {column: symbol, ref: stocks}
  - name: stockHolders
    table: stock
    fields:
      - name: holders
        ids: {table: holding, join: {stock_id: id}}
        ref: holdings
`)
	rep := planJSON(t, "--mapping", mapping, "--source", src, "--batch-size", "300")
	h := rep.Collections[1]
	if len(h.References) != 1 {
		t.Fatalf("references = %+v", h.References)
	}
	r := h.References[0]
	if r.Path != "stockId" || r.Collection != "stocks" || r.Table != "stock" || r.Checked != 2500 || r.Dangling != 5 {
		t.Errorf("reference report = %+v; want 2500 checked (NULL left out), 5 dangling", r)
	}
	if len(r.Examples) != 5 || r.Examples[0].Value != "1400" || r.Examples[0].Source != "holding (id)=(500)" {
		t.Errorf("examples = %+v", r.Examples)
	}
	// text values against integer keys: not checked, with the reason, and
	// the snapshot stays usable for the next collection
	if sr := rep.Collections[2].References; len(sr) != 1 || !strings.Contains(sr[0].Skipped, "do not convert to the key column's type") {
		t.Errorf("symbol references = %+v", sr)
	}
	ids := rep.Collections[3].References
	if len(ids) != 1 || ids[0].Path != "holders[]" || ids[0].Checked != 2495 || ids[0].Dangling != 0 {
		t.Errorf("id array references = %+v; want 2495 checked, none dangling", ids)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || w.Rule == "dangling-reference" && w.Collection == "holdings" && strings.Contains(w.Message, "5 of 2500")
	}
	if !found {
		t.Errorf("no dangling-reference warning: %+v", rep.Warnings)
	}
}

// TestPlanFailOn: --fail-on gates a pipeline: exit 1 when the report has
// findings of that severity or worse, after writing the report; 0
// otherwise. The report's header and counts read as English.
func TestPlanFailOn(t *testing.T) {
	src := seedDB(t)
	blog := example(t, "blog")
	// The seed's blog has no error and no warning at the default limit.
	code, out, errs := runCLI(t, "plan", "-q", "--mapping", blog, "--source", src, "--fail-on", "warning")
	if code != 0 {
		t.Fatalf("--fail-on warning without warnings: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "))") || !strings.Contains(out, "(size limit 16.0 MiB; figures are exact: every row read)") {
		t.Errorf("text header:\n%s", strings.SplitN(out, "\n", 2)[0])
	}
	if !strings.Contains(out, "total: 7 documents,") || !strings.Contains(out, "== posts (documents from public.post): 3 documents from 3 rows") {
		t.Errorf("text report totals or counts:\n%s", out)
	}
	// A 2 KB limit: posts over it are errors.
	code, out, errs = runCLI(t, "plan", "-q", "--mapping", blog, "--source", src, "--max-doc-size", "2000", "--fail-on", "error")
	if code != 1 || !strings.Contains(errs, "--fail-on error: the plan has") || !strings.Contains(out, "ERROR [size-limit]") {
		t.Errorf("--fail-on error with documents over the limit: exit %d, want 1 after the report\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "plan", "-q", "--mapping", blog, "--source", src, "--fail-on", "info"); code != 2 || !strings.Contains(errs, "--fail-on must be error or warning") {
		t.Errorf("--fail-on info: exit %d, want 2\n%s", code, errs)
	}
}

// TestPlanProgress: plan shows progress like migrate: a line per
// collection when it is done (lines mode), rows and pages apart for a
// bucket collection.
func TestPlanProgress(t *testing.T) {
	src := seedDB(t)
	code, _, errs := runCLI(t, "plan", "--progress", "lines", "--mapping", example(t, "blog"), "--source", src)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s", code, errs)
	}
	if !regexp.MustCompile(`(?m)^posts: done 3/\d+ docs, `).MatchString(errs) || !regexp.MustCompile(`(?m)^comments: done 252/\d+ rows in 4 pages, `).MatchString(errs) {
		t.Errorf("plan's progress lines:\n%s", errs)
	}
}

// TestPlanModelingWarnings: plan warns of an id array that grows without
// bound (unbounded-ids), of a field copied from a table that changes often
// (hot-copy), and suggests copying fields next to a reference to a table
// that rarely changes (reference-read-with-parent, info).
func TestPlanModelingWarnings(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE language (id integer PRIMARY KEY, name text NOT NULL);
CREATE TABLE publisher (id integer PRIMARY KEY, name text NOT NULL);
CREATE TABLE book (id integer PRIMARY KEY, title text NOT NULL, pub_id integer REFERENCES publisher(id), lang_id integer REFERENCES language(id));
INSERT INTO language VALUES (1, 'English'), (2, 'French'), (3, 'German');
INSERT INTO publisher VALUES (1, 'Big'), (2, 'Small');
INSERT INTO book SELECT n, 'Book ' || n, CASE WHEN n <= 150 THEN 1 ELSE 2 END, 1 + n % 3 FROM generate_series(1, 155) n;
ANALYZE;`)
	// 40 updates of each language row (120 in all, 40 per row), reported
	// to the statistics when the statement ends.
	testenv.Exec(t, src, strings.Repeat("UPDATE language SET name = name;\n", 40)+"SELECT pg_stat_force_next_flush();")
	mapping := writeMapping(t, `version: 1
collections:
  - name: publishers
    table: publisher
    fields:
      - name
      - name: books
        ids: {table: book, join: {pub_id: id}}
        ref: books
  - name: books
    table: book
    lookups:
      - {name: lang, table: language, join: {id: lang_id}}
    fields:
      - title
      - {name: language, column: lang.name}
      - {column: pub_id, ref: publishers}
`)
	rep := planJSON(t, "--mapping", mapping, "--source", src)
	type key struct{ rule, coll, path, severity string }
	got := map[key]string{}
	for _, w := range rep.Warnings {
		got[key{w.Rule, w.Collection, w.Path, w.Severity}] = w.Message
	}
	for k, want := range map[key]string{
		{"unbounded-ids", "publishers", "books", "warning"}:      "id array books grows without bound: up to 150 ids per document",
		{"hot-copy", "books", "language", "warning"}:             "field language copies from table public.language, which changes often: 120 updates on 3 rows (40.0 per row)",
		{"reference-read-with-parent", "books", "pubId", "info"}: "pubId references publishers (table public.publisher), which rarely changes (0 updates on 2 rows)",
	} {
		if msg, ok := got[k]; !ok || !strings.Contains(msg, want) {
			t.Errorf("no %s %s for %s.%s saying %q; warnings: %+v", k.severity, k.rule, k.coll, k.path, want, rep.Warnings)
		}
	}
	if len(rep.Warnings) != 3 {
		t.Errorf("%d warnings, want these 3: %+v", len(rep.Warnings), rep.Warnings)
	}

	// A reference whose publisher's name is already copied beside it (as
	// advise drafts line items) gets no suggestion to copy it (issue 28:
	// plan agrees with advise's drafts).
	mapping = writeMapping(t, `version: 1
collections:
  - name: publishers
    table: publisher
    fields: [name]
  - name: books
    table: book
    lookups:
      - {name: pub, table: publisher, join: {id: pub_id}}
    fields:
      - title
      - {column: pub_id, ref: publishers}
      - {name: publisherName, column: pub.name}
`)
	for _, w := range planJSON(t, "--mapping", mapping, "--source", src).Warnings {
		if w.Rule == "reference-read-with-parent" {
			t.Errorf("plan suggests copying what the mapping already copies beside the reference: %+v", w)
		}
	}
}

// TestPlanShowsOnDelete: plan says, per collection, what sync does with
// the documents of deleted roots when the mapping keeps them (text and
// JSON), and nothing for the collections that delete them.
func TestPlanShowsOnDelete(t *testing.T) {
	src := seedDB(t)
	mapping := withOnDelete(t, example(t, "hybrid"), map[string]string{"authors": "deletedAt", "books": "ignore"})
	code, out, errs := runCLI(t, "plan", "--mapping", mapping, "--source", src)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"on delete: tombstone (sync keeps the document of a deleted root and sets deletedAt to the deletion time)",
		"on delete: ignore (sync keeps the document of a deleted root as it was)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan's text lacks %q:\n%s", want, out)
		}
	}
	rep := planJSON(t, "--mapping", mapping, "--source", src)
	got := map[string]string{}
	for _, c := range rep.Collections {
		got[c.Name] = c.OnDelete + " " + c.Tombstone
	}
	if want := map[string]string{"authors": "tombstone deletedAt", "books": "ignore "}; !maps.Equal(got, want) {
		t.Errorf("plan --format json: onDelete %v, want %v", got, want)
	}
}
