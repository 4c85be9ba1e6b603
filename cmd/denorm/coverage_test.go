package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
)

// coverageDB is a database holding extract/testdata/coverage/fixture.sql:
// rows left out of main.yaml's documents for every reason (orphans, NULL
// keys, a filter, limits, skipLast, an inheritance child, join tables,
// tables without a primary key). extract's TestCoverage holds the counts
// row by row; here the commands report them.
func coverageDB(t *testing.T) (src, mapping string) {
	t.Helper()
	return testenv.PostgresDB(t, repoPath(t, "extract", "testdata", "coverage", "fixture.sql")),
		repoPath(t, "extract", "testdata", "coverage", "main.yaml")
}

// unreachedOf maps each table of coverage to its rows in no document.
func unreachedOf(cov []mappings.TableCoverage) map[string]int64 {
	out := map[string]int64{}
	for _, c := range cov {
		out[c.Table] = c.Unreached
	}
	return out
}

// wantUnreached are main.yaml's rows in no document on the fixture.
var wantUnreached = map[string]int64{
	"public.visit": 2, "public.author": 1, "public.post": 4, "public.category": 1, "public.comment": 3,
	"public.tag": 2, "public.vote": 2, "public.note": 2, "public.event": 1, "public.book": 3,
	"public.book_author": 7, "public.chapter": 2,
}

