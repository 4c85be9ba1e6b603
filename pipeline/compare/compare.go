// Package compare compares two sides of documents, bounded in memory, for verify and for
// sync's diff passes: each side becomes a stream of small records
// (collection + canonical _id, a keyed hash of the document's BSON, where the
// document lies in a local spill file), sorted with an external merge sort
// (internal/extsort) and merged. Only the documents whose hashes differ
// are read back from the spill files.
package compare

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"os"

	"github.com/denorm/denorm/internal/extsort"
	"github.com/denorm/denorm/load"
)

// Comparison holds the two sides being compared: the expected documents
// (built from the source) and the found ones (read from the target).
type Comparison struct {
	Exp, Found Side
	pair       *pairing
	// pairs holds a record per pair settled by the pairing (pair.go),
	// which neither side's sorter holds; empty without pairing.
	pairs   *extsort.Sorter
	pairBuf []byte
	// sampled, when set, picks the sort keys whose documents are hashed
	// and spilled (verify's --sample); the others are only counted.
	Sampled func(key []byte) bool
}

// New opens both sides' sorters and spill files in dir, with a
// sort budget of mem bytes each.
func New(dir string, mem int) (*Comparison, error) {
	c := &Comparison{pairs: extsort.New(dir, "pairs", mem)}
	if err := c.Exp.open(dir, "expected", mem); err != nil {
		return nil, err
	}
	if err := c.Found.open(dir, "found", mem); err != nil {
		c.Exp.close()
		return nil, err
	}
	return c, nil
}

func (c *Comparison) Close() {
	c.Exp.close()
	c.Found.close()
	c.pairs.Close()
}

// Side is one side's sorter and document spill file. The two sides may
// be filled by different goroutines (Add touches only its side).
type Side struct {
	// Stored, when set, reads back the lines the caller keeps itself (a
	// directory target's, at the place AddLine was given): Read checks
	// what it reads back against the hash taken when it was added.
	Stored func(coll string, off int64, size int) ([]byte, error)

	sorter *extsort.Sorter
	f      *os.File
	w      *bufio.Writer
	off    int64
	buf    []byte
	key    []byte // addKeyed's document key, reused
}

func (s *Side) open(dir, name string, mem int) error {
	f, err := os.CreateTemp(dir, name+"-docs-*")
	if err != nil {
		return fmt.Errorf("spill file: %w (set --temp-dir to a directory with room)", err)
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 1<<20)
	s.sorter = extsort.New(dir, name, mem)
	return nil
}

func (s *Side) close() {
	if s.sorter != nil {
		s.sorter.Close()
	}
	if s.f != nil {
		s.f.Close()
	}
}

// Record values: flag byte, then when sampled (and not a pair) the
// document's hash (16), spill offset (8) and length (4); then the raw _id
// (type byte, uvarint length, bytes) and the source row name.
const (
	flagSampled = 1
	// flagPair: a record of the pairs' sorter, an expected document and
	// its found twin with the same bytes (pair.go), neither kept.
	flagPair = 2
	// flagJSON: the document is kept as a line of relaxed Extended JSON
	// (AddLine), its hash that of the line.
	flagJSON = 4
	hashLen  = 16
)

// Add stores one document of side s. Calls for the two sides may run
// concurrently; doc is copied.
func (c *Comparison) Add(s *Side, coll string, doc []byte, source string) error {
	return c.add(s, coll, doc, source, -1, 0)
}

// AddLine stores one document of side s given as a line of relaxed
// Extended JSON (a directory target's, or the line migrate writes for an
// expected document) with its _id: the line is hashed and kept as it is,
// and Read parses it. off is where the caller keeps the line (a side with
// Stored); -1 spills it. Equal lines are equal documents; lines that
// differ may still be equal documents (another spelling of the same
// JSON), which the caller tells by comparing what Read gives.
func (c *Comparison) AddLine(s *Side, coll string, id load.Value, line []byte, source string, off int64) error {
	if off >= 0 && s.Stored == nil {
		return errors.New("compare: a kept line on a side without Stored")
	}
	return c.addKeyed(s, coll, id, line, flagJSON, source, off, len(line))
}

