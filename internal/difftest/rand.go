package difftest

import (
	"math/rand/v2"
)

// rng is the generator's source of choices: one PCG stream from the case
// seed, so a seed replays the same case on every machine and Go version
// (math/rand/v2's PCG is specified, not just seeded).
type rng struct{ r *rand.Rand }

func newRNG(seed uint64) *rng {
	return &rng{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// n is uniform in [0, k).
func (g *rng) n(k int) int {
	if k <= 1 {
		return 0
	}
	return g.r.IntN(k)
}

// between is uniform in [lo, hi].
func (g *rng) between(lo, hi int) int { return lo + g.n(hi-lo+1) }

// chance is true with probability p.
func (g *rng) chance(p float64) bool { return g.r.Float64() < p }

// pick is one of the items, uniformly.
func pick[T any](g *rng, items ...T) T { return items[g.n(len(items))] }

// weighted returns an index into weights, each chosen in proportion to
// its weight.
func (g *rng) weighted(weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := g.n(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

// subset is a random subset of items in their order, each kept with
// probability p.
func subset[T any](g *rng, items []T, p float64) []T {
	var out []T
	for _, it := range items {
		if g.chance(p) {
			out = append(out, it)
		}
	}
	return out
}

// shuffle permutes items in place.
func shuffle[T any](g *rng, items []T) {
	g.r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
}

func (g *rng) uint64() uint64 { return g.r.Uint64() }
