// Package pipeline runs a migration: it streams batches from extract,
// builds documents with transform and writes them with a load sink, in
// three stages joined by bounded channels, so memory is bounded by
// (stages + queue depth) x batch size whatever the table size.
package pipeline

import (
	"context"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
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
	Reject func(Rejected)
}

// Rejected is one source row (or bucket page) that did not reach the target.
type Rejected struct {
	Collection string
	Source     string
	Err        error
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

// Migrate writes every collection entry of plan, reading from snap into
// sink. Entries are processed one after another inside the same snapshot.
func Migrate(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, sink load.Sink, opt Options) ([]Stats, error) {
	names := make([]string, 0, len(plan.Collections))
	for _, c := range plan.Collections {
		names = append(names, c.Name)
	}
	if err := sink.Prepare(ctx, names); err != nil {
		return nil, err
	}
	var all []Stats
	for _, cp := range plan.Collections {
		st, err := collection(ctx, snap, cp, sink, opt)
		all = append(all, st)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

func collection(ctx context.Context, snap *extract.Snapshot, cp *mappings.CollectionPlan, sink load.Sink, opt Options) (Stats, error) {
	start := time.Now()
	st := Stats{Collection: cp.Name, Table: cp.Root.Table.Name, Estimate: cp.Root.Table.Estimate}
	reject := func(r Rejected) {
		st.Failed++
		if opt.Reject != nil {
			opt.Reject(r)
		}
	}
	err := Produce(ctx, snap, cp, ProduceOptions{BatchSize: opt.BatchSize}, func(b Built) error {
		for _, e := range b.Errors {
			reject(Rejected{Collection: e.Collection, Source: e.Source, Err: e.Err})
		}
		if len(b.Docs) > 0 {
			rejects, err := sink.Write(ctx, cp.Name, b.Docs)
			if err != nil {
				return err
			}
			for _, r := range rejects {
				reject(Rejected{Collection: r.Collection, Source: r.Source, Err: r.Err})
			}
			st.Written += int64(len(b.Docs) - len(rejects))
		}
		st.Rows += int64(b.Rows)
		st.Queries += b.Queries
		st.Elapsed = time.Since(start)
		if opt.Progress != nil {
			opt.Progress(st)
		}
		return nil
	})
	st.Elapsed = time.Since(start)
	st.Done = err == nil
	if err != nil {
		return st, err
	}
	if opt.Progress != nil {
		opt.Progress(st)
	}
	return st, nil
}
