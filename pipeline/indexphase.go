package pipeline

// The index phase of a job: once every collection is loaded, the
// mapping's indexes are created and the checkpoint records, index by
// index, whether the target holds each as declared. The job is done only
// when it holds all of them: an interrupt, a failure of the target or an
// index the target refuses (a unique index the documents break, one that
// exists with other options) leave the job in phase indexes, and
// resuming it creates them again (those that exist as declared are left
// alone; those that exist otherwise are refused again, by name).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform/report"
)

// IndexPhase configures Run's index phase (JobOptions.Indexes).
type IndexPhase struct {
	// Notice, when set, is told which indexes are created, collection by
	// collection.
	Notice func(msg string)
	// Created, when set, is told of each collection whose indexes were
	// created (also when some were refused).
	Created func(IndexesCreated)
}

// IndexPhaseError is a job whose index phase ended with indexes the
// target does not hold as declared: it stays in phase indexes, and
// resuming it creates them again.
type IndexPhaseError struct {
	// Err holds the refusals (*load.IndexError, joined) and checks that
	// found an index otherwise than declared.
	Err error
	// Built of Total indexes are held as declared.
	Built, Total int
	Checkpoint   *job.Record
}

func (e *IndexPhaseError) Error() string {
	return fmt.Sprintf("%v\n%d of %s built", e.Err, e.Built, report.Plural(e.Total, "index", "indexes"))
}

func (e *IndexPhaseError) Unwrap() error { return e.Err }

// indexes runs the index phase (see the top of this file). It returns an
// *InterruptedError when ctx ends, a *TargetError when the target fails,
// an *IndexPhaseError when indexes are missing at the end.
func (r *runner) indexes(ctx context.Context) error {
	old := map[string]bool{}
	for _, ix := range r.job.Record().Indexes {
		old[ix.Collection+"\x00"+ix.Name] = ix.Built
	}
	var want []job.IndexState
	for _, set := range r.plan.Indexes {
		for _, ix := range set.Indexes {
			want = append(want, job.IndexState{Collection: set.Collection, Name: ix.Name, Built: old[set.Collection+"\x00"+ix.Name]})
		}
	}
	if len(want) == 0 {
		r.job.Update(func(rec *job.Record) { rec.Indexes = nil })
		return nil
	}
	r.job.Update(func(rec *job.Record) { rec.Phase, rec.Collection, rec.Indexes = job.PhaseIndexes, "", want })
	if err := r.save(ctx); err != nil {
		return r.targetError(err)
	}
	var refused []error
	for _, set := range r.plan.Indexes {
		if len(set.Indexes) == 0 {
			continue
		}
		if ctx.Err() != nil {
			return r.interrupted(ctx)
		}
		errs, err := r.indexSet(ctx, set)
		if err != nil {
			return err
		}
		refused = append(refused, errs...)
	}
	if len(refused) > 0 {
		rec := r.job.Record()
		built, total := rec.IndexesBuilt()
		return &IndexPhaseError{Err: errors.Join(refused...), Built: built, Total: total, Checkpoint: rec}
	}
	return nil
}

// indexSet creates one collection's indexes, then records which of them
// the target holds as declared (also after an interrupt: within the
// grace period) and saves the checkpoint. It returns the indexes refused
// or found otherwise than declared, and the error that ends the phase.
func (r *runner) indexSet(ctx context.Context, set mappings.IndexSet) ([]error, error) {
	start := time.Now()
	names := make([]string, len(set.Indexes))
	for i, ix := range set.Indexes {
		names[i] = ix.Name
	}
	if n := r.opt.Indexes.Notice; n != nil {
		n(fmt.Sprintf("creating %s on %s: %s", report.Plural(len(names), "index", "indexes"), set.Collection, strings.Join(names, ", ")))
	}
	err := load.Retry(ctx, r.retryPolicy(), func() error { return r.target.CreateIndexes(ctx, set.Collection, set.Indexes) })
	var (
		refused []error
		ie      *load.IndexError
	)
	if err != nil && errors.As(err, &ie) {
		refused = append(refused, err)
	}
	// What the target holds now, whatever happened: an interrupted or
	// failed command may have created some of them.
	gctx, cancel := job.GraceContext(ctx, r.opt.Grace)
	checks, cerr := checkIndexSet(gctx, r.target, set)
	cancel()
	if cerr == nil {
		r.job.Update(func(rec *job.Record) {
			for _, c := range checks {
				for i := range rec.Indexes {
					if s := &rec.Indexes[i]; s.Collection == c.Collection && s.Name == c.Index {
						s.Built = c.State == IndexOK
					}
				}
			}
		})
	}
	serr := r.save(ctx)
	switch {
	case ctx.Err() != nil:
		return nil, r.interrupted(ctx)
	case err != nil && ie == nil:
		return nil, r.targetError(sinkError{fmt.Errorf("create the indexes of %q: %w", set.Collection, err)})
	case cerr != nil:
		return nil, r.targetError(sinkError{fmt.Errorf("list the indexes of %q: %w", set.Collection, cerr)})
	case serr != nil:
		return nil, r.targetError(serr)
	}
	if err == nil {
		// Created without a refusal, yet not as declared: say how.
		for _, c := range checks {
			switch c.State {
			case IndexMissing:
				refused = append(refused, fmt.Errorf("index %s (%s) on %q: the target does not list it after creating it", c.Index, c.Keys, set.Collection))
			case IndexDifferent:
				refused = append(refused, fmt.Errorf("index %s (%s) on %q is not as declared after creating it: %s; drop it and resume", c.Index, c.Keys, set.Collection, c.Detail))
			}
		}
	}
	if created := r.opt.Indexes.Created; created != nil {
		ic := IndexesCreated{Collection: set.Collection, Indexes: names, Elapsed: time.Since(start)}
		for _, c := range checks {
			if c.State != IndexOK {
				ic.Missing = append(ic.Missing, c.Index)
			}
		}
		created(ic)
	}
	return refused, nil
}

// interrupted is the *InterruptedError of a run whose context ended,
// with the checkpoint saved (within the grace period) where it stands.
func (r *runner) interrupted(ctx context.Context) error {
	serr := r.save(ctx)
	return &InterruptedError{Checkpoint: r.job.Record(), Cause: context.Cause(ctx), SaveErr: serr}
}
