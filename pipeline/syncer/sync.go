package syncer

// Package syncer keeps a target current while the source takes writes.
//
// Sync: keep a target current while the source takes writes. A sync job
// is a named job (its checkpoint in the target, like migrate's) with a
// method:
//
//   - logical: PostgreSQL logical replication. The job owns a slot and a
//     publication (extract.Logical); its first pass copies the snapshot
//     the slot exported, and later passes read the committed changes after
//     the position saved in the checkpoint, batch them, trace each changed
//     row to the documents it affects (fanout.go), rebuild those from a
//     snapshot that sees the batch (ProduceKeys) and replace or delete
//     them (changes.go). The position is saved only after the target
//     acknowledged the batch, and confirmed to the slot only after it is
//     saved: a crash replays what was not saved, which rebuilds the same
//     documents again from the current state, so replaying is harmless.
//   - diff: each pass rebuilds every document from one snapshot and
//     writes only the differences (diff.go). It needs no privilege beyond
//     reading and follows any filter.
//
// Batches are applied one at a time, each from a newer snapshot than the
// last, so a document is never overwritten by an older build of itself.
// While changes flow a reader of the target may see documents of different
// moments (each equals the source at some moment at or after the change
// that triggered its rebuild); once the source is quiet and a pass has
// caught up, the target equals what a fresh migrate would write.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/backoff"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform"
)

// Options configure Sync.
type Options struct {
	// LeaseTTL is how long the job's lease outlives its last heartbeat on
	// a server target (0: load.DefaultLeaseTTL; see HoldLease).
	LeaseTTL time.Duration
	// Job names the job (its checkpoint and, for logical, its slot);
	// Mapping is the mapping file's path, Version denorm's version, both
	// recorded in the checkpoint.
	Job, Mapping, Version string
	// Method is job.SyncLogical or job.SyncDiff.
	Method string
	// Follow (logical) applies changes as they come until ctx ends; Every,
	// when positive, runs a pass every Every until ctx ends; otherwise
	// Sync runs one pass (--once): the target is then current as of the
	// source's state when the pass began.
	Follow bool
	Every  time.Duration
	// BatchSize is the number of root rows (or keys) read and built at a
	// time (default 1000); WriteBatch caps the documents of one target
	// write (default 4 x BatchSize: on a server whose every delete scans
	// its collection, FerretDB, rebuilt documents written again in larger
	// groups cost fewer scans).
	BatchSize, WriteBatch int
	// Workers is the number of parts the initial copy reads each root
	// table as, in parallel (default 1; see copy). A copy being resumed
	// keeps the number it started with: its positions are per worker.
	Workers int
	// MaxKeys bounds the documents of one collection entry one batch of
	// changes rebuilds by key (default 100,000); past it, the entry is
	// rebuilt whole by a diff, so memory stays bounded whatever the size
	// of a transaction.
	MaxKeys int
	// MaxChanges (default 20,000) and MaxDelay (default 500 ms) end a
	// batch of changes at the next commit; Linger (default 20 ms) is how
	// long a batch waits for more changes before it is applied, when its
	// last commit is less than MaxDelay old (caught up; behind, a batch
	// takes MaxDelay of changes).
	MaxChanges int
	MaxDelay   time.Duration
	Linger     time.Duration
	// TempDir and SortMemory are a diff pass's spill directory and sort
	// budget (bytes, default 16 MiB), as verify's.
	TempDir    string
	SortMemory int
	// Retry bounds the retries of transient failures of the target and
	// the source (a server restarting, a lost connection).
	Retry load.RetryPolicy
	// Pass is called after every pass, and in Follow mode after every
	// batch of changes applied (from Sync's goroutine). Waiting, when
	// set, is called with the commit time of the first transaction of a
	// batch when it is received: until the next Pass, the target is at
	// least that far behind (lag that grows while a batch is gathered and
	// applied).
	Pass    func(PassStats)
	Waiting func(since time.Time)
	// Slot, when set, is told of the job's replication slot as the source
	// shows it (retained WAL, position confirmed), when a logical pass
	// starts and then every SlotEvery (default 30 s) while it streams.
	Slot      func(*extract.SlotStatus)
	SlotEvery time.Duration
	// Debug, when set, is told of each step, for -v: the crash points of
	// Steps (steps.go), by name, as they are reached. The fault and crash
	// tests aim kills at these steps.
	Debug func(msg string, args ...any)
	// Idle is called when a logical pass saves a new position with
	// nothing to apply: the job is caught up (lag 0). IdleSave (default
	// 10 s) is how often such a position is saved at most: a caught-up
	// job records its position, and confirms it to the slot, within
	// twice IdleSave.
	Idle     func(position string)
	IdleSave time.Duration
	// SnapshotAge (default 10 s) bounds how long a logical pass holds a
	// snapshot of the source open while it rebuilds a batch's documents:
	// the keys are rebuilt snapshotKeys at a time, and a group that starts
	// past SnapshotAge reads from a fresh snapshot. A snapshot is thus
	// held for at most SnapshotAge plus one group's reading, building and
	// writing. A collection rebuilt whole by a diff (TRUNCATE, a batch
	// affecting more than MaxKeys documents) holds one snapshot for the
	// diff.
	SnapshotAge time.Duration
	// Info is told of routine events: shard keys and indexes made, the
	// replication slot created, the initial copy, collections rebuilt
	// whole by a diff. Notice is told of events the user must know of
	// (retries, a table that changed and came back); Retried of every
	// failure retried.
	Info    func(msg string)
	Notice  func(msg string)
	Retried func(err error)
	// Reject is called for every document that could not be built or
	// written.
	Reject func(transform.Reject)
}

