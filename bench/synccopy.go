package main

// SW: the initial copy of a logical sync job with --workers (issue 27,
// point 5). A sync --method logical --once of SYNC_COPY_PERSONS persons
// (person example, 100,000 by default) into an empty FerretDB database,
// with each worker count of SYNC_COPY_WORKERS (1,2,4), interleaved,
// REPS times: wall time (slot, copy and the empty catch-up), denorm's CPU
// time, and how busy the machine's cores were during the run (from
// /proc/stat: PostgreSQL, denorm and FerretDB share them, with whatever
// else runs). SKIP_SYNC_COPY=1 skips it. The speedup of N workers is the
// median single-worker time over the median N-worker time.

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// CopyRun is SW.
type CopyRun struct {
	Persons int                `json:"persons"`
	Cores   int                `json:"cores"`
	Workers []CopyWorkers      `json:"workers"`
	Speedup map[string]float64 `json:"speedupOverOneWorker"`
}

// CopyWorkers is SW at one worker count.
type CopyWorkers struct {
	Workers int       `json:"workers"`
	Seconds []float64 `json:"seconds"`
	Median  float64   `json:"medianSeconds"`
	// CPU is denorm's user and system seconds of each run; Busy the
	// machine's busy cores during it (2.0: both cores of a 2-core
	// machine busy the whole run).
	CPU  []float64 `json:"denormCpuSeconds"`
	Busy []float64 `json:"busyCores"`
	Load []string  `json:"load"`
}

func syncCopyWorkers() []int {
	out := []int{1, 2, 4}
	if s := os.Getenv("SYNC_COPY_WORKERS"); s != "" {
		out = nil
		for _, f := range strings.Split(s, ",") {
			if v, err := strconv.Atoi(f); err == nil && v > 0 {
				out = append(out, v)
			}
		}
	}
	return out
}

// copyBench runs SW.
func copyBench(ctx context.Context, c config, admin, base string) (*CopyRun, error) {
	const job, name = "benchcopy", "bench_sync_copy"
	persons := envInt("SYNC_COPY_PERSONS", 100_000)
	workers := syncCopyWorkers()
	log.Printf("SW: sync --method logical initial copy of %d persons into FerretDB with --workers %v", persons, workers)
	if err := dropSlot(ctx, admin, job); err != nil {
		return nil, err
	}
	db, err := personDB(ctx, admin, name, persons)
	if err != nil {
		return nil, err
	}
	if err := exec1(ctx, db, identityFull); err != nil {
		return nil, err
	}
	run := &CopyRun{Persons: persons, Cores: runtime.NumCPU(), Speedup: map[string]float64{}}
	for _, n := range workers {
		run.Workers = append(run.Workers, CopyWorkers{Workers: n})
	}
	for i := 0; i < c.reps; i++ {
		for k := range run.Workers {
			w := &run.Workers[k]
			log.Printf("round %d/%d: SW --workers %d", i+1, c.reps, w.Workers)
			secs, cpu, busy, err := copyOnce(ctx, c.bin, db, admin, base, name, job, w.Workers, persons)
			if err != nil {
				return nil, fmt.Errorf("SW --workers %d: %w", w.Workers, err)
			}
			w.Seconds, w.CPU, w.Busy = append(w.Seconds, secs), append(w.CPU, cpu), append(w.Busy, busy)
			w.Load = append(w.Load, loadAvg())
		}
	}
	for k := range run.Workers {
		w := &run.Workers[k]
		s := slices.Clone(w.Seconds)
		slices.Sort(s)
		w.Median = s[len(s)/2]
	}
	if one := slices.IndexFunc(run.Workers, func(w CopyWorkers) bool { return w.Workers == 1 }); one >= 0 {
		for _, w := range run.Workers {
			run.Speedup[strconv.Itoa(w.Workers)] = run.Workers[one].Median / w.Median
		}
	}
	return run, nil
}

// copyOnce is one SW run: a new job's sync --once into an empty database.
func copyOnce(ctx context.Context, bin, db, admin, base, name, job string, workers, persons int) (secs, cpu, busy float64, err error) {
	if err := dropSlot(ctx, admin, job); err != nil {
		return 0, 0, 0, err
	}
	client, tdb, uri, err := mongoDB(ctx, base, name)
	if err != nil {
		return 0, 0, 0, err
	}
	defer client.Disconnect(ctx)
	before := cpuTicks()
	m, err := timeCmd(bin, "sync", "-q", "--mapping", personMapping, "--source", db, "--target", uri, "--job", job,
		"--method", "logical", "--once", "--workers", strconv.Itoa(workers))
	after := cpuTicks()
	if err != nil {
		return 0, 0, 0, err
	}
	n, err := tdb.Collection("people").CountDocuments(ctx, bson.D{})
	if err != nil {
		return 0, 0, 0, err
	}
	if want := int64(persons) + 2; n != want { // the seed's 2 and the generated
		return 0, 0, 0, fmt.Errorf("%d documents, want %d:\n%s", n, want, m.out)
	}
	if err := dropSlot(ctx, admin, job); err != nil {
		return 0, 0, 0, err
	}
	_ = tdb.Drop(ctx)
	busy = float64(after.busy-before.busy) / float64(after.total-before.total) * float64(runtime.NumCPU())
	return m.wall.Seconds(), m.cpu.Seconds(), busy, nil
}

type ticks struct{ busy, total uint64 }

// cpuTicks reads the machine's CPU time from /proc/stat (zero elsewhere).
func cpuTicks() ticks {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return ticks{0, 1}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var t ticks
	for i, v := range f[1:] {
		x, _ := strconv.ParseUint(v, 10, 64)
		t.total += x
		if i != 3 && i != 4 { // idle, iowait
			t.busy += x
		}
	}
	return t
}

func printCopy(w io.Writer, r *CopyRun) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "SW sync --method logical initial copy, person example, %d persons into FerretDB, %d cores:\n", r.Persons, r.Cores)
	fmt.Fprintln(w, "   workers  median s  speedup  runs s                denorm cpu s          busy cores        load")
	for _, x := range r.Workers {
		fmt.Fprintf(w, "   %7d  %8.1f  %7.2f  %-20s  %-20s  %-16s  %s\n", x.Workers, x.Median, r.Speedup[strconv.Itoa(x.Workers)],
			fmt.Sprint(roundAll(x.Seconds)), fmt.Sprint(roundAll(x.CPU)), fmt.Sprint(roundAll(x.Busy)), strings.Join(x.Load, "; "))
	}
}
