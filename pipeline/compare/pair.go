package compare

import (
	"sync"

	"github.com/denorm/denorm/load"
)

// Pairing: where the target holds the documents in about the order the
// source builds them (a directory migrate wrote, a server's natural
// order after a migrate), an expected document usually meets its found
// twin, of the same _id and hash, within a few thousand documents. Such
// an expected document need not be spilled: its record points to the
// found side's copy (a directory target's line, or the found side's spill
// file), which Read checks against the hash. Every record still goes to
// both sorters, so the merge counts, compares and finds duplicates as it
// does without pairing; pairing only saves writing a second copy of the
// identical documents. Documents that meet no twin within the window are
// spilled as before, so an order that does not match costs what no
// pairing costs.
//
// Bounds: the found side keeps the places of its last pairWindow
// documents (a few dozen bytes each), the expected side at most
// pairWindow documents or pairBytes bytes waiting for their twin. So that
// the faster side does not run past what the window holds, each side
// waits while it is more than pairWindow/2 documents ahead of the other
// (neither waits once the other is done; both cannot be ahead at once).
const (
	pairWindow = 4096
	pairBytes  = 8 << 20
)

type place struct {
	hash [hashLen]byte
	off  int64
	size int
}

type pending struct {
	key     []byte
	id      load.Value // in idData's memory
	idData  []byte
	flags   byte
	source  string
	doc     []byte
	hash    [hashLen]byte
	matched bool
	at      place // the found twin's place, when matched
}

type pairing struct {
	mu     sync.Mutex
	cond   *sync.Cond
	found  map[string]place
	ring   []string // the found keys in found order, for eviction
	head   int
	wait   map[string]*pending
	fifo   []*pending // waiting from fh on
	fh     int
	out    []*pending // popLocked's result, used by the expected side only
	free   []*pending // popped ones, their doc memory reused
	bytes  int
	nExp   int64
	nFound int64
	done   bool // the expected side is complete
	fdone  bool // the found side is complete
	// paired and spilled count the expected documents recorded at their
	// twin's place and those spilled.
	paired, spilled int64
}

// Pair turns pairing on: call it before either side is added to, and
// ExpectedDone once the expected side is complete (also after a failure),
// or the found side may wait for it.
func (c *Comparison) Pair() {
	p := &pairing{found: map[string]place{}, wait: map[string]*pending{}}
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

// Paired says how many expected documents were recorded at their found
// twin's place, and how many were spilled, with Pair.
func (c *Comparison) Paired() (paired, spilled int64) {
	if p := c.pair; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.paired, p.spilled
	}
	return 0, 0
}

// pairExpected adds a sampled expected document through the pairing:
// recorded at its found twin's place when one was seen, else kept
// waiting for one (the oldest waiting, past the bounds, are spilled).
func (c *Comparison) pairExpected(s *Side, key []byte, id load.Value, doc []byte, hash [hashLen]byte, flags byte, source string) error {
	p := c.pair
	p.mu.Lock()
	for !p.fdone && p.nExp > p.nFound+pairWindow/2 {
		p.cond.Wait()
	}
	p.nExp++
	if p.nExp%64 == 0 {
		p.cond.Broadcast()
	}
	if at, ok := p.found[string(key)]; ok && at.hash == hash && p.fh == len(p.fifo) {
		p.paired++
		p.mu.Unlock()
		return c.record(s, key, id, &hash, source, at.off, at.size, flagInFound|flags)
	}
	// Every other document goes through the queue, so that the records
	// reach the sorter in the order they came (the first of two with one
	// _id is the one compared).
	w := p.get()
	w.key, w.source, w.doc, w.hash, w.flags = key, source, append(w.doc[:0], doc...), hash, flags
	w.idData = append(w.idData[:0], id.Data...)
	w.id = load.Value{Type: id.Type, Data: w.idData}
	if at, ok := p.found[string(key)]; ok && at.hash == hash {
		w.matched, w.at = true, at
	} else if _, dup := p.wait[string(key)]; !dup {
		p.wait[string(key)] = w
	}
	p.fifo = append(p.fifo, w)
	p.bytes += len(doc)
	out := p.popLocked(false)
	p.mu.Unlock()
	return c.flushPending(s, out)
}

// popLocked takes the leading matched documents and, past the bounds (or
// all, with all), the oldest waiting ones out of the queue (p.fifo from
// p.fh on), into p.out.
func (p *pairing) popLocked(all bool) []*pending {
	p.out = p.out[:0]
	for p.fh < len(p.fifo) {
		w := p.fifo[p.fh]
		over := all || len(p.fifo)-p.fh > pairWindow || p.bytes > pairBytes
		if !w.matched && !over {
			break
		}
		if w.matched {
			p.paired++
		} else {
			p.spilled++
			if p.wait[string(w.key)] == w {
				delete(p.wait, string(w.key))
			}
		}
		p.bytes -= len(w.doc)
		p.fifo[p.fh] = nil
		p.fh++
		p.out = append(p.out, w)
	}
	if p.fh == len(p.fifo) {
		p.fifo, p.fh = p.fifo[:0], 0
	} else if p.fh > pairWindow {
		n := copy(p.fifo, p.fifo[p.fh:])
		clear(p.fifo[n:])
		p.fifo, p.fh = p.fifo[:n], 0
	}
	return p.out
}

// get returns a pending document to fill (of p.free when there is one).
func (p *pairing) get() *pending {
	if n := len(p.free); n > 0 {
		w := p.free[n-1]
		p.free = p.free[:n-1]
		return w
	}
	return &pending{}
}

// flushPending records documents popped from the queue: matched ones at
// their twin's place, the others spilled; they then go back to p.free.
func (c *Comparison) flushPending(s *Side, out []*pending) error {
	if len(out) == 0 {
		return nil
	}
	defer func() {
		p := c.pair
		p.mu.Lock()
		for _, w := range out {
			if len(p.free) < 64 {
				*w = pending{doc: w.doc[:0], idData: w.idData[:0]}
				p.free = append(p.free, w)
			}
		}
		p.mu.Unlock()
	}()
	for _, w := range out {
		var err error
		if w.matched {
			err = c.record(s, w.key, w.id, &w.hash, w.source, w.at.off, w.at.size, flagInFound|w.flags)
		} else {
			err = c.spillRecord(s, w.key, w.id, w.doc, &w.hash, w.flags, w.source)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pairFound notes a sampled found document's place, matching the
// expected document waiting for it; it then waits while the found side is
// too far ahead.
func (c *Comparison) pairFound(key []byte, at place) {
	p := c.pair
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nFound++
	if p.nFound%64 == 0 {
		p.cond.Broadcast()
	}
	if w, ok := p.wait[string(key)]; ok && !w.matched && w.hash == at.hash {
		w.matched, w.at = true, at
		delete(p.wait, string(key))
	} else {
		k := string(key)
		if len(p.ring) < pairWindow {
			p.ring = append(p.ring, k)
		} else {
			delete(p.found, p.ring[p.head])
			p.ring[p.head] = k
			p.head = (p.head + 1) % pairWindow
		}
		p.found[k] = at
	}
	for !p.done && p.nFound > p.nExp+pairWindow/2 {
		p.cond.Wait()
	}
}

// drainPairs records what still waits on the expected side: call it once
// both sides are complete.
func (c *Comparison) drainPairs() error {
	p := c.pair
	if p == nil {
		return nil
	}
	p.mu.Lock()
	out := p.popLocked(true)
	p.mu.Unlock()
	return c.flushPending(&c.Exp, out)
}
