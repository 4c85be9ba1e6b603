// Package extsort sorts (key, value) byte records by key with bounded
// memory: records are buffered up to a byte budget, sorted and written to
// temporary run files, and the runs are merged on reading. Memory is the
// budget plus one read buffer per run, whatever the number of records.
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

type record struct{ key, val []byte }

// Sorter collects records and returns them sorted by key (bytes.Compare);
// records with equal keys come back in the order they were added. A
// Sorter is used by one goroutine. Close removes its temporary files.
type Sorter struct {
	dir    string
	budget int
	recs   []record
	arena  []byte
	used   int
	runs   []string
	closed bool
	seq    int
	name   string
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
// bytes (the slice headers).
const recordOverhead = 48

// Add copies key and val into the sorter.
func (s *Sorter) Add(key, val []byte) error {
	if s.closed {
		return errors.New("extsort: add after close")
	}
	n := len(key) + len(val)
	if s.used+n+recordOverhead > s.budget && len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	if cap(s.arena)-len(s.arena) < n {
		size := min(1<<20, s.budget/4)
		if n > size {
			size = n
		}
		s.arena = make([]byte, 0, size)
	}
	start := len(s.arena)
	s.arena = append(s.arena, key...)
	s.arena = append(s.arena, val...)
	r := record{key: s.arena[start : start+len(key) : start+len(key)], val: s.arena[start+len(key) : start+n : start+n]}
	s.recs = append(s.recs, r)
	s.used += n + recordOverhead
	return nil
}

// Runs is the number of run files written so far.
func (s *Sorter) Runs() int { return len(s.runs) }

func (s *Sorter) sortBuffer() {
	slices.SortStableFunc(s.recs, func(a, b record) int { return bytes.Compare(a.key, b.key) })
}

// spill sorts the buffer and writes it as a run file.
func (s *Sorter) spill() error {
	s.sortBuffer()
	f, err := os.CreateTemp(s.dir, s.name+"-run-*")
	if err != nil {
		return fmt.Errorf("sort spill file: %w (set a temporary directory with room, --temp-dir)", err)
	}
	s.runs = append(s.runs, f.Name())
	w := bufio.NewWriterSize(f, 1<<16)
	var hdr [2 * binary.MaxVarintLen64]byte
	for _, r := range s.recs {
		n := binary.PutUvarint(hdr[:], uint64(len(r.key)))
		n += binary.PutUvarint(hdr[n:], uint64(len(r.val)))
		if _, err := w.Write(hdr[:n]); err != nil {
			f.Close()
			return fmt.Errorf("sort spill file %s: %w", f.Name(), err)
		}
		w.Write(r.key)
		w.Write(r.val)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("sort spill file %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sort spill file %s: %w", f.Name(), err)
	}
	s.recs = s.recs[:0]
	s.arena = nil
	s.used = 0
	return nil
}

// Iter returns the records in key order. Iter may be called several times
// (each call reads everything again); no Add may follow the first call.
func (s *Sorter) Iter() (*Iter, error) {
	if len(s.runs) == 0 {
		s.sortBuffer()
		return &Iter{mem: s.recs, memMode: true}, nil
	}
	if len(s.recs) > 0 {
		if err := s.spill(); err != nil {
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
	f, err := os.CreateTemp(s.dir, s.name+"-run-*")
	if err != nil {
		return fmt.Errorf("sort merge file: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	var hdr [2 * binary.MaxVarintLen64]byte
	for it.Next() {
		k, v := it.Key(), it.Value()
		m := binary.PutUvarint(hdr[:], uint64(len(k)))
		m += binary.PutUvarint(hdr[m:], uint64(len(v)))
		w.Write(hdr[:m])
		w.Write(k)
		w.Write(v)
	}
	if err := it.Err(); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("sort merge file %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, r := range s.runs[:n] {
		os.Remove(r)
	}
	s.runs = append([]string{f.Name()}, s.runs[n:]...)
	return nil
}

// Close removes the run files.
func (s *Sorter) Close() error {
	s.closed = true
	var first error
	for _, r := range s.runs {
		if err := os.Remove(r); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	s.runs, s.recs, s.arena = nil, nil, nil
	return first
}

// Iter walks sorted records. Key and Value are valid until the next call
// to Next.
type Iter struct {
	memMode bool
	mem     []record
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
		it.key, it.val = it.mem[it.pos].key, it.mem[it.pos].val
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
