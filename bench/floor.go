package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/extract"
)

// The floor: what the source itself takes to send every row a mapping
// reads, in the order denorm reads it, in PostgreSQL's binary format, to a
// reader that does nothing with it. No reader of the source can be faster,
// so denorm's time over the floor's is the overhead of everything denorm
// does with the rows.
//
// The relations of one collection are copied concurrently, each on its
// own connection, because denorm reads them that way (one merge stream per
// relation, each on a connection of its own), so both have the same server
// parallelism; the collections are copied one after another, as denorm
// builds them.

// fullReads resolves mapping against db and returns, per collection
// entry, the queries that read its relations in full, as denorm's streams
// read them (extract.FullReads).
func fullReads(ctx context.Context, db, mapping string) ([][]string, error) {
	plan, err := resolvePlan(ctx, db, mapping)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, cp := range plan.Collections {
		out = append(out, extract.FullReads(cp))
	}
	return out, nil
}

// countingDiscard counts and drops what is written to it.
type countingDiscard struct{ n atomic.Int64 }

func (w *countingDiscard) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// floorRun is a floor run: COPY (query) TO STDOUT (FORMAT binary) of every
// query into a discarding writer, the queries of one collection entry
// concurrently. Docs is the number of rows sent, Bytes their size on the
// wire; the connections are opened before the clock starts.
func floorRun(ctx context.Context, db string, reads [][]string) (Result, error) {
	var total Result
	for _, queries := range reads {
		conns := make([]*pgx.Conn, len(queries))
		defer func() {
			for _, c := range conns {
				if c != nil {
					c.Close(ctx)
				}
			}
		}()
		for i := range queries {
			c, err := pgx.Connect(ctx, db)
			if err != nil {
				return Result{}, err
			}
			conns[i] = c
		}
		var (
			wg   sync.WaitGroup
			rows atomic.Int64
			out  countingDiscard
			mu   sync.Mutex
			errs []string
		)
		settle()
		busy := startBusy()
		start := time.Now()
		for i, q := range queries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tag, err := conns[i].PgConn().CopyTo(ctx, io.Writer(&out), "COPY ("+q+") TO STDOUT (FORMAT binary)")
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("%s: %v", q, err))
					mu.Unlock()
					return
				}
				rows.Add(tag.RowsAffected())
			}()
		}
		wg.Wait()
		el := time.Since(start)
		total.MachineCPUSeconds += busy.stop().Seconds()
		if len(errs) > 0 {
			return Result{}, fmt.Errorf("floor: %s", strings.Join(errs, "; "))
		}
		total.Docs += rows.Load()
		total.Bytes += out.n.Load()
		total.Seconds += el.Seconds()
	}
	return total, nil
}
