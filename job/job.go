package job

// A job: a named, resumable run (migrate --job, sync) and everything that
// is its state rather than its work - the record of where it stands
// (record.go), the lease that keeps one writer per job (lease.go) and the
// pause another process asks of a running job to write beside it
// (pause.go: verify --repair), what
// a run starts from (Prepare: a fresh record, the one it resumes, or a
// refusal), the replication slot of a logical sync (slot.go), and status
// (status.go). A position moves only by Advance, which its callers call
// after the target acknowledged the writes the position covers, and the
// record is saved by one path (save) for migrate and sync alike.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// Spec is a resumable run as asked for.
type Spec struct {
	// Name is the job's name; Partition of Partitions is the share of
	// every root table this run handles (Partitions <= 1: all of it), and
	// Workers the number of parts each is read as.
	Name                  string
	Partition, Partitions int
	Workers               int
	// Resume continues the job from its record; ResumeOrStart does too,
	// but starts the job fresh when it has no record (a restarted pod, a
	// scheduler). Restart deletes the record - and, through Clear, what
	// the job wrote - and starts over. With none of them, the job starts
	// fresh, unless an unfinished record exists.
	Resume, ResumeOrStart, Restart bool
	// Mapping is the mapping file's path: the record keeps it and the
	// hash of its contents, which a resume must find unchanged.
	Mapping string
	// Version is denorm's version, recorded.
	Version string
	// Lease tunes the job's lease (one writer per job, see HoldLease).
	Lease LeaseOptions
	// Shared: the run drops the job's collections itself (--drop), or
	// other runs write them too: a Restart then only forgets the record,
	// and Clear is not called. A partition of several is always shared.
	Shared bool
	// Prints are the fingerprints of the run's plan, recorded in a fresh
	// record: a sync that continues the job compares its mapping's with
	// them (see PrepareSync).
	Prints []mappings.CollectionPrint
	// Clear, for a Restart of a whole job, deletes what the job wrote;
	// it calls forget (which deletes the record) when it is sure it
	// will delete, or may refuse and keep the record. Nil: forget only.
	Clear func(ctx context.Context, forget func() error) error
}

// Job is a prepared job: its lease, its record and the store it is saved
// in. One run uses it; its methods may be called from the run's
// goroutines at once.
type Job struct {
	ID string
	// Lease is the job's lease, held from Prepare on: run the job under
	// Lease.Context() and Release it when the run ends. Nil for a run
	// without a record (Transient).
	Lease *Lease
	// Restarted: the job's record was deleted (and its documents, see
	// Spec.Restart). Resumed: the record is the one the target held,
	// written by denorm ResumedVersion.
	Restarted      bool
	Resumed        bool
	ResumedVersion string

	target load.Target
	// pauseLooked is when HonourPause last looked for a pause request
	// (the run's writing goroutine alone uses it).
	pauseLooked time.Time
	mu          sync.Mutex // guards everything below, and saving
	store       load.RecordStore
	rec         *Record
	saving      Saving
	// lastSaved is when the record was last saved.
	lastSaved time.Time
	// remap is what a sync run's changed mapping means for the job's
	// collections (nil: nothing), and mapping the run's mapping, which
	// AdoptMapping records.
	remap   *mappings.Remap
	mapping runMapping
}

// runMapping is a run's mapping as a record keeps it.
type runMapping struct {
	hash, path string
	prints     []mappings.CollectionPrint
}

// Saving is how a job saves its record.
type Saving struct {
	// Retry bounds the retries of a save that failed transiently; Retry.Log
	// is told of each.
	Retry load.RetryPolicy
	// Grace is how long a save may still take once the run's context
	// ended: a record being saved is not torn by an interrupt, but a
	// target that does not answer does not hold the run past it. Zero: a
	// save ignores the context's end (only Retry bounds it).
	Grace time.Duration
	// Every, when positive, spaces the saves Advance makes for streams:
	// a position is then saved at most every Every (the last one, and
	// Done, always).
	Every time.Duration
	// Saved, when set, is told of every record saved.
	Saved func(*Record)
}

// Transient is a job of a run without a record (migrate without --job):
// its positions move but nothing is saved.
func Transient(target load.Target, workers, partition, partitions int) *Job {
	return &Job{target: target, rec: &Record{Workers: workers, Partition: partition, Partitions: partitions}}
}

