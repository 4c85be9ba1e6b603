package load

import (
	"context"
	"encoding/json"
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

	"github.com/denorm/denorm/transform"
)

// CheckpointCollection is the collection (server targets) and the
// directory (directory targets) that hold checkpoints.
const CheckpointCollection = "_denorm"

// CheckpointFormat is the version of the checkpoint record layout.
const CheckpointFormat = 1

// Phases of a job: loading documents, then building the mapping's
// indexes (migrate --indexes after or before), then done. A job is done
// only once its indexes are built.
const (
	PhaseRunning = "running"
	PhaseIndexes = "indexes"
	PhaseDone    = "done"
)

// Checkpoint is a job's progress as stored in its target. It is saved only
// after the target acknowledged every document before each stream's
// position, so resuming from it loses nothing; documents written after it
// are written again (idempotent upserts by _id, or truncated files).
type Checkpoint struct {
	// ID is the record's key: the job name, plus ".<i>of<N>" for a partition.
	ID          string `json:"id"`
	Format      int    `json:"format"`
	Job         string `json:"job"`
	Partition   int    `json:"partition"`
	Partitions  int    `json:"partitions"`
	Workers     int    `json:"workers"`
	MappingHash string `json:"mappingHash"`
	Mapping     string `json:"mapping"`
	Version     string `json:"version"`
	// Phase is running (loading), indexes or done; Collection the
	// collection entry in progress while loading.
	Phase      string    `json:"phase"`
	Collection string    `json:"collection,omitempty"`
	Snapshot   string    `json:"snapshot,omitempty"`
	Started    time.Time `json:"started"`
	Updated    time.Time `json:"updated"`
	Resumes    int       `json:"resumes"`
	// RunStarted is when the latest run of the job (a start or a resume)
	// began, and RunRows the rows the job had read then: status's rate
	// and ETA are this run's.
	RunStarted time.Time `json:"runStarted,omitzero"`
	RunRows    int64     `json:"runRows,omitempty"`
	// Streams are the positions of every stream (collection entry x worker).
	Streams []StreamState `json:"streams"`
	// Files are, for directory targets, the acknowledged length in bytes of
	// each collection's file.
	Files map[string]int64 `json:"files,omitempty"`
	// Indexes are the indexes the job builds once loading is done (phase
	// indexes), in plan order, each with whether the target holds it as
	// declared; empty for a job that builds none (--indexes none).
	Indexes []IndexState `json:"indexes,omitempty"`
	// Sync is set for a job that sync continues (denorm sync, migrate
	// --sync logical): how it follows the source's changes. Phase and
	// Streams then describe its initial copy.
	Sync *SyncState `json:"sync,omitempty"`
}

// Sync methods.
const (
	// SyncLogical follows PostgreSQL's logical replication (a slot).
	SyncLogical = "logical"
	// SyncDiff rebuilds everything and writes the differences.
	SyncDiff = "diff"
)

// SyncState is a sync job's position and history, saved only after the
// target acknowledged everything it covers.
type SyncState struct {
	// Method is SyncLogical or SyncDiff.
	Method string `json:"method"`
	// Slot names the job's replication slot and publication (logical).
	Slot string `json:"slot,omitempty"`
	// Position (logical) is the WAL position (LSN text, "16/B374D848")
	// before which every committed change is in the target: the stream
	// resumes there. Empty while the slot is being created: a run that
	// finds it empty drops a slot of that name left by an interrupted
	// setup and creates it again.
	Position string `json:"position,omitempty"`
	// Passes counts the passes completed (the initial copy is pass 0);
	// LastPass is when the last one ended, LastSnapshot when the snapshot
	// it read was taken (diff).
	Passes       int64     `json:"passes"`
	LastPass     time.Time `json:"lastPass,omitzero"`
	LastSnapshot time.Time `json:"lastSnapshot,omitzero"`
	// LagSeconds is the lag at the end of the last pass: how far the
	// newest change applied was behind the source's clock (logical).
	LagSeconds float64 `json:"lagSeconds"`
	// Totals over every pass: rows changed (logical), documents written,
	// deleted and found unchanged (diff), and collections rebuilt whole by
	// a diff (TRUNCATE, huge transactions).
	Changes   int64 `json:"changes"`
	Written   int64 `json:"written"`
	Deleted   int64 `json:"deleted"`
	Unchanged int64 `json:"unchanged"`
	Rebuilds  int64 `json:"rebuilds"`
}

// IndexState is one index of a job's index phase.
type IndexState struct {
	Collection string `json:"collection"`
	Name       string `json:"name"`
	// Built: the target held the index as declared when the job last
	// checked (after creating it).
	Built bool `json:"built"`
}

// IndexesBuilt counts the job's indexes the target holds as declared,
// and all of them.
func (c *Checkpoint) IndexesBuilt() (built, total int) {
	for _, ix := range c.Indexes {
		if ix.Built {
			built++
		}
	}
	return built, len(c.Indexes)
}

