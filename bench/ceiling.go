package main

// SC, the sync ceiling (issue 27, point 1): denorm sync --method logical
// --follow of bench/ceiling.yaml into FerretDB while writers raise the
// offered rate of source row changes step by step, until the p99 lag
// (sync's own, commit on the source -> the target's acknowledgement, of
// every transaction of the step) passes 2 s or the changes of a step are
// not applied within a drain period. Each change is one transaction of
// one UPDATE: 70% rename a region (a lookup copied into ~12 customers),
// 30% change an order's amount (its customer's embedded orders and two
// aggregates), so the median change rewrites 12 documents. The ceiling is
// the highest step whose p99 stayed within 2 s, in changes/s and in
// documents rebuilt/s; the second figure is compared with migrate's
// documents/s into the same server, measured in the same run on the same
// data. Then, at the ceiling's rate, updates of a column no mapping reads
// must write no document (point 2).
//
// A directory target is not part of SC: sync replaces and deletes chosen
// documents, which JSON Lines files cannot do (sync refuses a directory).

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// CeilingRun is SC.
type CeilingRun struct {
	Customers int `json:"customers"`
	Regions   int `json:"regions"`
	// FanoutP50 is the median, over the changes the writers make, of the
	// documents one change rewrites (from the data: customers per region
	// for a rename, 1 for an order).
	FanoutP50 float64 `json:"fanoutP50"`
	// MigrateDocsPerS is migrate's documents per second into the same
	// FerretDB, from the same source, in the same run.
	MigrateDocsPerS float64       `json:"migrateDocsPerSecond"`
	Steps           []CeilingStep `json:"steps"`
	// Ceiling is the last step whose p99 lag was within 2 s (nil: none).
	CeilingChanges float64 `json:"ceilingChangesPerSecond"`
	CeilingDocs    float64 `json:"ceilingDocsRebuiltPerSecond"`
	// Ratio is CeilingDocs / MigrateDocsPerS.
	Ratio float64 `json:"ceilingDocsOverMigrate"`
	// What bounds the ceiling: the step past it and why it failed.
	Bound string `json:"bound"`
	// Irrelevant is point 2 at the ceiling's rate: updates of a column
	// no mapping reads.
	Irrelevant *IrrelevantRun `json:"irrelevant,omitempty"`
}

// CeilingStep is one offered rate.
type CeilingStep struct {
	Asked   float64 `json:"askedChangesPerSecond"`
	Written float64 `json:"changesPerSecond"`
	Changes int     `json:"changes"`
	// Applied is the changes sync applied over the step and its drain.
	Applied float64 `json:"changesApplied"`
	// DocsPerS is documents written by sync per second, over the step
	// and its drain.
	Docs     float64 `json:"docsWritten"`
	DocsPerS float64 `json:"docsRebuiltPerSecond"`
	DrainS   float64 `json:"drainSeconds"`
	Drained  bool    `json:"drained"`
	// P50 and P99 are sync's lag of the step's transactions (commit on
	// the source to the target's acknowledgement), the upper bound of the
	// histogram bucket; -1 when past its last bucket or not all applied.
	P50  float64 `json:"lagP50ms"`
	P99  float64 `json:"lagP99ms"`
	Load string  `json:"load"`
	CPU  string  `json:"cpuSeconds"`
}

// IrrelevantRun is point 2: updates of an unmapped column at a rate.
type IrrelevantRun struct {
	Rate    float64 `json:"changesPerSecond"`
	Changes int     `json:"changes"`
	Skipped float64 `json:"changesSkipped"`
	Docs    float64 `json:"docsWritten"`
}

type ceilingConfig struct {
	skip      bool
	customers []int
	stepS     int
	start     float64
	factor    float64
	max       float64
}

func ceilingFlags(c *ceilingConfig) {
	c.skip = os.Getenv("SKIP_SYNC_CEILING") != ""
	// Two sizes: on FerretDB with SQLite every delete command scans the
	// collection, so the ceiling falls as the collection grows.
	c.customers = []int{5_000, 20_000}
	if v := os.Getenv("SYNC_CEILING_CUSTOMERS"); v != "" {
		c.customers = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				c.customers = append(c.customers, n)
			}
		}
	}
	c.stepS = envInt("SYNC_CEILING_SECONDS", 15)
	c.start = float64(envInt("SYNC_CEILING_START", 10))
	c.factor = 1.5
	c.max = float64(envInt("SYNC_CEILING_MAX", 4000))
}