func (c *Comparison) add(s *Side, coll string, doc []byte, source string, off int64, size int) error {
	idv, err := load.DocumentID(doc)
	if err != nil {
		return fmt.Errorf("collection %q: %w", coll, err)
	}
	return c.addKeyed(s, coll, idv, doc, 0, source, off, size)
}

func (c *Comparison) addKeyed(s *Side, coll string, idv load.Value, doc []byte, flags byte, source string, off int64, size int) error {
	// The side's scratch key: everything below copies what it keeps
	// (the sorter, the pairing's maps and waiting documents).
	s.key = appendIDKey(s.key[:0], coll, idv)
	key := s.key
	if c.Sampled != nil && !c.Sampled(key) {
		return c.record(s, key, idv, nil, source, 0, 0, 0)
	}
	if c.pair != nil {
		if s == &c.Exp {
			return c.pairExpected(key, idv, doc, flags, source)
		}
		return c.pairFound(key, idv, doc, flags, source, off)
	}
	return c.hashRecord(s, key, idv, doc, flags, source, off, size)
}

// hashRecord hashes a sampled document and records it with its side: at
// off (size bytes) where the caller keeps it, or spilled when off < 0.
func (c *Comparison) hashRecord(s *Side, key []byte, idv load.Value, doc []byte, flags byte, source string, off int64, size int) error {
	var hash [hashLen]byte
	appendDocHash(hash[:0], doc)
	if off < 0 {
		return c.spillRecord(s, key, idv, doc, &hash, flags, source)
	}
	return c.record(s, key, idv, &hash, source, off, size, flags)
}

// pairRecord records a pair settled by the pairing.
func (c *Comparison) pairRecord(key []byte, idv load.Value, source string) error {
	val := append(c.pairBuf[:0], flagSampled|flagPair)
	val = appendIDSource(val, idv, source)
	c.pairBuf = val
	return c.pairs.Add(key, val)
}

// spillRecord writes doc to s's spill file and adds its record.
func (c *Comparison) spillRecord(s *Side, key []byte, idv load.Value, doc []byte, hash *[hashLen]byte, flags byte, source string) error {
	off := s.off
	if _, err := s.w.Write(doc); err != nil {
		return fmt.Errorf("spill file: %w", err)
	}
	s.off += int64(len(doc))
	return c.record(s, key, idv, hash, source, off, len(doc), flags)
}

// record adds one record to s's sorter: sampled (hashed) when hash is
// set, its document at off (size bytes) in s's spill file or Stored
// place.
func (c *Comparison) record(s *Side, key []byte, idv load.Value, hash *[hashLen]byte, source string, off int64, size int, flags byte) error {
	val := s.buf[:0]
	if hash != nil {
		val = append(val, flagSampled|flags)
		val = append(val, hash[:]...)
		val = binary.BigEndian.AppendUint64(val, uint64(off))
		val = binary.BigEndian.AppendUint32(val, uint32(size))
	} else {
		val = append(val, 0)
	}
	val = appendIDSource(val, idv, source)
	s.buf = val
	return s.sorter.Add(key, val)
}

// appendIDSource appends a record's raw _id and source row.
func appendIDSource(val []byte, idv load.Value, source string) []byte {
	val = append(val, idv.Type)
	val = binary.AppendUvarint(val, uint64(len(idv.Data)))
	val = append(val, idv.Data...)
	return append(val, source...)
}

// hashSeeds key the documents' hashes: two 64-bit hashes under seeds
// random to this run (a difference cannot be made to collide without
// knowing them), 2^-128 odds that two different documents pass for equal.
// SHA-256 cost a tenth of verify's time.
var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// appendDocHash appends the hashLen bytes of doc's hash.
func appendDocHash(dst, doc []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, maphash.Bytes(hashSeeds[0], doc))
	return binary.BigEndian.AppendUint64(dst, maphash.Bytes(hashSeeds[1], doc))
}

