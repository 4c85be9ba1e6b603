package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
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
	op     time.Duration // bound of one operation (opTimeout); 0: none
	// profile is what the server can and cannot do (server_profile.go),
	// chosen from what its buildInfo says; server names it with its
	// version (Caps.Server).
	profile *serverProfile
	server  string

	mu     sync.Mutex
	closed map[string]bool // batches a connection closed on once (isolate.go)
}

// openServer connects to the server at uri (checked by ParseTarget); the
// database is the URI's path. Errors name the URI without its password.
//
// answered says whether the server has answered this run before (Reopen):
// only then are failed attempts retried for Options.Connect.For. A server
// that never answered gets one attempt (first contact), bounded by the
// server selection timeout, and its failure is a *ConnectError at once: an
// address that is wrong or down is told within seconds, not after the
// whole retry budget, which is for faults once work began.
func openServer(ctx context.Context, uri connstr.String, opt Options, answered bool) (*serverTarget, error) {
	dbName := uri.Path()
	if dbName == "" {
		return nil, fmt.Errorf("target URI %s names no database: add it to the path, e.g. mongodb://host:27017/mydb", uri)
	}
	copts := clientOptions(uri)
	if _, set := uri.Param("serverSelectionTimeoutMS"); opt.Connect.For > 0 && !set {
		// Short attempts, retried for Connect.For, each failure told:
		// an unreachable server is reported within seconds.
		copts.SetServerSelectionTimeout(connectAttempt)
	}
	client, err := mongo.Connect(copts)
	if err != nil {
		return nil, fmt.Errorf("target URI %s: %w", uri, uri.ParseError(err))
	}
	ping := func() error { return client.Ping(ctx, nil) }
	if opt.Connect.For > 0 && answered {
		err = Retry(ctx, opt.Connect, ping)
	} else {
		err = ping()
	}
	if err != nil {
		// Disconnect waits for a monitor's connection attempt in progress
		// (up to connectTimeoutMS, whatever its context): the failure is
		// told without waiting for it.
		go func() { _ = client.Disconnect(context.Background()) }()
		ce := &ConnectError{Target: uri.Redacted(), Err: uri.RedactError(err), FirstContact: !answered}
		var sse topology.ServerSelectionError
		if errors.As(err, &sse) {
			ce.Within = fmt.Sprintf("no server answered within %s (serverSelectionTimeoutMS; each connection attempt %s, connectTimeoutMS)",
				*copts.ServerSelectionTimeout, *copts.ConnectTimeout)
		}
		if _, silent := connectCause(ce.Err); silent && uri.Scheme() == "mongodb" && ctx.Err() == nil {
			// The driver's attempts told nothing (none had finished when
			// server selection gave up, on a busy machine): a dial of our
			// own tells an address that refuses from a server that
			// accepts and never replies (not once the run is
			// cancelled: the dial would fail for that).
			if derr := dialAny(ctx, copts.Hosts, min(*copts.ConnectTimeout, probeTimeout)); derr != nil {
				ce.Probe = uri.RedactError(derr).Error()
			}
		}
		return nil, ce
	}
	db := client.Database(dbName)
	info := readServerInfo(ctx, db)
	p := profileOf(info)
	return &serverTarget{client: client, db: db, uri: uri, opt: opt.withDefaults(), op: opTimeout(uri), profile: p, server: p.describe(info)}, nil
}

// connectAttempt is how long one attempt to reach a server lasts when
// Options.Connect retries them.
const connectAttempt = 5 * time.Second

// ConnectError is a server target that could not be reached.
type ConnectError struct {
	Target string // redacted
	Within string // which timeout ended each attempt, when one did
	Err    error  // redacted
	// FirstContact: the server never answered this run, and the one
	// attempt made was not retried (see openServer).
	FirstContact bool
	// Probe is why a dial of denorm's own to the target's hosts failed,
	// where the driver's attempts gave no cause (redacted).
	Probe string
}

// probeTimeout bounds openServer's own dial of a silent target's hosts.
const probeTimeout = 2 * time.Second

