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