const (
	ceilingLagMs    = 2000.0
	ceilingRenameP  = 0.7
	perRegion       = 12.5
	ordersPerCust   = 3
	ceilingDrainMax = 2 * time.Minute
)

// ceilingDB makes the source (bench/ceiling.sql): regions, customers
// (12.5 a region), orders (3 a customer), every replica identity FULL.
func ceilingDB(ctx context.Context, admin, name string, customers int) (string, error) {
	desc := fmt.Sprintf("ceiling %d", customers)
	db, reused, err := seededDB(ctx, admin, name, desc)
	if err != nil || reused {
		return db, err
	}
	sql, err := os.ReadFile("bench/ceiling.sql")
	if err != nil {
		return "", err
	}
	regions := int(float64(customers) / perRegion)
	err = exec1(ctx, db, fmt.Sprintf(string(sql), regions, customers, customers*ordersPerCust))
	if err == nil {
		err = finishDB(ctx, admin, name, db, desc)
	}
	return db, err
}

var (
	writtenLine = regexp.MustCompile(`(?m)^denorm_sync_documents_written_total\{[^}]*\} (\S+)$`)
	skippedLine = regexp.MustCompile(`(?m)^denorm_sync_changes_skipped_total\{[^}]*\} (\S+)$`)
	cpuLine     = regexp.MustCompile(`(?m)^process_cpu_seconds_total (\S+)$`)
)

