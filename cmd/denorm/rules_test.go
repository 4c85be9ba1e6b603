package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
)

// The rules of testdata/examples/README.md written as SQL: for every example
// and collection, a query returning the expected documents as JSON text.
// This oracle is independent of denorm's code: PostgreSQL builds the
// documents with json_build_object / json_agg in the order the rules say;
// json_strip_nulls leaves out NULL scalar fields ("a NULL scalar column is
// left out of the document") and coalesce(..., '[]') makes an empty relation
// an empty array.
var ruleOracle = map[string]map[string]string{
	"person": {
		"people": `
SELECT json_strip_nulls(json_build_object(
  '_id', p.id, 'firstName', p.first_name, 'lastName', p.last_name,
  'addresses', coalesce((SELECT json_agg(json_build_object(
      'line1', a.line1, 'line2', a.line2, 'city', a.city, 'state', a.state, 'zip', a.zip) ORDER BY a.id)
    FROM address a WHERE a.person_id = p.id), '[]'),
  'contactDetails', coalesce((SELECT json_agg(json_build_object(t.name, c.detail, 'extension', c.extension) ORDER BY c.id)
    FROM contact_detail c JOIN contact_detail_type t ON t.id = c.type_id WHERE c.person_id = p.id), '[]')))
FROM person p`,
	},
	"blog": {
		"posts": `
SELECT json_strip_nulls(json_build_object(
  '_id', p.id, 'name', p.name, 'summary', p.summary,
  'recentComments', coalesce((SELECT json_agg(json_build_object('id', c.id, 'author', c.author, 'comment', c.comment)
      ORDER BY c.created_at DESC, c.id DESC)
    FROM (SELECT * FROM comment c WHERE c.post_id = p.id ORDER BY c.created_at DESC, c.id DESC LIMIT 3) c), '[]')))
FROM post p`,
		"comments": `
WITH numbered AS (
  SELECT c.*, (row_number() OVER (PARTITION BY c.post_id ORDER BY c.created_at, c.id) - 1) / 100 AS page
  FROM comment c)
SELECT json_build_object('_id', post_id || '-' || page, 'postId', post_id, 'page', page,
  'comments', json_agg(json_build_object('id', id, 'author', author, 'comment', comment) ORDER BY created_at, id))
FROM numbered GROUP BY post_id, page`,
	},
	"portfolio": {
		"people": `
SELECT json_build_object('_id', p.id, 'firstName', p.first_name, 'lastName', p.last_name,
  'holdings', coalesce((SELECT json_agg(json_build_object('numberHeld', h.number_held, 'stockId', h.stock_id) ORDER BY h.stock_id)
    FROM holding h WHERE h.person_id = p.id), '[]'))
FROM person p`,
		"stocks": `
SELECT json_strip_nulls(json_build_object('_id', s.id, 'symbol', s.symbol, 'open', s.open, 'high', s.high, 'low', s.low,
  'vol', s.vol, 'mkt-cap', s.mkt_cap, 'pe', s.pe))
FROM stock s`,
	},
	"portfolio-embedded": {
		"people": `
SELECT json_build_object('_id', p.id, 'firstName', p.first_name, 'lastName', p.last_name,
  'holdings', coalesce((SELECT json_agg(json_build_object('numberHeld', h.number_held,
      'stock', json_build_object('symbol', s.symbol, 'open', s.open, 'high', s.high, 'low', s.low)) ORDER BY h.stock_id)
    FROM holding h JOIN stock s ON s.id = h.stock_id WHERE h.person_id = p.id), '[]'))
FROM person p`,
	},
	"publishing": {
		"publishers": `
SELECT json_build_object('_id', p.id, 'name', p.name,
  'books', coalesce((SELECT json_agg(b.id ORDER BY b.id) FROM book b WHERE b.pub_id = p.id), '[]'))
FROM publisher p`,
		"books": `
SELECT json_strip_nulls(json_build_object('_id', b.id, 'name', b.name, 'pubId', b.pub_id))
FROM book b`,
	},
	"authors-books": {
		"authors": `
SELECT json_build_object('_id', a.id, 'name', a.first_name || ' ' || a.last_name,
  'books', coalesce((SELECT json_agg(ba.book_id ORDER BY ba.book_id) FROM book_author ba WHERE ba.author_id = a.id), '[]'))
FROM author a`,
		"books": `
SELECT json_build_object('_id', b.id, 'name', b.name,
  'authors', coalesce((SELECT json_agg(ba.author_id ORDER BY ba.author_id) FROM book_author ba WHERE ba.book_id = b.id), '[]'))
FROM book b`,
	},
	"hybrid": {
		"authors": `
SELECT json_build_object('_id', a.id, 'firstName', a.first_name, 'lastName', a.last_name,
  'countOfBooks', (SELECT count(*) FROM book_author ba WHERE ba.author_id = a.id),
  'books', coalesce((SELECT json_agg(ba.book_id ORDER BY ba.book_id) FROM book_author ba WHERE ba.author_id = a.id), '[]'),
  'images', coalesce((SELECT json_agg(json_build_object(i.kind, i.url) ORDER BY i.id) FROM author_image i WHERE i.author_id = a.id), '[]'))
FROM author a`,
		"books": `
SELECT json_build_object('_id', b.id, 'name', b.name,
  'authors', coalesce((SELECT json_agg(json_strip_nulls(json_build_object('id', a.id, 'name', a.first_name || ' ' || a.last_name,
      'thumbnailUrl', (SELECT i.url FROM author_image i WHERE i.author_id = a.id AND i.kind = 'thumbnail' ORDER BY i.id LIMIT 1)))
      ORDER BY a.id)
    FROM book_author ba JOIN author a ON a.id = ba.author_id WHERE ba.book_id = b.id), '[]'))
FROM book b`,
	},
	"catalog": {
		"catalog": `
SELECT json_build_object('_id', b.id, 'name', b.name, 'bookId', b.id, 'type', 'book') FROM book b
UNION ALL
SELECT json_build_object('_id', r.id, 'content', r.content, 'bookId', r.book_id, 'type', 'review') FROM review r`,
	},
}

