package load

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/transform"
)

// ServerSink writes to a MongoDB-wire server with unordered bulk
// ReplaceOne upserts keyed by _id, in batches capped by bytes.
type ServerSink struct {
	client *mongo.Client
	db     *mongo.Database
	opt    Options
}

// DatabaseFromURI returns the database named in a mongodb:// URI's path.
func DatabaseFromURI(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("target URI: %w", Redact(err, uri))
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		return "", fmt.Errorf("target URI %s names no database: add it to the path, e.g. mongodb://host:27017/mydb", RedactURI(uri))
	}
	return db, nil
}

// OpenServer connects to the server at uri; the database is the URI's path.
func OpenServer(ctx context.Context, uri string, opt Options) (*ServerSink, error) {
	dbName, err := DatabaseFromURI(uri)
	if err != nil {
		return nil, err
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", RedactURI(uri), Redact(err, uri))
	}
	if err := client.Ping(ctx, nil); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, fmt.Errorf("connect to %s: %w", RedactURI(uri), Redact(err, uri))
	}
	return &ServerSink{client: client, db: client.Database(dbName), opt: opt.withDefaults()}, nil
}

// Database is the target database handle (for tests and verification).
func (s *ServerSink) Database() *mongo.Database { return s.db }

// Prepare does nothing: collections are created by their first write.
func (s *ServerSink) Prepare(context.Context, []string) error { return nil }

// Write upserts docs by _id.
func (s *ServerSink) Write(ctx context.Context, collection string, docs []transform.Document) ([]Reject, error) {
	coll := s.db.Collection(collection)
	var (
		rejects []Reject
		models  []mongo.WriteModel
		batch   []transform.Document
		bytes   int
	)
	flush := func() error {
		if len(models) == 0 {
			return nil
		}
		_, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		var bwe mongo.BulkWriteException
		if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0 {
			for _, we := range bwe.WriteErrors {
				d := batch[we.Index]
				err := fmt.Errorf("target refused the document: %s (code %d)", we.Message, we.Code)
				if we.Code == 11000 && d.Discriminator != nil {
					err = fmt.Errorf("_id %v is already taken by another document type in %q (%s); make the ids distinct", d.ID, collection, we.Message)
				}
				rejects = append(rejects, Reject{Collection: collection, ID: d.ID, Source: d.Source, Err: err})
			}
			err = nil
		}
		if err != nil {
			return fmt.Errorf("write %d documents to %q: %w", len(models), collection, err)
		}
		models, batch, bytes = models[:0], batch[:0], 0
		return nil
	}
	for _, d := range docs {
		raw, err := encode(d, s.opt.MaxDocSize)
		if err != nil {
			rejects = append(rejects, Reject{Collection: collection, ID: d.ID, Source: d.Source, Err: err})
			continue
		}
		if bytes+len(raw) > s.opt.BatchBytes {
			if err := flush(); err != nil {
				return rejects, err
			}
		}
		doc := bson.Raw(raw)
		filter := bson.D{{Key: "_id", Value: doc.Lookup("_id")}}
		if d.Discriminator != nil {
			// Replace only a document of the same type: an _id taken by
			// another type fails as a duplicate key, never overwrites it.
			filter = append(filter, bson.E{Key: d.Discriminator.Key, Value: doc.Lookup(d.Discriminator.Key)})
		}
		models = append(models, mongo.NewReplaceOneModel().
			SetFilter(filter).
			SetReplacement(doc).
			SetUpsert(true))
		batch = append(batch, d)
		bytes += len(raw)
	}
	return rejects, flush()
}

// Close disconnects.
func (s *ServerSink) Close(ctx context.Context) error {
	return s.client.Disconnect(ctx)
}

// RedactURI hides the password of a URI for messages.
func RedactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Redact removes uri's password from an error's text.
func Redact(err error, uri string) error {
	if err == nil {
		return nil
	}
	u, perr := url.Parse(uri)
	if perr != nil || u.User == nil {
		return err
	}
	pw, has := u.User.Password()
	if !has || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return redacted{msg: strings.ReplaceAll(err.Error(), pw, "xxxxx"), err: err}
}

type redacted struct {
	msg string
	err error
}

func (r redacted) Error() string { return r.msg }
func (r redacted) Unwrap() error { return r.err }