// flush writes out both spill files' buffers: call it once every document
// is added, before merge.
func (c *Comparison) Flush() error {
	if err := c.drainPairs(); err != nil {
		return err
	}
	for _, s := range []*Side{&c.Exp, &c.Found} {
		if err := s.w.Flush(); err != nil {
			return fmt.Errorf("spill file: %w", err)
		}
	}
	return nil
}

// Entry is one record of a side: a document's collection, _id and hash,
// and, on the expected side, the source row it was built from (Source).
type Entry struct {
	ok      bool
	key     []byte
	sampled bool
	paired  bool
	json    bool
	hash    []byte
	off     int64
	size    int
	idType  byte
	id      []byte
	Source  string
}

type cursor struct {
	it  *extsort.Iter
	cur Entry
}

// newCursor opens a cursor on a sorter's records, at the first one. The
// caller closes it.
func newCursor(so *extsort.Sorter) (*cursor, error) {
	it, err := so.Iter()
	if err != nil {
		return nil, err
	}
	c := &cursor{it: it}
	if err := c.next(); err != nil {
		it.Close()
		return nil, err
	}
	return c, nil
}

func (c *cursor) close() { c.it.Close() }

var errCorruptRecord = errors.New("corrupt sort record")

func (c *cursor) next() error {
	if !c.it.Next() {
		c.cur = Entry{}
		return c.it.Err()
	}
	k, val := c.it.Key(), c.it.Value()
	e := Entry{ok: true, key: append([]byte(nil), k...)}
	if len(val) < 1 {
		return errCorruptRecord
	}
	e.sampled = val[0]&flagSampled != 0
	e.paired = val[0]&flagPair != 0
	e.json = val[0]&flagJSON != 0
	val = val[1:]
	if e.sampled && !e.paired {
		if len(val) < hashLen+12 {
			return errCorruptRecord
		}
		e.hash = append([]byte(nil), val[:hashLen]...)
		e.off = int64(binary.BigEndian.Uint64(val[hashLen:]))
		e.size = int(binary.BigEndian.Uint32(val[hashLen+8:]))
		val = val[hashLen+12:]
	}
	if len(val) < 1 {
		return errCorruptRecord
	}
	e.idType = val[0]
	n, w := binary.Uvarint(val[1:])
	if w <= 0 || int(n) > len(val)-1-w {
		return errCorruptRecord
	}
	e.id = append([]byte(nil), val[1+w:1+w+int(n)]...)
	e.Source = string(val[1+w+int(n):])
	c.cur = e
	return nil
}

// Cursor walks the keys of the documents the target holds, in key order,
// with duplicates: At is the record's sort key (collection, 0, canonical
// _id), nil past the last.
type Cursor struct{ cs []*cursor }

// FoundCursor opens a cursor on the found side's records and the pairs
// (the target holds their found documents too); the caller closes it.
func (c *Comparison) FoundCursor() (*Cursor, error) {
	f, err := newCursor(c.Found.sorter)
	if err != nil {
		return nil, err
	}
	p, err := newCursor(c.pairs)
	if err != nil {
		f.close()
		return nil, err
	}
	return &Cursor{cs: []*cursor{f, p}}, nil
}

// least is the cursor at the least key, nil past the last record.
func (c *Cursor) least() *cursor {
	var m *cursor
	for _, x := range c.cs {
		if x.cur.ok && (m == nil || bytes.Compare(x.cur.key, m.cur.key) < 0) {
			m = x
		}
	}
	return m
}

// At is the current record's sort key; nil past the last record.
func (c *Cursor) At() []byte {
	if m := c.least(); m != nil {
		return m.cur.key
	}
	return nil
}

// Next moves to the next record.
func (c *Cursor) Next() error {
	if m := c.least(); m != nil {
		return m.next()
	}
	return nil
}

