// Package extsort sorts (key, value) byte records by key with bounded
// memory: records are buffered up to a byte budget, sorted and written to
// temporary run files, and the runs are merged on reading. Memory is the
// budget plus one read buffer per run, whatever the number of records.
// Records added in key order (a source read in key order) are not sorted:
// past streamAfter bytes in order, they go straight to a run file as they
// come, and take no more memory than its write buffer until one comes out
// of order.
//
// It exists for verify, which must compare two streams of documents that
// do not arrive in _id order (bucket ids, collations, shared collections)
// without holding either side in memory.
package extsort

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/denorm/denorm/internal/poison"
)

// runBuffer is the read buffer of each run merged: with up to maxRuns runs
// per sort, it is what the merge's memory grows with as runs multiply.
const runBuffer = 16 << 10

// maxRuns caps the run files merged at once; beyond it runs are merged
// into bigger runs first, so open files stay bounded.
const maxRuns = 64

// streamAfter is how many bytes of records in key order are buffered
// before they are written to a run that the next ones in order are
// appended to (at most the budget).
const streamAfter = 1 << 20

// record is a buffered record: its key and value, one after the other,
// at off in block blk. It holds no pointer, so that the collector never
// walks the buffer: with a slice header per key and value (the records of
// a 16 MiB buffer are a few hundred thousand), marking them took a third
// of verify's CPU.
type record struct {
	blk        int32
	off        uint32
	klen, vlen uint32
}

// Sorter collects records and returns them sorted by key (bytes.Compare);
// records with equal keys come back in the order they were added. A
// Sorter is used by one goroutine. Close removes its temporary files.
type Sorter struct {
	dir    string
	budget int
	recs   []record
	// blocks hold the buffered records' bytes; the records fill
	// blocks[cur], and the blocks are used again after a spill.
	blocks [][]byte
	cur    int
	used   int
	runs   []string
	closed bool
	seq    int
	name   string
	// disordered: the buffered records are not in key order.
	disordered bool
	// stream is the last run while the records go on coming in key
	// order: appended to, its last key in last; nil once one did not.
	stream *runWriter
	last   []byte
}

// runWriter writes a run file.
type runWriter struct {
	f   *os.File
	w   *bufio.Writer
	hdr [2 * binary.MaxVarintLen64]byte
}

