package compare

import (
	"bytes"
	"sync"

	"github.com/denorm/denorm/load"
)

// Pairing: where the target holds the documents in about the order the
// source builds them (a directory migrate wrote, a server's natural
// order after a migrate), an expected document usually meets its found
// twin, of the same _id and the same bytes, within a few thousand
// documents. Such a pair is settled where it meets: the two documents are
// compared byte for byte, neither is hashed, spilled or sorted with its
// side, and one small record of the pair (its _id and source row) goes to
// a sorter of pairs instead. The merge walks the pairs with both sides,
// so that a pair counts as identical and any other record of its _id, on
// either side, as a duplicate, as without pairing. Documents that meet no
// twin within the window are hashed and recorded with their side as
// before, so an order that does not match costs what no pairing costs
// (and the copy of the found side's documents).
//
// Bounds: each side keeps at most pairWindow documents, or pairBytes
// bytes, waiting for its twin (the found side a copy of each; the
// expected side copies only those that arrive before theirs), so that a
// twin up to pairWindow documents away is met. Each side waits while it
// is more than pairLead documents ahead of the other (neither waits once
// the other is done; both cannot be ahead at once): the faster side does
// not run past what the window holds, and the copy a document is compared
// with is recent, still in a cache (with the found side 2,048 documents
// ahead, comparing the bytes took three times as long).
const (
	pairWindow = 4096
	pairBytes  = 8 << 20
	pairLead   = 64
	// pairFreeBytes bounds the document memory each side keeps for reuse.
	pairFreeBytes = 2 << 20
)

// waiting is a document of either side waiting in the window for its
// twin: its bytes are a copy (or, for a matched expected one, no longer
// needed).
type waiting struct {
	key     []byte
	id      load.Value // in idData's memory
	idData  []byte
	flags   byte
	source  string
	doc     []byte
	off     int64 // a found document's place (AddLine's), -1 to spill
	matched bool  // met its twin: the pair is recorded, this copy is not
}

// set fills w with a copy of a document.
func (w *waiting) set(key []byte, id load.Value, doc []byte, flags byte, source string, off int64) {
	w.key = append(w.key[:0], key...)
	w.idData = append(w.idData[:0], id.Data...)
	w.id = load.Value{Type: id.Type, Data: w.idData}
	w.doc = append(w.doc[:0], doc...)
	w.flags, w.source, w.off, w.matched = flags, source, off, false
}

// queue is one side's waiting documents in the order they came, from
// head on, with the total of their bytes.
type queue struct {
	q     []*waiting
	head  int
	bytes int
	out   []*waiting // pop's result
	free  []*waiting // popped ones, their memory reused
	// freeBytes is the document memory of free.
	freeBytes int
}

func (q *queue) push(w *waiting) {
	q.q = append(q.q, w)
	q.bytes += len(w.doc)
}

func (q *queue) len() int { return len(q.q) - q.head }

// pop takes the leading matched documents and, past the bounds (or all,
// with all), the oldest waiting ones out of the queue, into q.out,
// removing them from index (where the other side looks them up).
func (q *queue) pop(all bool, index map[string]*waiting) []*waiting {
	q.out = q.out[:0]
	for q.head < len(q.q) {
		w := q.q[q.head]
		over := all || q.len() > pairWindow || q.bytes > pairBytes
		if !w.matched && !over {
			break
		}
		if index[string(w.key)] == w {
			delete(index, string(w.key))
		}
		q.bytes -= len(w.doc)
		q.q[q.head] = nil
		q.head++
		q.out = append(q.out, w)
	}
	if q.head == len(q.q) {
		q.q, q.head = q.q[:0], 0
	} else if q.head > pairWindow {
		n := copy(q.q, q.q[q.head:])
		clear(q.q[n:])
		q.q, q.head = q.q[:n], 0
	}
	return q.out
}

// get returns a waiting document to fill (of q.free when there is one).
func (q *queue) get() *waiting {
	if n := len(q.free); n > 0 {
		w := q.free[n-1]
		q.free = q.free[:n-1]
		q.freeBytes -= cap(w.doc)
		return w
	}
	return &waiting{}
}

// release puts popped documents back for reuse: at most pairWindow, with
// at most pairFreeBytes of document memory between them (a large document's
// memory is left to the collector).
func (q *queue) release(out []*waiting) {
	for _, w := range out {
		if len(q.free) >= pairWindow {
			return
		}
		doc := w.doc[:0]
		if q.freeBytes+cap(doc) > pairFreeBytes {
			doc = nil
		}
		*w = waiting{key: w.key[:0], doc: doc, idData: w.idData[:0]}
		q.free = append(q.free, w)
		q.freeBytes += cap(doc)
	}
}

type pairing struct {
	mu   sync.Mutex
	cond *sync.Cond
	// exp and found are each side's waiting documents, expIdx and
	// foundIdx the first of each _id on each side, while unmatched.
	exp, found        queue
	expIdx, foundIdx  map[string]*waiting
	nExp, nFound      int64
	done              bool // the expected side is complete
	fdone             bool // the found side is complete
	paired, unmatched int64
}

// Pair turns pairing on: call it before either side is added to, and
// ExpectedDone and FoundDone once each side is complete (also after a
// failure), or the other side may wait for it. A pair settled this way
// is an Identical entry whose documents cannot be Read (they were equal).
func (c *Comparison) Pair() {
	p := &pairing{expIdx: map[string]*waiting{}, foundIdx: map[string]*waiting{}}
	p.cond = sync.NewCond(&p.mu)
	c.pair = p
}