// Close releases the cursor.
func (c *Cursor) Close() {
	for _, x := range c.cs {
		x.close()
	}
}

// Sampled reports whether the record's document was compared
// (Comparison.Sampled picked it): hashed and kept, or settled as a pair.
func (e *Entry) Sampled() bool { return e.sampled }

// Paired reports whether the record is a pair the pairing settled (an
// expected document and its found twin with the same bytes): an Identical
// entry on both sides, with no hash and no document to Read.
func (e *Entry) Paired() bool { return e.paired }

// Collection is the record's collection.
func (e *Entry) Collection() string {
	i := bytes.IndexByte(e.key, 0)
	return string(e.key[:i])
}

func (e *Entry) IDJSON() json.RawMessage {
	return load.Value{Type: e.idType, Data: e.id}.JSON()
}

// Key is the record's sort key (collection, 0, canonical _id): the same
// for the document on both sides, and in every comparison of one run.
func (e *Entry) Key() []byte { return e.key }

// Hash is a sampled record's document hash, keyed by seeds random to this
// process: equal hashes, in one run, are equal documents (verify's
// rechecks compare the expected documents of two snapshots by it). A
// pair has none.
func (e *Entry) Hash() []byte { return e.hash }

// idValue is the stored _id, for deleting the document.
func (e *Entry) IDValue() load.Value { return load.Value{Type: e.idType, Data: e.id} }

// Read returns the document of a sampled Entry as BSON: spilled, or kept
// by the caller (Stored); a line of JSON is parsed. What is read from the
// caller's place is checked against the hash taken when it was added. A
// pair's documents were equal and are not kept.
func (s *Side) Read(e *Entry) ([]byte, error) {
	if e.paired {
		return nil, fmt.Errorf("collection %q _id %s: a pair of equal documents is not kept", e.Collection(), e.IDJSON())
	}
	// Only a side with Stored keeps lines elsewhere, and then every
	// record of it does (AddLine with an offset): the others are in
	// their side's spill file.
	kept := s.Stored != nil
	var b []byte
	var err error
	if kept {
		b, err = s.Stored(e.Collection(), e.off, e.size)
	} else {
		b, err = s.readSpill(e.off, e.size)
	}
	if err != nil {
		return nil, err
	}
	if kept && !bytes.Equal(appendDocHash(nil, b), e.hash) {
		return nil, fmt.Errorf("collection %q _id %s: the document read back is not the one read first: the target changed while verify read it", e.Collection(), e.IDJSON())
	}
	if !e.json {
		return b, nil
	}
	doc, err := load.UnmarshalExtJSON(nil, b)
	if err != nil {
		return nil, fmt.Errorf("collection %q _id %s: not an Extended JSON document: %w", e.Collection(), e.IDJSON(), err)
	}
	return doc, nil
}

func (s *Side) readSpill(off int64, size int) ([]byte, error) {
	b := make([]byte, size)
	if _, err := s.f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("spill file: %w", err)
	}
	return b, nil
}

// Merge's kinds of record.
const (
	// Identical: both sides hold the _id, with the same hash.
	Identical = "identical"
	// Missing: the expected side gives a document the found side does
	// not hold.
	Missing = "missing"
	// Unexpected: the found side holds a document the expected side does
	// not give.
	Unexpected = "unexpected"
	// Different: both hold the _id, with different contents.
	Different = "different"
	// Duplicate: a second record of one _id on one side.
	Duplicate = "duplicate"
)