// MethodChangedError: a job is continued with another method than it
// syncs with.
type MethodChangedError struct {
	Job, Then, Now string
}

func (e *MethodChangedError) Error() string {
	return fmt.Sprintf("sync job %q syncs with --method %s, not %s", e.Job, e.Then, e.Now)
}

// SyncSpec is a sync run as asked for.
type SyncSpec struct {
	// Name names the job (its record and, for logical, its slot); Mapping
	// is the mapping file's path, Version denorm's version, both recorded.
	Name, Mapping, Version string
	// Method is SyncLogical or SyncDiff.
	Method string
	// Lease tunes the job's lease.
	Lease LeaseOptions
	// Prints are the fingerprints of the run's mapping
	// (mappings.Fingerprints of its plan): with them, a changed mapping
	// is compared with the job's (Job.MappingChange) rather than
	// refused. Nil: any change of the file is refused.
	Prints []mappings.CollectionPrint
}

// PrepareSync takes the lease of a sync job and loads its record, or
// makes a fresh one: a job that migrate started (--sync logical) or that
// an earlier sync ran is continued. It refuses a partition of a
// partitioned migration, a changed mapping it cannot apply in place
// (*MappingChangedError, see syncRemap) and a logical job continued by
// diff (*MethodChangedError: its slot would hold the source's WAL for
// ever); a mapping change it can apply is the job's MappingChange. On
// error the lease is released; otherwise the caller releases Job.Lease.
func PrepareSync(ctx context.Context, target load.Target, spec SyncSpec) (job *Job, err error) {
	hash, err := mappingHash(spec.Mapping)
	if err != nil {
		return nil, err
	}
	spec.Lease.Command = "sync"
	job, rec, err := take(ctx, target, spec.Name, spec.Lease)
	if job != nil {
		defer job.releaseOnError(ctx, &err)
	}
	if err != nil {
		return nil, err
	}
	job.mapping = runMapping{hash: hash, path: spec.Mapping, prints: spec.Prints}
	if rec == nil {
		job.rec = &Record{ID: spec.Name, Format: Format, Job: spec.Name, Partitions: 1, Workers: 1,
			MappingHash: hash, Mapping: spec.Mapping, Version: spec.Version, Phase: PhaseRunning, Started: time.Now().UTC(),
			Prints: spec.Prints}
		return job, nil
	}
	if rec.Partitions > 1 {
		return nil, fmt.Errorf("job %q is one partition of a partitioned migration: sync continues whole jobs only", spec.Name)
	}
	remap, err := syncRemap(rec, job.mapping)
	if err != nil {
		return nil, err
	}
	if rec.Logical() && spec.Method == SyncDiff {
		return nil, &MethodChangedError{Job: spec.Name, Then: SyncLogical, Now: SyncDiff}
	}
	rec.Version = spec.Version
	job.rec, job.Resumed = rec, true
	if remap == nil {
		// The same mapping (its file's layout or comments may differ):
		// recorded as the run's, with its fingerprints.
		job.adopt()
	}
	job.remap = remap
	return job, nil
}

// syncRemap compares a sync run's mapping m with the one rec's documents
// follow: nil when they give the same documents (the file may differ in
// layout and comments, or a record of an older denorm holds no
// fingerprints and the file is the same), else what changed
// (mappings.ComparePrints; collections an interrupted rebuild left,
// rec.Rebuilding, are rebuilt whole again). It refuses, as a
// *MappingChangedError, a changed file when either side has no
// fingerprints, a change ComparePrints refuses, and a change of the
// documents while the job's initial copy is unfinished (its positions
// are per collection entry of the old mapping).
func syncRemap(rec *Record, m runMapping) (*mappings.Remap, error) {
	refuse := func(why ...string) error {
		return &MappingChangedError{ID: rec.ID, Then: rec.MappingHash, Now: m.hash, Why: why}
	}
	switch {
	case rec.MappingHash == m.hash && len(rec.Rebuilding) == 0 && (rec.Prints == nil || m.prints == nil):
		return nil, nil
	case rec.Prints == nil && m.prints != nil:
		return nil, refuse("its checkpoint, written by an older denorm, does not record what the mapping's collections were, so the collections a change touches cannot be told")
	case rec.Prints == nil || m.prints == nil:
		return nil, refuse()
	}
	r := mappings.ComparePrints(rec.Prints, m.prints)
	for _, name := range rec.Rebuilding {
		if !slices.ContainsFunc(m.prints, func(c mappings.CollectionPrint) bool { return c.Name == name }) {
			continue // no longer mapped: Removed says so
		}
		i := slices.IndexFunc(r.Rebuild, func(b mappings.RebuildSet) bool { return b.Collection == name })
		set := mappings.RebuildSet{Collection: name, Why: "a rebuild under a changed mapping was interrupted"}
		if i < 0 {
			r.Rebuild = append(r.Rebuild, set)
		} else {
			r.Rebuild[i] = set
		}
	}
	switch {
	case !r.Changed():
		return nil, nil
	case len(r.Refused) > 0:
		return nil, refuse(r.Refused...)
	case rec.Phase != PhaseDone && len(rec.Streams) > 0 && (len(r.Rebuild) > 0 || len(r.Removed) > 0):
		return nil, refuse("the job's initial copy is unfinished, and its positions are those of the collections of the mapping it started with: finish the copy with that mapping, then change it")
	}
	return r, nil
}

