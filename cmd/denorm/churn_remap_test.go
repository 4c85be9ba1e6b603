package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// TestChurnRoundsRemapSlotLoss runs randomized rounds (internal/churn) of
// both sync methods in which, besides the random writes, the mapping
// changes between rounds (a field of one collection removed, then put
// back: sync rebuilds only that collection, never asked for --drop) and
// the logical job's replication slot is dropped behind its back (sync
// catches up by a diff and goes on from a new slot). Each seed changes
// the mapping in rounds 2 and 5 and drops the slot in round 4, and in
// other rounds at random; the reference is a fresh migrate with the mapping of
// the round, and every round must also pass verify and leave both
// methods' targets byte for byte equal.
func TestChurnRoundsRemapSlotLoss(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, targets and jobs
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	root := testenv.Root(t)
	for _, name := range []string{"hybrid", "blog"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mapping := filepath.Join(root, "mappings", "examples", name+".yaml")
			file, err := mappings.Load(mapping)
			if err != nil {
				t.Fatal(err)
			}
			variant, coll, field := withoutAField(t, mapping)
			t.Logf("the mapping changes by removing field %q of collection %q, and back", field, coll)
			rm := &remapRounds{original: mapping, variant: variant}
			cfg := churn.Config{
				Mapping: mapping,
				Tables:  file.Tables(),
				SQL:     []string{filepath.Join(root, "testdata", "examples", "seed.sql"), filepath.Join(root, identityFull)},
				Ignore:  []string{load.RecordCollection},
				Seeds:   2,
				Rounds:  6,
				Step:    rm.step,
				Migrate: func(ctx context.Context, r *churn.Run, target string) error {
					return cli(ctx, "migrate", "-q", "--progress", "none", "--mapping", rm.mapping(r), "--source", r.Source, "--target", target)
				},
				Verify: func(ctx context.Context, r *churn.Run) error {
					return cli(ctx, "verify", "-q", "--mapping", rm.mapping(r), "--source", r.Source, "--target", r.Target, "--show", "5")
				},
				Cleanup: roundsCleanup(t),
			}
			churn.RunRounds(t, cfg)
			if rm.remaps.Load() == 0 || rm.slotDrops.Load() == 0 {
				t.Errorf("the rounds changed the mapping %d times and dropped the slot %d times: each must happen at least once", rm.remaps.Load(), rm.slotDrops.Load())
			}
			t.Logf("mapping changes: %d, slots dropped: %d", rm.remaps.Load(), rm.slotDrops.Load())
		})
	}
}

// remapRounds decides, by seed and round alone, which mapping a round
// uses and whether the slot is dropped before its step: the step and
// the fresh migrate run side by side and must agree without sharing
// state.
type remapRounds struct {
	original, variant string
	remaps, slotDrops atomic.Int64
	mu                sync.Mutex
	last              map[uint64]string // the mapping each seed's last step used
}

// roll is a number in [0, 100) for one seed, round and purpose.
func roll(seed uint64, round int, what string) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%d/%s", seed, round, what)
	return int(h.Sum32() % 100)
}

// variantIn says whether round uses the variant mapping: switching at
// rounds 2 and 5 (a field removed, then put back) and at random in the
// others from round 2 (one round in three).
func variantIn(seed uint64, round int) bool {
	v := false
	for r := 2; r <= round; r++ {
		if r == 2 || r == 5 || roll(seed, r, "remap") < 33 {
			v = !v
		}
	}
	return v
}

func (m *remapRounds) mapping(r *churn.Run) string {
	if variantIn(r.Seed, r.Round) {
		return m.variant
	}
	return m.original
}

func (m *remapRounds) step(ctx context.Context, r *churn.Run) error {
	mapping := m.mapping(r)
	m.mu.Lock()
	if m.last == nil {
		m.last = map[uint64]string{}
	}
	if prev, ok := m.last[r.Seed]; ok && prev != mapping {
		m.remaps.Add(1)
	}
	m.last[r.Seed] = mapping
	m.mu.Unlock()
	if r.Round == 4 || (r.Round > 1 && roll(r.Seed, r.Round, "slot") < 20) {
		if err := dropSlot(ctx, r.Source, roundsJob(r)); err != nil {
			return fmt.Errorf("drop the slot: %w", err)
		}
		m.slotDrops.Add(1)
	}
	return syncBothWith(ctx, r, mapping)
}

// withoutAField writes a copy of the mapping file without the last field
// of the first collection that has two fields or more, and says which.
func withoutAField(t *testing.T, path string) (variant, coll, field string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	get := func(n *yaml.Node, key string) *yaml.Node {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
		return nil
	}
	for _, c := range get(doc.Content[0], "collections").Content {
		fields := get(c, "fields")
		if fields == nil || len(fields.Content) < 2 {
			continue
		}
		last := fields.Content[len(fields.Content)-1]
		field = last.Value
		if n := get(last, "name"); n != nil {
			field = n.Value
		}
		fields.Content = fields.Content[:len(fields.Content)-1]
		coll = get(c, "name").Value
		out, err := yaml.Marshal(&doc)
		if err != nil {
			t.Fatal(err)
		}
		variant = filepath.Join(t.TempDir(), filepath.Base(path))
		if err := os.WriteFile(variant, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return variant, coll, field
	}
	t.Fatalf("%s: no collection with two fields or more", path)
	return
}