func (s *Sorter) createRun() (*runWriter, error) {
	f, err := os.CreateTemp(s.dir, s.name+"-run-*")
	if err != nil {
		return nil, fmt.Errorf("sort spill file: %w (set a temporary directory with room, --temp-dir)", err)
	}
	s.runs = append(s.runs, f.Name())
	return &runWriter{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// write adds a record. bufio keeps the first write error, which every
// later write returns, and finish too.
func (rw *runWriter) write(key, val []byte) error {
	n := binary.PutUvarint(rw.hdr[:], uint64(len(key)))
	n += binary.PutUvarint(rw.hdr[n:], uint64(len(val)))
	rw.w.Write(rw.hdr[:n])
	rw.w.Write(key)
	if _, err := rw.w.Write(val); err != nil {
		return fmt.Errorf("sort spill file %s: %w", rw.f.Name(), err)
	}
	return nil
}

// finish flushes and closes the run file.
func (rw *runWriter) finish() error {
	err := rw.w.Flush()
	if cerr := rw.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sort spill file %s: %w", rw.f.Name(), err)
	}
	return nil
}

// endStream finishes the run records in order were appended to.
func (s *Sorter) endStream() error {
	if s.stream == nil {
		return nil
	}
	rw := s.stream
	s.stream = nil
	return rw.finish()
}

// New returns a sorter that keeps at most about budget bytes of records in
// memory and writes its runs to temporary files in dir ("" is the system
// temporary directory). name prefixes the file names.
func New(dir, name string, budget int) *Sorter {
	if budget < 1<<12 {
		budget = 1 << 12
	}
	return &Sorter{dir: dir, budget: budget, name: name}
}

// recordOverhead approximates the memory of one buffered record beyond its
// bytes (its record).
const recordOverhead = 16

// Add copies key and val into the sorter.
func (s *Sorter) Add(key, val []byte) error {
	if s.closed {
		return errors.New("extsort: add after close")
	}
	if s.stream != nil {
		if bytes.Compare(key, s.last) >= 0 {
			s.last = append(s.last[:0], key...)
			return s.stream.write(key, val)
		}
		if err := s.endStream(); err != nil {
			return err
		}
	}
	n := len(key) + len(val)
	if len(s.recs) > 0 && !s.disordered && bytes.Compare(key, s.key(s.recs[len(s.recs)-1])) < 0 {
		s.disordered = true
	}
	// A buffer in order past streamAfter is written as it is, and the
	// records that follow it in order are appended to its run.
	if len(s.recs) > 0 && (s.used+n+recordOverhead > s.budget || !s.disordered && s.used >= min(streamAfter, s.budget)) {
		if err := s.spill(); err != nil {
			return err
		}
		if s.stream != nil {
			return s.Add(key, val)
		}
	}
	if s.cur >= len(s.blocks) || cap(s.blocks[s.cur])-len(s.blocks[s.cur]) < n {
		s.nextBlock(n)
	}
	b := &s.blocks[s.cur]
	start := len(*b)
	*b = append(*b, key...)
	*b = append(*b, val...)
	s.recs = append(s.recs, record{blk: int32(s.cur), off: uint32(start), klen: uint32(len(key)), vlen: uint32(len(val))})
	s.used += n + recordOverhead
	return nil
}

// blockSize is the size of a block of records' bytes.
func (s *Sorter) blockSize() int { return min(1<<20, s.budget/4) }

// nextBlock makes blocks[cur] a block with room for n more bytes: the next
// block, emptied by a spill, or a new one (of n bytes, for a record larger
// than a block).
func (s *Sorter) nextBlock(n int) {
	if s.cur < len(s.blocks) && len(s.blocks[s.cur]) > 0 {
		s.cur++
	}
	if s.cur < len(s.blocks) && cap(s.blocks[s.cur]) >= n {
		return // emptied by a spill
	}
	b := make([]byte, 0, max(s.blockSize(), n))
	if s.cur < len(s.blocks) {
		// Too small for this record: the new block goes in its place.
		s.blocks[s.cur] = b
		return
	}
	s.blocks = append(s.blocks, b)
}

// key and val are r's key and value.
func (s *Sorter) key(r record) []byte {
	b := s.blocks[r.blk]
	return b[r.off : r.off+r.klen : r.off+r.klen]
}

func (s *Sorter) val(r record) []byte {
	b := s.blocks[r.blk]
	start := r.off + r.klen
	return b[start : start+r.vlen : start+r.vlen]
}

// Runs is the number of run files written so far.
func (s *Sorter) Runs() int { return len(s.runs) }

func (s *Sorter) sortBuffer() {
	if s.disordered {
		slices.SortStableFunc(s.recs, func(a, b record) int { return bytes.Compare(s.key(a), s.key(b)) })
	}
}

// spill sorts the buffer and writes it as a run file; a buffer that was
// in order stays open as the stream the next records in order go to.
func (s *Sorter) spill() error {
	s.sortBuffer()
	rw, err := s.createRun()
	if err != nil {
		return err
	}
	for _, r := range s.recs {
		if err := rw.write(s.key(r), s.val(r)); err != nil {
			rw.finish()
			return err
		}
	}
	if !s.disordered && len(s.recs) > 0 {
		s.stream = rw
		s.last = append(s.last[:0], s.key(s.recs[len(s.recs)-1])...)
		s.blocks = nil // what is in order takes no buffer now
	} else if err := rw.finish(); err != nil {
		return err
	}
	s.recs = s.recs[:0]
	s.disordered = false
	// The blocks are filled again; poison.Reuse marks what they held
	// (make test-poison), as a reader of it would be wrong.
	for i, b := range s.blocks {
		s.blocks[i] = poison.Reuse(b)[:0]
	}
	s.cur = 0
	s.used = 0
	return nil
}

// Iter returns the records in key order. Iter may be called several times
// (each call reads everything again); no Add may follow the first call.
func (s *Sorter) Iter() (*Iter, error) {
	if err := s.endStream(); err != nil {
		return nil, err
	}
	if len(s.runs) == 0 {
		s.sortBuffer()
		return &Iter{mem: s.recs, sorter: s, memMode: true}, nil
	}
	if len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
		if err := s.endStream(); err != nil { // a buffer in order
			return nil, err
		}
	}
	for len(s.runs) > maxRuns {
		if err := s.mergeRuns(maxRuns); err != nil {
			return nil, err
		}
	}
	return openRuns(s.runs)
}

