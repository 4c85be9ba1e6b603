package load

// Deleting documents from a server target: by _id (sync, a resume's
// replays), by document type (--restart, --drop of a shared collection, a
// fresh run on FerretDB), a bucket parent's surplus pages (sync), or a
// whole collection.
//
// FerretDB 1.24 (SQLite) deletes with one SQL statement that binds every
// matching _id as a variable, and SQLite takes at most 32,766: a
// deleteMany matching more fails with "too many SQL variables", and
// deletes nothing. It also evaluates every filter (but one on a string
// _id) by decoding every document of the collection, and an $in list by
// comparing with each element in turn: a delete costs a scan, and a
// delete by a long $in list of _ids a scan times the list (3,000 integer
// _ids over 300,000 documents: 25 s; 30,000: 170 s; measured here). So
// there a delete that its _ids do not bound (a document type, a bucket
// parent's pages, a whole collection with options) reads the _ids it
// picks first, sorts them on disk as servers order them, and deletes each
// run of Options.DeleteChunk consecutive _ids by the range they span:
// one scan per run, two comparisons per document. A delete by _ids (a
// sync's, a resume's replays) goes deleteChunk _ids a command, each list
// also bounded by its range, so that only the documents within it are
// compared with the list. Emptying a whole collection drops it and makes
// its indexes again, which costs nothing.

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/extsort"
	"github.com/denorm/denorm/transform"
)

// deleteChunk caps the _ids of one deleteMany by _id: the command stays
// small, and servers that scan the collection for each command (FerretDB
// on SQLite) scan it once per chunk, not once per document.
const deleteChunk = 1000

// DefaultDeleteChunk is Options.DeleteChunk's default: the most
// documents one delete command removes on FerretDB, whose SQLite backend
// fails one matching more than 32,766 (a margin for documents written
// into a range while it is deleted).
const DefaultDeleteChunk = 30000

// Delete removes the documents sel picks with deleteMany, in chunks of
// deleteChunk _ids (and of deleteChunk alternatives of Any); on a server
// whose profile says so (FerretDB: emptyByDrop, deleteInRuns) no command
// matches more than Options.DeleteChunk documents (see the top of this
// file).
func (s *serverTarget) Delete(ctx context.Context, collection string, sel Selection) (int64, error) {
	coll := s.db.Collection(collection)
	what := fmt.Sprintf("delete from %q", collection)
	if sel.all() {
		what = fmt.Sprintf("empty collection %q", collection)
		if s.profile.emptyByDrop {
			n, dropped, err := s.dropAndIndex(ctx, coll)
			if err != nil {
				return n, fmt.Errorf("%s: %w", what, err)
			}
			if dropped {
				return n, nil
			}
		}
	}
	if sel.IDs != nil && len(sel.IDs) == 0 {
		return 0, nil
	}
	chunks := [][]any{nil}
	if sel.IDs != nil {
		chunks = slices.Collect(slices.Chunk(sel.IDs, deleteChunk))
	}
	anys := [][]Selection{nil}
	if len(sel.Any) > 0 {
		anys = slices.Collect(slices.Chunk(sel.Any, deleteChunk))
	}
	var n int64
	for _, ids := range chunks {
		for _, alt := range anys {
			filter, err := deleteFilter(sel, ids, alt)
			if err != nil {
				return n, fmt.Errorf("%s: %w", what, err)
			}
			var d int64
			if ids == nil && s.profile.deleteInRuns {
				// Not bounded by its _ids: bounded by chunks.
				d, err = s.deleteChunked(ctx, coll, filter)
			} else {
				d, err = s.deleteMany(ctx, coll, filter)
			}
			n += d
			if err != nil {
				return n, fmt.Errorf("%s: %w", what, err)
			}
		}
	}
	return n, nil
}

func (s *serverTarget) deleteMany(ctx context.Context, coll *mongo.Collection, filter any) (int64, error) {
	dctx, cancel := bound(ctx, s.op)
	defer cancel()
	res, err := coll.DeleteMany(dctx, filter)
	if err != nil {
		return 0, err
	}
	return res.DeletedCount, nil
}