// StreamState is one stream's position: entry Entry of the plan
// (collection Collection), read by worker Worker.
type StreamState struct {
	Entry      int                   `json:"entry"`
	Collection string                `json:"collection"`
	Worker     int                   `json:"worker"`
	After      []*string             `json:"after"`
	Pager      *transform.PagerState `json:"pager,omitempty"`
	Done       bool                  `json:"done"`
	Rows       int64                 `json:"rows"`
	Written    int64                 `json:"written"`
	Failed     int64                 `json:"failed"`
	// Estimate is the catalog's estimate of the rows this stream reads
	// (its share of the root table's), 0 when unknown: status's
	// percentage and ETA.
	Estimate int64 `json:"estimate,omitempty"`
}

// CheckpointID is the record key of a job's partition i of n (n <= 1: the
// whole job).
func CheckpointID(job string, i, n int) string {
	if n <= 1 {
		return job
	}
	return fmt.Sprintf("%s.%dof%d", job, i, n)
}

// CorruptCheckpointError is a checkpoint record that cannot be read or
// makes no sense.
type CorruptCheckpointError struct {
	ID     string
	Where  string
	Reason error
}

func (e *CorruptCheckpointError) Error() string {
	return fmt.Sprintf("checkpoint %q in %s is corrupt (%v); it cannot be resumed from: start the job over with --restart", e.ID, e.Where, e.Reason)
}

func (e *CorruptCheckpointError) Unwrap() error { return e.Reason }

