package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/backoff"
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
}

// Stats counts one collection entry's progress.
type Stats struct {
	Collection string
	// Table is the entry's root table.
	Table string
	// Estimate is the catalog's row estimate for the root table (-1 unknown).
	Estimate int64
	// Rows is the number of root rows read; Written the number of
	// documents the target acknowledged; Failed the rows and documents
	// rejected.
	Rows    int64
	Written int64
	Failed  int64
	Queries int
	Elapsed time.Duration
	Done    bool
}

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
	// Checkpoints, when set, receives Checkpoint after every acknowledged
	// batch (at most every CheckpointEvery). Checkpoint holds the positions
	// to resume from (its Streams) and the job's identity; Run updates it.
	Checkpoints     load.Checkpoints
	Checkpoint      *load.Checkpoint
	CheckpointEvery time.Duration
	// Source opens new source connections: for workers and to reconnect
	// after the source connection was lost. Nil: no workers, no reconnects.
	Source *extract.Source
	// Retry bounds the retries of transient target and source failures.
	Retry load.RetryPolicy
	// Notice, when set, is told of events the user must know about: a
	// retry, a reconnection, a re-taken snapshot.
	Notice func(msg string)
	// Lease, when set, is the job's lease (PrepareJob): every batch is
	// written only after Lease.Check, so a run that lost its job stops
	// before its next write. Run the job under Lease.Context().
	Lease *HeldLease
}

// InterruptedError is a run stopped by its context (a signal) after the
// in-flight batch was written and the checkpoint saved.
type InterruptedError struct {
	Checkpoint *load.Checkpoint
	Cause      error
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
	if opt.Workers > 1 && opt.Source == nil {
		return nil, fmt.Errorf("workers need Source")
	}
	r := &runner{opt: opt, plan: plan, snapID: snap.ID, cp: opt.Checkpoint, target: target}
	if r.cp == nil {
		r.cp = &load.Checkpoint{Workers: opt.Workers, Partitions: opt.Partitions, Partition: opt.Partition}
	}
	if len(r.cp.Streams) == 0 && opt.Partitions == 1 && target.Caps().EmptyFirst {
		// A fresh run (not a resume, not one partition of several) on a
		// server that cannot replace documents in place cheaply: its
		// documents are deleted first, so the run only inserts.
		n, err := clearDocuments(ctx, target, plan)
		if err != nil {
			return nil, fmt.Errorf("empty the collections before a fresh run: %w", err)
		}
		if n != 0 && opt.Notice != nil {
			what := "the documents"
			if n > 0 {
				what = fmt.Sprintf("the %d documents", n)
			}
			opt.Notice(fmt.Sprintf("%s: deleted %s an earlier run wrote before writing them again: on this server a fresh run empties the mapping's collections (its document types, in a shared one) first, as --restart does, because replacing documents in place is quadratic there (see README)", target.Caps().Server, what))
		}
	}
	r.cp.Phase = load.PhaseRunning
	r.cp.Snapshot = snap.ID
	r.initStreams()
	r.cp.RunStarted, r.cp.RunRows = time.Now().UTC(), 0
	for _, s := range r.cp.Streams {
		r.cp.RunRows += s.Rows
	}
	r.notice = opt.Notice
	if r.notice == nil {
		r.notice = func(string) {}
	}
	names := plan.CollectionNames()
	// A resumed run's checkpoint holds what Sync returned: a directory
	// target truncates its files back to it.
	if err := target.Prepare(ctx, names, r.cp.Files); err != nil {
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
		if err := t.Prepare(ctx, names, r.cp.Files); err != nil {
			_ = t.Close(ctx)
			return nil, err
		}
		targets = append(targets, t)
	}
	r.writers = make([]load.Writer, len(targets))
	for i, t := range targets {
		r.writers[i] = &load.RetryWriter{Writer: t, Policy: r.retryPolicy(), Stop: ctx}
	}
	var all []Stats
	for e, cp := range plan.Collections {
		st, err := r.entry(ctx, snap, e, cp)
		all = append(all, st)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, errInterrupted) {
				return all, &InterruptedError{Checkpoint: r.cp, Cause: context.Cause(ctx)}
			}
			return all, err
		}
	}
	r.mu.Lock()
	r.cp.Phase, r.cp.Collection = load.PhaseDone, ""
	err := r.save(ctx, true)
	r.mu.Unlock()
	return all, err
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

	mu        sync.Mutex // guards cp, the stats and saving
	cp        *load.Checkpoint
	lastSaved time.Time
}

func (r *runner) retryPolicy() load.RetryPolicy {
	p := r.opt.Retry
	p.Log = func(attempt int, wait time.Duration, err error) {
		r.notice(fmt.Sprintf("target failed (%v); retry %d in %s", err, attempt, wait.Round(time.Millisecond)))
	}
	return p
}

