// Package load is denorm's side of the document store: the targets, and
// everything that depends on which kind of store a target is. A target is
// a database of a MongoDB-wire server (MongoDB, FerretDB, Cosmos DB,
// DocumentDB), named by a mongodb:// URI, or a directory of JSON Lines
// files that mongoimport reads. Open, the one URI dispatch, returns either
// behind one contract, Target: writing batches (rejects, byte caps, the
// size limit), deleting, the checkpoint store, resume truncation, and
// reading back for verify. Only this package imports the MongoDB driver.
//
// Every write is idempotent: a server replaces documents by _id, a
// directory's files are rewritten by every run (or truncated back to the
// checkpoint being resumed), so replaying a batch changes nothing.
//
// Limits: a directory target has one writer (no --workers, --partition)
// and cannot delete chosen documents (no sync). Servers differ (FerretDB's
// quirks: docs/limitations.md): each known server's differences
// are one serverProfile (server_profile.go), chosen when the target
// connects, which the server target reads and Caps is derived from;
// nothing else here or above asks which server it talks to.
package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// DefaultMaxDocSize is MongoDB's document size limit (16 MiB).
const DefaultMaxDocSize = 16 << 20

// Target is one document store. Open returns it.
//
// Who calls what, and how often:
//   - migrate (and sync) call Prepare once per run with every collection
//     the run writes, then Write batches; before each checkpoint it saves,
//     the runner calls Sync. A restart Deletes before Prepare. Each extra
//     worker gets its own handle from Reopen (Caps.Parallel targets only).
//   - migrate calls Drop (--drop) and Shard before Prepare, and
//     CreateIndexes before its first Write or after its last one
//     (--indexes); verify calls Indexes.
//   - verify calls Scan once per collection, and Normalize on every
//     expected document.
//   - the job package (a job's record, lease and status) uses Records.
//   - Close is called once per handle, also after errors; a second call
//     (a deferred one) releases nothing and its error can be ignored.
//
// Goroutines: one goroutine at a time uses a handle. Handles from Reopen
// are independent and may be used at the same time as the others, each by
// its own goroutine. On a Parallel target, Sync and the store Records
// returns may also be called (by one goroutine at a time) while another
// goroutine writes through the handle: a server's Sync does nothing, and
// its store shares the driver's client, which is safe for concurrent use.
// On other targets they are called by the goroutine that writes.
//
// Ownership: Write does not keep docs; Scan's doc is only valid during fn;
// Normalize's result may share doc's memory; the maps Sync returns belong
// to the caller.
type Target interface {
	// Caps says what the target can do; the same for every handle.
	Caps() Caps

	// Prepare readies collections for Writes. acked is what Sync returned
	// at the checkpoint being resumed, nil for a fresh run: a directory
	// target truncates each collection's file to its acknowledged length
	// and fails, pointing to --restart, when a file is shorter than that;
	// a file it has no length for starts afresh: emptied, or for a
	// collection with Types, rid of the lines of those types only
	// (dir_shared.go). A server keeps what it holds.
	Prepare(ctx context.Context, collections []Collection, acked map[string]int64) error

	// Write stores one batch of one collection and returns only after the
	// target acknowledged it. A server replaces a stored document with the
	// same _id (for a document with a Discriminator, only one of the same
	// type: an _id taken by another type is rejected); a directory appends
	// to the collection's file, which Prepare started afresh. Documents
	// the target refuses individually — over Options.MaxDocSize (checked
	// before sending), refused by the server — are returned as rejects and
	// the rest of the batch is written; err is a failure of the whole
	// batch. Bulk writes are capped by Options.BatchBytes.
	Write(ctx context.Context, collection string, docs []transform.Document) (rejects []transform.Reject, err error)

	// Sync makes every write acknowledged so far durable and returns what
	// a checkpoint records for Prepare to resume from: a directory's file
	// lengths by file name; nil for a server, whose writes are durable
	// when acknowledged.
	Sync(ctx context.Context) (acked map[string]int64, err error)

	// Delete removes the documents of collection that sel picks and
	// returns how many it removed (-1: not counted, a directory emptying
	// a file). Every target takes the zero Selection (every document of
	// the collection) and a Selection of one Match field (the documents
	// of one type: --restart, --drop of a shared collection); other
	// selections need Caps.Delete, else an *UnsupportedError.
	Delete(ctx context.Context, collection string, sel Selection) (int64, error)

	// Tombstone sets field to at (a BSON date) on the documents of
	// collection that sel picks by IDs (and Match) and that do not hold
	// field yet, and returns how many it changed: sync, for a collection
	// whose onDelete keeps deleted roots' documents as tombstones
	// (tombstone.go). It needs Caps.Delete, else an *UnsupportedError.
	Tombstone(ctx context.Context, collection string, sel Selection, field string, at time.Time) (int64, error)

	// Records is the target's record store, where the job package keeps
	// each job's record (its checkpoint) and lease: the _denorm
	// collection of a server database, <dir>/_denorm/<id>.json of a
	// directory.
	Records() RecordStore

	// Owners is a server's records of the collections denorm wrote
	// (owner.go); nil for a directory.
	Owners() Owners

	// Scan calls fn with every document of collection (BSON), in the
	// target's own order (not _id order), one at a time. A collection that
	// does not exist is empty: exists is false. doc is valid until fn
	// returns: the targets reuse its memory for the next document (a
	// directory poisons it first under denorm_poison), so fn copies what
	// it keeps.
	Scan(ctx context.Context, collection string, fn func(doc []byte) error) (exists bool, err error)

	// Normalize returns a document (BSON) as the target would give it back
	// from Scan: a directory's relaxed Extended JSON turns an int64 that
	// fits an int32 into an int32 (as mongoimport also reads it); a server
	// keeps the document as it is.
	Normalize(doc []byte) ([]byte, error)

	// Drop removes a collection with its indexes (a directory: its file
	// and its indexes file) and says whether it existed: migrate --drop,
	// before Prepare.
	Drop(ctx context.Context, collection string) (existed bool, err error)

	// Shard sets a collection's shard key before its first write, where
	// the target has sharding; the outcome says what was done or why
	// nothing was (index.go).
	Shard(ctx context.Context, collection string, key []mappings.IndexKey) (ShardOutcome, error)

	// CreateIndexes creates a collection's indexes (a directory writes
	// the createIndexes command beside the collection's file), leaving
	// alone those that exist as declared; the indexes it could not create
	// are returned as *IndexError, joined. Indexes lists them back, the
	// _id index left out: exists is false when there is no collection.
	CreateIndexes(ctx context.Context, collection string, idx []mappings.Index) error
	Indexes(ctx context.Context, collection string) (idx []mappings.Index, exists bool, err error)

	// Reopen opens another handle on the same target with the same
	// options, for another writer (Caps.Parallel targets, else an
	// *UnsupportedError).
	Reopen(ctx context.Context) (Target, error)

	// Close flushes and releases the handle.
	Close(ctx context.Context) error
}

