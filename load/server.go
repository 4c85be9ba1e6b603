package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/transform"
)

// serverTarget writes to a database of a MongoDB-wire server in batches
// capped by bytes: unordered inserts, and upserts by _id for the documents
// already there (see Write).
type serverTarget struct {
	client *mongo.Client
	db     *mongo.Database
	uri    connstr.String
	opt    Options
	// swap replaces existing documents by deleting and inserting them
	// (swapIn): the server is FerretDB, where an update scans the whole
	// collection.
	swap bool
	op   time.Duration // bound of one operation (opTimeout); 0: none
}

// openServer connects to the server at uri (checked by ParseTarget); the
// database is the URI's path. Errors name the URI without its password.
func openServer(ctx context.Context, uri connstr.String, opt Options) (*serverTarget, error) {
	dbName := uri.Path()
	if dbName == "" {
		return nil, fmt.Errorf("target URI %s names no database: add it to the path, e.g. mongodb://host:27017/mydb", uri)
	}
	copts := clientOptions(uri)
	client, err := mongo.Connect(copts)
	if err != nil {
		return nil, fmt.Errorf("target URI %s: %w", uri, uri.ParseError(err))
	}
	if err := client.Ping(ctx, nil); err != nil {
		_ = client.Disconnect(context.Background())
		var sse topology.ServerSelectionError
		if errors.As(err, &sse) {
			return nil, fmt.Errorf("connect to %s: no server answered within %s (serverSelectionTimeoutMS; each connection attempt %s, connectTimeoutMS): %w",
				uri, *copts.ServerSelectionTimeout, *copts.ConnectTimeout, uri.RedactError(err))
		}
		return nil, fmt.Errorf("connect to %s: %w", uri, uri.RedactError(err))
	}
	t := &serverTarget{client: client, db: client.Database(dbName), uri: uri, opt: opt.withDefaults(), op: opTimeout(uri)}
	var info bson.Raw
	if err := t.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err == nil {
		_, ferret := info.Lookup("ferretdbVersion").StringValueOK()
		t.swap = ferret
	}
	return t, nil
}

func (s *serverTarget) Caps() Caps { return Caps{Parallel: true, Delete: true} }

// Prepare does nothing: collections are created by their first write, and
// documents written after a checkpoint are replaced when written again.
func (s *serverTarget) Prepare(context.Context, []string, map[string]int64) error { return nil }

// Sync has nothing to do: a write is durable when acknowledged.
func (s *serverTarget) Sync(context.Context) (map[string]int64, error) { return nil, nil }

// Reopen connects again: a client of its own for another writer.
func (s *serverTarget) Reopen(ctx context.Context) (Target, error) {
	return openServer(ctx, s.uri, s.opt)
}

