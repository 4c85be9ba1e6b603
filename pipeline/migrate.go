package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/backoff"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// Options configure a migration run.
type Options struct {
	// BatchSize is the number of root rows read, built and written at a time.
	BatchSize int
	// Progress, when set, is called after each batch is written (from one
	// goroutine at a time).
	Progress func(Stats)
	// Reject, when set, is called for every row or document that failed,
	// whether building it or writing it failed.
	Reject func(transform.Reject)
	// Waiting, when set, is called about once a second while a worker
	// has waited for the target or the source longer than StallAfter
	// (a slow or stuck server, retries), from another goroutine than
	// Progress's.
	Waiting func(Wait)
}

// StallAfter is how long a read or write may take before Waiting hears of
// it.
const StallAfter = 3 * time.Second

// Wait is a read or write taking long.
type Wait struct {
	Collection string
	// For is "target" (a write, its retries) or "source" (reading the
	// next batch).
	For string
	// Since is how long it has waited; Attempt the attempt being made
	// (1: the first), LastErr the error of the one before, if any.
	Since   time.Duration
	Attempt int
	LastErr error
}

// Stats counts one collection entry's progress.
type Stats struct {
	Collection string
	// Table is the entry's root table.
	Table string
	// Estimate is the catalog's row estimate for the root table (-1 unknown).
	Estimate int64
	// Bucket: the entry writes bucket pages, so Rows (items) and Written
	// (pages) count different things.
	Bucket bool
	// Rows is the number of root rows read; Written the number of
	// documents the target acknowledged; Failed the rows and documents
	// rejected. They include what earlier runs of the job did before the
	// checkpoint this run resumed, which the Prior fields hold: this
	// run's work is the difference (RunRows, RunWritten, RunFailed).
	Rows                                 int64
	Written                              int64
	Failed                               int64
	PriorRows, PriorWritten, PriorFailed int64
	Queries                              int
	// Elapsed is this run's time on the entry.
	Elapsed time.Duration
	Done    bool
	// Snapshot is when the source snapshot the entry reads was taken
	// (extract.Snapshot.Taken): documents written reflect the source as
	// of then.
	Snapshot time.Time
}

// RunRows, RunWritten and RunFailed count this run's work alone.
func (s Stats) RunRows() int64    { return s.Rows - s.PriorRows }
func (s Stats) RunWritten() int64 { return s.Written - s.PriorWritten }
func (s Stats) RunFailed() int64  { return s.Failed - s.PriorFailed }

// JobOptions configure Run: a migration that can be checkpointed,
// resumed, split among workers and partitions, and that rides out
// transient faults.
type JobOptions struct {
	Options
	// Workers read parts of each root table in parallel, each on its own
	// connection adopting the run's exported snapshot (default 1).
	Workers int
	// Partition i of Partitions: this run handles only that share of every
	// root table (Partitions <= 1: all of it).
	Partition, Partitions int
	// Job, when set, is the run's job (job.Prepare): its record holds the
	// positions to resume from (its Streams), which Run advances after
	// every acknowledged batch (saved at most every CheckpointEvery), and
	// every batch is written only after its lease's Check, so a run that
	// lost its job stops before its next write. Run the job under
	// Job.Lease.Context(). Nil: a run without a record.
	Job             *job.Job
	CheckpointEvery time.Duration
	// Saved, when set, is told of every record saved.
	Saved func(*job.Record)
	// Source opens new source connections: for workers and to reconnect
	// after the source connection was lost. Nil: no workers, no reconnects.
	Source *extract.Source
	// Retry bounds the retries of transient target and source failures.
	Retry load.RetryPolicy
	// Notice, when set, is told of events the user must know about: a
	// retry, a reconnection, a re-taken snapshot.
	Notice func(msg string)
	// Grace is how long the write in flight (and the checkpoint after
	// it) may still take once ctx is cancelled, before it is cancelled
	// too (default 5 s): an interrupt stops within seconds even when the
	// target hangs.
	Grace time.Duration
	// Indexes, when set, makes building the plan's indexes the job's
	// last phase, after loading (indexphase.go): the job is done only once
	// the target holds them as declared.
	Indexes *IndexPhase
}

// InterruptedError is a run stopped by its context (a signal) after the
// in-flight batch was written and the checkpoint saved.
type InterruptedError struct {
	Checkpoint *job.Record
	Cause      error
	// SaveErr is why the checkpoint could not be saved at the interrupt
	// (a target that stopped answering); the one saved before stands.
	SaveErr error
}