// Caps are what a target can do beyond what every target does. A server
// target's come from its serverProfile.
type Caps struct {
	// Parallel: several handles (Reopen, other processes) may write the
	// same collections at once, in any order: --workers and --partition.
	// A directory's files are written in order by one writer.
	Parallel bool
	// Delete: Delete takes any Selection (sync). Without it, only the
	// zero Selection (a whole collection) and one Match field (a
	// document type).
	Delete bool
	// NoDecimal128: the server cannot store BSON Decimal128 values
	// (NUMERIC in the default numeric mode): FerretDB 1.24 closes the
	// connection on one. Such documents are rejected before sending.
	NoDecimal128 bool
	// NoQuoteInNames: the server cannot store a top-level field name
	// holding a double quote: FerretDB 1.24 (SQLite) fails the whole
	// insert with InternalError "malformed JSON" (embedded documents'
	// names are fine).
	NoQuoteInNames bool
	// EmptyFirst: a fresh run empties its collections (its document
	// types, in a shared collection) before writing, as --restart does.
	// Set for FerretDB 1.24, which finds a document by an integer _id by
	// scanning the whole collection: a rerun replacing every document
	// would be quadratic, inserting into an emptied collection is not.
	EmptyFirst bool
	// Server names the server's product and version as it reports them
	// ("FerretDB 1.24.0", "MongoDB 7.0.14"); "" for a directory.
	Server string
}

