package load

// What a server is, and what that changes. Servers speaking the MongoDB
// wire protocol differ in what they store, which indexes they have and
// where they stall; every such difference is a field of serverProfile,
// one value per known server, chosen once when the target connects
// (profileOf, from what buildInfo reports), and the rest of the package
// reads the profile instead of asking which server it talks to. Caps is
// derived from it. Adding a server means filling in one profile and
// putting it in profiles, before mongoDB (docs/migrate.md, "Targets").

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/denorm/denorm/transform"
)

// serverProfile is what one kind of server can and cannot do, where it
// differs from the others: the only place a server's kind is known.
type serverProfile struct {
	// name is the product, as told to users ("FerretDB").
	name string
	// is recognises the server from its buildInfo.
	is func(serverInfo) bool
	// version is the product's own version in buildInfo, "" if unknown.
	version func(serverInfo) string

	// What it cannot store: such documents are rejected before sending
	// (Caps.NoDecimal128, Caps.NoQuoteInNames, which validate --target and
	// migrate check up front).
	noDecimal128, noQuoteInNames bool
	// emptyFirst: a fresh run empties its collections first
	// (Caps.EmptyFirst), for a server that finds a document by _id by
	// scanning the collection.
	emptyFirst bool

	// rewrite writes again the documents of a batch whose _id exists
	// (Write): replace, or reinsert where a replace per document scans.
	rewrite func(s *serverTarget, ctx context.Context, coll *mongo.Collection, docs []transform.Document, raws []bson.Raw, reject func(transform.Document, error)) error
	// deleteInRuns: a delete its _ids do not bound reads the _ids it picks
	// and deletes them in runs of Options.DeleteChunk (deleteChunked), for
	// a server that fails a delete matching too many documents.
	deleteInRuns bool
	// emptyByDrop: emptying a whole collection drops it and makes its
	// indexes again (dropAndIndex), for a server where a delete scans.
	emptyByDrop bool

	// unsupportedIndex are the createIndexes error codes that mean the
	// server has no such kind of index (IndexError.Unsupported).
	unsupportedIndex []int32
	// noSharding is what Shard says when the server has neither
	// shardCollection nor Cosmos DB's CreateCollection.
	noSharding string
}

// The known servers. Azure Cosmos DB and Amazon DocumentDB report
// themselves as MongoDB; Shard finds Cosmos DB (RU) by its extension
// command.
var (
	// ferretDB is FerretDB 1.24 on SQLite: it reports itself in buildInfo
	// (ferretdbVersion). It closes the connection on a Decimal128, fails a
	// whole insert on a top-level field name holding a double quote
	// (InternalError "malformed JSON"), finds a document by an integer _id
	// (and by any filter but a string or ObjectId _id) by scanning the
	// collection, fails a delete matching more than 32,766 documents (too
	// many SQL variables, delete.go), has no partial or hashed index (a
	// hashed key answers IndexNotFound) and no sharding.
	ferretDB = serverProfile{
		name: "FerretDB",
		is:   func(i serverInfo) bool { return i.FerretDB != "" },
		version: func(i serverInfo) string {
			if i.FerretDB == "unknown" { // built without its version file
				return ""
			}
			return i.FerretDB
		},
		noDecimal128:     true,
		noQuoteInNames:   true,
		emptyFirst:       true,
		rewrite:          (*serverTarget).reinsert,
		deleteInRuns:     true,
		emptyByDrop:      true,
		unsupportedIndex: []int32{238, 115, 27}, // NotImplemented, CommandNotSupported, IndexNotFound
		noSharding:       "FerretDB has no sharding (shardCollection and Cosmos DB's CreateCollection: command not found)",
	}
	// mongoDB is MongoDB, and any server not recognised as another.
	mongoDB = serverProfile{
		name:             "MongoDB",
		is:               func(serverInfo) bool { return true },
		version:          func(i serverInfo) string { return i.Version },
		rewrite:          (*serverTarget).replace,
		unsupportedIndex: []int32{238, 115}, // NotImplemented, CommandNotSupported
		noSharding:       "the server is not a sharded cluster (neither shardCollection nor Cosmos DB's CreateCollection exists)",
	}
)

// profiles are the known servers in the order profileOf tries them; the
// last one takes any server.
var profiles = []*serverProfile{&ferretDB, &mongoDB}

// profileOf is the profile of the server info describes.
func profileOf(info serverInfo) *serverProfile {
	for _, p := range profiles {
		if p.is(info) {
			return p
		}
	}
	return &mongoDB
}

// caps are the capabilities of a server target of this profile; server
// names it with its version (Caps.Server).
func (p *serverProfile) caps(server string) Caps {
	return Caps{Parallel: true, Delete: true, NoDecimal128: p.noDecimal128, NoQuoteInNames: p.noQuoteInNames, EmptyFirst: p.emptyFirst, Server: server}
}

// describe names the server info describes with its version, as Caps.Server
// does ("FerretDB 1.24.0", "MongoDB 7.0.14").
func (p *serverProfile) describe(info serverInfo) string {
	if v := p.version(info); v != "" {
		return p.name + " " + v
	}
	return p.name
}

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

// noDecimal128 is why a document holding a Decimal128 is rejected before
// it is sent to a server that cannot store one (serverProfile.noDecimal128:
// FerretDB closes the connection on it, and a closed connection looks like
// an outage, retried for --retry-for).
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