func (o *Options) defaults() {
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.WriteBatch <= 0 {
		o.WriteBatch = snapshotKeys * o.BatchSize
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 100_000
	}
	if o.MaxChanges <= 0 {
		o.MaxChanges = 20_000
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 500 * time.Millisecond
	}
	if o.Linger <= 0 {
		o.Linger = 20 * time.Millisecond
	}
	if o.SortMemory <= 0 {
		o.SortMemory = 16 << 20
	}
	if o.Retry.For <= 0 {
		o.Retry = load.DefaultRetry
	}
	if o.Notice == nil {
		o.Notice = func(string) {}
	}
	if o.Info == nil {
		o.Info = func(string) {}
	}
	if o.Retried == nil {
		o.Retried = func(error) {}
	}
	if o.SlotEvery <= 0 {
		o.SlotEvery = 30 * time.Second
	}
	if o.Waiting == nil {
		o.Waiting = func(time.Time) {}
	}
	if o.IdleSave <= 0 {
		o.IdleSave = 10 * time.Second
	}
	if o.SnapshotAge <= 0 {
		o.SnapshotAge = 10 * time.Second
	}
	if o.Idle == nil {
		o.Idle = func(string) {}
	}
	if o.Debug == nil {
		o.Debug = func(string, ...any) {}
	}
}

// Result is what Sync did.
type Result struct {
	// Checkpoint is the job's record as last saved.
	Checkpoint *job.Record
	// Total adds up every pass of this run.
	Total PassStats
	// Passes counts the passes of this run.
	Passes int
	// Interrupted: ctx ended the run (a signal) between two batches; what
	// was applied is saved, the rest is applied by the next run.
	Interrupted bool
}

// syncer is one Sync run's state.
type syncer struct {
	opt    Options
	src    *extract.Source
	plan   *mappings.Plan
	target load.Target
	writer load.Writer
	job    *job.Job
	lg     *extract.Logical
	fan    *fanout
	res    *Result
	// copied: this run made the initial copy; slotRecovered: it made a
	// new slot after the job's was lost (recoverSlot).
	copied, slotRecovered bool
	// remap is what the run's changed mapping means for the job's
	// collections (remap.go), until they are rebuilt; nil: nothing.
	remap *mappings.Remap
	// stale are the tables the change stream describes by a definition
	// the plan does not match, though the table matches it again (see
	// checkRelation), each with why its rows rebuild whole.
	stale map[string]string
}