// TestPlanCoverage: plan reports the rows that reach no document in every
// format, with an uncovered warning per table (so --fail-on warning
// fails), and its counts agree with the documents migrate writes.
func TestPlanCoverage(t *testing.T) {
	src, mapping := coverageDB(t)
	rep := planJSON(t, "--mapping", mapping, "--source", src)
	got := unreachedOf(rep.Coverage)
	for table, n := range wantUnreached {
		if got[table] != n {
			t.Errorf("plan: %s has %d rows in no document, want %d", table, got[table], n)
		}
	}
	if len(got) != len(wantUnreached) {
		t.Errorf("plan covers %d tables, want %d: %v", len(got), len(wantUnreached), got)
	}
	var total int64
	for _, n := range wantUnreached {
		total += n
	}
	if rep.Totals.Uncovered != total {
		t.Errorf("totals.uncovered %d, want %d", rep.Totals.Uncovered, total)
	}
	warned := map[string]bool{}
	for _, w := range rep.Warnings {
		if w.Rule == "uncovered" {
			warned[strings.Fields(w.Message)[6]] = true // "N of M rows of table T reach ..."
			if w.Severity != "warning" || w.Suggestion == "" {
				t.Errorf("uncovered finding: %+v", w)
			}
		}
	}
	if len(warned) != len(wantUnreached) || !warned["public.post"] {
		t.Errorf("uncovered warnings for %v, want one per table of %v", warned, wantUnreached)
	}

	code, out, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", src)
	for _, want := range []string{
		"coverage (source rows that reach a document):",
		"  public.post: 3 of 7 rows reach a document, 4 reach none",
		"    1 row: post.author_id is NULL, so they join no author row (authors.posts) (e.g. (id)=(105))",
		"    2 rows: stored in inheritance child pinned_note, and denorm reads ONLY public.note (e.g. (id)=(1), (id)=(3))",
		", 30 source rows in no document",
		"WARNING [uncovered] authors: 4 of 7 rows of table public.post reach no document:",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("plan text: exit %d, no %q\n%s%s", code, want, out, errs)
		}
	}
	code, out, errs = runCLI(t, "plan", "-q", "--mapping", mapping, "--source", src, "--format", "markdown")
	if code != 0 || !strings.Contains(out, "## Coverage") || !strings.Contains(out, "| public.comment | 5 | 2 | 3 | 2 rows: their post rows reach no document themselves (authors.posts.comments) (e.g. (id)=(1001), (id)=(1003))<br>1 row: no post row has post.id equal to their comment.post_id (authors.posts.comments) (e.g. (id)=(1004)) |") {
		t.Errorf("plan markdown: exit %d, no coverage table\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "plan", "-q", "--mapping", mapping, "--source", src, "--format", "html")
	if code != 0 || !strings.Contains(out, `<h2 id="coverage">Coverage</h2>`) || !strings.Contains(out, `<a href="#coverage">Coverage</a> (30 rows in no document)`) ||
		!strings.Contains(out, "<code>(post_id, label)=(NULL, n)</code>") {
		t.Errorf("plan html: exit %d, no coverage section\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", src, "--fail-on", "warning"); code != 1 || !strings.Contains(errs, "--fail-on warning") {
		t.Errorf("plan --fail-on warning with rows in no document: exit %d, want 1\n%s%s", code, out, errs)
	}

	// The documents hold exactly the rows coverage counts as reached (the
	// embedded posts, their comments and tags). Exit 3: the bucket row
	// with a NULL parent key is rejected.
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 3 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	var posts, comments, tags int
	for _, line := range testenv.ReadLines(t, filepath.Join(dir, "authors.jsonl")) {
		var doc struct {
			Posts []struct {
				Comments []any `json:"comments"`
				Tags     []any `json:"tags"`
			} `json:"posts"`
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		posts += len(doc.Posts)
		for _, p := range doc.Posts {
			comments += len(p.Comments)
			tags += len(p.Tags)
		}
	}
	if posts != 7-4 || comments != 5-3 || tags != 5-2 {
		t.Errorf("the documents hold %d posts, %d comments and %d tags; coverage says 3, 2 and 3", posts, comments, tags)
	}
}

// TestVerifyCoverage: verify prints the coverage and says it beside its
// result, with exit 0 unless --fail-on-uncovered; its report holds it.
// links.yaml (a lookup of the first row, relations through join tables,
// links, a view) leaves 8 rows of 4 tables out.
func TestVerifyCoverage(t *testing.T) {
	src, _ := coverageDB(t)
	mapping := repoPath(t, "extract", "testdata", "coverage", "links.yaml")
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	// The link rows the id arrays hold, from either side, are the rows
	// coverage counts as reached: 10 less 3.
	pairs := map[[2]int]bool{}
	for _, side := range []struct{ file, field string }{{"authors.jsonl", "books"}, {"books.jsonl", "authors"}} {
		for _, line := range testenv.ReadLines(t, filepath.Join(dir, side.file)) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(line), &doc); err != nil {
				t.Fatal(err)
			}
			for _, id := range doc[side.field].([]any) {
				p := [2]int{int(doc["_id"].(float64)), int(id.(float64))}
				if side.field == "authors" {
					p[0], p[1] = p[1], p[0]
				}
				pairs[p] = true
			}
		}
	}
	if len(pairs) != 10-3 {
		t.Errorf("the id arrays hold %d link rows, coverage says 7: %v", len(pairs), pairs)
	}
	reportFile := filepath.Join(t.TempDir(), "verify.json")
	code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--report", reportFile)
	for _, want := range []string{
		"coverage (source rows that reach a document):\n",
		"  public.post: 4 of 7 rows reach a document, 3 reach none\n",
		"    1 row: not the first in orderBy for any author row (authors.firstPost uses the first only) (e.g. (id)=(101))\n",
		"  public.post_view: 3 of 4 rows reach a document, 1 reach none\n",
		"    1 row: the filter of late (id <> 104) leaves them out (e.g. (id, title)=(104, c1))\n",
		"result: identical documents; 2 dangling references; 8 source rows of 4 tables reach no document (coverage above)\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("verify: exit %d, no %q\n%s%s", code, want, out, errs)
		}
	}
	data, err := os.ReadFile(reportFile)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Identical bool                     `json:"identical"`
		Coverage  []mappings.TableCoverage `json:"coverage"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if got := unreachedOf(rep.Coverage); !rep.Identical || got["public.post"] != 3 || got["public.vote"] != 1 || got["public.book_author"] != 3 || got["public.post_view"] != 1 || len(got) != 6 {
		t.Errorf("verify report: identical %v, coverage %v", rep.Identical, got)
	}
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--fail-on-uncovered")
	if code != 1 || !strings.Contains(errs, "--fail-on-uncovered: 8 source rows reach no document (listed under coverage)") {
		t.Errorf("verify --fail-on-uncovered: exit %d, want 1\n%s%s", code, out, errs)
	}
	// --collections and --limit do not change the coverage: it is the
	// whole mapping's.
	code, out, errs = runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir, "--collections", "books", "--limit", "1")
	if code != 1 || !strings.Contains(out, "8 source rows of 4 tables reach no document") {
		t.Errorf("verify --collections books --limit 1: exit %d (books holds more than 1 document)\n%s%s", code, out, errs)
	}
}

// TestMigrateFailOnUncovered: with --fail-on-uncovered, migrate counts the
// rows that would reach no document before anything is written, and
// refuses with the counts per table (exit 1, no target written); when
// every row reaches a document it migrates.
func TestMigrateFailOnUncovered(t *testing.T) {
	src, mapping := coverageDB(t)
	dir := filepath.Join(t.TempDir(), "out")
	summary := filepath.Join(t.TempDir(), "summary.json")
	code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir, "--fail-on-uncovered", "--summary-file", summary)
	for _, want := range []string{
		"--fail-on-uncovered: 30 source rows of 12 tables would reach no document, so nothing was written",
		"  public.visit: 4 of 6 rows reach a document, 2 reach none\n",
		"    1 row: among the last 1 of their parent, which skipLast leaves to a subset in the parent, and no subset holds them (visits) (e.g. (id)=(5))\n",
		"    1 row: bucket parent key visit.author_id is NULL: migrate rejects these rows (visits) (e.g. (id)=(6))\n",
		"  public.tag: 3 of 5 rows reach a document, 2 reach none\n",
	} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("migrate --fail-on-uncovered: exit %d, want 1 and %q\n%s%s", code, want, out, errs)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("migrate --fail-on-uncovered refused, yet the target exists: %v", err)
	}
	if data, err := os.ReadFile(summary); err != nil || !strings.Contains(string(data), "--fail-on-uncovered") {
		t.Errorf("the summary file does not record the refusal: %v\n%s", err, data)
	}

	// Every row reaches a document: the run goes on.
	full := writeMapping(t, `version: 1
collections:
  - name: authors
    table: author
  - name: posts
    table: post
`)
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", full, "--source", src, "--target", dir, "--fail-on-uncovered"); code != 0 {
		t.Fatalf("migrate --fail-on-uncovered, every row covered: exit %d\n%s%s", code, out, errs)
	}
	if n := len(testenv.ReadLines(t, filepath.Join(dir, "posts.jsonl"))); n != 7 {
		t.Errorf("%d posts written, want 7", n)
	}
	code, out, errs = runCLI(t, "verify", "--mapping", full, "--source", src, "--target", dir)
	if code != 0 || !strings.Contains(out, "coverage: every source row reaches a document (10 rows of 2 tables)\n") || !strings.Contains(out, "result: identical\n") {
		t.Errorf("verify, every row covered: exit %d\n%s%s", code, out, errs)
	}
}