// deleteChunked deletes what filter picks, at most Options.DeleteChunk
// documents a command (see the top of this file): one find reads the
// _ids of every document filter picks, sorted on disk as servers order
// them (internal/extsort: memory stays bounded), then each run of
// DeleteChunk consecutive integer or string _ids is deleted by the range
// it spans, which holds no other document filter picks. Other _ids
// (doubles, documents, binary) are deleted by their list, deleteChunk at
// a time.
func (s *serverTarget) deleteChunked(ctx context.Context, coll *mongo.Collection, filter bson.Raw) (int64, error) {
	sorted := extsort.New("", "denorm-delete", 8<<20)
	defer sorted.Close()
	var others []any
	var n int64
	deleteOthers := func() error {
		if len(others) == 0 {
			return nil
		}
		d, err := s.deleteMany(ctx, coll, withIDs(filter, bson.D{{Key: "$in", Value: others}}))
		n += d
		others = others[:0]
		return err
	}
	fctx, cancel := bound(ctx, s.op)
	cur, err := coll.Find(fctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(10000))
	if err != nil {
		cancel()
		return 0, fmt.Errorf("find the documents to delete: %w", err)
	}
	var key []byte
	for cur.Next(fctx) {
		id := cur.Current.Lookup("_id")
		if key = rangeKey(key[:0], id); key == nil {
			others = append(others, bson.RawValue{Type: id.Type, Value: slices.Clone(id.Value)})
			continue
		}
		if err := sorted.Add(key, id.Value); err != nil {
			cur.Close(fctx)
			cancel()
			return 0, fmt.Errorf("sort the _ids to delete: %w", err)
		}
	}
	err = cur.Err()
	cur.Close(fctx)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("find the documents to delete: %w", err)
	}
	for chunk := range slices.Chunk(others, deleteChunk) {
		others = chunk
		if err := deleteOthers(); err != nil {
			return n, err
		}
	}
	it, err := sorted.Iter()
	if err != nil {
		return n, fmt.Errorf("sort the _ids to delete: %w", err)
	}
	defer it.Close()
	var run []bson.RawValue
	kind := byte(0)
	flush := func() error {
		d, err := s.deleteRun(ctx, coll, filter, run)
		n += d
		run = run[:0]
		return err
	}
	for it.Next() {
		k := it.Key()
		if len(run) > 0 && (k[0] != kind || len(run) == s.opt.DeleteChunk) {
			if err := flush(); err != nil {
				return n, err
			}
		}
		kind = k[0]
		t := bson.TypeInt64
		if kind == 's' {
			t = bson.TypeString
		} else if len(it.Value()) == 4 {
			t = bson.TypeInt32
		}
		run = append(run, bson.RawValue{Type: t, Value: slices.Clone(it.Value())})
	}
	if err := it.Err(); err != nil {
		return n, fmt.Errorf("sort the _ids to delete: %w", err)
	}
	if len(run) > 0 {
		return n, flush()
	}
	return n, nil
}

// deleteRun deletes the documents filter picks whose _id lies between the
// first and the last of run (consecutive in server order, of one kind):
// by the range, or, should it fail (a document written there since made
// it too many for one command), by halves, and at last by the list.
func (s *serverTarget) deleteRun(ctx context.Context, coll *mongo.Collection, filter bson.Raw, run []bson.RawValue) (int64, error) {
	d, err := s.deleteMany(ctx, coll, withIDs(filter, bson.D{{Key: "$gte", Value: run[0]}, {Key: "$lte", Value: run[len(run)-1]}}))
	if err == nil || ctx.Err() != nil {
		return d, err
	}
	if len(run) <= deleteChunk {
		list := make(bson.A, len(run))
		for i, v := range run {
			list[i] = v
		}
		return s.deleteMany(ctx, coll, withIDs(filter, bson.D{{Key: "$in", Value: list}}))
	}
	half := len(run) / 2
	d1, err := s.deleteRun(ctx, coll, filter, run[:half])
	if err != nil {
		return d1, err
	}
	d2, err := s.deleteRun(ctx, coll, filter, run[half:])
	return d1 + d2, err
}