// MappingChange is what the run's mapping changes for the job's
// collections (see syncRemap): the collections to rebuild, those no
// longer mapped, those whose indexes changed. Nil: nothing; the record
// already holds the run's mapping.
func (j *Job) MappingChange() *mappings.Remap {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.remap
}

// Rebuilding records that the rebuild of collections names under the
// run's mapping begins (saved with the next save): until AdoptMapping,
// every later run rebuilds them again.
func (j *Job) Rebuilding(names []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, n := range names {
		if !slices.Contains(j.rec.Rebuilding, n) {
			j.rec.Rebuilding = append(j.rec.Rebuilding, n)
		}
	}
}

// AdoptMapping records the run's mapping as the one the job's documents
// follow (saved with the next save): its rebuild is done.
func (j *Job) AdoptMapping() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.adopt()
	j.remap = nil
}

func (j *Job) adopt() {
	j.rec.MappingHash, j.rec.Mapping, j.rec.Rebuilding = j.mapping.hash, j.mapping.path, nil
	if j.mapping.prints != nil {
		j.rec.Prints = j.mapping.prints
	}
}

// take takes the lease of job id and loads the job's record from the
// store the lease guards: the job (its record not set yet) and the record
// stored (nil: none). With a job and an error (a record that cannot be
// read), the lease is held: releaseOnError releases it.
func take(ctx context.Context, target load.Target, id string, lease LeaseOptions) (*Job, *Record, error) {
	l, err := HoldLease(ctx, target.Records(), id, lease)
	if err != nil {
		return nil, nil, err
	}
	j := &Job{ID: id, Lease: l, store: l.Guard(target.Records()), target: target}
	stored, err := Load(ctx, j.store, id)
	return j, stored, err
}

// releaseOnError releases the job's lease when *err is set: the
// preparation failed.
func (j *Job) releaseOnError(ctx context.Context, err *error) {
	if *err != nil {
		_ = j.Lease.Release(context.WithoutCancel(ctx))
	}
}

// Record returns a copy of the job's record as it stands.
func (j *Job) Record() *Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rec.clone()
}

// Persistent reports whether the job's record is saved in a store.
func (j *Job) Persistent() bool { return j.store != nil }

// Where names the job's record store ("" for a Transient job).
func (j *Job) Where() string {
	if j.store == nil {
		return ""
	}
	return j.store.Where()
}

// SetSaving sets how the record is saved from now on.
func (j *Job) SetSaving(s Saving) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.saving = s
}

// WrapStore wraps the job's record store (a test gate).
func (j *Job) WrapStore(wrap func(load.RecordStore) load.RecordStore) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.store != nil {
		j.store = wrap(j.store)
	}
}

// Update changes what the record says about the job other than its
// positions (its phase, collection in progress, indexes, sync history,
// new streams at their start); it saves nothing. Moving a position
// there is a bug: Update panics.
func (j *Job) Update(fn func(r *Record)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	before := j.rec.positions()
	fn(j.rec)
	if err := samePositions(before, j.rec.positions()); err != nil {
		panic("job: " + err.Error() + " outside Advance")
	}
}

// Save saves the record now.
func (j *Job) Save(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.save(ctx)
}

// Position is where one of a job's streams stands: everything before it
// is in the target, acknowledged (StreamAt, WALAt).
type Position interface {
	// advance moves r's position to it; force: the record must be saved
	// now.
	advance(r *Record) (force bool, err error)
}