// ExpectedDone says the expected side gets no more documents.
func (c *Comparison) ExpectedDone() {
	if p := c.pair; p != nil {
		p.mu.Lock()
		p.done = true
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// FoundDone says the found side gets no more documents.
func (c *Comparison) FoundDone() {
	if p := c.pair; p != nil {
		p.mu.Lock()
		p.fdone = true
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// Paired says how many expected documents were settled with their found
// twin, and how many met none and were recorded with their side, with
// Pair.
func (c *Comparison) Paired() (paired, unmatched int64) {
	if p := c.pair; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.paired, p.unmatched
	}
	return 0, 0
}

// pairExpected adds a sampled expected document through the pairing:
// settled with its found twin when one waits with the same bytes, else
// kept waiting for one.
func (c *Comparison) pairExpected(key []byte, id load.Value, doc []byte, flags byte, source string) error {
	p := c.pair
	p.mu.Lock()
	for !p.fdone && p.nExp > p.nFound+pairLead {
		p.cond.Wait()
	}
	p.nExp++
	if p.nExp%32 == 0 {
		p.cond.Broadcast()
	}
	// Only the first record of an _id on each side pairs: the merge
	// compares the first two, as without pairing (the others are
	// duplicates), so that two records of an _id on one side, within the
	// window, are reported as they are without it.
	_, second := p.expIdx[string(key)]
	twin := p.foundIdx[string(key)]
	same := !second && twin != nil && twin.flags == flags && bytes.Equal(twin.doc, doc)
	if same {
		twin.matched = true
		delete(p.foundIdx, string(key))
	}
	if same && p.exp.len() == 0 {
		p.paired++
		p.mu.Unlock()
		return c.pairRecord(key, id, source)
	}
	// Every other document goes through the queue, so that the records
	// reach the sorters in the order they came (the first of two with
	// one _id is the one compared).
	w := p.exp.get()
	if same {
		doc = nil // the pair is recorded without it
	}
	w.set(key, id, doc, flags, source, -1)
	w.matched = same
	if !same && !second {
		p.expIdx[string(key)] = w
	}
	p.exp.push(w)
	out := p.exp.pop(false, p.expIdx)
	p.count(out)
	p.mu.Unlock()
	return c.flushQueue(&c.Exp, &p.exp, out)
}

// count adds popped expected documents to the counts.
func (p *pairing) count(out []*waiting) {
	for _, w := range out {
		if w.matched {
			p.paired++
		} else {
			p.unmatched++
		}
	}
}

// flushQueue records documents popped from side s's queue q
// (recordWaiting) and puts them back in q for reuse.
func (c *Comparison) flushQueue(s *Side, q *queue, out []*waiting) error {
	if len(out) == 0 {
		return nil
	}
	err := c.recordWaiting(s, out)
	p := c.pair
	p.mu.Lock()
	q.release(out)
	p.mu.Unlock()
	return err
}

// recordWaiting records documents taken out of a side's queue: matched
// expected ones as pairs, matched found ones not at all (their pair is
// the expected one's), the others hashed and recorded with their side.
func (c *Comparison) recordWaiting(s *Side, out []*waiting) error {
	for _, w := range out {
		var err error
		switch {
		case w.matched && s == &c.Exp:
			err = c.pairRecord(w.key, w.id, w.source)
		case w.matched: // its pair is the expected one's
		default:
			err = c.hashRecord(s, w.key, w.id, w.doc, w.flags, w.source, w.off, len(w.doc))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pairFound adds a sampled found document through the pairing: it
// settles the expected document waiting for it with the same bytes, or
// waits for one itself. It then waits while the found side is too far
// ahead.
func (c *Comparison) pairFound(key []byte, id load.Value, doc []byte, flags byte, source string, off int64) error {
	p := c.pair
	p.mu.Lock()
	p.nFound++
	if p.nFound%32 == 0 {
		p.cond.Broadcast()
	}
	var out []*waiting
	_, second := p.foundIdx[string(key)]
	if w := p.expIdx[string(key)]; !second && w != nil && w.flags == flags && bytes.Equal(w.doc, doc) {
		w.matched = true
		delete(p.expIdx, string(key))
	} else {
		f := p.found.get()
		f.set(key, id, doc, flags, source, off)
		if !second { // the first of an _id is the one met (pairExpected)
			p.foundIdx[string(key)] = f
		}
		p.found.push(f)
		out = p.found.pop(false, p.foundIdx)
	}
	p.mu.Unlock()
	if err := c.flushQueue(&c.Found, &p.found, out); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.done && p.nFound > p.nExp+pairLead {
		p.cond.Wait()
	}
	return nil
}

// drainPairs records what still waits on either side: call it once both
// sides are complete.
func (c *Comparison) drainPairs() error {
	p := c.pair
	if p == nil {
		return nil
	}
	p.mu.Lock()
	out := p.exp.pop(true, p.expIdx)
	p.count(out)
	p.mu.Unlock()
	if err := c.flushQueue(&c.Exp, &p.exp, out); err != nil {
		return err
	}
	p.mu.Lock()
	out = p.found.pop(true, p.foundIdx)
	p.mu.Unlock()
	return c.flushQueue(&c.Found, &p.found, out)
}