// rangeKey appends to dst the sort key of an integer or string _id,
// whose byte order is the order servers compare them in: 'n' and the
// integer with its sign bit flipped, big-endian; 's' and the string's
// bytes. Other _ids have none (nil).
func rangeKey(dst []byte, id bson.RawValue) []byte {
	switch id.Type {
	case bson.TypeInt32, bson.TypeInt64:
		return binary.BigEndian.AppendUint64(append(dst, 'n'), uint64(id.AsInt64())^(1<<63))
	case bson.TypeString:
		return append(append(dst, 's'), id.StringValue()...)
	}
	return nil
}

// idBounds are the least and the greatest of ids when they are all
// integers or all strings (as a transform builds them, or read back from
// the server), compared as servers compare them (by value, by bytes);
// ok is false otherwise.
func idBounds[T any](ids []T) (lo, hi any, ok bool) {
	kind := ""
	var loK, hiK idKey
	for i, v := range ids {
		k, key := idKeyOf(v)
		if k == "" || (i > 0 && k != kind) {
			return nil, nil, false
		}
		if i == 0 {
			kind, lo, hi, loK, hiK = k, v, v, key, key
			continue
		}
		if key.less(loK) {
			lo, loK = v, key
		}
		if hiK.less(key) {
			hi, hiK = v, key
		}
	}
	return lo, hi, kind != ""
}

// idKey is an integer or string _id, to order.
type idKey struct {
	n int64
	s string
}

func (a idKey) less(b idKey) bool { return a.n < b.n || a.n == b.n && a.s < b.s }

// rewriteRuns splits the _ids of a rewrite (sorted by sortIDs) into the
// lists of one delete command each. On FerretDB every command scans the
// collection, and compares each document within the list's range with
// every element of the list: each command costs a scan plus the range
// times the list. For integer _ids a run is cut when its range times its
// length passes scanComparisons times the range of all the _ids (a proxy
// for the collection's size: the comparisons would cost more than
// another scan), and at rewriteChunk; a rewrite of _ids spread over the
// collection then makes about the square root of scanComparisons times
// their number per command, the cheapest split. Other _ids go
// deleteChunk a command.
func rewriteRuns(ids []any) [][]any {
	if len(ids) == 0 {
		return nil
	}
	for _, v := range ids {
		if kind, _ := idKeyOf(v); kind != "int" {
			return slices.Collect(slices.Chunk(ids, deleteChunk))
		}
	}
	_, first := idKeyOf(ids[0])
	_, last := idKeyOf(ids[len(ids)-1])
	budget := scanComparisons * (float64(last.n) - float64(first.n) + 1)
	var runs [][]any
	start := 0
	lo := first
	for i := 1; i < len(ids); i++ {
		_, hi := idKeyOf(ids[i])
		n := i - start + 1
		if n > rewriteChunk || (float64(hi.n)-float64(lo.n)+1)*float64(n) > budget {
			runs = append(runs, ids[start:i])
			start, lo = i, hi
		}
	}
	return append(runs, ids[start:])
}

const (
	// rewriteChunk caps the _ids of one delete of a rewrite (FerretDB
	// fails a delete matching more than 32,766 documents).
	rewriteChunk = 8000
	// scanComparisons is how many comparisons of a document with an $in
	// list's elements cost about as much as reading one document of the
	// collection, on FerretDB 1.24 with SQLite (measured here: a scan of
	// 20,000 documents of 400 bytes 0.5 s; 1,000 and 4,000 _ids over
	// their range 1.3 s and 6.8 s more).
	scanComparisons = 300
)

// sortIDs sorts ids as servers order them when they are all integers or
// all strings, so that each chunk of a delete by _ids spans a narrow
// range (see the top of this file); other lists are left as they are.
func sortIDs(ids []any) {
	kind := ""
	for i, v := range ids {
		k, _ := idKeyOf(v)
		if k == "" || (i > 0 && k != kind) {
			return
		}
		kind = k
	}
	slices.SortFunc(ids, func(a, b any) int {
		_, ka := idKeyOf(a)
		_, kb := idKeyOf(b)
		switch {
		case ka.less(kb):
			return -1
		case kb.less(ka):
			return 1
		}
		return 0
	})
}