// Sync runs a sync job (see the file comment): it makes the initial copy
// when the job has none, then runs its passes. src must be the source the
// plan was resolved against. The target must take deletes of chosen
// documents (load.Caps.Delete).
func Sync(ctx context.Context, src *extract.Source, plan *mappings.Plan, target load.Target, opt Options) (*Result, error) {
	opt.defaults()
	if !target.Caps().Delete {
		return nil, &load.UnsupportedError{Target: "directory", Op: "be synced (sync replaces and deletes chosen documents)"}
	}
	if opt.Method != job.SyncLogical && opt.Method != job.SyncDiff {
		return nil, fmt.Errorf("unknown sync method %q", opt.Method)
	}
	if opt.Follow && opt.Method != job.SyncLogical {
		return nil, errors.New("following changes needs --method logical; run diff passes with --every")
	}
	if err := checkLogical(ctx, src, plan, opt); err != nil {
		return nil, err
	}
	// One writer per job, as migrate: a second sync (or a migrate) of the
	// job waits for this one, and a run that lost the job stops and
	// never saves over its successor's record.
	jb, err := job.PrepareSync(ctx, target, job.SyncSpec{Name: opt.Job, Mapping: opt.Mapping, Version: opt.Version, Method: opt.Method,
		Lease: job.LeaseOptions{TTL: opt.LeaseTTL, Notice: opt.Notice}, Prints: mappings.Fingerprints(plan)})
	if err != nil {
		return nil, err
	}
	defer jb.Lease.Release(context.WithoutCancel(ctx))
	ctx = jb.Lease.Context()
	s := &syncer{opt: opt, src: src, plan: plan, target: target, job: jb, fan: newFanout(plan), res: &Result{Total: newPassStats(opt.Method)}, stale: map[string]string{},
		remap: jb.MappingChange()}
	s.writer = &load.RetryWriter{Writer: load.Rewriting(target), Policy: s.retryPolicy(), Stop: ctx}
	jb.SetSaving(s.saving())
	if opt.Method == job.SyncLogical {
		lg, err := src.Logical(opt.Job)
		if err != nil {
			return nil, err
		}
		s.lg = lg
		// What the slot's setup would refuse is refused before anything
		// is made on the target (checkLogical told wal_level and the
		// replica identities already).
		if err := jb.CheckSlot(ctx, lg); err != nil {
			return s.result(ctx, err)
		}
	}
	if err := s.ready(ctx); err != nil {
		return s.result(ctx, err)
	}
	if err := s.start(ctx); err != nil {
		return s.result(ctx, err)
	}
	for {
		if ctx.Err() != nil {
			return s.result(ctx, nil)
		}
		var err error
		switch {
		case opt.Method == job.SyncLogical:
			err = s.streamRetrying(ctx, !opt.Follow)
		case !s.copied || s.res.Passes > 0:
			err = s.diffPass(ctx)
		}
		if err != nil || opt.Follow {
			return s.result(ctx, err)
		}
		s.res.Passes++
		if opt.Every <= 0 {
			return s.result(ctx, nil)
		}
		select {
		case <-ctx.Done():
		case <-time.After(opt.Every):
		}
	}
}

// checkLogical checks that logical sync can follow plan
// (extract.CheckLogical).
func checkLogical(ctx context.Context, src *extract.Source, plan *mappings.Plan, opt Options) error {
	if opt.Method != job.SyncLogical {
		return nil
	}
	lg, err := src.Logical(opt.Job)
	if err != nil {
		return err
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return err
	}
	err = extract.CheckLogical(ctx, snap, lg, plan)
	closeSnap(snap)
	return err
}

// ready makes the mapping's shard keys and indexes as migrate does,
// before the first pass: the initial copy and every later pass find
// them, and verify checks them (both are no-ops once they exist). The
// indexes of collections a mapping change rebuilds are made once they
// are rebuilt (remapDone): a unique index on a field the change adds
// holds only then.
func (s *syncer) ready(ctx context.Context) error {
	if s.remap != nil {
		s.remapNotices()
	}
	if _, err := pipeline.ShardCollections(ctx, s.target, s.plan, s.opt.Retry, s.opt.Info); err != nil {
		return err
	}
	return s.createIndexes(ctx, func(name string) bool { return !s.rebuilds(name) })
}

// createIndexes makes the indexes of the plan's collections that only
// picks. Collections whose indexes the target holds already, as declared,
// are left out: a sync run every minute announces (Options.Info) only
// the indexes it does create. When the target's indexes cannot be read,
// all are created, as before (creating an index that exists is a no-op).
func (s *syncer) createIndexes(ctx context.Context, only func(collection string) bool) error {
	plan := *s.plan
	plan.Indexes = nil
	for _, set := range s.plan.Indexes {
		if only(set.Collection) {
			plan.Indexes = append(plan.Indexes, set)
		}
	}
	if checks, err := pipeline.CheckIndexes(ctx, s.target, &plan); err == nil {
		lacking := map[string]bool{}
		for _, c := range checks {
			if c.State != pipeline.IndexOK {
				lacking[c.Collection] = true
			}
		}
		sets := plan.Indexes
		plan.Indexes = nil
		for _, set := range sets {
			if lacking[set.Collection] {
				plan.Indexes = append(plan.Indexes, set)
			}
		}
	}
	_, err := pipeline.CreateIndexes(ctx, s.target, &plan, s.opt.Retry, s.opt.Info)
	if err != nil && s.remap != nil && len(s.remap.Indexes) > 0 {
		return fmt.Errorf("%w\n(the mapping changed the indexes of %s; denorm creates indexes but never drops one: drop the index the target holds, and sync creates it as declared)", err, strings.Join(s.remap.Indexes, ", "))
	}
	return err
}

