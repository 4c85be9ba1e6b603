package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/denorm/denorm/internal/poison"
	"github.com/denorm/denorm/transform"
)

// Reading back what a target holds, for verify: Scan and Normalize of
// both kinds of target.

func (s *serverTarget) Scan(ctx context.Context, collection string, fn func([]byte) error) (bool, error) {
	names, err := s.db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: collection}})
	if err != nil {
		return false, fmt.Errorf("list collections: %w", err)
	}
	if len(names) == 0 {
		return false, nil
	}
	// No sort: sorting by _id would make the server sort everything (or
	// scan an index while fetching randomly); verify sorts on its side.
	cur, err := s.db.Collection(collection).Find(ctx, bson.D{}, options.Find().SetBatchSize(1000))
	if err != nil {
		return true, fmt.Errorf("read target collection %q: %w", collection, err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		if err := fn(cur.Current); err != nil {
			return true, err
		}
	}
	if err := cur.Err(); err != nil {
		return true, fmt.Errorf("read target collection %q: %w", collection, err)
	}
	return true, nil
}

func (s *serverTarget) Normalize(doc []byte) ([]byte, error) { return doc, nil }

// maxLine caps one JSON line of a directory target: a 16 MiB document in
// Extended JSON can take several times its BSON size.
const maxLine = 256 << 20

// Scan reads the collection's file, including what this handle wrote
// and has not flushed yet.
func (s *dirTarget) Scan(ctx context.Context, collection string, fn func([]byte) error) (bool, error) {
	var doc []byte
	return s.ScanLines(ctx, collection, func(line []byte, off int64, n int) error {
		// doc is reused for every line: fn must not keep it (Target.Scan).
		var err error
		if doc, err = s.ParseLine(poison.Reuse(doc)[:0], collection, line, n); err != nil {
			return err
		}
		return fn(doc)
	})
}

// ParseLine is LineTarget's.
func (s *dirTarget) ParseLine(dst []byte, collection string, line []byte, n int) ([]byte, error) {
	doc, err := UnmarshalExtJSON(dst, line)
	if err != nil {
		path, _ := s.path(collection)
		return nil, fmt.Errorf("%s:%d: not an Extended JSON document: %w", path, n, err)
	}
	return doc, nil
}

// LineTarget is a Target whose documents are lines of relaxed Extended
// JSON in files that stay as they are while verify runs (a directory's).
// verify compares such lines as text where it can: the line migrate
// writes for a document (AppendJSONLine) against the line read
// (ScanLines), parsing only the _id (LineID) and, where the texts differ,
// both documents; and it keeps where each line lies rather than a copy
// (ReadLine).
type LineTarget interface {
	// ScanLines calls fn with every non-empty line of the collection's
	// file (without its line end), its byte offset and its line number;
	// line is only valid during fn.
	ScanLines(ctx context.Context, collection string, fn func(line []byte, off int64, n int) error) (exists bool, err error)
	// ParseLine appends the BSON of line n of the collection's file to
	// dst; its error names the file and line.
	ParseLine(dst []byte, collection string, line []byte, n int) ([]byte, error)
	// ReadLine reads size bytes at off of the collection's file.
	ReadLine(collection string, off int64, size int) ([]byte, error)
	// AppendJSONLine appends the line Write writes for d, without its
	// line end; it refuses what Write rejects. One goroutine at a time.
	AppendJSONLine(dst []byte, d transform.Document) ([]byte, error)
}

// ScanLines is LineTarget's.
func (s *dirTarget) ScanLines(ctx context.Context, collection string, fn func(line []byte, off int64, n int) error) (bool, error) {
	path, err := s.path(collection)
	if err != nil {
		return false, err
	}
	if df := s.files[collection]; df != nil {
		if err := df.w.Flush(); err != nil {
			return false, fmt.Errorf("write %s: %w", path, err)
		}
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read target: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	// pos is the offset of the data the split function is given; start,
	// that of the line it last returned.
	var pos, start int64
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if tok != nil {
			start = pos
		}
		pos += int64(adv)
		return adv, tok, err
	})
	line := 0
	for sc.Scan() {
		line++
		if line%4096 == 0 && ctx.Err() != nil {
			return true, ctx.Err()
		}
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		if err := fn(b, start, line); err != nil {
			return true, err
		}
	}
	if err := sc.Err(); err != nil {
		return true, fmt.Errorf("read %s after line %d: %w", path, line, err)
	}
	return true, nil
}

// ReadLine is LineTarget's.
func (s *dirTarget) ReadLine(collection string, off int64, size int) ([]byte, error) {
	path, err := s.path(collection)
	if err != nil {
		return nil, err
	}
	s.readMu.Lock()
	defer s.readMu.Unlock()
	f := s.readers[collection]
	if f == nil {
		if f, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("read target: %w", err)
		}
		if s.readers == nil {
			s.readers = map[string]*os.File{}
		}
		s.readers[collection] = f
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("read %s at byte %d: %w (did the file change while verify read it?)", path, off, err)
	}
	return b, nil
}

// AppendJSONLine is LineTarget's.
func (s *dirTarget) AppendJSONLine(dst []byte, d transform.Document) ([]byte, error) {
	out, err := appendJSONLine(dst, d, s.opt.MaxDocSize, &s.lineKeys)
	if err != nil {
		return out, err
	}
	return out[:len(out)-1], nil // the line end
}

