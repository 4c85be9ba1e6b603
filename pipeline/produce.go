package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// Built is one batch of documents of a collection entry, in stream order.
type Built struct {
	Docs []transform.Document
	// Rows is the number of source root rows the batch consumed.
	Rows int
	// Errors are the rows that could not become documents.
	Errors []*transform.RowError
	// Queries is the number of statements the batch took.
	Queries int
	// After is the stream position once Docs are stored: reading resumes
	// after it; nil when the batch completed no document (a bucket page
	// still filling). Pager is the bucket pager's state at that position.
	After extract.Key
	Pager *transform.PagerState
	// Part, when Part.N > 1, reads only that part of the root stream.
	Part extract.Part
	// slab holds Docs' fields when ProduceOptions.Reuse is set.
	slab *transform.Slab
}

// ProduceOptions tune Produce.
type ProduceOptions struct {
	// BatchSize is the number of root rows read at a time.
	BatchSize int
	// After resumes after this stream position (nil: from the start), and
	// Pager continues a bucket collection's page numbering.
	After extract.Key
	Pager *transform.PagerState
	// SetWise reads every relation set-wise per batch instead of through
	// merge streams (see extract.Reader.SetWise).
	SetWise bool
	// Part, when Part.N > 1, reads only that part of the root stream.
	Part extract.Part
	// Reuse says fn keeps nothing of a batch's documents after it returns
	// (it encodes or copies what it needs): their memory is then reused
	// for later batches, which saves the garbage collector most of its
	// work.
	Reuse bool
}

// slabs is the number of batches' slabs kept for reuse (more batches than
// that can be in flight - one being built, one waiting, one with fn - take
// a new slab: fewer kept, less memory held).
const slabs = 2

// Produce builds the documents of one collection entry, reading from snap,
// and calls fn with each batch, in stream order, from the calling
// goroutine. Reading, building and fn run concurrently, joined by channels
// of depth one, so memory is bounded by a few batches; fn's pace is the
// pipeline's pace. Produce returns fn's first error, or the first error
// reading or building.
func Produce(ctx context.Context, snap *extract.Snapshot, cp *mappings.CollectionPlan, opt ProduceOptions, fn func(Built) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	batches := make(chan *extract.Batch, 1)
	built := make(chan Built, 1)
	free := make(chan *transform.Slab, slabs)
	reader := extract.NewPartReader(snap, cp, opt.BatchSize, opt.After, opt.Part)
	reader.SetWise = opt.SetWise
	g.Go(func() error {
		defer close(batches)
		defer reader.Close()
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
		defer close(built)
		send := func(b Built) error {
			select {
			case built <- b:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if cp.Bucket == nil {
			for b := range batches {
				var slab *transform.Slab
				if opt.Reuse {
					select {
					case slab = <-free:
					default:
						slab = &transform.Slab{}
					}
				}
				docs, errs := transform.BuildIn(slab, cp, b.Roots, b)
				if err := send(Built{Docs: docs, Rows: len(b.Roots), Errors: errs, Queries: b.Queries, After: b.After, slab: slab}); err != nil {
					return err
				}
			}
			return nil
		}
		pager := transform.NewPager(cp, opt.Pager)
		for b := range batches {
			docs, errs := pager.Add(b.Roots, b)
			out := Built{Docs: docs, Rows: len(b.Roots), Errors: errs, Queries: b.Queries}
			if err := bucketPosition(cp, &out); err != nil {
				return err
			}
			if err := send(out); err != nil {
				return err
			}
		}
		out := Built{Docs: pager.Flush()}
		if err := bucketPosition(cp, &out); err != nil {
			return err
		}
		if len(out.Docs) > 0 {
			return send(out)
		}
		return nil
	})
	var fnErr error
	for b := range built {
		if err := fn(b); err != nil {
			fnErr = err
			cancel() // stop the producers
			break
		}
		if b.slab != nil {
			b.slab.Reset()
			select {
			case free <- b.slab:
			default:
			}
		}
	}
	for range built { // drain until the builder closes it
	}
	err := g.Wait()
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("collection %q: %w", cp.Name, err)
	}
	return nil
}

// bucketPosition sets a bucket batch's position: after the last item of
// its last page.
func bucketPosition(cp *mappings.CollectionPlan, b *Built) error {
	if len(b.Docs) == 0 {
		return nil
	}
	last := b.Docs[len(b.Docs)-1]
	k, err := extract.KeyOf(cp, last.Last)
	if err != nil {
		return err
	}
	b.After, b.Pager = k, last.Page
	return nil
}
