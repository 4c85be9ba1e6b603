package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// Migration is one migrate command's work: the plan, read from Snapshot,
// written to Target, as a job or not, with the phases around the load.
// Migrate runs it; the hooks let the caller tell what happens in its own
// words and refuse what its flags forbid.
type Migration struct {
	Snapshot *extract.Snapshot
	Plan     *mappings.Plan
	Target   load.Target
	// Job, when set, makes the run a job (job.Prepare): recorded,
	// leased, resumable. Nil: a run without a record. Migrate fills in
	// its Shared and Clear (a restart deletes what the job wrote).
	Job *job.Spec
	// Notice, when set, is told what a restart deleted.
	Notice func(msg string)
	// Drop drops the plan's collections before loading (DropCollections).
	Drop bool
	// Indexes is when the plan's indexes are made: IndexesAfter (the
	// job's last phase), IndexesBefore (before the first write; the last
	// phase checks them) or IndexesNone.
	Indexes string
	// Logical creates the job's replication slot and migrates the snapshot
	// it exports (StartLogical), so that sync --method logical continues
	// the job with no gap. Needs Job.
	Logical bool
	// Run holds the run's options (batch size, hooks, workers, partition,
	// checkpoint interval, retries, notices, grace); Migrate fills in the
	// job's store, checkpoint, lease and source, and the index phase.
	Run JobOptions
	// Info, when set, is told of shard keys and indexes made.
	Info func(msg string)

	// Prepared, when set, is called once the job is prepared, before
	// anything is written; an error stops the migration there.
	Prepared func(*job.Job) error
	// Store, when set, wraps the job's record store (a test gate).
	Store func(ctx context.Context, s load.RecordStore) load.RecordStore
	// Dropped, when set, is told what Drop did, collection by collection.
	Dropped func(Dropped)
	// SlotCreated, when set, is told of the replication slot made for
	// Logical (the job's checkpoint names it and its position).
	SlotCreated func(*job.Record)
	// Starting, when set, is called just before loading starts, with the
	// options Run is given (the caller may open its rejects file then);
	// an error stops the migration there.
	Starting func(*JobOptions) error
}

// MigrateResult is what Migrate did, also when it failed: as far as it got.
type MigrateResult struct {
	// Finished is a resumed job found finished: nothing was done.
	Finished *job.FinishedError
	// Job is the prepared job (nil without Migration.Job).
	Job       *job.Job
	Dropped   []string
	ShardKeys []ShardResult
	Indexes   []IndexesCreated
	Stats     []Stats
	// Started is when loading started.
	Started time.Time
	// Loaded: loading was started (Run was called).
	Loaded bool
	// LeaseErr is why the job's lease was lost during the run (the run
	// then stopped writing); ReleaseErr why it could not be released at
	// the end (it expires by itself).
	LeaseErr, ReleaseErr error
}

// Dropped is one thing DropCollections dropped: a collection, or the
// documents of one type (Type) in a shared collection.
type Dropped struct {
	Collection string
	// Type, for a shared collection: the type whose Deleted documents
	// were deleted; documents of other types and the indexes stay.
	Type    *transform.Field
	Deleted int64
	// Existed: the collection was there to drop (no Type).
	Existed bool
}

// ErrLogicalNeedsDelete is a Logical migration into a target that cannot
// delete chosen documents (a directory), which sync cannot keep current.
var ErrLogicalNeedsDelete = errors.New("logical sync needs a target that deletes chosen documents")

// NotLogicalError is a Logical migration resuming a job that was started
// without its slot: a slot made now would miss the changes since.
type NotLogicalError struct{ Job string }

func (e *NotLogicalError) Error() string {
	return "job " + e.Job + " was started without a replication slot"
}

// SlotError is a replication slot Logical could not make (or a plan
// logical sync cannot follow).
type SlotError struct{ Err error }

func (e *SlotError) Error() string { return e.Err.Error() }
func (e *SlotError) Unwrap() error { return e.Err }