// Write stores docs by _id: a document whose _id is new is inserted, one
// whose _id exists is replaced. Each byte-capped batch is first sent as one
// unordered insertMany - the target's fastest write, and the only cheap
// one on servers where a lookup by _id scans the collection (FerretDB on
// SQLite: upserting every document made loading quadratic) - and only the
// documents refused as duplicate keys (a rerun, or the batch replayed when
// resuming) are then replaced with upserts. Either way a rerun gives the
// same result.
func (s *serverTarget) Write(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error) {
	coll := s.db.Collection(collection)
	var (
		rejects []transform.Reject
		raws    []any
		batch   []transform.Document
		bytes   int
	)
	reject := func(d transform.Document, err error) {
		rejects = append(rejects, transform.Reject{Collection: collection, ID: d.ID, Source: d.Source, Err: err})
	}
	flush := func() error {
		if len(raws) == 0 {
			return nil
		}
		ctx, cancel := bound(ctx, s.op)
		defer cancel()
		_, err := coll.InsertMany(ctx, raws, options.InsertMany().SetOrdered(false))
		if s.refusedBatch(ctx, err) {
			// A document the server closes the connection on (isolate.go).
			rj, err := s.isolate(ctx, collection, batch)
			rejects = append(rejects, rj...)
			raws, batch, bytes = raws[:0], batch[:0], 0
			return err
		}
		var (
			bwe    mongo.BulkWriteException
			again  []transform.Document
			models []mongo.WriteModel
		)
		if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0 {
			for _, we := range bwe.WriteErrors {
				d, raw := batch[we.Index], raws[we.Index].(bson.Raw)
				if we.Code != 11000 {
					reject(d, fmt.Errorf("target refused the document: %s (code %d)", we.Message, we.Code))
					continue
				}
				again = append(again, d)
				models = append(models, replaceModel(d, raw))
			}
			err = nil
		}
		if err != nil {
			return fmt.Errorf("write %d documents to %q: %w", len(raws), collection, err)
		}
		if s.swap && len(again) > 0 {
			models = nil
			if err := s.swapIn(ctx, coll, collection, again, reject); err != nil {
				return err
			}
		}
		if len(models) > 0 {
			_, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
			if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0 {
				// Some servers (FerretDB 1.24) number the failed operations
				// of a bulk update wrongly. Replaces are idempotent, so the
				// batch's replaces are made again one at a time: the errors
				// then belong to known documents.
				for i, m := range models {
					r := m.(*mongo.ReplaceOneModel)
					_, err := coll.ReplaceOne(ctx, r.Filter, r.Replacement, options.Replace().SetUpsert(true))
					var we mongo.WriteException
					switch {
					case err == nil:
					case errors.As(err, &we) && we.WriteConcernError == nil && len(we.WriteErrors) > 0:
						reject(again[i], replaceError(again[i], collection, we.WriteErrors[0]))
					default:
						return fmt.Errorf("replace a document in %q: %w", collection, err)
					}
				}
				err = nil
			}
			if err != nil {
				return fmt.Errorf("replace %d documents in %q: %w", len(models), collection, err)
			}
		}
		raws, batch, bytes = raws[:0], batch[:0], 0
		return nil
	}
	for _, d := range docs {
		raw, err := encode(d, s.opt.MaxDocSize)
		if err != nil {
			reject(d, err)
			continue
		}
		if bytes+len(raw) > s.opt.BatchBytes {
			if err := flush(); err != nil {
				return rejects, err
			}
		}
		raws = append(raws, bson.Raw(raw))
		batch = append(batch, d)
		bytes += len(raw)
	}
	return rejects, flush()
}

// swapIn replaces existing documents by deleting them, in chunks of
// deleteChunk _ids (of the same document type), and inserting them again:
// on FerretDB 1.24 with SQLite an update scans the whole collection, one
// command per document (5,000 replaces took minutes), and a bulk write of
// 100 replaces or more stalls the server, while a deleteMany of many _ids
// scans it once. A
// reader may miss a document between the two; a run interrupted there
// writes it again when resumed.
func (s *serverTarget) swapIn(ctx context.Context, coll *mongo.Collection, collection string, docs []transform.Document, reject func(transform.Document, error)) error {
	for len(docs) > 0 {
		n := 1
		for n < len(docs) && n < deleteChunk && sameType(docs[n], docs[0]) {
			n++
		}
		chunk := docs[:n]
		docs = docs[n:]
		ids := make([]any, len(chunk))
		raws := make([]any, len(chunk))
		for i, d := range chunk {
			raw, err := encode(d, s.opt.MaxDocSize)
			if err != nil {
				return err
			}
			ids[i], raws[i] = d.ID, bson.Raw(raw)
		}
		sel := Selection{IDs: ids}
		if d := chunk[0].Discriminator; d != nil {
			// Only documents of this type: an _id another type holds
			// stays, and inserting over it fails below.
			sel.Match = []transform.Field{*d}
		}
		filter, err := deleteFilter(sel, ids, nil)
		if err != nil {
			return fmt.Errorf("replace documents in %q: %w", collection, err)
		}
		if _, err := coll.DeleteMany(ctx, filter); err != nil {
			return fmt.Errorf("replace documents in %q: %w", collection, err)
		}
		_, err = coll.InsertMany(ctx, raws, options.InsertMany().SetOrdered(false))
		var bwe mongo.BulkWriteException
		if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0 {
			for _, we := range bwe.WriteErrors {
				reject(chunk[we.Index], replaceError(chunk[we.Index], collection, mongo.WriteError{Index: we.Index, Code: we.Code, Message: we.Message}))
			}
			err = nil
		}
		if err != nil {
			return fmt.Errorf("replace %d documents in %q: %w", len(chunk), collection, err)
		}
	}
	return nil
}

