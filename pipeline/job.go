package pipeline

// Jobs: what a named, resumable run starts from - a fresh checkpoint, the
// one it resumes, or a refusal - decided from the checkpoint the target
// holds. The refusals are typed errors whose fields the command turns
// into its messages and hints.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// JobSpec is a resumable run as asked for.
type JobSpec struct {
	// Name is the job's name; Partition of Partitions is the share of
	// every root table this run handles (Partitions <= 1: all of it), and
	// Workers the number of parts each is read as.
	Name                  string
	Partition, Partitions int
	Workers               int
	// Resume continues the job from its checkpoint; ResumeOrStart does
	// too, but starts the job fresh when it has no checkpoint (a restarted
	// pod, a scheduler). Restart deletes the checkpoint - and, unless the
	// run is one partition of several, every document of the plan's
	// collections - and starts over. With none of them, the job starts
	// fresh, unless an unfinished checkpoint exists.
	Resume, ResumeOrStart, Restart bool
	// Mapping is the mapping file's path: the checkpoint records it and
	// the hash of its contents, which a resume must find unchanged.
	Mapping string
	// Version is denorm's version, recorded in the checkpoint.
	Version string
	// Lease tunes the job's lease (one writer per job, see HoldLease).
	Lease LeaseOptions
	// Drop: the run drops the job's collections (migrate --drop) after
	// PrepareJob, so a Restart leaves deleting their documents to it.
	Drop bool
	// Notice, when set, is told what a Restart deleted.
	Notice func(msg string)
}

// Job is a prepared job: its lease, its checkpoint store and the
// checkpoint Run starts from (JobOptions.Checkpoints and Checkpoint).
type Job struct {
	ID string
	// Lease is the job's lease, held from PrepareJob on: run the job
	// under Lease.Context() and Release it when the run ends.
	Lease *HeldLease
	// Store is the target's checkpoint store, guarded by the lease.
	Store      load.Checkpoints
	Checkpoint *load.Checkpoint
	// Restarted: the job's checkpoint was deleted (and its documents, see
	// JobSpec.Restart). Resumed: Checkpoint is the one the target held,
	// written by denorm ResumedVersion.
	Restarted      bool
	Resumed        bool
	ResumedVersion string
}

// NoCheckpointError is a resume of a job the target holds no checkpoint
// of: there is nothing to resume.
type NoCheckpointError struct {
	// ID is the checkpoint's id (load.CheckpointID), Where the store.
	ID, Where string
}

func (e *NoCheckpointError) Error() string {
	return fmt.Sprintf("job %q has no checkpoint in %s: nothing to resume", e.ID, e.Where)
}

// MappingChangedError is a resume refused because the mapping file is not
// the one the job started with: documents of two mappings would mix.
type MappingChangedError struct {
	ID string
	// Then and Now are the sha256 of the file's contents (hex).
	Then, Now string
}

func (e *MappingChangedError) Error() string {
	return fmt.Sprintf("job %q cannot resume: the mapping file changed since the job started (sha256 %.12s then, %.12s now), so documents of two mappings would mix", e.ID, e.Then, e.Now)
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

// JobFinishedError is a resume of a job that is complete: nothing to do.
type JobFinishedError struct {
	ID       string
	Finished time.Time
}

func (e *JobFinishedError) Error() string {
	return fmt.Sprintf("job %s finished at %s: nothing to resume", e.ID, e.Finished.Format(time.RFC3339))
}

// JobUnfinishedError is a fresh start of a job whose checkpoint says it is
// unfinished: it must be resumed or restarted.
type JobUnfinishedError struct {
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
func (e *JobUnfinishedError) At() string {
	if e.Indexes {
		return fmt.Sprintf("loading done, %d of %d indexes built", e.IndexesBuilt, e.IndexesTotal)
	}
	return fmt.Sprintf("at collection %q", e.Collection)
}

func (e *JobUnfinishedError) Error() string {
	return fmt.Sprintf("job %q in %s is unfinished (%s, last checkpoint %s)", e.ID, e.Where, e.At(), e.Updated.Format(time.RFC3339))
}

// PrepareJob takes the job's lease (HoldLease: a job another process runs
// is a *load.LeaseHeldError), loads the job's checkpoint from target's
// store and decides what the run starts from; on Restart it deletes what
// the job wrote (clearForRestart). It returns *NoCheckpointError,
// *MappingChangedError, *WorkersChangedError, *JobFinishedError or
// *JobUnfinishedError for a run that must not go on, and a checkpoint
// that cannot be read as load.Load's *load.CorruptCheckpointError
// (Restart ignores it). On error the lease is released; otherwise the
// caller releases Job.Lease.
func PrepareJob(ctx context.Context, target load.Target, plan *mappings.Plan, spec JobSpec) (job *Job, err error) {
	hash, err := mappingHash(spec.Mapping)
	if err != nil {
		return nil, err
	}
	id := load.CheckpointID(spec.Name, spec.Partition, spec.Partitions)
	if spec.Lease.Command == "" {
		spec.Lease.Command = "migrate"
	}
	lease, err := HoldLease(ctx, target.Checkpoints(), id, spec.Lease)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = lease.Release(context.WithoutCancel(ctx))
		}
	}()
	store := lease.Guard(target.Checkpoints())
	old, err := store.Load(ctx, id)
	var corrupt *load.CorruptCheckpointError
	switch {
	case errors.As(err, &corrupt) && spec.Restart:
		old = nil
	case err != nil:
		return nil, err
	}
	job = &Job{ID: id, Lease: lease, Store: store}
	fresh := &load.Checkpoint{ID: id, Format: load.CheckpointFormat, Job: spec.Name, Partition: spec.Partition, Partitions: spec.Partitions,
		Workers: spec.Workers, MappingHash: hash, Mapping: spec.Mapping, Version: spec.Version, Phase: load.PhaseRunning,
		Started: time.Now().UTC()}
	switch {
	case spec.Restart:
		forget := func() error { return store.Delete(ctx, id) }
		if spec.Partitions > 1 || spec.Drop {
			// Partitions share the collections: a partition restarting
			// alone must not delete the others' documents. --drop
			// deletes them itself.
			if err := forget(); err != nil {
				return nil, err
			}
		} else {
			// A whole job restarting must not delete documents while
			// any partition runs.
			if err := partitionsIdle(ctx, store, spec.Name); err != nil {
				return nil, err
			}
			if err := clearForRestart(ctx, target, plan, spec.Notice, forget); err != nil {
				return nil, err
			}
		}
		job.Checkpoint, job.Restarted = fresh, true
		return job, nil
	case spec.ResumeOrStart && old == nil:
		job.Checkpoint = fresh
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
		if old.Phase == load.PhaseDone {
			return nil, &JobFinishedError{ID: id, Finished: old.Updated}
		}
		job.Resumed, job.ResumedVersion = true, old.Version
		old.Resumes++
		old.Version = spec.Version
		job.Checkpoint = old
		return job, nil
	case old != nil && old.Phase != load.PhaseDone:
		built, total := old.IndexesBuilt()
		return nil, &JobUnfinishedError{ID: id, Where: store.Where(), Collection: old.Collection, Updated: old.Updated,
			Indexes: old.Phase == load.PhaseIndexes, IndexesBuilt: built, IndexesTotal: total}
	}
	job.Checkpoint = fresh
	return job, nil
}

