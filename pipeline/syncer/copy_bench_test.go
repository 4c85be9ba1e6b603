package syncer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/transform"
)

// BenchmarkCopyWorkers measures the initial copy of a new logical sync
// job (slot, copy, the empty catch-up) of the person example with
// --workers 1, 2 and 4, into FerretDB and into a target that drops what
// it is given (a FerretDB target whose writes are discarded: what the
// copy costs the source and denorm alone). Each op is one whole first
// sync; docs/s is the people documents over its time. Persons:
// DENORM_BENCH_COPY_PERSONS (default 100,000). On a 2-core machine the
// source, denorm and FerretDB share the cores (see the note in
// README.md's "The initial copy: workers and resume").
//
//	go test -run '^$' -bench BenchmarkCopyWorkers -benchtime 3x ./pipeline/syncer
func BenchmarkCopyWorkers(b *testing.B) {
	if testing.Short() {
		b.Skip("integration benchmark")
	}
	persons := benchEnv(b, "DENORM_BENCH_COPY_PERSONS", 100_000)
	root := testenv.Root(b)
	db := testenv.PostgresDB(b, filepath.Join(root, "testdata", "examples", "seed.sql"),
		filepath.Join(root, "cmd", "denorm", "testdata", "replica-identity-full.sql"))
	sql, err := os.ReadFile(filepath.Join(root, "bench", "persons.sql"))
	if err != nil {
		b.Fatal(err)
	}
	testenv.Exec(b, db, fmt.Sprintf(string(sql), persons)+"\nANALYZE;")
	mapping := filepath.Join(root, "mappings", "examples", "person.yaml")
	src, plan := sourcePlan(b, db, mapping)
	for _, into := range []string{"ferretdb", "discard"} {
		for _, workers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("into=%s/workers=%d", into, workers), func(b *testing.B) {
				ctx := context.Background()
				var docs atomic.Int64
				var took time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					uri, _ := testenv.MongoDB(b)
					tg, err := load.Open(ctx, uri, load.Options{})
					if err != nil {
						b.Fatal(err)
					}
					var target load.Target = tg
					if into == "discard" {
						target = &discard{Target: tg, docs: &docs}
					}
					name := fmt.Sprintf("benchcopy_%d_%d", os.Getpid(), i)
					b.StartTimer()
					start := time.Now()
					res, err := Sync(ctx, src, plan, target, Options{Job: name, Mapping: mapping, Method: job.SyncLogical, Workers: workers})
					took += time.Since(start)
					b.StopTimer()
					if lg, lerr := src.Logical(name); lerr == nil {
						_ = lg.Drop(ctx)
					}
					if err != nil {
						b.Fatal(err)
					}
					if into == "ferretdb" {
						docs.Add(res.Total.Collections["people"].Written)
					}
					_ = tg.Close(ctx)
					b.StartTimer()
				}
				b.ReportMetric(float64(docs.Load())/took.Seconds(), "docs/s")
			})
		}
	}
}

// discard is a target whose document writes are acknowledged and
// dropped; everything else (records, leases) is the wrapped target's.
type discard struct {
	load.Target
	docs *atomic.Int64
}

func (d *discard) Write(_ context.Context, _ string, docs []transform.Document) ([]transform.Reject, error) {
	d.docs.Add(int64(len(docs)))
	return nil, nil
}

func (d *discard) Reopen(ctx context.Context) (load.Target, error) {
	t, err := d.Target.Reopen(ctx)
	if err != nil {
		return nil, err
	}
	return &discard{Target: t, docs: d.docs}, nil
}

// benchEnv is the positive number the environment variable name gives a
// benchmark, def when it is unset.
func benchEnv(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: not a positive number", name, s)
	}
	return n
}