// result ends a run: an error caused by ctx ending is an interruption.
func (s *syncer) result(ctx context.Context, err error) (*Result, error) {
	s.res.Checkpoint = s.job.Record()
	if lost := s.job.Lease.Err(); lost != nil {
		return s.res, lost
	}
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) {
		s.res.Interrupted = true
		return s.res, nil
	}
	return s.res, err
}

func (s *syncer) retryPolicy() load.RetryPolicy {
	p := s.opt.Retry
	p.Log = func(attempt int, wait time.Duration, err error) {
		s.opt.Retried(err)
		s.opt.Notice(fmt.Sprintf("target failed (%v); retry %d in %s", err, attempt, wait.Round(time.Millisecond)))
	}
	return p
}

// saving is how sync saves the job's record: retrying transient
// failures, and an interrupt does not cut a save short.
func (s *syncer) saving() job.Saving { return job.Saving{Retry: s.retryPolicy()} }

// start makes the job ready for passes: for a new job the initial copy;
// for logical, the slot (created, or left by an interrupted setup and
// created again) and a copy joined to it; an interrupted copy resumed.
func (s *syncer) start(ctx context.Context) error {
	rec := s.job.Record()
	switch s.opt.Method {
	case job.SyncDiff:
		fresh := rec.Sync == nil && rec.Updated.IsZero()
		if rec.Sync == nil {
			s.job.Update(func(r *job.Record) { r.Sync = &job.Sync{Method: job.SyncDiff} })
		}
		if fresh {
			snap, err := s.src.Snapshot(ctx)
			if err != nil {
				return err
			}
			defer closeSnap(snap)
			return s.copy(ctx, snap)
		}
		return nil
	}
	if rec.HasPosition() {
		if rec.Phase == job.PhaseDone {
			if s.remap != nil {
				return s.rebuild(ctx)
			}
			return nil
		}
		// An initial copy was interrupted: the snapshot the slot exported
		// ended with the run that made it. The copy goes on from each
		// worker's saved position in a new snapshot, newer than the
		// slot's; the stream then starts at the saved position (the
		// slot's consistent point), before both snapshots, so every
		// change since the copy began is applied after it. That is
		// exact: a change applied rebuilds the documents it affects from
		// the source's current state (apply.go), whichever snapshot
		// built them, and a change the copy saw already rebuilds them
		// unchanged (see copy).
		snap, err := s.src.Snapshot(ctx)
		if err != nil {
			return err
		}
		defer closeSnap(snap)
		s.opt.Info(fmt.Sprintf("resuming the initial copy from a new snapshot; the changes since position %s are applied after it", rec.Sync.Position))
		return s.copy(ctx, snap)
	}
	// The slot: new, or left by a setup interrupted before it saved the
	// position (the record says so), which is dropped and made again.
	return s.copyFromNewSlot(ctx, rec.Logical())
}

// copyFromNewSlot makes the job's slot (replace: dropping the one of its
// name first, see job.SetupSlot) and copies the snapshot it exported.
func (s *syncer) copyFromNewSlot(ctx context.Context, replace bool) error {
	ss, err := s.job.SetupSlot(ctx, s.lg, s.plan, replace, s.opt.Debug, s.opt.Notice)
	if err != nil {
		return err
	}
	defer ss.Release(context.WithoutCancel(ctx))
	snap, err := s.src.Adopt(ctx, ss.Snapshot)
	if err != nil {
		return err
	}
	defer closeSnap(snap)
	s.opt.Info(fmt.Sprintf("replication slot %s created at %s; copying its snapshot", s.lg.Name, ss.Consistent))
	return s.copy(ctx, snap)
}