// dialAny dials hosts (host:port, a host alone at MongoDB's port, or a
// Unix socket's path) until one connects: nil when one did, else the first
// host's error.
func dialAny(ctx context.Context, hosts []string, timeout time.Duration) error {
	var first error
	d := net.Dialer{Timeout: timeout}
	for _, h := range hosts {
		network := "tcp"
		switch _, _, err := net.SplitHostPort(h); {
		case strings.HasSuffix(h, ".sock"):
			network = "unix"
		case err != nil: // no port: the driver's default
			h = net.JoinHostPort(strings.Trim(h, "[]"), "27017")
		}
		c, err := d.DialContext(ctx, network, h)
		if err == nil {
			c.Close()
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// Error gives the timeout that ended the attempts and the cause the
// driver found (the last error of its server description: "connection
// refused", a TLS or authentication failure), not its topology dump.
func (e *ConnectError) Error() string {
	cause := ConnectCause(e.Err)
	if e.Probe != "" {
		cause = e.Probe
	}
	msg := fmt.Sprintf("cannot reach the target %s: %s", e.Target, cause)
	if e.Within != "" {
		msg = fmt.Sprintf("cannot reach the target %s: %s: %s", e.Target, e.Within, cause)
	}
	if e.FirstContact {
		msg += "; it never answered, so it is not tried again (--retry-for retries faults once a target has answered): check its address and that it is up"
	}
	return msg
}

func (e *ConnectError) Unwrap() error { return e.Err }

var lastErrorRe = regexp.MustCompile(`Last error: (.*?)(?: }|$)`)

// ConnectCause is the reason in a driver's server selection error.
func ConnectCause(err error) string {
	cause, _ := connectCause(err)
	return cause
}

// connectCause is ConnectCause's, and silent when no attempt of the
// driver's had an error to tell.
func connectCause(err error) (cause string, silent bool) {
	msg := err.Error()
	if m := lastErrorRe.FindStringSubmatch(msg); m != nil {
		cause := m[1]
		if strings.Contains(msg, "gave up after") {
			if i := strings.Index(msg, ": server selection"); i > 0 {
				cause += " (" + msg[:i] + ")"
			}
		}
		return cause, false
	}
	if i := strings.Index(msg, ", current topology:"); i > 0 {
		// No error from any attempt: a server that accepted connections
		// and never replied (or none finished within the timeout).
		msg = msg[:i]
		if strings.HasSuffix(msg, "context deadline exceeded") {
			return "nothing replied to the MongoDB handshake (is it a MongoDB-wire server, up and at this address?)", true
		}
	}
	return msg, false
}

// Caps are the server profile's.
func (s *serverTarget) Caps() Caps { return s.profile.caps(s.server) }

// Prepare does nothing: collections are created by their first write, and
// documents written after a checkpoint are replaced when written again.
func (s *serverTarget) Prepare(context.Context, []Collection, map[string]int64) error { return nil }

// Sync has nothing to do: a write is durable when acknowledged.
func (s *serverTarget) Sync(context.Context) (map[string]int64, error) { return nil, nil }

// Reopen connects again: a client of its own for another writer.
func (s *serverTarget) Reopen(ctx context.Context) (Target, error) {
	return openServer(ctx, s.uri, s.opt, true)
}

// Write stores docs by _id: a document whose _id is new is inserted, one
// whose _id exists is replaced. Each byte-capped batch is first sent as one
// unordered insertMany - the target's fastest write, and the only cheap
// one on servers where a lookup by _id scans the collection (FerretDB on
// SQLite: upserting every document made loading quadratic) - and only the
// documents refused as duplicate keys (a rerun, or the batch replayed when
// resuming) are then written again as the server's profile says: replaced
// with upserts (replace), or on FerretDB deleted and inserted again
// (reinsert). Either way a rerun gives the same result.
func (s *serverTarget) Write(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error) {
	return s.write(ctx, collection, docs, false)
}

// Rewrite stores docs by _id as Write does, for documents most of which
// exist already (sync's rebuilt documents): each batch goes straight to
// the profile's rewrite (replace-upserts, or on FerretDB a delete and an
// insert), without the insertMany whose duplicate-key errors would only
// say so. A batch whose rewrite fails is written again as Write writes
// it, which isolates a document the server closes the connection on.
func (s *serverTarget) Rewrite(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error) {
	return s.write(ctx, collection, docs, true)
}

func (s *serverTarget) write(ctx context.Context, collection string, docs []transform.Document, existing bool) ([]transform.Reject, error) {
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
		if existing {
			araws := make([]bson.Raw, len(raws))
			for i, r := range raws {
				araws[i] = r.(bson.Raw)
			}
			var rj []transform.Reject
			err := s.profile.rewrite(s, ctx, coll, batch, araws, func(d transform.Document, err error) {
				rj = append(rj, transform.Reject{Collection: collection, ID: d.ID, Source: d.Source, Err: err})
			})
			if err == nil {
				rejects = append(rejects, rj...)
				s.opt.wrote(bytes)
				raws, batch, bytes = raws[:0], batch[:0], 0
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("write again %d documents to %q: %w", len(raws), collection, err)
			}
			// Written again below, as Write writes.
		}
		_, err := coll.InsertMany(ctx, raws, options.InsertMany().SetOrdered(false))
		if s.refusedBatch(ctx, err) {
			if !s.closedAgain(collection, batch) {
				// Perhaps the network: the caller retries (isolate.go).
				return fmt.Errorf("write %d documents to %q: %w", len(raws), collection, err)
			}
			// A document the server closes the connection on (isolate.go).
			rj, err := s.isolate(ctx, collection, batch)
			rejects = append(rejects, rj...)
			raws, batch, bytes = raws[:0], batch[:0], 0
			return err
		}
		var (
			bwe   mongo.BulkWriteException
			again []transform.Document
			araws []bson.Raw
		)
		if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0 {
			for _, we := range bwe.WriteErrors {
				d, raw := batch[we.Index], raws[we.Index].(bson.Raw)
				if we.Code != 11000 {
					reject(d, fmt.Errorf("target refused the document: %s (code %d)", we.Message, we.Code))
					continue
				}
				again, araws = append(again, d), append(araws, raw)
			}
			err = nil
		}
		if err != nil {
			return fmt.Errorf("write %d documents to %q: %w", len(raws), collection, err)
		}
		if err := s.profile.rewrite(s, ctx, coll, again, araws, reject); err != nil {
			return err
		}
		s.opt.wrote(bytes)
		raws, batch, bytes = raws[:0], batch[:0], 0
		return nil
	}
	for _, d := range docs {
		raw, err := encode(d, s.opt.MaxDocSize)
		if err == nil && s.profile.noDecimal128 && hasDecimal128(raw) {
			err = s.noDecimal128()
		}
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

// replace writes again the documents of a batch whose _id exists, as one
// unordered bulk write of replace-upserts.
func (s *serverTarget) replace(ctx context.Context, coll *mongo.Collection, docs []transform.Document, raws []bson.Raw, reject func(transform.Document, error)) error {
	if len(docs) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		models[i] = replaceModel(d, raws[i])
	}
	_, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0 {
		// Some servers number the failed operations of a bulk update
		// wrongly. Replaces are idempotent, so the batch's replaces are
		// made again one at a time: the errors then belong to known
		// documents.
		for i, m := range models {
			r := m.(*mongo.ReplaceOneModel)
			_, err := coll.ReplaceOne(ctx, r.Filter, r.Replacement, options.Replace().SetUpsert(true))
			var we mongo.WriteException
			switch {
			case err == nil:
			case errors.As(err, &we) && we.WriteConcernError == nil && len(we.WriteErrors) > 0:
				reject(docs[i], replaceError(docs[i], coll.Name(), we.WriteErrors[0]))
			default:
				return fmt.Errorf("replace a document in %q: %w", coll.Name(), err)
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("replace %d documents in %q: %w", len(models), coll.Name(), err)
	}
	return nil
}

// reinsert writes again, on FerretDB, the documents of a batch whose _id
// exists: it deletes them with one deleteMany per document type and
// inserts them again. FerretDB 1.24 finds a document by an integer _id
// (and by any filter but a string or ObjectId _id) by scanning the whole
// collection, once per command: a replace per document made a rerun
// quadratic (about 4 s per replace in a collection of 20,000), and a bulk
// write of 100 or more replaces stalls the server. A delete and an insert
// cost one scan per batch. Between the two the documents are absent: an
// interrupted write leaves them absent until the batch is written again
// (resume, or the retry). The delete is filtered on the document type, as
// a replace is: an _id another type holds then fails the insert as a
// duplicate key and the document is rejected, never overwriting it.
func (s *serverTarget) reinsert(ctx context.Context, coll *mongo.Collection, docs []transform.Document, raws []bson.Raw, reject func(transform.Document, error)) error {
	if len(docs) == 0 {
		return nil
	}
	byType := map[string][]any{}
	var types []string
	match := map[string]transform.Field{}
	for _, d := range docs {
		key := ""
		if d.Discriminator != nil {
			key = fmt.Sprintf("%s=%v", d.Discriminator.Key, d.Discriminator.Value)
			match[key] = *d.Discriminator
		}
		if _, ok := byType[key]; !ok {
			types = append(types, key)
		}
		byType[key] = append(byType[key], d.ID)
	}
	for _, key := range types {
		sortIDs(byType[key])
		sel := Selection{IDs: byType[key]}
		if f, ok := match[key]; ok {
			sel.Match = []transform.Field{f}
		}
		// In runs: a batch of small documents can hold more than FerretDB
		// deletes in one command, and each command scans the collection
		// (delete.go).
		for _, ids := range rewriteRuns(sel.IDs) {
			filter, err := deleteFilter(sel, ids, nil)
			if err != nil {
				return fmt.Errorf("write again %d documents to %q: %w", len(docs), coll.Name(), err)
			}
			if _, err := coll.DeleteMany(ctx, filter); err != nil {
				return fmt.Errorf("write again %d documents to %q: delete: %w", len(docs), coll.Name(), err)
			}
		}
	}
	ins := make([]any, len(raws))
	for i, r := range raws {
		ins[i] = r
	}
	_, err := coll.InsertMany(ctx, ins, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0 {
		for _, we := range bwe.WriteErrors {
			reject(docs[we.Index], replaceError(docs[we.Index], coll.Name(), we.WriteError))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("write again %d documents to %q: insert: %w", len(docs), coll.Name(), err)
	}
	return nil
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
