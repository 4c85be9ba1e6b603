package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// checkReuse builds cp with ProduceOptions.Reuse in batches of bs and
// requires the documents want (built without it). While fn holds a batch
// it encodes the documents twice, letting the reader and builder run
// ahead in between: a slab handed back before fn is done would change
// them (and -race reports the builder's writes). It reports whether slabs
// were really reused (fewer distinct slabs than batches).
func checkReuse(t *testing.T, ctx context.Context, snap *extract.Snapshot, cp *mappings.CollectionPlan, bs int, want []string) bool {
	t.Helper()
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
		t.Fatalf("with Reuse: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("with Reuse %d documents, without %d; first difference:\n%s", len(got), len(want), firstDiff(got, want))
	}
	if cp.Bucket != nil || batches <= 4 {
		return false
	}
	if len(slabs) >= batches {
		t.Errorf("%d slabs for %d batches: none reused", len(slabs), batches)
	}
	return true
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