func idKeyOf(v any) (kind string, k idKey) {
	switch x := v.(type) {
	case int32:
		return "int", idKey{n: int64(x)}
	case int64:
		return "int", idKey{n: x}
	case string:
		return "string", idKey{s: x}
	case bson.RawValue:
		switch x.Type {
		case bson.TypeInt32, bson.TypeInt64:
			return "int", idKey{n: x.AsInt64()}
		case bson.TypeString:
			return "string", idKey{s: x.StringValue()}
		}
	}
	return "", idKey{}
}

// withIDs is filter with a condition on _id added.
func withIDs(filter bson.Raw, cond bson.D) any {
	return bson.D{{Key: "$and", Value: bson.A{filter, bson.D{{Key: "_id", Value: cond}}}}}
}

// dropAndIndex empties coll on FerretDB by dropping it and making its
// indexes again, when it has no options (capped, a validator), which a
// drop would lose: FerretDB 1.24 deletes with a filter, the empty one
// included, by reading and decoding every document of the collection
// (and fails past 32,766 documents, see the top of this file); a drop
// costs nothing. It returns -1 (not counted: counting scans too) when it
// dropped the collection, 0 when there was none, and false when the
// collection has options (then the caller deletes its documents).
func (s *serverTarget) dropAndIndex(ctx context.Context, coll *mongo.Collection) (int64, bool, error) {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	specs, err := s.db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: coll.Name()}})
	if err != nil {
		return 0, false, err
	}
	if len(specs) == 0 {
		return 0, true, nil // nothing to empty
	}
	if opts := specs[0].Options; len(opts) > 0 {
		if elems, err := opts.Elements(); err != nil || len(elems) > 0 {
			return 0, false, nil
		}
	}
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		return 0, false, err
	}
	var indexes bson.A
	for cur.Next(ctx) {
		var ix bson.D
		if err := bson.Unmarshal(cur.Current, &ix); err != nil {
			cur.Close(ctx)
			return 0, false, err
		}
		if name, _ := cur.Current.Lookup("name").StringValueOK(); name == "_id_" {
			continue
		}
		ix = slices.DeleteFunc(ix, func(e bson.E) bool { return e.Key == "v" || e.Key == "ns" })
		indexes = append(indexes, ix)
	}
	if err := cur.Err(); err != nil {
		cur.Close(ctx)
		return 0, false, err
	}
	cur.Close(ctx)
	if err := coll.Drop(ctx); err != nil {
		return 0, false, err
	}
	if len(indexes) > 0 {
		err := s.db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: coll.Name()}, {Key: "indexes", Value: indexes}}).Err()
		if err != nil {
			return -1, true, fmt.Errorf("emptied by dropping it, but its %d indexes could not be made again (%w): create them again (migrate does, for the mapping's)", len(indexes), err)
		}
	}
	return -1, true, nil
}

// deleteFilter is the filter of sel with ids for its _ids and any for its
// alternatives, encoded like the documents themselves so that values match
// the stored ones exactly.
func deleteFilter(sel Selection, ids []any, any []Selection) (bson.Raw, error) {
	f := selectionFilter(sel, ids)
	if len(any) > 0 {
		or := make(transform.Array, len(any))
		for i, a := range any {
			or[i] = selectionFilter(a, nil)
		}
		f = append(f, transform.Field{Key: "$or", Value: or})
	}
	return EncodeDocument(f)
}

// selectionFilter is the filter of sel's IDs (given as ids), Match and
// Min. _ids of one type are also bounded by their least and greatest
// value, before the list: a server that compares every document with the
// list in turn (FerretDB) then compares only those within the range.
func selectionFilter(sel Selection, ids []any) transform.Doc {
	var f transform.Doc
	if ids != nil {
		cond := transform.Doc{{Key: "$in", Value: transform.Array(ids)}}
		if lo, hi, ok := idBounds(ids); ok && len(ids) > 1 {
			cond = append(transform.Doc{{Key: "$gte", Value: lo}, {Key: "$lte", Value: hi}}, cond...)
		}
		f = append(f, transform.Field{Key: "_id", Value: cond})
	}
	f = append(f, sel.Match...)
	if sel.Min != nil {
		f = append(f, transform.Field{Key: sel.Min.Key, Value: transform.Doc{{Key: "$gte", Value: sel.Min.Value}}})
	}
	return f
}