// TargetCollections are the collections plan writes, as Target.Prepare
// takes them: a shared collection (its entries have a discriminator) with
// the document types plan writes into it, which are all a run replaces
// there; any other collection whole.
func TargetCollections(plan *mappings.Plan) []load.Collection {
	var out []load.Collection
	at := map[string]int{}
	for _, cp := range plan.Collections {
		i, ok := at[cp.Name]
		if !ok {
			i = len(out)
			at[cp.Name] = i
			out = append(out, load.Collection{Name: cp.Name})
		}
		if cp.Discriminator != "" {
			out[i].Types = append(out[i].Types, transform.Field{Key: cp.Discriminator, Value: cp.DiscriminatorValue})
		}
	}
	return out
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

// clearForRestart forgets the job's checkpoint and deletes what the job
// wrote before it starts over, so that documents of rows deleted since do
// not linger: every document of each of its collections, except in a
// collection shared by several document types (discriminated), where only
// the job's own types go - another job may write the others. On a server
// target only documents known to be the job's are deleted (own.go): a
// collection holding others refuses the restart, deleting nothing and
// keeping the checkpoint (*ForeignDocumentsError).
func clearForRestart(ctx context.Context, t load.Target, plan *mappings.Plan, notice func(string), forget func() error) error {
	if t.Owners() != nil {
		return clearOwned(ctx, t, plan, notice, forget)
	}
	if err := forget(); err != nil {
		return err
	}
	if _, err := clearDocuments(ctx, t, plan); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// clearDocuments deletes the documents plan writes (see clearForRestart)
// and returns how many (-1: some collection was emptied without counting,
// see load.Target.Delete).
func clearDocuments(ctx context.Context, t load.Target, plan *mappings.Plan) (int64, error) {
	cleared := map[string]bool{}
	var n int64
	uncounted := false
	for _, cp := range plan.Collections {
		var sel load.Selection
		switch {
		case cp.Discriminator != "":
			sel.Match = []transform.Field{{Key: cp.Discriminator, Value: cp.DiscriminatorValue}}
		case cleared[cp.Name]:
			continue
		default:
			cleared[cp.Name] = true
		}
		d, err := t.Delete(ctx, cp.Name, sel)
		if d < 0 {
			uncounted = true
		} else {
			n += d
		}
		if err != nil {
			return n, err
		}
	}
	if uncounted {
		return -1, nil
	}
	return n, nil
}

// partitionsIdle returns a *load.LeaseHeldError when a partition of job
// name (checkpoint id "<name>.<i>of<N>") holds a live lease.
func partitionsIdle(ctx context.Context, store load.Checkpoints, name string) error {
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
		if _, err := fmt.Sscanf(rest, "%dof%d", &i, &n); err == nil && load.CheckpointID(name, i, n) == l.ID {
			return &load.LeaseHeldError{ID: l.ID, Where: store.Where(), Holder: l.Holder, Expiring: !l.Holder.Expires.IsZero()}
		}
	}
	return nil
}