// Migrate runs m: checks the plan against what the target can store
// (TargetProblems), prepares the job, drops, sets shard keys, makes the
// indexes before loading when asked, creates the replication slot for
// Logical, loads (Run) with the index phase last, and releases the lease
// before it returns; the caller closes the target. The result is filled
// as far as Migrate got, also with an error.
func Migrate(ctx context.Context, m Migration) (res *MigrateResult, err error) {
	res = &MigrateResult{}
	retry := m.Run.Retry
	if m.Info == nil {
		m.Info = func(string) {}
	}
	if m.Logical && m.Job == nil {
		return res, errors.New("a logical migration needs a job: the replication slot is named after it")
	}
	snap, plan, target := m.Snapshot, m.Plan, m.Target
	var jb *job.Job
	if ps := TargetProblems(plan, target.Caps()); len(ps) > 0 {
		return res, ps.Sorted() // before the job starts: nothing written
	}
	if m.Job != nil {
		spec := *m.Job
		spec.Shared = m.Drop
		prepared, err := PrepareJob(ctx, target, plan, spec, m.Notice)
		var finished *job.FinishedError
		if errors.As(err, &finished) {
			res.Finished = finished
			return res, nil
		}
		if err != nil {
			return res, err
		}
		jb, res.Job = prepared, prepared
		lease := jb.Lease
		defer func() {
			// Released before the caller closes the target: a server
			// lease is a document written through its connection.
			if res.Loaded {
				res.LeaseErr = lease.Err()
			}
			res.ReleaseErr = lease.Release(context.WithoutCancel(ctx))
		}()
		ctx = lease.Context() // ends when the lease is lost
		if m.Store != nil {
			jb.WrapStore(func(s load.RecordStore) load.RecordStore { return m.Store(ctx, s) })
		}
		if m.Prepared != nil {
			if err := m.Prepared(jb); err != nil {
				return res, err
			}
		}
	}
	if m.Drop {
		if res.Dropped, err = DropCollections(ctx, target, plan, m.Dropped); err != nil {
			return res, err
		}
	}
	if res.ShardKeys, err = ShardCollections(ctx, target, plan, retry, m.Info); err != nil {
		return res, err
	}
	if m.Indexes == IndexesBefore && (jb == nil || jb.Record().Phase != job.PhaseIndexes) {
		// (A job resumed in its index phase has its documents: the
		// phase builds the indexes, and words a refusal as its own.)
		if res.Indexes, err = CreateIndexes(ctx, target, plan, retry, m.Info); err != nil {
			return res, err
		}
	}
	if m.Logical {
		if !target.Caps().Delete {
			return res, ErrLogicalNeedsDelete
		}
		resuming := m.Job.Resume || m.Job.ResumeOrStart
		rec := jb.Record()
		switch {
		case rec.HasPosition():
			// A resumed migration: the slot has kept every change since
			// the migration began; sync applies them.
		case len(rec.Streams) > 0 && resuming:
			return res, &NotLogicalError{Job: m.Job.Name}
		default:
			replace := m.Job.Restart || rec.Logical()
			slotSnap, release, err := jb.StartLogical(ctx, snap.Source(), plan, replace, m.Notice)
			if err != nil {
				return res, &SlotError{Err: err}
			}
			defer release()
			if m.SlotCreated != nil {
				m.SlotCreated(jb.Record())
			}
			snap = slotSnap
		}
	}

	opt := m.Run
	opt.Job = jb
	opt.Source = snap.Source()
	if m.Indexes != IndexesNone {
		// The job's last phase: after loading, or, when they were made
		// before it, to check that the target still holds them.
		opt.Indexes = &IndexPhase{Notice: m.Info}
		if m.Indexes == IndexesAfter {
			opt.Indexes.Created = func(ic IndexesCreated) { res.Indexes = append(res.Indexes, ic) }
		}
	}
	if m.Starting != nil {
		if err := m.Starting(&opt); err != nil {
			return res, err
		}
	}
	res.Started, res.Loaded = time.Now(), true
	res.Stats, err = Run(ctx, snap, plan, target, opt)
	return res, err
}

// DropCollections drops the plan's collections and tells dropped (when
// set) of each. In a shared collection it deletes only the documents of
// the plan's types: the other types (another mapping's) and the
// collection's indexes stay. It returns the collections dropped, as far
// as it got.
func DropCollections(ctx context.Context, t load.Target, plan *mappings.Plan, dropped func(Dropped)) ([]string, error) {
	tell := func(d Dropped) {
		if dropped != nil {
			dropped(d)
		}
	}
	var out []string
	for _, c := range TargetCollections(plan) {
		name := c.Name
		if len(c.Types) > 0 {
			for _, typ := range c.Types {
				n, err := t.Delete(ctx, name, load.Selection{Match: []transform.Field{typ}})
				if err != nil {
					return out, err
				}
				tell(Dropped{Collection: name, Type: &typ, Deleted: n})
			}
			out = append(out, name)
			continue
		}
		existed, err := t.Drop(ctx, name)
		if err != nil {
			return out, err
		}
		if existed {
			out = append(out, name)
		}
		tell(Dropped{Collection: name, Existed: existed})
	}
	return out, nil
}