// LineID reads the _id of a line of relaxed Extended JSON that starts
// with it (as every line Write writes does); ok is false for any other
// line (parse it whole).
func LineID(line []byte) (v Value, ok bool) {
	p := jsonParser{s: line}
	p.space()
	if !p.eat('{') || !p.eat('"') {
		return Value{}, false
	}
	p.key, ok = p.str(p.key[:0])
	if !ok || string(p.key) != "_id" || !p.eat(':') {
		return Value{}, false
	}
	t, data, ok := p.value(nil)
	if !ok {
		return Value{}, false
	}
	return Value{Type: byte(t), Data: data}, true
}

// Normalize gives what a relaxed Extended JSON round trip gives: the
// only values it changes are an int64 that fits an int32 (written as a
// plain number, read back as int32) and a NaN of other bits than QuietNaN
// (written "NaN", read back as QuietNaN); every other value round-trips
// exactly.
// Rewriting the BSON directly is twice as fast as the round trip, which
// TestNormalizeIsJSONRoundTrip checks it against.
func (s *dirTarget) Normalize(doc []byte) ([]byte, error) {
	if !hasSmallInt64(bsoncore.Document(doc)) {
		return doc, nil
	}
	return s.AppendNormalize(make([]byte, 0, len(doc)), doc)
}

// AppendNormalize is Normalize writing into dst's memory (AppendNormalizer):
// verify rewrites every expected document of a directory target (an _id of
// bigint that fits an int32 is one such value), and one buffer for all of
// them saves allocating each one's size again.
func (s *dirTarget) AppendNormalize(dst, doc []byte) ([]byte, error) {
	if !hasSmallInt64(bsoncore.Document(doc)) {
		return doc, nil
	}
	out, err := narrowInt64(dst[:0], bsoncore.Document(doc), false)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendNormalizer is a Target whose Normalize can write into memory the
// caller gives (and reuses): the result is doc itself or dst's memory,
// valid until the caller's next use of dst.
type AppendNormalizer interface {
	AppendNormalize(dst, doc []byte) ([]byte, error)
}

func fitsInt32(v int64) bool { return v >= math.MinInt32 && v <= math.MaxInt32 }

// hasSmallInt64 reports whether doc (or any nested document or array)
// holds an int64 that fits an int32. It walks the elements in place
// (Document.Elements allocates a slice per document, which cost verify a
// sixth of its time).
func hasSmallInt64(doc bsoncore.Document) bool {
	if len(doc) < 5 {
		return true // let narrowInt64 report it
	}
	rest := doc[4 : len(doc)-1]
	for len(rest) > 0 {
		e, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return true
		}
		rest = r
		v := e.Value()
		switch v.Type {
		case bsoncore.TypeInt64:
			if n, ok := v.Int64OK(); !ok || fitsInt32(n) {
				return true
			}
		case bsoncore.TypeDouble:
			if f, ok := v.DoubleOK(); !ok || otherNaN(f) {
				return true
			}
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if hasSmallInt64(bsoncore.Document(v.Data)) {
				return true
			}
		}
	}
	return false
}

// otherNaN reports whether f is a NaN of other bits than QuietNaN.
func otherNaN(f float64) bool {
	return f != f && math.Float64bits(f) != math.Float64bits(QuietNaN)
}

// narrowInt64 appends doc to dst with small int64 values as int32, and
// every NaN as QuietNaN. It walks the elements in place (Document.Elements
// allocated a slice per document and per embedded one: a sixth of a wide
// verify's time).
func narrowInt64(dst []byte, doc bsoncore.Document, array bool) ([]byte, error) {
	size, _, ok := bsoncore.ReadLength(doc)
	if !ok || size < 5 || int(size) > len(doc) {
		return nil, fmt.Errorf("normalize document: %w", bsoncore.NewInsufficientBytesError(doc, doc))
	}
	var idx int32
	if array {
		idx, dst = bsoncore.AppendArrayStart(dst)
	} else {
		idx, dst = bsoncore.AppendDocumentStart(dst)
	}
	rest := doc[4 : size-1]
	for len(rest) > 0 {
		e, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return nil, fmt.Errorf("normalize document: %w", bsoncore.NewInsufficientBytesError(doc, rest))
		}
		rest = r
		// e is the type byte, the key's C string, then the value.
		k := bytes.IndexByte(e[1:], 0)
		if k < 0 {
			return nil, errors.New("normalize document: a key without its end")
		}
		data := e[k+2:]
		switch bsoncore.Type(e[0]) {
		case bsoncore.TypeInt64:
			if n := int64(binary.LittleEndian.Uint64(data)); fitsInt32(n) {
				dst = append(dst, byte(bsoncore.TypeInt32))
				dst = append(dst, e[1:k+2]...)
				dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(n)))
				continue
			}
		case bsoncore.TypeDouble:
			if otherNaN(math.Float64frombits(binary.LittleEndian.Uint64(data))) {
				dst = append(dst, e[:k+2]...)
				dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(QuietNaN))
				continue
			}
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			dst = append(dst, e[:k+2]...)
			var err error
			dst, err = narrowInt64(dst, bsoncore.Document(data), bsoncore.Type(e[0]) == bsoncore.TypeArray)
			if err != nil {
				return nil, err
			}
			continue
		}
		dst = append(dst, e...)
	}
	if array {
		return bsoncore.AppendArrayEnd(dst, idx)
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}
