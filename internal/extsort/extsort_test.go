package extsort

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

type kv struct{ k, v string }

func collect(t *testing.T, s *Sorter) []kv {
	t.Helper()
	it, err := s.Iter()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []kv
	for it.Next() {
		out = append(out, kv{string(it.Key()), string(it.Value())})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSorter sorts the same random records in memory, with a few runs and
// with more runs than are merged at once, and compares with slices'
// stable sort: equal keys keep their insertion order.
func TestSorter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []kv
	for i := range 20000 {
		// Few distinct keys of varied lengths: many duplicates.
		k := fmt.Sprintf("%0*d", 1+rng.IntN(6), rng.IntN(3000))
		recs = append(recs, kv{k, fmt.Sprint(i)})
	}
	want := slices.Clone(recs)
	slices.SortStableFunc(want, func(a, b kv) int { return bytes.Compare([]byte(a.k), []byte(b.k)) })
	for _, tc := range []struct {
		name     string
		budget   int
		wantRuns int // at least
	}{
		// The records take about 500 KB with recordOverhead.
		{"in memory", 64 << 20, 0},
		{"few runs", 200 << 10, 2},
		{"more runs than merged at once", 6 << 10, maxRuns + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(dir, "test", tc.budget)
			for _, r := range recs {
				if err := s.Add([]byte(r.k), []byte(r.v)); err != nil {
					t.Fatal(err)
				}
			}
			if s.Runs() < tc.wantRuns {
				t.Fatalf("%d runs, want at least %d", s.Runs(), tc.wantRuns)
			}
			for pass := 1; pass <= 2; pass++ { // Iter reads everything again
				got := collect(t, s)
				if !slices.Equal(got, want) {
					t.Fatalf("pass %d: %d records, not sorted as a stable sort would (first %v)", pass, len(got), got[:3])
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			left, _ := filepath.Glob(filepath.Join(dir, "*"))
			if len(left) != 0 {
				t.Errorf("Close left %v", left)
			}
		})
	}
}

func TestSorterEmpty(t *testing.T) {
	s := New(t.TempDir(), "empty", 0)
	defer s.Close()
	if got := collect(t, s); len(got) != 0 {
		t.Fatalf("empty sorter gave %v", got)
	}
}

func TestSorterSpillError(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "missing"), "x", 1<<16)
	defer s.Close()
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		err = s.Add([]byte(fmt.Sprint(i)), make([]byte, 100))
	}
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("err = %v, want a missing directory error", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// TestSorterBlocks: records of every size up to several times a block
// (budget/4), so that blocks are emptied by spills and filled again, and
// some records get a block of their own in the place of one too small,
// come back sorted and whole.
func TestSorterBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, budget := range []int{1 << 14, 1 << 16, 1 << 18} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			var recs []kv
			for i := range 3000 {
				n := rng.IntN(budget / 4 / 50)
				if i%37 == 0 {
					n = budget/4 + rng.IntN(budget) // larger than a block
				}
				v := bytes.Repeat([]byte{byte('a' + i%26)}, n)
				recs = append(recs, kv{fmt.Sprintf("%05d", rng.IntN(1000)), fmt.Sprintf("%d:%s", i, v)})
			}
			want := slices.Clone(recs)
			slices.SortStableFunc(want, func(a, b kv) int { return bytes.Compare([]byte(a.k), []byte(b.k)) })
			s := New(t.TempDir(), "test", budget)
			defer s.Close()
			for _, r := range recs {
				if err := s.Add([]byte(r.k), []byte(r.v)); err != nil {
					t.Fatal(err)
				}
			}
			if s.Runs() < 2 {
				t.Fatalf("%d runs: the blocks are never filled again", s.Runs())
			}
			if got := collect(t, s); !slices.Equal(got, want) {
				t.Fatalf("%d records, not the stable sort of the %d added", len(got), len(want))
			}
		})
	}
}

