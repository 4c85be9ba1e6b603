package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// startFerret runs an embedded FerretDB on a random port for the test's lifetime.
func startFerret(t *testing.T) string {
	t.Helper()
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Handler:   "sqlite",
		SQLiteURL: "file:" + t.TempDir() + "/",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = f.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f.MongoDBURI()
}

func TestPingAndDump(t *testing.T) {
	if testing.Short() {
		t.Skip("starts FerretDB")
	}
	uri := startFerret(t)

	var out, errb bytes.Buffer
	if code := run([]string{"ping", "--uri", uri, "--roundtrip"}, &out, &errb); code != 0 {
		t.Fatalf("ping: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "roundtrip ok") {
		t.Fatalf("ping output: %q", out.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := connect(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctx)
	db := c.Database("d")
	if _, err := db.Collection("zeta").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: int32(3)}, {Key: "b", Value: "x"}, {Key: "a", Value: 1.5}},
		bson.D{{Key: "_id", Value: int32(1)}, {Key: "when", Value: bson.DateTime(0)}},
		bson.D{{Key: "_id", Value: int32(2)}, {Key: "n", Value: int64(1) << 40}, {Key: "arr", Value: bson.A{}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("alpha").InsertOne(ctx, bson.D{{Key: "_id", Value: "k"}, {Key: "sub", Value: bson.D{{Key: "y", Value: true}}}}); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	errb.Reset()
	if code := run([]string{"dump", "--uri", uri, "--db", "d"}, &out, &errb); code != 0 {
		t.Fatalf("dump: exit %d: %s", code, errb.String())
	}
	want := `# alpha
{"_id":"k","sub":{"y":true}}
# zeta
{"_id":1,"when":{"$date":"1970-01-01T00:00:00Z"}}
{"_id":2,"n":1099511627776,"arr":[]}
{"_id":3,"b":"x","a":1.5}
`
	if out.String() != want {
		t.Fatalf("dump:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if code := run([]string{"dump", "--uri", uri, "--db", "d", "--coll", "alpha"}, &out, &errb); code != 0 {
		t.Fatalf("dump --coll: exit %d: %s", code, errb.String())
	}
	if got := out.String(); got != "{\"_id\":\"k\",\"sub\":{\"y\":true}}\n" {
		t.Fatalf("dump --coll: %q", got)
	}

	if code := run([]string{"dump", "--uri", uri}, &out, &errb); code != 2 {
		t.Fatalf("dump without --db: exit %d, want 2", code)
	}
}
