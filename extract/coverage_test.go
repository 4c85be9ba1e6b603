package extract

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/coverage/*.golden.sql")

// coveragePlan resolves testdata/coverage/<name>.yaml against db in snap.
func coveragePlan(t *testing.T, ctx context.Context, snap *Snapshot, name string) *mappings.Plan {
	t.Helper()
	f, err := mappings.Load(filepath.Join("testdata", "coverage", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return resolveIn(t, ctx, snap, f)
}

// openSnapshot opens a snapshot of db, closed when the test ends.
func openSnapshot(t *testing.T, ctx context.Context, db string) (*Source, *Snapshot) {
	t.Helper()
	src, err := ParseSource(db)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close(context.Background()) })
	return src, snap
}

// resolveIn resolves f against the catalog snap sees.
func resolveIn(t *testing.T, ctx context.Context, snap *Snapshot, f *mappings.File) *mappings.Plan {
	t.Helper()
	cat, err := ReadCatalog(ctx, snap, f.Tables())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := mappings.Resolve(f, cat)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// coverageText shows coverage one table a line, then one line per reason:
// "public.post 7 rows, 4 in no document" / "  no-parent 1 (authors.posts) (id)=(106)".
func coverageText(cov []mappings.TableCoverage) string {
	var b strings.Builder
	for _, c := range cov {
		fmt.Fprintf(&b, "%s %d rows, %d in no document\n", c.Table, c.Rows, c.Unreached)
		if c.Reached+c.Unreached != c.Rows {
			fmt.Fprintf(&b, "  (reached %d + unreached %d != rows)\n", c.Reached, c.Unreached)
		}
		for _, r := range c.Reasons {
			child := ""
			if r.Child != "" {
				child = " in " + r.Child
			}
			fmt.Fprintf(&b, "  %s%s %d (%s) %s\n", r.Reason, child, r.Rows, r.Node, strings.Join(r.Samples, " "))
		}
	}
	return b.String()
}

// TestCoverage: every table a mapping reads (roots, buckets with skipLast,
// embeds with and without limits, lookups, aggregates, relations through a
// join table and the join table itself, an inheritance parent, a
// partitioned table, tables and a view without a primary key, link join
// tables) is counted, each row left out with its reason, against data
// written so that each reason occurs.
func TestCoverage(t *testing.T) {
	db := testenv.PostgresDB(t, "testdata/coverage/fixture.sql")
	ctx := context.Background()
	_, snap := openSnapshot(t, ctx, db)
	for _, tc := range []struct{ mapping, want string }{
		{"main", `public.visit 6 rows, 2 in no document
  held-back 1 (visits) (id)=(5)
  null-key 1 (visits) (id)=(6)
public.author 3 rows, 1 in no document
  filtered 1 (authors) (id)=(3)
public.post 7 rows, 4 in no document
  beyond-limit 1 (authors.posts) (id)=(100)
  no-parent 1 (authors.posts) (id)=(106)
  null-key 1 (authors.posts) (id)=(105)
  parent-unreached 1 (authors.posts) (id)=(104)
public.category 3 rows, 1 in no document
  no-parent 1 (authors.posts.cat) (id)=(12)
public.comment 5 rows, 3 in no document
  parent-unreached 2 (authors.posts.comments) (id)=(1001) (id)=(1003)
  no-parent 1 (authors.posts.comments) (id)=(1004)
public.tag 5 rows, 2 in no document
  beyond-limit 1 (authors.posts.tags) (post_id, label)=(102, x)
  null-key 1 (authors.posts.tags) (post_id, label)=(NULL, n)
public.vote 4 rows, 2 in no document
  parent-unreached 2 (authors.posts.votes) (id)=(2) (id)=(4)
public.note 4 rows, 2 in no document
  inheritance-child in pinned_note 2 (authors.notes) (id)=(1) (id)=(3)
public.event 3 rows, 1 in no document
  parent-unreached 1 (authors.events) (id, author_id)=(15, 3)
public.book 5 rows, 3 in no document
  filtered 1 (authors.books) (id)=(501)
  not-linked 1 (authors.books) (id)=(502)
  parent-unreached 1 (authors.books) (id)=(503)
public.book_author 10 rows, 7 in no document
  no-parent 2 (authors.books) (author_id, book_id, role)=(98, 778, writer) (author_id, book_id, role)=(99, 500, writer)
  no-related-row 2 (authors.books) (author_id, book_id, role)=(1, 777, writer) (author_id, book_id, role)=(1, NULL, editor)
  filtered 1 (authors.books) (author_id, book_id, role)=(2, 501, ghost)
  null-key 1 (authors.books) (author_id, book_id, role)=(NULL, 500, writer)
  parent-unreached 1 (authors.books) (author_id, book_id, role)=(3, 503, writer)
public.chapter 5 rows, 2 in no document
  beyond-limit 1 (authors.books.chapters) (id)=(5)
  parent-unreached 1 (authors.books.chapters) (id)=(4)
`},
		{"links", `public.author 3 rows, 0 in no document
public.post 7 rows, 3 in no document
  beyond-limit 1 (authors.firstPost) (id)=(101)
  no-parent 1 (authors.firstPost) (id)=(106)
  null-key 1 (authors.firstPost) (id)=(105)
public.vote 4 rows, 1 in no document
  no-parent 1 (authors.voteIds) (id)=(4)
public.book_author 10 rows, 3 in no document
  no-parent 1 (authors.books) (author_id, book_id, role)=(98, 778, writer)
  null-id 1 (authors.books) (author_id, book_id, role)=(1, NULL, editor)
  null-key 1 (authors.books) (author_id, book_id, role)=(NULL, 500, writer)
public.book 5 rows, 0 in no document
public.post_view 4 rows, 1 in no document
  filtered 1 (late) (id, title)=(104, c1)
`},
		{"subsets", `public.author 3 rows, 0 in no document
public.book 5 rows, 3 in no document
  filtered-or-beyond-limit 2 (authors.firstBook) (id)=(501) (id)=(504)
  not-linked 1 (authors.firstBook) (id)=(502)
public.book_author 10 rows, 7 in no document
  filtered-or-beyond-limit 2 (authors.firstBook) (author_id, book_id, role)=(1, 504, writer) (author_id, book_id, role)=(2, 501, ghost)
  no-parent 2 (authors.firstBook) (author_id, book_id, role)=(98, 778, writer) (author_id, book_id, role)=(99, 500, writer)
  no-related-row 2 (authors.firstBook) (author_id, book_id, role)=(1, 777, writer) (author_id, book_id, role)=(1, NULL, editor)
  null-key 1 (authors.firstBook) (author_id, book_id, role)=(NULL, 500, writer)
public.post 7 rows, 4 in no document
  beyond-limit 2 (authors.postIds) (id)=(100) (id)=(101)
  no-parent 1 (authors.postIds) (id)=(106)
  null-key 1 (authors.postIds) (id)=(105)
public.visit 6 rows, 1 in no document
  null-key 1 (visits) (id)=(6)
`},
	} {
		t.Run(tc.mapping, func(t *testing.T) {
			plan := coveragePlan(t, ctx, snap, tc.mapping)
			jit, err := queryText(ctx, snap, "SELECT current_setting('jit')")
			if err != nil {
				t.Fatal(err)
			}
			cov, err := Coverage(ctx, snap, plan)
			if err != nil {
				t.Fatal(err)
			}
			if after, err := queryText(ctx, snap, "SELECT current_setting('jit')"); err != nil || after != jit {
				t.Errorf("jit is %q after Coverage, %q before (%v): the snapshot's setting must be put back", after, jit, err)
			}
			if got := coverageText(cov); got != tc.want {
				t.Errorf("coverage:\n%s\nwant:\n%s", got, tc.want)
			}
			sql, err := CoverageSQL(ctx, snap, plan)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "coverage", tc.mapping+".golden.sql")
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(sql+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run the test with -update to write it)", err)
			}
			if sql+"\n" != string(want) {
				t.Errorf("the statement changed; review it and rerun with -update:\n%s", sql)
			}
			// Set-wise: no subplan run per row, no nested loop over a
			// whole table.
			plan2 := explain(t, ctx, snap.tx, sql)
			if strings.Contains(plan2, "SubPlan") {
				t.Errorf("the statement runs a subplan per row:\n%s", plan2)
			}
		})
	}
}
