package load

// The record store: one small JSON record per job, keyed by the job's id,
// in the target itself (the _denorm collection of a server, the _denorm
// directory of a directory target), beside the leases that keep one writer
// per job (lease.go). What a record says is the job package's business:
// the store keeps bytes, replaces them atomically and hands them back.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// RecordCollection is the collection (server targets) and the directory
// (directory targets) that hold the records.
const RecordCollection = "_denorm"

// Record is one job's record: its id, the job's name and the time of the
// last save (for listing and for people reading the collection), and the
// body, a JSON object.
type Record struct {
	ID, Job string
	Updated time.Time
	Body    []byte
}

// UnreadableRecordError is a record the store holds but cannot read.
type UnreadableRecordError struct {
	ID, Where string
	Reason    error
}

func (e *UnreadableRecordError) Error() string {
	return fmt.Sprintf("record %q in %s cannot be read: %v", e.ID, e.Where, e.Reason)
}

func (e *UnreadableRecordError) Unwrap() error { return e.Reason }

// RecordStore stores a target's records (Target.Records) and the leases
// that keep one writer per job (lease.go). One goroutine at a time uses
// it.
type RecordStore interface {
	// Load returns the record with that id, nil when there is none, or an
	// *UnreadableRecordError.
	Load(ctx context.Context, id string) (*Record, error)
	// Save stores r under r.ID, replacing the record atomically.
	Save(ctx context.Context, r *Record) error
	// Delete removes a record; a missing one is no error.
	Delete(ctx context.Context, id string) error
	// List returns every record of the target, by id; unreadable ones as
	// errors beside them.
	List(ctx context.Context) ([]*Record, []error, error)
	// Where names the store for messages.
	Where() string

	// AcquireLease takes the lease of job id (a record id) for holder,
	// who must hold it before loading, saving or deleting the job's
	// record and before writing the job's documents. A lease another
	// process holds is a *LeaseHeldError. ttl is how long a server lease
	// lasts without Renew (<= 0: DefaultLeaseTTL); a directory lock lasts
	// as long as the process.
	AcquireLease(ctx context.Context, id string, holder LeaseHolder, ttl time.Duration) (Lease, error)
	// Leases returns every lease the store knows of, by id, live or not.
	Leases(ctx context.Context) ([]LeaseState, error)
}

// --- server targets: one document per record in _denorm ---

type serverRecords struct {
	coll *mongo.Collection
	db   string
	op   time.Duration // bound of each call (opTimeout)
}

// Records is the server's record store (the _denorm collection).
func (s *serverTarget) Records() RecordStore {
	return &serverRecords{coll: s.db.Collection(RecordCollection), db: s.db.Name(), op: s.op}
}

func (s *serverRecords) Where() string {
	return fmt.Sprintf("collection %s of database %s", RecordCollection, s.db)
}

// The document is {_id, job, updated, checkpoint: <JSON text>}: the body
// stays text, the same for both kinds of target, and survives servers
// that reject some BSON.
type recordDoc struct {
	ID      string    `bson:"_id"`
	Job     string    `bson:"job"`
	Updated time.Time `bson:"updated"`
	Body    string    `bson:"checkpoint"`
}

func (s *serverRecords) Load(ctx context.Context, id string) (*Record, error) {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	var raw bson.Raw
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&raw)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read record %q from %s: %w", id, s.Where(), err)
	}
	return s.decode(id, raw)
}

func (s *serverRecords) decode(id string, raw bson.Raw) (*Record, error) {
	var d recordDoc
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, &UnreadableRecordError{ID: id, Where: s.Where(), Reason: err}
	}
	return &Record{ID: d.ID, Job: d.Job, Updated: d.Updated, Body: []byte(d.Body)}, nil
}

func (s *serverRecords) Save(ctx context.Context, r *Record) error {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	d := recordDoc{ID: r.ID, Job: r.Job, Updated: r.Updated, Body: string(r.Body)}
	_, err := s.coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: r.ID}}, d, options.Replace().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("save record %q to %s: %w", r.ID, s.Where(), err)
	}
	return nil
}

func (s *serverRecords) Delete(ctx context.Context, id string) error {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	if _, err := s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		return fmt.Errorf("delete record %q from %s: %w", id, s.Where(), err)
	}
	return nil
}

func (s *serverRecords) List(ctx context.Context) ([]*Record, []error, error) {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	cur, err := s.coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, nil, fmt.Errorf("list records in %s: %w", s.Where(), err)
	}
	defer cur.Close(ctx)
	var out []*Record
	var bad []error
	for cur.Next(ctx) {
		id, _ := cur.Current.Lookup("_id").StringValueOK()
		if isLeaseDoc(id) || isOwnerDoc(id) {
			continue
		}
		r, err := s.decode(id, cur.Current)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, r)
	}
	if err := cur.Err(); err != nil {
		return nil, nil, fmt.Errorf("list records in %s: %w", s.Where(), err)
	}
	return out, bad, nil
}

// --- directory targets: <dir>/_denorm/<id>.json, replaced atomically ---

type dirRecords struct{ dir string }

// Records is the directory's record store (<dir>/_denorm/).
func (s *dirTarget) Records() RecordStore { return &dirRecords{dir: s.dir} }

func (s *dirRecords) Where() string { return filepath.Join(s.dir, RecordCollection) }

func (s *dirRecords) path(id string) string {
	return filepath.Join(s.dir, RecordCollection, id+".json")
}

func (s *dirRecords) Load(_ context.Context, id string) (*Record, error) {
	p := s.path(id)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read record: %w", err)
	}
	r := &Record{ID: id, Body: b}
	if fi, err := os.Stat(p); err == nil {
		r.Updated = fi.ModTime().UTC()
	}
	return r, nil
}

func (s *dirRecords) Save(_ context.Context, r *Record) error {
	if err := os.MkdirAll(filepath.Dir(s.path(r.ID)), 0o755); err != nil {
		return fmt.Errorf("save record %q: %w", r.ID, newFileError(s.dir, "create", filepath.Dir(s.path(r.ID)), err))
	}
	body := r.Body
	if len(body) == 0 || body[len(body)-1] != '\n' {
		body = append(body[:len(body):len(body)], '\n')
	}
	if err := writeFileAtomic(s.dir, s.path(r.ID), body); err != nil {
		return fmt.Errorf("save record %q: %w", r.ID, err)
	}
	return nil
}

func (s *dirRecords) Delete(_ context.Context, id string) error {
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete record %q: %w", id, newFileError(s.dir, "remove", s.path(id), err))
	}
	return nil
}

func (s *dirRecords) List(ctx context.Context) ([]*Record, []error, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, RecordCollection))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list records: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []*Record
	var bad []error
	for _, n := range names {
		r, err := s.Load(ctx, n)
		if err != nil {
			bad = append(bad, &UnreadableRecordError{ID: n, Where: s.Where(), Reason: err})
			continue
		}
		if r != nil {
			out = append(out, r)
		}
	}
	return out, bad, nil
}
