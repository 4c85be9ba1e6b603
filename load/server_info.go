package load

// What a server is. Servers speaking the MongoDB wire protocol differ in
// what they store and where they stall; FerretDB reports itself in
// buildInfo (ferretdbVersion), so its quirks are handled here, for it
// alone (see TESTING.md and Caps).

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// ferretMaxReplaces caps the replaces of one bulk write on FerretDB: 1.24
// stalls on 100 or more replace-upserts of existing documents.
const ferretMaxReplaces = 99

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
	case i.FerretDB != "":
		return "FerretDB " + i.FerretDB
	case i.Version != "":
		return "MongoDB " + i.Version
	}
	return "MongoDB"
}