// StreamAt is a migrate stream's position: entry Entry's worker Worker
// has its documents for every root row up to and including key After in
// the target (Pager: the state of a bucket collection's page in
// progress), or, Done, for all of them; Rows, Written and Failed are the
// stream's counts there.
type StreamAt struct {
	Entry, Worker         int
	After                 extract.Key
	Pager                 *transform.PagerState
	Done                  bool
	Rows, Written, Failed int64
}

func (p StreamAt) advance(r *Record) (bool, error) {
	s := r.stream(p.Entry, p.Worker)
	if s == nil {
		return false, fmt.Errorf("job: no stream %d of entry %d", p.Worker, p.Entry)
	}
	if s.Done && !p.Done {
		return false, fmt.Errorf("job: stream %d of entry %d is done, it cannot move back", p.Worker, p.Entry)
	}
	s.After, s.Pager, s.Done = p.After, p.Pager, p.Done
	s.Rows, s.Written, s.Failed = p.Rows, p.Written, p.Failed
	return p.Done, nil
}

// WALAt is a logical sync's position: every change committed before LSN
// is in the target.
type WALAt struct{ LSN extract.LSN }

func (p WALAt) advance(r *Record) (bool, error) {
	switch {
	case !r.Logical():
		return false, errors.New("job: a WAL position for a job that is no logical sync")
	case p.LSN < r.Sync.Position:
		return false, fmt.Errorf("job: the position cannot move back from %s to %s", r.Sync.Position, p.LSN)
	}
	r.Sync.Position = p.LSN
	return true, nil
}

// Advance moves a position of the job and saves the record when a save
// is due (Saving.Every) or the position asks for one (a stream done, a
// WAL position). The caller calls it only once the target acknowledged
// every write the position covers: that is what makes resuming from the
// record lose nothing.
func (j *Job) Advance(ctx context.Context, p Position) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	force, err := p.advance(j.rec)
	if err != nil {
		return err
	}
	if !force && j.saving.Every > 0 && time.Since(j.lastSaved) < j.saving.Every {
		return nil
	}
	return j.save(ctx)
}

// save is the one way a record reaches its store (j.mu held): the
// target's files are made durable first (a directory target's lengths
// go into the record), then the record is saved, retrying transient
// failures.
func (j *Job) save(ctx context.Context) error {
	if j.store == nil {
		return nil
	}
	files, err := j.target.Sync(ctx)
	if err != nil {
		return err
	}
	j.rec.Files = files
	prev := j.rec.Updated
	j.rec.Updated = time.Now().UTC()
	lr, err := j.rec.encode()
	if err != nil {
		return err
	}
	rctx, wctx, cancel := j.saveContexts(ctx)
	defer cancel()
	if err := load.Retry(rctx, j.saving.Retry, func() error { return j.store.Save(wctx, lr) }); err != nil {
		j.rec.Updated = prev // the time of the record that stands
		return err
	}
	j.lastSaved = time.Now()
	if j.saving.Saved != nil {
		j.saving.Saved(j.rec)
	}
	return nil
}

// saveContexts are the contexts of a save's retries and of each attempt
// (Saving.Grace).
func (j *Job) saveContexts(ctx context.Context) (retry, attempt context.Context, cancel context.CancelFunc) {
	if j.saving.Grace <= 0 {
		w := context.WithoutCancel(ctx)
		return w, w, func() {}
	}
	w, cancel := GraceContext(ctx, j.saving.Grace)
	return ctx, w, cancel
}

// GraceContext is a context that outlives ctx by grace: cancelled grace
// after ctx is, or when the returned function is called. A write or a
// save started before an interrupt gets grace to be acknowledged.
func GraceContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancel) })
	return gctx, func() {
		stop()
		cancel()
	}
}

// Forget deletes the job's record (sync --drop-slot): the next run starts
// over.
func (j *Job) Forget(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.store.Delete(ctx, j.ID)
}

// positions are a record's positions, for Update's check.
type positions struct {
	streams map[[2]int]Stream
	wal     extract.LSN
}

func (r *Record) positions() positions {
	p := positions{streams: make(map[[2]int]Stream, len(r.Streams))}
	for _, s := range r.Streams {
		p.streams[[2]int{s.Entry, s.Worker}] = s
	}
	if r.Sync != nil {
		p.wal = r.Sync.Position
	}
	return p
}

