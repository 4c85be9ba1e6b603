package job

// The job's record: what a job has done and where it stands, kept in the
// target's record store (load.RecordStore) as JSON. It is saved only
// after the target acknowledged every document before each position it
// holds (Job.Advance), so resuming from it loses nothing; documents
// written after it are written again (idempotent upserts by _id, or
// truncated files).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// Format is the version of the record's layout.
const Format = 1

// Phases of a job: loading documents, then building the mapping's
// indexes (migrate --indexes after or before), then done. A job is done
// only once its indexes are built.
const (
	PhaseRunning = "running"
	PhaseIndexes = "indexes"
	PhaseDone    = "done"
)

// Sync methods.
const (
	// SyncLogical follows PostgreSQL's logical replication (a slot).
	SyncLogical = "logical"
	// SyncDiff rebuilds everything and writes the differences.
	SyncDiff = "diff"
)

// Record is a job's state as stored in its target.
type Record struct {
	// ID is the record's key: the job name, plus ".<i>of<N>" for a
	// partition (RecordID).
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
	// Streams are the positions of every stream (collection entry x
	// worker).
	Streams []Stream `json:"streams"`
	// Files are, for directory targets, the acknowledged length in bytes
	// of each collection's file.
	Files map[string]int64 `json:"files,omitempty"`
	// Indexes are the indexes the job builds once loading is done (phase
	// indexes), in plan order, each with whether the target holds it as
	// declared; empty for a job that builds none (--indexes none).
	Indexes []IndexState `json:"indexes,omitempty"`
	// Prints are the fingerprints of the collections of the mapping the
	// job's documents follow (mappings.Fingerprints): a sync run whose
	// mapping changed compares them with its own and rebuilds only the
	// collections the change touches. A record without them (written by
	// an older denorm) takes them from the first run whose mapping file
	// is unchanged; until then a changed mapping is refused, as it was.
	Prints []mappings.CollectionPrint `json:"prints,omitempty"`
	// Rebuilding names the collections whose rebuild under a changed
	// mapping began and has not finished: the next run rebuilds them
	// whole again, whatever its mapping (some of their documents may
	// follow the mapping of the interrupted run).
	Rebuilding []string `json:"rebuilding,omitempty"`
	// Sync is set for a job that sync continues (denorm sync, migrate
	// --sync logical): how it follows the source's changes. Phase and
	// Streams then describe its initial copy.
	Sync *Sync `json:"sync,omitempty"`
}