// sameType reports whether two documents are of one type (discriminator).
func sameType(a, b transform.Document) bool {
	if a.Discriminator == nil || b.Discriminator == nil {
		return a.Discriminator == nil && b.Discriminator == nil
	}
	return a.Discriminator.Key == b.Discriminator.Key && a.Discriminator.Value == b.Discriminator.Value
}

// deleteChunk caps the _ids of one deleteMany: the command stays small,
// and servers that scan the collection for each command (FerretDB on
// SQLite) scan it once per chunk, not once per document.
const deleteChunk = 1000

// Delete removes the documents sel picks with deleteMany, in chunks of
// deleteChunk _ids (and of deleteChunk alternatives of Any).
func (s *serverTarget) Delete(ctx context.Context, collection string, sel Selection) (int64, error) {
	coll := s.db.Collection(collection)
	what := fmt.Sprintf("delete from %q", collection)
	if sel.all() {
		what = fmt.Sprintf("empty collection %q", collection)
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
			dctx, cancel := bound(ctx, s.op)
			res, err := coll.DeleteMany(dctx, filter)
			cancel()
			if err != nil {
				return n, fmt.Errorf("%s: %w", what, err)
			}
			n += res.DeletedCount
		}
	}
	return n, nil
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

// selectionFilter is the filter of sel's IDs (given as ids), Match and Min.
func selectionFilter(sel Selection, ids []any) transform.Doc {
	var f transform.Doc
	if ids != nil {
		f = append(f, transform.Field{Key: "_id", Value: transform.Doc{{Key: "$in", Value: transform.Array(ids)}}})
	}
	f = append(f, sel.Match...)
	if sel.Min != nil {
		f = append(f, transform.Field{Key: sel.Min.Key, Value: transform.Doc{{Key: "$gte", Value: sel.Min.Value}}})
	}
	return f
}

// replaceError explains why replacing d failed.
func replaceError(d transform.Document, collection string, we mongo.WriteError) error {
	if we.Code == 11000 && d.Discriminator != nil {
		return fmt.Errorf("_id %v is already taken by another document type in %q (%s); make the ids distinct", d.ID, collection, we.Message)
	}
	return fmt.Errorf("target refused the document: %s (code %d)", we.Message, we.Code)
}

// replaceModel replaces the document with d's _id by raw, inserting it
// when there is none.
func replaceModel(d transform.Document, raw bson.Raw) mongo.WriteModel {
	filter := bson.D{{Key: "_id", Value: raw.Lookup("_id")}}
	if d.Discriminator != nil {
		// Replace only a document of the same type: an _id taken by
		// another type fails as a duplicate key, never overwrites it.
		filter = append(filter, bson.E{Key: d.Discriminator.Key, Value: raw.Lookup(d.Discriminator.Key)})
	}
	return mongo.NewReplaceOneModel().SetFilter(filter).SetReplacement(raw).SetUpsert(true)
}

// closeTimeout bounds Disconnect, which ends the client's sessions on the
// server first: on a half-open connection that would wait forever.
const closeTimeout = 10 * time.Second

// Close disconnects, within closeTimeout.
func (s *serverTarget) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	return s.client.Disconnect(ctx)
}
