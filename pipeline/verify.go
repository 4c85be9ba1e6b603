package pipeline

// Verify: rebuild the expected documents from the source with Produce (the
// code migrate runs) and compare them with what the target holds.
//
// Neither side arrives in _id order (bucket page ids, text keys under
// non-C collations, shared collections interleaving document types), so
// both are reduced to records (collection + canonical _id, hash of the
// document's BSON, where the document lies in a spill file), sorted with an
// external merge sort (internal/extsort) and merged. Only documents whose
// hashes differ are read back, from the local spill files, for a field
// diff. Memory is bounded by the sort budget and the batch size whatever
// the number of documents; disk holds one copy of each side.
//
// What counts as equal: the BSON bytes. Key order counts (MongoDB compares
// documents field by field, in order), and so do BSON types: int32 1,
// int64 1 and double 1.0 are different values (a type change is what a
// broken migration or a foreign writer produces, and drivers decode them
// to different types). The exception is what a target cannot represent:
// a directory target's relaxed Extended JSON does not keep int32 apart
// from int64, so the expected documents go through the same round trip
// before they are compared (load.Target.Normalize). For _id alone,
// numbers compare by value, as MongoDB's unique index does: an _id stored
// as int64 where int32 was expected is a differing document, not a missing
// plus an unexpected one.
//
// The references found documents store are checked in dangling.go.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"os"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/extsort"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// BatchSize is the number of root rows read at a time (as migrate).
	BatchSize int
	// TempDir holds the sort runs and spill files ("" is the system's).
	TempDir string
	// SortMemory is the memory budget of each of the three sorters, in
	// bytes (0: 16 MiB).
	SortMemory int
	// Sample, in (0, 100), compares only the documents whose _id hashes
	// into that percentage (the same ones on both sides); 0 or 100 compares
	// all. Both sides are still read in full (bucket pages depend on every
	// row), and dangling references are checked against every document.
	Sample float64
	// MaxFieldDiffs caps the field differences kept per document (0: 100).
	MaxFieldDiffs int
	// Difference is called with every difference, in collection then _id
	// order (missing, unexpected and differing documents interleaved),
	// after all unbuildable rows; Dangling with every dangling reference.
	// Both are called from Verify's goroutine; an error stops Verify.
	Difference func(Difference) error
	Dangling   func(DanglingRef) error
}

// Difference kinds.
const (
	// DiffMissing: the source gives a document the target does not hold.
	DiffMissing = "missing"
	// DiffUnexpected: the target holds a document the source does not give.
	DiffUnexpected = "unexpected"
	// DiffDifferent: both hold the _id, with different contents.
	DiffDifferent = "different"
	// DiffDuplicate: the target holds the _id more than once (a directory
	// target's file; a server refuses this).
	DiffDuplicate = "duplicate"
	// DiffUnbuildable: a source row could not become a document (migrate
	// rejected it too), so the target cannot hold it.
	DiffUnbuildable = "unbuildable"
)

