package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
)

// adviseMapping runs advise on src and returns the mapping file's path
// and text.
func adviseMapping(t *testing.T, src string, args ...string) (string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "advised.yaml")
	code, stdout, stderr := runCLI(t, append([]string{"advise", "-q", "--source", src, "--output", out}, args...)...)
	if code != 0 {
		t.Fatalf("advise exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, string(data)
}

// validateAndMigrate checks the drafted mapping against the database and
// migrates it into a directory; it returns the documents per collection.
func validateAndMigrate(t *testing.T, mapping, src string) map[string]int {
	t.Helper()
	if code, out, errs := runCLI(t, "validate", "--mapping", mapping, "--source", src); code != 0 {
		t.Fatalf("validate exit %d\n%s%s", code, out, errs)
	}
	dir := t.TempDir()
	code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir)
	if code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	docs := map[string]int{}
	for _, f := range files {
		docs[strings.TrimSuffix(filepath.Base(f), ".jsonl")] = len(testenv.ReadLines(t, f))
	}
	return docs
}

// TestAdviseSeed drafts a mapping for seed.sql: it validates, migrates
// without errors, and makes the choices the modeling rules call for.
func TestAdviseSeed(t *testing.T) {
	src := seedDB(t)
	testenv.Exec(t, src, "ANALYZE")
	mapping, text := adviseMapping(t, src)
	docs := validateAndMigrate(t, mapping, src)
	want := map[string]int{"people": 2, "posts": 3, "comments": 4, "stocks": 2, "publishers": 1, "books": 5, "authors": 2}
	for coll, n := range want {
		if docs[coll] != n {
			t.Errorf("collection %s: %d documents, want %d (all: %v)", coll, docs[coll], n, docs)
		}
	}
	if len(docs) != len(want) {
		t.Errorf("collections %v, want %v", docs, want)
	}
	for _, choice := range []string{
		// lookup tables become values
		"{name: type, column: \"type.name\"}   # name from lookup table contact_detail_type",
		"# contact_detail_type: lookup table (3 rows",
		// bounded one-to-few children are embedded, with the numbers
		"# contact_detail: embedded in person: bounded one-to-few (children per parent avg 1.5, p99",
		"- name: contactDetails\n        embed:\n          table: contact_detail",
		"- name: holdings\n        embed:\n          table: holding",
		"{column: stock_id, ref: stocks}",
		// unbounded children with a time column: buckets + recent subset
		"# comment: unbounded children of post (children per parent avg 126.0, p99 250, max 250;",
		"bucket: {by: [post_id], size: 100, orderBy: [created_at, id], items: comments}",
		"- name: recentComments",
		"limit: 3",
		// join table: id arrays, no collection
		"- table: book_author",
		"{collection: authors, column: author_id, field: books}",
		"{collection: books, column: book_id, field: authors}",
		// referenced elsewhere: its own collection
		"# book: referenced by other tables (book_author, review)",
		"{column: pub_id, ref: publishers}",
	} {
		if !strings.Contains(text, choice) {
			t.Errorf("drafted mapping lacks %q", choice)
		}
	}
	if strings.Contains(text, "name: bookAuthors") || strings.Contains(text, "table: book_author\n    fields") {
		t.Error("the join table book_author is copied as a collection")
	}
	if t.Failed() {
		t.Logf("drafted mapping:\n%s", text)
	}
}

// TestAdviseHotChildNotEmbedded: a bounded child table that changes often
// is referenced (its own collection), not embedded, and the comment gives
// the update figures.
func TestAdviseHotChildNotEmbedded(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE account (id integer PRIMARY KEY, owner text NOT NULL);
CREATE TABLE balance (id integer PRIMARY KEY, account_id integer NOT NULL REFERENCES account(id), amount bigint NOT NULL);
INSERT INTO account SELECT n, 'o' || n FROM generate_series(1, 50) n;
INSERT INTO balance SELECT n, n, 0 FROM generate_series(1, 50) n;`)
	for i := 0; i < 5; i++ {
		testenv.Exec(t, src, "UPDATE balance SET amount = amount + 1")
	}
	// statistics reach pg_stat_user_tables when the backend reports them
	deadline := time.Now().Add(10 * time.Second)
	var text string
	for {
		_, text = adviseMapping(t, src)
		if strings.Contains(text, "250 updates") || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(text, "# balance: changes often (50 rows, 250 updates") || !strings.Contains(text, "- name: balances") {
		t.Errorf("the fast-changing child is not its own collection with the reason:\n%s", text)
	}
	if strings.Contains(text, "embed:") {
		t.Errorf("the fast-changing child is embedded:\n%s", text)
	}
}

// TestAdvisePagila drafts a mapping for Pagila: it validates and migrates
// without errors; join tables become id arrays, small lookup tables values.
// Then plan on the drafted mapping counts what migrate writes.
func TestAdvisePagila(t *testing.T) {
	src := pagilaDB(t)
	mapping, text := adviseMapping(t, src, "--numeric", "double") // FerretDB has no Decimal128
	docs := validateAndMigrate(t, mapping, src)
	for coll, n := range map[string]int{"films": 1000, "actors": 200, "customers": 599, "rentals": 16044, "payments": 16049} {
		if docs[coll] != n {
			t.Errorf("collection %s: %d documents, want %d (all: %v)", coll, docs[coll], n, docs)
		}
	}
	for _, choice := range []string{
		"- table: film_actor",
		"{collection: actors, column: actor_id, field: films}",
		"{collection: films, column: film_id, field: actors}",
		"- table: film_category",
		"{collection: films, column: film_id, field: categories}",
		"-> no id array (unbounded or not a collection)",
		"{name: language, column: \"language.name\"}",
		"{name: country, column: \"country.country\"}",
		"{column: customer_id, ref: customers}",
	} {
		if !strings.Contains(text, choice) {
			t.Errorf("drafted mapping lacks %q", choice)
		}
	}
	for _, bad := range []string{"name: filmActors", "name: filmCategories", "name: languages", "name: countries"} {
		if strings.Contains(text, bad) {
			t.Errorf("drafted mapping has %q: a join or lookup table copied as a collection", bad)
		}
	}

	// plan on the drafted mapping counts what migrate wrote (to a
	// directory: reading 41k documents back from FerretDB, at 2-3k a
	// second, would slow the suite; sizes in the server are checked on the
	// hand-written Pagila mapping below and on every example).
	rep := planJSON(t, "--mapping", mapping, "--source", src)
	if len(rep.Collections) != len(docs) {
		t.Errorf("plan reports %d collections, migrate wrote %d", len(rep.Collections), len(docs))
	}
	for _, c := range rep.Collections {
		if int64(docs[c.Name]) != c.Documents {
			t.Errorf("%s: plan counts %d documents, migrate wrote %d", c.Name, c.Documents, docs[c.Name])
		}
		t.Logf("%s: %d documents, p50 %d, max %d bytes (%s)", c.Name, c.Documents, c.Size.P50, c.Size.Max, c.Largest.Source)
	}
	for _, w := range rep.Warnings {
		t.Logf("warning %s [%s] %s: %s", w.Severity, w.Rule, w.Collection, w.Message)
	}
	if t.Failed() {
		t.Logf("drafted mapping:\n%s", text)
	}

	// The hand-written Pagila example: plan's counts and largest sizes are
	// what migrate stores in the server.
	t.Run("example", func(t *testing.T) {
		planMatchesServer(t, filepath.Join(testenv.Root(t), "mappings", "examples", "pagila.yaml"), src)
	})
}
