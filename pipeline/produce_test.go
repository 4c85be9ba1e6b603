package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// moreExampleRows adds rows to seed.sql's tables so that batches of a few
// rows cross parents with no children, many children, and gaps in the keys.
const moreExampleRows = `
INSERT INTO person (id, first_name, last_name)
  SELECT i, 'F' || i, 'L' || i FROM generate_series(100, 400, 3) i;
INSERT INTO contact_detail (id, person_id, type_id, detail, extension)
  SELECT 1000 + i, 100 + 3 * (i % 60), 1 + i % 3, 'd' || i, CASE WHEN i % 4 = 0 THEN i END
  FROM generate_series(1, 500) i;
INSERT INTO address (id, person_id, type_id, line1, city, zip)
  SELECT 1000 + i, 100 + 3 * (i % 37), CASE WHEN i % 5 > 0 THEN 1 + i % 2 END, i || ' Main St', 'C' || i % 7, i
  FROM generate_series(1, 300) i;
INSERT INTO holding (person_id, stock_id, number_held)
  SELECT p, s, p + s FROM generate_series(100, 160, 3) p, (SELECT id AS s FROM stock) st WHERE (p + s) % 2 = 0;
INSERT INTO post (id, name, summary) SELECT i, 'post ' || i, NULL FROM generate_series(100, 130) i;
INSERT INTO comment (id, post_id, author, comment, created_at)
  SELECT 5000 + i, 100 + i % 17, 'a' || i, 'c' || i, timestamptz '2024-01-01' + (i % 50) * interval '1 hour'
  FROM generate_series(1, 900) i;
`

// produced is everything Produce gave for a collection entry.
type produced struct {
	docs   []string
	afters []string
	// keys and counts are each batch's position and the documents built
	// up to it.
	keys    []extract.Key
	counts  []int
	queries int
}

