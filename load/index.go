package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/mappings"
)

// Indexes, shard keys and dropping collections: what both kinds of
// target do with a collection as a whole, besides its documents.
//
// A server creates the indexes with createIndexes, one index a command
// (so that one failing does not hide the others), and lists them back
// with listIndexes. A directory cannot hold an index: it writes
// <collection>.indexes.json beside <collection>.jsonl, the createIndexes
// command that builds them, which a mongoimport user runs once the data
// is imported (docs/migrate.md, "Indexes and shard keys"); Indexes reads that file back.

// IndexError is an index the target refused.
type IndexError struct {
	Collection string
	Index      mappings.Index
	// Unsupported: the target does not have this kind of index (FerretDB:
	// partial and hashed indexes); Conflict: an index of that name or keys
	// exists with other options; Duplicates: the documents break a
	// unique index.
	Unsupported, Conflict, Duplicates bool
	Err                               error
}

func (e *IndexError) Error() string {
	what := fmt.Sprintf("index %s (%s) on %q", e.Index.Name, e.Index.KeyText(), e.Collection)
	switch {
	case e.Unsupported:
		return fmt.Sprintf("%s: the target does not support this kind of index (%v); remove its partial filter or hashed key, or create it by hand", what, e.Err)
	case e.Conflict:
		return fmt.Sprintf("%s: the target already has an index of that name or keys with other options (%v); drop it (or migrate with --drop) and run again", what, e.Err)
	case e.Duplicates:
		return fmt.Sprintf("%s: documents have the same values of its keys, so it cannot be unique (%v); fix the mapping or drop unique", what, e.Err)
	}
	return fmt.Sprintf("create %s: %v", what, e.Err)
}

func (e *IndexError) Unwrap() error { return e.Err }

// indexDoc is an index as createIndexes takes it.
func indexDoc(ix mappings.Index) bson.D {
	key := bson.D{}
	for _, k := range ix.Keys {
		var v any = int32(1)
		switch k.Order {
		case mappings.IndexDesc:
			v = int32(-1)
		case mappings.IndexHashed:
			v = "hashed"
		}
		key = append(key, bson.E{Key: k.Field, Value: v})
	}
	d := bson.D{{Key: "key", Value: key}, {Key: "name", Value: ix.Name}}
	if ix.Unique {
		d = append(d, bson.E{Key: "unique", Value: true})
	}
	if ix.Partial != nil {
		d = append(d, bson.E{Key: "partialFilterExpression", Value: partialDoc(ix.Partial)})
	}
	return d
}

func partialDoc(p mappings.Partial) bson.D {
	var conv func(v any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case mappings.Partial:
			d := bson.D{}
			for _, f := range x {
				d = append(d, bson.E{Key: f.Key, Value: conv(f.Value)})
			}
			return d
		case []any:
			a := bson.A{}
			for _, e := range x {
				a = append(a, conv(e))
			}
			return a
		}
		return v
	}
	return conv(p).(bson.D)
}

// indexFromDoc reads one entry of listIndexes (or of an indexes file).
func indexFromDoc(d bson.D) mappings.Index {
	var ix mappings.Index
	for _, e := range d {
		switch e.Key {
		case "name":
			ix.Name, _ = e.Value.(string)
		case "unique":
			ix.Unique, _ = e.Value.(bool)
		case "key":
			kd, _ := e.Value.(bson.D)
			for _, k := range kd {
				order := mappings.IndexAsc
				switch v := k.Value.(type) {
				case string:
					order = v
				default:
					if n, ok := number(v); ok && n < 0 {
						order = mappings.IndexDesc
					}
				}
				ix.Keys = append(ix.Keys, mappings.IndexKey{Field: k.Key, Order: order})
			}
		case "partialFilterExpression":
			if pd, ok := e.Value.(bson.D); ok {
				ix.Partial = partialFromDoc(pd)
			}
		}
	}
	return ix
}

func partialFromDoc(d bson.D) mappings.Partial {
	var conv func(v any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case bson.D:
			p := mappings.Partial{}
			for _, e := range x {
				p = append(p, mappings.PartialField{Key: e.Key, Value: conv(e.Value)})
			}
			return p
		case bson.A:
			l := []any{}
			for _, e := range x {
				l = append(l, conv(e))
			}
			return l
		}
		return v
	}
	return conv(d).(mappings.Partial)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// SamePartial reports whether two partial filters are equal, numbers
