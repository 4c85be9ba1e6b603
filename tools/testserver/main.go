// Command testserver is denorm's test and demo helper. It lives in its own Go
// module so that FerretDB's dependencies stay out of denorm's go.mod.
//
// Subcommands:
//
//	testserver serve --dir DIR [--addr 127.0.0.1:PORT]
//	    Runs an embedded FerretDB v1.24.0 (SQLite backend, databases stored in
//	    DIR), prints its MongoDB URI on stdout and runs until SIGTERM/SIGINT.
//	testserver dump --uri URI --db DB [--coll C]
//	    Prints the documents of one collection (or of every collection of DB,
//	    sorted by name, each preceded by "# <collection>"), sorted by _id, one
//	    relaxed Extended JSON document per line.
//	testserver ping --uri URI [--roundtrip] [--wait DURATION]
//	    Pings the server (retrying up to --wait); with --roundtrip also inserts
//	    a document into a scratch database, reads it back and drops it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  testserver serve --dir DIR [--addr 127.0.0.1:PORT] [--log-level LEVEL]
  testserver dump  --uri URI --db DB [--coll COLLECTION]
  testserver ping  --uri URI [--roundtrip] [--wait DURATION]
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stdout, stderr)
	case "dump":
		err = dump(args[1:], stdout, stderr)
	case "ping":
		err = ping(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "testserver: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue usageErr
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "testserver %s: %v\n", args[0], err)
			return 2
		}
		fmt.Fprintf(stderr, "testserver %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

type usageErr struct{ error }

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("testserver "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageErr{err}
	}
	if fs.NArg() > 0 {
		return usageErr{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	return nil
}

// serve runs an embedded FerretDB until SIGTERM or SIGINT.
func serve(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	dir := fs.String("dir", "", "directory holding the SQLite databases (created if missing)")
	addr := fs.String("addr", "127.0.0.1:0", "TCP address to listen on")
	level := fs.String("log-level", "error", "FerretDB log level: debug, info, warn or error")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return usageErr{errors.New("--dir is required")}
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return usageErr{fmt.Errorf("--log-level: %w", err)}
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *addr},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/",
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	// MongoDBURI blocks until the listener is up.
	uriCh := make(chan string, 1)
	go func() { uriCh <- f.MongoDBURI() }()
	select {
	case uri := <-uriCh:
		fmt.Fprintln(stdout, uri)
		if fl, ok := stdout.(*os.File); ok {
			_ = fl.Sync()
		}
	case err := <-done:
		if err == nil {
			err = errors.New("FerretDB stopped before listening")
		}
		return err
	}

	err = <-done
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "testserver serve: stopped")
		return nil
	}
	if err == nil {
		err = errors.New("FerretDB stopped unexpectedly")
	}
	return err
}

func connect(ctx context.Context, uri string) (*mongo.Client, error) {
	if uri == "" {
		return nil, usageErr{errors.New("--uri is required")}
	}
	opts := options.Client().ApplyURI(uri).
		SetServerSelectionTimeout(10 * time.Second).
		SetConnectTimeout(10 * time.Second)
	if err := opts.Validate(); err != nil {
		return nil, usageErr{err}
	}
	c, err := mongo.Connect(opts)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// dump prints documents sorted by _id as relaxed Extended JSON, one a line.
func dump(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dump", stderr)
	uri := fs.String("uri", "", "MongoDB URI")
	db := fs.String("db", "", "database name")
	coll := fs.String("coll", "", "collection (default: every collection of the database)")
	timeout := fs.Duration("timeout", 5*time.Minute, "overall time limit")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *db == "" {
		return usageErr{errors.New("--db is required")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c, err := connect(ctx, *uri)
	if err != nil {
		return err
	}
	defer c.Disconnect(context.Background())

	d := c.Database(*db)
	if *coll != "" {
		return dumpColl(ctx, d.Collection(*coll), stdout)
	}
	names, err := d.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("list collections of %s: %w", *db, err)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := fmt.Fprintf(stdout, "# %s\n", n); err != nil {
			return err
		}
		if err := dumpColl(ctx, d.Collection(n), stdout); err != nil {
			return err
		}
	}
	return nil
}

func dumpColl(ctx context.Context, coll *mongo.Collection, w io.Writer) error {
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return fmt.Errorf("find in %s: %w", coll.Name(), err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		b, err := bson.MarshalExtJSON(cur.Current, false, false)
		if err != nil {
			return fmt.Errorf("encode document of %s: %w", coll.Name(), err)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("read %s: %w", coll.Name(), err)
	}
	return nil
}

// ping checks that the server answers; --roundtrip also writes and reads a document.
func ping(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ping", stderr)
	uri := fs.String("uri", "", "MongoDB URI")
	roundtrip := fs.Bool("roundtrip", false, "insert a document, read it back and drop the scratch database")
	wait := fs.Duration("wait", 10*time.Second, "keep retrying the ping this long")
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait+30*time.Second)
	defer cancel()
	c, err := connect(ctx, *uri)
	if err != nil {
		return err
	}
	defer c.Disconnect(context.Background())

	deadline := time.Now().Add(*wait)
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		err = c.Ping(pctx, nil)
		pcancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ping: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	var info bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return fmt.Errorf("buildInfo: %w", err)
	}
	fmt.Fprintf(stdout, "ok: version %v", info["version"])
	if fi, ok := info["ferretdbVersion"]; ok {
		fmt.Fprintf(stdout, " (FerretDB %v)", fi)
	}
	fmt.Fprintln(stdout)

	if !*roundtrip {
		return nil
	}
	scratch := c.Database(fmt.Sprintf("testserver_ping_%d", time.Now().UnixNano()))
	defer scratch.Drop(context.Background())
	coll := scratch.Collection("ping")
	doc := bson.D{{Key: "_id", Value: int32(1)}, {Key: "name", Value: "ping"}, {Key: "tags", Value: bson.A{"a", "b"}}, {Key: "n", Value: 1.5}}
	if _, err := coll.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	raw, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: int32(1)}}).Raw()
	if err != nil {
		return fmt.Errorf("find: %w", err)
	}
	got, err := bson.MarshalExtJSON(raw, false, false)
	if err != nil {
		return err
	}
	want, _ := bson.MarshalExtJSON(doc, false, false)
	if string(got) != string(want) {
		return fmt.Errorf("roundtrip mismatch: wrote %s, read %s", want, got)
	}
	fmt.Fprintf(stdout, "roundtrip ok: %s\n", got)
	return nil
}
