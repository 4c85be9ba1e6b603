package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/denorm/denorm/internal/poison"
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
	line := 0
	var doc bson.Raw
	for sc.Scan() {
		line++
		if line%4096 == 0 && ctx.Err() != nil {
			return true, ctx.Err()
		}
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		// doc is reused for every line: fn must not keep it (Target.Scan).
		var err error
		if doc, err = UnmarshalExtJSON(poison.Reuse(doc)[:0], b); err != nil {
			return true, fmt.Errorf("%s:%d: not an Extended JSON document: %w", path, line, err)
		}
		if err := fn(doc); err != nil {
			return true, err
		}
	}
	if err := sc.Err(); err != nil {
		return true, fmt.Errorf("read %s after line %d: %w", path, line, err)
	}
	return true, nil
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
	out, err := narrowInt64(nil, bsoncore.Document(doc), false)
	if err != nil {
		return nil, err
	}
	return out, nil
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
// every NaN as QuietNaN.
func narrowInt64(dst []byte, doc bsoncore.Document, array bool) ([]byte, error) {
	elems, err := doc.Elements()
	if err != nil {
		return nil, fmt.Errorf("normalize document: %w", err)
	}
	var idx int32
	if array {
		idx, dst = bsoncore.AppendArrayStart(dst)
	} else {
		idx, dst = bsoncore.AppendDocumentStart(dst)
	}
	for _, e := range elems {
		key, v := e.Key(), e.Value()
		switch v.Type {
		case bsoncore.TypeInt64:
			if n := v.Int64(); fitsInt32(n) {
				dst = bsoncore.AppendInt32Element(dst, key, int32(n))
				continue
			}
		case bsoncore.TypeDouble:
			if otherNaN(v.Double()) {
				dst = bsoncore.AppendDoubleElement(dst, key, QuietNaN)
				continue
			}
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			dst = bsoncore.AppendHeader(dst, v.Type, key)
			dst, err = narrowInt64(dst, bsoncore.Document(v.Data), v.Type == bsoncore.TypeArray)
			if err != nil {
				return nil, err
			}
			continue
		}
		dst = bsoncore.AppendValueElement(dst, key, v)
	}
	if array {
		return bsoncore.AppendArrayEnd(dst, idx)
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}
