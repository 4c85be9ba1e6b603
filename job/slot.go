package job

// The replication slot of a logical sync job: made with the record saved
// before and after (so a run interrupted in between knows a slot it finds
// is its own), and dropped with the record (sync --drop-slot).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// SlotTakenError: a job without a record in this target finds its
// replication slot already there.
type SlotTakenError struct{ Job, Slot, Where string }

func (e *SlotTakenError) Error() string {
	return fmt.Sprintf("sync job %q has no checkpoint in %s, but its replication slot %s exists: another target's job of this name uses it (give this job another name), or the slot was left behind (remove it with `denorm sync --drop-slot --job %s`)",
		e.Job, e.Where, e.Slot, e.Job)
}

// StepSlotCreated is the step SetupSlot tells its debug of: the slot
// exists, its position is not saved yet.
const StepSlotCreated = "slot created"

// SetupSlot creates the job's replication slot and publication for the
// tables plan reads and records them, saving the record before and
// after: first with no position, so that a run interrupted in between
// knows the slot it finds is its own (replace: drop it and make it
// again), then at the slot's consistent point. The job's copy starts
// over (its streams are reset), joined to the new slot: what an earlier
// run copied predates it. Without replace, an existing slot is a
// *SlotTakenError. debug is told "slot created"; waiting (when set), while
// the slot waits for transactions open on the source to end. The caller
// releases the result.
// CheckSlot checks, for a logical job that has no slot of its own yet
// (neither a position nor a setup in progress: SetupSlot will make one),
// what SetupSlot would refuse once the run made other things: a slot of
// the job's name that exists already (*SlotTakenError) and a role that
// cannot connect for replication. A job with a slot is not checked: its
// stream tells a lost slot, and recovers from it. Call it before making
// anything on the target (indexes, shard keys).
func (j *Job) CheckSlot(ctx context.Context, lg *extract.Logical) error {
	j.mu.Lock()
	rec := j.rec
	j.mu.Unlock()
	if rec.HasPosition() || rec.Logical() {
		return nil
	}
	if _, err := lg.Status(ctx); err == nil || !errors.As(err, new(*extract.SlotMissingError)) {
		if err != nil {
			return err
		}
		return &SlotTakenError{Job: rec.Job, Slot: lg.Name, Where: j.Where()}
	}
	return lg.CheckReplication(ctx)
}

func (j *Job) SetupSlot(ctx context.Context, lg *extract.Logical, plan *mappings.Plan, replace bool, debug func(string, ...any), waiting func(string)) (*extract.SlotSnapshot, error) {
	if replace {
		if err := lg.Drop(ctx); err != nil {
			return nil, err
		}
	} else if _, err := lg.Status(ctx); err == nil || !errors.As(err, new(*extract.SlotMissingError)) {
		if err != nil {
			return nil, err
		}
		return nil, &SlotTakenError{Job: j.rec.Job, Slot: lg.Name, Where: j.Where()}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rec.Sync = &Sync{Method: SyncLogical, Slot: lg.Name}
	j.rec.Streams, j.rec.Phase, j.rec.Collection = nil, PhaseRunning, ""
	if err := j.save(ctx); err != nil {
		return nil, err
	}
	tables := make([]string, 0)
	for _, t := range plan.Tables() {
		tables = append(tables, t.QualifiedName())
	}
	ss, err := lg.SetupWaiting(ctx, tables, waiting)
	if err != nil {
		return nil, err
	}
	debug(StepSlotCreated, "slot", lg.Name, "consistent", ss.Consistent)
	j.rec.Sync.Position = ss.Consistent
	if err := j.save(ctx); err != nil {
		_ = ss.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	return ss, nil
}

// StartLogical begins a migration that sync continues with --method
// logical (migrate --sync logical): it checks that logical sync can follow
// the plan (extract.CheckLogical), creates the job's slot (SetupSlot;
// replace drops one the job had, for a restart) and returns the snapshot
// the slot exported, which the migration must read, and a release to
// call once it is done. waiting is told while the slot waits for open
// transactions (SetupSlot).
func (j *Job) StartLogical(ctx context.Context, src *extract.Source, plan *mappings.Plan, replace bool, waiting func(string)) (*extract.Snapshot, func(), error) {
	lg, err := src.Logical(j.rec.Job)
	if err != nil {
		return nil, nil, err
	}
	check, err := src.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	err = extract.CheckLogical(ctx, check, lg, plan)
	closeSnap(check)
	if err != nil {
		return nil, nil, err
	}
	ss, err := j.SetupSlot(ctx, lg, plan, replace, func(string, ...any) {}, waiting)
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

// DropSync removes a sync job's change capture (its replication slot and
// publication, when it has them) and its record: the next sync of the job
// starts over with a new initial copy (a diff, when the target holds
// documents). The documents stay.
func DropSync(ctx context.Context, src *extract.Source, target load.Target, name string) error {
	lg, err := src.Logical(name)
	if err != nil {
		return err
	}
	// Not while a run of the job holds it (its slot would vanish under it).
	lease, err := HoldLease(ctx, target.Records(), name, LeaseOptions{Command: "sync --drop-slot"})
	if err != nil {
		return err
	}
	defer lease.Release(context.WithoutCancel(ctx))
	if err := lg.Drop(ctx); err != nil {
		return err
	}
	return lease.Guard(target.Records()).Delete(ctx, name)
}

func closeSnap(s *extract.Snapshot) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Close(ctx)
}