func samePositions(a, b positions) error {
	if a.wal != b.wal {
		return errors.New("the WAL position moved")
	}
	for k, s := range b.streams {
		o, ok := a.streams[k]
		if !ok {
			if s.After != nil || s.Pager != nil || s.Done {
				return errors.New("a new stream starts past its beginning")
			}
			continue
		}
		if o.Done != s.Done || o.Pager != s.Pager || !slices.EqualFunc(o.After, s.After, func(x, y *string) bool {
			return (x == nil) == (y == nil) && (x == nil || *x == *y)
		}) {
			return fmt.Errorf("the position of stream %d of entry %d moved", k[1], k[0])
		}
	}
	return nil
}

// stream is entry e's worker w's stream (nil: none).
func (r *Record) stream(e, w int) *Stream {
	for i := range r.Streams {
		if s := &r.Streams[i]; s.Entry == e && s.Worker == w {
			return s
		}
	}
	return nil
}

// Stream returns a copy of entry e's worker w's stream (ok false: none).
func (r *Record) Stream(e, w int) (Stream, bool) {
	if s := r.stream(e, w); s != nil {
		return *s, true
	}
	return Stream{}, false
}

// clone is a copy of r that shares nothing it could change.
func (r *Record) clone() *Record {
	c := *r
	c.Streams = slices.Clone(r.Streams)
	c.Indexes = slices.Clone(r.Indexes)
	c.Prints = slices.Clone(r.Prints)
	c.Rebuilding = slices.Clone(r.Rebuilding)
	if r.Files != nil {
		c.Files = make(map[string]int64, len(r.Files))
		for k, v := range r.Files {
			c.Files[k] = v
		}
	}
	if r.Sync != nil {
		s := *r.Sync
		c.Sync = &s
	}
	return &c
}

// NoCheckpointError is a resume of a job the target holds no checkpoint
// of: there is nothing to resume.
type NoCheckpointError struct {
	// ID is the checkpoint's id (RecordID), Where the store.
	ID, Where string
}

func (e *NoCheckpointError) Error() string {
	return fmt.Sprintf("job %q has no checkpoint in %s: nothing to resume", e.ID, e.Where)
}

// MappingChangedError is a resume refused because the mapping file is not
// the one the job started with: documents of two mappings would mix. For
// a sync job, Why says why the change cannot be applied in place (empty:
// neither side records what the collections were).
type MappingChangedError struct {
	ID string
	// Then and Now are the sha256 of the file's contents (hex).
	Then, Now string
	Why       []string
}

func (e *MappingChangedError) Error() string {
	msg := fmt.Sprintf("job %q cannot resume: the mapping file changed since the job started (sha256 %.12s then, %.12s now), so documents of two mappings would mix", e.ID, e.Then, e.Now)
	if len(e.Why) > 0 {
		msg += ": " + strings.Join(e.Why, "; ")
	}
	return msg
}

// WorkersChangedError is a resume with another number of workers than
// the job started with: stream positions are per worker.
type WorkersChangedError struct {
	ID        string
	Then, Now int
}

func (e *WorkersChangedError) Error() string {
	return fmt.Sprintf("job %q was started with %d workers, resumed with %d: positions are per worker", e.ID, e.Then, e.Now)
}

// FinishedError is a resume of a job that is complete: nothing to do.
type FinishedError struct {
	ID       string
	Finished time.Time
}

func (e *FinishedError) Error() string {
	return fmt.Sprintf("job %s finished at %s: nothing to resume", e.ID, e.Finished.Format(time.RFC3339))
}

// UnfinishedError is a fresh start of a job whose checkpoint says it is
// unfinished: it must be resumed or restarted.
type UnfinishedError struct {
	ID, Where string
	// Collection is the collection it was at; Updated the time of its
	// last checkpoint.
	Collection string
	Updated    time.Time
	// Indexes: loading is done, and IndexesBuilt of IndexesTotal indexes
	// are built (phase indexes).
	Indexes                    bool
	IndexesBuilt, IndexesTotal int
}

// At says where the job stopped: at a collection, or building indexes.
func (e *UnfinishedError) At() string {
	if e.Indexes {
		return fmt.Sprintf("loading done, %d of %d indexes built", e.IndexesBuilt, e.IndexesTotal)
	}
	return fmt.Sprintf("at collection %q", e.Collection)
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("job %q in %s is unfinished (%s, last checkpoint %s)", e.ID, e.Where, e.At(), e.Updated.Format(time.RFC3339))
}

