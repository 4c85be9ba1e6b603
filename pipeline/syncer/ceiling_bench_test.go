package syncer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline"
)

// BenchmarkSyncCeiling measures how fast logical sync applies a backlog
// of changes whose median fan-out is 12.5 documents - make bench's SC mix
// (bench/ceiling.go): 70% renames of a region whose name ~12.5 customers
// copy by a lookup, 30% changes of an order its customer embeds and
// aggregates, one transaction each - into FerretDB and into a target
// that acknowledges and drops what it is given (what the source and
// denorm alone allow: the figure for a target that costs nothing, which
// a directory would be if sync could write one). Each op applies
// DENORM_BENCH_CEILING_CHANGES changes (default 5,000) over
// DENORM_BENCH_CEILING_CUSTOMERS customers (default 20,000); docs/s is the
// documents rebuilt per second, migrate-docs/s migrate's documents per
// second into the same kind of target in the same run, and ratio the
// first over the second (issue 27's goal: at least 0.5).
//
//	go test -run '^$' -bench BenchmarkSyncCeiling -benchtime 3x ./pipeline/syncer
func BenchmarkSyncCeiling(b *testing.B) {
	if testing.Short() {
		b.Skip("integration benchmark")
	}
	customers := benchEnv(b, "DENORM_BENCH_CEILING_CUSTOMERS", 20_000)
	changes := benchEnv(b, "DENORM_BENCH_CEILING_CHANGES", 5_000)
	regions := customers * 2 / 25 // 12.5 customers a region
	root := testenv.Root(b)
	sql, err := os.ReadFile(filepath.Join(root, "bench", "ceiling.sql"))
	if err != nil {
		b.Fatal(err)
	}
	db := testenv.PostgresDB(b)
	testenv.Exec(b, db, fmt.Sprintf(string(sql), regions, customers, 3*customers))
	mapping := filepath.Join(root, "bench", "ceiling.yaml")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	rng := rand.New(rand.NewPCG(1, 2))
	backlog := func(n int) {
		for i := range n {
			var err error
			if rng.IntN(10) < 7 {
				_, err = conn.Exec(ctx, "UPDATE region SET name = $1 WHERE id = $2", fmt.Sprintf("Region b%d", i), 1+rng.IntN(regions))
			} else {
				_, err = conn.Exec(ctx, "UPDATE orders SET amount = $1 WHERE id = $2", rng.IntN(100_000), 1+rng.IntN(3*customers))
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, into := range []string{"ferretdb", "discard"} {
		b.Run("into="+into, func(b *testing.B) {
			var docs atomic.Int64
			open := func() (load.Target, func()) {
				uri, _ := testenv.MongoDB(b)
				tg, err := load.Open(ctx, uri, load.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if into == "discard" {
					return &discard{Target: tg, docs: &docs}, func() { _ = tg.Close(ctx) }
				}
				return tg, func() { _ = tg.Close(ctx) }
			}
			b.StopTimer()
			// migrate's rate into the same kind of target.
			snap, plan := snapshotPlan(b, db, mapping)
			mt, closeM := open()
			start := time.Now()
			_, err := pipeline.Migrate(ctx, pipeline.Migration{Snapshot: snap, Plan: plan, Target: mt, Indexes: pipeline.IndexesNone})
			migrateRate := float64(customers) / time.Since(start).Seconds()
			closeM()
			if err != nil {
				b.Fatal(err)
			}
			// The job's initial copy, then a backlog per op.
			src, plan := sourcePlan(b, db, mapping)
			tg, closeT := open()
			defer closeT()
			name := fmt.Sprintf("benchceil_%s_%d", into, os.Getpid())
			defer func() {
				if lg, err := src.Logical(name); err == nil {
					_ = lg.Drop(ctx)
				}
			}()
			opt := Options{Job: name, Mapping: mapping, Method: job.SyncLogical}
			if _, err := Sync(ctx, src, plan, tg, opt); err != nil {
				b.Fatal(err)
			}
			var rebuilt int64
			var took time.Duration
			for i := 0; i < b.N; i++ {
				backlog(changes)
				b.StartTimer()
				start := time.Now()
				res, err := Sync(ctx, src, plan, tg, opt)
				took += time.Since(start)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if c := res.Total.Collections["customers"]; c != nil {
					rebuilt += c.Written
				}
				sp := res.Total.Spent
				b.Logf("%d changes in %d transactions: %v, of which snapshot %v, trace %v, build %v, write %v",
					changes, res.Total.Transactions, time.Since(start).Round(time.Millisecond), sp.Snapshot, sp.Trace, sp.Build, sp.Write)
			}
			rate := float64(rebuilt) / took.Seconds()
			b.ReportMetric(rate, "docs/s")
			b.ReportMetric(float64(changes*b.N)/took.Seconds(), "changes/s")
			b.ReportMetric(migrateRate, "migrate-docs/s")
			b.ReportMetric(rate/migrateRate, "ratio")
		})
	}
}