// Sync is a sync job's position and history.
type Sync struct {
	// Method is SyncLogical or SyncDiff.
	Method string `json:"method"`
	// Slot names the job's replication slot and publication (logical).
	Slot string `json:"slot,omitempty"`
	// Position (logical) is the WAL position before which every
	// committed change is in the target: the stream resumes there. Zero
	// while the slot is being created: a run that finds it so drops a
	// slot of that name left by an interrupted setup and creates it
	// again. It moves only by Job.Advance.
	Position extract.LSN `json:"position,omitzero"`
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

// Logical reports whether the record is a logical sync job's.
func (r *Record) Logical() bool { return r.Sync != nil && r.Sync.Method == SyncLogical }

// HasPosition reports whether the record is a logical sync job's with its
// slot made: it has a position to stream from.
func (r *Record) HasPosition() bool { return r.Logical() && r.Sync.Position != 0 }

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
func (r *Record) IndexesBuilt() (built, total int) {
	for _, ix := range r.Indexes {
		if ix.Built {
			built++
		}
	}
	return built, len(r.Indexes)
}

// Stream is one stream's position and counts: entry Entry of the plan
// (collection Collection), read by worker Worker. After and Pager move
// only by Job.Advance.
type Stream struct {
	Entry      int                   `json:"entry"`
	Collection string                `json:"collection"`
	Worker     int                   `json:"worker"`
	After      extract.Key           `json:"after"`
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

// RecordID is the record key of a job's partition i of n (n <= 1: the
// whole job).
func RecordID(job string, i, n int) string {
	if n <= 1 {
		return job
	}
	return fmt.Sprintf("%s.%dof%d", job, i, n)
}

// CorruptError is a record that cannot be read or makes no sense.
type CorruptError struct {
	ID     string
	Where  string
	Reason error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint %q in %s is corrupt (%v); it cannot be resumed from: start the job over with --restart", e.ID, e.Where, e.Reason)
}

func (e *CorruptError) Unwrap() error { return e.Reason }

// Validate checks a record read from a target.
func (r *Record) Validate() error {
	switch {
	case r.Format != Format:
		return fmt.Errorf("format %d, this denorm reads format %d", r.Format, Format)
	case r.Job == "" || r.ID == "":
		return errors.New("no job name")
	case r.MappingHash == "":
		return errors.New("no mapping hash")
	case r.Phase != PhaseRunning && r.Phase != PhaseIndexes && r.Phase != PhaseDone:
		return fmt.Errorf("unknown phase %q", r.Phase)
	case r.Workers < 1:
		return fmt.Errorf("workers %d", r.Workers)
	case r.Partitions < 1 || r.Partition < 0 || r.Partition >= r.Partitions:
		return fmt.Errorf("partition %d of %d", r.Partition, r.Partitions)
	}
	for i, s := range r.Streams {
		if s.Entry < 0 || s.Worker < 0 || s.Worker >= r.Workers || s.Rows < 0 || s.Written < 0 {
			return fmt.Errorf("stream %d is out of range", i)
		}
	}
	if s := r.Sync; s != nil {
		switch {
		case s.Method != SyncLogical && s.Method != SyncDiff:
			return fmt.Errorf("unknown sync method %q", s.Method)
		case s.Method == SyncLogical && s.Slot == "":
			return errors.New("a logical sync without a slot name")
		case s.Passes < 0 || s.Changes < 0 || s.Written < 0 || s.Deleted < 0 || s.Unchanged < 0 || s.Rebuilds < 0:
			return errors.New("negative sync counters")
		}
	}
	for f, n := range r.Files {
		if n < 0 || strings.ContainsAny(f, `/\`) {
			return fmt.Errorf("file %q at offset %d", f, n)
		}
	}
	return nil
}

// encode is the record as the store keeps it.
func (r *Record) encode() (*load.Record, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return &load.Record{ID: r.ID, Job: r.Job, Updated: r.Updated, Body: b}, nil
}

// decode reads the record the store holds under id (nil: none).
func decode(id, where string, lr *load.Record, err error) (*Record, error) {
	var ue *load.UnreadableRecordError
	switch {
	case errors.As(err, &ue):
		return nil, &CorruptError{ID: id, Where: where, Reason: ue.Reason}
	case err != nil:
		return nil, err
	case lr == nil:
		return nil, nil
	}
	var r Record
	dec := json.NewDecoder(strings.NewReader(string(lr.Body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, &CorruptError{ID: id, Where: where, Reason: err}
	}
	if err := r.Validate(); err != nil {
		return nil, &CorruptError{ID: id, Where: where, Reason: err}
	}
	if r.ID != id {
		return nil, &CorruptError{ID: id, Where: where, Reason: fmt.Errorf("it names job %q", r.ID)}
	}
	return &r, nil
}

// Load reads job id's record from store: nil when there is none, a
// *CorruptError when it cannot be read.
func Load(ctx context.Context, store load.RecordStore, id string) (*Record, error) {
	lr, err := store.Load(ctx, id)
	return decode(id, store.Where(), lr, err)
}

// List reads every record of store, by id; corrupt ones (*CorruptError)
// beside them.
func List(ctx context.Context, store load.RecordStore) ([]*Record, []error, error) {
	lrs, unreadable, err := store.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []*Record
	var bad []error
	for _, e := range unreadable {
		var ue *load.UnreadableRecordError
		if errors.As(e, &ue) {
			e = &CorruptError{ID: ue.ID, Where: ue.Where, Reason: ue.Reason}
		}
		bad = append(bad, e)
	}
	for _, lr := range lrs {
		r, err := decode(lr.ID, store.Where(), lr, nil)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, r)
	}
	return out, bad, nil
}