func (e *InterruptedError) Error() string {
	if e.Cause != nil && !errors.Is(e.Cause, context.Canceled) {
		return fmt.Sprintf("interrupted (%v)", e.Cause)
	}
	return "interrupted"
}

// sinkError marks failures of the target inside Produce's callback, so
// they are not taken for a lost source connection.
type sinkError struct{ error }

func (e sinkError) Unwrap() error { return e.error }

// TargetError is a run stopped by its target: a write, a flush to disk or
// a checkpoint the target refused or did not acknowledge within the
// retries. Checkpoint is the job's; the last one saved (at
// Checkpoint.Updated, when a store was given) stands, and resuming
// continues from it.
type TargetError struct {
	Err        error
	Checkpoint *job.Record
}

func (e *TargetError) Error() string { return e.Err.Error() }
func (e *TargetError) Unwrap() error { return e.Err }

// targetError returns err as a *TargetError when the target caused it.
func (r *runner) targetError(err error) error {
	var se sinkError
	if errors.As(err, &se) {
		return &TargetError{Err: se.error, Checkpoint: r.job.Record()}
	}
	return err
}

var errInterrupted = errors.New("interrupted")

// Run migrates plan from snap into target, with checkpoints, resume,
// workers, partitions and retries (see JobOptions). Each extra worker
// writes through its own handle (target.Reopen); the checkpoint records
// what target.Sync returns, and a resumed run hands it back to
// target.Prepare. It returns an *InterruptedError when ctx ends first.
func Run(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, target load.Target, opt JobOptions) ([]Stats, error) {
	if opt.Workers < 1 {
		opt.Workers = 1
	}
	if opt.Partitions < 1 {
		opt.Partitions = 1
	}
	if opt.Retry.For == 0 {
		opt.Retry = load.DefaultRetry
	}
	if opt.Grace <= 0 {
		opt.Grace = 5 * time.Second
	}
	if opt.Workers > 1 && opt.Source == nil {
		return nil, fmt.Errorf("workers need Source")
	}
	r := &runner{opt: opt, plan: plan, snapID: snap.ID, job: opt.Job, target: target}
	if r.job == nil {
		r.job = job.Transient(target, opt.Workers, opt.Partition, opt.Partitions)
	}
	r.notice = opt.Notice
	if r.notice == nil {
		r.notice = func(string) {}
	}
	r.job.SetSaving(job.Saving{Retry: r.retryPolicy(), Grace: opt.Grace, Every: opt.CheckpointEvery, Saved: opt.Saved})
	if len(r.job.Record().Streams) == 0 && opt.Partitions == 1 {
		// A fresh run (not a resume, not one partition of several): on a
		// server that cannot replace documents in place cheaply, the
		// job's documents are deleted first, so the run only inserts;
		// the records say what the run writes (own.go).
		// Retried as every other target step is: a retry recounts, and
		// deletes nothing the records no longer say is the job's.
		if err := load.Retry(ctx, r.retryPolicy(), func() error { return r.claim(ctx) }); err != nil {
			return nil, fmt.Errorf("before a fresh run: %w", err)
		}
	}
	r.job.Update(func(rec *job.Record) {
		rec.Phase = job.PhaseRunning
		rec.Snapshot = snap.ID
		r.initStreams(rec)
		rec.RunStarted, rec.RunRows = time.Now().UTC(), 0
		for _, s := range rec.Streams {
			rec.RunRows += s.Rows
		}
	})
	names := TargetCollections(plan)
	// A resumed run's record holds what Sync returned: a directory
	// target truncates its files back to it.
	files := r.job.Record().Files
	if err := target.Prepare(ctx, names, files); err != nil {
		var fe *load.FileError
		if errors.As(err, &fe) {
			err = r.targetError(sinkError{err})
		}
		return nil, err
	}
	targets := []load.Target{target}
	defer func() {
		for _, t := range targets[1:] {
			_ = t.Close(context.WithoutCancel(ctx))
		}
	}()
	for len(targets) < opt.Workers {
		t, err := target.Reopen(ctx)
		if err != nil {
			return nil, err
		}
		if err := t.Prepare(ctx, names, files); err != nil {
			_ = t.Close(ctx)
			return nil, err
		}
		targets = append(targets, t)
	}
	r.writers = make([]load.Writer, len(targets))
	r.ops = make([]op, len(targets))
	for i, t := range targets {
		p := r.retryPolicy()
		log := p.Log
		p.Log = func(attempt int, wait time.Duration, err error) {
			r.retried(i, attempt, err)
			log(attempt, wait, err)
		}
		r.writers[i] = &load.RetryWriter{Writer: t, Policy: p, Stop: ctx}
	}
	stopWatch := r.watch()
	defer stopWatch()
	var all []Stats
	for e, cp := range plan.Collections {
		st, err := r.entry(ctx, snap, e, cp)
		all = append(all, st)
		if err == nil && ctx.Err() != nil {
			// ctx ended while the entry's last batch was written: the run
			// stops there, as it would have at the next batch.
			err = errInterrupted
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, errInterrupted) {
				// Save what was acknowledged (workers save after each
				// batch unless CheckpointEvery makes them rarer).
				serr := r.save(ctx)
				return all, &InterruptedError{Checkpoint: r.job.Record(), Cause: context.Cause(ctx), SaveErr: serr}
			}
			return all, r.targetError(err)
		}
	}
	if err := r.recordWritten(ctx); err != nil {
		return all, r.targetError(sinkError{fmt.Errorf("record the documents written: %w", err)})
	}
	if opt.Indexes != nil {
		if err := r.indexes(ctx); err != nil {
			return all, err
		}
	} else {
		r.job.Update(func(rec *job.Record) { rec.Indexes = nil }) // --indexes none: the job builds none
	}
	r.job.Update(func(rec *job.Record) { rec.Phase, rec.Collection = job.PhaseDone, "" })
	return all, r.targetError(r.save(ctx))
}

