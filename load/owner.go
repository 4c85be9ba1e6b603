package load

// Owner records: which collections of a server target (or, in a shared
// collection, which document types) denorm wrote, and how many documents
// it left there. A fresh run on FerretDB, and --restart on any server,
// delete documents only where such a record proves them the job's
// (pipeline/own.go has the rule). They live in _denorm beside the
// checkpoints, one document each, keyed "owner/<collection>" or
// "owner/<collection>/<field>=<value as JSON>": a job name cannot hold a
// "/", so no checkpoint or lease has such a key.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/denorm/denorm/transform"
)

// ownerPrefix starts the keys of owner records in _denorm.
const ownerPrefix = "owner/"

// isOwnerDoc tells owner records from checkpoints in _denorm.
func isOwnerDoc(id string) bool { return strings.HasPrefix(id, ownerPrefix) }

// Owner is denorm's record of a collection (or a document type of a
// shared collection) it wrote.
type Owner struct {
	Collection string
	// Type is the document type in a shared collection (the
	// discriminator field and value); nil: the collection whole.
	Type *transform.Field
	// Docs is how many documents of Collection (of Type) denorm left
	// there when the last run that wrote them completed; -1 while a run
	// writes them (it started, and has not completed).
	Docs int64
	// Mapping is the mapping file whose runs wrote the documents (its
	// absolute path): only its runs take them for theirs. Job names the
	// run that wrote the record ("" without --job); Updated is when.
	Job, Mapping string
	Updated      time.Time
}

// What names the collection, and the type, for messages.
func (o *Owner) What() string {
	if o.Type == nil {
		return fmt.Sprintf("collection %s", o.Collection)
	}
	return fmt.Sprintf("documents of type %s=%v of collection %s", o.Type.Key, o.Type.Value, o.Collection)
}

// OwnerKey is the record key of a collection's documents of type typ
// (nil: the collection whole).
func OwnerKey(collection string, typ *transform.Field) string {
	if typ == nil {
		return ownerPrefix + collection
	}
	v, err := json.Marshal(typ.Value)
	if err != nil {
		v = []byte(fmt.Sprint(typ.Value))
	}
	return ownerPrefix + collection + "/" + typ.Key + "=" + string(v)
}

// Owners are a server target's owner records, and the counts they are
// compared with. A directory target has none (Target.Owners is nil): its
// files are denorm's output, rewritten by every run.
type Owners interface {
	// Count counts the documents of collection that sel picks (the zero
	// Selection, or Match).
	Count(ctx context.Context, collection string, sel Selection) (int64, error)
	// CountTypes counts, in one pass, the documents of collection of each
	// of types (all with one field, a shared collection's discriminator),
	// and the others: of another value, or without the field.
	CountTypes(ctx context.Context, collection string, types []transform.Field) (counts []int64, others int64, err error)
	// Load returns the record of collection's documents of type typ, nil
	// when there is none.
	Load(ctx context.Context, collection string, typ *transform.Field) (*Owner, error)
	// Save stores o, replacing its record.
	Save(ctx context.Context, o *Owner) error
	// Delete removes the record; a missing one is no error.
	Delete(ctx context.Context, collection string, typ *transform.Field) error
}

// ownerDoc is an owner record as stored: the Owner as JSON text, like a
// checkpoint.
type ownerDoc struct {
	ID      string    `bson:"_id"`
	Updated time.Time `bson:"updated"`
	Owner   string    `bson:"owner"`
}

type ownerJSON struct {
	Collection string `json:"collection"`
	TypeKey    string `json:"typeKey,omitempty"`
	TypeValue  any    `json:"typeValue,omitempty"`
	Docs       int64  `json:"docs"`
	Job        string `json:"job,omitempty"`
	Mapping    string `json:"mapping,omitempty"`
}

type serverOwners struct{ s *serverTarget }

// Owners is the server's owner records, in _denorm.
func (s *serverTarget) Owners() Owners { return serverOwners{s} }

func (o serverOwners) coll() *mongo.Collection { return o.s.db.Collection(RecordCollection) }

func (o serverOwners) Count(ctx context.Context, collection string, sel Selection) (int64, error) {
	filter, err := deleteFilter(sel, nil, nil)
	if err != nil {
		return 0, err
	}
	ctx, cancel := bound(ctx, o.s.op)
	defer cancel()
	n, err := o.s.db.Collection(collection).CountDocuments(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("count the documents of %q: %w", collection, err)
	}
	return n, nil
}

func (o serverOwners) CountTypes(ctx context.Context, collection string, types []transform.Field) ([]int64, int64, error) {
	counts := make([]int64, len(types))
	if len(types) == 0 {
		return counts, 0, nil
	}
	m, err := newTypeFilter(types)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := bound(ctx, o.s.op)
	defer cancel()
	group := bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$" + types[0].Key}, {Key: "n", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}}}
	cur, err := o.s.db.Collection(collection).Aggregate(ctx, bson.A{group})
	if err != nil {
		return nil, 0, fmt.Errorf("count the documents of %q by %s: %w", collection, types[0].Key, err)
	}
	defer cur.Close(ctx)
	var others int64
	for cur.Next(ctx) {
		v := cur.Current.Lookup("_id")
		n := cur.Current.Lookup("n").AsInt64()
		i := m.index(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
		if i < 0 {
			others += n
			continue
		}
		counts[i] += n
	}
	if err := cur.Err(); err != nil {
		return nil, 0, fmt.Errorf("count the documents of %q by %s: %w", collection, types[0].Key, err)
	}
	return counts, others, nil
}

func (o serverOwners) Load(ctx context.Context, collection string, typ *transform.Field) (*Owner, error) {
	id := OwnerKey(collection, typ)
	ctx, cancel := bound(ctx, o.s.op)
	defer cancel()
	var d ownerDoc
	err := o.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", id, RecordCollection, err)
	}
	var j ownerJSON
	if err := json.Unmarshal([]byte(d.Owner), &j); err != nil || j.Collection != collection {
		// Unreadable: as good as none (nothing is then taken for the
		// job's), and the next run writes it afresh.
		return nil, nil
	}
	return &Owner{Collection: collection, Type: typ, Docs: j.Docs, Job: j.Job, Mapping: j.Mapping, Updated: d.Updated}, nil
}

func (o serverOwners) Save(ctx context.Context, ow *Owner) error {
	j := ownerJSON{Collection: ow.Collection, Docs: ow.Docs, Job: ow.Job, Mapping: ow.Mapping}
	if ow.Type != nil {
		j.TypeKey, j.TypeValue = ow.Type.Key, ow.Type.Value
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	id := OwnerKey(ow.Collection, ow.Type)
	ctx, cancel := bound(ctx, o.s.op)
	defer cancel()
	d := ownerDoc{ID: id, Updated: ow.Updated, Owner: string(b)}
	if _, err := o.coll().ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, d, options.Replace().SetUpsert(true)); err != nil {
		return fmt.Errorf("save %s to %s: %w", id, RecordCollection, err)
	}
	return nil
}

func (o serverOwners) Delete(ctx context.Context, collection string, typ *transform.Field) error {
	id := OwnerKey(collection, typ)
	ctx, cancel := bound(ctx, o.s.op)
	defer cancel()
	if _, err := o.coll().DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		return fmt.Errorf("delete %s from %s: %w", id, RecordCollection, err)
	}
	return nil
}

// Owners is nil: a directory's files are denorm's output.
func (s *dirTarget) Owners() Owners { return nil }
