package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// fullRun is a collection entry's documents from a full read, as BSON,
// by _id (as BSON) or, for a bucket collection, the pages of each parent
// in order.
type fullRun struct {
	byID     map[string]string
	byParent map[string][]string
}

func readFull(t *testing.T, ctx context.Context, snap *extract.Snapshot, cp *mappings.CollectionPlan) fullRun {
	t.Helper()
	full := fullRun{byID: map[string]string{}, byParent: map[string][]string{}}
	err := Produce(ctx, snap, cp, ProduceOptions{BatchSize: 1000}, func(b Built) error {
		if len(b.Rejects) > 0 {
			return fmt.Errorf("row errors: %v", b.Rejects[0])
		}
		for _, d := range b.Docs {
			doc := bsonText(t, d.Body)
			if d.Page != nil {
				full.byParent[d.Page.ParentKey] = append(full.byParent[d.Page.ParentKey], doc)
				continue
			}
			id := idBSON(t, d.ID)
			if _, dup := full.byID[id]; dup {
				return fmt.Errorf("two documents with _id %v", d.ID)
			}
			full.byID[id] = doc
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.byID)+len(full.byParent) == 0 {
		t.Fatal("the full read built no documents: the case tests nothing")
	}
	return full
}

func bsonText(t *testing.T, d transform.Doc) string {
	t.Helper()
	b, err := load.AppendDocument(nil, d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// idBSON is an _id value's BSON encoding: equal bytes, equal value and type.
func idBSON(t *testing.T, id any) string {
	return bsonText(t, transform.Doc{{Key: "_id", Value: id}})
}

// tableKeys are the keys (KeyColumns) of every row of cp's root table,
// the root's filter not applied, as PostgreSQL prints them.
func tableKeys(t *testing.T, ctx context.Context, snap *extract.Snapshot, cp *mappings.CollectionPlan) []extract.Key {
	t.Helper()
	cols := extract.KeyColumns(cp)
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf("%q::text", cp.Root.Columns[c].Name)
	}
	rows, err := snap.Query(ctx, fmt.Sprintf("SELECT DISTINCT %s FROM %q.%q", strings.Join(sel, ", "), cp.Root.Table.Schema, cp.Root.Table.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []extract.Key
	for rows.Next() {
		k := make(extract.Key, len(cols))
		dest := make([]any, len(cols))
		for i := range k {
			dest[i] = &k[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("the root table is empty")
	}
	return out
}

// keyCase is one key set asked for, and what the test knows of it.
type keyCase struct {
	keys []extract.Key
	// distinct is the number of different keys among them (some are
	// given twice, some in another spelling); missing are keys no row has.
	distinct int
	missing  map[string]bool
}

// pickKeys draws a random subset of all (each key with probability p),
// then adds keys no row has, exact duplicates and, for integer keys, the
// same key spelled another way ("042" for 42), and shuffles.
func pickKeys(rng *rand.Rand, cp *mappings.CollectionPlan, all []extract.Key, p float64) keyCase {
	kc := keyCase{missing: map[string]bool{}}
	for _, k := range all {
		if rng.Float64() < p {
			kc.keys = append(kc.keys, k)
		}
	}
	if len(kc.keys) == 0 {
		kc.keys = append(kc.keys, all[rng.IntN(len(all))]) // at least one
	}
	kc.distinct = len(kc.keys)
	cols := extract.KeyColumns(cp)
	for i := range 3 {
		k := make(extract.Key, len(cols))
		for j, c := range cols {
			var s string
			switch cp.Root.Columns[c].TypeName {
			case "int2", "int4", "int8":
				s = strconv.Itoa(-1000 - rng.IntN(1000) - 7*i)
			case "text", "varchar", "bpchar":
				s = fmt.Sprintf("no such key %d", i)
			default:
				return kc // no missing key made up for this type
			}
			k[j] = &s
		}
		if !kc.missing[k.String()] {
			kc.missing[k.String()] = true
			kc.keys = append(kc.keys, k)
			kc.distinct++
		}
	}
	n := len(kc.keys)
	for range min(n, 5) {
		k := kc.keys[rng.IntN(n)]
		kc.keys = append(kc.keys, k)
		respelled := make(extract.Key, len(k))
		for j, v := range k {
			respelled[j] = v
			if _, err := strconv.Atoi(*v); err == nil && !strings.HasPrefix(*v, "-") {
				s := "0" + *v
				respelled[j] = &s
			}
		}
		kc.keys = append(kc.keys, respelled)
	}
	rng.Shuffle(len(kc.keys), func(i, j int) { kc.keys[i], kc.keys[j] = kc.keys[j], kc.keys[i] })
	return kc
}

// countNodes is the number of relations below n.
func countNodes(n *mappings.Node) int {
	c := 0
	for _, ch := range n.Children {
		c += 1 + countNodes(ch)
	}
	return c
}

// checkKeyRead reads kc's keys with ProduceKeys and compares every
// document with the full read's, byte for byte.
func checkKeyRead(t *testing.T, ctx context.Context, snap *extract.Snapshot, cp *mappings.CollectionPlan, full fullRun, kc keyCase, batch int) {
	t.Helper()
	var results []KeyResult
	docs := map[string]string{}
	pages := map[string][]string{}
	parents := map[string]string{} // a page's parent fields
	queries := 0
	err := ProduceKeys(ctx, snap, cp, kc.keys, batch, func(b Built) error {
		if len(b.Rejects) > 0 {
			return fmt.Errorf("row errors: %v", b.Rejects[0])
		}
		if b.After != nil || b.Pager != nil {
			return fmt.Errorf("a key-set read gave a stream position %v", b.After)
		}
		queries += b.Queries
		for _, d := range b.Docs {
			doc := bsonText(t, d.Body)
			if d.Page != nil {
				pages[d.Page.ParentKey] = append(pages[d.Page.ParentKey], doc)
				parents[d.Page.ParentKey] = bsonText(t, d.Body[1:1+len(cp.Bucket.By)])
				continue
			}
			id := idBSON(t, d.ID)
			if _, dup := docs[id]; dup {
				return fmt.Errorf("document %v built twice", d.ID)
			}
			docs[id] = doc
		}
		// A key's result comes with its documents, or after them.
		for _, r := range b.Keys {
			if cp.Bucket == nil && r.Found && docs[idBSON(t, r.ID)] == "" {
				return fmt.Errorf("key %v listed before its document", r.Key)
			}
			if cp.Bucket != nil && len(pages[r.ParentKey]) != r.Pages {
				return fmt.Errorf("parent %v: %d pages listed, %d built so far", r.Key, r.Pages, len(pages[r.ParentKey]))
			}
		}
		results = append(results, b.Keys...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != kc.distinct {
		t.Fatalf("%d keys listed, want %d (the distinct keys of %d given)", len(results), kc.distinct, len(kc.keys))
	}
	seen := map[string]bool{}
	found := 0
	for _, r := range results {
		if seen[r.Key.String()] {
			t.Fatalf("key %v listed twice", r.Key)
		}
		seen[r.Key.String()] = true
		if kc.missing[r.Key.String()] && r.Found {
			t.Errorf("key %v found, but no row has it", r.Key)
		}
		if r.Found {
			found++
		}
		if cp.Bucket == nil {
			want, inFull := full.byID[idBSON(t, r.ID)]
			switch {
			case r.Found != inFull:
				t.Errorf("key %v (_id %v): found %v, the full read has its document: %v", r.Key, r.ID, r.Found, inFull)
			case r.Found && docs[idBSON(t, r.ID)] != want:
				t.Errorf("key %v: document differs from the full read's\n got  %q\n want %q", r.Key, docs[idBSON(t, r.ID)], want)
			}
			continue
		}
		want := full.byParent[r.ParentKey]
		if r.Found != (len(want) > 0) || r.Pages != len(want) {
			t.Errorf("parent %v (%q): found %v with %d pages, the full read has %d", r.Key, r.ParentKey, r.Found, r.Pages, len(want))
		}
		if r.Found {
			fields := make(transform.Doc, len(r.Values))
			for i, v := range r.Values {
				fields[i] = transform.Field{Key: cp.Bucket.ByNames[i], Value: v}
			}
			if got := bsonText(t, fields); got != parents[r.ParentKey] {
				t.Errorf("parent %v: values %q, its pages hold %q", r.Key, got, parents[r.ParentKey])
			}
		}
		if !slices.Equal(pages[r.ParentKey], want) {
			t.Errorf("parent %v: %d pages differ from the full read's %d; first difference:\n%s", r.Key, len(pages[r.ParentKey]), len(want), firstDiff(pages[r.ParentKey], want))
		}
	}
	if built := len(docs) + len(pages); built != found {
		t.Errorf("%d documents (or parents) built for %d keys found", built, found)
	}
	// Set-wise, a few statements per batch of keys, never one per key.
	groups := (len(kc.keys) + batch - 1) / batch
	if limit := groups * (2 + countNodes(cp.Root)); cp.Bucket == nil && queries > limit {
		t.Errorf("%d statements for %d keys in %d batches, want at most %d", queries, len(kc.keys), groups, limit)
	}
}

// TestProduceKeysMatchesFullRun reads random key subsets (several seeds,
// batch sizes) of every collection of every example mapping and of
// Pagila, with keys no row has, keys filtered out by the root's filter,
// keys given twice or spelled differently, and the empty set, and
// requires exactly the documents - BSON bytes - of a full read for those
// keys; for bucket collections, every page of the parents asked.
func TestProduceKeysMatchesFullRun(t *testing.T) {
	root := testenv.Root(t)
	rules := testenv.PostgresDB(t,
		filepath.Join(root, "testdata", "examples", "seed.sql"),
		filepath.Join(root, "cmd", "denorm", "testdata", "rules-extra.sql"))
	pagila := testenv.LoadedDB(t, filepath.Join(root, "testdata", "pagila", "pagila-schema.sql"), filepath.Join(root, "testdata", "pagila", "pagila-data.sql"))
	files, err := filepath.Glob(filepath.Join(root, "mappings", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example mappings: %v", err)
	}
	files = append(files, filteredPerson(t, root))
	ctx := context.Background()
	for _, file := range files {
		db, sizes := rules, []int{1, 7, 1000}
		if filepath.Base(file) == "pagila.yaml" {
			db, sizes = pagila, []int{50, 200, 1000}
		}
		snap, plan := snapshotPlan(t, db, file)
		for e, cp := range plan.Collections {
			t.Run(fmt.Sprintf("%s/%d-%s", filepath.Base(file), e, cp.Name), func(t *testing.T) {
				full := readFull(t, ctx, snap, cp)
				all := tableKeys(t, ctx, snap, cp)
				checkKeyRead(t, ctx, snap, cp, full, keyCase{keys: []extract.Key{}}, 10)
				for seed, p := range []float64{0.02, 0.3, 0.9} {
					rng := rand.New(rand.NewPCG(uint64(seed), 12))
					kc := pickKeys(rng, cp, all, p)
					batch := sizes[seed%len(sizes)]
					t.Run(fmt.Sprintf("seed%d-p%v-batch%d", seed, p, batch), func(t *testing.T) {
						checkKeyRead(t, ctx, snap, cp, full, kc, batch)
					})
				}
			})
		}
	}
}