// compared by value (a server may give 1 back as a double).
func SamePartial(a, b mappings.Partial) bool {
	var same func(x, y any) bool
	same = func(x, y any) bool {
		if nx, ok := number(x); ok {
			ny, ok := number(y)
			return ok && (nx == ny || math.IsNaN(nx) && math.IsNaN(ny))
		}
		switch xv := x.(type) {
		case mappings.Partial:
			yv, ok := y.(mappings.Partial)
			if !ok || len(xv) != len(yv) {
				return false
			}
			for i := range xv {
				if xv[i].Key != yv[i].Key || !same(xv[i].Value, yv[i].Value) {
					return false
				}
			}
			return true
		case []any:
			yv, ok := y.([]any)
			if !ok || len(xv) != len(yv) {
				return false
			}
			for i := range xv {
				if !same(xv[i], yv[i]) {
					return false
				}
			}
			return true
		}
		return x == y
	}
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return same(a, b)
}

// CreateIndexes creates the indexes, one createIndexes command each; an
// index that already exists as declared is left alone. It returns every
// index it could not create, as *IndexError, joined. An index the
// collection holds with the same name or keys but other options is
// refused (Conflict) before any command: MongoDB would refuse it too,
// but FerretDB 1.24 answers ok and keeps the old one.
func (s *serverTarget) CreateIndexes(ctx context.Context, collection string, idx []mappings.Index) error {
	have, _, err := s.Indexes(ctx, collection)
	if err != nil {
		return err
	}
	var errs []error
	for _, ix := range idx {
		if h, ok := heldIndex(have, ix); ok {
			if !sameIndex(h, ix) {
				errs = append(errs, &IndexError{Collection: collection, Index: ix, Conflict: true,
					Err: fmt.Errorf("the collection has index %s (%s)%s", h.Name, h.KeyText(), uniqueText(h.Unique))})
			}
			continue
		}
		cmd := bson.D{{Key: "createIndexes", Value: collection}, {Key: "indexes", Value: bson.A{indexDoc(ix)}}}
		err := s.db.RunCommand(ctx, cmd).Err()
		if err == nil {
			continue
		}
		ie := &IndexError{Collection: collection, Index: ix, Err: err}
		var ce mongo.CommandError
		if errors.As(err, &ce) {
			switch {
			case slices.Contains(s.profile.unsupportedIndex, ce.Code):
				ie.Unsupported = true
			case ce.Code == 85 || ce.Code == 86:
				ie.Conflict = true
			case ce.Code == 11000 || strings.Contains(ce.Message, "UNIQUE constraint failed"):
				ie.Duplicates = true
			}
		}
		if ctx.Err() != nil || Retryable(err) {
			return fmt.Errorf("create index %s on %q: %w", ix.Name, collection, err)
		}
		errs = append(errs, ie)
	}
	return errors.Join(errs...)
}

// Retryable reports whether err is a transient failure (Transient).
func Retryable(err error) bool {
	r, _ := Transient(err)
	return r
}

// Indexes lists the collection's indexes, the _id index left out; exists
// is false when there is no such collection.
func (s *serverTarget) Indexes(ctx context.Context, collection string) ([]mappings.Index, bool, error) {
	names, err := s.db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: collection}})
	if err != nil {
		return nil, false, fmt.Errorf("list collections: %w", err)
	}
	if len(names) == 0 {
		return nil, false, nil
	}
	cur, err := s.db.Collection(collection).Indexes().List(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("list the indexes of %q: %w", collection, err)
	}
	defer cur.Close(ctx)
	var out []mappings.Index
	for cur.Next(ctx) {
		var d bson.D
		if err := bson.Unmarshal(cur.Current, &d); err != nil {
			return nil, true, fmt.Errorf("list the indexes of %q: %w", collection, err)
		}
		if ix := indexFromDoc(d); ix.Name != "_id_" {
			out = append(out, ix)
		}
	}
	if err := cur.Err(); err != nil {
		return nil, true, fmt.Errorf("list the indexes of %q: %w", collection, err)
	}
	return out, true, nil
}

// ShardOutcome is what became of a shard key.
type ShardOutcome struct {
	// Applied: the collection is sharded on the key; How says by which
	// command. Otherwise Note says why not.
	Applied   bool
	How, Note string
}

