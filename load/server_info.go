package load

// What a server is. Servers speaking the MongoDB wire protocol differ in
// what they store and where they stall; FerretDB reports itself in
// buildInfo (ferretdbVersion), so its quirks are handled here, for it
// alone (see TESTING.md and Caps).

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// serverInfo is what buildInfo reports; zero when the server refused it.
type serverInfo struct {
	Version string `bson:"version"`
	// FerretDB is FerretDB's own version, empty for other servers.
	FerretDB string `bson:"ferretdbVersion"`
}

// readServerInfo asks the server's buildInfo; a server that refuses it
// (none known) is taken for MongoDB.
func readServerInfo(ctx context.Context, db *mongo.Database) serverInfo {
	var info serverInfo
	_ = db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info)
	return info
}

func (i serverInfo) ferretDB() bool { return i.FerretDB != "" }

func (i serverInfo) String() string {
	switch {
	case i.FerretDB == "unknown": // built without its version file
		return "FerretDB"
	case i.FerretDB != "":
		return "FerretDB " + i.FerretDB
	case i.Version != "":
		return "MongoDB " + i.Version
	}
	return "MongoDB"
}

// dropPlain empties coll on FerretDB by dropping it when dropping loses
// nothing: no index but _id's, no options (capped, validator). FerretDB
// 1.24 deletes with a filter, the empty one included, by reading and
// decoding every document of the collection (about 1,000-5,000 a second
// here); a drop costs nothing. It returns -1 (not counted: counting scans
// too) when it dropped the collection, 0 when there was none, and false
// when the collection has more to it (then the caller deletes its
// documents).
func (s *serverTarget) dropPlain(ctx context.Context, coll *mongo.Collection) (int64, bool, error) {
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
	indexes, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, ix := range indexes {
		if ix.Name != "_id_" {
			return 0, false, nil
		}
	}
	if err := coll.Drop(ctx); err != nil {
		return 0, false, err
	}
	return -1, true, nil
}

// noDecimal128 is why a document holding a Decimal128 is rejected before
// it is sent to FerretDB, which would close the connection on it (and a
// closed connection looks like an outage, retried for --retry-for).
// validate --target and migrate refuse NUMERIC columns in numeric mode
// decimal up front; this catches the rest (a jsonb number beyond a
// double's precision, an sql: field of type NUMERIC).
func (s *serverTarget) noDecimal128() error {
	return fmt.Errorf("the document holds a BSON Decimal128, which %s cannot store (it closes the connection on one): set `numeric: double` or `numeric: string` in the mapping", s.server)
}

// hasDecimal128 reports whether the BSON document doc holds a Decimal128
// at any depth.
func hasDecimal128(doc []byte) bool {
	elems, err := bsoncore.Document(doc).Elements()
	if err != nil {
		return false
	}
	for _, e := range elems {
		v := e.Value()
		switch v.Type {
		case bsoncore.TypeDecimal128:
			return true
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if hasDecimal128(v.Data) {
				return true
			}
		}
	}
	return false
}
