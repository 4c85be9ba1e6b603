package pipeline

// Comparing two sides of documents, bounded in memory, for verify and for
// sync's diff passes: each side becomes a stream of small records
// (collection + canonical _id, a hash of the document's BSON, where the
// document lies in a local spill file), sorted with an external merge sort
// (internal/extsort) and merged. Only the documents whose hashes differ
// are read back from the spill files.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/denorm/denorm/internal/extsort"
	"github.com/denorm/denorm/load"
)

// comparison holds the two sides being compared: the expected documents
// (built from the source) and the found ones (read from the target).
type comparison struct {
	exp, found side
	buf        []byte
	// sampled, when set, picks the sort keys whose documents are hashed
	// and spilled (verify's --sample); the others are only counted.
	sampled func(key []byte) bool
}

// newComparison opens both sides' sorters and spill files in dir, with a
// sort budget of mem bytes each.
func newComparison(dir string, mem int) (*comparison, error) {
	c := &comparison{}
	if err := c.exp.open(dir, "expected", mem); err != nil {
		return nil, err
	}
	if err := c.found.open(dir, "found", mem); err != nil {
		c.exp.close()
		return nil, err
	}
	return c, nil
}

func (c *comparison) close() {
	c.exp.close()
	c.found.close()
}

// side is one side's sorter and document spill file.
type side struct {
	sorter *extsort.Sorter
	f      *os.File
	w      *bufio.Writer
	off    int64
}

func (s *side) open(dir, name string, mem int) error {
	f, err := os.CreateTemp(dir, name+"-docs-*")
	if err != nil {
		return fmt.Errorf("spill file: %w (set --temp-dir to a directory with room)", err)
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 1<<20)
	s.sorter = extsort.New(dir, name, mem)
	return nil
}

func (s *side) close() {
	if s.sorter != nil {
		s.sorter.Close()
	}
	if s.f != nil {
		s.f.Close()
	}
}

// Record values: flag byte, then when sampled the document's hash (16),
// spill offset (8) and length (4); then the raw _id (type byte, uvarint
// length, bytes) and the source row name.
const (
	flagSampled = 1
	hashLen     = 16
)

// add stores one document of side s.
func (c *comparison) add(s *side, coll string, doc []byte, source string) error {
	idv, err := load.DocumentID(doc)
	if err != nil {
		return fmt.Errorf("collection %q: %w", coll, err)
	}
	key := idKey(coll, idv)
	val := c.buf[:0]
	if c.sampled == nil || c.sampled(key) {
		h := sha256.Sum256(doc)
		val = append(val, flagSampled)
		val = append(val, h[:hashLen]...)
		val = binary.BigEndian.AppendUint64(val, uint64(s.off))
		val = binary.BigEndian.AppendUint32(val, uint32(len(doc)))
		if _, err := s.w.Write(doc); err != nil {
			return fmt.Errorf("spill file: %w", err)
		}
		s.off += int64(len(doc))
	} else {
		val = append(val, 0)
	}
	val = append(val, idv.Type)
	val = binary.AppendUvarint(val, uint64(len(idv.Data)))
	val = append(val, idv.Data...)
	val = append(val, source...)
	c.buf = val
	return s.sorter.Add(key, val)
}

// flush writes out both spill files' buffers: call it once every document
// is added, before merge.
func (c *comparison) flush() error {
	for _, s := range []*side{&c.exp, &c.found} {
		if err := s.w.Flush(); err != nil {
			return fmt.Errorf("spill file: %w", err)
		}
	}
	return nil
}

// entry is one decoded sort record.
type entry struct {
	ok      bool
	key     []byte
	sampled bool
	hash    []byte
	off     int64
	size    int
	idType  byte
	id      []byte
	source  string
}

type cursor struct {
	it  *extsort.Iter
	cur entry
}

