package transform

import (
	"github.com/denorm/denorm/internal/box"
	"github.com/denorm/denorm/internal/poison"
)

// Slab hands out the fields of documents, the items of arrays, and the
// boxes of embedded documents and arrays from shared blocks: one
// allocation for many documents instead of several per document. Each Doc
// or Array gets the capacity it asked for, so appending to it past that
// reallocates rather than touching its neighbours.
//
// Reset makes the blocks reusable for the next batch: the documents built
// from the slab before must no longer be used (Produce resets a batch's
// slab once its consumer is done with the batch, when asked to). A slab
// never reset lets go of its full blocks (the documents keep them alive
// as long as they need them); once reset, it keeps every block for reuse.
// A nil *Slab allocates each one on its own. A Slab is used by one
// goroutine.
type Slab struct {
	keep   bool
	fields blocks[Field]
	items  blocks[any]
	docs   blocks[Doc]
	arrays blocks[Array]
}

// slabBlock is the number of fields (and of array items) per block.
const slabBlock = 1024

// Reset makes every block reusable, dropping the references they hold.
// Under the denorm_poison build tag it instead overwrites everything handed
// out since the last Reset (fields with poison.Key and poison.Value, items
// with poison.Value, boxes with a document or array of them) and lets the
// blocks go, so a document kept past its batch is garbage for good
// (make test-poison).
func (s *Slab) Reset() {
	if poison.On {
		s.fields.poison(poisonField)
		s.items.poison(poison.Value)
		s.docs.poison(poisonDoc)
		s.arrays.poison(poisonArray)
	}
	s.keep = true
	s.fields.reset()
	s.items.reset()
	s.docs.reset()
	s.arrays.reset()
}

// What Reset overwrites with under denorm_poison.
var (
	poisonField = Field{Key: poison.Key, Value: poison.Value}
	poisonDoc   = Doc{poisonField}
	poisonArray = Array{poison.Value}
)

// doc, array, boxDoc and boxArray hand out the slab's memory. The reuse
// rule: what they return belongs to the batch being built, and must not be
// used after the slab's next Reset (its consumer's Produce callback has
// returned by then); what must outlive the batch is copied out of it
// (encoded, or its scalar values kept). The tests under denorm_poison hold every caller to it.
func (s *Slab) doc(n int) Doc {
	if s == nil || n > slabBlock/4 {
		return make(Doc, 0, n)
	}
	return s.fields.take(n, slabBlock, s.keep)
}

func (s *Slab) array(n int) Array {
	if s == nil || n > slabBlock/4 {
		return make(Array, 0, n)
	}
	return s.items.take(n, slabBlock, s.keep)
}

var (
	docType   = box.SliceType[Doc]()
	arrayType = box.SliceType[Array]()
)

// boxDoc returns d as a value.
func (s *Slab) boxDoc(d Doc) any {
	if s == nil || !box.Works {
		return d
	}
	p := s.docs.take(1, slabBlock/8, s.keep)[:1]
	p[0] = d
	return docType.At(&p[0])
}

// boxArray returns a as a value.
func (s *Slab) boxArray(a Array) any {
	if s == nil || !box.Works {
		return a
	}
	p := s.arrays.take(1, slabBlock/8, s.keep)[:1]
	p[0] = a
	return arrayType.At(&p[0])
}

// blocks is a list of blocks filled in order; the blocks up to cur are in
// use, their length is how much. stale[i] is how much of block i the round
// before the last reset used.
type blocks[T any] struct {
	all   [][]T
	cur   int
	stale []int
}

// take returns n elements (length 0, capacity n) from the current block,
// moving to the next block (made of size elements when there is none) when
// it has not room; unless keep, the full block is let go.
func (b *blocks[T]) take(n, size int, keep bool) []T {
	if len(b.all) == 0 {
		b.all = append(b.all, make([]T, 0, size))
	}
	blk := b.all[b.cur]
	if cap(blk)-len(blk) < n {
		if keep {
			b.cur++
		} else {
			b.all = b.all[:0]
		}
		if b.cur == len(b.all) {
			b.all = append(b.all, make([]T, 0, size))
		}
		blk = b.all[b.cur]
	}
	i := len(blk)
	b.all[b.cur] = blk[:i+n]
	return blk[i : i : i+n]
}

// poison overwrites every element in use with v and forgets the blocks,
// so that nothing written later hides the poison.
func (b *blocks[T]) poison(v T) {
	for _, blk := range b.all {
		poison.Fill(blk, v)
	}
	b.all, b.cur, b.stale = nil, 0, nil
}

// reset makes the blocks reusable. Refilling a block overwrites what it
// held, so only the part the last round did not reach is cleared (clearing
// whole blocks of pointers cost a sixth of a migration's time in write
// barriers): what a round leaves stays referenced one round longer at most.
func (b *blocks[T]) reset() {
	for len(b.stale) < len(b.all) {
		b.stale = append(b.stale, 0)
	}
	for i := range b.all {
		if n := len(b.all[i]); n < b.stale[i] {
			clear(b.all[i][n:b.stale[i]])
		}
		b.stale[i] = len(b.all[i])
		b.all[i] = b.all[i][:0]
	}
	b.cur = 0
}