// Merge walks both sorted sides, and the pairs, together in sort key
// order (collection, then _id), and calls fn once per record: Missing
// (exp only, found nil), Unexpected (found only, exp nil), Duplicate (a
// second record of one key on either side: the other side's entry is nil;
// the source gives an _id to two documents, or the target holds it
// twice), Different or Identical (both; an unsampled record counts as
// identical, its hash unknown). A pair is an Identical entry given as
// both exp and found, and comes before the other records of its key,
// which are then duplicates. The entries are only valid during fn.
func (c *Comparison) Merge(ctx context.Context, fn func(kind string, exp, found *Entry) error) error {
	e, err := newCursor(c.Exp.sorter)
	if err != nil {
		return err
	}
	defer e.close()
	f, err := newCursor(c.Found.sorter)
	if err != nil {
		return err
	}
	defer f.close()
	p, err := newCursor(c.pairs)
	if err != nil {
		return err
	}
	defer p.close()
	var prevFound, prevExp []byte
	n := 0
	for e.cur.ok || f.cur.ok || p.cur.ok {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if e.cur.ok && bytes.Equal(e.cur.key, prevExp) {
			if err := fn(Duplicate, &e.cur, nil); err != nil {
				return err
			}
			if err := e.next(); err != nil {
				return err
			}
			continue
		}
		if f.cur.ok && bytes.Equal(f.cur.key, prevFound) {
			if err := fn(Duplicate, nil, &f.cur); err != nil {
				return err
			}
			if err := f.next(); err != nil {
				return err
			}
			continue
		}
		if p.cur.ok && (pairFirst(&p.cur, e) && pairFirst(&p.cur, f) || bytes.Equal(p.cur.key, prevExp) || bytes.Equal(p.cur.key, prevFound)) {
			if err := mergePair(&p.cur, prevExp, prevFound, fn); err != nil {
				return err
			}
			prevExp, prevFound = p.cur.key, p.cur.key
			if err := p.next(); err != nil {
				return err
			}
			continue
		}
		order := 0
		switch {
		case !e.cur.ok:
			order = 1
		case !f.cur.ok:
			order = -1
		default:
			order = bytes.Compare(e.cur.key, f.cur.key)
		}
		switch {
		case order < 0:
			prevExp = e.cur.key
			if err := fn(Missing, &e.cur, nil); err != nil {
				return err
			}
			if err := e.next(); err != nil {
				return err
			}
		case order > 0:
			if err := fn(Unexpected, nil, &f.cur); err != nil {
				return err
			}
			prevFound = f.cur.key
			if err := f.next(); err != nil {
				return err
			}
		default:
			kind := Identical
			if e.cur.sampled && f.cur.sampled && !bytes.Equal(e.cur.hash, f.cur.hash) {
				kind = Different
			}
			if err := fn(kind, &e.cur, &f.cur); err != nil {
				return err
			}
			prevExp, prevFound = e.cur.key, f.cur.key
			if err := e.next(); err != nil {
				return err
			}
			if err := f.next(); err != nil {
				return err
			}
		}
	}
	return nil
}

// pairFirst reports whether the pair x comes before, or with, the
// cursor's record.
func pairFirst(x *Entry, c *cursor) bool {
	return !c.cur.ok || bytes.Compare(x.key, c.cur.key) <= 0
}

// mergePair gives a pair to fn: Identical, or, where either side already
// gave its key, a duplicate on that side (or both).
func mergePair(x *Entry, prevExp, prevFound []byte, fn func(kind string, exp, found *Entry) error) error {
	dupExp, dupFound := bytes.Equal(x.key, prevExp), bytes.Equal(x.key, prevFound)
	if !dupExp && !dupFound {
		return fn(Identical, x, x)
	}
	if dupExp {
		if err := fn(Duplicate, x, nil); err != nil {
			return err
		}
	}
	if dupFound {
		return fn(Duplicate, nil, x)
	}
	return nil
}

// idKey is the sort key of a document: its collection, a NUL, and its _id
// in a canonical form where numbers of any BSON type compare by value.
func IDKey(coll string, id load.Value) []byte {
	return appendIDKey(make([]byte, 0, len(coll)+2+len(id.Data)), coll, id)
}

// appendIDKey appends IDKey(coll, id) to k.
func appendIDKey(k []byte, coll string, id load.Value) []byte {
	k = append(k, coll...)
	k = append(k, 0)
	return load.AppendKey(k, id)
}
