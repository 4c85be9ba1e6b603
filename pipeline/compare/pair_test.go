package compare

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/load"
)

func doc(t *testing.T, id int, v string) []byte {
	t.Helper()
	b, err := bson.Marshal(bson.D{{Key: "_id", Value: int32(id)}, {Key: "v", Value: v}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPairing fills both sides at once, as verify does, with pairing on,
// the found side in the expected side's order, in an order that meets the
// window only in part, and reversed: the merge must give the same kinds of
// record every time, and Read the documents as they were added, except a
// pair's, which were equal and are not kept.
func TestPairing(t *testing.T) {
	const n = 3 * pairWindow
	var exp [][]byte
	for i := range n {
		exp = append(exp, doc(t, i, fmt.Sprint("v", i)))
	}
	orders := map[string]func([]int) []int{
		"same":     func(o []int) []int { return o },
		"reversed": func(o []int) []int { slices.Reverse(o); return o },
		"blocks": func(o []int) []int { // blocks of 1,000 swapped pairwise
			for b := 0; b+2000 <= len(o); b += 2000 {
				x := slices.Clone(o[b : b+1000])
				copy(o[b:], o[b+1000:b+2000])
				copy(o[b+1000:], x)
			}
			return o
		},
	}
	for name, reorder := range orders {
		t.Run(name, func(t *testing.T) {
			var idx []int
			for i := range n {
				if i == 7 { // missing
					continue
				}
				idx = append(idx, i)
			}
			idx = reorder(idx)
			found := map[int][]byte{}
			var foundOrder [][]byte
			for _, i := range idx {
				d := exp[i]
				if i == 100 || i == n-5 { // different
					d = doc(t, i, "changed")
				}
				found[i] = d
				foundOrder = append(foundOrder, d)
				if i == 200 { // held twice: a damaged copy after the good one
					foundOrder = append(foundOrder, doc(t, i, "twice"))
				}
			}
			foundOrder = append(foundOrder, doc(t, n+1, "stray"))

			c, err := New(t.TempDir(), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Pair()
			fill(t, c, exp, foundOrder)
			paired, unmatched := c.Paired()
			if paired+unmatched != n {
				t.Errorf("paired %d + unmatched %d, want %d", paired, unmatched, n)
			}
			// The missing document (7) and the two changed ones (100,
			// n-5) meet no twin in any order; 200 meets its good copy,
			// the first of the two the target holds, whichever side
			// comes first.
			if name != "reversed" && unmatched != 3 {
				t.Errorf("%s: %d unmatched, want 3 (7, 100 and %d)", name, unmatched, n-5)
			}
			t.Logf("%s: paired %d, unmatched %d", name, paired, unmatched)

			// The found side's keys, paired or not, in key order (what
			// verify's dangling references are looked up in).
			var wantKeys []string
			for _, d := range foundOrder {
				id, err := load.DocumentID(d)
				if err != nil {
					t.Fatal(err)
				}
				wantKeys = append(wantKeys, string(IDKey("c", id)))
			}
			slices.Sort(wantKeys)
			fc, err := c.FoundCursor()
			if err != nil {
				t.Fatal(err)
			}
			var gotKeys []string
			for fc.At() != nil {
				gotKeys = append(gotKeys, string(fc.At()))
				if err := fc.Next(); err != nil {
					t.Fatal(err)
				}
			}
			fc.Close()
			if !slices.Equal(gotKeys, wantKeys) {
				t.Errorf("FoundCursor: %d keys, want the %d the target holds, in order", len(gotKeys), len(wantKeys))
			}

			kinds := map[string][]string{}
			pairs := 0
			err = c.Merge(context.Background(), func(kind string, x, y *Entry) error {
				e := x
				if e == nil {
					e = y
				}
				kinds[kind] = append(kinds[kind], string(e.IDJSON()))
				if kind != Different && kind != Identical {
					return nil
				}
				var id int32
				if _, err := fmt.Sscan(string(e.IDJSON()), &id); err != nil {
					return err
				}
				if x.Paired() {
					// Settled by comparing the bytes: they were equal.
					pairs++
					if x != y || !bytes.Equal(exp[id], found[int(id)]) || kind != Identical {
						return fmt.Errorf("_id %d: a pair of %s documents", id, kind)
					}
					if _, err := c.Exp.Read(x); err == nil {
						return fmt.Errorf("_id %d: a pair's document read back", id)
					}
					return nil
				}
				want, err := c.Exp.Read(x)
				if err != nil {
					return err
				}
				if !bytes.Equal(want, exp[id]) {
					return fmt.Errorf("_id %d: expected document read back as %v", id, bson.Raw(want))
				}
				got, err := c.Found.Read(y)
				if err != nil {
					return err
				}
				if !bytes.Equal(got, found[int(id)]) && id != 200 {
					return fmt.Errorf("_id %d: found document read back as %v", id, bson.Raw(got))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if int64(pairs) != paired {
				t.Errorf("%d pairs merged, %d paired", pairs, paired)
			}
			wantKinds := map[string][]string{
				Missing:    {"7"},
				Unexpected: {fmt.Sprint(n + 1)},
				Different:  {"100", fmt.Sprint(n - 5)},
				Duplicate:  {"200"},
			}
			for k, ids := range wantKinds {
				if !slices.Equal(kinds[k], ids) {
					t.Errorf("%s: %v, want %v", k, kinds[k], ids)
				}
			}
			if got := len(kinds[Identical]); got != n-3 {
				t.Errorf("identical: %d, want %d", got, n-3)
			}
		})
	}
}

// fill adds both sides at once, the found side in a goroutine of its own
// (as verify does), and flushes.
func fill(t *testing.T, c *Comparison, exp, found [][]byte) {
	t.Helper()
	var wg sync.WaitGroup
	var ferr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer c.FoundDone()
		for _, d := range found {
			if ferr = c.Add(&c.Found, "c", d, ""); ferr != nil {
				return
			}
		}
	}()
	for i, d := range exp {
		if err := c.Add(&c.Exp, "c", d, fmt.Sprint("row ", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.ExpectedDone()
	wg.Wait()
	if ferr != nil {
		t.Fatal(ferr)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestPairingAgrees compares random sides with pairing on and off: both
// must report the same _ids as missing, unexpected and duplicate, the
// same _ids as different in any way, and count as many identical ones. The
// sides have documents missing, changed, added, and given twice (the same
// or another document) on either side, the found side in about the
// expected side's order (shuffled locally, within and beyond the window).
// The kinds must be the same record for record, except where the two
// records of an _id on one side lie farther apart than the window: then
// which of them is compared with the other side may differ (a pair is
// compared first, so one may be identical that was different), not that
// the _id is reported.
func TestPairingAgrees(t *testing.T) {
	for seed := range int64(12) {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		n := 500 + rng.IntN(3*pairWindow)
		dups := seed%2 == 1
		var exp, found [][]byte
		for i := range n {
			d := doc(t, i, fmt.Sprint("v", i))
			switch r := rng.IntN(100); {
			case r < 3: // missing from the target
				exp = append(exp, d)
			case r < 6: // changed
				exp = append(exp, d)
				found = append(found, doc(t, i, "changed"))
			case r < 8 && dups: // the source gives the _id twice
				exp = append(exp, d, doc(t, i, "again"))
				found = append(found, d)
			case r < 9 && dups: // the same, the target's copy second
				exp = append(exp, doc(t, i, "again"), d)
				found = append(found, d)
			case r < 11 && dups: // the target holds it twice
				exp = append(exp, d)
				found = append(found, d, doc(t, i, "damaged"))
			case r < 12 && dups: // the same, the source's copy second
				exp = append(exp, d)
				found = append(found, doc(t, i, "damaged"), d)
			case r < 13 && dups: // both, each twice alike
				exp = append(exp, d, d)
				found = append(found, d, d)
			default:
				exp = append(exp, d)
				found = append(found, d)
			}
			if rng.IntN(100) < 2 {
				found = append(found, doc(t, n+i, "stray"))
			}
		}
		// Local shuffles: swap documents up to span apart.
		span := []int{1, 100, 3 * pairWindow}[seed%3]
		for range len(found) / 4 {
			i := rng.IntN(len(found))
			j := min(len(found)-1, i+rng.IntN(span))
			found[i], found[j] = found[j], found[i]
		}
		run := func(pair bool) (map[string][]string, map[string]bool) {
			c, err := New(t.TempDir(), 64<<10)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if pair {
				c.Pair()
			}
			fill(t, c, exp, found)
			kinds, flagged := map[string][]string{}, map[string]bool{}
			err = c.Merge(context.Background(), func(kind string, x, y *Entry) error {
				e := x
				if e == nil {
					e = y
				}
				side := "exp"
				if x == nil {
					side = "found"
				}
				id := string(e.IDJSON())
				if kind == Duplicate {
					id += " " + side
				}
				kinds[kind] = append(kinds[kind], id)
				if kind != Identical {
					flagged[string(e.IDJSON())] = true
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return kinds, flagged
		}
		plain, plainFlagged := run(false)
		paired, pairedFlagged := run(true)
		if len(plain[Identical]) == 0 || len(plainFlagged) == 0 {
			t.Fatalf("seed %d: %d identical, %d flagged: the sides test nothing", seed, len(plain[Identical]), len(plainFlagged))
		}
		check := []string{Missing, Unexpected, Duplicate}
		if !dups || span < pairWindow {
			check = append(check, Different, Identical)
		}
		for _, k := range check {
			if !slices.Equal(plain[k], paired[k]) {
				t.Errorf("seed %d (span %d): %s without pairing %d %v, with %d %v; only without %v, only with %v", seed, span, k, len(plain[k]), head(plain[k]), len(paired[k]), head(paired[k]), minus(plain[k], paired[k]), minus(paired[k], plain[k]))
			}
		}
		if !maps.Equal(plainFlagged, pairedFlagged) {
			t.Errorf("seed %d: %d _ids flagged without pairing, %d with", seed, len(plainFlagged), len(pairedFlagged))
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 8)] }

// minus is what of a b does not hold, at most 8.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return head(out)
}

// TestPairingFreeMemory: documents of 100 KB, paired and not, leave each
// side at most pairFreeBytes of document memory kept for reuse.
func TestPairingFreeMemory(t *testing.T) {
	var exp, found [][]byte
	big := strings.Repeat("x", 100<<10)
	for i := range 300 {
		d := doc(t, i, big)
		exp = append(exp, d)
		if i%3 == 0 {
			d = doc(t, i, big+"changed")
		}
		found = append(found, d)
	}
	c, err := New(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Pair()
	fill(t, c, exp, found)
	if paired, unmatched := c.Paired(); paired != 200 || unmatched != 100 {
		t.Errorf("paired %d, unmatched %d; want 200 and 100", paired, unmatched)
	}
	for _, q := range []*queue{&c.pair.exp, &c.pair.found} {
		held := 0
		for _, w := range q.free {
			held += cap(w.doc)
		}
		if held != q.freeBytes || held > pairFreeBytes {
			t.Errorf("%d bytes kept for reuse (counted %d), want at most %d", held, q.freeBytes, pairFreeBytes)
		}
	}
}