// Difference is one document that is not as the source says.
type Difference struct {
	Collection string          `json:"collection"`
	ID         json.RawMessage `json:"_id,omitempty"`
	Kind       string          `json:"kind"`
	// Source names the source row (or bucket page) of expected documents.
	Source string `json:"source,omitempty"`
	// Fields are the field differences (different), at most
	// MaxFieldDiffs; MoreFields counts those left out.
	Fields     []FieldDiff `json:"fields,omitempty"`
	MoreFields int         `json:"moreFields,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// FieldDiff is one differing value (see load.DiffDocuments).
type FieldDiff = load.FieldDiff

// VerifyStats counts one target collection.
type VerifyStats struct {
	Collection string `json:"collection"`
	// Exists is false when the target has no such collection (or file).
	Exists bool `json:"exists"`
	// Expected and Found count every document of each side; the other
	// counters only the sampled ones.
	Expected    int64 `json:"expected"`
	Found       int64 `json:"found"`
	Identical   int64 `json:"identical"`
	Missing     int64 `json:"missing"`
	Unexpected  int64 `json:"unexpected"`
	Different   int64 `json:"different"`
	Duplicate   int64 `json:"duplicate"`
	Unbuildable int64 `json:"unbuildable"`
	Dangling    int64 `json:"danglingRefs"`
}

// Differences is the number of documents not as the source says.
func (s VerifyStats) Differences() int64 {
	return s.Missing + s.Unexpected + s.Different + s.Duplicate + s.Unbuildable
}

// VerifyResult is the outcome of Verify, one entry per target collection
// in mapping order.
type VerifyResult struct {
	Collections []VerifyStats `json:"collections"`
}

// Differences totals the collections' differences.
func (r *VerifyResult) Differences() (n int64) {
	for _, c := range r.Collections {
		n += c.Differences()
	}
	return n
}

// Dangling totals the dangling references.
func (r *VerifyResult) Dangling() (n int64) {
	for _, c := range r.Collections {
		n += c.Dangling
	}
	return n
}

// verifier holds one run's state.
type verifier struct {
	opt     VerifyOptions
	target  load.Target
	stats   map[string]*VerifyStats
	exp     side
	found   side
	refs    *extsort.Sorter
	refPath map[string][]refPath // by collection
	names   map[string]bool
}

// side is one side's sorter and document spill file. The two sides are
// filled by different goroutines.
type side struct {
	sorter *extsort.Sorter
	f      *os.File
	w      *bufio.Writer
	off    int64
	buf    []byte
}

func (s *side) open(dir, name string, mem int) error {
	f, err := os.CreateTemp(dir, name+"-docs-*")
	if err != nil {
		return fmt.Errorf("verify spill file: %w (set --temp-dir to a directory with room)", err)
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

// add stores one document of a side.
func (v *verifier) add(s *side, coll string, doc []byte, source string) error {
	idv, err := load.DocumentID(doc)
	if err != nil {
		return fmt.Errorf("collection %q: %w", coll, err)
	}
	key := idKey(coll, idv)
	val := s.buf[:0]
	if v.sampled(key) {
		val = append(val, flagSampled)
		val = appendDocHash(val, doc)
		val = binary.BigEndian.AppendUint64(val, uint64(s.off))
		val = binary.BigEndian.AppendUint32(val, uint32(len(doc)))
		if _, err := s.w.Write(doc); err != nil {
			return fmt.Errorf("verify spill file: %w", err)
		}
		s.off += int64(len(doc))
	} else {
		val = append(val, 0)
	}
	val = append(val, idv.Type)
	val = binary.AppendUvarint(val, uint64(len(idv.Data)))
	val = append(val, idv.Data...)
	val = append(val, source...)
	s.buf = val
	return s.sorter.Add(key, val)
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

func (v *verifier) sampled(key []byte) bool {
	if v.opt.Sample <= 0 || v.opt.Sample >= 100 {
		return true
	}
	h := fnv.New64a()
	h.Write(key)
	return float64(h.Sum64()%1_000_000) < v.opt.Sample*10_000
}

// Verify compares the documents plan gives from snap with what target
// holds, and returns the counts per collection; every difference and
// dangling reference goes to opt's callbacks.
func Verify(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, target load.Target, opt VerifyOptions) (*VerifyResult, error) {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 1000
	}
	if opt.SortMemory <= 0 {
		opt.SortMemory = 16 << 20
	}
	if opt.MaxFieldDiffs <= 0 {
		opt.MaxFieldDiffs = 100
	}
	if opt.Difference == nil {
		opt.Difference = func(Difference) error { return nil }
	}
	if opt.Dangling == nil {
		opt.Dangling = func(DanglingRef) error { return nil }
	}
	dir, err := os.MkdirTemp(opt.TempDir, "denorm-verify-*")
	if err != nil {
		return nil, fmt.Errorf("verify temporary directory: %w (set --temp-dir)", err)
	}
	defer os.RemoveAll(dir)
	v := &verifier{opt: opt, target: target, stats: map[string]*VerifyStats{}, names: map[string]bool{}, refPath: map[string][]refPath{}}
	defer v.exp.close()
	defer v.found.close()
	if err := v.exp.open(dir, "expected", opt.SortMemory); err != nil {
		return nil, err
	}
	if err := v.found.open(dir, "found", opt.SortMemory); err != nil {
		return nil, err
	}
	v.refs = extsort.New(dir, "refs", opt.SortMemory)
	defer v.refs.Close()

	res := &VerifyResult{}
	order := plan.CollectionNames()
	for _, name := range order {
		v.names[name] = true
		v.stats[name] = &VerifyStats{Collection: name}
	}
	for _, cp := range plan.Collections {
		v.refPath[cp.Name] = append(v.refPath[cp.Name], refPaths(cp)...)
	}

	// The found side is read in the target's own order by a goroutine of
	// its own while the expected side is built, so that both keep a core
	// busy. It touches only its own side, the references and its own
	// counts; the first failure of either side stops the other.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make([]VerifyStats, len(order))
	foundErr := make(chan error, 1)
	go func() {
		err := v.scanFound(sctx, order, found)
		if err != nil {
			cancel()
		}
		foundErr <- err
	}()
	expErr := v.expected(sctx, snap, plan)
	if expErr != nil {
		cancel()
	}
	fErr := <-foundErr
	if expErr != nil && (fErr == nil || !errors.Is(expErr, context.Canceled)) {
		return nil, expErr
	}
	if fErr != nil {
		return nil, fErr
	}
	for i, name := range order {
		v.stats[name].Found, v.stats[name].Exists = found[i].Found, found[i].Exists
	}
	for _, s := range []*side{&v.exp, &v.found} {
		if err := s.w.Flush(); err != nil {
			return nil, fmt.Errorf("verify spill file: %w", err)
		}
	}
	if err := v.merge(ctx); err != nil {
		return nil, err
	}
	if err := v.dangling(ctx); err != nil {
		return nil, err
	}
	for _, name := range order {
		res.Collections = append(res.Collections, *v.stats[name])
	}
	return res, nil
}

// expected builds every collection's documents as migrate does and adds
// them to the expected side; rows that cannot be built are differences.
func (v *verifier) expected(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan) error {
	var buf []byte // each document's BSON, copied by add
	for _, cp := range plan.Collections {
		st := v.stats[cp.Name]
		err := Produce(ctx, snap, cp, ProduceOptions{BatchSize: v.opt.BatchSize, Reuse: true}, func(b Built) error {
			for _, e := range b.Rejects {
				st.Unbuildable++
				if err := v.opt.Difference(Difference{Collection: cp.Name, Kind: DiffUnbuildable, Source: e.Source, Error: e.Err.Error()}); err != nil {
					return err
				}
			}
			for _, d := range b.Docs {
				var raw []byte
				err := transform.CheckKeys(d.Body) // migrate rejects the row
				if err == nil {
					raw, err = load.AppendDocument(buf[:0], d.Body)
					buf = raw
				}
				if err == nil {
					raw, err = v.target.Normalize(raw)
				}
				if err != nil {
					st.Unbuildable++
					if err := v.opt.Difference(Difference{Collection: cp.Name, Kind: DiffUnbuildable, Source: d.Source, Error: err.Error()}); err != nil {
						return err
					}
					continue
				}
				st.Expected++
				if err := v.add(&v.exp, cp.Name, raw, d.Source); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("build expected documents: %w", err)
		}
	}
	return nil
}

// scanFound reads every collection of order from the target into the
// found side, counting into found (by position in order).
func (v *verifier) scanFound(ctx context.Context, order []string, found []VerifyStats) error {
	for i, name := range order {
		st := &found[i]
		exists, err := v.target.Scan(ctx, name, func(doc []byte) error {
			st.Found++
			if err := v.add(&v.found, name, doc, ""); err != nil {
				return err
			}
			return v.collectRefs(name, doc)
		})
		st.Exists = exists
		if err != nil {
			return err
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

func (c *cursor) next() error {
	if !c.it.Next() {
		c.cur = entry{}
		return c.it.Err()
	}
	k, val := c.it.Key(), c.it.Value()
	e := entry{ok: true, key: append([]byte(nil), k...)}
	if len(val) < 1 {
		return errors.New("verify: corrupt sort record")
	}
	e.sampled = val[0]&flagSampled != 0
	val = val[1:]
	if e.sampled {
		if len(val) < hashLen+12 {
			return errors.New("verify: corrupt sort record")
		}
		e.hash = append([]byte(nil), val[:hashLen]...)
		e.off = int64(binary.BigEndian.Uint64(val[hashLen:]))
		e.size = int(binary.BigEndian.Uint32(val[hashLen+8:]))
		val = val[hashLen+12:]
	}
	if len(val) < 1 {
		return errors.New("verify: corrupt sort record")
	}
	e.idType = val[0]
	n, w := binary.Uvarint(val[1:])
	if w <= 0 || int(n) > len(val)-1-w {
		return errors.New("verify: corrupt sort record")
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

func (s *side) read(e *entry) ([]byte, error) {
	b := make([]byte, e.size)
	if _, err := s.f.ReadAt(b, e.off); err != nil {
		return nil, fmt.Errorf("verify spill file: %w", err)
	}
	return b, nil
}

// merge walks both sorted sides together.
func (v *verifier) merge(ctx context.Context) error {
	e, err := v.exp.cursor()
	if err != nil {
		return err
	}
	defer e.it.Close()
	f, err := v.found.cursor()
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
		if dup, err := v.duplicate(e, &prevExp, f, &prevFound); dup || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		c := 0
		switch {
		case !e.cur.ok:
			c = 1
		case !f.cur.ok:
			c = -1
		default:
			c = bytes.Compare(e.cur.key, f.cur.key)
		}
		switch {
		case c < 0:
			x := e.cur
			prevExp = x.key
			if x.sampled {
				v.stats[x.collection()].Missing++
				if err := v.opt.Difference(Difference{Collection: x.collection(), ID: x.idJSON(), Kind: DiffMissing, Source: x.source}); err != nil {
					return err
				}
			}
			if err := e.next(); err != nil {
				return err
			}
		case c > 0:
			x := f.cur
			if x.sampled {
				kind := DiffUnexpected
				if bytes.Equal(x.key, prevFound) {
					kind = DiffDuplicate
				}
				st := v.stats[x.collection()]
				if kind == DiffDuplicate {
					st.Duplicate++
				} else {
					st.Unexpected++
				}
				if err := v.opt.Difference(Difference{Collection: x.collection(), ID: x.idJSON(), Kind: kind}); err != nil {
					return err
				}
			}
			prevFound = x.key
			if err := f.next(); err != nil {
				return err
			}
		default:
			x, y := e.cur, f.cur
			prevExp = x.key
			if x.sampled && y.sampled {
				st := v.stats[x.collection()]
				if bytes.Equal(x.hash, y.hash) {
					st.Identical++
				} else {
					st.Different++
					want, err := v.exp.read(&x)
					if err != nil {
						return err
					}
					got, err := v.found.read(&y)
					if err != nil {
						return err
					}
					d := Difference{Collection: x.collection(), ID: y.idJSON(), Kind: DiffDifferent, Source: x.source}
					d.Fields, d.MoreFields = load.DiffDocuments(want, got, v.opt.MaxFieldDiffs)
					if err := v.opt.Difference(d); err != nil {
						return err
					}
				}
			}
			prevFound = y.key
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

// duplicate reports, and steps over, a second record of one _id on either
// side: the target holding an _id twice (a directory's file), or the
// source giving it to two documents (document types of one collection
// with equal ids, or a view whose id is not unique). prevExp and
// prevFound are the keys of the last record of each side merged.
func (v *verifier) duplicate(e *cursor, prevExp *[]byte, f *cursor, prevFound *[]byte) (bool, error) {
	var d Difference
	var c *cursor
	switch {
	case e.cur.ok && bytes.Equal(e.cur.key, *prevExp):
		c = e
		d = Difference{Kind: DiffDuplicate, Source: e.cur.source, Error: "the source gives this _id to several documents: make the ids distinct (document types of one collection: idPrefix)"}
	case f.cur.ok && bytes.Equal(f.cur.key, *prevFound):
		c = f
		d = Difference{Kind: DiffDuplicate, Error: "the target holds this _id more than once"}
	default:
		return false, nil
	}
	x := c.cur
	if x.sampled {
		d.Collection, d.ID = x.collection(), x.idJSON()
		v.stats[d.Collection].Duplicate++
		if err := v.opt.Difference(d); err != nil {
			return true, err
		}
	}
	return true, c.next()
}

// idKey is the sort key of a document: its collection, a NUL, and its _id
// in a canonical form where numbers of any BSON type compare by value.
func idKey(coll string, id load.Value) []byte {
	k := make([]byte, 0, len(coll)+2+len(id.Data))
	k = append(k, coll...)
	k = append(k, 0)
	return load.AppendKey(k, id)
}
