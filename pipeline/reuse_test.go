package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/transform"
)

// TestProduceReuse builds every example collection with and without
// ProduceOptions.Reuse, in batches of several sizes, and requires the very
// same documents. While fn holds a batch it encodes the documents twice,
// letting the builder run ahead in between: a slab handed back before fn
// is done would change them (and -race reports the builder's writes).
// Slabs must really be reused: fewer distinct slabs than batches.
func TestProduceReuse(t *testing.T) {
	root := testenv.Root(t)
	seed := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
	testenv.Exec(t, seed, moreExampleRows)
	pagila := testenv.PostgresDB(t, filepath.Join(root, "testdata", "pagila", "pagila-schema.sql"))
	testenv.PsqlFile(t, pagila, filepath.Join(root, "testdata", "pagila", "pagila-data.sql"))
	files, err := filepath.Glob(filepath.Join(root, "mappings", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example mappings: %v", err)
	}
	files = append(files, filteredPerson(t, root))
	ctx := context.Background()
	reused := false
	for _, file := range files {
		db, sizes := seed, []int{1, 7, 1000}
		if filepath.Base(file) == "pagila.yaml" {
			db, sizes = pagila, []int{50, 1000}
		}
		snap, plan := snapshotPlan(t, db, file)
		for _, cp := range plan.Collections {
			for _, bs := range sizes {
				t.Run(fmt.Sprintf("%s/%s/batch%d", filepath.Base(file), cp.Name, bs), func(t *testing.T) {
					want := produceAll(t, ctx, snap, cp, ProduceOptions{BatchSize: bs})
					if len(want.docs) == 0 {
						t.Fatal("no documents: the case tests nothing")
					}
					var got []string
					var batches int
					slabs := map[*transform.Slab]bool{}
					err := Produce(ctx, snap, cp, ProduceOptions{BatchSize: bs, Reuse: true}, func(b Built) error {
						batches++
						if b.slab != nil {
							slabs[b.slab] = true
						} else if cp.Bucket == nil && len(b.Docs) > 0 {
							return fmt.Errorf("batch %d: no slab with Reuse", batches)
						}
						first, err := encodeAll(b.Docs)
						if err != nil {
							return err
						}
						// Let the reader and the builder run ahead.
						runtime.Gosched()
						time.Sleep(50 * time.Microsecond)
						again, err := encodeAll(b.Docs)
						if err != nil {
							return err
						}
						if !slices.Equal(first, again) {
							return fmt.Errorf("batch %d changed while fn held it:\n%s", batches, firstDiff(again, first))
						}
						got = append(got, first...)
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want.docs) {
						t.Fatalf("with Reuse %d documents, without %d; first difference:\n%s", len(got), len(want.docs), firstDiff(got, want.docs))
					}
					if cp.Bucket == nil && batches > 4 {
						if len(slabs) >= batches {
							t.Errorf("%d slabs for %d batches: none reused", len(slabs), batches)
						}
						reused = true
					}
				})
			}
		}
	}
	if !reused {
		t.Fatal("no case had batches enough to reuse a slab: the test tests nothing")
	}
}

func encodeAll(docs []transform.Document) ([]string, error) {
	out := make([]string, 0, len(docs))
	for _, d := range docs {
		raw, err := load.AppendExtJSON(nil, d.Body)
		if err != nil {
			return nil, err
		}
		out = append(out, string(raw))
	}
	return out, nil
}