func produceAll(t *testing.T, ctx context.Context, snap *extract.Snapshot, cp *mappings.CollectionPlan, opt ProduceOptions) produced {
	t.Helper()
	var p produced
	err := Produce(ctx, snap, cp, opt, func(b Built) error {
		if len(b.Rejects) > 0 {
			return fmt.Errorf("row errors: %v", b.Rejects[0])
		}
		for _, d := range b.Docs {
			raw, err := load.AppendExtJSON(nil, d.Body)
			if err != nil {
				return err
			}
			p.docs = append(p.docs, string(raw))
		}
		p.afters = append(p.afters, b.After.String())
		p.keys = append(p.keys, b.After)
		p.counts = append(p.counts, len(p.docs))
		p.queries += b.Queries
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", cp.Name, err)
	}
	return p
}

// TestMergeStreamsMatchSetWise reads every example collection through
// merge streams and set-wise, in batches of several sizes, from the
// middle (resuming), and reusing the documents' memory across batches
// (ProduceOptions.Reuse, see checkReuse), and requires the very same
// documents and positions.
func TestMergeStreamsMatchSetWise(t *testing.T) {
	root := testenv.Root(t)
	seed := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
	testenv.Exec(t, seed, moreExampleRows)
	pagila := testenv.LoadedDB(t, filepath.Join(root, "testdata", "pagila", "pagila-schema.sql"), filepath.Join(root, "testdata", "pagila", "pagila-data.sql"))
	files, err := filepath.Glob(filepath.Join(root, "mappings", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example mappings: %v", err)
	}
	// A root with a filter: its relations' streams keep only the rows of
	// the parents it selects.
	files = append(files, filteredPerson(t, root), filteredExample(t, root, "blog.yaml", "post", "id % 3 <> 1"))
	streamed, reused := false, false
	for _, file := range files {
		// Batches of one row cross every parent boundary; Pagila's thousands
		// of rows make that slow, so it gets batches of 50.
		db, sizes := seed, []int{1, 7, 1000}
		if filepath.Base(file) == "pagila.yaml" {
			db, sizes = pagila, []int{50, 1000}
		}
		s, r := compareReads(t, db, file, sizes)
		streamed, reused = streamed || s, reused || r
	}
	if !streamed {
		t.Fatal("no example collection has a streamable relation: the test tests nothing")
	}
	if !reused {
		t.Fatal("no case had batches enough to reuse a slab: the reuse check tests nothing")
	}
}

// compareReads runs TestMergeStreamsMatchSetWise's comparison for one
// mapping file on db; it reports whether some relation was streamed and
// whether some slab was reused.
func compareReads(t *testing.T, db, file string, sizes []int) (streamed, reused bool) {
	ctx := context.Background()
	snap, plan := snapshotPlan(t, db, file)
	{
		for _, cp := range plan.Collections {
			for i, bs := range sizes {
				name := fmt.Sprintf("%s/%s/batch%d", filepath.Base(file), cp.Name, bs)
				t.Run(name, func(t *testing.T) {
					want := produceAll(t, ctx, snap, cp, ProduceOptions{BatchSize: bs, SetWise: true})
					got := produceAll(t, ctx, snap, cp, ProduceOptions{BatchSize: bs})
					if len(want.docs) == 0 {
						t.Fatal("no documents: the case tests nothing")
					}
					if !slices.Equal(got.docs, want.docs) {
						t.Fatalf("merge streams built %d documents, set-wise %d; first difference:\n%s", len(got.docs), len(want.docs), firstDiff(got.docs, want.docs))
					}
					if !slices.Equal(got.afters, want.afters) {
						t.Fatalf("positions differ:\n streams  %v\n set-wise %v", got.afters, want.afters)
					}
					if len(extract.Streamable(cp)) > 0 && i == 0 {
						streamed = true
						// (One batch costs a statement per relation
						// either way.)
						if got.queries >= want.queries && len(want.keys) > 2 {
							t.Errorf("merge streams sent %d statements, set-wise %d: the streams were not used", got.queries, want.queries)
						}
					}
					if checkReuse(t, ctx, snap, cp, bs, want.docs) {
						reused = true
					}
					// Resume from the middle: the rest must be the same.
					if cp.Bucket == nil && len(want.docs) > 2 && i == 1 {
						mid := len(want.keys) / 2
						after, done := want.keys[mid], want.counts[mid]
						rest := produceAll(t, ctx, snap, cp, ProduceOptions{BatchSize: bs, After: after})
						if !slices.Equal(rest.docs, want.docs[done:]) {
							t.Fatalf("resumed after %v: %d documents, want %d; first difference:\n%s", after, len(rest.docs), len(want.docs)-done, firstDiff(rest.docs, want.docs[done:]))
						}
					}
				})
			}
		}
	}
	return streamed, reused
}

// filteredPerson is mappings/examples/person.yaml with a filter on the
// root table, written to a temporary file.
func filteredPerson(t *testing.T, root string) string {
	return filteredExample(t, root, "person.yaml", "person", "id % 3 <> 0 AND first_name <> 'F103'")
}

// filteredExample is the example mapping file name with filter on the
// first collection reading table, written to a temporary file.
func filteredExample(t *testing.T, root, name, table, filter string) string {
	t.Helper()
	filtered := filepath.Join(t.TempDir(), strings.TrimSuffix(name, ".yaml")+"-filtered.yaml")
	orig, err := os.ReadFile(filepath.Join(root, "mappings", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	withFilter := strings.Replace(string(orig), "    table: "+table+"\n", "    table: "+table+"\n    filter: \""+filter+"\"\n", 1)
	if withFilter == string(orig) {
		t.Fatalf("could not add a filter to %s", name)
	}
	if err := os.WriteFile(filtered, []byte(withFilter), 0o644); err != nil {
		t.Fatal(err)
	}
	return filtered
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("#%d\n got  %s\n want %s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d vs %d)", len(a), len(b))
}

// TestLookupCache: a lookup's rows are fetched once per key for the whole
// read, not once per batch. With batches of one person, every batch asks
// for its root row, contact details and addresses (three statements); the
// contact-detail types are asked for only when a batch meets a type no
// batch has met before.
func TestLookupCache(t *testing.T) {
	root := testenv.Root(t)
	db := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
	testenv.Exec(t, db, moreExampleRows)
	ctx := context.Background()
	snap, plan := snapshotPlan(t, db, filepath.Join(root, "mappings", "examples", "person.yaml"))
	got := produceAll(t, ctx, snap, plan.Collections[0], ProduceOptions{BatchSize: 1, SetWise: true})
	var types int
	rows, err := snap.Query(ctx, "SELECT count(*) FROM contact_detail_type")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		err = rows.Scan(&types)
	}
	if err == nil {
		err = rows.Err()
	}
	if err != nil || types == 0 {
		t.Fatalf("count contact detail types: %d, %v", types, err)
	}
	batches := len(got.docs)
	// One more root query finds the end; each type is asked for once.
	if limit := 3*batches + 1 + types; got.queries > limit || batches < 50 {
		t.Fatalf("%d statements for %d persons, want at most %d (3 per batch, the end, %d types once each)", got.queries, batches, limit, types)
	}
	t.Logf("%d statements for %d persons in batches of one", got.queries, batches)
}

// snapshotCatalog opens a snapshot of db (closed at the end of the test),
// loads the mapping file and reads the catalog of its tables.
func snapshotCatalog(t *testing.T, db, file string) (*extract.Snapshot, *mappings.File, *mappings.Catalog) {
	t.Helper()
	ctx := context.Background()
	src, err := extract.ParseSource(db)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close(ctx) })
	f, err := mappings.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := extract.ReadCatalog(ctx, snap, f.Tables())
	if err != nil {
		t.Fatal(err)
	}
	return snap, f, cat
}

// snapshotPlan opens a snapshot of db (closed at the end of the test) and
// resolves the mapping file against it.
func snapshotPlan(t *testing.T, db, file string) (*extract.Snapshot, *mappings.Plan) {
	t.Helper()
	snap, f, cat := snapshotCatalog(t, db, file)
	plan, err := mappings.Resolve(f, cat)
	if err != nil {
		t.Fatal(err)
	}
	return snap, plan
}

// keyTypeRows are roots keyed by text (under the default collation and
// under an ICU one, whose order is not byte order), uuid, bigint beyond
// 32 bits, two integers, and text with an integer, each with children
// (some orphaned, some of parents a filter drops) and a count of them.
const keyTypeRows = `
CREATE TABLE kt_text (k text PRIMARY KEY, name text);
INSERT INTO kt_text SELECT 'p-' || i || CASE WHEN i % 3 = 0 THEN 'É' WHEN i % 3 = 1 THEN 'e' ELSE 'Z' END, 'n' || i FROM generate_series(1, 240) i;
CREATE TABLE kt_text_kid (id int PRIMARY KEY, k text, v int);
INSERT INTO kt_text_kid SELECT i, 'p-' || (i % 260) || CASE WHEN (i % 260) % 3 = 0 THEN 'É' WHEN (i % 260) % 3 = 1 THEN 'e' ELSE 'Z' END, i FROM generate_series(1, 700) i;
CREATE TABLE kt_icu (k text COLLATE "en-x-icu" PRIMARY KEY, name text);
INSERT INTO kt_icu SELECT k, name FROM kt_text;
CREATE TABLE kt_icu_kid (id int PRIMARY KEY, k text, v int);
INSERT INTO kt_icu_kid SELECT id, k, v FROM kt_text_kid;
CREATE TABLE kt_uuid (k uuid PRIMARY KEY, name text);
INSERT INTO kt_uuid SELECT md5('u' || i)::uuid, 'n' || i FROM generate_series(1, 240) i;
CREATE TABLE kt_uuid_kid (id int PRIMARY KEY, k uuid, v int);
INSERT INTO kt_uuid_kid SELECT i, md5('u' || (i % 260))::uuid, i FROM generate_series(1, 700) i;
CREATE TABLE kt_big (k bigint PRIMARY KEY, name text);
INSERT INTO kt_big SELECT (i - 120) * 100000000007, 'n' || i FROM generate_series(1, 240) i;
CREATE TABLE kt_big_kid (id int PRIMARY KEY, k bigint, v int);
INSERT INTO kt_big_kid SELECT i, ((i % 260) - 120) * 100000000007, i FROM generate_series(1, 700) i;
CREATE TABLE kt_pair (a int, b int, name text, PRIMARY KEY (a, b));
INSERT INTO kt_pair SELECT i % 7, i, 'n' || i FROM generate_series(1, 240) i;
CREATE TABLE kt_pair_kid (id int PRIMARY KEY, a int, b int, v int);
INSERT INTO kt_pair_kid SELECT i, (i % 260) % 7, i % 260, i FROM generate_series(1, 700) i;
CREATE TABLE kt_mixed (region text, n int, name text, PRIMARY KEY (region, n));
INSERT INTO kt_mixed SELECT CASE WHEN i % 2 = 0 THEN 'B' ELSE 'a' END, i, 'n' || i FROM generate_series(1, 240) i;
CREATE TABLE kt_mixed_kid (id int PRIMARY KEY, region varchar, n int, v int);
INSERT INTO kt_mixed_kid SELECT i, CASE WHEN (i % 260) % 2 = 0 THEN 'B' ELSE 'a' END, i % 260, i FROM generate_series(1, 700) i;
`

// keyTypeMapping writes a mapping of keyTypeRows' roots, each embedding,
// listing and counting its children; one with a filter on the root.
func keyTypeMapping(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\ncollections:\n")
	for _, c := range []struct{ table, join, filter string }{
		{"kt_text", "{k: k}", ""}, {"kt_icu", "{k: k}", ""}, {"kt_uuid", "{k: k}", ""}, {"kt_big", "{k: k}", ""},
		{"kt_pair", "{a: a, b: b}", ""}, {"kt_mixed", "{region: region, n: n}", ""}, {"kt_mixed", "{region: region, n: n}", "n % 3 <> 0"},
	} {
		name := c.table
		filter := ""
		if c.filter != "" {
			name += "_filtered"
			filter = fmt.Sprintf("    filter: %q\n", c.filter)
		}
		fmt.Fprintf(&b, `  - name: %[1]s
    table: %[2]s
%[4]s    fields:
      - name
      - name: kids
        embed: {table: %[2]s_kid, join: %[3]s, orderBy: v desc, fields: [id, v]}
      - name: kidIds
        ids: {table: %[2]s_kid, join: %[3]s, column: id}
      - name: kidCount
        aggregate: {fn: count, table: %[2]s_kid, join: %[3]s}
`, name, c.table, c.join, filter)
	}
	file := filepath.Join(t.TempDir(), "key-types.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestMergeStreamsEveryKeyType is TestMergeStreamsMatchSetWise for roots
// keyed by text (default and ICU collation), uuid, bigint, two integers
// and text with an integer: each is read through merge streams, and the
// documents and positions are those of the set-wise read, resumed ones
// included.
func TestMergeStreamsEveryKeyType(t *testing.T) {
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, keyTypeRows)
	file := keyTypeMapping(t)
	_, plan := snapshotPlan(t, db, file)
	for _, cp := range plan.Collections {
		if len(extract.Streamable(cp)) < 2 {
			t.Errorf("%s: %d relations streamed, want at least the embed and the ids", cp.Name, len(extract.Streamable(cp)))
		}
	}
	if streamed, _ := compareReads(t, db, file, []int{1, 7, 1000}); !streamed {
		t.Fatal("nothing was streamed")
	}
}

// TestSubsetStreams: a subset keyed by integers (the blog's three recent
// comments per post) is read by a merge stream, not set-wise per batch;
// TestMergeStreamsMatchSetWise holds its documents to the set-wise ones.
func TestSubsetStreams(t *testing.T) {
	root := testenv.Root(t)
	seed := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
	_, plan := snapshotPlan(t, seed, filepath.Join(root, "mappings", "examples", "blog.yaml"))
	found := false
	for _, cp := range plan.Collections {
		for _, n := range extract.Streamable(cp) {
			if n.Limit > 0 {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("the blog's recentComments subset is not streamed")
	}
}