// mergeRuns merges the first n runs into one.
func (s *Sorter) mergeRuns(n int) error {
	it, err := openRuns(s.runs[:n])
	if err != nil {
		return err
	}
	defer it.Close()
	rw, err := s.createRun()
	if err != nil {
		return err
	}
	merged := s.runs[len(s.runs)-1]
	s.runs = s.runs[:len(s.runs)-1]
	for it.Next() && err == nil {
		err = rw.write(it.Key(), it.Value())
	}
	if err == nil {
		err = it.Err()
	}
	if err != nil {
		rw.finish()
		os.Remove(merged)
		return err
	}
	if err := rw.finish(); err != nil {
		os.Remove(merged)
		return err
	}
	for _, r := range s.runs[:n] {
		os.Remove(r)
	}
	s.runs = append([]string{merged}, s.runs[n:]...)
	return nil
}

// Close removes the run files.
func (s *Sorter) Close() error {
	s.closed = true
	first := s.endStream()
	for _, r := range s.runs {
		if err := os.Remove(r); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	s.runs, s.recs, s.blocks = nil, nil, nil
	return first
}

// Iter walks sorted records. Key and Value are valid until the next call
// to Next.
type Iter struct {
	memMode bool
	mem     []record
	sorter  *Sorter // memMode: the records' blocks
	pos     int
	h       runHeap
	files   []*os.File
	cur     *run
	key     []byte
	val     []byte
	err     error
	started bool
}

type run struct {
	idx      int
	r        *bufio.Reader
	name     string
	key, val []byte
}

func (r *run) next() (bool, error) {
	kl, err := binary.ReadUvarint(r.r)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sort run %s: %w", r.name, err)
	}
	vl, err := binary.ReadUvarint(r.r)
	if err != nil {
		return false, fmt.Errorf("sort run %s: %w", r.name, err)
	}
	// The buffers of the last record are reused: Key and Value are valid
	// until Next (poison.Reuse).
	r.key, r.val = poison.Reuse(r.key), poison.Reuse(r.val)
	if cap(r.key) < int(kl) {
		r.key = make([]byte, kl)
	}
	r.key = r.key[:kl]
	if cap(r.val) < int(vl) {
		r.val = make([]byte, vl)
	}
	r.val = r.val[:vl]
	if _, err := io.ReadFull(r.r, r.key); err != nil {
		return false, fmt.Errorf("sort run %s: %w", r.name, err)
	}
	if _, err := io.ReadFull(r.r, r.val); err != nil {
		return false, fmt.Errorf("sort run %s: %w", r.name, err)
	}
	return true, nil
}

type runHeap []*run

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].key, h[j].key); c != 0 {
		return c < 0
	}
	return h[i].idx < h[j].idx
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func openRuns(names []string) (*Iter, error) {
	it := &Iter{}
	for i, name := range names {
		f, err := os.Open(name)
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("sort run: %w", err)
		}
		it.files = append(it.files, f)
		r := &run{idx: i, r: bufio.NewReaderSize(f, runBuffer), name: name}
		ok, err := r.next()
		if err != nil {
			it.Close()
			return nil, err
		}
		if ok {
			it.h = append(it.h, r)
		}
	}
	heap.Init(&it.h)
	return it, nil
}

// Next advances to the next record; false at the end or on error (Err).
func (it *Iter) Next() bool {
	if it.err != nil {
		return false
	}
	if it.memMode {
		if it.pos >= len(it.mem) {
			return false
		}
		r := it.mem[it.pos]
		it.key, it.val = it.sorter.key(r), it.sorter.val(r)
		it.pos++
		return true
	}
	if it.cur != nil {
		// Advance the run the last record came from; its buffers are
		// reused, which is why Key and Value are only valid until Next.
		ok, err := it.cur.next()
		if err != nil {
			it.err = err
			return false
		}
		if ok {
			heap.Fix(&it.h, 0)
		} else {
			heap.Pop(&it.h)
		}
		it.cur = nil
	}
	if len(it.h) == 0 {
		return false
	}
	it.cur = it.h[0]
	it.key, it.val = it.cur.key, it.cur.val
	return true
}

// Key is the current record's key.
func (it *Iter) Key() []byte { return it.key }

// Value is the current record's value.
func (it *Iter) Value() []byte { return it.val }

// Err is the first read error.
func (it *Iter) Err() error { return it.err }

// Close releases the run files' handles.
func (it *Iter) Close() error {
	for _, f := range it.files {
		f.Close()
	}
	it.files = nil
	return nil
}