type runner struct {
	opt    JobOptions
	plan   *mappings.Plan
	snapID string
	// target is the run's handle, writers one retrying writer per worker
	// (worker 0 writes through target).
	target  load.Target
	writers []load.Writer
	notice  func(string)

	mu  sync.Mutex // guards the stats
	job *job.Job

	opMu sync.Mutex // guards ops
	// ops is what each worker waits for (the watchdog reports long ones).
	ops []op
}

// op is a worker's current wait: a write (for "target") or the next
// batch (for "source"); zero when it waits for nothing.
type op struct {
	coll, what string
	since      time.Time
	attempt    int
	lastErr    error
}

// begin records that worker w starts waiting for what.
func (r *runner) begin(w int, coll, what string) {
	r.opMu.Lock()
	r.ops[w] = op{coll: coll, what: what, since: time.Now(), attempt: 1}
	r.opMu.Unlock()
}

// end records that worker w waits for nothing.
func (r *runner) end(w int) {
	r.opMu.Lock()
	r.ops[w] = op{}
	r.opMu.Unlock()
}

// retried records a failed attempt of worker w's write.
func (r *runner) retried(w, attempt int, err error) {
	r.opMu.Lock()
	r.ops[w].attempt, r.ops[w].lastErr = attempt+1, err
	r.opMu.Unlock()
}

// watch reports, once a second, every wait longer than StallAfter to
// opt.Waiting, until the returned function is called.
func (r *runner) watch() func() {
	if r.opt.Waiting == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			r.opMu.Lock()
			var waits []Wait
			for _, o := range r.ops {
				if o.what != "" && time.Since(o.since) >= StallAfter {
					waits = append(waits, Wait{Collection: o.coll, For: o.what, Since: time.Since(o.since), Attempt: o.attempt, LastErr: o.lastErr})
				}
			}
			r.opMu.Unlock()
			for _, w := range waits {
				r.opt.Waiting(w)
			}
		}
	}()
	return func() { close(stop); <-done }
}

func (r *runner) retryPolicy() load.RetryPolicy {
	p := r.opt.Retry
	p.Log = func(attempt int, wait time.Duration, err error) {
		r.notice(fmt.Sprintf("target failed (%v); retry %d in %s", err, attempt, wait.Round(time.Millisecond)))
	}
	return p
}

// initStreams gives every entry x worker a stream in rec, with its share
// of the root table's estimated rows.
func (r *runner) initStreams(rec *job.Record) {
	for e, cp := range r.plan.Collections {
		var estimate int64
		if est := cp.Root.Table.Estimate; est > 0 {
			estimate = max(1, est/int64(r.opt.Workers*r.opt.Partitions))
		}
		for w := 0; w < r.opt.Workers; w++ {
			i := slices.IndexFunc(rec.Streams, func(s job.Stream) bool { return s.Entry == e && s.Worker == w })
			if i < 0 {
				rec.Streams = append(rec.Streams, job.Stream{Entry: e, Collection: cp.Name, Worker: w})
				i = len(rec.Streams) - 1
			}
			rec.Streams[i].Estimate = estimate
		}
	}
}

// save saves the job's record now; a failure is the target's.
func (r *runner) save(ctx context.Context) error {
	if err := r.job.Save(ctx); err != nil {
		return sinkError{err}
	}
	return nil
}

