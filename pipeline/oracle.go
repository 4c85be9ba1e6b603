package pipeline

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/oracle"
	"github.com/denorm/denorm/pipeline/compare"
)

// oracleExpected builds the expected side with the independent oracle
// (package oracle): PostgreSQL builds each collection's documents as JSON
// from SQL compiled from the plan, and the oracle converts them by its own
// Types table and encodes them with the driver's BSON encoder. Nothing of
// Produce, transform or load's encoder is on this path, so a mistake there
// shows up as a difference. Rows stream: one document in memory at a time
// (a bucket collection: one page).
func (v *verifier) oracleExpected(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan) error {
	parts := v.opt.OracleWorkers
	if parts < 1 {
		parts = 1
	}
	for _, cp := range plan.Collections {
		var bounds []string
		if sql := oracle.SplitSQL(cp, parts); sql != "" && v.opt.SampleRoots == 0 {
			err := snap.QueryText(ctx, sql, func(cols [][]byte) error {
				bounds = append(bounds, string(cols[0]))
				return nil
			})
			if err != nil {
				return fmt.Errorf("oracle: collection %q: split: %w", cp.Name, err)
			}
		}
		q, err := oracle.CompileEntry(cp, oracle.Options{SampleRoots: v.opt.SampleRoots, Bounds: bounds})
		if err != nil {
			return err
		}
		v.stats[cp.Name].OracleParts = max(v.stats[cp.Name].OracleParts, q.Parts)
		if err := v.oracleEntry(ctx, snap, q, bounds); err != nil {
			return fmt.Errorf("oracle: collection %q: %w", cp.Name, err)
		}
	}
	return nil
}

// oracleEntry builds one entry's documents: its statement on snap, or,
// split into parts, each part's on a connection of its own that adopts
// snap's snapshot, the documents of all parts added here as they come.
func (v *verifier) oracleEntry(ctx context.Context, snap *extract.Snapshot, q *oracle.Query, bounds []string) error {
	parts := q.Parts
	if q.Parts <= 1 {
		docs := q.Documents()
		err := snap.QueryText(ctx, q.SQL, func(cols [][]byte) error {
			ds, err := docs.Row(cols)
			if err != nil {
				return err
			}
			return v.oracleAdd(q, ds)
		})
		if err != nil {
			return err
		}
		return v.oracleAdd(q, docs.Flush())
	}
	g, gctx := errgroup.WithContext(ctx)
	out := make(chan []oracle.Doc, 2*parts)
	var pending sync.WaitGroup
	for i := range parts {
		pq := q
		if i > 0 {
			var err error
			if pq, err = oracle.CompileEntry(q.Entry, oracle.Options{Bounds: bounds, Part: i}); err != nil {
				return err
			}
		}
		pending.Add(1)
		g.Go(func() error {
			defer pending.Done()
			conn, err := snap.Source().Adopt(gctx, snap.ID)
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(gctx))
			docs := pq.Documents()
			send := func(ds []oracle.Doc) error {
				if len(ds) == 0 {
					return nil
				}
				select {
				case out <- ds:
					return nil
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			// Documents go to the adding goroutine in batches.
			var batch []oracle.Doc
			err = conn.QueryText(gctx, pq.SQL, func(cols [][]byte) error {
				ds, err := docs.Row(cols)
				if err != nil {
					return err
				}
				batch = append(batch, ds...)
				if len(batch) >= 256 {
					err, batch = send(batch), nil
				}
				return err
			})
			if err != nil {
				return err
			}
			return send(append(batch, docs.Flush()...))
		})
	}
	go func() { pending.Wait(); close(out) }()
	g.Go(func() error {
		for ds := range out {
			if err := v.oracleAdd(q, ds); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// oracleAdd adds documents of q's entry to the expected side; those the
// oracle could not build are differences (unbuildable).
func (v *verifier) oracleAdd(q *oracle.Query, ds []oracle.Doc) error {
	name := q.Entry.Name
	st := v.stats[name]
	for _, d := range ds {
		var raw []byte
		err := d.Err
		if err == nil {
			raw, err = v.target.Normalize(d.BSON)
		}
		if err != nil {
			st.Unbuildable++
			if err := v.opt.Difference(Difference{Collection: name, Kind: DiffUnbuildable, Source: d.Source, Error: err.Error()}); err != nil {
				return err
			}
			continue
		}
		st.Expected++
		if v.chosen != nil {
			id, err := load.DocumentID(raw)
			if err != nil {
				return err
			}
			v.chosen[string(compare.IDKey(name, id))] = true
		}
		if err := v.cmp.Add(&v.cmp.Exp, name, raw, d.Source); err != nil {
			return err
		}
	}
	return nil
}

// OracleUnchecked lists, for plan, the fields verify's oracle does not
// check independently of the builder, and why.
func OracleUnchecked(plan *mappings.Plan) ([]oracle.Unchecked, error) {
	queries, err := oracle.Compile(plan, oracle.Options{})
	if err != nil {
		return nil, err
	}
	var out []oracle.Unchecked
	for _, q := range queries {
		out = append(out, q.Unchecked...)
	}
	return out, nil
}