// cursor opens a cursor on the side's sorted records, at the first one.
// The caller closes c.it.
func (s *side) cursor() (*cursor, error) {
	it, err := s.sorter.Iter()
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

var errCorruptRecord = errors.New("corrupt sort record")

func (c *cursor) next() error {
	if !c.it.Next() {
		c.cur = entry{}
		return c.it.Err()
	}
	k, val := c.it.Key(), c.it.Value()
	e := entry{ok: true, key: append([]byte(nil), k...)}
	if len(val) < 1 {
		return errCorruptRecord
	}
	e.sampled = val[0]&flagSampled != 0
	val = val[1:]
	if e.sampled {
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
	e.source = string(val[1+w+int(n):])
	c.cur = e
	return nil
}

func (e *entry) collection() string {
	i := bytes.IndexByte(e.key, 0)
	return string(e.key[:i])
}

func (e *entry) idJSON() json.RawMessage {
	return load.Value{Type: e.idType, Data: e.id}.JSON()
}

// idValue is the stored _id, for deleting the document.
func (e *entry) idValue() load.Value { return load.Value{Type: e.idType, Data: e.id} }

// read returns the spilled document of a sampled entry.
func (s *side) read(e *entry) ([]byte, error) {
	b := make([]byte, e.size)
	if _, err := s.f.ReadAt(b, e.off); err != nil {
		return nil, fmt.Errorf("spill file: %w", err)
	}
	return b, nil
}

// matchIdentical is merge's kind for an _id both sides hold with the same
// hash; dupSource for a second record of one _id on the expected side (the
// source gives it to several documents: document types of one collection
// with equal ids, or a view whose id is not unique); the others are the
// Diff* kinds.
const (
	matchIdentical = "identical"
	dupSource      = "source-duplicate"
)

// merge walks both sorted sides together, in sort key order (collection,
// then _id), and calls fn once per record: DiffMissing (exp only, found
// nil), dupSource (exp only, found nil: the expected side held the key
// before), DiffUnexpected or DiffDuplicate (found only, exp nil; duplicate:
// the found side held the key before), DiffDifferent or matchIdentical
// (both; an unsampled record counts as identical, its hash unknown). The
// entries are only valid during fn.
func (c *comparison) merge(ctx context.Context, fn func(kind string, exp, found *entry) error) error {
	e, err := c.exp.cursor()
	if err != nil {
		return err
	}
	defer e.it.Close()
	f, err := c.found.cursor()
	if err != nil {
		return err
	}
	defer f.it.Close()
	var prevFound, prevExp []byte
	n := 0
	for e.cur.ok || f.cur.ok {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		// A second record of one key on either side is stepped over,
		// reported once.
		switch {
		case e.cur.ok && bytes.Equal(e.cur.key, prevExp):
			if err := fn(dupSource, &e.cur, nil); err != nil {
				return err
			}
			if err := e.next(); err != nil {
				return err
			}
			continue
		case f.cur.ok && bytes.Equal(f.cur.key, prevFound):
			if err := fn(DiffDuplicate, nil, &f.cur); err != nil {
				return err
			}
			if err := f.next(); err != nil {
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
			if err := fn(DiffMissing, &e.cur, nil); err != nil {
				return err
			}
			if err := e.next(); err != nil {
				return err
			}
		case order > 0:
			if err := fn(DiffUnexpected, nil, &f.cur); err != nil {
				return err
			}
			prevFound = f.cur.key
			if err := f.next(); err != nil {
				return err
			}
		default:
			kind := matchIdentical
			if e.cur.sampled && f.cur.sampled && !bytes.Equal(e.cur.hash, f.cur.hash) {
				kind = DiffDifferent
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

// idKey is the sort key of a document: its collection, a NUL, and its _id
// in a canonical form where numbers of any BSON type compare by value.
func idKey(coll string, id load.Value) []byte {
	k := make([]byte, 0, len(coll)+2+len(id.Data))
	k = append(k, coll...)
	k = append(k, 0)
	return load.AppendKey(k, id)
}
