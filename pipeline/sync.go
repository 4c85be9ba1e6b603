package pipeline

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
	"slices"
	"sort"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/backoff"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// SyncOptions configure Sync.
type SyncOptions struct {
	// LeaseTTL is how long the job's lease outlives its last heartbeat on
	// a server target (0: load.DefaultLeaseTTL; see HoldLease).
	LeaseTTL time.Duration
	// Job names the job (its checkpoint and, for logical, its slot);
	// Mapping is the mapping file's path, Version denorm's version, both
	// recorded in the checkpoint.
	Job, Mapping, Version string
	// Method is load.SyncLogical or load.SyncDiff.
	Method string
	// Follow (logical) applies changes as they come until ctx ends; Every,
	// when positive, runs a pass every Every until ctx ends; otherwise
	// Sync runs one pass (--once): the target is then current as of the
	// source's state when the pass began.
	Follow bool
	Every  time.Duration
	// BatchSize is the number of root rows (or keys) read, built and
	// written at a time (default 1000); WriteBatch caps the documents of
	// one target write (default BatchSize).
	BatchSize, WriteBatch int
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
	// batch of changes applied (from Sync's goroutine).
	Pass func(PassStats)
	// Debug, when set, is told of each step, for -v: "slot created" (not
	// yet saved in the checkpoint), "copy checkpoint saved", "applying a
	// batch", "documents written" and "documents deleted" (each target
	// call of a batch or pass), "batch written", "checkpoint saved",
	// "position confirmed". The fault tests aim kills at these steps.
	Debug func(msg string, args ...any)
	// Idle is called when a logical pass saves a new position with
	// nothing to apply: the job is caught up (lag 0).
	Idle func(position string)
	// Notice is told of events the user must know of (retries, rebuilds,
	// the initial copy); Retried of every failure retried.
	Notice  func(msg string)
	Retried func(err error)
	// Reject is called for every document that could not be built or
	// written.
	Reject func(transform.Reject)
}