// oracleDocs runs one oracle query and returns its documents as JSON text.
func oracleDocs(t *testing.T, db, query string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT d::text FROM ("+query+") AS o(d)")
	if err != nil {
		t.Fatalf("oracle query: %v\n%s", err, query)
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("oracle query: %v\n%s", err, query)
	}
	return docs
}

// byID sorts documents by their _id (compared as canonical JSON text), so
// that the comparison does not depend on the order the target returns them.
func byID(t *testing.T, docs []string) []string {
	t.Helper()
	type keyed struct{ id, doc string }
	ks := make([]keyed, len(docs))
	for i, d := range docs {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("not a JSON document: %v: %s", err, d)
		}
		id, err := testenv.Canonical(string(m["_id"]))
		if err != nil {
			t.Fatalf("document without a JSON _id: %s", d)
		}
		ks[i] = keyed{id, d}
	}
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].id < ks[j].id })
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.doc
		if i > 0 && ks[i-1].id == k.id {
			t.Errorf("two documents with _id %s", k.id)
		}
	}
	return out
}

// rulesDB is the seed plus the hard cases of testdata/rules-extra.sql.
func rulesDB(t *testing.T) string {
	root := testenv.Root(t)
	return testenv.PostgresDB(t,
		filepath.Join(root, "testdata", "examples", "seed.sql"),
		filepath.Join(root, "cmd", "denorm", "testdata", "rules-extra.sql"))
}

// TestExampleRulesOnOtherData migrates every example mapping from the seed
// plus generated hard cases (ties in sort keys across the subset and page
// boundaries, posts with 0/100/101 comments, NULLs in every nullable
// column, empty relations, unicode, large counts) and compares the
// documents with the SQL oracle above, at the default batch size and at a
// small odd one so that batch boundaries fall inside pages and relations.
func TestExampleRulesOnOtherData(t *testing.T) {
	src := rulesDB(t)
	names := examples(t)
	if len(names) != len(ruleOracle) {
		t.Errorf("%d examples %v but %d have rules here: write the oracle of the new example", len(names), names, len(ruleOracle))
	}
	for _, name := range names {
		colls, ok := ruleOracle[name]
		if !ok {
			t.Errorf("example %s has no oracle", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			mapping := example(t, name)
			for _, batch := range []string{"1000", "37"} {
				dir := t.TempDir()
				code, out, errs := runCLI(t, "migrate", "-q", "--batch-size", batch, "--mapping", mapping, "--source", src, "--target", dir)
				if code != 0 {
					t.Fatalf("migrate --batch-size %s exit %d\n%s%s", batch, code, out, errs)
				}
				got, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
				if len(got) != len(colls) {
					t.Errorf("batch %s: wrote %d collections %v, want %d", batch, len(got), got, len(colls))
				}
				for coll, query := range colls {
					want := byID(t, oracleDocs(t, src, query))
					if len(want) < 3 {
						t.Fatalf("%s: oracle returned %d documents; the extra data is missing", coll, len(want))
					}
					testenv.EqualDocs(t, fmt.Sprintf("batch %s %s", batch, coll), want,
						byID(t, testenv.ReadLines(t, filepath.Join(dir, coll+".jsonl"))))
				}
			}
		})
	}
}

// TestExampleRulesOnOtherDataServer runs two examples (buckets + subset, and
// the hybrid with lookups and aggregates) through the MongoDB-wire target.
func TestExampleRulesOnOtherDataServer(t *testing.T) {
	src := rulesDB(t)
	for _, name := range []string{"blog", "hybrid"} {
		t.Run(name, func(t *testing.T) {
			uri, db := testenv.MongoDB(t)
			mapping := example(t, name)
			code, out, errs := runCLI(t, "migrate", "-q", "--batch-size", "37", "--mapping", mapping, "--source", src, "--target", uri)
			if code != 0 {
				t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
			}
			for coll, query := range ruleOracle[name] {
				want := byID(t, oracleDocs(t, src, query))
				testenv.EqualDocs(t, coll, want, byID(t, testenv.DumpCollection(t, db, coll)))
			}
		})
	}
}