// Selection picks documents of one collection for Delete. Its parts all
// hold for a picked document; the zero Selection picks every document.
type Selection struct {
	// IDs, when not nil, picks the documents whose _id is one of these
	// values (as transform builds them: int32, int64, string,
	// transform.Doc..., or a Value read back from the target). An empty,
	// non-nil IDs picks nothing.
	IDs []any
	// Match picks the documents whose top-level fields equal these values:
	// a document type of a shared collection ({type: "book"}), the parent
	// fields of a bucket collection's pages.
	Match []transform.Field
	// Min, when set, picks the documents whose Min.Key field is at least
	// Min.Value (numbers compare by value): a bucket parent's pages from
	// page n on. Min.Key must not also be in Match.
	Min *transform.Field
	// Any, when not empty, picks the documents that at least one of these
	// selections picks (each with Match and Min only): the surplus pages
	// of many bucket parents in one command.
	Any []Selection
}

func (s Selection) all() bool {
	return s.IDs == nil && len(s.Match) == 0 && s.Min == nil && len(s.Any) == 0
}

// UnsupportedError is an operation a kind of target cannot do. It matches
// errors.ErrUnsupported.
type UnsupportedError struct {
	// Target is the kind of target ("directory"), Op the operation.
	Target, Op string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("a %s target cannot %s; use a server target (mongodb://...)", e.Target, e.Op)
}

func (e *UnsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

// Options tune a target.
type Options struct {
	// MaxDocSize rejects documents whose BSON encoding is larger (bytes).
	MaxDocSize int
	// BatchBytes caps the bytes of one bulk write.
	BatchBytes int
	// Connect, when its For is set, makes each attempt to reach a server
	// target short, and retries reconnecting (Reopen, once the server has
	// answered) for that long, telling Connect.Log of each failure. The
	// first contact (Open) is one attempt, never retried: a server that
	// never answered fails at once (*ConnectError, FirstContact).
	Connect RetryPolicy
	// MustExist makes Open fail when a directory target does not exist
	// (verify: a directory that is not there is a mistake, not an empty
	// target). Otherwise the directory is created by the first write or
	// checkpoint.
	MustExist bool
	// Notice, when set, is told of what a write recovered from without
	// failing: a batch written again in halves after the server closed
	// its connection (isolate.go).
	Notice func(msg string)
	// DeleteChunk is the most documents one delete command removes on
	// servers that fail bigger ones (FerretDB; delete.go). Default and
	// most: DefaultDeleteChunk.
	DeleteChunk int
	// Written, when set, counts the bytes of the documents written and
	// acknowledged: their BSON for a server (documents the server then
	// refused one by one included), their JSON lines for a directory.
	Written *atomic.Int64
}

// wrote adds n bytes written to o.Written, when set.
func (o Options) wrote(n int) {
	if o.Written != nil && n > 0 {
		o.Written.Add(int64(n))
	}
}

func (o Options) withDefaults() Options {
	if o.MaxDocSize <= 0 {
		o.MaxDocSize = DefaultMaxDocSize
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 8 << 20
	}
	switch {
	case o.DeleteChunk <= 0:
		o.DeleteChunk = DefaultDeleteChunk
	case o.DeleteChunk > DefaultDeleteChunk:
		o.DeleteChunk = DefaultDeleteChunk
	}
	return o
}

// Open returns the target named by uri (see ParseTarget): a mongodb:// (or
// mongodb+srv://) URI naming the database in its path, connected and
// pinged; any other path is a directory.
func Open(ctx context.Context, uri string, opt Options) (Target, error) {
	cs, server, err := ParseTarget(uri)
	if err != nil {
		return nil, err
	}
	if server {
		return openServer(ctx, cs, opt, false)
	}
	st, err := os.Stat(uri)
	switch {
	case err == nil && !st.IsDir():
		return nil, fmt.Errorf("target %s is not a directory nor a mongodb:// URI", uri)
	case err != nil && (opt.MustExist || !errors.Is(err, os.ErrNotExist)):
		return nil, fmt.Errorf("target directory: %w", err)
	}
	return openDir(uri, opt), nil
}

// encode encodes a document (or takes its Raw bytes) and rejects it when
// over the limit.
func encode(d transform.Document, maxSize int) ([]byte, error) {
	if d.Raw != nil {
		if len(d.Raw) > maxSize {
			return nil, &TooLargeError{Size: len(d.Raw), Limit: maxSize}
		}
		return d.Raw, nil
	}
	if err := transform.CheckKeys(d.Body); err != nil {
		return nil, err
	}
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