func (o *SyncOptions) defaults() {
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.WriteBatch <= 0 {
		o.WriteBatch = o.BatchSize
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
	if o.Retried == nil {
		o.Retried = func(error) {}
	}
	if o.Idle == nil {
		o.Idle = func(string) {}
	}
	if o.Debug == nil {
		o.Debug = func(string, ...any) {}
	}
}

// TableChanges counts one table's changed rows in a pass.
type TableChanges struct {
	Inserts, Updates, Deletes, Truncates int64
}

// Rows is the number of rows changed.
func (t TableChanges) Rows() int64 { return t.Inserts + t.Updates + t.Deletes }

// DocCounts counts one collection's documents in a pass: written
// (inserted or replaced), deleted, and found unchanged (diff).
type DocCounts struct {
	Written, Deleted, Unchanged int64
}

// PassStats is what one pass (or, following, one batch) did.
type PassStats struct {
	Method     string
	Start, End time.Time
	// Copy: the pass was the job's initial copy.
	Copy bool
	// Transactions counts the source transactions applied (logical).
	Transactions int
	// Tables counts the changed rows by table ("schema.table").
	Tables map[string]*TableChanges
	// Collections counts the documents by collection.
	Collections map[string]*DocCounts
	// Rebuilt lists the collections rebuilt whole by a diff, each with
	// why ("comments: TRUNCATE of public.comment").
	Rebuilt []string
	// Position is the job's position after the pass (logical).
	Position string
	// Lag is how long after its commit on the source the newest change
	// applied was acknowledged by the target (0 when nothing was
	// pending); TxLags is that time for every transaction applied (at most
	// 10,000 per batch).
	Lag    time.Duration
	TxLags []time.Duration
	// Rejected counts the documents that could not be built or written.
	Rejected int64
}

func newPassStats(method string) PassStats {
	return PassStats{Method: method, Start: time.Now(), Tables: map[string]*TableChanges{}, Collections: map[string]*DocCounts{}}
}

func (p *PassStats) coll(name string) *DocCounts {
	c := p.Collections[name]
	if c == nil {
		c = &DocCounts{}
		p.Collections[name] = c
	}
	return c
}

func (p *PassStats) table(name string) *TableChanges {
	t := p.Tables[name]
	if t == nil {
		t = &TableChanges{}
		p.Tables[name] = t
	}
	return t
}

func (p *PassStats) unchanged(coll string) { p.coll(coll).Unchanged++ }

// Totals returns the rows changed and the documents written, deleted and
// unchanged, over all tables and collections.
func (p *PassStats) Totals() (changes, written, deleted, unchanged int64) {
	for _, t := range p.Tables {
		changes += t.Rows()
	}
	for _, c := range p.Collections {
		written, deleted, unchanged = written+c.Written, deleted+c.Deleted, unchanged+c.Unchanged
	}
	return
}

// add merges q into p (a --once pass made of several batches).
func (p *PassStats) add(q PassStats) {
	for k, v := range q.Tables {
		t := p.table(k)
		t.Inserts, t.Updates, t.Deletes, t.Truncates = t.Inserts+v.Inserts, t.Updates+v.Updates, t.Deletes+v.Deletes, t.Truncates+v.Truncates
	}
	for k, v := range q.Collections {
		c := p.coll(k)
		c.Written, c.Deleted, c.Unchanged = c.Written+v.Written, c.Deleted+v.Deleted, c.Unchanged+v.Unchanged
	}
	p.Transactions += q.Transactions
	p.Rebuilt = append(p.Rebuilt, q.Rebuilt...)
	p.Rejected += q.Rejected
	p.Copy = p.Copy || q.Copy
	if q.Position != "" {
		p.Position = q.Position
	}
	p.Lag = q.Lag
	p.End = q.End
}

// SyncResult is what Sync did.
type SyncResult struct {
	// Checkpoint is the job's checkpoint as last saved.
	Checkpoint *load.Checkpoint
	// Total adds up every pass of this run.
	Total PassStats
	// Passes counts the passes of this run.
	Passes int
	// Interrupted: ctx ended the run (a signal) between two batches; what
	// was applied is saved, the rest is applied by the next run.
	Interrupted bool
}

// MethodChangedError: a job is continued with another method than it
// syncs with.
type MethodChangedError struct {
	Job, Then, Now string
}

func (e *MethodChangedError) Error() string {
	return fmt.Sprintf("sync job %q syncs with --method %s, not %s", e.Job, e.Then, e.Now)
}

// UntraceableError: the mapping has filters that logical sync cannot
// follow.
type UntraceableError struct {
	Filters []extract.UntraceableFilter
}

func (e *UntraceableError) Error() string {
	var b []byte
	for i, f := range e.Filters {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = fmt.Appendf(b, "%s: filter %q: %s", f.Node.Path, f.Node.Filter, f.Why)
	}
	return "logical sync cannot follow these filters (" + string(b) + "): use --method diff, which rebuilds every document each pass"
}

// SlotTakenError: a job without a checkpoint in this target finds its
// replication slot already there.
type SlotTakenError struct{ Job, Slot, Where string }

func (e *SlotTakenError) Error() string {
	return fmt.Sprintf("sync job %q has no checkpoint in %s, but its replication slot %s exists: another target's job of this name uses it (give this job another name), or the slot was left behind (remove it with `denorm sync --drop --job %s`)",
		e.Job, e.Where, e.Slot, e.Job)
}

// syncer is one Sync run's state.
type syncer struct {
	opt    SyncOptions
	src    *extract.Source
	plan   *mappings.Plan
	target load.Target
	writer load.Writer
	store  load.Checkpoints
	lease  *HeldLease
	cp     *load.Checkpoint
	lg     *extract.Logical
	fan    *fanout
	res    *SyncResult
	// copied: this run made the initial copy.
	copied bool
}

// CheckLogical checks that logical sync can follow plan: every filter is
// traceable (extract.UntraceableFilters, read in snap), and every table's
// replica identity gives the old values fan-out needs (read on the
// source).
func CheckLogical(ctx context.Context, snap *extract.Snapshot, lg *extract.Logical, plan *mappings.Plan) error {
	bad, err := extract.UntraceableFilters(ctx, snap, plan)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return &UntraceableError{Filters: bad}
	}
	needs := IdentityNeeds(plan)
	tables := make([]string, 0, len(needs))
	for t := range needs {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	ids, err := lg.ReplicaIdentity(ctx, tables)
	if err != nil {
		return err
	}
	var short []extract.ReplicaIdentity
	for i, id := range ids {
		if !id.Covers(needs[tables[i]]...) {
			short = append(short, id)
		}
	}
	if len(short) > 0 {
		return &extract.ReplicaIdentityError{Tables: short, Why: "sync needs the old values of the columns that place a row in its documents (join and key columns), to rebuild the documents a row leaves when it is updated or deleted"}
	}
	return nil
}

// Sync runs a sync job (see the file comment): it makes the initial copy
// when the job has none, then runs its passes. src must be the source the
// plan was resolved against. The target must take deletes of chosen
// documents (load.Caps.Delete).
func Sync(ctx context.Context, src *extract.Source, plan *mappings.Plan, target load.Target, opt SyncOptions) (*SyncResult, error) {
	opt.defaults()
	if !target.Caps().Delete {
		return nil, &load.UnsupportedError{Target: "directory", Op: "be synced (sync replaces and deletes chosen documents)"}
	}
	if opt.Method != load.SyncLogical && opt.Method != load.SyncDiff {
		return nil, fmt.Errorf("unknown sync method %q", opt.Method)
	}
	if opt.Follow && opt.Method != load.SyncLogical {
		return nil, errors.New("following changes needs --method logical; run diff passes with --every")
	}
	// One writer per job, as migrate: a second sync (or a migrate) of the
	// job waits for this one, and a run that lost the job stops and
	// never saves over its successor's checkpoint.
	lease, err := HoldLease(ctx, target.Checkpoints(), opt.Job, LeaseOptions{TTL: opt.LeaseTTL, Command: "sync", Notice: opt.Notice})
	if err != nil {
		return nil, err
	}
	defer lease.Release(context.WithoutCancel(ctx))
	ctx = lease.Context()
	s := &syncer{opt: opt, src: src, plan: plan, target: target, store: lease.Guard(target.Checkpoints()),
		lease: lease, fan: newFanout(plan), res: &SyncResult{Total: newPassStats(opt.Method)}}
	s.writer = &load.RetryWriter{Writer: target, Policy: s.retryPolicy(), Stop: ctx}
	if opt.Method == load.SyncLogical {
		lg, err := src.Logical(opt.Job)
		if err != nil {
			return nil, err
		}
		s.lg = lg
	}
	if err := s.prepare(ctx); err != nil {
		return s.res, err
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
		case opt.Method == load.SyncLogical:
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

// result ends a run: an error caused by ctx ending is an interruption.
func (s *syncer) result(ctx context.Context, err error) (*SyncResult, error) {
	s.res.Checkpoint = s.cp
	if lost := s.lease.Err(); lost != nil {
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

// prepare loads the job's checkpoint, or makes a fresh one.
func (s *syncer) prepare(ctx context.Context) error {
	hash, err := mappingHash(s.opt.Mapping)
	if err != nil {
		return err
	}
	cp, err := s.store.Load(ctx, s.opt.Job)
	if err != nil {
		return err
	}
	if cp == nil {
		s.cp = &load.Checkpoint{ID: s.opt.Job, Format: load.CheckpointFormat, Job: s.opt.Job, Partitions: 1, Workers: 1,
			MappingHash: hash, Mapping: s.opt.Mapping, Version: s.opt.Version, Phase: load.PhaseRunning, Started: time.Now().UTC()}
		return nil
	}
	switch {
	case cp.Partitions > 1:
		return fmt.Errorf("job %q is one partition of a partitioned migration: sync continues whole jobs only", s.opt.Job)
	case cp.MappingHash != hash:
		return &MappingChangedError{ID: cp.ID, Then: cp.MappingHash, Now: hash}
	case cp.Sync != nil && cp.Sync.Method == load.SyncLogical && s.opt.Method == load.SyncDiff:
		// The slot would hold the source's WAL forever.
		return &MethodChangedError{Job: s.opt.Job, Then: load.SyncLogical, Now: load.SyncDiff}
	}
	if cp.Sync != nil && cp.Sync.Method == load.SyncLogical && cp.Sync.Position != "" {
		if _, err := extract.ParseLSN(cp.Sync.Position); err != nil {
			return &load.CorruptCheckpointError{ID: cp.ID, Where: s.store.Where(), Reason: fmt.Errorf("position %q: %w", cp.Sync.Position, err)}
		}
	}
	cp.Version = s.opt.Version
	s.cp = cp
	return nil
}

// save stores the checkpoint, retrying transient failures; an interrupt
// does not cut it short.
func (s *syncer) save(ctx context.Context) error {
	s.cp.Updated = time.Now().UTC()
	wctx := context.WithoutCancel(ctx)
	return load.Retry(wctx, s.retryPolicy(), func() error { return s.store.Save(wctx, s.cp) })
}

// start makes the job ready for passes: for a new job the initial copy;
// for logical, the slot (created, or left by an interrupted setup and
// created again) and a copy joined to it; an interrupted copy resumed.
func (s *syncer) start(ctx context.Context) error {
	cp := s.cp
	switch s.opt.Method {
	case load.SyncDiff:
		fresh := cp.Sync == nil && cp.Updated.IsZero()
		if cp.Sync == nil {
			cp.Sync = &load.SyncState{Method: load.SyncDiff}
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
	if cp.Sync != nil && cp.Sync.Method == load.SyncLogical && cp.Sync.Position != "" {
		if cp.Phase == load.PhaseDone {
			return nil
		}
		// An initial copy was interrupted: resume it from a new snapshot.
		// The stream starts at the slot's consistent point, before this
		// snapshot: every change since the copy began is applied again.
		snap, err := s.src.Snapshot(ctx)
		if err != nil {
			return err
		}
		defer closeSnap(snap)
		return s.copy(ctx, snap)
	}
	// The slot: new, or left by a setup interrupted before it saved the
	// position (the checkpoint says so), which is dropped and made again.
	replace := cp.Sync != nil && cp.Sync.Method == load.SyncLogical
	ss, err := setupSlot(ctx, s.lg, s.plan, s.store, cp, replace, s.retryPolicy(), s.opt.Debug)
	if err != nil {
		return err
	}
	defer ss.Release(context.WithoutCancel(ctx))
	snap, err := s.src.Adopt(ctx, ss.Snapshot)
	if err != nil {
		return err
	}
	defer closeSnap(snap)
	s.opt.Notice(fmt.Sprintf("replication slot %s created at %s; copying its snapshot", s.lg.Name, ss.Consistent))
	return s.copy(ctx, snap)
}

// setupSlot creates the job's replication slot and publication and
// records them in cp, saved before and after: first with no position, so
// that a run interrupted in between knows the slot it finds is its own
// (replace: drop it and make it again), then with the slot's consistent
// point. The copy starts over, joined to the new slot: what an earlier
// run or a migrate copied predates it. Without replace, an existing slot
// is a *SlotTakenError. The caller releases the result.
func setupSlot(ctx context.Context, lg *extract.Logical, plan *mappings.Plan, store load.Checkpoints, cp *load.Checkpoint, replace bool, retry load.RetryPolicy, debug func(string, ...any)) (*extract.SlotSnapshot, error) {
	if replace {
		if err := lg.Drop(ctx); err != nil {
			return nil, err
		}
	} else if _, err := lg.Status(ctx); err == nil || !errors.As(err, new(*extract.SlotMissingError)) {
		if err != nil {
			return nil, err
		}
		return nil, &SlotTakenError{Job: cp.Job, Slot: lg.Name, Where: store.Where()}
	}
	save := func() error {
		cp.Updated = time.Now().UTC()
		wctx := context.WithoutCancel(ctx)
		return load.Retry(wctx, retry, func() error { return store.Save(wctx, cp) })
	}
	cp.Sync = &load.SyncState{Method: load.SyncLogical, Slot: lg.Name}
	cp.Streams, cp.Phase, cp.Collection = nil, load.PhaseRunning, ""
	if err := save(); err != nil {
		return nil, err
	}
	tables := make([]string, 0)
	for _, t := range plan.Tables() {
		tables = append(tables, t.QualifiedName())
	}
	ss, err := lg.Setup(ctx, tables)
	if err != nil {
		return nil, err
	}
	debug("slot created", "slot", lg.Name, "consistent", ss.Consistent)
	cp.Sync.Position = ss.Consistent.String()
	if err := save(); err != nil {
		_ = ss.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	return ss, nil
}

// StartLogical begins a migration that sync continues with --method
// logical (migrate --sync logical): it checks that logical sync can follow
// the plan (CheckLogical), creates the job's slot (setupSlot; replace
// drops one the job had, for a restart) and returns the snapshot the slot
// exported, which the migration must read, and a release to call once it
// is done.
func StartLogical(ctx context.Context, src *extract.Source, plan *mappings.Plan, store load.Checkpoints, cp *load.Checkpoint, replace bool) (*extract.Snapshot, func(), error) {
	lg, err := src.Logical(cp.Job)
	if err != nil {
		return nil, nil, err
	}
	check, err := src.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	err = CheckLogical(ctx, check, lg, plan)
	closeSnap(check)
	if err != nil {
		return nil, nil, err
	}
	ss, err := setupSlot(ctx, lg, plan, store, cp, replace, load.DefaultRetry, func(string, ...any) {})
	if err != nil {
		return nil, nil, err
	}
	snap, err := src.Adopt(ctx, ss.Snapshot)
	if err != nil {
		_ = ss.Release(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	return snap, func() {
		closeSnap(snap)
		_ = ss.Release(context.WithoutCancel(ctx))
	}, nil
}

// copy makes the initial copy from snap: by migrate's runner, resumable
// inside a table, when the job's collections are empty in the target (or
// such a copy is being resumed: the checkpoint has its streams); else by
// a diff, which also deletes the documents the source no longer gives.
func (s *syncer) copy(ctx context.Context, snap *extract.Snapshot) error {
	st := newPassStats(s.opt.Method)
	st.Copy = true
	byRun := len(s.cp.Streams) > 0
	if !byRun {
		empty, err := s.empty(ctx)
		if err != nil {
			return err
		}
		byRun = empty
	}
	switch {
	case byRun:
		s.opt.Notice("initial copy: migrating every collection")
		stats, err := Run(ctx, snap, s.plan, s.target, JobOptions{
			Options: Options{BatchSize: s.opt.BatchSize, Reject: func(r transform.Reject) {
				st.Rejected++
				if s.opt.Reject != nil {
					s.opt.Reject(r)
				}
			}},
			Workers: 1, Partitions: 1, Checkpoints: tellingStore{s.store, s.opt.Debug}, Checkpoint: s.cp, Source: s.src, Retry: s.retryPolicy(), Notice: s.opt.Notice,
		})
		if err != nil {
			return err
		}
		for _, x := range stats {
			st.coll(x.Collection).Written += x.Written
		}
	default:
		s.opt.Notice("initial copy: the target holds documents already; writing the differences")
		if err := s.diff(ctx, snap, s.allEntries(), &st); err != nil {
			return err
		}
	}
	s.cp.Phase, s.cp.Collection = load.PhaseDone, ""
	s.copied = true
	return s.passDone(ctx, &st, snap)
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
		st := newPassStats(load.SyncDiff)
		snap, err := s.src.Snapshot(ctx)
		if err != nil {
			return false, err
		}
		defer closeSnap(snap)
		if err := s.diff(ctx, snap, s.allEntries(), &st); err != nil {
			return false, err
		}
		return true, s.passDone(ctx, &st, snap)
	})
}

// passDone records a pass in the checkpoint and saves it.
func (s *syncer) passDone(ctx context.Context, st *PassStats, snap *extract.Snapshot) error {
	st.End = time.Now()
	ss := s.cp.Sync
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
	st.Position = ss.Position
	if err := s.save(ctx); err != nil {
		return err
	}
	s.res.Total.add(*st)
	if s.opt.Pass != nil {
		s.opt.Pass(*st)
	}
	return nil
}

// write writes docs of coll, WriteBatch at a time, retrying transient
// failures; a write in flight completes when ctx ends.
func (s *syncer) write(ctx context.Context, coll string, docs []transform.Document, st *PassStats) error {
	for chunk := range slices.Chunk(docs, s.opt.WriteBatch) {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.Retry.For+time.Minute)
		rejects, err := s.writer.Write(wctx, coll, chunk)
		cancel()
		if err != nil {
			return err
		}
		s.rejects(rejects, st)
		st.coll(coll).Written += int64(len(chunk) - len(rejects))
		s.opt.Debug("documents written", "collection", coll, "documents", len(chunk))
	}
	return nil
}

// delete deletes what sel picks in coll, retrying transient failures.
func (s *syncer) delete(ctx context.Context, coll string, sel load.Selection, st *PassStats) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.Retry.For+time.Minute)
	defer cancel()
	var n int64
	err := load.Retry(wctx, s.retryPolicy(), func() error {
		var err error
		n, err = s.target.Delete(wctx, coll, sel)
		return err
	})
	if err != nil {
		return err
	}
	st.coll(coll).Deleted += max(n, 0)
	s.opt.Debug("documents deleted", "collection", coll, "documents", n)
	return nil
}

func (s *syncer) rejects(rs []transform.Reject, st *PassStats) {
	for _, r := range rs {
		st.Rejected++
		if s.opt.Reject != nil {
			s.opt.Reject(r)
		}
	}
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

// DropSync removes a job's change capture (its replication slot and
// publication, when it has them) and its checkpoint: the next sync of the
// job starts over with a new initial copy (a diff, when the target holds
// documents). The documents stay.
func DropSync(ctx context.Context, src *extract.Source, target load.Target, job string) error {
	lg, err := src.Logical(job)
	if err != nil {
		return err
	}
	// Not while a run of the job holds it (its slot would vanish under it).
	lease, err := HoldLease(ctx, target.Checkpoints(), job, LeaseOptions{Command: "sync --drop"})
	if err != nil {
		return err
	}
	defer lease.Release(context.WithoutCancel(ctx))
	if err := lg.Drop(ctx); err != nil {
		return err
	}
	return lease.Guard(target.Checkpoints()).Delete(ctx, job)
}

// tellingStore is a checkpoint store that tells debug of each checkpoint
// saved: the initial copy's progress, for -v.
type tellingStore struct {
	load.Checkpoints
	debug func(string, ...any)
}

func (t tellingStore) Save(ctx context.Context, cp *load.Checkpoint) error {
	if err := t.Checkpoints.Save(ctx, cp); err != nil {
		return err
	}
	t.debug("copy checkpoint saved", "collection", cp.Collection)
	return nil
}