// copy makes the initial copy from snap: by migrate's runner, resumable
// inside a table, when the job's collections are empty in the target (or
// such a copy is being resumed: the checkpoint has its streams); else by
// a diff, which also deletes the documents the source no longer gives.
//
// The runner's workers (copyWorkers) each read a part of every root
// table (a hash of its key) on a connection of their own that adopts
// snap (SET TRANSACTION SNAPSHOT; under a new slot, the snapshot its
// replication connection exported and keeps open until the copy ends),
// and save their position in the job's record after every batch the
// target acknowledged. A copy killed at any moment is resumed from those
// positions, each worker reading again at most the batches it had read
// past its last saved position.
//
// A resumed copy reads the rest from a newer snapshot than the documents
// already copied (start): the target then mixes documents built at
// several moments, all at or after the slot's consistent point. The
// stream from that point makes it exact, as it does a copy from one
// snapshot: for every document, every change to a row it was built
// from (or that would now belong to it) committed after its build is
// streamed, and traced from its old and new values to the document
// (fanout.go's argument), which is rebuilt - or deleted - from the state
// of the source when the change is applied, later than any build of the
// copy. A change committed before the document's build is streamed too,
// and only rebuilds documents from the current state again. That holds
// for documents deleted (a root deleted after its chunk was copied is
// deleted by its change; one deleted before is never copied), rows moved
// between parents (both parents are rebuilt), bucket pages (a page the
// runner carried over a resume, Stream.Pager, holds items of two
// snapshots only when an item of that parent changed in between, which
// rebuilds all of the parent's pages), aggregates and lookups (rebuilt
// with the document that holds them).
func (s *syncer) copy(ctx context.Context, snap *extract.Snapshot) error {
	st := newPassStats(s.opt.Method)
	st.Copy = true
	byRun := len(s.job.Record().Streams) > 0
	if !byRun {
		empty, err := s.empty(ctx)
		if err != nil {
			return err
		}
		byRun = empty
	}
	switch {
	case byRun:
		workers := s.copyWorkers()
		s.opt.Info(fmt.Sprintf("initial copy: migrating every collection (%d %s)", workers, plural(workers, "worker", "workers")))
		stats, err := pipeline.Run(ctx, snap, s.plan, s.target, pipeline.JobOptions{
			Options: pipeline.Options{BatchSize: s.opt.BatchSize, Reject: func(r transform.Reject) {
				st.Rejected++
				if s.opt.Reject != nil {
					s.opt.Reject(r)
				}
			}, Progress: func(x pipeline.Stats) {
				if x.Done {
					s.opt.Debug(StepCopyEntryDone, "collection", x.Collection, "rows", x.RunRows(), "before", x.PriorRows, "workers", workers)
				}
			}},
			Workers: workers, Partitions: 1, Job: s.job, Source: s.src, Retry: s.retryPolicy(), Notice: s.opt.Notice,
			Saved: func(r *job.Record) { s.opt.Debug(StepCopySaved, "collection", r.Collection) },
		})
		s.job.SetSaving(s.saving())
		if err != nil {
			return err
		}
		var read, before int64
		for _, x := range stats {
			st.coll(x.Collection).Written += x.Written
			read, before = read+x.RunRows(), before+x.PriorRows
		}
		msg := fmt.Sprintf("initial copy done: %d rows read by this run", read)
		if before > 0 {
			msg += fmt.Sprintf(", %d copied before it was interrupted", before)
		}
		s.opt.Info(msg)
	default:
		s.opt.Info("initial copy: the target holds documents already; writing the differences")
		if err := s.diff(ctx, snap, s.allEntries(), &st); err != nil {
			return err
		}
	}
	// A copy writes every collection of the run's mapping: a change of
	// the mapping is applied.
	if err := s.remapDone(ctx); err != nil {
		return err
	}
	s.job.Update(func(r *job.Record) { r.Phase, r.Collection = job.PhaseDone, "" })
	s.copied = true
	return s.passDone(ctx, &st, snap, nil)
}