// shardCommand is MongoDB's shardCollection command (run on admin).
func shardCommand(db, collection string, key []mappings.IndexKey) bson.D {
	k := bson.D{}
	for _, f := range key {
		var v any = int32(1)
		if f.Order == mappings.IndexHashed {
			v = "hashed"
		}
		k = append(k, bson.E{Key: f.Field, Value: v})
	}
	return bson.D{{Key: "shardCollection", Value: db + "." + collection}, {Key: "key", Value: k}}
}

// cosmosCommand is Azure Cosmos DB for MongoDB's (RU) extension command
// that creates a collection with its shard key: one field, which Cosmos DB
// hashes.
func cosmosCommand(collection string, key []mappings.IndexKey) (bson.D, error) {
	if len(key) != 1 {
		return nil, fmt.Errorf("Cosmos DB takes a shard key of one field; %q has %d", collection, len(key))
	}
	return bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: collection}, {Key: "shardKey", Value: key[0].Field}}, nil
}

// notFound: the server has no such command.
func notFound(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && (ce.Code == 59 || strings.Contains(ce.Message, "no such command") ||
		strings.Contains(ce.Message, "mongos") || strings.Contains(ce.Message, "not running with --shardsvr"))
}

// Shard sets the collection's shard key before its first write:
// shardCollection on a sharded MongoDB cluster (or Cosmos DB vCore), else
// Cosmos DB's customAction CreateCollection with shardKey (Cosmos DB for
// MongoDB RU fixes a collection's shard key when it is created, and has
// no shardCollection), else, on a server with neither (a replica set,
// FerretDB: both commands are CommandNotFound), nothing, and the outcome
// says so. A collection sharded already (a resumed run) is left as it is.
func (s *serverTarget) Shard(ctx context.Context, collection string, key []mappings.IndexKey) (ShardOutcome, error) {
	err := s.client.Database("admin").RunCommand(ctx, shardCommand(s.db.Name(), collection, key)).Err()
	var ce mongo.CommandError
	switch {
	case err == nil:
		return ShardOutcome{Applied: true, How: "shardCollection"}, nil
	case errors.As(err, &ce) && (ce.Code == 23 || strings.Contains(ce.Message, "already sharded")):
		return ShardOutcome{Applied: true, How: "shardCollection (already sharded)"}, nil
	case !notFound(err):
		return ShardOutcome{}, fmt.Errorf("shard %q: %w", collection, err)
	}
	none := s.profile.noSharding
	cmd, cerr := cosmosCommand(collection, key)
	if cerr != nil {
		// Not a sharded MongoDB; and a Cosmos DB would refuse this key.
		return ShardOutcome{Note: none + "; " + cerr.Error()}, nil
	}
	err = s.db.RunCommand(ctx, cmd).Err()
	switch {
	case err == nil:
		return ShardOutcome{Applied: true, How: "customAction CreateCollection"}, nil
	case errors.As(err, &ce) && ce.Code == 48: // NamespaceExists: created by an earlier run
		return ShardOutcome{Applied: true, How: "customAction CreateCollection (the collection exists already)"}, nil
	case notFound(err):
		return ShardOutcome{Note: none}, nil
	}
	return ShardOutcome{}, fmt.Errorf("create %q with its shard key: %w", collection, err)
}

// Drop removes the collection with its indexes; existed says whether
// there was one.
func (s *serverTarget) Drop(ctx context.Context, collection string) (bool, error) {
	names, err := s.db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: collection}})
	if err != nil {
		return false, fmt.Errorf("list collections: %w", err)
	}
	if len(names) == 0 {
		return false, nil
	}
	if err := s.db.Collection(collection).Drop(ctx); err != nil {
		return true, fmt.Errorf("drop %q: %w", collection, err)
	}
	return true, nil
}

// indexesPath is the file holding a collection's createIndexes command.
func (s *dirTarget) indexesPath(collection string) string {
	return filepath.Join(s.dir, collection+".indexes.json")
}