// initStreams gives every entry x worker a stream state, before any
// worker holds a pointer into the slice, with its share of the root
// table's estimated rows.
func (r *runner) initStreams() {
	for e, cp := range r.plan.Collections {
		var estimate int64
		if est := cp.Root.Table.Estimate; est > 0 {
			estimate = max(1, est/int64(r.opt.Workers*r.opt.Partitions))
		}
		for w := 0; w < r.opt.Workers; w++ {
			s := r.state(e, w)
			if s == nil {
				r.cp.Streams = append(r.cp.Streams, load.StreamState{Entry: e, Collection: cp.Name, Worker: w})
				s = &r.cp.Streams[len(r.cp.Streams)-1]
			}
			s.Estimate = estimate
		}
	}
}

// state is entry e's worker w's stream.
func (r *runner) state(e, w int) *load.StreamState {
	for i := range r.cp.Streams {
		if s := &r.cp.Streams[i]; s.Entry == e && s.Worker == w {
			return s
		}
	}
	return nil
}

// save writes the checkpoint (r.mu held) when one is due.
func (r *runner) save(ctx context.Context, force bool) error {
	if r.opt.Checkpoints == nil {
		return nil
	}
	if !force && r.opt.CheckpointEvery > 0 && time.Since(r.lastSaved) < r.opt.CheckpointEvery {
		return nil
	}
	files, err := r.target.Sync(ctx)
	if err != nil {
		return err
	}
	r.cp.Files = files
	r.cp.Updated = time.Now().UTC()
	wctx := context.WithoutCancel(ctx)
	err = load.Retry(ctx, r.retryPolicy(), func() error { return r.opt.Checkpoints.Save(wctx, r.cp) })
	if err != nil {
		return sinkError{err}
	}
	r.lastSaved = time.Now()
	return nil
}

func (r *runner) entry(ctx context.Context, snap *extract.Snapshot, e int, cp *mappings.CollectionPlan) (Stats, error) {
	start := time.Now()
	st := Stats{Collection: cp.Name, Table: cp.Root.Table.Name, Estimate: cp.Root.Table.Estimate}
	r.mu.Lock()
	done := true
	for w := 0; w < r.opt.Workers; w++ {
		s := r.state(e, w)
		st.Rows, st.Written, st.Failed = st.Rows+s.Rows, st.Written+s.Written, st.Failed+s.Failed
		done = done && s.Done
	}
	if done {
		r.mu.Unlock()
		st.Done = true
		return st, nil
	}
	r.cp.Collection = cp.Name
	err := r.save(ctx, true)
	r.mu.Unlock()
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
	r.mu.Lock()
	s := r.state(e, w)
	r.mu.Unlock()
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
	for {
		var pendingRows int64
		progressed := false
		err := Produce(ctx, ws, cp, ProduceOptions{BatchSize: r.opt.BatchSize, After: keyOf(s.After), Pager: s.Pager, Part: part, Reuse: true}, func(b Built) error {
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
				// The in-flight write completes even when a signal arrives.
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opt.Retry.For+time.Minute)
				if l := r.opt.Lease; l != nil {
					if err := load.Retry(wctx, r.retryPolicy(), func() error { return l.Check(wctx) }); err != nil {
						cancel()
						return sinkError{err}
					}
				}
				rejects, err := sink.Write(wctx, cp.Name, b.Docs)
				cancel()
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
			s.Written += written
			s.Failed += failed
			if b.After != nil {
				s.After, s.Pager = textKey(b.After), b.Pager
				s.Rows += pendingRows
				st.Rows += pendingRows
				pendingRows = 0
				progressed = true
				if err := r.save(ctx, false); err != nil {
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
			r.mu.Lock()
			s.Rows += pendingRows
			st.Rows += pendingRows
			s.Done = true
			err = r.save(ctx, true)
			r.mu.Unlock()
			return err
		}
		if sig.Err() != nil || errors.Is(err, errInterrupted) {
			return errInterrupted
		}
		var se sinkError
		if ctx.Err() != nil || errors.As(err, &se) || !ws.Lost(err) {
			// ctx ends when another worker failed: its error is the run's.
			return err
		}
		if progressed {
			lost = 0
		}
		lost++
		if lost > 8 {
			return fmt.Errorf("source connection lost %d times without progress: %w", lost-1, err)
		}
		from := "the start of the table"
		if s.After != nil {
			from = "key " + keyOf(s.After).String()
		}
		r.notice(fmt.Sprintf("source connection lost while reading %q (%v); reconnecting and resuming after the last acknowledged position (%s)", cp.Name, err, from))
		if ws != snap || own {
			closeSnap(ws)
		}
		if err := r.reconnectWait(ctx, sig, lost); err != nil {
			return err
		}
		ns, aerr := r.adopt(ctx, true)
		for aerr != nil && lost <= 8 {
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
		r.cp.Snapshot = s.ID
		r.cp.Resumes++
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

func keyOf(k []*string) extract.Key {
	if k == nil {
		return nil
	}
	return extract.Key(k)
}

func textKey(k extract.Key) []*string { return []*string(k) }