// copyWorkers is the number of workers of the initial copy, recorded in
// the job: Options.Workers, or, for a copy being resumed, the number it
// started with (its positions are per worker: each is a part of every
// root table, chosen by a hash of the key, Stream.Worker of
// Record.Workers), which is said when it differs.
func (s *syncer) copyWorkers() int {
	rec := s.job.Record()
	if len(rec.Streams) > 0 {
		if rec.Workers != s.opt.Workers {
			s.opt.Notice(fmt.Sprintf("the initial copy being resumed was started with %d %s: it goes on with as many (its positions are per worker)",
				rec.Workers, plural(rec.Workers, "worker", "workers")))
		}
		return rec.Workers
	}
	n := s.opt.Workers
	if !s.target.Caps().Parallel {
		n = 1
	}
	s.job.Update(func(r *job.Record) { r.Workers = n })
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// empty reports whether the target holds no document of the plan's
// collections.
func (s *syncer) empty(ctx context.Context) (bool, error) {
	errFound := errors.New("found")
	for _, name := range s.plan.CollectionNames() {
		_, err := s.target.Scan(ctx, name, func([]byte) error { return errFound })
		if errors.Is(err, errFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

func (s *syncer) allEntries() []int {
	out := make([]int, len(s.plan.Collections))
	for i := range out {
		out[i] = i
	}
	return out
}

// diffPass is one pass of --method diff, from a new snapshot.
func (s *syncer) diffPass(ctx context.Context) error {
	return s.retrying(ctx, func() (bool, error) {
		st := newPassStats(job.SyncDiff)
		snap, err := s.src.Snapshot(ctx)
		if err != nil {
			return false, err
		}
		defer closeSnap(snap)
		s.diffRemapped(&st)
		if err := s.diff(ctx, snap, s.allEntries(), &st); err != nil {
			return false, err
		}
		// The pass rewrote whatever a change of the mapping touches.
		if err := s.remapDone(ctx); err != nil {
			return false, err
		}
		return true, s.passDone(ctx, &st, snap, nil)
	})
}

// passDone records a pass (or a batch of changes) in the job's record
// and saves it: at pos, when the pass moves the job's position (a batch
// of changes; the target acknowledged all of it).
func (s *syncer) passDone(ctx context.Context, st *PassStats, snap *extract.Snapshot, pos job.Position) error {
	st.End = time.Now()
	s.job.Update(func(r *job.Record) {
		ss := r.Sync
		if !st.Copy {
			ss.Passes++
		}
		ss.LastPass = st.End.UTC()
		if snap != nil {
			ss.LastSnapshot = st.Start.UTC()
		}
		changes, written, deleted, unchanged := st.Totals()
		ss.Changes += changes
		ss.Written += written
		ss.Deleted += deleted
		ss.Unchanged += unchanged
		ss.Rebuilds += int64(len(st.Rebuilt))
		ss.LagSeconds = st.Lag.Seconds()
	})
	var err error
	if pos != nil {
		err = s.job.Advance(ctx, pos)
	} else {
		s.opt.Debug(StepPassWritten, "copy", st.Copy)
		if err = s.job.Save(ctx); err == nil {
			s.opt.Debug(StepPassSaved, "copy", st.Copy)
		}
	}
	if err != nil {
		return err
	}
	st.Position = position(s.job.Record())
	s.res.Total.add(*st)
	if s.opt.Pass != nil {
		s.opt.Pass(*st)
	}
	return nil
}

// position is a record's WAL position as PostgreSQL prints it, "" for
// none.
func position(r *job.Record) string {
	if !r.HasPosition() {
		return ""
	}
	return r.Sync.Position.String()
}

// retrying runs fn, again after transient failures of the source or the
// target (fn reports whether it made progress, which restarts the
// count), for at most Retry.For without progress.
func (s *syncer) retrying(ctx context.Context, fn func() (bool, error)) error {
	bo := backoff.Policy{Base: 200 * time.Millisecond, Cap: 5 * time.Second}
	last := time.Now()
	for attempt := 1; ; attempt++ {
		progressed, err := fn()
		if progressed {
			last, attempt = time.Now(), 1
		}
		if err == nil || ctx.Err() != nil || !transient(err) {
			return err
		}
		wait := bo.Delay(attempt)
		if time.Since(last)+wait > s.opt.Retry.For {
			return fmt.Errorf("gave up after %s of failures: %w", time.Since(last).Round(time.Second), err)
		}
		s.opt.Retried(err)
		s.opt.Notice(fmt.Sprintf("%v; retrying in %s", err, wait.Round(time.Millisecond)))
		if backoff.Wait(ctx, wait) != nil {
			return nil
		}
	}
}

// transient reports whether a failure may pass: a lost or refused
// connection to either side, a server restarting, a slot still held by a
// stream that just ended.
func transient(err error) bool {
	if extract.Disconnected(err) || errors.As(err, new(*extract.SlotBusyError)) {
		return true
	}
	retry, _ := load.Transient(err)
	return retry
}

func closeSnap(s *extract.Snapshot) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Close(ctx)
}