// Prepare takes the job's lease (HoldLease: a job another process runs
// is a *load.LeaseHeldError), loads the job's record from target's store
// and decides what the run starts from; on Restart it deletes what the
// job wrote (Spec.Clear). It returns *NoCheckpointError,
// *MappingChangedError, *WorkersChangedError, *FinishedError or
// *UnfinishedError for a run that must not go on, and a record that
// cannot be read as a *CorruptError (Restart ignores it). On error the
// lease is released; otherwise the caller releases Job.Lease.
func Prepare(ctx context.Context, target load.Target, spec Spec) (job *Job, err error) {
	hash, err := mappingHash(spec.Mapping)
	if err != nil {
		return nil, err
	}
	id := RecordID(spec.Name, spec.Partition, spec.Partitions)
	if spec.Lease.Command == "" {
		spec.Lease.Command = "migrate"
	}
	job, old, err := take(ctx, target, id, spec.Lease)
	if job != nil {
		defer job.releaseOnError(ctx, &err)
	}
	var corrupt *CorruptError
	switch {
	case errors.As(err, &corrupt) && spec.Restart:
		old, err = nil, nil
	case err != nil:
		return nil, err
	}
	store := job.store
	fresh := &Record{ID: id, Format: Format, Job: spec.Name, Partition: spec.Partition, Partitions: spec.Partitions,
		Workers: spec.Workers, MappingHash: hash, Mapping: spec.Mapping, Version: spec.Version, Phase: PhaseRunning,
		Started: time.Now().UTC(), Prints: spec.Prints}
	switch {
	case spec.Restart:
		forget := func() error { return store.Delete(ctx, id) }
		shared := spec.Shared || spec.Partitions > 1
		clear := spec.Clear
		if clear == nil || shared {
			clear = func(_ context.Context, forget func() error) error { return forget() }
		}
		if !shared {
			// A whole job restarting must not delete documents while
			// any partition runs.
			if err := partitionsIdle(ctx, store, spec.Name); err != nil {
				return nil, err
			}
		}
		if err := clear(ctx, forget); err != nil {
			return nil, err
		}
		job.rec, job.Restarted = fresh, true
		return job, nil
	case spec.ResumeOrStart && old == nil:
		job.rec = fresh
		return job, nil
	case spec.Resume && old == nil:
		return nil, &NoCheckpointError{ID: id, Where: store.Where()}
	case spec.Resume || spec.ResumeOrStart:
		if old.MappingHash != hash {
			return nil, &MappingChangedError{ID: id, Then: old.MappingHash, Now: hash}
		}
		if old.Workers != spec.Workers {
			return nil, &WorkersChangedError{ID: id, Then: old.Workers, Now: spec.Workers}
		}
		if old.Phase == PhaseDone {
			return nil, &FinishedError{ID: id, Finished: old.Updated}
		}
		job.Resumed, job.ResumedVersion = true, old.Version
		old.Resumes++
		old.Version = spec.Version
		job.rec = old
		return job, nil
	case old != nil && old.Phase != PhaseDone:
		built, total := old.IndexesBuilt()
		return nil, &UnfinishedError{ID: id, Where: store.Where(), Collection: old.Collection, Updated: old.Updated,
			Indexes: old.Phase == PhaseIndexes, IndexesBuilt: built, IndexesTotal: total}
	}
	job.rec = fresh
	return job, nil
}

// mappingHash is the sha256 of the mapping file's contents, in hex.
func mappingHash(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("mapping file: %w", err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// partitionsIdle returns a *load.LeaseHeldError when a partition of job
// name (checkpoint id "<name>.<i>of<N>") holds a live lease.
func partitionsIdle(ctx context.Context, store load.RecordStore, name string) error {
	leases, err := store.Leases(ctx)
	if err != nil {
		return err
	}
	for _, l := range leases {
		rest, ok := strings.CutPrefix(l.ID, name+".")
		var i, n int
		if !ok || !l.Live {
			continue
		}
		if _, err := fmt.Sscanf(rest, "%dof%d", &i, &n); err == nil && RecordID(name, i, n) == l.ID {
			return &load.LeaseHeldError{ID: l.ID, Where: store.Where(), Holder: l.Holder, Expiring: !l.Holder.Expires.IsZero()}
		}
	}
	return nil
}