// TestSorterInOrder adds records in key order (with equal keys), then
// out of order, then in order again, then a few in order from the start,
// at budgets below and above streamAfter: while in order they must go to
// one run as they come, with no buffer kept, and all come back as a
// stable sort gives them.
func TestSorterInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var recs []kv
	key := 0
	add := func(n int, ordered bool) {
		for range n {
			k := rng.IntN(1 << 20)
			if ordered {
				key += rng.IntN(3) // equal keys too
				k = key
			}
			recs = append(recs, kv{fmt.Sprintf("%08d", k), fmt.Sprintf("%d:%s", len(recs), bytes.Repeat([]byte("v"), rng.IntN(200)))})
		}
	}
	add(30000, true) // about 3.5 MB, past streamAfter
	firstStretch := len(recs)
	add(5000, false)
	add(30000, true)
	key = 0
	add(100, true) // in order, buffered when Iter is called
	want := slices.Clone(recs)
	slices.SortStableFunc(want, func(a, b kv) int { return bytes.Compare([]byte(a.k), []byte(b.k)) })
	for _, budget := range []int{64 << 10, 16 << 20} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			dir := t.TempDir()
			s := New(dir, "test", budget)
			for i, r := range recs {
				if err := s.Add([]byte(r.k), []byte(r.v)); err != nil {
					t.Fatal(err)
				}
				if i == firstStretch-1 {
					if s.Runs() != 1 || s.stream == nil || len(s.blocks) != 0 || len(s.recs) > 0 {
						t.Fatalf("after %d records in order: %d runs, streaming %v, %d blocks, %d buffered; want 1 run streamed to, nothing buffered", i+1, s.Runs(), s.stream != nil, len(s.blocks), len(s.recs))
					}
				}
			}
			for pass := 1; pass <= 2; pass++ {
				if got := collect(t, s); !slices.Equal(got, want) {
					t.Fatalf("pass %d: %d records, not the stable sort of the %d added", pass, len(got), len(want))
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Errorf("Close left %v", left)
			}
		})
	}
	// Fewer than streamAfter bytes in order stay in memory, unsorted.
	s := New(t.TempDir(), "small", 16<<20)
	defer s.Close()
	for _, r := range recs[:1000] {
		if err := s.Add([]byte(r.k), []byte(r.v)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Runs() != 0 || s.disordered {
		t.Fatalf("%d runs, disordered %v: want the records in memory, in order", s.Runs(), s.disordered)
	}
	if got := collect(t, s); !slices.Equal(got, recs[:1000]) {
		t.Fatal("the records in memory come back out of order")
	}
}

// TestSorterStretches adds random mixes of stretches in key order (from
// anywhere, with equal keys), in reverse order and at random, of random
// lengths, at random budgets, and calls Iter at any point: every record
// must come back as a stable sort gives them, however the stretches fall
// between buffer, stream and runs.
func TestSorterStretches(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for round := range 60 {
		var recs []kv
		for range 1 + rng.IntN(6) {
			n, key := rng.IntN(4000), rng.IntN(1<<16)
			kind := rng.IntN(3)
			for range n {
				switch kind {
				case 0: // in order
					key += rng.IntN(3)
				case 1: // reversed
					key -= rng.IntN(3)
				default:
					key = rng.IntN(1 << 16)
				}
				recs = append(recs, kv{fmt.Sprintf("%08d", key+1<<20), fmt.Sprintf("%d:%s", len(recs), bytes.Repeat([]byte("v"), rng.IntN(300)))})
			}
		}
		want := slices.Clone(recs)
		slices.SortStableFunc(want, func(a, b kv) int { return bytes.Compare([]byte(a.k), []byte(b.k)) })
		budget := []int{1 << 12, 64 << 10, 1 << 20, 4 << 20}[rng.IntN(4)]
		s := New(t.TempDir(), "test", budget)
		for _, r := range recs {
			if err := s.Add([]byte(r.k), []byte(r.v)); err != nil {
				t.Fatal(err)
			}
		}
		if got := collect(t, s); !slices.Equal(got, want) {
			t.Fatalf("round %d (budget %d, %d runs): %d records back, not the stable sort of the %d added", round, budget, s.Runs(), len(got), len(want))
		}
		s.Close()
	}
}
