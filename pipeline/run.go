package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

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
	// Connect opens a new source connection: for workers and to reconnect
	// after the source connection was lost. Nil: no workers, no reconnects.
	Connect func(ctx context.Context) (*pgx.Conn, error)
	// OpenSink opens another sink on the same target, one per extra worker.
	OpenSink func(ctx context.Context) (load.Sink, error)
	// Sync, for directory targets, flushes the files to stable storage and
	// returns their acknowledged lengths, recorded in checkpoints.
	Sync func() (map[string]int64, error)
	// Retry bounds the retries of transient target and source failures.
	Retry load.RetryPolicy
	// Notice, when set, is told of events the user must know about: a
	// retry, a reconnection, a re-taken snapshot.
	Notice func(msg string)
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

// Run migrates plan from snap into sink like Migrate, with checkpoints,
// resume, workers, partitions and retries (see JobOptions). It returns an
// *InterruptedError when ctx ends first.
func Run(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, sink load.Sink, opt JobOptions) ([]Stats, error) {
	if opt.Workers < 1 {
		opt.Workers = 1
	}
	if opt.Partitions < 1 {
		opt.Partitions = 1
	}
	if opt.Retry.For == 0 {
		opt.Retry = load.DefaultRetry
	}
	if opt.Workers > 1 && (opt.Connect == nil || opt.OpenSink == nil) {
		return nil, fmt.Errorf("workers need Connect and OpenSink")
	}
	r := &runner{opt: opt, plan: plan, snapID: snap.ID, cp: opt.Checkpoint}
	if r.cp == nil {
		r.cp = &load.Checkpoint{Workers: opt.Workers, Partitions: opt.Partitions, Partition: opt.Partition}
	}
	r.cp.Phase = load.PhaseRunning
	r.cp.Snapshot = snap.ID
	r.initStreams()
	r.notice = opt.Notice
	if r.notice == nil {
		r.notice = func(string) {}
	}
	names := make([]string, 0, len(plan.Collections))
	for _, c := range plan.Collections {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	if err := sink.Prepare(ctx, names); err != nil {
		return nil, err
	}
	sinks := []load.Sink{sink}
	defer func() {
		for _, s := range sinks[1:] {
			_ = s.Close(context.WithoutCancel(ctx))
		}
	}()
	for len(sinks) < opt.Workers {
		s, err := opt.OpenSink(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.Prepare(ctx, names); err != nil {
			_ = s.Close(ctx)
			return nil, err
		}
		sinks = append(sinks, s)
	}
	r.sinks = make([]load.Sink, len(sinks))
	for i, s := range sinks {
		r.sinks[i] = &load.RetrySink{Sink: s, Policy: r.retryPolicy(), Stop: ctx}
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
	sinks  []load.Sink
	notice func(string)

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
// worker holds a pointer into the slice.
func (r *runner) initStreams() {
	for e, cp := range r.plan.Collections {
		for w := 0; w < r.opt.Workers; w++ {
			if r.state(e, w) == nil {
				r.cp.Streams = append(r.cp.Streams, load.StreamState{Entry: e, Collection: cp.Name, Worker: w})
			}
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
	if r.opt.Sync != nil {
		files, err := r.opt.Sync()
		if err != nil {
			return err
		}
		r.cp.Files = files
	}
	r.cp.Updated = time.Now().UTC()
	wctx := context.WithoutCancel(ctx)
	err := load.Retry(ctx, r.retryPolicy(), func() error { return r.opt.Checkpoints.Save(wctx, r.cp) })
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
	sink := r.sinks[w]
	lost := 0
	for {
		var pendingRows int64
		progressed := false
		err := Produce(ctx, ws, cp, ProduceOptions{BatchSize: r.opt.BatchSize, After: keyOf(s.After), Pager: s.Pager, Part: part, Reuse: true}, func(b Built) error {
			if sig.Err() != nil {
				return errInterrupted
			}
			var failed int64
			for _, re := range b.Errors {
				failed++
				if r.opt.Reject != nil {
					r.opt.Reject(Rejected{Collection: re.Collection, Source: re.Source, Err: re.Err})
				}
			}
			var written int64
			if len(b.Docs) > 0 {
				// The in-flight write completes even when a signal arrives.
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opt.Retry.For+time.Minute)
				rejects, err := sink.Write(wctx, cp.Name, b.Docs)
				cancel()
				if err != nil {
					return sinkError{err}
				}
				for _, rj := range rejects {
					failed++
					if r.opt.Reject != nil {
						r.opt.Reject(Rejected{Collection: rj.Collection, Source: rj.Source, Err: rj.Err})
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
		if ctx.Err() != nil || errors.As(err, &se) || !sourceLost(err, ws) {
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
		wait := min(time.Duration(1<<min(lost, 5))*100*time.Millisecond, 3*time.Second)
		select {
		case <-time.After(wait):
		case <-sig.Done():
			return errInterrupted
		}
		ns, aerr := r.adopt(ctx, true)
		for aerr != nil && lost <= 8 {
			if sig.Err() != nil {
				return errInterrupted
			}
			lost++
			r.notice(fmt.Sprintf("reconnect to source failed (%v); retrying", aerr))
			time.Sleep(min(time.Duration(1<<min(lost, 5))*100*time.Millisecond, 3*time.Second))
			ns, aerr = r.adopt(ctx, true)
		}
		if aerr != nil {
			return fmt.Errorf("reconnect to source: %w", aerr)
		}
		ws = ns
	}
}

// adopt opens a connection reading the run's snapshot; when that snapshot
// is gone (its connection was lost) and retake is set, a new one, which is
// announced: rows changed since the run began may show in what is left.
func (r *runner) adopt(ctx context.Context, retake bool) (*extract.Snapshot, error) {
	if r.opt.Connect == nil {
		return nil, errors.New("no way to reconnect to the source")
	}
	conn, err := r.opt.Connect(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	id := r.snapID
	r.mu.Unlock()
	s, err := extract.BeginAt(ctx, conn, id)
	if err == nil {
		return s, nil
	}
	if !retake {
		conn.Close(ctx)
		return nil, err
	}
	if conn.IsClosed() {
		if conn, err = r.opt.Connect(ctx); err != nil {
			return nil, err
		}
	}
	s, err = extract.Begin(ctx, conn)
	if err != nil {
		conn.Close(ctx)
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
	_ = s.Conn().Close(ctx)
}

// sourceLost tells a lost or killed source connection from other errors.
func sourceLost(err error, s *extract.Snapshot) bool {
	if s.Conn().IsClosed() {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || strings.HasPrefix(pe.Code, "08")
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || pgconn.SafeToRetry(err)
}

func keyOf(k []*string) extract.Key {
	if k == nil {
		return nil
	}
	return extract.Key(k)
}

func textKey(k extract.Key) []*string { return []*string(k) }
