// Package pipeline runs a migration: it streams batches from extract,
// builds documents with transform and writes them with a load sink, in
// three stages joined by bounded channels, so memory is bounded by
// (stages + queue depth) x batch size whatever the table size.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/denorm/denorm/extract"
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
	// Reject, when set, is called for every document that failed, whether
	// building it or writing it failed.
	Reject func(Rejected)
}

// Rejected is one source row that did not reach the target.
type Rejected struct {
	Collection string
	Source     string
	Err        error
}

// Stats counts one collection's progress.
type Stats struct {
	Collection string
	// Estimate is the catalog's row estimate for the root table (-1 unknown).
	Estimate int64
	Read     int64
	Written  int64
	Failed   int64
	Queries  int
	Elapsed  time.Duration
	Done     bool
}

// Migrate writes every collection of plan, reading from snap into sink.
// Collections are processed one after another inside the same snapshot.
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
	st := Stats{Collection: cp.Name, Estimate: cp.Root.Table.Estimate}
	g, ctx := errgroup.WithContext(ctx)
	batches := make(chan *extract.Batch, 2)
	type built struct {
		docs []transform.Document
		read int
	}
	docs := make(chan built, 2)
	reader := extract.NewReader(snap, cp, opt.BatchSize, nil)

	g.Go(func() error {
		defer close(batches)
		for {
			b, err := reader.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			select {
			case batches <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	g.Go(func() error {
		defer close(docs)
		for b := range batches {
			ds, errs := transform.Build(cp, b.Roots, b)
			for _, e := range errs {
				if opt.Reject != nil {
					opt.Reject(Rejected{Collection: e.Collection, Source: e.Source, Err: e.Err})
				}
			}
			select {
			case docs <- built{docs: ds, read: len(b.Roots)}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error {
		for b := range docs {
			rejects, err := sink.Write(ctx, cp.Name, b.docs)
			if err != nil {
				return err
			}
			for _, r := range rejects {
				if opt.Reject != nil {
					opt.Reject(Rejected{Collection: r.Collection, Source: r.Source, Err: r.Err})
				}
			}
			st.Read += int64(b.read)
			st.Written += int64(len(b.docs) - len(rejects))
			st.Failed = st.Read - st.Written
			st.Elapsed = time.Since(start)
			if opt.Progress != nil {
				opt.Progress(st)
			}
		}
		return nil
	})
	err := g.Wait()
	st.Queries = reader.Queries
	st.Elapsed = time.Since(start)
	st.Done = err == nil
	if err != nil {
		return st, fmt.Errorf("collection %q: %w", cp.Name, err)
	}
	if opt.Progress != nil {
		opt.Progress(st)
	}
	return st, nil
}
