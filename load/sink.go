// Package load writes documents to targets: a MongoDB-wire server
// (MongoDB, FerretDB, Cosmos DB, DocumentDB) or a directory of JSON Lines
// files that mongoimport reads. Every write is idempotent: documents are
// replaced by _id, so replaying a batch changes nothing.
package load

import (
	"context"
	"fmt"
	"strings"

	"github.com/denorm/denorm/transform"
)

// DefaultMaxDocSize is MongoDB's document size limit (16 MiB).
const DefaultMaxDocSize = 16 << 20

// Sink stores documents. One goroutine calls a Sink's methods at a time.
//
// Prepare is called once per run with every collection the run writes,
// before any Write. Write stores one batch of one collection, replacing
// documents with the same _id, and returns only after the target has
// acknowledged the batch; documents the target refused individually are
// returned as rejects (the rest of the batch is still written), while err
// reports a failure of the whole batch. Close flushes and releases the
// target; it is called once, also after errors.
type Sink interface {
	Prepare(ctx context.Context, collections []string) error
	Write(ctx context.Context, collection string, docs []transform.Document) (rejects []Reject, err error)
	Close(ctx context.Context) error
}

// Reject is one document the target did not take.
type Reject struct {
	Collection string
	ID         any
	Source     string
	Err        error
}

func (r Reject) Error() string {
	return fmt.Sprintf("%s: %s: %v", r.Collection, r.Source, r.Err)
}

// Options tune a sink.
type Options struct {
	// MaxDocSize rejects documents whose BSON encoding is larger (bytes).
	MaxDocSize int
	// BatchBytes caps the bytes of one bulk write.
	BatchBytes int
}

func (o Options) withDefaults() Options {
	if o.MaxDocSize <= 0 {
		o.MaxDocSize = DefaultMaxDocSize
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 8 << 20
	}
	return o
}

// IsServerURI reports whether target names a MongoDB-wire server rather
// than a directory.
func IsServerURI(target string) bool {
	return strings.HasPrefix(target, "mongodb://") || strings.HasPrefix(target, "mongodb+srv://")
}

// Open returns the sink for target: a server URI or a directory path.
func Open(ctx context.Context, target string, opt Options) (Sink, error) {
	if IsServerURI(target) {
		return OpenServer(ctx, target, opt)
	}
	return OpenDir(target, opt)
}

// sizeCheck encodes a document and rejects it when over the limit.
func encode(d transform.Document, maxSize int) ([]byte, error) {
	raw, err := AppendDocument(nil, d.Body)
	if err != nil {
		return nil, err
	}
	if len(raw) > maxSize {
		return nil, &TooLargeError{Size: len(raw), Limit: maxSize}
	}
	return raw, nil
}

// TooLargeError is a document over the target's size limit.
type TooLargeError struct {
	Size, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("document is %d bytes, over the target's limit of %d bytes; embed fewer rows (limit, buckets) or reference them", e.Size, e.Limit)
}
