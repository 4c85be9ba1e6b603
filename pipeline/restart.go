package pipeline

// Restarts: what a job wrote is deleted before it starts over
// (job.Spec.Clear), and the collections a run writes.

import (
	"context"
	"fmt"

	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// PrepareJob prepares the job spec names (job.Prepare), whose restart
// deletes what the job wrote to plan's collections (clearForRestart;
// notice, when set, is told what) unless spec.Shared. A fresh record
// keeps the fingerprints of plan's collections, which a sync continuing
// the job compares its mapping's with.
func PrepareJob(ctx context.Context, target load.Target, plan *mappings.Plan, spec job.Spec, notice func(string)) (*job.Job, error) {
	spec.Prints = mappings.Fingerprints(plan)
	spec.Clear = func(ctx context.Context, forget func() error) error {
		return clearForRestart(ctx, target, plan, notice, forget)
	}
	return job.Prepare(ctx, target, spec)
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