func ceilingBench(ctx context.Context, c config, admin, base string, customers int) (*CeilingRun, error) {
	const job, mapping = "benchceiling", "bench/ceiling.yaml"
	name := fmt.Sprintf("bench_sync_ceiling_%d", customers)
	cc := c.ceiling
	if err := dropSlot(ctx, admin, job); err != nil {
		return nil, err
	}
	db, err := ceilingDB(ctx, admin, name, customers)
	if err != nil {
		return nil, err
	}
	r := &CeilingRun{Customers: customers, Regions: int(float64(customers) / perRegion)}
	r.FanoutP50 = perRegion // the median change is a rename (70% of them)

	// migrate's rate into the same server, same data.
	mclient, mdb, muri, err := mongoDB(ctx, base, name+"_migrate")
	if err != nil {
		return nil, err
	}
	m, err := timeCmd(c.bin, "migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", db, "--target", muri)
	if err != nil {
		mclient.Disconnect(ctx)
		return nil, err
	}
	r.MigrateDocsPerS = float64(customers) / m.wall.Seconds()
	log.Printf("  migrate: %d documents in %.1fs, %.0f docs/s", customers, m.wall.Seconds(), r.MigrateDocsPerS)
	_ = mdb.Drop(ctx)
	mclient.Disconnect(ctx)

	client, tdb, uri, err := mongoDB(ctx, base, name)
	if err != nil {
		return nil, err
	}
	defer client.Disconnect(ctx)
	f, out, err := startFollower(c.bin, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri,
		"--job", job, "--method", "logical", "--follow")
	if err != nil {
		return nil, err
	}
	go io.Copy(io.Discard, out)
	stop, exited, stderr, metrics := f.stop, f.exited, &f.stderr, f.metrics
	// The initial copy is done when the collection holds every customer.
	deadline := time.Now().Add(15 * time.Minute)
	for {
		n, err := tdb.Collection("customers").EstimatedDocumentCount(ctx)
		if err == nil && n >= int64(customers) {
			if _, err := scrape(ctx, metrics); err == nil {
				break
			}
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("sync --follow exited before its initial copy: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = stop()
			return nil, fmt.Errorf("no initial copy within 15 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // let the copy's last acknowledgement settle

	for rate := cc.start; rate <= cc.max; rate = math.Round(rate * cc.factor) {
		st, err := ceilingStep(ctx, db, metrics, rate, time.Duration(cc.stepS)*time.Second, customers, false)
		if err != nil {
			_ = stop()
			return nil, fmt.Errorf("at %.0f changes/s: %w\n%s", rate, err, stderr.String())
		}
		log.Printf("  SC %5.0f/s asked, %6.1f/s written: %6.0f docs rebuilt/s, lag p50 <= %5.0f ms, p99 <= %6.0f ms, drain %.1fs (drained %v), sync cpu %s s, load %s",
			st.Asked, st.Written, st.DocsPerS, st.P50, st.P99, st.DrainS, st.Drained, st.CPU, st.Load)
		r.Steps = append(r.Steps, st)
		switch {
		case !st.Drained:
			r.Bound = fmt.Sprintf("at %.0f changes/s the step's changes were not applied %s after it ended", st.Asked, ceilingDrainMax)
		case st.P99 > ceilingLagMs || st.P99 < 0:
			r.Bound = fmt.Sprintf("at %.0f changes/s the p99 lag was %.0f ms", st.Asked, st.P99)
		case st.Written < 0.9*st.Asked:
			r.Bound = fmt.Sprintf("the writers reached only %.0f of %.0f changes/s (the source's commit rate)", st.Written, st.Asked)
		default:
			r.CeilingChanges, r.CeilingDocs = st.Written, st.DocsPerS
			continue
		}
		break
	}
	if r.Bound == "" {
		r.Bound = fmt.Sprintf("not reached: SYNC_CEILING_MAX=%.0f changes/s", cc.max)
	}
	if r.MigrateDocsPerS > 0 {
		r.Ratio = r.CeilingDocs / r.MigrateDocsPerS
	}
	// Point 2 at the ceiling's rate (the first step's, when even that
	// was past the ceiling).
	if rate := max(r.CeilingChanges, cc.start); rate > 0 {
		ir, err := irrelevantStep(ctx, db, metrics, rate, time.Duration(cc.stepS)*time.Second, customers)
		if err != nil {
			_ = stop()
			return nil, fmt.Errorf("unmapped updates: %w\n%s", err, stderr.String())
		}
		log.Printf("  SC unmapped column: %d updates at %.0f/s: %.0f skipped, %.0f documents written", ir.Changes, ir.Rate, ir.Skipped, ir.Docs)
		r.Irrelevant = ir
	}
	if err := stop(); err != nil {
		return nil, fmt.Errorf("sync --follow: %v\n%s", err, stderr.String())
	}
	if _, err := timeCmd(c.bin, "sync", "--mapping", mapping, "--source", db, "--target", uri, "--job", job, "--drop"); err != nil {
		return nil, err
	}
	_ = tdb.Drop(ctx)
	return r, nil
}

// ceilingMetrics is what a step reads of sync's metrics.
type ceilingMetrics struct {
	syncMetrics
	written, skipped, cpu float64
}

func scrape(ctx context.Context, url string) (ceilingMetrics, error) {
	m := ceilingMetrics{}
	var err error
	if m.syncMetrics, err = readMetrics(ctx, url); err != nil {
		return m, err
	}
	body, err := metricsText(ctx, url)
	if err != nil {
		return m, err
	}
	sum := func(re *regexp.Regexp) float64 {
		var t float64
		for _, x := range re.FindAllStringSubmatch(body, -1) {
			if v, err := strconv.ParseFloat(x[1], 64); err == nil {
				t += v
			}
		}
		return t
	}
	m.written, m.skipped, m.cpu = sum(writtenLine), sum(skippedLine), sum(cpuLine)
	return m, nil
}

// offer runs writers that make total changes at rate per second, each
// change one transaction made by change(conn, i, rng); it returns how
// long the writing took.
func offer(ctx context.Context, db string, rate float64, total int, change func(context.Context, *pgx.Conn, int, *rand.Rand) error) (time.Duration, error) {
	const writers = 8
	conns := make([]*pgx.Conn, writers)
	for i := range conns {
		var err error
		if conns[i], err = pgx.Connect(ctx, db); err != nil {
			return 0, err
		}
		defer conns[i].Close(ctx)
	}
	jobs := make(chan int, writers)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		writeErr error
	)
	for w := range writers {
		wg.Add(1)
		go func(conn *pgx.Conn, rng *rand.Rand) {
			defer wg.Done()
			for i := range jobs {
				if err := change(ctx, conn, i, rng); err != nil {
					mu.Lock()
					writeErr = err
					mu.Unlock()
				}
			}
		}(conns[w], rand.New(rand.NewPCG(uint64(w), uint64(rate))))
	}
	start := time.Now()
	for i := range total {
		due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return time.Since(start), writeErr
}

// drain waits until sync has counted want more changes (applied or
// skipped) than in before; false when it has not within ceilingDrainMax.
func drain(ctx context.Context, metrics string, before ceilingMetrics, want float64) (ceilingMetrics, bool, error) {
	deadline := time.Now().Add(ceilingDrainMax)
	for {
		m, err := scrape(ctx, metrics)
		if err != nil {
			return m, false, err
		}
		if m.applied+m.skipped-before.applied-before.skipped >= want {
			return m, true, nil
		}
		if time.Now().After(deadline) {
			return m, false, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ceilingStep(ctx context.Context, db, metrics string, rate float64, dur time.Duration, customers int, _ bool) (CeilingStep, error) {
	st := CeilingStep{Asked: rate}
	regions := int(float64(customers) / perRegion)
	before, err := scrape(ctx, metrics)
	if err != nil {
		return st, err
	}
	total := int(rate * dur.Seconds())
	t0 := time.Now()
	took, err := offer(ctx, db, rate, total, func(ctx context.Context, conn *pgx.Conn, i int, rng *rand.Rand) error {
		if rng.Float64() < ceilingRenameP {
			_, err := conn.Exec(ctx, "UPDATE region SET name = $1 WHERE id = $2", fmt.Sprintf("Region r%.0f-%d", rate, i), 1+rng.IntN(regions))
			return err
		}
		_, err := conn.Exec(ctx, "UPDATE orders SET amount = $1 WHERE id = $2", rng.IntN(1000), 1+rng.IntN(customers*ordersPerCust))
		return err
	})
	if err != nil {
		return st, err
	}
	st.Load = loadAvg()
	st.Changes, st.Written = total, float64(total)/took.Seconds()
	t1 := time.Now()
	after, drained, err := drain(ctx, metrics, before, float64(total))
	if err != nil {
		return st, err
	}
	st.Drained, st.DrainS = drained, time.Since(t1).Seconds()
	st.Applied = after.applied - before.applied
	st.Docs = after.written - before.written
	st.DocsPerS = st.Docs / time.Since(t0).Seconds()
	st.P50 = quantile(before.syncMetrics, after.syncMetrics, 0.50)
	st.P99 = quantile(before.syncMetrics, after.syncMetrics, 0.99)
	st.CPU = fmt.Sprintf("%.1f", after.cpu-before.cpu)
	// JSON has no infinity: -1 is a quantile past the histogram's last
	// bucket, or a step whose changes were not all applied.
	if !drained || math.IsInf(st.P99, 0) || math.IsNaN(st.P99) {
		st.P99 = -1
	}
	if math.IsInf(st.P50, 0) || math.IsNaN(st.P50) {
		st.P50 = -1
	}
	return st, nil
}

// irrelevantStep updates customer.note, which no mapping reads, at rate.
func irrelevantStep(ctx context.Context, db, metrics string, rate float64, dur time.Duration, customers int) (*IrrelevantRun, error) {
	before, err := scrape(ctx, metrics)
	if err != nil {
		return nil, err
	}
	total := int(rate * dur.Seconds())
	took, err := offer(ctx, db, rate, total, func(ctx context.Context, conn *pgx.Conn, i int, rng *rand.Rand) error {
		_, err := conn.Exec(ctx, "UPDATE customer SET note = $1 WHERE id = $2", fmt.Sprintf("note %d", i), 1+rng.IntN(customers))
		return err
	})
	if err != nil {
		return nil, err
	}
	after, drained, err := drain(ctx, metrics, before, float64(total))
	if err != nil {
		return nil, err
	}
	if !drained {
		return nil, fmt.Errorf("%d updates of an unmapped column not counted %s after the last", total, ceilingDrainMax)
	}
	return &IrrelevantRun{Rate: float64(total) / took.Seconds(), Changes: total, Skipped: after.skipped - before.skipped, Docs: after.written - before.written}, nil
}