// Validate checks a checkpoint read from a target.
func (c *Checkpoint) Validate() error {
	switch {
	case c.Format != CheckpointFormat:
		return fmt.Errorf("format %d, this denorm reads format %d", c.Format, CheckpointFormat)
	case c.Job == "" || c.ID == "":
		return errors.New("no job name")
	case c.MappingHash == "":
		return errors.New("no mapping hash")
	case c.Phase != PhaseRunning && c.Phase != PhaseIndexes && c.Phase != PhaseDone:
		return fmt.Errorf("unknown phase %q", c.Phase)
	case c.Workers < 1:
		return fmt.Errorf("workers %d", c.Workers)
	case c.Partitions < 1 || c.Partition < 0 || c.Partition >= c.Partitions:
		return fmt.Errorf("partition %d of %d", c.Partition, c.Partitions)
	}
	for i, s := range c.Streams {
		if s.Entry < 0 || s.Worker < 0 || s.Worker >= c.Workers || s.Rows < 0 || s.Written < 0 {
			return fmt.Errorf("stream %d is out of range", i)
		}
	}
	if s := c.Sync; s != nil {
		switch {
		case s.Method != SyncLogical && s.Method != SyncDiff:
			return fmt.Errorf("unknown sync method %q", s.Method)
		case s.Method == SyncLogical && s.Slot == "":
			return errors.New("a logical sync without a slot name")
		case s.Passes < 0 || s.Changes < 0 || s.Written < 0 || s.Deleted < 0 || s.Unchanged < 0 || s.Rebuilds < 0:
			return errors.New("negative sync counters")
		}
	}
	for f, n := range c.Files {
		if n < 0 || strings.ContainsAny(f, `/\`) {
			return fmt.Errorf("file %q at offset %d", f, n)
		}
	}
	return nil
}

// Checkpoints stores a target's checkpoints (Target.Checkpoints) and the
// leases that keep one writer per job (lease.go). One goroutine at a time
// uses it.
type Checkpoints interface {
	// Load returns the checkpoint with that ID, nil when there is none, or
	// a *CorruptCheckpointError.
	Load(ctx context.Context, id string) (*Checkpoint, error)
	// Save stores c under c.ID, replacing the record atomically.
	Save(ctx context.Context, c *Checkpoint) error
	// Delete removes a record; a missing one is no error.
	Delete(ctx context.Context, id string) error
	// List returns every checkpoint of the target, by ID; corrupt ones as
	// errors beside them.
	List(ctx context.Context) ([]*Checkpoint, []error, error)
	// Where names the store for messages.
	Where() string

	// AcquireLease takes the lease of job id (a checkpoint id) for
	// holder, who must hold it before loading, saving or deleting the
	// job's checkpoint and before writing the job's documents. A lease
	// another process holds is a *LeaseHeldError. ttl is how long a
	// server lease lasts without Renew (<= 0: DefaultLeaseTTL); a
	// directory lock lasts as long as the process.
	AcquireLease(ctx context.Context, id string, holder LeaseHolder, ttl time.Duration) (Lease, error)
	// Leases returns every lease the store knows of, by id, live or not.
	Leases(ctx context.Context) ([]LeaseState, error)
}

// --- server targets: one document per checkpoint in _denorm ---

type serverCheckpoints struct {
	coll *mongo.Collection
	db   string
	op   time.Duration // bound of each call (opTimeout)
}

// Checkpoints is the server's checkpoint store (the _denorm collection).
func (s *serverTarget) Checkpoints() Checkpoints {
	return &serverCheckpoints{coll: s.db.Collection(CheckpointCollection), db: s.db.Name(), op: s.op}
}

func (s *serverCheckpoints) Where() string {
	return fmt.Sprintf("collection %s of database %s", CheckpointCollection, s.db)
}

// The record is {_id, checkpoint: <JSON text>}: the JSON layout is the same
// for both kinds of target and survives servers that reject some BSON.
type checkpointDoc struct {
	ID         string    `bson:"_id"`
	Job        string    `bson:"job"`
	Updated    time.Time `bson:"updated"`
	Checkpoint string    `bson:"checkpoint"`
}

func (s *serverCheckpoints) Load(ctx context.Context, id string) (*Checkpoint, error) {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	var raw bson.Raw
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&raw)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %q from %s: %w", id, s.Where(), err)
	}
	return decodeCheckpointDoc(id, s.Where(), raw)
}

func decodeCheckpointDoc(id, where string, raw bson.Raw) (*Checkpoint, error) {
	var d checkpointDoc
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, &CorruptCheckpointError{ID: id, Where: where, Reason: err}
	}
	return decodeCheckpoint(id, where, []byte(d.Checkpoint))
}

func decodeCheckpoint(id, where string, b []byte) (*Checkpoint, error) {
	var c Checkpoint
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, &CorruptCheckpointError{ID: id, Where: where, Reason: err}
	}
	if err := c.Validate(); err != nil {
		return nil, &CorruptCheckpointError{ID: id, Where: where, Reason: err}
	}
	if c.ID != id {
		return nil, &CorruptCheckpointError{ID: id, Where: where, Reason: fmt.Errorf("it names job %q", c.ID)}
	}
	return &c, nil
}

func (s *serverCheckpoints) Save(ctx context.Context, c *Checkpoint) error {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	d := checkpointDoc{ID: c.ID, Job: c.Job, Updated: c.Updated, Checkpoint: string(b)}
	_, err = s.coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: c.ID}}, d, options.Replace().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("save checkpoint %q to %s: %w", c.ID, s.Where(), err)
	}
	return nil
}

func (s *serverCheckpoints) Delete(ctx context.Context, id string) error {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	if _, err := s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		return fmt.Errorf("delete checkpoint %q from %s: %w", id, s.Where(), err)
	}
	return nil
}

func (s *serverCheckpoints) List(ctx context.Context) ([]*Checkpoint, []error, error) {
	ctx, cancel := bound(ctx, s.op)
	defer cancel()
	cur, err := s.coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, nil, fmt.Errorf("list checkpoints in %s: %w", s.Where(), err)
	}
	defer cur.Close(ctx)
	var out []*Checkpoint
	var bad []error
	for cur.Next(ctx) {
		id, _ := cur.Current.Lookup("_id").StringValueOK()
		if isLeaseDoc(id) || isOwnerDoc(id) {
			continue
		}
		c, err := decodeCheckpointDoc(id, s.Where(), cur.Current)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, c)
	}
	if err := cur.Err(); err != nil {
		return nil, nil, fmt.Errorf("list checkpoints in %s: %w", s.Where(), err)
	}
	return out, bad, nil
}

// --- directory targets: <dir>/_denorm/<id>.json, replaced atomically ---

type dirCheckpoints struct{ dir string }

// Checkpoints is the directory's checkpoint store (<dir>/_denorm/).
func (s *dirTarget) Checkpoints() Checkpoints { return &dirCheckpoints{dir: s.dir} }

func (s *dirCheckpoints) Where() string { return filepath.Join(s.dir, CheckpointCollection) }

func (s *dirCheckpoints) path(id string) string {
	return filepath.Join(s.dir, CheckpointCollection, id+".json")
}

func (s *dirCheckpoints) Load(_ context.Context, id string) (*Checkpoint, error) {
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	return decodeCheckpoint(id, s.path(id), b)
}

func (s *dirCheckpoints) Save(_ context.Context, c *Checkpoint) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path(c.ID)), 0o755); err != nil {
		return fmt.Errorf("save checkpoint %q: %w", c.ID, newFileError(s.dir, "create", filepath.Dir(s.path(c.ID)), err))
	}
	if err := writeFileAtomic(s.dir, s.path(c.ID), append(b, '\n')); err != nil {
		return fmt.Errorf("save checkpoint %q: %w", c.ID, err)
	}
	return nil
}

func (s *dirCheckpoints) Delete(_ context.Context, id string) error {
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete checkpoint %q: %w", id, newFileError(s.dir, "remove", s.path(id), err))
	}
	return nil
}

func (s *dirCheckpoints) List(ctx context.Context) ([]*Checkpoint, []error, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, CheckpointCollection))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list checkpoints: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []*Checkpoint
	var bad []error
	for _, n := range names {
		c, err := s.Load(ctx, n)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		if c != nil {
			out = append(out, c)
		}
	}
	return out, bad, nil
}