// advance moves a stream's position once the target acknowledged what it
// covers (job.Job.Advance); a failure to save is the target's.
func (r *runner) advance(ctx context.Context, p job.StreamAt) error {
	if err := r.job.Advance(ctx, p); err != nil {
		return sinkError{err}
	}
	return nil
}

func (r *runner) entry(ctx context.Context, snap *extract.Snapshot, e int, cp *mappings.CollectionPlan) (Stats, error) {
	start := time.Now()
	st := Stats{Collection: cp.Name, Table: cp.Root.Table.Name, Estimate: cp.Root.Table.Estimate, Bucket: cp.Bucket != nil, Snapshot: snap.Taken}
	rec := r.job.Record()
	done := true
	for w := 0; w < r.opt.Workers; w++ {
		s, _ := rec.Stream(e, w)
		st.Rows, st.Written, st.Failed = st.Rows+s.Rows, st.Written+s.Written, st.Failed+s.Failed
		done = done && s.Done
	}
	st.PriorRows, st.PriorWritten, st.PriorFailed = st.Rows, st.Written, st.Failed
	if done {
		st.Done = true
		return st, nil
	}
	r.job.Update(func(rec *job.Record) { rec.Collection = cp.Name })
	err := r.save(ctx)
	if err != nil {
		return st, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for w := 0; w < r.opt.Workers; w++ {
		g.Go(func() error {
			return r.worker(gctx, ctx, snap, e, cp, w, &st, start)
		})
	}
	err = g.Wait()
	st.Elapsed = time.Since(start)
	st.Done = err == nil
	if err == nil && r.opt.Progress != nil {
		r.opt.Progress(st)
	}
	return st, err
}

// worker runs one part of entry e, reconnecting to the source when its
// connection is lost. ctx ends with the first worker's failure; sig is the
// run's context (signals).
func (r *runner) worker(ctx, sig context.Context, snap *extract.Snapshot, e int, cp *mappings.CollectionPlan, w int, st *Stats, start time.Time) error {
	// s is the stream's state: this worker's alone, handed to the job
	// (advance) once the target acknowledged what it says.
	s, _ := r.job.Record().Stream(e, w)
	if s.Done {
		return nil
	}
	part := extract.Part{I: r.opt.Partition*r.opt.Workers + w, N: r.opt.Partitions * r.opt.Workers}
	own := r.opt.Workers > 1
	ws := snap
	if own {
		var err error
		if ws, err = r.adopt(ctx, false); err != nil {
			return err
		}
	}
	defer func() {
		if own || ws != snap {
			closeSnap(ws)
		}
	}()
	sink := r.writers[w]
	lost := 0
	var lostSince time.Time // the first loss since the last progress
	defer r.end(w)
	for {
		var pendingRows int64
		progressed := false
		r.begin(w, cp.Name, "source")
		err := Produce(ctx, ws, cp, ProduceOptions{BatchSize: r.opt.BatchSize, After: s.After, Pager: s.Pager, Part: part, Reuse: true}, func(b Built) error {
			defer r.begin(w, cp.Name, "source")
			r.end(w)
			if sig.Err() != nil {
				return errInterrupted
			}
			var failed int64
			for _, rj := range b.Rejects {
				failed++
				if r.opt.Reject != nil {
					r.opt.Reject(rj)
				}
			}
			var written int64
			if len(b.Docs) > 0 {
				// The write in flight gets Grace to complete when a signal
				// arrives; if it is cancelled then, nothing of the batch
				// counts as acknowledged (the checkpoint stays before it).
				wctx, cancel := job.GraceContext(sig, r.opt.Grace)
				// Waiting for the target until the callback returns: the
				// lease check, the write, then the checkpoint after it.
				r.begin(w, cp.Name, "target")
				if l := r.job.Lease; l != nil {
					if err := load.Retry(wctx, r.retryPolicy(), func() error { return l.Check(wctx) }); err != nil {
						cancel()
						return sinkError{err}
					}
				}
				rejects, err := sink.Write(wctx, cp.Name, b.Docs)
				cancel()
				if err != nil && sig.Err() != nil {
					return errInterrupted
				}
				if err != nil {
					return sinkError{err}
				}
				for _, rj := range rejects {
					failed++
					if r.opt.Reject != nil {
						r.opt.Reject(rj)
					}
				}
				written = int64(len(b.Docs) - len(rejects))
			}
			pendingRows += int64(b.Rows)
			r.mu.Lock()
			defer r.mu.Unlock()
			st.Written += written
			st.Failed += failed
			st.Queries += b.Queries
			st.Snapshot = ws.Taken
			s.Written += written
			s.Failed += failed
			if b.After != nil {
				s.After, s.Pager = b.After, b.Pager
				s.Rows += pendingRows
				st.Rows += pendingRows
				pendingRows = 0
				progressed = true
				if err := r.advance(ctx, streamAt(s)); err != nil {
					return err
				}
			}
			st.Elapsed = time.Since(start)
			if r.opt.Progress != nil {
				r.opt.Progress(*st)
			}
			return nil
		})
		if err == nil {
			r.begin(w, cp.Name, "target") // the checkpoint
			r.mu.Lock()
			s.Rows += pendingRows
			st.Rows += pendingRows
			r.mu.Unlock()
			s.Done = true
			return r.advance(ctx, streamAt(s))
		}
		if sig.Err() != nil || errors.Is(err, errInterrupted) {
			return errInterrupted
		}
		var se sinkError
		if ctx.Err() != nil || errors.As(err, &se) || !ws.Lost(err) {
			// ctx ends when another worker failed: its error is the run's.
			return err
		}
		if progressed || lost == 0 {
			lost, lostSince = 0, time.Now()
		}
		lost++
		if r.sourceGivesUp(lost, lostSince) {
			return fmt.Errorf("source connection lost %d times without progress in %s: %w", lost-1, time.Since(lostSince).Round(time.Second), err)
		}
		from := "the start of the table"
		if s.After != nil {
			from = "key " + s.After.String()
		}
		r.notice(fmt.Sprintf("source connection lost while reading %q (%v); reconnecting and resuming after the last acknowledged position (%s)", cp.Name, err, from))
		if ws != snap || own {
			closeSnap(ws)
		}
		if err := r.reconnectWait(ctx, sig, lost); err != nil {
			return err
		}
		ns, aerr := r.adopt(ctx, true)
		for aerr != nil && !r.sourceGivesUp(lost, lostSince) {
			lost++
			r.notice(fmt.Sprintf("reconnect to source failed (%v); retrying", aerr))
			if err := r.reconnectWait(ctx, sig, lost); err != nil {
				return err
			}
			ns, aerr = r.adopt(ctx, true)
		}
		if aerr != nil {
			return fmt.Errorf("reconnect to source: %w", aerr)
		}
		ws = ns
	}
}

// sourceGivesUp reports whether a lost source connection is not
// reopened again: after eight attempts without progress, and not before
// --retry-for (Options.Retry.For) has passed since the first of them.
func (r *runner) sourceGivesUp(lost int, since time.Time) bool {
	return lost > 8 && time.Since(since) >= r.opt.Retry.For
}

// reconnectBackoff spaces the attempts to reopen a lost source
// connection: 200 ms, doubling, at most 3 s.
var reconnectBackoff = backoff.Policy{Base: 200 * time.Millisecond, Cap: 3 * time.Second}

// reconnectWait waits before reconnection attempt n; the wait ends early
// when a signal arrives (errInterrupted) or another worker fails (ctx's
// error).
func (r *runner) reconnectWait(ctx, sig context.Context, n int) error {
	if err := backoff.Wait(ctx, reconnectBackoff.Delay(n)); err != nil {
		if sig.Err() != nil {
			return errInterrupted
		}
		return err
	}
	return nil
}

// adopt opens a connection reading the run's snapshot; when that snapshot
// is gone (its connection was lost) and retake is set, a new one, which is
// announced: rows changed since the run began may show in what is left.
func (r *runner) adopt(ctx context.Context, retake bool) (*extract.Snapshot, error) {
	if r.opt.Source == nil {
		return nil, errors.New("no way to reconnect to the source")
	}
	r.mu.Lock()
	id := r.snapID
	r.mu.Unlock()
	s, err := r.opt.Source.Adopt(ctx, id)
	if err == nil || !retake || !errors.Is(err, extract.ErrNotAdopted) {
		return s, err
	}
	s, err = r.opt.Source.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.snapID == id {
		r.snapID = s.ID
		r.job.Update(func(rec *job.Record) { rec.Snapshot, rec.Resumes = s.ID, rec.Resumes+1 })
	}
	r.mu.Unlock()
	r.notice(fmt.Sprintf("the source snapshot was re-taken (%s): documents written from here on reflect the database as of now", s.ID))
	return s, nil
}

func closeSnap(s *extract.Snapshot) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Close(ctx)
}

// streamAt is stream s's position.
func streamAt(s job.Stream) job.StreamAt {
	return job.StreamAt{Entry: s.Entry, Worker: s.Worker, After: s.After, Pager: s.Pager, Done: s.Done, Rows: s.Rows, Written: s.Written, Failed: s.Failed}
}