// CreateIndexes writes <collection>.indexes.json: the createIndexes
// command for the indexes the file holds already and those of idx, as
// relaxed Extended JSON. As on a server, an index the file holds as
// declared stays, one it holds with the same name or keys but other
// options is refused (an *IndexError, Conflict), and the indexes of other
// mappings (the other document types of a shared collection) stay.
func (s *dirTarget) CreateIndexes(_ context.Context, collection string, idx []mappings.Index) error {
	if _, err := s.path(collection); err != nil {
		return err
	}
	have, err := s.indexFile(collection)
	if err != nil {
		return err
	}
	var errs []error
	for _, ix := range idx {
		h, ok := heldIndex(have, ix)
		switch {
		case !ok:
			have = append(have, ix)
		case !sameIndex(h, ix):
			errs = append(errs, &IndexError{Collection: collection, Index: ix, Conflict: true,
				Err: fmt.Errorf("%s holds index %s (%s)%s", filepath.Base(s.indexesPath(collection)), h.Name, h.KeyText(), uniqueText(h.Unique))})
		}
	}
	list := bson.A{}
	for _, ix := range have {
		list = append(list, indexDoc(ix))
	}
	b, err := bson.MarshalExtJSONIndent(bson.D{{Key: "createIndexes", Value: collection}, {Key: "indexes", Value: list}}, false, false, "", "  ")
	if err != nil {
		return fmt.Errorf("indexes of %q: %w", collection, err)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return s.fileErr("create", s.dir, err)
	}
	if err := writeFileAtomic(s.dir, s.indexesPath(collection), append(b, '\n')); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// heldIndex is the index of have with ix's name or keys, if any: the one
// creating ix would meet.
func heldIndex(have []mappings.Index, ix mappings.Index) (mappings.Index, bool) {
	for _, h := range have {
		if h.Name == ix.Name || mappings.SameKeys(h.Keys, ix.Keys) {
			return h, true
		}
	}
	return mappings.Index{}, false
}

// sameIndex: a and b are one index as a server compares them (name, keys
// in order, unique, partial filter).
func sameIndex(a, b mappings.Index) bool {
	return a.Name == b.Name && mappings.SameKeys(a.Keys, b.Keys) && a.Unique == b.Unique && SamePartial(a.Partial, b.Partial)
}

func uniqueText(u bool) string {
	if u {
		return ", unique"
	}
	return ""
}

// Indexes reads <collection>.indexes.json back; exists is false when the
// collection has no file.
func (s *dirTarget) Indexes(_ context.Context, collection string) ([]mappings.Index, bool, error) {
	data, err := s.path(collection)
	if err != nil {
		return nil, false, err
	}
	if _, err := os.Stat(data); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("target directory: %w", err)
	}
	out, err := s.indexFile(collection)
	return out, true, err
}

// indexFile reads the indexes in <collection>.indexes.json (none when
// there is no such file).
func (s *dirTarget) indexFile(collection string) ([]mappings.Index, error) {
	b, err := os.ReadFile(s.indexesPath(collection))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("indexes of %q: %w", collection, err)
	}
	var cmd struct {
		Indexes []json.RawMessage `json:"indexes"`
	}
	if err := json.Unmarshal(b, &cmd); err != nil {
		return nil, fmt.Errorf("%s: %w; it is not the createIndexes command denorm writes: move it away, or migrate with --drop", s.indexesPath(collection), err)
	}
	var out []mappings.Index
	for _, raw := range cmd.Indexes {
		var d bson.D
		if err := bson.UnmarshalExtJSON(raw, false, &d); err != nil {
			return nil, fmt.Errorf("%s: %w; it is not the createIndexes command denorm writes: move it away, or migrate with --drop", s.indexesPath(collection), err)
		}
		out = append(out, indexFromDoc(d))
	}
	return out, nil
}

// Shard does nothing: a file has no shard key.
func (s *dirTarget) Shard(context.Context, string, []mappings.IndexKey) (ShardOutcome, error) {
	return ShardOutcome{Note: "a directory target has no shard key: shard the collection (sh.shardCollection) before importing the file"}, nil
}

// Drop removes the collection's file and its indexes file; existed says
// whether there was a data file.
func (s *dirTarget) Drop(_ context.Context, collection string) (bool, error) {
	if df := s.files[collection]; df != nil {
		_ = df.f.Close()
		delete(s.files, collection)
	}
	data, err := s.path(collection)
	if err != nil {
		return false, err
	}
	existed := true
	if err := os.Remove(data); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return false, s.fileErr("remove", data, err)
		}
		existed = false
	}
	if err := os.Remove(s.indexesPath(collection)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return existed, s.fileErr("remove", s.indexesPath(collection), err)
	}
	return existed, nil
}
